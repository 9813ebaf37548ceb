"""Property tests for the Eviction API against PodDisruptionBudgets (kubernetes.io "API-initiated Eviction", the rescheduling design proposal).

However many evictions are asked, and however many at the same instant, the API never lets a
budget's selected pods drop below what it demands: every approved eviction debits the budget
at once, so a burst cannot outrun the disruption controller.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import is_pod_ready, is_terminating
from kubesched.apiserver.errors import APIError
from kubesched.cluster.cluster import Cluster
from kubesched.store.base import WatchEvent

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "50"}}}


def pod(name: str, node_name: str, grace: int, app: str = "web") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"nodeName": node_name, "terminationGracePeriodSeconds": grace,
                     "containers": [{"name": "c", "image": "web"}]}}


@st.composite
def workloads(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 8))
    return {
        "pods": [(f"web-{i}", f"n{draw(st.integers(0, 2))}", draw(st.sampled_from([0, 5, 30]))) for i in range(n)],
        "min_available": draw(st.integers(0, n + 1)),
        "policy": draw(st.sampled_from([None, "IfHealthyBudget", "AlwaysAllow"])),
        "unready": draw(st.sets(st.integers(0, n - 1), max_size=2)),
        # (time, pod index): several requests often share an instant.
        "evictions": draw(st.lists(st.tuples(st.sampled_from([1, 1, 2, 10, 31]), st.integers(0, n - 1)),
                                   min_size=1, max_size=3 * n)),
    }


@SETTINGS
@given(workloads())
def test_evictions_never_break_a_budget(w: dict[str, Any]) -> None:
    cluster = Cluster()
    for i in range(3):
        cluster.create(node(f"n{i}"))
    spec: dict[str, Any] = {"minAvailable": w["min_available"], "selector": {"matchLabels": {"app": "web"}}}
    if w["policy"]:
        spec["unhealthyPodEvictionPolicy"] = w["policy"]
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                    "spec": spec})
    for name, node_name, grace in w["pods"]:
        cluster.create(pod(name, node_name, grace))
    cluster.run(until=0)
    for i in w["unready"]:
        cluster.api.patch("Pod", "default", f"web-{i}", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    cluster.run(until=0.5)

    healthy_floor = min(w["min_available"], len(w["pods"]) - len(w["unready"]))
    lowest: list[int] = []

    def healthy() -> int:
        return sum(1 for p in cluster.store.list("Pod") if is_pod_ready(p) and not is_terminating(p))

    def watch(_: WatchEvent) -> None:
        lowest.append(healthy())

    cluster.store.watch(watch, {"Pod"})
    answers: list[int] = []

    def ask(name: str) -> None:
        try:
            cluster.api.evict("default", name)
            answers.append(200)
        except APIError as e:
            answers.append(e.code)

    for at, i in w["evictions"]:
        cluster.clock.call_at(at, lambda name=f"web-{i}": ask(name))
    cluster.run()

    # Only unready pods (not healthy anyway) may go without a debit; healthy ones never below the floor.
    assert min(lowest, default=healthy_floor) >= healthy_floor, (lowest, healthy_floor)
    assert set(answers) <= {200, 404, 429}
    ready_evicted = {d.pod for d in cluster.recorder.disruptions} - {f"default/web-{i}" for i in w["unready"]}
    assert len(ready_evicted) <= max(0, len(w["pods"]) - len(w["unready"]) - w["min_available"])
    pdb = cluster.store.get("PodDisruptionBudget", "default", "web")
    assert pdb is not None
    status = pdb["status"]
    assert status["disruptionsAllowed"] == max(0, status["currentHealthy"] - status["desiredHealthy"])
    assert status["currentHealthy"] == healthy()
