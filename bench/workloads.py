"""scheduler_perf workloads (test/integration/scheduler_perf) at the reference's sizes.

Node template: 4 cpu, 32Gi, 110 pods; default pod: 100m / 500Mi. Initial pods are scheduled
first and not measured; throughput is measured pods over the wall time of scheduling them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


def node(i: int, zones: int = 0, zone_label: str | None = None) -> Obj:
    labels = {"kubernetes.io/hostname": f"node-{i}"}
    if zones:
        labels["topology.kubernetes.io/zone"] = f"zone-{i % zones}"
    if zone_label:
        labels["topology.kubernetes.io/zone"] = zone_label
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}}


def pod(name: str, cpu: str = "100m", memory: str = "500Mi", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **spec}}


def spreading_pod(name: str, when_unsatisfiable: str) -> Obj:
    """pod-with-(preferred-)topology-spreading.yaml: color=blue, zone maxSkew 5 over color=blue."""
    p = pod(name, topologySpreadConstraints=[{
        "maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": when_unsatisfiable,
        "labelSelector": {"matchLabels": {"color": "blue"}}}])
    p["metadata"]["labels"] = {"color": "blue"}
    return p


@dataclass
class Workload:
    name: str
    nodes: Callable[[], list[Obj]]
    initial: Callable[[], list[Obj]]
    measured: Callable[[], list[Obj]]
    threshold: float | None  # the real kube-scheduler's CI minimum, pods/s


NODE_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1", "zone2"]}]}]}}}



def anti_affinity_pod(name: str, namespace: str) -> Obj:
    """pod-with-pod-anti-affinity.yaml: color=green, no two green pods (sched-0/1) on one host."""
    p = pod(name)
    p["metadata"].update(namespace=namespace, labels={"color": "green"})
    p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname",
         "namespaces": ["sched-0", "sched-1"]}]}}
    return p


def priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def preemption_basic(name: str, nodes: int) -> Workload:
    """`nodes` nodes filled by four low-priority pods each, then one preemptor per node."""
    return Workload(
        name,
        lambda: [priority_class("high", 10)] + [node(i) for i in range(nodes)],
        lambda: [pod(f"init-{i}", cpu="900m") for i in range(4 * nodes)],
        lambda: [pod(f"pod-{i}", cpu="3000m", priorityClassName="high") for i in range(nodes)],
        None,
    )


def namespaces(*names: str) -> list[Obj]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names]


WORKLOADS = [
    Workload(
        "SchedulingBasic",
        lambda: [node(i) for i in range(5000)],
        lambda: [pod(f"init-{i}") for i in range(1000)],
        lambda: [pod(f"pod-{i}") for i in range(10000)],
        680,
    ),
    # Every node labelled zone1; every pod requires zone In [zone1, zone2] (pod-with-node-affinity.yaml).
    Workload(
        "SchedulingNodeAffinity",
        lambda: [node(i, zone_label="zone1") for i in range(5000)],
        lambda: [pod(f"init-{i}", affinity=NODE_AFFINITY) for i in range(5000)],
        lambda: [pod(f"pod-{i}", affinity=NODE_AFFINITY) for i in range(10000)],
        220,
    ),
    # 100 pods too large for any node stay pending while 10000 schedulable ones arrive.
    Workload(
        "Unschedulable",
        lambda: [node(i) for i in range(5000)],
        lambda: [pod(f"large-{i}", cpu="9") for i in range(100)],
        lambda: [pod(f"pod-{i}") for i in range(10000)],
        590,
    ),
    # affinity/performance-config.yaml SchedulingPodAntiAffinity 5000Nodes_2000Pods: initial pods
    # in sched-0, measured ones in sched-1, all green and mutually exclusive per host.
    Workload(
        "SchedulingPodAntiAffinity",
        lambda: [node(i) for i in range(5000)],
        lambda: namespaces("sched-0", "sched-1") + [anti_affinity_pod(f"init-{i}", "sched-0") for i in range(1000)],
        lambda: [anti_affinity_pod(f"pod-{i}", "sched-1") for i in range(2000)],
        60,
    ),
    # topology_spreading/performance-config.yaml 5000Nodes_5000Pods: nodes labelled across three
    # zones (labelNodePrepareStrategy; round-robin here, random there), default initial pods, then
    # color=blue pods spreading over zones with maxSkew 5 (pod-with-topology-spreading.yaml).
    Workload(
        "TopologySpreading",
        lambda: [node(i, zones=3) for i in range(5000)],
        lambda: [pod(f"init-{i}") for i in range(5000)],
        lambda: [spreading_pod(f"pod-{i}", "DoNotSchedule") for i in range(5000)],
        460,
    ),
    Workload(
        "PreferredTopologySpreading",
        lambda: [node(i, zones=3) for i in range(5000)],
        lambda: [pod(f"init-{i}") for i in range(5000)],
        lambda: [spreading_pod(f"pod-{i}", "ScheduleAnyway") for i in range(5000)],
        340,
    ),
    # misc/performance-config.yaml PreemptionBasic: 4 low-priority 900m pods fill each node's 4 cpu
    # (pod-low-priority.yaml), then every high-priority 3000m pod (pod-high-priority.yaml, priority
    # 10) must preempt three of them; the run lasts until the victims' 30 s grace periods end.
    preemption_basic("PreemptionBasic", 1000),
    # The same at half, twice and four times the size: each doubling should cost at most 2.2
    # times as much (the dry run tries 10% of the nodes, so a little more than linear is inherent).
    preemption_basic("PreemptionBasic-0.5x", 500),
    preemption_basic("PreemptionBasic-2x", 2000),
    preemption_basic("PreemptionBasic-4x", 4000),
]
