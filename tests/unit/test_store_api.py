"""The store and the in-process API: resourceVersion, watch order, merge patch, deletion, binding."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import get_condition
from kubesched.apiserver.errors import APIError, ConflictError, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.cluster.cluster import Cluster
from kubesched.runtime.clock import VirtualClock
from kubesched.store.base import ADDED, DELETED, MODIFIED, WatchEvent
from kubesched.store.memory import MemoryStore


def node(name: str = "n1", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, **extra},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str = "a", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.fixture
def api() -> APIServer:
    clock = VirtualClock()
    return APIServer(MemoryStore(), clock.now)


# --- resourceVersion and watch -------------------------------------------------------------------

def test_every_write_gets_a_higher_resource_version(api: APIServer) -> None:
    store = api.store
    base = store.resource_version
    a = api.create(node("n1"))
    b = api.create(node("n2"))
    assert int(a["metadata"]["resourceVersion"]) == base + 1
    assert int(b["metadata"]["resourceVersion"]) == base + 2
    patched = api.patch("Node", "", "n1", {"metadata": {"labels": {"x": "y"}}})
    assert int(patched["metadata"]["resourceVersion"]) == base + 3
    assert store.resource_version == base + 3
    api.delete("Node", "", "n2")
    assert store.resource_version == base + 4  # a delete is a revision too, as in etcd
    assert api.get("Node", "", "n1")["metadata"]["resourceVersion"] == str(base + 3)


def test_update_with_a_stale_resource_version_is_a_conflict(api: APIServer) -> None:
    created = api.create(node("n1"))
    stale = {**created, "metadata": dict(created["metadata"])}
    api.patch("Node", "", "n1", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ConflictError):
        api.update(stale)


def test_watch_sees_added_modified_deleted_in_write_order(api: APIServer) -> None:
    events: list[WatchEvent] = []
    api.store.watch(events.append, {"Node"})
    other: list[WatchEvent] = []
    api.store.watch(other.append, {"Pod"})
    api.create(node("n1"))
    api.patch("Node", "", "n1", {"spec": {"unschedulable": True}})
    api.delete("Node", "", "n1")
    assert [e.type for e in events] == [ADDED, MODIFIED, DELETED]
    assert events[0].old is None
    assert events[1].old is not None and not events[1].old.get("spec", {}).get("unschedulable")
    assert events[1].obj["spec"]["unschedulable"] is True
    assert events[2].obj["metadata"]["name"] == "n1"
    rvs = [int(e.obj["metadata"]["resourceVersion"]) for e in events[:2]]
    assert rvs == sorted(rvs)
    assert other == []  # watchers only see the kinds they asked for


def test_watchers_are_told_in_registration_order_and_all_kinds_when_none_given(api: APIServer) -> None:
    seen: list[str] = []
    api.store.watch(lambda e: seen.append(f"first:{e.kind}"), {"Node"})
    api.store.watch(lambda e: seen.append(f"all:{e.kind}"))
    api.create(node("n1"))
    assert seen == ["first:Node", "all:Node"]


def test_a_watcher_held_to_a_kind_hears_only_while_the_store_holds_one(api: APIServer) -> None:
    """A controller of pods owned by some kind is not called while the cluster has none of it, and
    keeps its place in the order once it has."""
    heard: list[tuple[str, str, str]] = []
    api.store.watch(lambda ev: heard.append(("first", ev.type, ev.obj["metadata"]["name"])), {"Pod"})
    api.store.watch(lambda ev: heard.append(("owner", ev.type, ev.obj["metadata"]["name"])), {"Pod"},
                    while_held="ReplicaSet")
    api.store.watch(lambda ev: heard.append(("last", ev.type, ev.obj["metadata"]["name"])), {"Pod"})
    api.create(pod("a"))
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "x"}},
                   "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod()["spec"]}}}
    api.create(rs)
    api.create(pod("b"))
    api.delete("ReplicaSet", "default", "rs")
    api.create(pod("c"))
    assert heard == [("first", ADDED, "a"), ("last", ADDED, "a"),
                     ("first", ADDED, "b"), ("owner", ADDED, "b"), ("last", ADDED, "b"),
                     ("first", ADDED, "c"), ("last", ADDED, "c")]


def test_stored_objects_are_copies_of_the_input(api: APIServer) -> None:
    obj = node("n1")
    api.create(obj)
    obj["metadata"]["labels"] = {"changed": "after"}
    assert "labels" not in api.get("Node", "", "n1")["metadata"]


def test_create_twice_is_already_exists(api: APIServer) -> None:
    api.create(node("n1"))
    with pytest.raises(APIError) as e:
        api.create(node("n1"))
    assert e.value.code == 409
    assert e.value.reason == "AlreadyExists"


# --- merge patch -----------------------------------------------------------------------------------

def test_merge_patch_merges_maps_replaces_lists_and_null_deletes(api: APIServer) -> None:
    api.create(node("n1", labels={"a": "1", "b": "2"}))
    api.patch("Node", "", "n1", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    out = api.patch("Node", "", "n1", {
        "metadata": {"labels": {"a": None, "c": "3"}},
        "spec": {"taints": [{"key": "other", "effect": "NoExecute"}], "unschedulable": True},
    })
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["spec"]["taints"] == [{"key": "other", "effect": "NoExecute"}]  # lists are replaced whole
    assert out["spec"]["unschedulable"] is True
    assert out["status"]["allocatable"]["cpu"] == "4"  # untouched fields stay
    out = api.patch("Node", "", "n1", {"spec": {"unschedulable": None, "taints": None}})
    assert "unschedulable" not in out["spec"]
    assert "taints" not in out["spec"]
    assert out["metadata"]["name"] == "n1"
    assert out["kind"] == "Node"


def test_patch_of_a_missing_object_is_not_found(api: APIServer) -> None:
    with pytest.raises(NotFoundError):
        api.patch("Node", "", "nope", {"spec": {"unschedulable": True}})


# --- binding -----------------------------------------------------------------------------------

def test_bind_sets_node_name_and_pod_scheduled_and_clears_the_nomination(api: APIServer) -> None:
    api.create(node("n1"))
    created = api.create({**pod("a"), "status": {"nominatedNodeName": "n9"}})
    assert created["status"]["nominatedNodeName"] == "n9"
    bound = api.bind("default", "a", "n1")
    assert bound["spec"]["nodeName"] == "n1"
    assert "nominatedNodeName" not in bound["status"] or bound["status"]["nominatedNodeName"] in (None, "")
    cond = get_condition(bound, "PodScheduled")
    assert cond is not None and cond["status"] == "True"
    assert int(bound["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_binding_twice_is_a_conflict(api: APIServer) -> None:
    api.create(node("n1"))
    api.create(node("n2"))
    api.create(pod("a"))
    api.bind("default", "a", "n1")
    with pytest.raises(ConflictError) as e:
        api.bind("default", "a", "n2")
    assert e.value.code == 409
    assert api.get("Pod", "default", "a")["spec"]["nodeName"] == "n1"


def test_binding_a_pod_being_deleted_is_a_conflict(api: APIServer) -> None:
    # (Normally only a pod held by a finalizer is unbound and terminating; stored directly here.)
    api.create({**pod("a"), "metadata": {"name": "a", "namespace": "default",
                                          "deletionTimestamp": "2026-01-01T00:00:30Z"}})
    with pytest.raises(ConflictError):
        api.bind("default", "a", "n1")


def test_binding_a_gated_pod_is_refused(api: APIServer) -> None:
    api.create(pod("a", schedulingGates=[{"name": "wait"}]))
    with pytest.raises(APIError):
        api.bind("default", "a", "n1")


# --- deletion ----------------------------------------------------------------------------------

def test_deleting_an_unbound_pod_removes_it_at_once() -> None:
    cluster = Cluster()
    created = cluster.create(pod("a", schedulerName="nobody"))  # never scheduled
    assert created is not None
    cluster.run(until=5)
    assert cluster.api.delete("Pod", "default", "a") is None
    assert cluster.store.get("Pod", "default", "a") is None
    history = cluster.recorder.pods[created["metadata"]["uid"]]
    assert history.deleted and history.deleted_at == 5 and history.reason == "Deleted"


def test_graceful_delete_of_a_bound_pod_waits_for_the_kubelet() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    slow = pod("a", nodeName="n1", terminationGracePeriodSeconds=20)
    slow["metadata"]["annotations"] = {"sim.kubesched.io/shutdown": "20s"}  # it takes its whole grace period
    created = cluster.create(slow)
    assert created is not None
    cluster.run(until=10)
    assert cluster.store.get("Pod", "default", "a")["status"]["phase"] == "Running"
    terminating = cluster.api.delete("Pod", "default", "a")
    assert terminating is not None
    meta = terminating["metadata"]
    assert meta["deletionTimestamp"] == "2026-01-01T00:00:30Z"  # now (10 s) + 20 s grace
    assert meta["deletionGracePeriodSeconds"] == 20
    cluster.run(until=29.9)
    still = cluster.store.get("Pod", "default", "a")
    assert still is not None and still["metadata"]["deletionTimestamp"]
    # The scheduler keeps counting a terminating pod against its node.
    ni = cluster.scheduler.node_info("n1")
    assert ni is not None and len(ni.pods) == 1
    cluster.run(until=31)
    assert cluster.store.get("Pod", "default", "a") is None
    history = cluster.recorder.pods[created["metadata"]["uid"]]
    assert history.deleted and history.deleted_at == 30
    after = cluster.scheduler.node_info("n1")
    assert after is not None and len(after.pods) == 0


def test_second_delete_may_only_shorten_the_grace_period() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    cluster.create(pod("a", nodeName="n1"))
    cluster.run(until=1)
    first = cluster.api.delete("Pod", "default", "a")
    assert first is not None and first["metadata"]["deletionGracePeriodSeconds"] == 30
    again = cluster.api.delete("Pod", "default", "a", grace_period=60)
    assert again is not None and again["metadata"]["deletionGracePeriodSeconds"] == 30
    shorter = cluster.api.delete("Pod", "default", "a", grace_period=5)
    assert shorter is not None and shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    assert cluster.api.delete("Pod", "default", "a", grace_period=0) is None
    assert cluster.store.get("Pod", "default", "a") is None


def test_scheduler_binds_a_pending_pod_through_the_api() -> None:
    cluster = Cluster()
    cluster.create(node("n1"))
    seen: list[tuple[str, str | None]] = []
    cluster.store.watch(lambda e: seen.append((e.type, e.obj["spec"].get("nodeName"))), {"Pod"})
    cluster.create(pod("a"))
    cluster.run()
    got = cluster.store.get("Pod", "default", "a")
    assert got["spec"]["nodeName"] == "n1"
    assert get_condition(got, "PodScheduled")["status"] == "True"
    assert got["status"]["phase"] == "Running"
    assert seen[0] == (ADDED, None)
    assert (MODIFIED, "n1") in seen
    reasons = [e.reason for e in cluster.recorder.events]
    assert reasons == ["Scheduled"]
    assert cluster.recorder.events[0].message == "Successfully assigned default/a to n1"
