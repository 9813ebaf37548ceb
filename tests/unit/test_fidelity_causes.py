"""Each cause of a past difference from the real kube-scheduler, pinned on its own (issue 12).

The fidelity corpus (tests/test_fidelity.py) shows that the decisions agree; these tests say
which upstream behaviour each mechanism reproduces, so a regression names its cause.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.gosort import sort_slice
from kubesched.scheduler.framework import CycleState
from kubesched.scheduler.types import PodInfo
from kubesched.scheduler.vectorised.filters import find_feasible


def node(name: str, cpu: str = "4", memory: str = "8Gi", zone: str = "a", capacity: dict | None = None,
         images: list | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}
    if capacity is not None:
        status["capacity"] = capacity
    if images:
        status["images"] = images
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}, "status": status}


def pod(name: str, node_name: str | None = None, cpu: str = "100m", memory: str | None = None,
        image: str = "app", created: str | None = None, **spec: Any) -> dict[str, Any]:
    requests = {"cpu": cpu} | ({"memory": memory} if memory else {})
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    body: dict[str, Any] = {"containers": [{"name": "c", "image": image, "resources": {"requests": requests}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def restored(*objects: dict[str, Any]) -> Cluster:
    """A cluster started from a snapshot, as `simulate` starts one."""
    c = Cluster()
    for obj in objects:
        c.restore(obj)
    return c


def get(c: Cluster, name: str) -> dict[str, Any]:
    return c.store.get("Pod", "default", name)


# ---- Go's sort.Slice ------------------------------------------------------------------------------

@given(st.lists(st.integers(-5, 5), max_size=200))
def test_go_sort_sorts_by_a_strict_weak_order(values: list[int]) -> None:
    items = list(enumerate(values))
    sort_slice(items, lambda a, b: a[1] < b[1])
    assert [v for _, v in items] == sorted(values)


def test_go_sort_on_short_slices_is_its_insertion_sort() -> None:
    """Up to 12 elements Go sorts by insertion: a comparator saying 'less' for every pair (two
    pods neither of which has started: each reads the clock later than the other) reverses them."""
    items = list(range(12))
    sort_slice(items, lambda a, b: True)
    assert items == list(range(11, -1, -1))


def test_go_sort_on_long_slices_is_not_stable() -> None:
    """Past 12 elements pdqsort runs: equal elements do not keep their order, and the order it
    leaves is always the same for the same input."""
    items = [(i % 3, i) for i in range(40)]
    first = list(items)
    sort_slice(first, lambda a, b: a[0] < b[0])
    again = list(items)
    sort_slice(again, lambda a, b: a[0] < b[0])
    assert first == again
    assert [k for k, _ in first] == sorted(k for k, _ in items)
    assert first != sorted(items, key=lambda x: x[0])  # a stable sort would keep i ascending per key


# ---- ImageLocality: one size per image, counts as the snapshot saw them --------------------------

def test_image_size_is_the_first_reporting_nodes() -> None:
    """cacheImpl.imageStates keeps the size the first node reported; a second node reporting a
    smaller size for the same image is scored with the first size."""
    c = restored(node("n1", images=[{"names": ["registry.example/app:1"], "sizeBytes": 900 * 1024 ** 2}]),
                 node("n2", images=[{"names": ["registry.example/app:1"], "sizeBytes": 30 * 1024 ** 2}]),
                 node("n3"))
    c.run()
    sched = c.scheduler
    nodes, _ = sched.cache.ordered()
    plugin = next(p for p in sched.profiles["default-scheduler"].at("score") if p.name == "ImageLocality")
    info = PodInfo.of({"metadata": {"name": "x"}, "spec": {"containers": [{"image": "registry.example/app:1"}]}})
    scores = {ni.name: plugin.score(CycleState(), info, ni) for ni in nodes}
    # 900 MiB spread over 2 of 3 nodes = 600 MiB -> (600 - 23) * 100 // (1000 - 23) = 59, on both nodes.
    assert scores == {"n1": 59, "n2": 59, "n3": 0}


def test_an_image_count_is_refreshed_only_for_changed_nodes() -> None:
    """UpdateSnapshot clones only nodes changed since the last snapshot: a node added later with
    the image does not change what an untouched node's summary says."""
    image = [{"names": ["app:1"], "sizeBytes": 500 * 1024 ** 2}]
    c = restored(node("n1", images=image), node("n2"))
    c.run()
    cache = c.scheduler.cache
    cache.ordered()
    assert cache.nodes["n1"].image_states["app:1"] == (500 * 1024 ** 2, 1)
    c.create(node("n3", images=image))
    c.run()
    cache.ordered()
    assert cache.nodes["n3"].image_states["app:1"] == (500 * 1024 ** 2, 2)
    assert cache.nodes["n1"].image_states["app:1"] == (500 * 1024 ** 2, 1)  # not changed since


# ---- findNodesThatPassFilters: the walk stops one feasible node late -----------------------------

def test_the_search_goes_on_past_enough_feasible_nodes_until_one_more() -> None:
    """findNodesThatPassFilters with one worker: once 100 feasible nodes are found (enough for
    120 nodes), the nodes after it are still checked; the next feasible one cancels the search
    without being kept, and the failing ones before it are reported and move the start index."""
    cpus = ["4"] * 100 + ["100m"] * 10 + ["4"] * 10
    c = restored(*(node(f"n{i:03d}", cpu=cpu) for i, cpu in enumerate(cpus)))
    c.run()
    sched = c.scheduler
    profile = sched.profiles["default-scheduler"]
    all_nodes, slots = sched.cache.ordered()
    info = PodInfo.of(pod("p", cpu="1"))
    state = CycleState()
    profile.run_pre_filter(state, info, all_nodes)
    out = find_feasible(profile, state, info, all_nodes, slots, sched.cache.table, 0, 100)
    assert [n.name for n in out.feasible] == [f"n{i:03d}" for i in range(100)]
    assert sorted(out.statuses) == [f"n{i:03d}" for i in range(100, 110)]
    assert out.processed == 110

    c.create(pod("first", cpu="1"))
    c.run()
    assert sched.next_start == 110  # feasible + failing nodes processed, not the cancelling one


# ---- snapshot semantics -----------------------------------------------------------------------------

def test_a_snapshot_pod_started_when_it_was_created_and_is_not_admitted_again() -> None:
    c = restored(node("n1", cpu="1"),
                 pod("old", "n1", cpu="800m", created="2024-01-01T00:00:01Z"),
                 pod("older", "n1", cpu="800m", created="2024-01-01T00:00:00Z"))
    c.run()
    for name, started in (("old", "2024-01-01T00:00:01Z"), ("older", "2024-01-01T00:00:00Z")):
        p = get(c, name)
        assert p["status"]["phase"] == "Running" and p["status"]["startTime"] == started
    c.recorder.check_snapshot()
    assert any("Node/n1" in w and "cpu 1600m > 1" in w for w in c.recorder.warnings)


def test_a_snapshot_pod_bound_but_pending_is_admitted_by_the_kubelet() -> None:
    c = restored(node("n1", cpu="1"), pod("a", "n1", cpu="800m"),
                 {**pod("b", "n1", cpu="800m"), "status": {"phase": "Pending"}})
    c.run()
    assert get(c, "b")["status"]["phase"] == "Failed" and get(c, "b")["status"]["reason"] == "OutOfcpu"


def test_admission_refusing_a_running_pod_is_a_warning_not_a_drop() -> None:
    c = restored(node("n1"), pod("a", "n1", priorityClassName="gone"),
                 {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": "system-node-critical"}, "value": 2000001000})
    c.run()
    assert get(c, "a")["status"]["phase"] == "Running" and get(c, "a")["spec"]["priority"] == 0
    assert c.recorder.rejected == []
    assert c.recorder.warnings == ["Pod/default/a: kept running as exported, though admission would refuse it today: "
                          "no PriorityClass with name gone was found"]


def test_a_pending_pod_is_still_admitted_strictly() -> None:
    c = restored(node("n1"), pod("a", priorityClassName="gone"))
    assert [r.message for r in c.recorder.rejected] == ["no PriorityClass with name gone was found"]


# ---- the kubelet leaves a healthy snapshot alone ---------------------------------------------------

@pytest.mark.parametrize("capacity", [None, {"cpu": "4", "memory": "8Gi", "pods": "110"}])
def test_a_node_full_to_its_allocatable_is_not_under_pressure(capacity: dict | None) -> None:
    """KWOK and simulator nodes report capacity = allocatable: such a node reserved nothing, so
    it is taken to have its hard eviction threshold on top and pods using all of allocatable
    cause no MemoryPressure, no eviction, no OOM kill."""
    c = restored(node("n1", capacity=capacity), pod("a", "n1", memory="4Gi"), pod("b", "n1", memory="4Gi"))
    c.run(until=120)
    assert [get(c, n)["status"]["phase"] for n in ("a", "b")] == ["Running", "Running"]
    assert c.recorder.pressure_evictions == {} and c.recorder.disruptions == []


# ---- preemption victims go before the next cycle ----------------------------------------------------

def test_victims_stop_at_once_unless_their_shutdown_takes_longer() -> None:
    c = restored({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 100},
                 node("n1", cpu="2"), pod("quick", "n1", cpu="1"),
                 {**pod("slow", "n1", cpu="1"), "metadata": {"name": "slow",
                                                            "annotations": {"sim.kubesched.io/shutdown": "20s"}}})
    c.create(pod("big", cpu="2", priorityClassName="high"))
    c.run(until=1)
    assert get(c, "quick") is None  # deleted at once, before any further scheduling cycle
    assert get(c, "slow")["metadata"].get("deletionTimestamp")
    c.run()
    assert get(c, "big")["spec"]["nodeName"] == "n1" and c.now() == 20


def test_a_given_up_nomination_requeues_pods_it_held_back() -> None:
    """hasNominatedNodeNameChanged: when the scheduler clears a pod's nomination (its attempt
    found no candidate), the space it held frees up for lower- or equal-priority pods rejected for
    lack of room, which are tried again at once."""
    c = restored({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 100},
                 node("n1", cpu="1"), pod("r", "n1", cpu="1"))
    c.create(pod("waiting", cpu="1"))
    c.run(until=1)
    waiting = c.scheduler.queue.pods[get(c, "waiting")["metadata"]["uid"]]
    assert (waiting.where, waiting.attempts) == ("unsched", 1)
    # Nominated to n1, but no node can take it: its attempt clears the nomination.
    c.create({**pod("held", cpu="1", priorityClassName="high", nodeSelector={"pool": "none"}),
              "status": {"nominatedNodeName": "n1"}})
    c.run(until=2)
    assert "nominatedNodeName" not in get(c, "held")["status"]
    assert waiting.attempts == 2


def test_binding_ends_before_the_next_cycle_and_the_budget_is_current() -> None:
    """The real scheduler's next cycle sees this cycle's binding, and a budget's status computed
    from pods bound so far (the fidelity recordings were made so)."""
    c = restored(node("n1", cpu="3"),
                 {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    for i in range(2):
        c.create({**pod(f"w{i}", cpu="1"), "metadata": {"name": f"w{i}", "labels": {"app": "web"}}})
    c.run()
    pdb = c.store.get("PodDisruptionBudget", "default", "web")
    assert pdb["status"]["currentHealthy"] == 2 and pdb["status"]["disruptionsAllowed"] == 1


def test_random_pod_orders_keep_go_swap_remove_order_on_nodes() -> None:
    """NodeInfo.RemovePod moves the node's last pod into the hole: preemption considers a node's
    pods in that order."""
    rng = random.Random(7)
    c = restored(node("n1", cpu="100"))
    names = [f"p{i}" for i in range(10)]
    for n in names:
        c.restore(pod(n, "n1"))
    c.run()
    expected = list(names)
    for victim in rng.sample(names, 4):
        i = expected.index(victim)
        expected[i] = expected[-1]
        expected.pop()
        c.api.delete("Pod", "default", victim, grace_period=0)
        c.run()
        assert [p.name for p in c.scheduler.cache.nodes["n1"].pods.values()] == expected
