"""Output that scales (issue 17): the table summarises before it lists and keeps its listings
bounded, never cuts a name when piped and shows memory in binary units; the JSON says why each
pending pod waits and how each disruption budget stands; the run summary (utilisation, time to a
node and preemptions per priority class, counts) is right on scenarios whose answers are known."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from kubesched.api.quantity import format_memory as memory
from kubesched.cluster.recorder import PodHistory
from kubesched.sim.results import render_table, to_json
from kubesched.sim.runner import SimResult, load, simulate
from kubesched.sim.summary import group_pending, summarize

SCENARIOS = Path(__file__).parent / "scenarios"


def node(name: str, cpu: str = "1", mem: str = "4Gi", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, **meta},
            "status": {"allocatable": {"cpu": cpu, "memory": mem, "pods": "110"}}}


def pod(name: str, cpu: str = "1", mem: str = "1Gi", annotations: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": mem}}}],
                     **spec}}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
            "preemptionPolicy": "Never"}


def scenario(until: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "t"},
            "spec": {"until": until, "events": events}}


def run(tmp_path: Path, docs: list[dict[str, Any]]) -> SimResult:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return simulate(load([str(path)]))


def table(result: SimResult, limit: int = 100) -> str:
    out = io.StringIO()
    render_table(result, Console(file=out, width=400), limit)
    return out.getvalue()


# ---- the run summary ------------------------------------------------------------------------------

def test_pending_time_percentiles_per_class(tmp_path: Path) -> None:
    """Batch pods arrive at 0-5 s on a cluster with one 1-cpu node; nodes that fit one pod each
    join later, so the pods wait 0, 10, 20, 30 and 100 s and the last never gets a node. A web pod
    (higher priority, never preempting) arrives at 40 s and takes the node that joins at 45 s."""
    batch = [pod(f"p{i}", priorityClassName="batch") for i in range(6)]
    docs = [priority_class("batch", 100), priority_class("web", 200), node("n0"), batch[0],
            scenario("200s", [{"at": f"{i}s", "create": p} for i, p in enumerate(batch) if i]
                     + [{"at": f"{t}s", "create": node(f"n{i}")} for i, t in ((1, 11), (2, 22), (3, 33), (4, 104))]
                     + [{"at": "40s", "create": pod("w0", priorityClassName="web")},
                        {"at": "45s", "create": node("n5")}])]
    result = run(tmp_path, docs)
    bound = {h.obj["metadata"]["name"]: h.bound_at for h in result.recorder.pods.values()}
    assert bound == {"p0": 0, "p1": 11, "p2": 22, "p3": 33, "p4": 104, "p5": None, "w0": 45}
    web, batch_row = summarize(result)["pendingTime"]
    assert web == {"class": "web", "priority": 200, "bound": 1, "unbound": 0, "p50": 5, "p90": 5, "p99": 5, "max": 5}
    # nearest rank over [0, 10, 20, 30, 100]: p50 is the 3rd, p90 and p99 the 5th
    assert batch_row == {"class": "batch", "priority": 100, "bound": 5, "unbound": 1,
                         "p50": 20, "p90": 100, "p99": 100, "max": 100}
    text = table(result)
    assert "Time from creation to a node, by priority class" in text
    [row] = [line for line in text.splitlines() if "│ batch " in line]
    assert [c.strip() for c in row.split("│")[1:-1]] == ["batch", "100", "5", "20s", "1m40s", "1m40s", "1m40s", "1"]


def test_utilization_is_time_weighted_over_nodes_that_join(tmp_path: Path) -> None:
    """A 4-cpu node; `a` (1 cpu) runs 0-100 s, `b` (2 cpu) from 50 s on; a second 4-cpu node joins
    at 100 s. cpu: 25 % for 50 s, 75 % for 50 s, then 2 of 8 (25 %) for 100 s: 37.5 % on average."""
    docs = [node("n1", cpu="4", mem="8Gi"), pod("a", cpu="1", mem="2Gi", annotations={"sim.kubesched.io/duration": "100s"}),
            scenario("200s", [{"at": "50s", "create": pod("b", cpu="2", mem="2Gi")},
                              {"at": "100s", "create": node("n2", cpu="4", mem="8Gi")}])]
    s = summarize(run(tmp_path, docs))
    assert s["utilization"]["cpu"] == {"average": 0.375, "peak": 0.75, "peakAt": 50.0}
    # memory: 2 of 8Gi, 4 of 8Gi, then 2 of 16Gi
    assert s["utilization"]["memory"] == {"average": 0.25, "peak": 0.5, "peakAt": 50.0}
    assert s["pods"] == {"total": 2, "Running": 1, "Pending": 0, "Succeeded": 1, "Failed": 0, "deleted": {}}
    assert s["span"] == {"start": 0.0, "end": 200.0}


def test_preemptions_per_class_and_counts() -> None:
    result = simulate(load([str(SCENARIOS / "preemption-seed-example-1.yaml")]))
    s = summarize(result)
    assert s["pods"] == {"total": 4, "Running": 1, "Pending": 1, "Succeeded": 0, "Failed": 0,
                         "deleted": {"Preempted": 2}}
    assert s["preemptions"] == {"total": 1, "victims": 2, "byClass": [
        {"class": "p1000", "priority": 1000, "preemptions": 1, "victimsCaused": 2, "preempted": 0, "preemptedBy": {}},
        {"class": "p100", "priority": 100, "preemptions": 0, "victimsCaused": 0, "preempted": 2,
         "preemptedBy": {"p1000": 2}}]}
    # a and b arrived on their node: they never waited for one and are not in the statistics
    assert [(r["class"], r["bound"], r["unbound"], r["max"]) for r in s["pendingTime"]] == [
        ("p1000", 1, 0, 60.0), ("p50", 0, 1, None)]
    text = table(result)
    assert "Pods: 4: 1 Running, 1 Pending; deleted: 2 Preempted. Nodes: 1" in text
    assert "Preempted: 2 pod(s) in 1 preemption(s)" in text
    [row] = [line for line in text.splitlines() if "│ p100 " in line]
    assert [c.strip() for c in row.split("│")[1:-1]] == ["p100", "100", "0", "0", "2", "2 by p1000"]


# ---- pending reasons ------------------------------------------------------------------------------

def test_pending_pods_grouped_by_reason_set(tmp_path: Path) -> None:
    """Three pods too big for any node and two that match no node: two reasons, however many pods."""
    docs = [node("n1", cpu="2"), node("n2", cpu="2")]
    docs += [pod(f"big-{i}", cpu="3") for i in range(3)]
    docs += [pod(f"lost-{i}", nodeSelector={"zone": "mars"}) for i in range(2)]
    result = run(tmp_path, docs)
    groups = summarize(result)["pendingReasons"]
    assert [(g["pods"], g["examples"]) for g in groups] == [
        (3, ["default/big-0", "default/big-1", "default/big-2"]), (2, ["default/lost-0", "default/lost-1"])]
    assert groups[0]["reason"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert groups[1]["reason"].startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")
    text = table(result)
    summary, listing = text.split("\nNodes: 2", 1)
    assert "Pending pods by reason: 5" in summary and "default/big-2" in summary
    assert "default/big-2" in listing  # and each pod is still listed


def test_pending_reasons_merge_messages_that_differ_only_in_node_counts() -> None:
    pending = []
    messages = [
        "0/10 nodes are available: 3 Insufficient cpu, 7 Insufficient nvidia.com/gpu. preemption: 0/10 nodes "
        "are available: 10 No preemption victims found for incoming pod.",
        "0/12 nodes are available: 5 Insufficient cpu, 7 Insufficient nvidia.com/gpu. preemption: 0/12 nodes "
        "are available: 12 No preemption victims found for incoming pod.",
        "0/10 nodes are available: 10 Insufficient cpu. preemption: 0/10 nodes are available: 10 No preemption "
        "victims found for incoming pod.",
        None,
    ]
    for i, message in enumerate(messages):
        status = {"phase": "Pending"}
        if message:
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": message}]
        pending.append(PodHistory({"metadata": {"namespace": "ns", "name": f"p{i}"}, "spec": {}, "status": status}))
    groups = group_pending(pending)
    assert groups == [
        {"pods": 2, "examples": ["ns/p0", "ns/p1"],
         "reason": "0/10-12 nodes are available: 3-5 Insufficient cpu, 7 Insufficient nvidia.com/gpu. preemption: "
                   "0/10-12 nodes are available: 10-12 No preemption victims found for incoming pod."},
        {"pods": 1, "examples": ["ns/p2"], "reason": messages[2]},
        {"pods": 1, "examples": ["ns/p3"], "reason": "not attempted yet"},
    ]


# ---- listings -------------------------------------------------------------------------------------

def test_listings_are_bounded(tmp_path: Path) -> None:
    docs = [node("n1", cpu="100")] + [pod(f"web-{i}") for i in range(7)]
    text = table(run(tmp_path, docs), limit=3)
    assert "... and 4 more pods (use -o json)" in text
    assert "default/web-2" in text and "default/web-3" not in text
    assert "... and 4 more events (use -o json)" in text  # 7 Scheduled events


def test_memory_in_binary_units(tmp_path: Path) -> None:
    assert [memory(v) for v in (0, 1000, 3000, 512 << 20, 1500 << 20, 32 << 30, 16393633792, 100_000_000)] == [
        "0", "1000", "3Ki", "512Mi", "1.46Gi", "32Gi", "15.27Gi", "95Mi"]
    text = table(run(tmp_path, [node("n1", cpu="4", mem="16393633792"), pod("a", mem="1500Mi")]))
    [row] = [line for line in text.splitlines() if line.startswith("│ n1 ")]
    assert "1.46Gi/15.27Gi" in row


def test_names_are_never_cut_when_piped(tmp_path: Path) -> None:
    long_pod = "a-deployment-with-a-rather-long-name-7f9c8d6b5-" + "x" * 16  # 63 characters, the limit
    long_node = "ip-10-0-123-45.eu-west-1.compute.internal-" + "n" * 60
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all([node(long_node, cpu="4"), pod(long_pod),
                                        pod("too-big-" + "y" * 55, cpu="64")]))
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", str(path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    for name in (f"default/{long_pod}", long_node, "default/too-big-" + "y" * 55):
        assert name in proc.stdout
    # a pod's row is one line: names, node and phase together
    assert any(f"default/{long_pod}" in line and long_node in line and "Running" in line
               for line in proc.stdout.splitlines())


# ---- JSON -----------------------------------------------------------------------------------------

def test_json_pending_pods_say_why_and_budgets_their_status(tmp_path: Path) -> None:
    web = [pod(f"web-{i}", cpu="100m") for i in range(3)]
    for p in web:
        p["metadata"]["labels"] = {"app": "web"}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}
    data = to_json(run(tmp_path, [node("n1"), *web, pod("big", cpu="2"), pdb]))
    json.dumps(data)  # serialisable as it is
    pods = {p["name"]: p for p in data["pods"]}
    big = pods["big"]
    last = [e["message"] for e in data["events"] if e["reason"] == "FailedScheduling" and e["object"] == "Pod/default/big"]
    assert big["message"] == last[-1] and big["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    [cond] = [c for c in big["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", big["message"])
    assert "conditions" not in pods["web-0"] and "message" not in pods["web-0"]  # placed: nothing to explain
    assert data["podDisruptionBudgets"] == [{"namespace": "default", "name": "web", "minAvailable": 2,
                                             "currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1,
                                             "expectedPods": 3}]
    assert data["summary"]["pods"]["Pending"] == 1
    assert data["summary"]["pendingReasons"][0]["examples"] == ["default/big"]


@pytest.mark.parametrize("name", ["preemption-seed-example-1.yaml", "drain-basic.yaml"])
def test_summary_survives_yaml(name: str) -> None:
    """The YAML output is the JSON output: nothing in the summary YAML cannot say (NaN, tuples)."""
    data = to_json(simulate(load([str(SCENARIOS / name)])))
    assert yaml.safe_load(yaml.safe_dump(data)) == json.loads(json.dumps(data))


def test_utilization_counts_a_deleted_node_while_it_was_there(tmp_path: Path) -> None:
    """Two 4-cpu nodes; `a` (2 cpu) runs throughout; n2 is deleted at 100 s. cpu: 2 of 8 (25 %)
    for 100 s, then 2 of 4 (50 %) for 100 s: 37.5 % on average, peaking when n2 goes."""
    docs = [node("n1", cpu="4", mem="8Gi"), node("n2", cpu="4", mem="8Gi"), pod("a", cpu="2", mem="2Gi"),
            scenario("200s", [{"at": "100s", "delete": {"kind": "Node", "name": "n2"}}])]
    s = summarize(run(tmp_path, docs))
    assert s["utilization"]["cpu"] == {"average": 0.375, "peak": 0.5, "peakAt": 100.0}


@pytest.mark.parametrize(("expect", "code"), [({"pod": "default/a", "phase": "Running"}, 0),
                                              ({"pod": "default/a", "phase": "Pending"}, 1)])
def test_the_cli_process_ends_with_its_whole_output_and_exit_code(tmp_path: Path, expect: dict, code: int) -> None:
    """`simulate` ends its process without tearing the heap down: every byte of the results is
    still written, piped, and the exit code says whether the expectations held."""
    path = tmp_path / "in.yaml"
    docs = [node("n1", cpu="4"), *[pod(f"p{i}", cpu="10m", mem="10Mi") for i in range(100)], pod("a", cpu="10m"),
            scenario("10s", [])]
    docs[-1]["spec"]["expect"] = [expect]
    path.write_text(yaml.safe_dump_all(docs))
    proc = subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", str(path), "-o", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.endswith("}\n")
    assert len(json.loads(proc.stdout)["pods"]) == 101
