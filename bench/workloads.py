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


@dataclass
class Workload:
    name: str
    nodes: Callable[[], list[Obj]]
    initial: Callable[[], list[Obj]]
    measured: Callable[[], list[Obj]]
    threshold: float | None  # the real kube-scheduler's CI minimum, pods/s


NODE_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1", "zone2"]}]}]}}}

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
]
