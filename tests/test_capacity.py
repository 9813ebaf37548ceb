"""`kubesched capacity`: its answer is what `simulate` gives when the same copies are added one by
one (shapes round-robin, the copy that does not fit deleted, then the preemption round); the
preemption round's counts and victims; its stop reasons; bad --pod input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.commands.cli import main
from kubesched.sim.capacity import group_reasons

EXAMPLE = Path(__file__).parent.parent / "examples" / "capacity"
CLUSTER, WEB, GPU = (str(EXAMPLE / n) for n in ("cluster.yaml", "web.yaml", "gpu.yaml"))


def capacity(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["capacity", *args], env={"COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def capacity_json(*args: str) -> dict[str, Any]:
    code, out, err = capacity(*args, "-o", "json")
    assert code == 0, err
    return json.loads(out)


# ---- the replay through `simulate` ------------------------------------------------------------------


def replay(data: dict[str, Any], shapes: dict[str, dict[str, Any]],
           classes: dict[str, int]) -> list[dict[str, Any]]:
    """The copies capacity says it added, as a Scenario adding them one by one at the virtual times
    it reports: shapes in the round-robin order of its --help, the copy that did not fit deleted
    before the next, the companion classes it names (same value, preemptionPolicy Never); then the
    preemption round with the shapes' own classes. Returns the Scenario's documents."""
    docs: list[dict[str, Any]] = []
    for s in data["shapes"]:
        own, twin = s["priorityClassName"], s["copyPriorityClassName"]
        if twin != own and twin not in {d["metadata"]["name"] for d in docs}:
            docs.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                         "metadata": {"name": twin}, "value": classes.get(own or "", 0),
                         "preemptionPolicy": "Never"})
    events: list[dict[str, Any]] = []
    last = -1.0

    def add(s: dict[str, Any], name: str, klass: str | None, at: float, deleted: float | None) -> None:
        nonlocal last
        assert at > last  # one by one, in the order capacity tells
        pod = json.loads(json.dumps(shapes[s["name"]]))
        pod["metadata"]["name"] = name
        pod["spec"].pop("priorityClassName", None)
        if klass:
            pod["spec"]["priorityClassName"] = klass
        events.append({"at": f"{at}s", "create": pod})
        if deleted is not None:
            gone = {"kind": "Pod", "namespace": s["namespace"], "name": name}
            events.append({"at": f"{deleted}s", "delete": gone})
        last = deleted if deleted is not None else at

    rounds = [("copyPriorityClassName", "stop", False, list(data["shapes"]))]
    if data["preempt"]:
        rounds.append(("priorityClassName", "stopPreempting", True,
                       [s for s in data["shapes"] if s["stop"]["type"] == "Unschedulable"]))
    for klass, stop, preempting, active in rounds:
        queues = {s["name"]: [c for c in s["copies"] if c["byPreemption"] == preempting] for s in active}
        while active:
            for s in list(active):
                if queues[s["name"]]:
                    c = queues[s["name"]].pop(0)
                    add(s, c["name"], s[klass], c["createdAt"], None)
                    continue
                if s[stop]["type"] == "Unschedulable":
                    add(s, s[stop]["copy"], s[klass], s[stop]["createdAt"], s[stop]["deletedAt"])
                active.remove(s)
    docs.append({"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "replay"},
                 "spec": {"events": events}})
    return docs


def simulate_json(*paths: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", *paths, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def agree(tmp_path: Path, snapshot: list[str], pods: list[str], classes: dict[str, int], *flags: str) -> dict:
    data = capacity_json(*snapshot, *[a for p in pods for a in ("--pod", p)], *flags)
    shapes = {yaml.safe_load(Path(p).read_text())["metadata"]["name"]: yaml.safe_load(Path(p).read_text())
              for p in pods}
    scenario = tmp_path / "replay.yaml"
    scenario.write_text(yaml.safe_dump_all(replay(data, shapes, classes)))
    sim = simulate_json(*snapshot, str(scenario))
    prefixes = {s["copyPrefix"] for s in data["shapes"]}

    def copy(name: str) -> bool:
        prefix, _, index = name.rpartition("-")
        return prefix in prefixes and index.isdigit()

    landed = {p["name"]: p["nodeName"] for p in sim["pods"]
              if not p["deleted"] and p["nodeName"] and copy(p["name"])}
    said = {c["name"]: c["node"] for s in data["shapes"] for c in s["copies"] if "removed" not in c}
    assert landed == said
    removed = {p["name"]: p["reason"] for p in sim["pods"] if p["deleted"] and p["nodeName"]}
    fates = {c["name"]: c["removed"].split()[0] for s in data["shapes"] for c in s["copies"] if "removed" in c}
    assert fates == {n: r for n, r in removed.items() if copy(n)}
    # The copy that did not fit failed in the replay with the same reasons.
    for s in data["shapes"]:
        for stop in (s["stop"], s.get("stopPreempting")):
            if stop and stop["type"] == "Unschedulable":
                [said_there] = {e["message"] for e in sim["events"] if e["reason"] == "FailedScheduling"
                                and e["object"] == f"Pod/{s['namespace']}/{stop['copy']}"
                                and stop["createdAt"] <= e["time"] <= stop["deletedAt"]}
                assert said_there == stop["message"]
    for s in data["shapes"]:
        assert s["running"] == sum(1 for n in landed if n.rsplit("-", 1)[0] == s["copyPrefix"])
    return data


def test_example_agrees_with_simulate_adding_the_copies_one_by_one(tmp_path: Path) -> None:
    data = agree(tmp_path, [CLUSTER], [WEB, GPU], {"high": 1000, "low": 100})
    web, train = data["shapes"]
    assert (web["fit"], train["fit"]) == (3, 1)
    assert web["nodes"] == {"node-1": 1, "node-2": 2} and train["nodes"] == {"gpu-1": 1}


def _cluster(tmp_path: Path) -> tuple[list[str], list[str]]:
    """Twelve nodes of three sizes in three zones, part full of low-priority and priority-0 pods;
    web (high priority, spread over zones) and batch (priority 0, anti-affine to itself softly)."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in (("high", 1000), ("low", 100))
    ]
    sizes = [("2", "8Gi"), ("4", "16Gi"), ("8", "32Gi")]
    for i in range(12):
        cpu, memory = sizes[i % 3]
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": f"n{i:02}", "labels": {"topology.kubernetes.io/zone": f"z{i % 3}"}},
                     "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}})
    for i in range(16):
        spec: dict[str, Any] = {"nodeName": f"n{i % 12:02}", "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": f"{300 + 100 * (i % 4)}m",
                                                                    "memory": f"{1 + i % 3}Gi"}}}]}
        if i % 2:
            spec["priorityClassName"] = "low"
        docs.append({"apiVersion": "v1", "kind": "Pod", "spec": spec,
                     "metadata": {"name": f"run-{i}", "labels": {"app": "run"}}})
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(docs))
    spread = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
              "labelSelector": {"matchLabels": {"app": "web"}}}
    apart = {"weight": 50, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                               "labelSelector": {"matchLabels": {"app": "batch"}}}}
    web, batch = tmp_path / "web.yaml", tmp_path / "batch.yaml"
    web.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"priorityClassName": "high", "topologySpreadConstraints": [spread], "containers": [
            {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "700m", "memory": "1Gi"}}}]}}))
    batch.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "batch", "labels": {"app": "batch"}},
        "spec": {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [apart]}},
                 "containers": [{"name": "b", "image": "x",
                                 "resources": {"requests": {"cpu": "1", "memory": "3Gi"}}}]}}))
    return [str(snapshot)], [str(web), str(batch)]


@pytest.mark.parametrize("flags", [(), ("--preempt",)], ids=["free", "preempt"])
def test_two_shapes_agree_with_simulate_with_and_without_preemption(tmp_path: Path,
                                                                    flags: tuple[str, ...]) -> None:
    snapshot, pods = _cluster(tmp_path)
    data = agree(tmp_path, snapshot, pods, {"high": 1000, "low": 100}, *flags)
    web, batch = data["shapes"]
    assert web["fit"] > 5 and batch["fit"] > 5
    if flags:
        # web preempts the low-priority pods and, at priority 0, batch copies placed before it.
        assert web["fitByPreemption"] > 0 and batch["fitByPreemption"] == 0
        victims = [v["pod"] for c in web["copies"] for v in c.get("victims", [])]
        assert any(v.startswith("default/run-") for v in victims)
        assert all(v["priority"] < 1000 for c in web["copies"] for v in c.get("victims", []))
        gone = [c["removed"] for c in batch["copies"] if "removed" in c]
        assert gone and batch["running"] == batch["fit"] - len(gone)
        assert all(r.startswith("Preempted by default/web-") for r in gone)


def test_preempt_counts_victims_per_copy() -> None:
    data = capacity_json(CLUSTER, "--pod", WEB, "--pod", GPU, "--preempt")
    web, train = data["shapes"]
    assert (web["fit"], web["fitByPreemption"], web["victims"]) == (3, 4, 3)
    assert (train["fit"], train["fitByPreemption"], train["victims"]) == (1, 0, 0)
    cost = {(c["node"], v["pod"]) for c in web["copies"] for v in c.get("victims", [])}
    assert cost == {("node-1", "default/batch-a"), ("node-2", "default/batch-b"), ("node-2", "default/batch-c")}
    assert all(c["byPreemption"] == (int(c["name"].split("-")[1]) >= 3) for c in web["copies"])
    # the free copies were made with a class that does not preempt
    assert web["copyPriorityClassName"] == "kubesched-capacity-high" and train["stop"]["preemption"] == \
        "not eligible due to preemptionPolicy=Never."
    # train (priority 100) finds nothing lower to preempt on the GPU node
    assert train["stopPreempting"]["preemption"] == {"No preemption victims found for incoming pod": 1,
                                                      "Preemption is not helpful for scheduling": 2}
    code, out, _ = capacity(CLUSTER, "--pod", WEB, "--pod", GPU, "--preempt")
    assert code == 0
    assert "default/web (cpu 1, memory 2Gi; priorityClassName high): 3 fit, 4 more by preempting 3 pod(s)" in out
    assert "default/batch-a (100)" in out[out.index("what each copy cost"):]


def test_stop_reason_says_why_the_next_copy_does_not_fit() -> None:
    data = capacity_json(CLUSTER, "--pod", WEB, "--pod", GPU)
    web, train = data["shapes"]
    assert web["stop"]["copy"] == "web-3" and web["stop"]["type"] == "Unschedulable"
    assert web["stop"]["message"].startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.")
    assert web["stop"]["reasons"] == {"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 1}
    assert train["stop"]["reasons"] == {"Insufficient nvidia.com/gpu": 1,
                                        "node(s) didn't match Pod's node affinity/selector": 2}
    code, out, _ = capacity(CLUSTER, "--pod", WEB, "--pod", GPU)
    assert code == 0
    assert "without preemption: the next copy (web-3) - Unschedulable: 0/3 nodes are available:" in out
    assert "2 node(s): Insufficient cpu" in out
    assert "node-2 │ 2 (web-{0,2})" in out
    limited = capacity_json(CLUSTER, "--pod", WEB, "--max", "2")["shapes"][0]
    assert limited["fit"] == 2
    assert limited["stop"] == {"type": "LimitReached", "copy": None,
                               "message": "Maximum number of copies simulated: 2"}


def test_group_reasons_reads_the_fit_error() -> None:
    reasons, preemption = group_reasons(
        "0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 4 Insufficient cpu. "
        "preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.")
    assert reasons == {"node(s) had untolerated taint {dedicated: gpu}": 1, "Insufficient cpu": 4}
    assert preemption == {"No preemption victims found for incoming pod": 5}


def test_snapshot_pods_named_like_copies_rename_the_copies(tmp_path: Path) -> None:
    shape = tmp_path / "batch.yaml"
    shape.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: batch}\nspec:\n  priorityClassName: low\n"
                     "  containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]\n")
    snapshot = tmp_path / "more.yaml"
    snapshot.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: batch-0}\nspec:\n  nodeName: node-1\n"
                        "  containers: [{name: c, image: x}]\n")
    data = capacity_json(CLUSTER, str(snapshot), "--pod", str(shape))
    [s] = data["shapes"]
    assert s["copyPrefix"] == "batch-copy" and s["copies"][0]["name"] == "batch-copy-0"


@pytest.mark.parametrize(("text", "expected"), [
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c, image: i, resources: "
     "{requests: {cpu: 1.5x}}}]\n", "spec.containers[0].resources.requests.cpu"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80}]}\n",
     "expected a Pod (or one of Deployment, ReplicaSet, StatefulSet, ReplicationController, Job), found Service"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\n"
     "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c, image: i}]}\n",
     "expected one Pod (or one Deployment/ReplicaSet/StatefulSet/ReplicationController/Job), found 2 objects"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {priorityClassName: gold, containers: [{name: c, "
     "image: i}]}\n", "spec.priorityClassName: no PriorityClass 'gold' in the snapshot"),
])
def test_bad_pod_input_exits_2_with_a_clear_message(tmp_path: Path, text: str, expected: str) -> None:
    shape = tmp_path / "shape.yaml"
    shape.write_text(text)
    code, out, err = capacity(CLUSTER, "--pod", str(shape))
    assert code == 2 and out == ""
    assert str(shape) in err and expected in err, err
    assert "Traceback" not in err


def test_missing_pod_file_and_bad_snapshot_are_told_together(tmp_path: Path) -> None:
    code, _, err = capacity(str(tmp_path / "nowhere.yaml"), "--pod", str(tmp_path / "absent.yaml"))
    assert code == 2
    assert f"{tmp_path / 'absent.yaml'}: no such file or directory" in err
    assert f"{tmp_path / 'nowhere.yaml'}: no such file or directory" in err


def test_a_workload_template_is_a_shape(tmp_path: Path) -> None:
    deployment = tmp_path / "deploy.yaml"
    deployment.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  replicas: 2\n"
        "  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n"
        "    spec: {priorityClassName: high, containers: [{name: c, image: i, resources: {requests: {cpu: '2'}}}]}\n")
    [s] = capacity_json(CLUSTER, "--pod", str(deployment))["shapes"]
    assert s["name"] == "api" and s["fit"] == 1 and s["copies"][0]["node"] == "node-2"


def test_report_writes_the_final_state(tmp_path: Path) -> None:
    report = tmp_path / "capacity.html"
    code, _, err = capacity(CLUSTER, "--pod", WEB, "--pod", GPU, "--report", str(report))
    assert code == 0, err
    page = report.read_text()
    assert "kubesched capacity: web 3, train 1" in page and "web-2" in page
