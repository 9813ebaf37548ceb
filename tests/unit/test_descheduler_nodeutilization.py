"""LowNodeUtilization and HighNodeUtilization, pass by pass on a real cluster.

Most cases reproduce rows of upstream's lownodeutilization_test.go / highnodeutilization_test.go
(pkg/framework/plugins/nodeutilization): the same nodes (4000m cpu, 3000 bytes of memory, 9 or 10
pods), the same pods (BuildTestPod: cpu and memory requests, an owner), DefaultEvictor with
nodeFit, and the same number of evictions. The cluster runs its first descheduling pass at 0s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.descheduler.descheduler import PassRecord
from kubesched.descheduler.framework import Evictor, Handle
from kubesched.descheduler.plugins.nodeutilization import HighNodeUtilization, LowNodeUtilization
from kubesched.descheduler.policy import PolicyError, load_policy

Obj = dict[str, Any]
EXT = "example.com/foo"
LOW_HIGH = {"cpu": 30, "pods": 30}, {"cpu": 50, "pods": 50}


def node(name: str, cpu: int = 4000, pods: int = 10, *, memory: int = 3000, unschedulable: bool = False,
         labels: dict[str, str] | None = None, taints: list[Obj] | None = None, ext: int | None = None) -> Obj:
    allocatable: Obj = {"cpu": f"{cpu}m", "memory": str(memory), "pods": str(pods)}
    if ext is not None:
        allocatable[EXT] = str(ext)
    spec: Obj = {"unschedulable": True} if unschedulable else {}
    if taints:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"allocatable": allocatable}}


def pod(name: str, cpu: int, node_name: str, *, memory: int = 0, owner: str | None = "ReplicaSet",
        ns: str = "default", priority: str | None = None, best_effort: bool = False, usage_cpu: int | None = None,
        mirror: bool = False, ext: int | None = None, spec: Obj | None = None) -> Obj:
    """BuildTestPod: cpu and memory requests (an explicit 0 included), an owner unless told."""
    meta: Obj = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "owner", "uid": "owner-uid",
                                    "controller": True}]
    annotations = {}
    if mirror:
        annotations["kubernetes.io/config.mirror"] = "mirror"
    if usage_cpu is not None:
        annotations["sim.kubesched.io/usage-cpu"] = f"{usage_cpu}m"
    meta["annotations"] = annotations
    requests: Obj = {} if best_effort else {"cpu": f"{cpu}m", "memory": str(memory)}
    if ext is not None:
        requests[EXT] = str(ext)
    body: Obj = {"nodeName": node_name, "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
                 **(spec or {})}
    if priority:
        body["priorityClassName"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def policy(plugin: str, args: Obj, *, evictor: Obj | None = None, **top: Any) -> Obj:
    """A one-plugin policy; a plugin reading actual usage gets the metrics provider it needs."""
    if "metricsUtilization" in args:
        top.setdefault("metricsProviders", [{"source": "KubernetesMetrics"}])
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **top, "profiles": [
        {"name": "p", "pluginConfig": [{"name": "DefaultEvictor", "args": {"nodeFit": True} if evictor is None else evictor},
                                       {"name": plugin, "args": args}],
         "plugins": {"balance": {"enabled": [plugin]}}}]}


def cluster_of(objects: Iterable[Obj], plugin: str, args: Obj, **kw: Any) -> Cluster:
    cluster = Cluster(descheduler_policy=load_policy(policy(plugin, args, **kw)))
    for obj in objects:
        assert cluster.create(obj) is not None, cluster.recorder.rejected
    return cluster


def first_pass(objects: Iterable[Obj], plugin: str, args: Obj, **kw: Any) -> PassRecord:
    cluster = cluster_of(objects, plugin, args, **kw)
    cluster.run(0)
    assert cluster.descheduler is not None
    return cluster.recorder.passes[0]


def evicted(record: PassRecord) -> list[str]:
    return [a.pod.split("/")[1] for a in record.attempts if a.result == "Evicted"]


def lnu(thresholds: Obj, targets: Obj, **extra: Any) -> Obj:
    return {"thresholds": thresholds, "targetThresholds": targets, **extra}


def three_nodes(n1_pods: int = 9) -> list[Obj]:
    return [node("n1", pods=n1_pods), node("n2"), node("n3", unschedulable=True)]


def unevictable_n1(cpu: int = 400, **kw: Any) -> list[Obj]:
    """p6-p8 of upstream's tables: a DaemonSet pod, a mirror pod, a system-critical pod."""
    return [pod("p6", cpu, "n1", owner="DaemonSet", **kw), pod("p7", cpu, "n1", mirror=True, **kw),
            pod("p8", cpu, "n1", ns="kube-system", priority="system-cluster-critical", **kw)]


def five_and_p9(**kw: Any) -> list[Obj]:
    return [*(pod(f"p{i}", 400, "n1", **kw) for i in range(1, 6)), *unevictable_n1(), pod("p9", 400, "n2", **kw)]


# ---- LowNodeUtilization: upstream's table ------------------------------------------------------

def test_no_evictable_pods() -> None:
    pods = [*(pod(f"p{i}", 400, "n1", owner="DaemonSet") for i in range(1, 5)), pod("p5", 400, "n1", mirror=True),
            pod("p6", 400, "n1", ns="kube-system", priority="system-cluster-critical"), pod("p9", 400, "n2")]
    assert evicted(first_pass([*three_nodes(), *pods], "LowNodeUtilization", lnu(*LOW_HIGH))) == []


def test_without_priorities_stops_when_the_node_is_no_longer_over_its_target() -> None:
    # n1: 8 pods, 3200m of 4000m (80%), 8 of 9 pods; n2: 10%, 10%. n2 may take up to 2000m and 5 pods:
    # 1600m and 4 pods are left; after 4 evictions n1 is at 1600m and 4 pods, n2's pod room is spent.
    record = first_pass([*three_nodes(), *five_and_p9()], "LowNodeUtilization", lnu(*LOW_HIGH))
    assert evicted(record) == ["p1", "p2", "p3", "p4"]
    assert all(a.strategy == "LowNodeUtilization" for a in record.attempts)


def test_with_actual_usage_the_usage_is_what_moves() -> None:
    # The same with metrics (upstream: 4 evicted with metrics enabled): each pod uses 401m.
    args = lnu(*LOW_HIGH, metricsUtilization={"source": "KubernetesMetrics"})
    record = first_pass([*three_nodes(), *five_and_p9(usage_cpu=401)], "LowNodeUtilization", args)
    assert evicted(record) == ["p1", "p2", "p3", "p4"]


def test_excluded_namespaces_are_counted_but_not_evicted() -> None:
    pods = [*(pod(f"p{i}", 400, "n1", ns="namespace1") for i in range(1, 6)), *unevictable_n1(), pod("p9", 400, "n2")]
    args = lnu(*LOW_HIGH, evictableNamespaces={"exclude": ["namespace1"]})
    record = first_pass([*three_nodes(), *pods], "LowNodeUtilization", args)
    assert evicted(record) == [] and record.attempts == []


def test_lowest_priority_goes_first() -> None:
    pods = [*(pod(f"p{i}", 400, "n1", priority="high") for i in range(1, 5)), pod("p5", 400, "n1", priority="low"),
            *unevictable_n1(), pod("p9", 400, "n2")]
    objects = [priority_class("low", 0), priority_class("high", 10000), *three_nodes(), *pods]
    assert evicted(first_pass(objects, "LowNodeUtilization", lnu(*LOW_HIGH))) == ["p5", "p1", "p2", "p3"]


def test_best_effort_pods_go_before_burstable_ones() -> None:
    pods = [pod("p1", 400, "n1", best_effort=True), pod("p2", 400, "n1", best_effort=True), pod("p3", 400, "n1"),
            pod("p4", 400, "n1", best_effort=True), pod("p5", 400, "n1", best_effort=True), *unevictable_n1(),
            pod("p9", 400, "n2")]
    assert sorted(evicted(first_pass([*three_nodes(), *pods], "LowNodeUtilization", lnu(*LOW_HIGH)))) == \
        ["p1", "p2", "p4", "p5"]


def test_extended_resource_room_limits_the_evictions() -> None:
    # n1: 8 pods, 8 units; n2 may hold 4 of its 8 units (50%) and uses 1: 3 evictions, though its
    # room for pods (5 - 1) would allow 4.
    nodes = [node("n1", pods=9, ext=8), node("n2", ext=8), node("n3", unschedulable=True)]
    pods = [*(pod(f"p{i}", 0, "n1", ext=1) for i in range(1, 6)), pod("p6", 0, "n1", ext=1, owner="Job"),
            pod("p7", 0, "n1", ext=1, mirror=True),
            pod("p8", 0, "n1", ext=1, ns="kube-system", priority="system-cluster-critical"), pod("p9", 0, "n2", ext=1)]
    args = lnu({"pods": 30, EXT: 30}, {"pods": 50, EXT: 50})
    assert len(evicted(first_pass([*nodes, *pods], "LowNodeUtilization", args))) == 3


def test_extended_resource_absent_from_the_destination_means_no_room() -> None:
    nodes = [node("n1", pods=9, ext=8), node("n2"), node("n3", unschedulable=True)]
    pods = [pod("p1", 0, "n1", ext=1), pod("p9", 0, "n2")]
    args = lnu({"pods": 30, EXT: 30}, {"pods": 50, EXT: 50})
    assert evicted(first_pass([*nodes, *pods], "LowNodeUtilization", args)) == []


def test_extended_resource_with_metrics_fails_the_snapshot() -> None:
    """The metrics API reports cpu and memory only (upstream: 0 evictions with metrics)."""
    args = lnu({"pods": 30, EXT: 30}, {"pods": 50, EXT: 50}, metricsUtilization={"source": "KubernetesMetrics"})
    cluster = cluster_of([node("n1", pods=9, ext=8), node("n2", ext=8), *(pod(f"p{i}", 0, "n1", ext=1) for i in range(6)),
                          pod("p9", 0, "n2", ext=1)], "LowNodeUtilization", args)
    cluster.run(0)
    assert cluster.descheduler is not None and evicted(cluster.recorder.passes[0]) == []
    plugin = LowNodeUtilization(handle_of(cluster), args)
    status = plugin.balance([cluster.store.get("Node", "", n) for n in ("n1", "n2")])
    assert status is not None and status.reason == f'error getting node usage: unable to find "{EXT}" resource for collected "n1" node metric'


def test_an_unschedulable_node_is_never_a_destination() -> None:
    """Without nodeFit, and with pods tolerating the cordon's taint, so that only the plugin's
    classification keeps the pods."""
    nodes = [node("n1", pods=9), node("n2", unschedulable=True)]
    anywhere = {"tolerations": [{"operator": "Exists"}]}
    pods = [*(pod(f"p{i}", 400, "n1", spec=anywhere) for i in range(1, 6)), *unevictable_n1()]
    assert evicted(first_pass([*nodes, *pods], "LowNodeUtilization", lnu(*LOW_HIGH), evictor={})) == []
    nodes[1]["spec"] = {}
    assert len(evicted(first_pass([*nodes, *pods], "LowNodeUtilization", lnu(*LOW_HIGH), evictor={}))) == 4


def test_node_fit_keeps_pods_whose_selector_no_destination_matches() -> None:
    nodes = [node("n1", pods=9), node("n2", labels={"datacenter": "east"})]
    west = {"nodeSelector": {"datacenter": "west"}}
    pods = [*(pod(f"p{i}", 400, "n1") for i in range(1, 4)), pod("p4", 400, "n1", spec=west),
            pod("p5", 400, "n1", spec=west), *unevictable_n1(), pod("p9", 0, "n2")]
    record = first_pass([*nodes, *pods], "LowNodeUtilization", lnu(*LOW_HIGH))
    assert evicted(record) == ["p1", "p2", "p3"]
    assert [(a.pod, a.result) for a in record.attempts if a.result != "Evicted"] == \
        [("default/p4", "Filtered"), ("default/p5", "Filtered")]


@pytest.mark.parametrize(("metrics", "expected"), [(False, ["p1", "p2", "p3"]), (True, ["p1", "p2"])])
def test_requests_and_usage_decide_differently(metrics: bool, expected: list[str]) -> None:
    """Upstream "without priorities different evictions for requested and actual resources":
    by requests 3 evictions; the pods use 801m, so n2's 2000m room takes only 2 with metrics."""
    nodes = [node("n1", pods=9), node("n2", labels={"datacenter": "east"})]
    affinity = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "datacenter", "operator": "In", "values": ["west"]}]}]}}}}
    pods = [*(pod(f"p{i}", 400, "n1", usage_cpu=801) for i in range(1, 4)), pod("p4", 400, "n1", spec=affinity),
            pod("p5", 400, "n1", spec=affinity), *unevictable_n1(), pod("p9", 0, "n2", usage_cpu=401)]
    args = lnu(*LOW_HIGH, **({"metricsUtilization": {"source": "KubernetesMetrics"}} if metrics else {}))
    assert evicted(first_pass([*nodes, *pods], "LowNodeUtilization", args)) == expected


def test_deviation_thresholds_are_around_the_average() -> None:
    # Averages: cpu (80+10+0)/3 = 30%, pods (88.9+10+0)/3 = 33%. Under: at most 25% / 28%;
    # target: 35% / 38%, so n2 may take 1400m and 3 pods: it has 1, 2 evictions use up the pods.
    args = lnu({"cpu": 5, "pods": 5}, {"cpu": 5, "pods": 5}, useDeviationThresholds=True)
    assert evicted(first_pass([*three_nodes(), *five_and_p9()], "LowNodeUtilization", args)) == ["p1", "p2"]


def test_deviation_thresholds_are_clamped_to_0_100() -> None:
    # Averages 30% / 33%; a deviation of 50 gives an under threshold of 0 (clamped): only the empty
    # n3 would be under, and it is unschedulable: nothing to do.
    args = lnu({"cpu": 50, "pods": 50}, {"cpu": 10, "pods": 10}, useDeviationThresholds=True)
    assert evicted(first_pass([*three_nodes(), *five_and_p9()], "LowNodeUtilization", args)) == []


def test_number_of_nodes_needs_more_under_utilised_nodes() -> None:
    args = lnu(*LOW_HIGH, numberOfNodes=1)
    assert evicted(first_pass([*three_nodes(), *five_and_p9()], "LowNodeUtilization", args)) == []


def test_eviction_limits_node_caps_each_node() -> None:
    args = lnu(*LOW_HIGH, evictionLimits={"node": 2})
    assert evicted(first_pass([*three_nodes(), *five_and_p9()], "LowNodeUtilization", args)) == ["p1", "p2"]


def test_policy_limits_per_node_and_total() -> None:
    nodes = [*three_nodes(), node("n4", pods=9)]
    pods = [*five_and_p9(), *(pod(f"q{i}", 400, "n4") for i in range(1, 9))]
    per_node = first_pass([*nodes, *pods], "LowNodeUtilization", lnu(*LOW_HIGH), maxNoOfPodsToEvictPerNode=1)
    assert evicted(per_node) == ["p1", "q1"]  # the limit moves on to the next node
    total = first_pass([*nodes, *pods], "LowNodeUtilization", lnu(*LOW_HIGH), maxNoOfPodsToEvictTotal=3)
    assert evicted(total) == ["p1", "p2", "p3"]
    assert [a.result for a in total.attempts][-1] == "LimitReached"


def test_a_refused_eviction_only_skips_that_pod() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep"},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"keep": "yes"}}}}
    pods = five_and_p9()
    pods[0]["metadata"]["labels"] = {"keep": "yes"}
    record = first_pass([*three_nodes(), pdb, *pods], "LowNodeUtilization", lnu(*LOW_HIGH))
    assert record.attempts[0].result == "Refused"
    assert evicted(record) == ["p2", "p3", "p4", "p5"]


def test_taints_of_the_destinations() -> None:
    """TestLowNodeUtilizationWithTaints: only a pod tolerating the under-utilised node's taint moves."""
    taint = [{"key": "key", "value": "value", "effect": "NoSchedule"}]
    nodes = [node("n1", 2000), node("n3", 1000, taints=taint)]
    pods = [*(pod(f"pod-{i}-n1", 200, "n1") for i in range(1, 8)), pod("pod-9-n3", 200, "n3")]
    tolerant = pod("tolerate-pod", 200, "n1", spec={"tolerations": [{"key": "key", "value": "value"}]})
    args = lnu({"pods": 20}, {"pods": 70})
    assert evicted(first_pass([*nodes, *pods, pod("pod-8-n1", 200, "n1")], "LowNodeUtilization", args)) == []
    assert evicted(first_pass([*nodes, *pods, tolerant], "LowNodeUtilization", args)) == ["tolerate-pod"]


def test_an_over_utilised_unschedulable_node_is_still_a_source() -> None:
    nodes = [node("n1", pods=9, unschedulable=True), node("n2")]
    assert evicted(first_pass([*nodes, *five_and_p9()], "LowNodeUtilization", lnu(*LOW_HIGH))) == \
        ["p1", "p2", "p3", "p4"]


def test_only_thresholding_resources_spares_pods_without_such_requests() -> None:
    pods = [pod("p1", 400, "n1", best_effort=True), *(pod(f"p{i}", 400, "n1") for i in range(2, 6)),
            *unevictable_n1(), pod("p9", 400, "n2")]
    args = lnu({"cpu": 30}, {"cpu": 50}, evictionModes=["OnlyThresholdingResources"])
    assert "p1" not in evicted(first_pass([*three_nodes(), *pods], "LowNodeUtilization", args))


# ---- HighNodeUtilization: upstream's table -----------------------------------------------------

def hnu(thresholds: Obj, **extra: Any) -> Obj:
    return {"thresholds": thresholds, **extra}


def test_high_no_node_below_the_thresholds() -> None:
    nodes = [node("n1"), node("n2"), node("n3")]
    pods = [pod(f"p{i}", 400, f"n{(i - 1) // 3 + 1}") for i in range(1, 10)]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 20, "pods": 20}))) == []


def test_high_no_node_to_take_the_pods() -> None:
    nodes = [node("n1"), node("n2"), node("n3", unschedulable=True)]
    pods = [pod("p1", 400, "n1"), pod("p2", 400, "n2"), *(pod(f"p{i}", 400, "n3") for i in range(3, 6))]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 20, "pods": 20}))) == []


def test_high_empties_every_under_utilised_node_emptiest_first() -> None:
    # n1 (20%) and the cordoned n3 (10%) are under 30%; n2 (40%) takes their pods. n3 goes first.
    nodes = [node("n1"), node("n2"), node("n3", unschedulable=True)]
    pods = [pod("p1", 400, "n1"), pod("p2", 400, "n1", ns="kube-system", priority="system-cluster-critical"),
            *(pod(f"p{i}", 400, "n2") for i in range(3, 7)), pod("p7", 400, "n3")]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 30, "pods": 30}))) == ["p7", "p1"]


def test_high_stops_when_the_destinations_are_full() -> None:
    nodes = [node("n1", 2000), node("n2", 2000), node("n3", 2000, unschedulable=True)]
    pods = [pod("p1", 400, "n1"), *(pod(f"p{i}", 400, "n2") for i in range(2, 6)), pod("p6", 400, "n3")]
    assert len(evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 30, "pods": 30})))) == 1


def test_high_with_priorities() -> None:
    nodes = [node("n1"), node("n2", 2000), node("n3", 2000, unschedulable=True)]
    pods = [pod("p1", 400, "n1", priority="low"), pod("p2", 400, "n1", priority="high"),
            *(pod(f"p{i}", 400, "n2") for i in range(5, 9)), pod("p9", 400, "n3", owner="DaemonSet")]
    objects = [priority_class("low", 0), priority_class("high", 10000), *nodes, *pods]
    assert evicted(first_pass(objects, "HighNodeUtilization", hnu({"cpu": 30}))) == ["p1"]


def test_high_with_extended_resource() -> None:
    nodes = [node("n1", ext=8), node("n2", ext=8), node("n3", unschedulable=True)]
    pods = [pod("p1", 100, "n1", ext=1), pod("p2", 100, "n1", ext=1), *(pod(f"p{i}", 500, "n2", ext=1) for i in range(3, 7))]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 20, EXT: 40}))) == ["p1", "p2"]


def test_high_extended_resource_missing_on_the_destination() -> None:
    nodes = [node("n1", ext=8), node("n2"), node("n3", unschedulable=True)]
    pods = [pod("p1", 100, "n1", ext=1), pod("p2", 100, "n1", ext=1), *(pod(f"p{i}", 500, "n2") for i in range(3, 7))]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 40, EXT: 40}))) == []


@pytest.mark.parametrize(("labelled", "expected"), [(True, ["p5"]), (False, [])])
def test_high_node_fit(labelled: bool, expected: list[str]) -> None:
    nodes = [node("n1", pods=9, labels={"datacenter": "west"} if labelled else {}), node("n2")]
    pods = [*(pod(f"p{i}", 400, "n1") for i in range(1, 4)), pod("p4", 400, "n1", owner="DaemonSet"),
            pod("p5", 400, "n2", spec={"nodeSelector": {"datacenter": "west"}})]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 30, "pods": 30}))) == expected


def test_high_not_enough_memory_on_the_destination() -> None:
    nodes = [node("n1", pods=9, memory=200), node("n2")]
    pods = [*(pod(f"p{i}", 400, "n1", memory=50) for i in range(1, 4)), pod("p4", 400, "n1", memory=50, owner="DaemonSet"),
            pod("p5", 400, "n2", memory=100)]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 30, "pods": 30}))) == []


def test_high_taints() -> None:
    """TestHighNodeUtilizationWithTaints: a pod only leaves for a node whose taints it tolerates."""
    taint = [{"key": "key", "value": "value", "effect": "NoSchedule"}]
    nodes = [node("n1", 1000), node("n3", 1000, taints=taint)]
    tolerant = pod("tolerate-pod", 200, "n1", spec={"tolerations": [{"key": "key", "value": "value"}]})
    pods = [pod("pod-1-n1", 100, "n1"), tolerant, pod("pod-9-n3", 500, "n3")]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({"cpu": 40}),
                              evictor={}, maxNoOfPodsToEvictPerNode=1)) == ["tolerate-pod"]


def test_high_only_thresholding_resources() -> None:
    nodes = [node("n1", ext=8), node("n2", ext=8)]
    pods = [pod("p1", 100, "n1"), pod("p2", 100, "n1", ext=1), *(pod(f"p{i}", 500, "n2", ext=1) for i in range(3, 7))]
    args = hnu({EXT: 40}, evictionModes=["OnlyThresholdingResources"])
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", args)) == ["p2"]
    assert evicted(first_pass([*nodes, *pods], "HighNodeUtilization", hnu({EXT: 40}))) == ["p1", "p2"]


# ---- construction and validation ----------------------------------------------------------------

def handle_of(cluster: Cluster, with_metrics: bool = True) -> Handle:
    d = cluster.descheduler
    assert d is not None
    return Handle(cluster.api, d.pods_by_node, Evictor("p", d.pod_evictor), d.placement,
                  metrics=cluster.kubelets.usage if with_metrics else None)


@pytest.mark.parametrize(("metrics", "message"), [
    ({"source": "KubernetesMetrics"}, "metrics client not initialized"),
    ({"metricsServer": True}, "metrics client not initialized"),
    ({"source": "Datadog"}, "unrecognized metrics source"),
    ({}, "metrics source is empty"),
])
def test_metrics_sources_it_cannot_serve_fail_the_profile(metrics: Obj, message: str) -> None:
    cluster = cluster_of([], "LowNodeUtilization", lnu(*LOW_HIGH))
    with pytest.raises(LookupError, match=message):
        LowNodeUtilization(handle_of(cluster, with_metrics=False), lnu(*LOW_HIGH, metricsUtilization=metrics))


TWO = {"cpu": 20, "memory": 20}
EIGHTY = {"cpu": 80, "memory": 80}


@pytest.mark.parametrize(("args", "message"), [
    (lnu({"cpu": 20, "memory": 120}, EIGHTY), "thresholds config is not valid: memory threshold not in [0, 100] range"),
    (lnu(TWO, {"cpu": -1, "memory": 80}), "targetThresholds config is not valid: cpu threshold not in [0, 100] range"),
    (lnu({}, EIGHTY), "thresholds config is not valid: no resource threshold is configured"),
    (lnu(TWO, {**EIGHTY, "pods": 80}), "thresholds and targetThresholds configured different resources"),
    (lnu(TWO, {"cpu": 80, "pods": 80}), "thresholds and targetThresholds configured different resources"),
    (lnu({**TWO, EXT: 20}, EIGHTY), "thresholds and targetThresholds configured different resources"),
    (lnu({"cpu": 90, "memory": 20}, EIGHTY), "thresholds' cpu percentage is greater than targetThresholds'"),
    (lnu({**TWO, EXT: 90}, {**EIGHTY, EXT: 20}), f"thresholds' {EXT} percentage is greater than targetThresholds'"),
    (lnu(TWO, EIGHTY, metricsUtilization={"metricsServer": True, "source": "KubernetesMetrics"}),
     'it is not allowed to set both "KubernetesMetrics" source and metricsServer'),
    (lnu(TWO, EIGHTY, metricsUtilization={"source": "Prometheus"}),
     'prometheus query is required when metrics source is set to "Prometheus"'),
    (lnu(TWO, EIGHTY, metricsUtilization={"source": "KubernetesMetrics", "prometheus": {}}),
     'prometheus configuration is not allowed to set when source is set to "KubernetesMetrics"'),
    (lnu(TWO, EIGHTY, evictableNamespaces={"include": ["a"]}),
     "only Exclude namespaces can be set, inclusion is not supported"),
    (lnu(TWO, EIGHTY, evictionModes=["Sometimes"]), "invalid eviction mode Sometimes"),
    (lnu(TWO, EIGHTY, evictionLimits={"node": -1}), "evictionLimits.node: must be a non-negative integer, got -1"),
    (lnu(TWO, EIGHTY, evictionLimits={"nodes": 1}), 'unknown field "evictionLimits.nodes"'),
])
def test_low_validation(args: Obj, message: str) -> None:
    assert LowNodeUtilization.validate(args) == [message]


def test_low_validation_accepts_upstream_examples() -> None:
    assert LowNodeUtilization.validate(lnu(TWO, EIGHTY)) == []
    assert LowNodeUtilization.validate(lnu({**TWO, EXT: 20}, {**EIGHTY, EXT: 80})) == []
    assert LowNodeUtilization.validate(lnu({"cpu": 10}, {"cpu": 5}, useDeviationThresholds=True)) == []


@pytest.mark.parametrize(("args", "message"), [
    (hnu({}), "no resource threshold is configured"),
    (hnu({"cpu": 101}), "cpu threshold not in [0, 100] range"),
    (hnu(TWO, evictableNamespaces={"include": ["a"]}), "only Exclude namespaces can be set, inclusion is not supported"),
    (hnu(TWO, evictionModes=["Never"]), "invalid eviction mode Never"),
])
def test_high_validation(args: Obj, message: str) -> None:
    assert HighNodeUtilization.validate(args) == [message]


def test_policy_reports_the_plugin_and_profile() -> None:
    with pytest.raises(PolicyError) as e:
        load_policy(policy("LowNodeUtilization", lnu(TWO, {"cpu": 80})))
    assert e.value.errors == ["in profile p: LowNodeUtilization: thresholds and targetThresholds configured "
                              "different resources"]
    with pytest.raises(PolicyError) as e:
        load_policy(policy("HighNodeUtilization", {"thresholds": TWO, "targetThresholds": TWO}))
    assert e.value.errors == ['in profile p: HighNodeUtilization: unknown field "targetThresholds"']


# ---- properties ---------------------------------------------------------------------------------

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def layouts(draw: Any) -> Obj:
    """Nodes of 2, 4 or 8 cpu (some cordoned), each with pods of 100m-1000m that fit."""
    nodes = []
    for i in range(draw(st.integers(2, 5))):
        cpu = draw(st.sampled_from([2000, 4000, 8000]))
        requests, left = [], cpu
        for r in draw(st.lists(st.sampled_from([100, 250, 500, 1000]), max_size=10)):
            if r <= left:
                requests.append(r)
                left -= r
        nodes.append({"name": f"n{i}", "cpu": cpu, "pods": 12, "cordoned": draw(st.integers(0, 5)) == 0,
                      "requests": requests})
    low = draw(st.integers(0, 60))
    return {"nodes": nodes, "low": low, "high": draw(st.integers(low, 100))}


def layout_objects(layout: Obj) -> list[Obj]:
    objects = [node(n["name"], n["cpu"], n["pods"], memory=10**9, unschedulable=n["cordoned"]) for n in layout["nodes"]]
    for n in layout["nodes"]:
        objects += [pod(f"{n['name']}-p{j}", r, n["name"]) for j, r in enumerate(n["requests"])]
    return objects


@SETTINGS
@given(layouts())
def test_low_only_drains_over_utilised_nodes_within_the_room_of_the_under_utilised(layout: Obj) -> None:
    low, high = layout["low"], layout["high"]
    args = lnu({"cpu": low, "pods": low}, {"cpu": high, "pods": high})
    record = first_pass(layout_objects(layout), "LowNodeUtilization", args, evictor={})
    by_name = {n["name"]: n for n in layout["nodes"]}
    requests = {f"{n['name']}-p{j}": r for n in layout["nodes"] for j, r in enumerate(n["requests"])}

    def pct(n: Obj) -> tuple[float, float]:
        return sum(n["requests"]) / n["cpu"] * 100, len(n["requests"]) / n["pods"] * 100

    over = {name for name, n in by_name.items() if max(pct(n)) > high}
    under = [n for n in by_name.values() if not n["cordoned"] and max(pct(n)) <= low]
    room_cpu = sum(int(high * 0.01 * n["cpu"]) - sum(n["requests"]) for n in under)
    room_pods = sum(int(high * 0.01 * n["pods"]) - len(n["requests"]) for n in under)
    moved = evicted(record)
    if not under or not over or len(under) == len(by_name):
        assert moved == []
    left = {name: [sum(n["requests"]), len(n["requests"])] for name, n in by_name.items()}
    for name in moved:
        source = name.split("-")[0]
        assert source in over, f"{name} left {source}, which is not above {high}%"
        # Before each eviction the budget had room, and the source was still above its target.
        assert room_cpu > 0 and room_pods > 0
        cpu, count = left[source]
        assert cpu > int(high * 0.01 * by_name[source]["cpu"]) or count > int(high * 0.01 * by_name[source]["pods"])
        room_cpu -= requests[name]
        room_pods -= 1
        left[source] = [cpu - requests[name], count - 1]


@SETTINGS
@given(layouts())
def test_high_only_drains_nodes_at_or_below_its_thresholds(layout: Obj) -> None:
    low = layout["low"]
    record = first_pass(layout_objects(layout), "HighNodeUtilization", hnu({"cpu": low}), evictor={})
    by_name = {n["name"]: n for n in layout["nodes"]}
    for name in evicted(record):
        n = by_name[name.split("-")[0]]
        assert sum(n["requests"]) / n["cpu"] * 100 <= low
