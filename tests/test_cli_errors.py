"""`kubesched simulate` as a user runs it: a real subprocess on real files.

Bad input: exit code 2, one stderr line per problem naming the file, the document and the field
path, nothing simulated (stdout stays empty) and never a traceback. Good input: exit 0, or 1 when an
`expect` fails (and the failure is printed); `--output json|yaml` follow the results contract.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

POD = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {spec}\n"
NODE = "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n{body}\n"
C = "containers: [{name: c}]"
# "<file> doc <n>: <field path>: <message>" or, for a problem with a whole file, "<file>: <message>".
LINE = re.compile(r"^(?P<file>[^:]+?)(?: doc (?P<doc>\d+))?: (?P<rest>.+)$")


def simulate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["COLUMNS"] = "40"  # narrow: problems must still be one line each
    env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def bad_input(cwd: Path, *args: str) -> list[str]:
    """Run on input that must be refused; return the problem lines."""
    proc = simulate(cwd, *args)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "", "nothing may run on bad input"
    lines = proc.stderr.splitlines()
    assert lines, "every problem is reported"
    for line in lines:
        assert LINE.match(line), line
    return lines


def write(cwd: Path, name: str, text: str) -> str:
    path = cwd / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return name


def test_module_entry_point_runs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "simulate" in proc.stdout


# --- one kind of mistake at a time -----------------------------------------------------------------

def test_bad_yaml(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", POD.format(name="ok", spec=f"{{{C}}}") + "---\n"
              "apiVersion: v1\nkind: Pod\nmetadata: {name: a\nspec: {}\n")
    [line] = bad_input(tmp_path, f)
    assert line.startswith("in.yaml doc 2: YAML syntax error at line "), line


def test_bad_json(tmp_path: Path) -> None:
    f = write(tmp_path, "in.json", '{"apiVersion": "v1", "kind": "Pod",')
    [line] = bad_input(tmp_path, f)
    assert line.startswith("in.json doc 1: JSON syntax error at line 1"), line


def test_any_kind_loads_and_is_summed_up(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"
              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: ConfigMap\n"
              "metadata: {name: d}\n")
    proc = simulate(tmp_path, f)
    assert proc.returncode == 0, proc.stderr
    assert ("Also loaded, kept as they are (nothing in kubesched acts on them): 2 ConfigMap, 1 Widget"
            in " ".join(proc.stdout.split())), proc.stdout


def test_missing_containers(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", POD.format(name="a", spec="{}"))
    assert bad_input(tmp_path, f) == ["in.yaml doc 1: spec.containers: Required value"]


def test_wrong_types(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", POD.format(name="a", spec='{containers: "nope"}') + "---\n"
              + POD.format(name="b", spec=f'{{priority: "high", {C}}}'))
    assert bad_input(tmp_path, f) == [
        "in.yaml doc 1: spec.containers: expected a list, got string",
        "in.yaml doc 2: spec.priority: expected an integer, got string",
    ]


def test_bad_quantity_in_the_documented_words(tmp_path: Path) -> None:
    good = POD.format(name="x", spec=f"{{{C}}}")
    bad = POD.format(name="c", spec='{containers: [{name: c, resources: {requests: {cpu: "1.5x"}}}]}')
    f = write(tmp_path, "pods.yaml", good + "---\n" + good.replace("name: x", "name: w") + "---\n" + bad)
    assert bad_input(tmp_path, f) == [
        'pods.yaml doc 3: spec.containers[0].resources.requests.cpu: "1.5x" is not a quantity']


def test_bad_selector_operators(tmp_path: Path) -> None:
    node_affinity = ("{containers: [{name: c}], affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
                     " {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near, values: [x]}]}]}}}}")
    spread = ("{containers: [{name: c}], topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, "
              "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: app, operator: Near, "
              "values: [x]}]}}]}")
    f = write(tmp_path, "in.yaml", POD.format(name="a", spec=node_affinity) + "---\n"
              + POD.format(name="b", spec=spread))
    first, second = bad_input(tmp_path, f)
    assert first.startswith("in.yaml doc 1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                            ".nodeSelectorTerms[0].matchExpressions[0].operator: "), first
    assert second.startswith("in.yaml doc 2: spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0]"
                             ".operator: "), second
    assert '"Near"' in first and '"Near"' in second


@pytest.mark.xfail(strict=True, reason="wording differs from the API server: ValidateNodeSelectorRequirement and "
                                        "ValidateLabelSelectorRequirement both say "
                                        '`Invalid value: "Near": not a valid selector operator`')
def test_bad_selector_operator_in_api_server_words(tmp_path: Path) -> None:
    spread = ("{containers: [{name: c}], topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, "
              "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: app, operator: Near, "
              "values: [x]}]}}]}")
    f = write(tmp_path, "in.yaml", POD.format(name="b", spec=spread))
    [line] = bad_input(tmp_path, f)
    assert line.endswith('.operator: Invalid value: "Near": not a valid selector operator'), line


def test_zero_and_negative_max_skew(tmp_path: Path) -> None:
    spec = ("{containers: [{name: c}], topologySpreadConstraints: ["
            "{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule},"
            "{maxSkew: -1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]}")
    f = write(tmp_path, "in.yaml", POD.format(name="a", spec=spec))
    assert bad_input(tmp_path, f) == [
        "in.yaml doc 1: spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        "in.yaml doc 1: spec.topologySpreadConstraints[1].maxSkew: Invalid value: -1: must be greater than zero",
    ]


def test_bad_taint_effect(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", NODE.format(name="n1", body="spec: {taints: [{key: k, effect: NoWay}]}"))
    [line] = bad_input(tmp_path, f)
    prefix = 'in.yaml doc 1: spec.taints[0].effect: Unsupported value: "NoWay": supported values: '
    assert line.startswith(prefix), line
    assert all(f'"{e}"' in line for e in ("NoSchedule", "PreferNoSchedule", "NoExecute"))


def test_two_objects_with_the_same_name(tmp_path: Path) -> None:
    f = write(tmp_path, "in.yaml", NODE.format(name="n1", body="") + "---\n" + NODE.format(name="n1", body=""))
    g = write(tmp_path, "more.yaml", POD.format(name="a", spec=f"{{{C}}}"))
    h = write(tmp_path, "again.yaml", POD.format(name="a", spec=f"{{{C}}}"))
    assert bad_input(tmp_path, f, g, h) == [
        'in.yaml doc 2: metadata.name: duplicate Node "n1" (first defined in in.yaml doc 1)',
        'again.yaml doc 1: metadata.name: duplicate Pod "default/a" (first defined in more.yaml doc 1)',
    ]


def test_unsupported_scenario_event(tmp_path: Path) -> None:
    f = write(tmp_path, "scenario.yaml", "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
              "spec:\n  events:\n  - {at: 10s, explode: {name: a}}\n")
    lines = bad_input(tmp_path, f)
    assert any(line.startswith('scenario.yaml doc 1: spec.events[0].explode: unknown field "explode"')
               for line in lines), lines
    assert all(line.startswith("scenario.yaml doc 1: spec.events[0]") for line in lines), lines


def test_invalid_scheduler_configuration_plugin(tmp_path: Path) -> None:
    f = write(tmp_path, "config.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
              "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n"
              "      enabled: [{name: NoSuchPlugin, weight: 2}]\n")
    w = write(tmp_path, "pods.yaml", POD.format(name="a", spec=f"{{{C}}}"))
    [line] = bad_input(tmp_path, f, w)
    assert line.startswith('config.yaml doc 1: profiles[0].plugins.score.enabled[0].name: "NoSuchPlugin"'), line


@pytest.mark.parametrize(("args", "path", "message"), [
    ("{scoringStrategy: {resources: [{name: cpu, weight: 200}]}}",
     "scoringStrategy.resources[0].weight", "Invalid value: 200: resource weight of cpu not in valid range [1, 100]"),
    ("{scoringStrategy: {type: Fancy}}", "scoringStrategy.type", 'Unsupported value: "Fancy"'),
    ("{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: "
     "[{utilization: 50, score: 1}, {utilization: 40, score: 2}]}}}",
     "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
     "Invalid value: 40: utilization values must be sorted in increasing order"),
    ("{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: "
     "[{utilization: 0, score: 11}]}}}",
     "scoringStrategy.requestedToCapacityRatio.shape[0].score", "Invalid value: 11: not in valid range [0, 10]"),
])
def test_invalid_node_resources_fit_args(tmp_path: Path, args: str, path: str, message: str) -> None:
    f = write(tmp_path, "config.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
              "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n"
              f"  - {{name: NodeResourcesFit, args: {args}}}\n")
    [line] = bad_input(tmp_path, f)
    assert line.startswith(f"config.yaml doc 1: profiles[0].pluginConfig[NodeResourcesFit].args.{path}: {message}"), line


def test_a_file_that_does_not_exist(tmp_path: Path) -> None:
    w = write(tmp_path, "pods.yaml", POD.format(name="a", spec=f"{{{C}}}"))
    assert bad_input(tmp_path, w, "missing.yaml") == ["missing.yaml: no such file or directory"]


def test_a_directory_with_good_and_bad_files_reports_everything_and_runs_nothing(tmp_path: Path) -> None:
    write(tmp_path, "in/00-nodes.yaml", NODE.format(name="n1", body="status: {allocatable: {cpu: '4'}}"))
    write(tmp_path, "in/10-good.yaml", POD.format(name="good", spec=f"{{{C}}}"))
    write(tmp_path, "in/20-quantity.yaml", POD.format(
        name="q", spec='{containers: [{name: c, resources: {requests: {memory: "lots"}}}]}'))
    write(tmp_path, "in/30-taint.yaml", NODE.format(name="n2", body="spec: {taints: [{key: k, effect: Sometimes}]}"))
    write(tmp_path, "in/sub/40-dup.yaml", POD.format(name="good", spec=f"{{{C}}}"))
    write(tmp_path, "in/notes.txt", "not an input file")
    lines = bad_input(tmp_path, "in")
    assert len(lines) == 3, lines
    assert lines[0] == f'{os.path.join("in", "20-quantity.yaml")} doc 1: ' \
                       'spec.containers[0].resources.requests.memory: "lots" is not a quantity'
    assert lines[1].startswith(f"{os.path.join('in', '30-taint.yaml')} doc 1: spec.taints[0].effect: ")
    assert lines[2] == (f"{os.path.join('in', 'sub', '40-dup.yaml')} doc 1: metadata.name: duplicate Pod "
                        f"\"default/good\" (first defined in {os.path.join('in', '10-good.yaml')} doc 1)")


def test_syntax_and_validation_problems_in_different_files_are_reported_together(tmp_path: Path) -> None:
    write(tmp_path, "in/a.yaml", "kind: Pod\nmetadata: {name: a\n")
    write(tmp_path, "in/b.yaml", POD.format(name="b", spec="{}"))
    write(tmp_path, "in/c.yaml", "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
          "spec:\n  events:\n  - {at: 1s, evict: {name: b}}\n  - {at: 1s, explode: {}}\n")
    lines = bad_input(tmp_path, "in")
    files = {LINE.match(line)["file"] for line in lines}  # type: ignore[index]
    assert files == {os.path.join("in", n) for n in ("a.yaml", "b.yaml", "c.yaml")}, lines


# --- good input: exit codes and the results contract ---------------------------------------------

SCENARIO = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: big}
spec: {containers: [{name: c, resources: {requests: {cpu: "4"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: e}
spec: {priorityClassName: gold, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: gone, annotations: {sim.kubesched.io/shutdown: 30s}}
spec: {containers: [{name: c}]}
---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: contract}
spec:
  seed: 3
  events:
  - {at: 30s, delete: {kind: Pod, namespace: default, name: gone}}
  expect:
  - {pod: default/a, nodeName: n1}
  - {pod: default/big, phase: Pending}
  - {pod: default/gone, deleted: true}
  - {rejected: Pod/default/e, messageContains: gold}
"""


def test_exit_code_0_when_every_expectation_holds(tmp_path: Path) -> None:
    f = write(tmp_path, "s.yaml", SCENARIO)
    proc = simulate(tmp_path, f)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "FAILED" not in proc.stdout


def test_exit_code_1_and_the_failed_expectation_is_shown(tmp_path: Path) -> None:
    f = write(tmp_path, "s.yaml", SCENARIO.replace("{pod: default/a, nodeName: n1}",
                                                   "{pod: default/a, nodeName: n2}"))
    proc = simulate(tmp_path, f)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    text = " ".join(proc.stdout.split())  # the table may wrap
    assert "FAILED" in text and "default/a" in text and "n2" in text

    proc = simulate(tmp_path, f, "--output", "json")
    assert proc.returncode == 1
    expects = json.loads(proc.stdout)["expect"]
    failed = [e for e in expects if not e["ok"]]
    assert [e["expect"] for e in failed] == [{"pod": "default/a", "nodeName": "n2"}]
    assert "n1" in failed[0]["detail"]


def check_contract(data: dict[str, Any]) -> None:
    assert {"time", "pods", "nodes", "events", "rejected"} <= set(data)
    assert isinstance(data["time"], float)
    for p in data["pods"]:
        pending = p["nodeName"] is None and not p["deleted"]  # pending pods also say why they wait
        assert set(p) == {"namespace", "name", "uid", "priority", "nodeName", "nominatedNodeName", "phase",
                          "deleted", "reason"} | ({"message", "conditions"} if pending else set())
        assert isinstance(p["uid"], str) and isinstance(p["priority"], int) and isinstance(p["deleted"], bool)
    for n in data["nodes"]:
        assert set(n) == {"name", "allocatable", "requested", "taints", "unschedulable"}
        for key in ("allocatable", "requested"):
            assert {"cpu", "memory", "pods"} <= set(n[key])
            assert all(isinstance(v, str) for v in n[key].values())
        assert isinstance(n["taints"], list) and isinstance(n["unschedulable"], bool)
    for e in data["events"]:
        assert set(e) == {"time", "type", "reason", "object", "message"}
        assert isinstance(e["time"], float) and e["type"] in ("Normal", "Warning")
    for r in data["rejected"]:
        assert set(r) == {"time", "object", "message"}
        assert isinstance(r["time"], float)


def test_json_output_follows_the_results_contract(tmp_path: Path) -> None:
    f = write(tmp_path, "s.yaml", SCENARIO)
    proc = simulate(tmp_path, f, "--output", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    check_contract(data)
    pods = {p["name"]: p for p in data["pods"]}
    assert set(pods) == {"a", "big", "gone"}  # "e" was refused by the API: a result, not a pod
    assert pods["a"]["nodeName"] == "n1" and pods["a"]["phase"] == "Running" and pods["a"]["reason"] is None
    assert pods["big"]["nodeName"] is None and pods["big"]["phase"] == "Pending"
    assert pods["gone"]["deleted"] is True and pods["gone"]["reason"] == "Deleted"
    [n1] = data["nodes"]
    assert n1["name"] == "n1"
    assert n1["allocatable"]["cpu"] == "2" and n1["allocatable"]["memory"] == "4Gi"
    assert n1["requested"]["cpu"] == "1" and n1["requested"]["memory"] == "1Gi" and n1["requested"]["pods"] == "1"
    assert data["rejected"] == [{"time": 0.0, "object": "Pod/default/e",
                                 "message": "no PriorityClass with name gold was found"}]
    failed = [e for e in data["events"] if e["reason"] == "FailedScheduling"]
    assert failed and failed[0]["object"] == "Pod/default/big" and failed[0]["type"] == "Warning"
    assert failed[0]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    scheduled = [e for e in data["events"] if e["reason"] == "Scheduled"]
    assert {e["object"] for e in scheduled} == {"Pod/default/a", "Pod/default/gone"}
    assert data["time"] >= 60.0  # "gone" takes its whole 30 s grace period to stop (its annotation): 60 s


def test_yaml_output_parses_to_the_same_result(tmp_path: Path) -> None:
    f = write(tmp_path, "s.yaml", SCENARIO)
    as_json = simulate(tmp_path, f, "-o", "json")
    as_yaml = simulate(tmp_path, f, "-o", "yaml")
    assert as_yaml.returncode == 0, as_yaml.stderr
    data = yaml.safe_load(as_yaml.stdout)
    check_contract(data)
    assert data == json.loads(as_json.stdout)
