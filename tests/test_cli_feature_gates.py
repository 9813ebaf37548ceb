"""--feature-gates on the command line and `featureGates:` in a Scenario, as a user gives them:
refused with kube-scheduler's own messages (exit 2, nothing run), accepted when they restate
v1.35's defaults, and reaching the scheduler's plugins as Handle.features."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.api.features import FeatureGates
from kubesched.commands.cli import main
from kubesched.sim.runner import build_cluster, load
from tests.test_cli_errors import bad_input, simulate

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
"""


def scenario(gates: str) -> str:
    return f"""\
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {{name: gates}}
spec:
  featureGates: {gates}
  expect:
  - {{pod: default/p, nodeName: n1}}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    return tmp_path


def test_unknown_gate_exits_2_naming_it(cluster: Path) -> None:
    assert bad_input(cluster, "cluster.yaml", "--feature-gates", "Foo=true") == [
        "command line: --feature-gates: unrecognized feature gate: Foo"]


def test_locked_ga_gate_set_to_false_is_refused(cluster: Path) -> None:
    assert bad_input(cluster, "cluster.yaml", "--feature-gates", "DynamicResourceAllocation=false") == [
        "command line: --feature-gates: cannot set feature gate DynamicResourceAllocation to false, "
        "feature is locked to true"]


def test_bad_syntax_and_unimplemented_values_are_refused(cluster: Path) -> None:
    assert bad_input(cluster, "cluster.yaml", "--feature-gates", "DRAPrioritizedList=on") == [
        "command line: --feature-gates: invalid value of DRAPrioritizedList=on, err: strconv.ParseBool: "
        'parsing "on": invalid syntax']
    assert bad_input(cluster, "cluster.yaml", "--feature-gates", "MemoryQoS=true") == [
        "command line: --feature-gates: feature gate MemoryQoS=true is not implemented by kubesched"]


def test_restated_defaults_are_accepted(cluster: Path) -> None:
    (cluster / "scenario.yaml").write_text(scenario("{DRAPrioritizedList: true, SchedulerQueueingHints: true}"))
    proc = simulate(cluster, "cluster.yaml", "scenario.yaml", "-o", "json", "--feature-gates",
                    "DRAPrioritizedList=true, DynamicResourceAllocation=true,DRAConsumableCapacity=false")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_scenario_feature_gates_are_checked_at_their_field_path(cluster: Path) -> None:
    (cluster / "scenario.yaml").write_text(scenario(
        "{Foo: true, DynamicResourceAllocation: false, MemoryQoS: true, DRAPrioritizedList: 'yes', AllBeta: false}"))
    lines = bad_input(cluster, "cluster.yaml", "scenario.yaml")
    where = "scenario.yaml doc 1: spec.featureGates"
    assert lines[0] == f"{where}.DRAPrioritizedList: expected a boolean, got string"
    assert lines[1].startswith(f"{where}.AllBeta: feature gates APIResponseCompression=false, ")
    assert lines[1].endswith(" are not implemented by kubesched")
    assert lines[2:] == [
        f"{where}.DynamicResourceAllocation: cannot set feature gate DynamicResourceAllocation to false, "
        "feature is locked to true",
        f"{where}.Foo: unrecognized feature gate: Foo",
        f"{where}.MemoryQoS: feature gate MemoryQoS=true is not implemented by kubesched"]
    (cluster / "scenario.yaml").write_text(scenario("[DRAPrioritizedList]"))
    assert bad_input(cluster, "cluster.yaml", "scenario.yaml") == [
        "scenario.yaml doc 1: spec.featureGates: expected a mapping, got list"]


def test_gates_reach_the_scheduler_and_the_command_line_wins(cluster: Path) -> None:
    (cluster / "scenario.yaml").write_text(scenario("{DRAPartitionableDevices: true, DRAPrioritizedList: false}"))
    paths = [str(cluster / "cluster.yaml"), str(cluster / "scenario.yaml")]

    handle = build_cluster(load(paths)).scheduler.handle
    assert handle.features.enabled("DRAPartitionableDevices") and not handle.features.enabled("DRAPrioritizedList")

    gates = FeatureGates.parse("DRAPartitionableDevices=false")
    handle = build_cluster(load(paths, feature_gates=gates)).scheduler.handle
    assert not handle.features.enabled("DRAPartitionableDevices") and not handle.features.enabled("DRAPrioritizedList")


TAINT_RULE = """\
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: broken-gpus}
spec:
  deviceSelector: {driver: gpu.example.com}
  taint: {key: broken, effect: NoSchedule}
"""


def test_a_kind_served_only_behind_an_off_gate_is_refused_naming_kind_and_gate(cluster: Path) -> None:
    """v1.35 installs DeviceTaintRules only with DRADeviceTaintRules on: with it off (the
    default) such an object, or a Scenario event creating one, is refused as kubectl refuses a
    kind the server does not serve; with the gate on it is taken."""
    (cluster / "rule.yaml").write_text(TAINT_RULE)
    event = "  events:\n  - at: 1s\n    create: {apiVersion: resource.k8s.io/v1alpha3, kind: DeviceTaintRule, " \
            "metadata: {name: later}, spec: {deviceSelector: {driver: d.example.com}, " \
            "taint: {key: k, effect: NoSchedule}}}\n"
    (cluster / "scenario.yaml").write_text(scenario("{}") + event)
    refusal = ('no matches for kind "DeviceTaintRule" in version "resource.k8s.io/v1alpha3" '
               "(served only with the DRADeviceTaintRules feature gate on)")
    assert bad_input(cluster, "cluster.yaml", "rule.yaml", "scenario.yaml") == [
        f"rule.yaml doc 1: {refusal}", f"scenario.yaml doc 1: spec.events[0].create: {refusal}"]
    proc = simulate(cluster, "cluster.yaml", "rule.yaml", "scenario.yaml", "-o", "json",
                    "--feature-gates", "DRADeviceTaints=true,DRADeviceTaintRules=true")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("command", [
    ["serve", "--data", ":memory:"],
    ["scheduler", "--kubeconfig", "/nonexistent"],
    ["capacity", "cluster.yaml", "--pod", "pod.yaml"],
    ["compare", "cluster.yaml", "--config", "a.yaml", "--config", "b.yaml"],
])
def test_every_command_with_the_option_refuses_a_bad_value_before_it_starts(cluster: Path, command: list[str],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(cluster)
    result = CliRunner().invoke(main, [*command, "--feature-gates", "Foo=true"])
    assert result.exit_code == 2, result.output
    assert "command line: --feature-gates: unrecognized feature gate: Foo" in result.output


def test_serve_gives_its_scheduler_the_gates() -> None:
    from kubesched.server.engine import Engine, ServeOptions

    engine = Engine(ServeOptions((), ":memory:", 0.0, FeatureGates.parse("DRAPartitionableDevices=true")))
    try:
        assert engine.cluster.scheduler.handle.features.enabled("DRAPartitionableDevices")
    finally:
        engine.close()
