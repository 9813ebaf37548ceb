"""A timed expectation the run never reached fails instead of being dropped."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubesched.commands.cli import main


def test_expectation_after_the_end_of_the_run_fails(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: short}
spec:
  until: 10s
  expect:
  - {at: 5s, node: n1, unschedulable: false}
  - {at: 20s, node: n1, unschedulable: false}
""")
    result = CliRunner().invoke(main, ["simulate", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "Expectations: 1 held, 1 failed" in result.output
    assert "not checked: the run ended at 10s" in result.output


def test_an_object_expectation_finds_a_custom_resource_by_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default}
status: {phase: Ready}
---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: custom}
spec:
  expect:
  - {object: Widget/default/w, status: {phase: Ready}}
  - {object: Widget/default/other, exists: false}
""")
    result = CliRunner().invoke(main, ["simulate", str(path)], env={"COLUMNS": "200"})
    assert "Expectations: 2 held" in result.output, result.output
