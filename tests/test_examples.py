"""The bundled examples are what a new user runs first: each must run and its expectations hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli import main

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
