"""Property tests for node-pressure eviction (kubernetes.io "Node-pressure Eviction", the Pod Priority and Preemption docs).

- The kubelet never evicts a pod using no more memory than it requests while a pod using more
  than it requests is still running on that node (usage above requests ranks first).
- Housekeeping only the nodes that need it gives the same evictions, at the same times, and the
  same pressure conditions as housekeeping every node every 10 s.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.kubelet.eviction import EvictionManager, NodeState

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MI = 2**20
CONFIGS = [
    None,
    {"evictionHard": {"memory.available": "1Gi"}},
    {"evictionHard": {"memory.available": "500Mi"}, "evictionMinimumReclaim": {"memory.available": "1Gi"}},
    {"evictionHard": {"memory.available": "300Mi"}, "evictionSoft": {"memory.available": "1200Mi"},
     "evictionSoftGracePeriod": {"memory.available": "30s"}, "evictionMaxPodGracePeriod": 5,
     "evictionPressureTransitionPeriod": "40s"},
]


@st.composite
def workloads(draw: Any) -> dict[str, Any]:
    """Pods near their requests (some above, some below) on nodes whose system daemons may use
    more than was reserved for them, so both kinds of pod end up ranked for eviction."""
    nodes = draw(st.integers(1, 2))
    pods = []
    for _ in range(draw(st.integers(2, 7))):
        request = draw(st.sampled_from([0, 256, 512]))
        pods.append({"node": f"n{draw(st.integers(0, nodes - 1))}", "request": request,
                     "limit": draw(st.sampled_from([None, 1024])),
                     "usage": max(0, request + draw(st.integers(-256, 384))),
                     "priority": draw(st.sampled_from([0, 10, 1000]))})
    events = [(draw(st.integers(1, 120)), draw(st.integers(0, len(pods) - 1)), draw(st.integers(0, 900)))
              for _ in range(draw(st.integers(0, 5)))]
    return {"nodes": [draw(st.sampled_from([0, 2048, 2560, 3072])) for _ in range(nodes)], "pods": pods,
            "events": events, "config": draw(st.sampled_from(CONFIGS))}


def build(w: dict[str, Any]) -> Cluster:
    c = Cluster(kubelet_config=w["config"])
    for value in (10, 1000):
        c.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{value}"},
                  "value": value})
    for i, system in enumerate(w["nodes"]):
        c.create({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": f"n{i}", "annotations": {"sim.kubesched.io/system-usage-memory": f"{system}Mi"}},
            "status": {"capacity": {"memory": "4Gi"}, "allocatable": {"cpu": "8", "memory": "3Gi", "pods": "110"}}})
    for i, p in enumerate(w["pods"]):
        resources: dict[str, Any] = {"requests": {"memory": f"{p['request']}Mi"}} if p["request"] else {}
        if p["limit"]:
            resources["limits"] = {"memory": f"{p['limit']}Mi"}
        spec = {"nodeName": p["node"], "terminationGracePeriodSeconds": 10,
                "containers": [{"name": "c", "image": "app", "resources": resources}]}
        if p["priority"]:
            spec["priorityClassName"] = f"p{p['priority']}"
        c.create({"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {
            "name": f"pod-{i}", "annotations": {"sim.kubesched.io/usage-memory": f"{p['usage']}Mi"}}})
    for at, i, usage in w["events"]:
        c.clock.call_at(at, lambda i=i, usage=usage: _set_usage(c, f"pod-{i}", usage))
    return c


def _set_usage(c: Cluster, name: str, usage: int) -> None:
    if c.api.store.get("Pod", "default", name)["status"].get("phase") == "Running":
        c.kubelets.set_usage("default", name, {"memory": f"{usage}Mi"})


@given(workloads())
@SETTINGS
def test_pods_within_their_requests_go_only_after_those_above(w: dict[str, Any]) -> None:
    c = build(w)
    manager = c.kubelets.eviction
    kill = manager.kill
    seen: list[tuple[str, list[tuple[str, bool]]]] = []

    def watched_kill(pod: Any, grace: int, message: str, disruption: bool) -> float:
        running = [(p.uid, p.total("memory") > p.requests.get("memory", 0)) for p in manager.usage.on_node(pod.node)]
        seen.append((pod.uid, running))
        return kill(pod, grace, message, disruption)

    manager.kill = watched_kill
    c.run(until=400)
    for victim, running in seen:
        exceeds = dict(running)
        if not exceeds[victim]:
            assert not any(exceeds.values()), (victim, running)
    assert len(seen) == len(c.recorder.pressure_evictions)


def outcome(c: Cluster) -> tuple[Any, ...]:
    evictions = sorted((r["pod"], r["time"], r["signal"], r["message"]) for r in c.recorder.pressure_evictions.values())
    conditions = sorted((e.time, e.object, e.reason) for e in c.recorder.events if e.reason.startswith("NodeHas"))
    phases = sorted((h.obj["metadata"]["name"], h.obj["status"].get("phase")) for h in c.recorder.pods.values())
    return evictions, conditions, phases


@given(workloads())
@SETTINGS
def test_lazy_housekeeping_is_the_same_as_ticking_every_node(w: dict[str, Any]) -> None:
    lazy = build(w)
    lazy.run(until=400)

    def always(self: EvictionManager, node: str, st: NodeState) -> tuple[bool, bool]:
        return True, True

    with mock.patch.object(EvictionManager, "_pending", always):
        eager = build(w)
        eager.run(until=400)
    assert outcome(lazy) == outcome(eager)
