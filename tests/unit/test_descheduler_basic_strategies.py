"""RemoveDuplicates, RemovePodsViolatingInterPodAntiAffinity, RemovePodsViolatingNodeAffinity and
RemovePodsViolatingNodeTaints, one descheduling pass on a real Cluster.

Most cases reproduce rows of the upstream test tables (descheduler pkg/framework/plugins/
<plugin>/*_test.go, named in each test), with upstream's test objects: nodes of 2 CPUs and 10
pods, pods requesting 100m and owned by a ReplicaSet that is not there to replace them. Where an
upstream row runs the plugin on a single node, a spare node is added: the descheduler does
nothing on a cluster of fewer than two ready nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubesched.cluster.cluster import Cluster
from kubesched.descheduler.descheduler import PassRecord
from kubesched.descheduler.framework import BALANCE, DESCHEDULE
from kubesched.descheduler.plugins.nodetaints import RemovePodsViolatingNodeTaints
from kubesched.descheduler.plugins.removeduplicates import target_nodes
from kubesched.descheduler.policy import PolicyError, load_policy

RS = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}]
DS = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid", "controller": True}]
SPARE = "spare"


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         cpu: str = "2", unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "3Gi", "pods": "10"}}}


def pod(name: str, node_name: str, ns: str = "default", owners: list[dict[str, Any]] | None = RS,
        cpu: str = "100m", labels: dict[str, str] | None = None, image: str = "app",
        annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}}
    if owners:
        meta["ownerReferences"] = owners
    if annotations:
        meta["annotations"] = annotations
    containers = spec.pop("containers", None) or [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name, "containers": containers, **spec}}


def run(objects: list[dict[str, Any]], plugin: str, args: dict[str, Any] | None = None,
        evictor: dict[str, Any] | None = None, then: Callable[[Cluster], None] | None = None,
        then_at: float = 1, **top: Any) -> PassRecord:
    """The descheduling pass with `plugin` enabled that follows `then` (a change made at
    `then_at`): the pass at 0s, or with a change after 0s the next one, at 10s."""
    point = BALANCE if plugin == "RemoveDuplicates" else DESCHEDULE
    config = [{"name": "DefaultEvictor", "args": evictor or {}}, {"name": plugin, "args": args or {}}]
    later = then is not None and then_at > 0
    policy = load_policy({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **top,
                          **({"deschedulingInterval": "10s"} if later else {}),
                          "profiles": [{"name": "p", "pluginConfig": config,
                                        "plugins": {point: {"enabled": [plugin]}}}]})
    cluster = Cluster(descheduler_policy=policy)
    for obj in objects:
        assert cluster.create(obj) is not None, cluster.recorder.rejected
    if then is not None:
        cluster.clock.call_at(then_at, lambda: then(cluster))
    cluster.run(until=11 if later else 1)
    assert cluster.descheduler is not None
    return cluster.recorder.passes[-1]


def evicted(record: PassRecord) -> list[str]:
    return [a.pod.split("/")[1] for a in record.attempts if a.result == "Evicted"]


def relabel(name: str, labels: dict[str, str | None]) -> Callable[[Cluster], None]:
    return lambda c: c.api.patch("Node", "", name, {"metadata": {"labels": labels}})


def plugin_errors(plugin: str, args: dict[str, Any]) -> list[str]:
    point = BALANCE if plugin == "RemoveDuplicates" else DESCHEDULE
    with pytest.raises(PolicyError) as e:
        load_policy({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [
            {"name": "p", "pluginConfig": [{"name": plugin, "args": args}], "plugins": {point: {"enabled": [plugin]}}}]})
    return e.value.errors


# ---- RemoveDuplicates (removeduplicates_test.go) ------------------------------------------------

def three_on_n1(ns: str = "dev") -> list[dict[str, Any]]:
    return [pod(f"{ns}-{i}", "n1", ns) for i in (1, 2, 3)]


def test_duplicates_three_pods_of_one_replicaset_one_is_evicted() -> None:
    # "Three pods in the `dev` Namespace, bound to same ReplicaSet. 1 should be evicted."
    # 3 pods over 2 target nodes: upper average 2, so the node keeps 2 and the last one goes.
    record = run([node("n1"), node("n2"), *three_on_n1()], "RemoveDuplicates")
    assert evicted(record) == ["dev-3"]
    assert record.attempts[0].landing == "n2"


def test_duplicates_of_an_excluded_owner_kind_stay() -> None:
    record = run([node("n1"), node("n2"), *three_on_n1()], "RemoveDuplicates", {"excludeOwnerKinds": ["ReplicaSet"]})
    assert evicted(record) == []


def test_duplicates_owner_key_includes_the_namespace() -> None:
    # "Three Pods in the `dev` Namespace, three Pods in the `test` Namespace. Bound to ReplicaSet
    # with same name": two owners, one eviction each.
    record = run([node("n1"), node("n2"), *three_on_n1("dev"), *three_on_n1("test")], "RemoveDuplicates")
    assert evicted(record) == ["dev-3", "test-3"]


def test_duplicates_namespaces_argument() -> None:
    objs = [node("n1"), node("n2"), *three_on_n1("dev"), *three_on_n1("test")]
    assert evicted(run(objs, "RemoveDuplicates", {"namespaces": {"exclude": ["dev"]}})) == ["test-3"]
    assert evicted(run(objs, "RemoveDuplicates", {"namespaces": {"include": ["dev"]}})) == ["dev-3"]


def test_duplicates_that_may_not_be_evicted_stay() -> None:
    # "Pods are: part of DaemonSet, with local storage, mirror pod annotation, critical pod
    # annotation - none should be evicted."
    objs = [node("n1"), node("n2"),
            pod("ds-1", "n1", owners=DS), pod("ds-2", "n1", owners=DS),
            pod("local-1", "n1", volumes=[{"name": "v", "emptyDir": {}}]),
            pod("local-2", "n1", volumes=[{"name": "v", "emptyDir": {}}]),
            pod("crit-1", "n1", priorityClassName="system-cluster-critical"),
            pod("crit-2", "n1", priorityClassName="system-cluster-critical")]
    assert evicted(run(objs, "RemoveDuplicates")) == []


def test_duplicates_need_the_same_images() -> None:
    # "Pods with the same owner but different images should not be evicted", "Pods with multiple
    # containers should not match themselves", "... at not all matching image should not trigger".
    two = [{"name": "a", "image": "app"}, {"name": "b", "image": "foo"}]
    objs = [node("n1"), node("n2"), pod("foo", "n1", image="foo"), pod("bar", "n1", image="bar"),
            pod("multi", "n1", containers=two)]
    assert evicted(run(objs, "RemoveDuplicates")) == []


@pytest.mark.parametrize(("other", "extra", "expected"), [
    # "Only node available has a taint, and nodeFit set to true. 0 should be evicted."
    (node("n2", taints=[{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]), [], []),
    # "Only node available is not schedulable ..."
    (node("n2", unschedulable=True), [], []),
    # "Only node available does not have enough CPU ..." (150m of 200m taken)
    (node("n2", cpu="200m"), [pod("cpu-eater", "n2", "test", cpu="150m")], []),
    # "Only node available has enough CPU, and nodeFit set to true. 1 should be evicted."
    (node("n2", cpu="200m"), [pod("cpu-saver", "n2", "test", cpu="100m")], ["dev-3"]),
], ids=["tainted", "unschedulable", "no-room", "room"])
def test_duplicates_with_node_fit(other: dict[str, Any], extra: list[dict[str, Any]], expected: list[str]) -> None:
    record = run([node("n1"), other, *three_on_n1(), *extra], "RemoveDuplicates", evictor={"nodeFit": True})
    assert evicted(record) == expected


def spread(counts: dict[str, int], owners: list[dict[str, Any]] | None = RS, prefix: str = "p",
           **spec: Any) -> list[dict[str, Any]]:
    out, i = [], 0
    for node_name, n in counts.items():
        for _ in range(n):
            i += 1
            out.append(pod(f"{prefix}{i}", node_name, owners=owners, **spec))
    return out


def test_duplicates_evicted_uniformly() -> None:
    # "Evict pods uniformly": (5,3,1) -> (3,3,3), 2 evictions, both from n1.
    record = run([node("n1"), node("n2"), node("n3"), *spread({"n1": 5, "n2": 3, "n3": 1})], "RemoveDuplicates")
    assert evicted(record) == ["p4", "p5"]


def test_duplicates_on_nodes_outside_the_pass_are_not_counted() -> None:
    # "Evict pods uniformly with one node left out": n3 is not among the pass's nodes (the
    # policy's nodeSelector), so 8 pods over 2 nodes: upper average 4, 1 eviction.
    objs = [node("n1", {"pool": "a"}), node("n2", {"pool": "a"}), node("n3"), *spread({"n1": 5, "n2": 3, "n3": 1})]
    assert evicted(run(objs, "RemoveDuplicates", nodeSelector="pool=a")) == ["p5"]


def test_duplicates_with_two_owner_references_count_for_each_owner() -> None:
    # "Evict pods uniformly with two replica sets": every pod is counted under both owners and
    # each owner evicts the same 2 pods, so 4 evictions (the second ones find them terminating).
    two = [{**RS[0], "name": "rs-1", "uid": "u1"}, {**RS[0], "name": "rs-2", "uid": "u2", "controller": False}]
    record = run([node("n1"), node("n2"), node("n3"), *spread({"n1": 5, "n2": 3, "n3": 1}, owners=two)],
                 "RemoveDuplicates")
    assert evicted(record) == ["p4", "p5", "p4", "p5"]


def test_duplicates_of_two_owners_balanced_separately() -> None:
    # "Evict pods uniformly with two owner references": (5,3,1) and (1,3,5), 2 evictions each.
    rs2 = [{**RS[0], "name": "rs-2", "uid": "u2"}]
    objs = [node("n1"), node("n2"), node("n3"), *spread({"n1": 5, "n2": 3, "n3": 1}),
            *spread({"n1": 1, "n2": 3, "n3": 5}, owners=rs2, prefix="q")]
    assert evicted(run(objs, "RemoveDuplicates")) == ["p4", "p5", "q8", "q9"]


@pytest.mark.parametrize(("pods", "expected"), [
    # "Evict pods with number of pods less than nodes": (2,0,0) -> (1,1,0)
    ([pod("p1", "n1"), pod("p2", "n1")], ["p2"]),
    # "... but ignore different pods with the same ownerref": only the two "foo" pods are duplicates
    ([pod("p1", "n1", image="foo"), pod("p2", "n1", image="bar"), pod("p3", "n1", image="baz"),
      pod("p4", "n1", image="foo")], ["p4"]),
    # "Evict pods with a single pod with three nodes"
    ([pod("p1", "n1")], []),
], ids=["two-pods", "same-owner-other-images", "single-pod"])
def test_duplicates_fewer_pods_than_nodes(pods: list[dict[str, Any]], expected: list[str]) -> None:
    assert evicted(run([node("n1"), node("n2"), node("n3"), *pods], "RemoveDuplicates")) == expected


def test_duplicates_target_nodes_leave_out_tainted_nodes() -> None:
    # "Evict pods uniformly respecting taints": the control-plane nodes' NoSchedule taint is not
    # tolerated, so 9 pods over the 3 workers: 2 evictions.
    cp = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    k1 = [{"key": "k1", "value": "v1", "operator": "Equal", "effect": "NoSchedule"}]
    workers = [node(f"worker{i}") for i in (1, 2, 3)]
    masters = [node(f"master{i}", taints=cp) for i in (1, 2, 3)]
    pods = spread({"worker1": 5, "worker2": 3, "worker3": 1}, tolerations=k1)
    assert evicted(run([*workers, *masters, *pods], "RemoveDuplicates")) == ["p4", "p5"]


def test_duplicates_target_nodes_respect_required_node_affinity() -> None:
    # "Evict pods uniformly respecting RequiredDuringSchedulingIgnoredDuringExecution node affinity"
    not_cp = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]}]}}}
    workers = [node(f"worker{i}") for i in (1, 2, 3)]
    masters = [node(f"master{i}", {"node-role.kubernetes.io/control-plane": ""}) for i in (1, 2, 3)]
    pods = spread({"worker1": 5, "worker2": 3, "worker3": 1}, affinity=not_cp)
    assert evicted(run([*workers, *masters, *pods], "RemoveDuplicates")) == ["p4", "p5"]


def test_target_nodes_follow_the_node_selector() -> None:
    # "Evict pods uniformly respecting node selector" and "... with zero target nodes": a kind
    # of duplicate that fits fewer than two nodes adds none, and without two targets nothing moves.
    def worker(i: int, role: str | None) -> dict[str, Any]:
        return node(f"worker{i}", {"node-role.kubernetes.io/worker": role} if role else {})
    k1 = pod("a", "worker1", nodeSelector={"node-role.kubernetes.io/worker": "k1"})
    k2 = pod("b", "worker1", nodeSelector={"node-role.kubernetes.io/worker": "k2"})
    labelled = [worker(i, "k2") for i in (1, 2, 3)] + [node(f"master{i}") for i in (1, 2, 3)]
    assert target_nodes({"worker1": [k1, k2]}, labelled) == {"worker1", "worker2", "worker3"}
    bare = [worker(i, None) for i in (1, 2, 3)] + [node(f"master{i}") for i in (1, 2, 3)]
    assert target_nodes({"worker1": [k1, k2]}, bare) == set()


def test_duplicates_total_limit_ends_the_strategy() -> None:
    objs = [node("n1"), node("n2"), node("n3"), *spread({"n1": 5, "n2": 3, "n3": 1})]
    record = run(objs, "RemoveDuplicates", maxNoOfPodsToEvictTotal=1)
    assert evicted(record) == ["p4"]
    assert [a.result for a in record.attempts] == ["Evicted", "LimitReached"]


def test_duplicates_validation() -> None:
    assert plugin_errors("RemoveDuplicates", {"namespaces": {"include": ["a"], "exclude": ["b"]}}) == [
        "in profile p: RemoveDuplicates: only one of Include/Exclude namespaces can be set"]
    assert plugin_errors("RemoveDuplicates", {"labelSelector": {}}) == [
        'in profile p: RemoveDuplicates: unknown field "labelSelector"']


# ---- RemovePodsViolatingInterPodAntiAffinity (pod_antiaffinity_test.go) ---------------------------

def anti(key: str, value: str, topology: str = "region", **term: Any) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
         "topologyKey": topology, **term}]}}


MAIN = {"region": "main-region"}


def p1_to_p4() -> list[dict[str, Any]]:
    return [pod("p1", "n1", affinity=anti("foo", "bar")), pod("p2", "n1", labels={"foo": "bar"}),
            pod("p3", "n1", affinity=anti("foo", "bar")), pod("p4", "n1", affinity=anti("foo", "bar"))]


@pytest.mark.parametrize(("limits", "expected"), [
    ({}, ["p1", "p3", "p4"]),  # "Maximum pods to evict - 0"
    ({"maxNoOfPodsToEvictPerNode": 3}, ["p1", "p3", "p4"]),  # "Maximum pods to evict - 3"
    ({"maxNoOfPodsToEvictPerNamespace": 3}, ["p1", "p3", "p4"]),
    ({"maxNoOfPodsToEvictPerNamespace": 3, "maxNoOfPodsToEvictTotal": 1}, ["p1"]),
], ids=["no-limit", "per-node-3", "per-namespace-3", "total-1"])
def test_anti_affinity_each_violator_goes(limits: dict[str, int], expected: list[str]) -> None:
    # p1, p3 and p4 each keep away from foo=bar, and p2 (foo=bar) stays: evicting one of them
    # does not cure the others.
    record = run([node("n1", MAIN), node(SPARE), *p1_to_p4()], "RemovePodsViolatingInterPodAntiAffinity", **limits)
    assert evicted(record) == expected


def test_anti_affinity_evicts_the_lowest_priority_and_then_the_conflict_is_gone() -> None:
    # "Evict only 1 pod after sorting": p7 (priority 0) conflicts with p5 and p6; once p7 is gone
    # their own terms (against foo1=bar1) match nothing.
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"prio-{v}"},
                "value": v} for v in (0, 50, 100)]
    pods = [pod("p5", "n1", labels={"foo": "bar"}, affinity=anti("foo1", "bar1"), priorityClassName="prio-100"),
            pod("p6", "n1", labels={"foo": "bar"}, affinity=anti("foo1", "bar1"), priorityClassName="prio-50"),
            pod("p7", "n1", labels={"foo1": "bar1"}, affinity=anti("foo", "bar"), priorityClassName="prio-0")]
    record = run([*classes, node("n1", MAIN), node(SPARE), *pods], "RemovePodsViolatingInterPodAntiAffinity")
    assert evicted(record) == ["p7"]


def test_anti_affinity_mutual_conflict_evicts_only_one() -> None:
    pods = [pod("a", "n1", labels={"app": "x"}, affinity=anti("app", "x", "kubernetes.io/hostname")),
            pod("b", "n1", labels={"app": "x"}, affinity=anti("app", "x", "kubernetes.io/hostname"))]
    assert evicted(run([node("n1"), node(SPARE), *pods], "RemovePodsViolatingInterPodAntiAffinity")) == ["a"]


def test_anti_affinity_conflict_with_a_critical_pod_evicts_the_other() -> None:
    # "Evicts pod that conflicts with critical pod (but does not evict critical pod)": the
    # critical pod, not evictable, still counts as the pod p1 must keep away from.
    pods = [pod("p1", "n1", affinity=anti("foo", "bar")),
            pod("non-evict", "n1", owners=None, labels={"foo": "bar"}, priorityClassName="system-cluster-critical")]
    record = run([node("n1", MAIN), node(SPARE), *pods], "RemovePodsViolatingInterPodAntiAffinity",
                 maxNoOfPodsToEvictPerNode=1)
    assert evicted(record) == ["p1"]


def test_anti_affinity_terminating_pods_are_not_evicted() -> None:
    # "No pod to evicted since all pod terminating"
    pods = [pod("p9", "n1", affinity=anti("foo", "bar"), labels={"foo": "bar"}, terminationGracePeriodSeconds=60),
            pod("p10", "n1", affinity=anti("foo", "bar"), labels={"foo": "bar"}, terminationGracePeriodSeconds=60)]

    def delete(c: Cluster) -> None:
        for name in ("p9", "p10"):
            c.api.delete("Pod", "default", name)
    record = run([node("n1", MAIN), node(SPARE), *pods], "RemovePodsViolatingInterPodAntiAffinity",
                 then=delete, then_at=0)
    assert record.attempts == []


def test_anti_affinity_with_node_fit_needs_room_elsewhere() -> None:
    # "Won't evict pods because only other node doesn't have enough resources"
    record = run([node("n1", MAIN), node("n4", cpu="2m"), *p1_to_p4()], "RemovePodsViolatingInterPodAntiAffinity",
                 evictor={"nodeFit": True})
    assert evicted(record) == []
    assert {a.result for a in record.attempts} == {"Filtered"}


def test_anti_affinity_across_nodes_of_one_topology_domain() -> None:
    # "Evict pod violating anti-affinity among different node (all pods have anti-affinity)"
    pods = [pod("p1", "n1", affinity=anti("foo", "bar")), pod("p11", "n5", labels={"foo": "bar"})]
    objs = [node("n1", MAIN), node("n5", MAIN), *pods]
    assert evicted(run(objs, "RemovePodsViolatingInterPodAntiAffinity")) == ["p1"]


def test_anti_affinity_needs_the_topology_key_on_both_nodes() -> None:
    pods = [pod("p1", "n1", affinity=anti("foo", "bar")), pod("p11", "n5", labels={"foo": "bar"})]
    assert evicted(run([node("n1", MAIN), node("n5"), *pods], "RemovePodsViolatingInterPodAntiAffinity")) == []


def test_anti_affinity_term_namespaces() -> None:
    # The term looks in its own namespace unless it lists others; namespaceSelector is not read.
    other = pod("other", "n1", "team-b", labels={"foo": "bar"})
    same_ns = pod("p1", "n1", affinity=anti("foo", "bar"))
    listed = pod("p2", "n1", affinity=anti("foo", "bar", namespaces=["team-b"]))
    by_selector = pod("p3", "n1", affinity=anti("foo", "bar", namespaceSelector={}))
    record = run([node("n1", MAIN), node(SPARE), other, same_ns, listed, by_selector],
                 "RemovePodsViolatingInterPodAntiAffinity")
    assert evicted(record) == ["p2"]


def test_anti_affinity_arguments_select_the_pods_looked_at() -> None:
    # Pods outside `namespaces` / `labelSelector` are neither evicted nor matched against.
    pods = [pod("p1", "n1", labels={"tier": "web"}, affinity=anti("foo", "bar")),
            pod("p2", "n1", labels={"foo": "bar"})]
    objs = [node("n1", MAIN), node(SPARE), *pods]
    plugin = "RemovePodsViolatingInterPodAntiAffinity"
    assert evicted(run(objs, plugin, {"labelSelector": {"matchLabels": {"tier": "web"}}})) == []
    assert evicted(run(objs, plugin, {"namespaces": {"include": ["default"]}})) == ["p1"]
    assert evicted(run(objs, plugin, {"namespaces": {"exclude": ["default"]}})) == []


def test_anti_affinity_validation() -> None:
    bad = {"namespaces": {"include": ["a"], "exclude": ["b"]},
           "labelSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}}
    found = plugin_errors("RemovePodsViolatingInterPodAntiAffinity", bad)
    assert found[0] == ("in profile p: RemovePodsViolatingInterPodAntiAffinity: "
                        "only one of Include/Exclude namespaces can be set")
    assert found[1].startswith("in profile p: RemovePodsViolatingInterPodAntiAffinity: "
                               "failed to get label selectors from strategy's params: ")


# ---- RemovePodsViolatingNodeAffinity (node_affinity_test.go) --------------------------------------

DESIRED = {"kubernetes.io/desiredNode": "yes"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
DESIRED_TERM = {"matchExpressions": [{"key": "kubernetes.io/desiredNode", "operator": "In", "values": ["yes"]}]}


def with_affinity(kind: str, node_name: str, **extra: Any) -> list[dict[str, Any]]:
    """Upstream's addPodsToNode: the pod with the affinity plus two plain pods."""
    if kind == REQUIRED:
        affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [DESIRED_TERM]}}}
    else:
        affinity = {"nodeAffinity": {PREFERRED: [{"weight": 10, "preference": DESIRED_TERM}]}}
    return [pod("pod-with-node-affinity", node_name, affinity=affinity, **extra),
            pod("pod1", node_name, **extra), pod("pod2", node_name, **extra)]


def drop_desired(c: Cluster) -> None:
    relabel("node-without-labels", {"kubernetes.io/desiredNode": None})(c)


def affinity_nodes(other: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The pods' node, labelled when they were bound and unlabelled by `drop_desired`, and another."""
    return [node("node-without-labels", DESIRED), other or node("node-with-labels", DESIRED)]


@pytest.mark.parametrize("kind", [REQUIRED, PREFERRED])
def test_node_affinity_pod_on_a_node_that_no_longer_matches_is_evicted(kind: str) -> None:
    # "Pod is scheduled on node without matching labels, another schedulable node available
    # [with better fit], should be evicted"
    record = run([*affinity_nodes(), *with_affinity(kind, "node-without-labels")], "RemovePodsViolatingNodeAffinity",
                 {"nodeAffinityType": [kind]}, then=drop_desired)
    assert evicted(record) == ["pod-with-node-affinity"]
    assert record.attempts[0].landing == "node-with-labels"


@pytest.mark.parametrize("kind", [REQUIRED, PREFERRED])
def test_node_affinity_pod_on_a_matching_node_stays(kind: str) -> None:
    # "Pod is correctly scheduled on node, no eviction expected"
    record = run([*affinity_nodes(), *with_affinity(kind, "node-with-labels")], "RemovePodsViolatingNodeAffinity",
                 {"nodeAffinityType": [kind]}, then=drop_desired)
    assert record.attempts == []


def test_node_affinity_unknown_type_does_nothing() -> None:
    # "Invalid Affinity type, should not evict any pods"
    record = run([*affinity_nodes(), *with_affinity(REQUIRED, "node-without-labels")],
                 "RemovePodsViolatingNodeAffinity",
                 {"nodeAffinityType": ["requiredDuringSchedulingRequiredDuringExecution"]}, then=drop_desired)
    assert record.attempts == []


@pytest.mark.parametrize("kind", [REQUIRED, PREFERRED])
@pytest.mark.parametrize(("limits", "expected"), [
    ({"maxNoOfPodsToEvictPerNode": 1}, ["pod-with-node-affinity"]),
    ({"maxNoOfPodsToEvictPerNode": 0}, []),
    ({"maxNoOfPodsToEvictPerNamespace": 1}, ["pod-with-node-affinity"]),
    ({"maxNoOfPodsToEvictPerNamespace": 0}, []),
    ({"maxNoOfPodsToEvictPerNamespace": 1, "maxNoOfPodsToEvictTotal": 0}, []),
], ids=["per-node-1", "per-node-0", "per-namespace-1", "per-namespace-0", "total-0"])
def test_node_affinity_limits(kind: str, limits: dict[str, int], expected: list[str]) -> None:
    record = run([*affinity_nodes(), *with_affinity(kind, "node-without-labels")], "RemovePodsViolatingNodeAffinity",
                 {"nodeAffinityType": [kind]}, then=drop_desired, **limits)
    assert evicted(record) == expected
    if not expected:
        assert [a.result for a in record.attempts] == ["LimitReached"]


@pytest.mark.parametrize("kind", [REQUIRED, PREFERRED])
def test_node_affinity_terminating_pod_is_not_evicted(kind: str) -> None:
    # "... no pod evicted since pod terminating"
    def drop_and_delete(c: Cluster) -> None:
        drop_desired(c)
        c.api.delete("Pod", "default", "pod-with-node-affinity")
    record = run([*affinity_nodes(), *with_affinity(kind, "node-without-labels", terminationGracePeriodSeconds=60)],
                 "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [kind]}, then=drop_and_delete)
    assert record.attempts == []


@pytest.mark.parametrize("kind", [REQUIRED, PREFERRED])
@pytest.mark.parametrize("node_fit", [True, False])
def test_node_affinity_only_matching_node_is_unschedulable(kind: str, node_fit: bool) -> None:
    # "Pod is scheduled on node without matching labels, but no node where pod fits is available,
    # should not evict". Upstream needs nodeFit for the preferred case only; the required case
    # already asks that the pod fit some node, and an unschedulable node is no fit.
    other = node("unschedulable-node-with-labels", DESIRED, unschedulable=True)
    record = run([*affinity_nodes(other), *with_affinity(kind, "node-without-labels")],
                 "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [kind]},
                 evictor={"nodeFit": node_fit}, then=drop_desired)
    assert evicted(record) == ([] if node_fit or kind == REQUIRED else ["pod-with-node-affinity"])


def test_node_affinity_node_selector_alone_is_not_checked() -> None:
    # Only pods with a required node affinity are looked at; a bare nodeSelector is not.
    objs = [*affinity_nodes(), pod("selector", "node-without-labels", nodeSelector=DESIRED)]
    record = run(objs, "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [REQUIRED]}, then=drop_desired)
    assert record.attempts == []


def test_node_affinity_required_checks_node_selector_too() -> None:
    # Once the pod has a required affinity, its nodeSelector is part of what must still match.
    affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}
    objs = [node("n1", {"zone": "a", "disk": "ssd"}), node("n2", {"zone": "b", "disk": "ssd"}),
            pod("p", "n1", affinity=affinity, nodeSelector={"disk": "ssd"})]
    record = run(objs, "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [REQUIRED]},
                 then=relabel("n1", {"disk": None}))
    assert evicted(record) == ["p"]


def weighted(*terms: tuple[int, str]) -> dict[str, Any]:
    return {"nodeAffinity": {PREFERRED: [
        {"weight": w, "preference": {"matchExpressions": [{"key": k, "operator": "Exists"}]}} for w, k in terms]}}


def test_node_affinity_preferred_needs_a_strictly_better_node() -> None:
    affinity = weighted((10, "a"), (20, "b"))
    objs = [node("n1", {"b": ""}), node("n2", {"a": ""}), node("n3", {"b": ""}),
            pod("on-best", "n1", affinity=affinity), pod("on-worse", "n2", affinity=affinity)]
    record = run(objs, "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [PREFERRED]})
    assert evicted(record) == ["on-worse"]


def test_node_affinity_preferred_best_node_need_not_have_room() -> None:
    # As upstream: the best weight is looked for on every node, the fit on any node (the pod's
    # own included), so a pod is evicted for a better node it cannot use.
    objs = [node("n1"), node("n2", {"a": ""}, cpu="50m"), pod("p", "n1", affinity=weighted((10, "a")))]
    record = run(objs, "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [PREFERRED]})
    assert evicted(record) == ["p"]
    assert record.attempts[0].landing == "n1"


def test_node_affinity_both_types_in_order() -> None:
    required = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [DESIRED_TERM]}}}
    objs = [node("n1", DESIRED), node("n2", DESIRED), node("n3"),
            pod("req", "n1", affinity=required), pod("pref", "n2", affinity=weighted((5, "a")))]

    def change(c: Cluster) -> None:
        relabel("n1", {"kubernetes.io/desiredNode": None})(c)
        relabel("n3", {"a": ""})(c)
    record = run(objs, "RemovePodsViolatingNodeAffinity", {"nodeAffinityType": [PREFERRED, REQUIRED]}, then=change)
    assert evicted(record) == ["pref", "req"]


def test_node_affinity_validation() -> None:
    # validation_test.go: "nil NodeAffinityType args and invalid namespaces args, expects error"
    found = plugin_errors("RemovePodsViolatingNodeAffinity", {"namespaces": {"include": ["a"], "exclude": ["b"]}})
    assert found == ["in profile p: RemovePodsViolatingNodeAffinity: nodeAffinityType needs to be set",
                     "in profile p: RemovePodsViolatingNodeAffinity: only one of Include/Exclude namespaces can be set"]
    assert plugin_errors("RemovePodsViolatingNodeAffinity", {"nodeAffinityType": []}) == [
        "in profile p: RemovePodsViolatingNodeAffinity: nodeAffinityType needs to be set"]


# ---- RemovePodsViolatingNodeTaints (node_taint_test.go) -------------------------------------------

def no_schedule(i: int, effect: str = "NoSchedule", key: str = "testTaint", value: str = "test") -> dict[str, str]:
    return {"key": f"{key}{i}", "value": f"{value}{i}", "effect": effect}


def tolerating(name: str, node_name: str, i: int = 1, key: str = "testTaint", value: str = "test",
               effect: str = "NoSchedule", **extra: Any) -> dict[str, Any]:
    return pod(name, node_name, tolerations=[{"key": f"{key}{i}", "value": f"{value}{i}", "effect": effect}], **extra)


N1 = node("n1", taints=[no_schedule(1)])
N2 = node("n2", taints=[no_schedule(1, key="testingTaint", value="testing")])
BOTH = node("n7", taints=[no_schedule(1), no_schedule(1, key="testingTaint", value="testing")])


def taint_run(objs: list[dict[str, Any]], args: dict[str, Any] | None = None, evictor: dict[str, Any] | None = None,
              **limits: Any) -> PassRecord:
    nodes = {o["metadata"]["name"] for o in objs if o["kind"] == "Node"}
    spare = [] if len(nodes) > 1 else [node(SPARE)]
    return run([*objs, *spare], "RemovePodsViolatingNodeTaints", args, evictor, **limits)


def test_taints_pods_not_tolerating_are_evicted() -> None:
    # "Pods not tolerating node taint should be evicted" and "Pods with tolerations but not
    # tolerating node taint should be evicted"
    objs = [N1, tolerating("p1", "n1"), pod("p2", "n1"), tolerating("p3", "n1"), tolerating("p4", "n1", key="testTaintX",
                                                                                            value="testX")]
    assert evicted(taint_run(objs)) == ["p2", "p4"]


@pytest.mark.parametrize("limits", [
    {"maxNoOfPodsToEvictPerNode": 2, "maxNoOfPodsToEvictTotal": 1},
    {"maxNoOfPodsToEvictPerNode": 1},
    {"maxNoOfPodsToEvictPerNamespace": 1},
], ids=["total", "per-node", "per-namespace"])
def test_taints_limits(limits: dict[str, int]) -> None:
    # "Only <maxNoOfPodsToEvictTotal|maxPodsToEvictPerNode|maxNoOfPodsToEvictPerNamespace> number
    # of Pods not tolerating node taint should be evicted"
    objs = [N1, tolerating("p1", "n1"), pod("p5", "n1"), pod("p6", "n1")]
    assert evicted(taint_run(objs, **limits)) == ["p5"]


def protected_on_n2() -> list[dict[str, Any]]:
    return [pod("p7", "n2", "kube-system", priorityClassName="system-cluster-critical"),
            pod("p8", "n2", owners=DS),
            pod("p9", "n2", volumes=[{"name": "v", "hostPath": {"path": "/somePath"}}]),
            pod("p10", "n2", annotations={"kubernetes.io/config.mirror": "x"})]


def test_taints_protected_pods_stay() -> None:
    # "Critical pods not tolerating node taint should not be evicted", and the same with
    # evictLocalStoragePods (p9 goes) and with a plain pod (p11 goes)
    assert evicted(taint_run([N2, *protected_on_n2()])) == []
    assert evicted(taint_run([N2, *protected_on_n2()], evictor={"evictLocalStoragePods": True})) == ["p9"]
    assert evicted(taint_run([N2, *protected_on_n2(), pod("p11", "n2")])) == ["p11"]


def test_taints_critical_pods_go_when_allowed() -> None:
    # "Critical and non critical pods, pods not tolerating node taint should be evicted even if
    # they are critical"
    objs = [N1, N2, pod("p2", "n1"), *[p for p in protected_on_n2() if p["metadata"]["name"] != "p8"]]
    assert evicted(taint_run(objs, evictor={"evictSystemCriticalPods": True})) == ["p2", "p7"]


@pytest.mark.parametrize("other", [
    N2,  # "Pod p2 doesn't tolerate taint on it's node, but also doesn't tolerate taints on other nodes"
    node("n4", unschedulable=True),  # "... but other nodes are unschedulable"
    node("n6", cpu="1m", taints=[no_schedule(1, "PreferNoSchedule")]),  # "... does not have enough resources"
], ids=["tainted", "unschedulable", "no-room"])
def test_taints_with_node_fit(other: dict[str, Any]) -> None:
    record = taint_run([N1, other, tolerating("p1", "n1"), pod("p2", "n1")], evictor={"nodeFit": True})
    assert evicted(record) == []
    assert [(a.pod, a.result) for a in record.attempts] == [("default/p2", "Filtered")]


def test_taints_prefer_no_schedule_only_when_included() -> None:
    # "Pods not tolerating PreferNoSchedule node taint should [not] be evicted when [not] enabled"
    objs = [node("n5", taints=[no_schedule(1, "PreferNoSchedule")]), tolerating("p13", "n5", 0, effect="PreferNoSchedule")]
    assert evicted(taint_run(objs)) == []
    assert evicted(taint_run(objs, {"includePreferNoSchedule": True})) == ["p13"]


def test_taints_no_execute_is_left_to_the_taint_manager() -> None:
    counts = RemovePodsViolatingNodeTaints.__new__(RemovePodsViolatingNodeTaints)
    counts.args = {"includePreferNoSchedule": True}
    keep = counts._taint_filter()
    assert [keep(no_schedule(1, effect)) for effect in ("NoSchedule", "PreferNoSchedule", "NoExecute")] == [
        True, True, False]


@pytest.mark.parametrize(("excluded", "expected"), [
    (["excludedTaint1", "testTaint1"], []),  # "Pods not tolerating excluded node taints (by key) ..."
    (["testTaint1=test1"], []),  # "... (by key and value) should not be evicted"
    (["testTaint1=test2"], ["p2"]),  # "The excluded taint matches the key of node1's taint, but does not match the value"
], ids=["key", "key-value", "other-value"])
def test_taints_excluded(excluded: list[str], expected: list[str]) -> None:
    assert evicted(taint_run([N1, pod("p2", "n1")], {"excludedTaints": excluded})) == expected


@pytest.mark.parametrize(("node_obj", "pods", "included", "expected"), [
    # "Pods tolerating included taints should not get evicted even with other taints present"
    (BOTH, [tolerating("p1", "n7")], ["testTaint1=test1"], []),
    # "Pods not tolerating not included taints should not get evicted"
    (N1, [tolerating("p1", "n1"), pod("p2", "n1"), tolerating("p4", "n1", key="testTaintX", value="testX")],
     ["testTaint2=test2"], []),
    # "Pods tolerating includedTaint should not get evicted. Pods not tolerating includedTaints should get evicted"
    (N1, [tolerating("p1", "n1"), pod("p2", "n1"), tolerating("p3", "n1")], ["testTaint1=test1"], ["p2"]),
    # "Pods not tolerating all taints are evicted when includedTaints is empty" (not given)
    (BOTH, [tolerating("p14", "n7"),
            pod("p15", "n7", tolerations=[no_schedule(1), no_schedule(1, key="testingTaint", value="testing")])],
     None, ["p14"]),
    # A given but empty list includes nothing (upstream tells it from an absent one).
    (BOTH, [tolerating("p14", "n7")], [], []),
    # By key alone
    (N1, [pod("p2", "n1")], ["testTaint1"], ["p2"]),
], ids=["other-taint-not-included", "not-included", "included", "absent", "empty", "by-key"])
def test_taints_included(node_obj: dict[str, Any], pods: list[dict[str, Any]], included: list[str] | None,
                         expected: list[str]) -> None:
    args = {} if included is None else {"includedTaints": included}
    assert evicted(taint_run([node_obj, *pods], args)) == expected


def test_taints_namespaces_and_label_selector() -> None:
    objs = [N1, pod("web", "n1", labels={"tier": "web"}), pod("db", "n1", "data")]
    assert evicted(taint_run(objs, {"labelSelector": {"matchLabels": {"tier": "web"}}})) == ["web"]
    assert evicted(taint_run(objs, {"namespaces": {"include": ["data"]}})) == ["db"]


def test_taints_validation() -> None:
    # validation_test.go: "invalid taint filters args, expects errors"
    assert plugin_errors("RemovePodsViolatingNodeTaints",
                         {"excludedTaints": ["do-not-evict"], "includedTaints": ["testTaint1=test1"]}) == [
        "in profile p: RemovePodsViolatingNodeTaints: either includedTaints or excludedTaints can be set, but not both"]
    found = plugin_errors("RemovePodsViolatingNodeTaints",
                          {"labelSelector": {"matchExpressions": [{"operator": "In"}]}})
    assert len(found) == 1 and "failed to get label selectors from strategy's params: " in found[0]
