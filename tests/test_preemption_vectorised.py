"""Preemption's dry run judged on all nodes at once (request totals, side-by-side reprieve) must
decide exactly as the node-by-node walk it replaces: same candidates, victims, nominated node,
rejected nodes and their order, events and placements, on random clusters with several
resources, taints, cordoned nodes, budgets, nominations and a small candidate sample."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.scheduler.config import load_config
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption

PRIORITIES = {"low": 10, "mid": 100, "high": 1000}


def node(i: int, cpu: int, memory: int, gpu: int, tainted: bool, cordoned: bool) -> dict[str, Any]:
    allocatable = {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "6"}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {"unschedulable": cordoned}
    if tainted:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "spec": spec, "status": {"allocatable": allocatable}}


def pod(name: str, cpu: int, memory: int, gpu: int, pc: str | None, app: str, on: str | None = None,
        tolerates: bool = False) -> dict[str, Any]:
    requests = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app", "resources": {"requests": requests,
                                                                                     "limits": dict(requests)}}],
                            "terminationGracePeriodSeconds": 5}
    if pc:
        spec["priorityClassName"] = pc
    if on:
        spec["nodeName"] = on
    if tolerates:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    meta = {"name": name, "namespace": "default", "labels": {"app": app}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(2, 9))
    nodes = [node(i, draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([2, 4])), draw(st.sampled_from([0, 0, 2])),
                  draw(st.booleans()) and i % 3 == 0, draw(st.booleans()) and i % 4 == 1) for i in range(n)]
    resources = st.tuples(st.sampled_from([250, 500, 1000, 1500]), st.sampled_from([256, 1024, 2048]),
                          st.sampled_from([0, 0, 1]))
    running = []
    for i in range(draw(st.integers(n, 4 * n))):
        cpu, memory, gpu = draw(resources)
        running.append(pod(f"r{i}", cpu, memory, gpu, draw(st.sampled_from([None, "low", "mid", "high"])),
                           draw(st.sampled_from("abc")), on=f"n{draw(st.integers(0, n - 1))}"))
    arriving = []
    for i in range(draw(st.integers(1, 6))):
        cpu, memory, gpu = draw(resources)
        arriving.append((draw(st.integers(0, 3)), pod(f"p{i}", cpu * 2, memory, gpu, draw(st.sampled_from(["mid", "high"])),
                                                      "z", tolerates=draw(st.booleans()))))
    budgets = [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": f"b-{app}", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": draw(st.integers(0, 1))}}
               for app in draw(st.sets(st.sampled_from("abc")))]
    return {"nodes": nodes, "running": running, "arriving": arriving, "budgets": budgets,
            "absolute": draw(st.sampled_from([1, 2, 100])), "seed": draw(st.integers(0, 3))}


def run(w: dict[str, Any], vectorised: bool, explain: bool) -> dict[str, Any]:
    config = load_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                          "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                              {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 0,
                                                                      "minCandidateNodesAbsolute": w["absolute"]}}]}]})
    DefaultPreemption.victims_below_priority = vectorised
    try:
        cluster = Cluster(seed=w["seed"], scheduler_config=config, explain={"*"} if explain else None)
        for value_name, value in PRIORITIES.items():
            cluster.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": value_name},
                            "value": value})
        for obj in w["nodes"] + w["budgets"] + w["running"]:
            cluster.create(obj)
        cluster.run()
        for at, obj in sorted(w["arriving"], key=lambda x: x[0]):
            cluster.clock.call_at(float(at), lambda obj=obj: cluster.create(obj))
        cluster.run()
    finally:
        DefaultPreemption.victims_below_priority = True
    pods = {p["metadata"]["name"]: (p["spec"].get("nodeName"), (p.get("status") or {}).get("nominatedNodeName"))
            for p in cluster.api.store.list("Pod")}
    events = [(e.get("reason"), e.get("message"), (e.get("involvedObject") or {}).get("name"))
              for e in cluster.api.store.list("Event")]
    records = {k: [r.postfilter for r in recs] for k, recs in cluster.scheduler.records.items()}
    return {"pods": pods, "events": events, "preemptions": cluster.recorder.preemptions, "records": records}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(worlds(), st.booleans())
def test_vectorised_dry_run_decides_as_the_node_by_node_walk(w: dict[str, Any], explain: bool) -> None:
    assert run(w, True, explain) == run(w, False, explain)


def test_the_walk_sees_preemptions_happen() -> None:
    """The comparison is not vacuous: such worlds do preempt, on the vectorised path."""
    w = {"nodes": [node(0, 2, 4, 0, False, False), node(1, 2, 4, 0, False, False)],
         "running": [pod(f"r{i}", 1000, 256, 0, "low", "a", on=f"n{i % 2}") for i in range(4)],
         "arriving": [(0, pod("p0", 2000, 256, 0, "high", "z"))], "budgets": [], "absolute": 100, "seed": 0}
    out = run(w, True, True)
    assert len(out["preemptions"]) == 1 and len(out["preemptions"][0]["victims"]) == 2
    assert out["pods"]["p0"][0] in ("n0", "n1")


def test_a_nominated_pod_keeps_its_room_during_the_reprieve() -> None:
    """A mid-priority pod preempting on the node a high-priority one was just nominated to must
    leave room for both: one victim, where alone it would need none."""
    w = {"nodes": [node(0, 4, 4, 0, False, False)],
         "running": [pod(f"r{i}", 1000, 256, 0, "low", "a", on="n0") for i in range(4)],
         "arriving": [(0, pod("p0", 2000, 256, 0, "high", "z")), (0, pod("p1", 1000, 256, 0, "mid", "z"))],
         "budgets": [], "absolute": 100, "seed": 0}
    out = run(w, True, False)
    assert out == run(w, False, False)
    assert [len(p["victims"]) for p in out["preemptions"]] == [2, 1]
