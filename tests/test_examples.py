"""The bundled examples are what a new user runs first: each must run and its expectations hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.commands.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
# Directories of objects and a Scenario (examples/plugins holds a plugin module, not input).
DIRS = sorted(d for d in EXAMPLES.iterdir() if d.is_dir() and any(d.glob("*.yaml")))


@pytest.mark.parametrize("directory", DIRS, ids=[d.name for d in DIRS])
def test_example_runs_and_holds(directory: Path) -> None:
    result = CliRunner().invoke(main, ["simulate", str(directory), "--output", "json"])
    data = json.loads(result.stdout)
    failed = [e for e in data.get("expect", []) if not e.get("ok")]
    assert result.exit_code == 0 and not failed, failed
    assert data["expect"], "an example shows what it promises with expectations"


def test_an_export_with_kinds_kubesched_does_not_run_loads_and_names_them() -> None:
    """Services, a ConfigMap, a Secret, a ServiceAccount and a cert-manager Certificate in an
    export are kept and summed up in one line, not refused."""
    result = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "export" / "cluster.yaml")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert ("Also loaded, kept as they are (nothing in kubesched acts on them): 2 Service, 1 Certificate, "
            "1 ConfigMap, 1 Secret, 1 ServiceAccount") in result.output
    data = json.loads(CliRunner().invoke(main, ["simulate", str(EXAMPLES / "export"), "--output", "json"]).stdout)
    assert data["storedOnly"] == {"Service": 2, "Certificate": 1, "ConfigMap": 1, "Secret": 1, "ServiceAccount": 1}
