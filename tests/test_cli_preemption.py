"""What users see of preemption: the Preemptions table, --explain for preemptor and victim, JSON,
and configuration errors of DefaultPreemption and of several schedulers."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.commands.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
EXAMPLE_1 = str(SCENARIOS / "preemption-seed-example-1.yaml")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["simulate", *args], terminal_width=200)
    return result.exit_code, result.output


def test_table_lists_preemptions_and_explains_both_sides() -> None:
    code, out = run(EXAMPLE_1, "--explain", "default/c", "--explain", "default/a")
    assert code == 0
    section = out[out.index("Preemptions"):out.index("Timeline")]
    assert "default/c (1000)" in section and "node1" in section
    assert "default/a (100)" in section and "default/b (100)" in section
    assert "Preemption candidates" in out and "← chosen (only candidate)" in out
    assert "default/a was preempted at 0s by default/c (priority 1000 > 100) on node1" in out
    assert "not eligible due to a terminating pod on the nominated node." in out


def test_json_lists_preemptions_and_the_dry_run() -> None:
    code, out = run(EXAMPLE_1, "--output", "json", "--explain", "default/c")
    data = json.loads(out)
    assert code == 0
    [p] = data["preemptions"]
    assert (p["preemptor"], p["node"], p["time"]) == ("default/c", "node1", 0.0)
    assert sorted(v["pod"] for v in p["victims"]) == ["default/a", "default/b"]
    first = data["decisions"]["default/c"][0]["postFilter"]
    assert first["candidates"] == [{"node": "node1", "victims": ["default/a", "default/b"], "pdbViolations": 0,
                                    "violatedBudgets": {}}]
    assert first["nominatedNode"] == "node1"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def test_default_preemption_args_are_validated(tmp_path: Path) -> None:
    code, out = run(write(tmp_path, """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}
"""))
    assert code == 2
    assert ("pluginConfig[DefaultPreemption].args.minCandidateNodesPercentage: Invalid value: 0: "
            "cannot be zero at the same time as minCandidateNodesAbsolute") in out


def test_two_schedulers_may_not_serve_one_name(tmp_path: Path) -> None:
    doc = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [{schedulerName: shared}]
"""
    code, out = run(write(tmp_path, doc + "---" + doc))
    assert code == 2
    assert 'profiles[0].schedulerName: Duplicate value: "shared": already served by another scheduler' in out
