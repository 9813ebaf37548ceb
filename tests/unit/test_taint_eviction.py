"""Taint based eviction, the node lifecycle controller's taints and pod GC, on a real Cluster.

The scenarios in tests/scenarios (taint-eviction-*, node-lifecycle-*, podgc-*) cover the documented
behaviour; these pin the upstream details that are easy to get subtly wrong: which toleration
counts, when an eviction is fixed, rate limits and zone states, and the PodGC passes.
"""

from __future__ import annotations

from typing import Any

from kubesched.cluster.cluster import Cluster
from kubesched.controllers.nodelifecycle import TokenBucket
from kubesched.controllers.podgc import PodGCController
from kubesched.controllers.tainteviction import matching_tolerations, min_toleration_seconds
from kubesched.runtime.clock import LATE

NOT_READY_NO_EXECUTE = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}


def node(name: str, zone: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if zone:
        meta["labels"] = {"topology.kubernetes.io/zone": zone}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, node_name: str | None = "n1", grace: int = 0, shutdown: str | None = None,
        **spec: Any) -> dict[str, Any]:
    """`shutdown`: how long the pod takes to stop once told to (at once without it; never longer
    than its grace period)."""
    body: dict[str, Any] = {"terminationGracePeriodSeconds": grace, "containers": [{"name": "c", "image": "app"}],
                            **spec}
    if node_name:
        body["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if shutdown is not None:
        meta["annotations"] = {"sim.kubesched.io/shutdown": shutdown}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def taint(cluster: Cluster, name: str, *taints: dict[str, str]) -> None:
    cluster.api.patch("Node", "", name, {"spec": {"taints": list(taints) or None}})


def set_ready(cluster: Cluster, name: str, status: str) -> None:
    cluster.api.patch("Node", "", name, {"status": {"conditions": [{"type": "Ready", "status": status}]}})


def at(cluster: Cluster, when: float, fn: Any) -> None:
    cluster.clock.call_at(when, fn)


def gone_at(cluster: Cluster, name: str) -> float | None:
    h = cluster.recorder.pod("default", name)
    assert h is not None
    return h.deleted_at


def events(cluster: Cluster, reason: str) -> list[tuple[float, str, str]]:
    return [(e.time, e.object, e.message) for e in cluster.recorder.events if e.reason == reason]


def no_execute_at(cluster: Cluster, name: str) -> bool:
    spec = cluster.api.get("Node", "", name).get("spec") or {}
    return any({"key": t["key"], "effect": t["effect"]} == NOT_READY_NO_EXECUTE for t in spec.get("taints") or ())


# --- the helpers ---------------------------------------------------------------------------------

def test_each_taint_is_matched_by_the_first_toleration_that_tolerates_it() -> None:
    forever = {"operator": "Exists", "effect": "NoExecute"}
    limited = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    taints = [{"key": "k", "effect": "NoExecute"}, {"key": "j", "effect": "NoExecute"}]
    assert matching_tolerations(taints, [forever, limited]) == [forever, forever]
    assert matching_tolerations(taints, [limited, forever]) == [limited, forever]
    assert matching_tolerations(taints, [limited]) is None
    assert matching_tolerations(taints, []) is None


def test_min_toleration_seconds() -> None:
    def tol(seconds: int | None) -> dict[str, Any]:
        return {"operator": "Exists"} if seconds is None else {"operator": "Exists", "tolerationSeconds": seconds}

    assert min_toleration_seconds([tol(None), tol(None)]) is None  # stays for good
    assert min_toleration_seconds([tol(120), tol(None), tol(30)]) == 30
    assert min_toleration_seconds([tol(120), tol(-5)]) == 0
    assert min_toleration_seconds([]) == 0


def test_token_bucket_lets_one_through_then_one_every_ten_seconds() -> None:
    bucket = TokenBucket(0.1, 1.0, 0.0)
    assert bucket.try_accept(0.0)
    assert not bucket.try_accept(9.9)
    assert bucket.next_token() == 10.0
    assert bucket.try_accept(10.0)
    never = bucket.swapped(0.0, 10.0)
    assert not never.try_accept(1000.0) and never.next_token() is None
    # A new limiter starts drained when the old one had no token left (SwapLimiter).
    assert not never.swapped(0.1, 1000.0).try_accept(1000.0)
    assert TokenBucket(0.1, 1.0, 0.0).swapped(0.01, 5.0).try_accept(5.0)
    assert bucket.swapped(0.1, 10.0) is bucket


# --- the taint eviction controller ---------------------------------------------------------------

def test_the_first_matching_toleration_decides_not_the_shortest() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    forever = {"key": "k", "operator": "Exists", "effect": "NoExecute"}
    limited = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    cluster.create(pod("stays", tolerations=[forever, limited]))
    cluster.create(pod("goes", tolerations=[limited, forever]))
    at(cluster, 10, lambda: taint(cluster, "n1", {"key": "k", "effect": "NoExecute"}))
    cluster.run(600)
    assert gone_at(cluster, "stays") is None
    assert gone_at(cluster, "goes") == 40


def test_a_planned_eviction_keeps_its_time_when_a_shorter_toleration_comes_into_play() -> None:
    """processPodOnNode keeps an eviction it already scheduled: the new trigger time is compared
    with the old one's creation time, and the old one always wins."""
    cluster = Cluster()
    cluster.create(node("n1"))
    cluster.create(pod("p", tolerations=[
        {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100},
        {"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]))
    at(cluster, 0, lambda: taint(cluster, "n1", {"key": "a", "effect": "NoExecute"}))
    at(cluster, 50, lambda: taint(cluster, "n1", {"key": "a", "effect": "NoExecute"},
                                  {"key": "b", "effect": "NoExecute"}))
    cluster.run()
    assert gone_at(cluster, "p") == 100
    assert events(cluster, "TaintManagerEviction") == [(100, "Pod/default/p", "Marking for deletion Pod default/p")]


def test_a_pod_already_terminating_is_left_alone() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    cluster.create(pod("p", grace=60, shutdown="60s"))  # both take their whole grace period to stop
    cluster.create(pod("q", grace=60, shutdown="60s", tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]))
    for name in ("p", "q"):
        at(cluster, 5, lambda name=name: cluster.api.delete("Pod", "default", name))
    at(cluster, 10, lambda: taint(cluster, "n1", {"key": "k", "effect": "NoExecute"}))
    cluster.run()
    for name in ("p", "q"):
        h = cluster.recorder.pod("default", name)
        assert h is not None and h.deleted_at == 65 and h.reason == "Deleted"
    assert events(cluster, "TaintManagerEviction") == []  # not even a cancellation when they go


def test_deleting_the_node_leaves_a_planned_eviction_until_pod_gc_removes_the_pod() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    tol = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    cluster.create(pod("p", tolerations=[tol]))
    at(cluster, 5, lambda: taint(cluster, "n1", {"key": "k", "effect": "NoExecute"}))
    at(cluster, 10, lambda: cluster.api.delete("Node", "", "n1"))
    cluster.run()
    h = cluster.recorder.pod("default", "p")
    assert h is not None and h.deleted_at == 60 and h.reason == "NodeLost"
    assert events(cluster, "TaintManagerEviction") == [(60, "Pod/default/p", "Cancelling deletion of Pod default/p")]


# --- the node lifecycle controller ---------------------------------------------------------------

def test_controller_taints_carry_the_time_they_were_added() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    cluster.create(node("n2"))
    at(cluster, 10, lambda: set_ready(cluster, "n1", "False"))
    at(cluster, 30, lambda: cluster.api.patch("Node", "", "n2", {"spec": {"unschedulable": True}}))
    cluster.run(60)
    assert cluster.api.get("Node", "", "n1")["spec"]["taints"] == [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:10Z"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:10Z"}]
    assert cluster.api.get("Node", "", "n2")["spec"]["taints"] == [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:30Z"}]
    assert events(cluster, "NodeNotReady") == [(10, "Node/n1", "Node n1 status is now: NodeNotReady")]


def test_a_node_seen_not_ready_from_the_start_is_tainted_without_a_not_ready_event() -> None:
    cluster = Cluster()
    cluster.create(node("n2"))
    n1 = node("n1")
    n1["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    cluster.create(n1)
    cluster.create(pod("p"))
    cluster.run()
    assert no_execute_at(cluster, "n1")
    assert gone_at(cluster, "p") == 300
    assert events(cluster, "NodeNotReady") == []


def test_a_large_partially_disrupted_zone_taints_at_the_secondary_rate() -> None:
    """60 nodes (over the 50-node large-cluster threshold), 40 NotReady at once: 0.01 nodes/s. The
    old limiter still had its token, so the new one starts full: one node at 10s, the next 100 s
    later."""
    cluster = Cluster()
    names = [f"n{i}" for i in range(60)]
    for name in names:
        cluster.create(node(name, "z"))
    for name in names[:40]:
        at(cluster, 10, lambda name=name: set_ready(cluster, name, "False"))

    def tainted() -> int:
        return sum(no_execute_at(cluster, n) for n in names)

    counts: dict[float, int] = {}
    for t in (10, 109, 110, 209, 210):
        cluster.clock.call_at(t, lambda t=t: counts.__setitem__(t, tainted()), rank=LATE)
    cluster.run(220)
    assert counts == {10: 1, 109: 1, 110: 2, 209: 2, 210: 3}


def test_zones_are_rate_limited_separately() -> None:
    cluster = Cluster()
    for name, zone in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("b2", "b"), ("b3", "b")):
        cluster.create(node(name, zone))
    for name in ("a1", "a2", "b1"):
        at(cluster, 10, lambda name=name: set_ready(cluster, name, "False"))
    seen: dict[str, bool] = {}
    cluster.clock.call_at(10, lambda: seen.update({n: no_execute_at(cluster, n) for n in ("a1", "a2", "b1")}),
                          rank=LATE)
    cluster.run(30)
    assert seen == {"a1": True, "a2": False, "b1": True}
    assert no_execute_at(cluster, "a2")


# --- pod garbage collection ----------------------------------------------------------------------

def pod_gc(cluster: Cluster) -> PodGCController:
    return next(c for c in cluster.controllers if isinstance(c, PodGCController))


def test_terminated_pods_beyond_the_threshold_go_oldest_first_but_evicted_ones_before_all() -> None:
    cluster = Cluster()
    pod_gc(cluster).threshold = 2
    cluster.create(node("n1"))
    for i, t in enumerate((1, 2, 3)):
        done = pod(f"done-{i}")
        done["metadata"]["annotations"] = {"sim.kubesched.io/duration": "5s"}
        at(cluster, t, lambda done=done: cluster.create(done))
    evicted = pod("evicted")
    evicted["status"] = {"phase": "Failed", "reason": "Evicted"}
    at(cluster, 30, lambda: cluster.create(evicted))
    cluster.run()
    # Three finished by 8s: the pass at 20s removes the oldest. The evicted pod makes three again
    # at 30s: the pass at 40s removes it, though it is the newest.
    assert {n: gone_at(cluster, n) for n in ("done-0", "done-1", "done-2", "evicted")} == {
        "done-0": 20, "done-1": None, "done-2": None, "evicted": 40}


def test_terminating_pods_on_an_out_of_service_node_are_force_deleted() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    cluster.create(node("n2"))
    cluster.create(pod("p", grace=120, shutdown="120s",  # it would take its whole grace period to stop
                       tolerations=[{"operator": "Exists", "effect": "NoExecute"}]))
    at(cluster, 5, lambda: set_ready(cluster, "n1", "False"))
    at(cluster, 25, lambda: cluster.api.delete("Pod", "default", "p"))
    at(cluster, 30, lambda: cluster.api.patch("Node", "", "n1", {"spec": {"taints": [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoSchedule"}]}}))
    cluster.run()
    h = cluster.recorder.pod("default", "p")
    assert h is not None and h.deleted_at == 40 and h.obj["status"]["phase"] == "Failed"


def test_unscheduled_terminating_pods_are_force_deleted_at_the_next_pass() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    p = pod("p", node_name=None, schedulerName="nobody")
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    at(cluster, 5, lambda: cluster.create(p))
    cluster.run()
    assert gone_at(cluster, "p") == 20
