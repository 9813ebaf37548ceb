"""The eviction managers on a real Cluster: when they tick, what keeps a run alive, what they record."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import get_condition
from kubesched.apiserver.errors import APIError
from kubesched.cluster.cluster import Cluster


def node(name: str, memory: str = "4Gi", annotations: dict | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations or {}},
            "status": {"allocatable": {"cpu": "4", "memory": memory, "pods": "110"}}}


def pod(name: str, node_name: str | None, usage: str | None = None, request: str | None = None,
        shutdown: str | None = None, **spec: Any) -> dict[str, Any]:
    """`shutdown`: how long the pod takes to stop once told to (at once without it)."""
    annotations = {} if usage is None else {"sim.kubesched.io/usage-memory": usage}
    if shutdown is not None:
        annotations["sim.kubesched.io/shutdown"] = shutdown
    resources = {} if request is None else {"requests": {"memory": request}}
    body = {"containers": [{"name": "c", "image": "app", "resources": resources}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations}, "spec": body}


def cluster(*objects: dict[str, Any], config: dict | None = None) -> Cluster:
    c = Cluster(kubelet_config=config)
    for obj in objects:
        assert c.create(obj) is not None, c.recorder.rejected
    return c


def phase(c: Cluster, name: str) -> str:
    return c.api.store.get("Pod", "default", name)["status"]["phase"]


def pressure(c: Cluster, name: str, ctype: str = "MemoryPressure") -> str | None:
    cond = get_condition(c.api.store.get("Node", "", name), ctype)
    return cond["status"] if cond else None


def test_quiet_nodes_schedule_no_housekeeping() -> None:
    c = cluster(*(node(f"n{i}") for i in range(3)), *(pod(f"p{i}", f"n{i % 3}", request="1Gi") for i in range(9)))
    c.run()
    assert c.now() == 0 and c.kubelets.eviction.nodes == {}  # no state, no timer kept for any node
    assert c.clock.next_time() is None


def test_a_usage_change_is_seen_at_the_next_tick_of_that_node() -> None:
    # `a` would take its whole 30 s grace period to stop; a hard eviction kills it after 1 s.
    c = cluster(node("n1"), pod("a", "n1", usage="1Gi", shutdown="30s"))
    c.run(until=33)
    c.kubelets.set_usage("default", "a", {"memory": "4Gi"})  # 100Mi left: not below memory.available<100Mi
    c.run(until=37)
    assert c.recorder.pressure_evictions == {}
    c.kubelets.set_usage("default", "a", {"memory": "4150Mi"})
    c.run()
    record = c.recorder.pressure_evictions[c.api.store.get("Pod", "default", "a")["metadata"]["uid"]]
    assert record["time"] == 40 and record["signal"] == "memory.available"
    assert (record["threshold"], record["available"], record["hard"]) == ("100Mi", "46Mi", True)
    assert phase(c, "a") == "Failed"
    # The run went on until the condition cleared: 5m after it was last observed, at 40 s.
    assert pressure(c, "n1") == "False" and c.now() == 342


def test_pressure_with_nothing_to_evict_does_not_keep_the_run_alive() -> None:
    critical = pod("kube-x", "n1", usage="4150Mi", priorityClassName="system-cluster-critical")
    critical["metadata"]["namespace"] = "kube-system"
    c = cluster(node("n1"), critical)
    c.run()
    st = c.kubelets.eviction.nodes["n1"]
    assert pressure(c, "n1") == "True" and c.now() == 0
    assert st.timer is not None and st.timer.daemon  # still ticking, but nothing will change
    assert c.api.store.get("Pod", "kube-system", "kube-x")["status"]["phase"] == "Running"


def test_a_terminating_pod_is_evicted_and_removed() -> None:
    c = cluster(node("n1"), pod("a", "n1", usage="3Gi", shutdown="30s"), pod("b", "n1", usage="1Gi"))
    c.run(until=5)
    c.api.delete("Pod", "default", "a")  # 30 s grace period, all of which `a` takes to stop
    c.kubelets.set_usage("default", "b", {"memory": "1074Mi"})
    c.run(until=11)
    assert c.api.store.get("Pod", "default", "a") is None  # evicted at 10 s, killed after 1 s, then deleted
    assert c.recorder.pod("default", "a").obj["status"]["reason"] == "Evicted"


def test_usage_for_a_pod_that_has_not_started_applies_from_its_start() -> None:
    c = cluster(node("n1"))
    c.create(pod("later", None, request="1Gi"))  # pending: no node yet
    c.kubelets.set_usage("default", "later", {"memory": "2Gi"})
    c.create(node("n2"))
    c.run(until=1)
    assert c.kubelets.usage.node_totals(c.api.store.get("Pod", "default", "later")["spec"]["nodeName"])["memory"] \
        == 2 * 2**30


def test_bad_usage_targets_are_refused() -> None:
    c = cluster(node("n1"), pod("a", "n1"))
    for args in (("nope", {"memory": "1Gi"}, None), ("a", {"memory": "1Gi"}, "other")):
        try:
            c.kubelets.set_usage("default", *args)
        except APIError as e:
            assert e.code in (400, 404)
        else:
            raise AssertionError(f"{args} was accepted")


def test_patching_a_usage_annotation_changes_usage() -> None:
    c = cluster(node("n1"), pod("a", "n1", usage="1Gi"))
    c.run(until=1)
    c.api.patch("Pod", "default", "a", {"metadata": {"annotations": {"sim.kubesched.io/usage-memory": "3Gi"}}})
    assert c.kubelets.usage.node_totals("n1")["memory"] == 3 * 2**30


def test_nodes_without_memory_figures_have_no_memory_signal() -> None:
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"pods": "9"}}}
    c = cluster(bare, pod("a", "n1", usage="100Gi"))
    c.run(until=30)
    assert phase(c, "a") == "Running" and c.kubelets.eviction.observations("n1").keys() == {"pid.available"}


def test_a_pod_over_its_ephemeral_storage_limit_is_evicted_without_node_pressure() -> None:
    limited = pod("a", "n1", shutdown="30s")  # it would take its whole grace period to stop
    limited["spec"]["containers"][0]["resources"] = {"limits": {"ephemeral-storage": "1Gi"}}
    disk = node("n1")
    disk["status"]["allocatable"]["ephemeral-storage"] = "100Gi"
    c = cluster(disk, limited)
    c.run(until=3)
    assert c.kubelets.eviction.nodes == {}
    c.kubelets.set_usage("default", "a", {"ephemeral-storage": "1025Mi"})
    c.run()
    obj = c.api.store.get("Pod", "default", "a")
    assert obj["status"]["phase"] == "Failed" and get_condition(obj, "DisruptionTarget") is None
    assert obj["status"]["message"] == "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. "
    assert c.now() == 11  # evicted at the 10 s housekeeping, killed 1 s later; nothing left to do
