"""The ReplicaSet controller on a real cluster: status, events, failures and ownership."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import controller_of, get_condition
from kubesched.cluster.cluster import Cluster


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def replica_set(replicas: int = 2, cpu: str = "1", shutdown: str | None = None, **spec: Any) -> dict[str, Any]:
    """`shutdown`: how long its pods take to stop once told to (at once without it)."""
    pod_spec = {"containers": [{"name": "c", "image": "web", "resources": {"requests": {"cpu": cpu}}}],
                **spec.pop("pod", {})}
    pod_meta: dict[str, Any] = {"labels": {"app": "web", "tier": "front"}}
    if shutdown is not None:
        pod_meta["annotations"] = {"sim.kubesched.io/shutdown": shutdown}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": pod_meta, "spec": pod_spec},
                     **spec}}


def cluster(*objs: dict[str, Any]) -> Cluster:
    c = Cluster()
    for obj in objs:
        assert c.create(obj) is not None
    return c


def rs_status(c: Cluster) -> dict[str, Any]:
    return c.api.get("ReplicaSet", "default", "web").get("status") or {}


def pods(c: Cluster) -> list[dict[str, Any]]:
    return c.api.list("Pod", "default")


def events(c: Cluster, reason: str) -> list[str]:
    return [e.message for e in c.recorder.events if e.reason == reason and e.object == "ReplicaSet/default/web"]


def test_status_counts_active_ready_and_terminating_pods() -> None:
    c = cluster(node("n1"), replica_set(3, shutdown="30s"))  # its pods take their whole grace period to stop
    c.run(until=1)
    assert rs_status(c) == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                            "terminatingReplicas": 0, "observedGeneration": 1}
    c.api.delete("Pod", "default", pods(c)[0]["metadata"]["name"])
    c.run(until=2)
    assert rs_status(c)["replicas"] == 3 and rs_status(c)["terminatingReplicas"] == 1
    assert len(pods(c)) == 4
    c.run(until=40)
    assert rs_status(c)["terminatingReplicas"] == 0 and len(pods(c)) == 3


def test_pods_come_from_the_template_with_events_naming_them() -> None:
    c = cluster(node("n1"), replica_set(2))
    c.run(until=1)
    created = events(c, "SuccessfulCreate")
    names = sorted(p["metadata"]["name"] for p in pods(c))
    assert sorted(m.removeprefix("Created pod: ") for m in created) == names
    for p in pods(c):
        assert p["metadata"]["name"].startswith("web-") and len(p["metadata"]["name"]) == len("web-") + 5
        assert p["metadata"]["labels"] == {"app": "web", "tier": "front"}
        ref = controller_of(p)
        assert ref is not None and ref["kind"] == "ReplicaSet" and ref["name"] == "web" and ref["blockOwnerDeletion"]
    c.api.patch("ReplicaSet", "default", "web", {"spec": {"replicas": 1}})
    c.run(until=2)
    assert len(events(c, "SuccessfulDelete")) == 1
    assert events(c, "SuccessfulDelete")[0].startswith("Deleted pod: web-")
    assert rs_status(c)["observedGeneration"] == 2


def test_available_replicas_wait_for_min_ready_seconds() -> None:
    c = cluster(node("n1"), replica_set(2, minReadySeconds=10))
    c.run(until=9)
    assert rs_status(c)["readyReplicas"] == 2 and "availableReplicas" not in rs_status(c)
    c.run(until=10)  # the requeue minReadySeconds after they turned Ready finds them available
    assert rs_status(c)["availableReplicas"] == 2


def test_a_refused_create_is_reported_and_retried_until_it_succeeds() -> None:
    c = cluster(node("n1"), replica_set(2, pod={"priorityClassName": "gold"}))
    c.run(until=5)
    assert pods(c) == []
    failed = events(c, "FailedCreate")
    assert failed[0] == 'Error creating: pods "web-" is forbidden: no PriorityClass with name gold was found'
    assert len(failed) > 1  # retried with backoff, one attempt at a time (slow start)
    cond = get_condition(c.api.get("ReplicaSet", "default", "web"), "ReplicaFailure")
    assert cond is not None and cond["reason"] == "FailedCreate" and cond["status"] == "True"
    assert cond["message"] == 'pods "web-" is forbidden: no PriorityClass with name gold was found'
    c.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gold"},
              "value": 100})
    c.run(until=100)
    assert len(pods(c)) == 2
    assert get_condition(c.api.get("ReplicaSet", "default", "web"), "ReplicaFailure") is None


def test_retries_alone_do_not_keep_a_run_going() -> None:
    c = cluster(node("n1"), replica_set(1, pod={"priorityClassName": "gold"}))
    c.run()
    assert c.now() < 1


def test_a_pod_relabelled_out_of_the_selector_is_released_and_replaced() -> None:
    c = cluster(node("n1"), replica_set(1))
    c.run(until=1)
    name = pods(c)[0]["metadata"]["name"]
    c.api.patch("Pod", "default", name, {"metadata": {"labels": {"app": "debug"}}})
    c.run(until=2)
    released = c.api.get("Pod", "default", name)
    assert controller_of(released) is None
    assert len(pods(c)) == 2 and rs_status(c)["replicas"] == 1


def test_pods_of_another_controller_and_terminating_orphans_are_not_adopted() -> None:
    owned = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "job-1", "labels": {"app": "web"},
                          "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j1",
                                               "controller": True}]},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "web"}]}}
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "orphan", "labels": {"app": "web"},
                           "annotations": {"sim.kubesched.io/shutdown": "30s"}},  # its whole grace period
              "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "web"}]}}
    c = cluster(node("n1"), owned, orphan)
    c.run(until=1)
    c.api.delete("Pod", "default", "orphan")  # terminating now
    c.create(replica_set(1))
    c.run(until=2)
    assert controller_of(c.api.get("Pod", "default", "job-1"))["kind"] == "Job"  # type: ignore[index]
    assert controller_of(c.api.get("Pod", "default", "orphan")) is None
    assert rs_status(c)["replicas"] == 1 and len(pods(c)) == 3
