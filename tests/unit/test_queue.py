"""The scheduling queue's v1.35 timing and ordering (pkg/scheduler/backend/queue).

Backoff is 1 s doubling to 10 s by the pod's unschedulable count (or consecutive error count),
its expiry rounded down to a whole second and flushed on whole-second ticks; PrioritySort orders
by priority then queue timestamp; a rejected pod moves only on an event its rejecting plugin
registered; leftovers are flushed after 5 minutes on 30 s ticks; Pop takes the head of backoffQ
when activeQ is empty (SchedulerPopFromBackoffQ).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.cluster.cluster import Cluster
from kubesched.scheduler.framework import ActionType
from kubesched.scheduler.queue import ACTIVE, BACKOFF, ERROR_BACKOFF, UNSCHEDULABLE, Event, SchedulingQueue
from kubesched.scheduler.types import PodInfo

FIT, AFFINITY = "NodeResourcesFit", "NodeAffinity"


class Now:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def make_queue(now: Now) -> SchedulingQueue:
    """A queue wired to the default profile's plugins, as the Scheduler wires its own."""
    profile = Cluster().scheduler.profiles["default-scheduler"]
    plugins = {pl.name: pl for pls in profile.plugins.values() for pl in pls}
    return SchedulingQueue(profile.at("queueSort")[0].sort_key(), now, profile.at("preEnqueue"),
                           list(plugins.values()), 1.0, 10.0)


def pod(name: str, priority: int = 0, node_selector: dict[str, str] | None = None,
        node_name: str = "") -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                            "priority": priority, "schedulerName": "default-scheduler"}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if node_name:
        spec["nodeName"] = node_name
    return PodInfo.of({"apiVersion": "v1", "kind": "Pod", "spec": spec, "status": {"phase": "Pending"},
                       "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}})


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


@pytest.fixture
def now() -> Now:
    return Now()


@pytest.fixture
def queue(now: Now) -> SchedulingQueue:
    return make_queue(now)


def where(queue: SchedulingQueue, name: str) -> str:
    return queue.pods[f"uid-{name}"].where


def fail(queue: SchedulingQueue, name: str, rejectors: set[str]) -> None:
    """Pop `name` (it must be next) and report a failed attempt."""
    q = queue.pop()
    assert q is not None and q.pod.name == name
    queue.add_unschedulable(q, rejectors)


def pop_names(queue: SchedulingQueue) -> list[str]:
    out = []
    while (q := queue.pop()) is not None:
        out.append(q.pod.name)
    return out


NODE_ADD = Event("Node", ActionType.Add, None, node("new"))


# --- backoff ---------------------------------------------------------------------------------------

def test_backoff_doubles_from_1s_to_the_10s_cap_by_scheduling_attempts(queue: SchedulingQueue, now: Now) -> None:
    now.t = 100.0
    queue.add(pod("a"))
    expiries = []
    for _ in range(6):
        fail(queue, "a", {FIT})
        q = queue.pods["uid-a"]
        expiries.append(queue.backoff_expiry(q) - 100)
        queue.move_all(NODE_ADD)  # back to a queue so that it can be popped again
        assert where(queue, "a") == BACKOFF
    assert expiries == [1, 2, 4, 8, 10, 10]
    assert queue.pods["uid-a"].attempts == 6  # calculateBackoffDuration counts attempts


def test_errors_back_off_by_attempts_in_the_error_queue(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a"))
    expiries = []
    for i in range(5):
        now.t = 50.0 + 20 * i
        queue.flush()  # the previous error backoff (10 s at most) is over
        q = queue.pop()
        assert q is not None
        queue.add_unschedulable(q, set())
        assert where(queue, "a") == ERROR_BACKOFF
        expiries.append(queue.backoff_expiry(q) - now.t)
    assert expiries == [1, 2, 4, 8, 10]
    assert queue.pods["uid-a"].attempts == 5


def test_backoff_expiry_is_floored_and_ends_on_the_next_whole_second_tick(queue: SchedulingQueue,
                                                                          now: Now) -> None:
    now.t = 10.7
    queue.add(pod("a"))
    fail(queue, "a", {FIT})
    q = queue.pods["uid-a"]
    assert queue.backoff_expiry(q) == 11  # floor(10.7 + 1)
    queue.move_all(NODE_ADD)
    assert where(queue, "a") == BACKOFF
    assert queue.next_flushes() == (12, None)
    now.t = 11.99
    assert queue.backing_off(q)  # expiry 11 >= floor(11.99)
    queue.flush()
    assert where(queue, "a") == BACKOFF
    now.t = 12.0
    assert not queue.backing_off(q)
    queue.flush()
    assert where(queue, "a") == ACTIVE


def test_a_pod_moved_after_its_backoff_goes_straight_to_active(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a"))
    fail(queue, "a", {FIT})
    now.t = 5.0
    queue.move_all(NODE_ADD)
    assert where(queue, "a") == ACTIVE


# --- ordering -----------------------------------------------------------------------------------

def test_priority_first_then_earlier_timestamp(queue: SchedulingQueue, now: Now) -> None:
    for t, name, prio in ((0, "low", 0), (1, "high-1", 100), (2, "high-2", 100), (3, "mid", 50)):
        now.t = t
        queue.add(pod(name, prio))
    assert pop_names(queue) == ["high-1", "high-2", "mid", "low"]


def test_a_failed_attempt_resets_the_queue_timestamp(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a", 100))
    now.t = 4.0
    queue.add(pod("b", 100))
    now.t = 5.0
    fail(queue, "a", {FIT})  # a's timestamp becomes 5, later than b's 4
    now.t = 20.0
    queue.move_all(NODE_ADD)
    assert where(queue, "a") == ACTIVE
    assert pop_names(queue) == ["b", "a"]


# --- cluster events -----------------------------------------------------------------------------

def test_only_events_the_rejecting_plugin_registered_move_a_pod(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("fit"))
    queue.add(pod("aff", node_selector={"disk": "ssd"}))
    fail(queue, "fit", {FIT})
    fail(queue, "aff", {AFFINITY})
    now.t = 30.0  # backoff long over: a moved pod goes to activeQ
    assert where(queue, "fit") == where(queue, "aff") == UNSCHEDULABLE

    relabel = Event("Node", ActionType.UpdateNodeLabel, node("n1"), node("n1", {"disk": "ssd"}))
    queue.move_all(relabel)
    assert where(queue, "fit") == UNSCHEDULABLE  # resource fit does not care about labels
    assert where(queue, "aff") == ACTIVE

    assert pop_names(queue) == ["aff"]
    gone = Event("AssignedPod", ActionType.Delete, pod("victim", node_name="n1"), None)
    queue.move_all(gone)
    assert where(queue, "fit") == ACTIVE  # a pod leaving a node frees resources


def test_a_pod_deleted_event_does_not_move_an_affinity_rejected_pod(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("aff", node_selector={"disk": "ssd"}))
    fail(queue, "aff", {AFFINITY})
    now.t = 30.0
    queue.move_all(Event("AssignedPod", ActionType.Delete, pod("victim", node_name="n1"), None))
    assert where(queue, "aff") == UNSCHEDULABLE
    queue.move_all(Event("Node", ActionType.Add, None, node("n2", {"disk": "ssd"})))
    assert where(queue, "aff") == ACTIVE


def test_an_event_moves_the_pods_it_concerns_in_the_order_they_became_unschedulable(
        queue: SchedulingQueue, now: Now) -> None:
    """Pods are looked up by the plugins that rejected them, yet moved in the pool's order, which
    decides the order of equal pods in activeQ."""
    for name in ("a", "b", "c", "d"):
        queue.add(pod(name, node_selector={"disk": "ssd"} if name in "bd" else None))
    for name in ("a", "b", "c", "d"):
        fail(queue, name, {AFFINITY} if name in "bd" else {FIT})
    now.t = 30.0
    queue.move_all(Event("AssignedPod", ActionType.Delete, pod("victim", node_name="n1"), None))
    assert [where(queue, n) for n in "abcd"] == [ACTIVE, UNSCHEDULABLE, ACTIVE, UNSCHEDULABLE]
    for name in pop_names(queue):
        fail_again = queue.pods[f"uid-{name}"]
        queue.add_unschedulable(fail_again, {FIT})
    for q in queue.pods.values():
        q.timestamp = 30.0  # equal pods: activeQ keeps the order they were moved in
    now.t = 100.0  # backoffs over: moved pods go to activeQ
    # The pool is now b, d, a, c (a and c came back last); each group alone would give b d or a c.
    queue.move_all(Event("Node", ActionType.Add, None, node("n2", {"disk": "ssd"})))
    assert pop_names(queue) == ["b", "d", "a", "c"]
    for name in ("b", "a", "d", "c"):
        queue.add_unschedulable(queue.pods[f"uid-{name}"], {AFFINITY} if name in "bd" else {FIT})
    for q in queue.pods.values():
        q.timestamp = 100.0
    now.t = 200.0
    queue.move_all(Event("Node", ActionType.Add, None, node("n3", {"disk": "ssd"})))
    assert pop_names(queue) == ["b", "a", "d", "c"]  # interleaved groups, pool order kept


def test_an_event_during_the_attempt_sends_the_pod_back_at_once(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a"))
    q = queue.pop()
    assert q is not None
    queue.move_all(Event("AssignedPod", ActionType.Delete, pod("victim", node_name="n1"), None))  # while in flight
    queue.add_unschedulable(q, {FIT})
    assert where(queue, "a") == BACKOFF  # count 1: still backing off at t=0


def test_node_affinity_hint_skips_an_update_that_still_does_not_match(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("aff", node_selector={"disk": "ssd"}))
    fail(queue, "aff", {AFFINITY})
    now.t = 30.0
    queue.move_all(Event("Node", ActionType.UpdateNodeLabel, node("n1"), node("n1", {"disk": "hdd"})))
    assert where(queue, "aff") == UNSCHEDULABLE


# --- leftover flush ------------------------------------------------------------------------------

def test_leftovers_are_flushed_after_five_minutes_on_30s_ticks(queue: SchedulingQueue, now: Now) -> None:
    now.t = 10.0
    queue.add(pod("a", node_selector={"disk": "ssd"}))
    fail(queue, "a", {AFFINITY})
    assert where(queue, "a") == UNSCHEDULABLE
    assert queue.next_flushes() == (None, 330)  # the first 30 s tick strictly more than 300 s later
    now.t = 300.0
    queue.flush()
    assert where(queue, "a") == UNSCHEDULABLE
    now.t = 330.0
    queue.flush()
    assert where(queue, "a") == ACTIVE


def test_exactly_five_minutes_is_not_yet_a_leftover(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a", node_selector={"disk": "ssd"}))
    fail(queue, "a", {AFFINITY})  # timestamp 0
    now.t = 300.0
    queue.flush()
    assert where(queue, "a") == UNSCHEDULABLE  # now - timestamp > 5 min is strict
    assert queue.next_flushes() == (None, 330)
    now.t = 330.0
    queue.flush()
    assert where(queue, "a") == ACTIVE


# --- popping -----------------------------------------------------------------------------------

def test_pop_takes_the_backoff_head_when_active_is_empty(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a"))
    fail(queue, "a", {FIT})
    queue.move_all(NODE_ADD)
    assert where(queue, "a") == BACKOFF
    now.t = 0.1
    queue.add(pod("b"))
    assert pop_names(queue) == ["b", "a"]  # activeQ first; then backoffQ early, still backing off


def test_backoff_queue_orders_by_expiry_then_priority(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("twice", 0))
    fail(queue, "twice", {FIT})
    queue.move_all(NODE_ADD)
    fail(queue, "twice", {FIT})  # count 2: expiry 2
    for name, prio in (("low", 1), ("high", 10)):
        queue.add(pod(name, prio))
        fail(queue, name, {FIT})  # count 1: expiry 1
    queue.move_all(NODE_ADD)
    assert [where(queue, n) for n in ("twice", "low", "high")] == [BACKOFF] * 3
    assert pop_names(queue) == ["high", "low", "twice"]


def test_the_error_backoff_queue_is_never_popped_early(queue: SchedulingQueue, now: Now) -> None:
    queue.add(pod("a"))
    q = queue.pop()
    assert q is not None
    queue.add_unschedulable(q, set())
    assert where(queue, "a") == ERROR_BACKOFF
    assert queue.pop() is None
    # Retrying an error with nothing changed since is housekeeping; a cluster event makes it matter.
    assert queue.next_flushes() == (None, 2)
    queue.move_all(NODE_ADD)
    assert queue.next_flushes() == (2, None)
    now.t = 2.0
    queue.flush()
    assert pop_names(queue) == ["a"]
