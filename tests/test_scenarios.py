"""Self-checking scenarios: every tests/scenarios/*.yaml runs through the real CLI and must hold.

Each file carries its own `expect:` entries; `kubesched simulate FILE --output json` exits 0 only
when all of them hold. A scenario that shows a known bug outside the scheduler plugins is marked
with a header line `# xfail: <reason>` and is expected to fail until the bug is fixed (strict, so
a fix is noticed and the marker removed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.commands.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.yaml"))
XFAIL = re.compile(r"^#\s*xfail:\s*(.+)$", re.MULTILINE)


def _params() -> list:
    params = []
    for path in FILES:
        marks = [pytest.mark.xfail(reason=m.group(1).strip(), strict=True)
                 for m in XFAIL.finditer(path.read_text())]
        params.append(pytest.param(path, id=path.name, marks=marks))
    return params


def _failures(data: dict) -> str:
    bad = [e for e in data.get("expect", []) if not e.get("ok")]
    return "\n".join(f"  {json.dumps(e['expect'])}: {e['detail']}" for e in bad)


def test_scenarios_exist() -> None:
    assert FILES, f"no scenarios in {SCENARIOS}"


@pytest.mark.parametrize("path", _params())
def test_scenario(path: Path) -> None:
    result = CliRunner().invoke(main, ["simulate", str(path), "--output", "json"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"exit {result.exit_code}, output is not JSON:\n{result.output}")
    assert isinstance(data, dict) and {"time", "pods", "nodes", "events", "rejected"} <= data.keys()
    assert result.exit_code == 0, f"{path.name}: expectations failed:\n{_failures(data)}"
