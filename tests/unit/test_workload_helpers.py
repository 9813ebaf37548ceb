"""The workload controllers' pure helpers: template hash, pods from templates, scale-down ranking,
DaemonSet default tolerations, node eligibility and the node-pinning affinity."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import DEFAULT_EPOCH, format_time, parse_time
from kubesched.controllers.daemonsetutil import NodeFit, add_default_tolerations, for_node, target_node
from kubesched.controllers.podcontrol import SAFE_ALPHABET, compute_hash, pod_from_template
from kubesched.controllers.ranking import pods_to_delete

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "web:1"}]}}


def seconds(stamp: str) -> float:
    return (parse_time(stamp) - DEFAULT_EPOCH).total_seconds()


def pod(name: str, node: str | None = "n1", phase: str = "Running", ready_at: float | None = 0.0,
        created: float = 0.0, uid: str | None = None, **annotations: str) -> dict[str, Any]:
    conditions = [] if ready_at is None else [
        {"type": "Ready", "status": "True", "lastTransitionTime": format_time(DEFAULT_EPOCH, ready_at)}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "web"}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "uid": uid or name, "annotations": annotations,
                                        "creationTimestamp": format_time(DEFAULT_EPOCH, created)},
            "spec": spec, "status": {"phase": phase, "conditions": conditions}}


def order(pods: list[dict[str, Any]], now: float = 1000.0, related: list[dict[str, Any]] | None = None) -> list[str]:
    return [p["metadata"]["name"] for p in pods_to_delete(pods, related or [], len(pods) - 1, now, seconds)]


# ---- compute_hash ------------------------------------------------------------------------------------

def test_hash_is_stable_short_and_spelt_like_kubernetes() -> None:
    h = compute_hash(TEMPLATE)
    assert h == compute_hash({"spec": TEMPLATE["spec"], "metadata": TEMPLATE["metadata"]})  # key order
    assert 1 <= len(h) <= 10 and set(h) <= set(SAFE_ALPHABET)
    assert compute_hash({**TEMPLATE, "spec": {"containers": [{"name": "c", "image": "web:2"}]}}) != h
    assert compute_hash(TEMPLATE, 1) != h  # collisionCount makes a new name


# ---- pods from a template --------------------------------------------------------------------------

def test_pod_from_template_is_named_labelled_and_owned_by_the_controller() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "prod",
                                                                         "uid": "u1"}}
    template = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}}, "spec": {"containers": []}}
    p = pod_from_template(template, owner)
    assert p["metadata"] == {
        "generateName": "web-", "namespace": "prod", "labels": {"app": "web"}, "annotations": {"a": "1"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1",
                             "controller": True, "blockOwnerDeletion": True}]}
    p["metadata"]["labels"]["x"] = "y"
    assert template["metadata"]["labels"] == {"app": "web"}  # a copy


# ---- scale-down ranking ------------------------------------------------------------------------------

def test_unassigned_pods_go_first_then_pending_then_not_ready() -> None:
    pods = [pod("running"), pod("not-ready", ready_at=None), pod("pending", phase="Pending", ready_at=None),
            pod("unassigned", node=None, phase="Pending", ready_at=None)]
    assert order(pods) == ["unassigned", "pending", "not-ready"]


def test_lower_deletion_cost_goes_first_and_an_invalid_cost_counts_as_zero() -> None:
    annotation = "controller.kubernetes.io/pod-deletion-cost"
    pods = [pod("cheap", **{annotation: "-5"}), pod("dear", **{annotation: "10"}), pod("bad", **{annotation: "x"}),
            pod("new", created=999.0, ready_at=999.0)]
    assert order(pods) == ["cheap", "new", "bad"]


def test_more_colocated_related_pods_go_first() -> None:
    pods = [pod("alone", node="n1"), pod("crowded", node="n2")]
    related = [*pods, pod("other", node="n2")]
    assert order(pods, related=related) == ["crowded"]


def test_ready_time_and_age_count_on_a_log2_scale_with_the_uid_breaking_ties() -> None:
    # Ready 10 s and 30 s ago are in different log2 buckets (33 and 34): the more recent goes.
    assert order([pod("older", ready_at=970.0), pod("newer", ready_at=990.0)]) == ["newer"]
    # Ready 40 s and 60 s ago share bucket 35: the smaller uid goes, whichever is newer.
    assert order([pod("a", ready_at=960.0, uid="2"), pod("b", ready_at=940.0, uid="1")]) == ["b"]
    # Same Ready time: more restarts go first, then the more recently created.
    restarted = pod("restarted")
    restarted["status"]["containerStatuses"] = [{"name": "c", "restartCount": 3}]
    assert order([pod("steady"), restarted]) == ["restarted"]
    assert order([pod("old", created=0.0), pod("young", created=500.0)]) == ["young"]


def test_no_ranking_when_every_pod_goes() -> None:
    pods = [pod("a"), pod("b")]
    assert pods_to_delete(pods, [], 2, 0.0, seconds) == pods


# ---- DaemonSet pods ------------------------------------------------------------------------------------

def test_default_tolerations_replace_matching_ones_and_add_network_for_host_network() -> None:
    spec: dict[str, Any] = {"hostNetwork": True, "tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
        {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]}
    add_default_tolerations(spec)
    keys = [(t.get("key"), t.get("effect"), t.get("tolerationSeconds")) for t in spec["tolerations"]]
    assert keys == [
        ("node.kubernetes.io/not-ready", "NoExecute", None), ("dedicated", "NoSchedule", None),
        ("node.kubernetes.io/unreachable", "NoExecute", None), ("node.kubernetes.io/disk-pressure", "NoSchedule", None),
        ("node.kubernetes.io/memory-pressure", "NoSchedule", None),
        ("node.kubernetes.io/pid-pressure", "NoSchedule", None),
        ("node.kubernetes.io/unschedulable", "NoSchedule", None),
        ("node.kubernetes.io/network-unavailable", "NoSchedule", None)]
    plain: dict[str, Any] = {}
    add_default_tolerations(plain)
    assert len(plain["tolerations"]) == 6


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def test_node_fit_follows_node_should_run_daemon_pod() -> None:
    ds = {"spec": {"template": {"spec": {"nodeSelector": {"role": "worker"}, "tolerations": [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}
    fit = NodeFit(ds)
    assert fit.should_run(node("n1", {"role": "worker"})) == (True, True)
    assert fit.should_run(node("n2")) == (False, False)
    assert fit.should_run(node("n3", {"role": "worker"}, [{"key": "gpu", "effect": "NoSchedule"}])) == (True, True)
    # A node condition taint is tolerated by default; another NoSchedule taint blocks new pods only.
    assert fit.should_run(node("n4", {"role": "worker"},
                               [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}])) == (True, True)
    assert fit.should_run(node("n5", {"role": "worker"}, [{"key": "db", "effect": "NoSchedule"}])) == (False, True)
    assert fit.should_run(node("n6", {"role": "worker"}, [{"key": "db", "effect": "NoExecute"}])) == (False, False)
    assert fit.should_run(node("n7", {"role": "worker"},
                               [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])) == (True, True)
    pinned = NodeFit({"spec": {"template": {"spec": {"nodeName": "n1"}}}})
    assert pinned.should_run(node("n1")) == (True, True) and pinned.should_run(node("n2")) == (False, False)


def test_daemon_pods_are_pinned_by_replacing_required_node_affinity() -> None:
    template = {"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}}}}
    pinned = for_node(template, "n7")
    affinity = pinned["spec"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]}
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 1, "preference": {}}]
    assert "matchFields" not in str(template)  # the template itself is untouched
    assert target_node(pinned) == "n7"
    assert target_node({"spec": {"nodeName": "n2", **pinned["spec"]}}) == "n2"
    assert target_node({"spec": {}}) is None
    assert for_node({"spec": {}}, "n1")["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
