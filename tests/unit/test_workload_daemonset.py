"""The DaemonSet controller on a real cluster: the pods it makes, its status, failed pods."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import controller_of
from kubesched.cluster.cluster import Cluster
from kubesched.controllers.daemonsetutil import HASH_LABEL
from kubesched.controllers.podcontrol import compute_hash

TEMPLATE = {"metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "c", "image": "agent", "resources": {"requests": {"cpu": "100m"}}}]}}


def node(name: str, cpu: str = "2", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def daemon_set(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": TEMPLATE, **spec}}


def cluster(*objs: dict[str, Any]) -> Cluster:
    c = Cluster()
    for obj in objs:
        assert c.create(obj) is not None
    return c


def daemon_pods(c: Cluster) -> dict[str, dict[str, Any]]:
    """Live daemon pods by node."""
    return {p["spec"].get("nodeName", ""): p for p in c.api.list("Pod", "default")
            if p["metadata"]["name"].startswith("agent-")}


def status(c: Cluster) -> dict[str, Any]:
    return c.api.get("DaemonSet", "default", "agent").get("status") or {}


def test_daemon_pods_are_pinned_tolerant_labelled_and_owned() -> None:
    c = cluster(node("n1"), node("n2"), daemon_set())
    c.run(until=1)
    pods = daemon_pods(c)
    assert sorted(pods) == ["n1", "n2"]
    for name, p in pods.items():
        terms = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [name]}]}]}
        no_execute = {t["key"]: t.get("tolerationSeconds") for t in p["spec"]["tolerations"]
                      if t.get("effect") == "NoExecute"}
        assert no_execute == {"node.kubernetes.io/not-ready": None, "node.kubernetes.io/unreachable": None}
        stored = c.api.get("DaemonSet", "default", "agent")["spec"]["template"]  # as defaulted
        assert p["metadata"]["labels"] == {"app": "agent", HASH_LABEL: compute_hash(stored)}
        ref = controller_of(p)
        assert ref is not None and ref["kind"] == "DaemonSet" and ref["name"] == "agent"
    assert status(c) == {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberMisscheduled": 0,
                         "numberReady": 2, "updatedNumberScheduled": 2, "numberAvailable": 2,
                         "observedGeneration": 1}


def test_a_pod_that_cannot_be_scheduled_still_counts_as_scheduled_on_its_node() -> None:
    c = cluster(node("n1"), node("small", cpu="50m"), daemon_set())
    c.run(until=1)
    assert daemon_pods(c)[""]["status"]["phase"] == "Pending"  # pinned to `small`, which has no room
    assert status(c)["currentNumberScheduled"] == 2 and status(c)["numberReady"] == 1
    assert status(c)["numberUnavailable"] == 1
    c.api.delete("Node", "", "small")
    c.run(until=2)
    assert "" not in daemon_pods(c)  # a pending pod pinned to a deleted node goes
    assert status(c)["desiredNumberScheduled"] == 1


def test_a_failed_daemon_pod_is_deleted_and_replaced() -> None:
    c = cluster(node("n1"), daemon_set())
    c.run(until=1)
    name = daemon_pods(c)["n1"]["metadata"]["name"]
    c.api.update_status("Pod", "default", name, lambda st: st.update(phase="Failed", reason="Evicted"))
    c.run(until=2)
    assert c.recorder.pod("default", name).deleted  # type: ignore[union-attr]
    assert daemon_pods(c)["n1"]["metadata"]["name"] != name
    warnings = [e.message for e in c.recorder.events if e.reason == "FailedDaemonPod"]
    assert warnings == [f"Found failed daemon pod default/{name} on node n1, will try to kill it"]


def test_a_second_pod_on_a_node_is_deleted_keeping_the_oldest() -> None:
    c = cluster(node("n1"), daemon_set())
    c.run(until=5)
    first = daemon_pods(c)["n1"]["metadata"]["name"]
    extra = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "agent-extra", "labels": {"app": "agent"}},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "agent"}]}}
    c.create(extra)  # an orphan: adopted, then one too many
    c.run(until=40)
    assert c.recorder.pod("default", "agent-extra").deleted  # type: ignore[union-attr]
    assert daemon_pods(c)["n1"]["metadata"]["name"] == first


def test_host_network_pods_tolerate_network_unavailable() -> None:
    ds = daemon_set(template={**TEMPLATE, "spec": {**TEMPLATE["spec"], "hostNetwork": True}})
    c = cluster(node("n1", taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]), ds)
    c.run(until=1)
    assert daemon_pods(c)["n1"]["status"]["phase"] == "Running"


def test_a_node_that_stops_matching_loses_its_pod_and_status_counts_it_until_then() -> None:
    # The daemon pods take their whole grace period (the default 30 s) to stop.
    slow = {**TEMPLATE["metadata"], "annotations": {"sim.kubesched.io/shutdown": "30s"}}
    c = cluster(node("n1"), node("n2"), daemon_set(template={
        "metadata": slow, "spec": {**TEMPLATE["spec"], "nodeSelector": {"agent": "yes"}}}))
    c.run(until=1)
    assert daemon_pods(c) == {}
    for n in ("n1", "n2"):
        c.api.patch("Node", "", n, {"metadata": {"labels": {"agent": "yes"}}})
    c.run(until=2)
    assert sorted(daemon_pods(c)) == ["n1", "n2"]
    c.api.patch("Node", "", "n2", {"metadata": {"labels": {"agent": None}}})
    c.run(until=3)
    assert status(c)["desiredNumberScheduled"] == 1 and status(c)["numberMisscheduled"] == 1  # still terminating
    c.run(until=40)
    assert sorted(daemon_pods(c)) == ["n1"] and status(c)["numberMisscheduled"] == 0
