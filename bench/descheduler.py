"""Descheduler passes at cluster scale: the time of one pass over 5,000 nodes (and over 2,500,
to show how it grows).

After a scale-up, 1,000 hot nodes run 4 pods of 900m each (90% cpu) and 4,000 new nodes are
empty; 40 ReplicaSets own the pods, each with a budget of maxUnavailable 10%. One pass of
LowNodeUtilization (20%/50% cpu), RemoveDuplicates and the taint and affinity checks with
nodeFit, then the scheduler placing the replacements.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.workloads import Obj, node, pod
from kubesched.cluster.cluster import Cluster
from kubesched.descheduler.descheduler import Descheduler
from kubesched.descheduler.policy import load_policy

NODES, HOT, PODS_PER_HOT, SETS = 5000, 1000, 4, 40
POLICY = {
    "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
    "profiles": [{
        "name": "rebalance",
        "pluginConfig": [
            {"name": "DefaultEvictor", "args": {"nodeFit": True}},
            {"name": "LowNodeUtilization", "args": {"thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                                                    "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50}}},
            {"name": "RemoveDuplicates"},
            {"name": "RemovePodsViolatingNodeTaints"},
            {"name": "RemovePodsViolatingNodeAffinity",
             "args": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}},
        ],
        "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints", "RemovePodsViolatingNodeAffinity"]},
                    "balance": {"enabled": ["RemoveDuplicates", "LowNodeUtilization"]}},
    }],
}


@dataclass
class PassResult:
    nodes: int
    pods: int
    evicted: int
    refused: int
    pass_seconds: float
    replacements_seconds: float


def _objects(nodes: int, hot: int) -> list[Obj]:
    objs: list[Obj] = [node(i) for i in range(nodes)]
    for s in range(SETS):
        labels = {"app": f"app-{s}"}
        template = pod("t", cpu="900m", memory="1Gi")
        objs.append({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": f"app-{s}", "namespace": "default"},
                     "spec": {"replicas": hot * PODS_PER_HOT // SETS, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels}, "spec": template["spec"]}}})
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": f"app-{s}", "namespace": "default"},
                     "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": labels}}})
    for i in range(hot * PODS_PER_HOT):
        p = pod(f"p-{i}", cpu="900m", memory="1Gi", nodeName=f"node-{i // PODS_PER_HOT}")
        p["metadata"]["labels"] = {"app": f"app-{i % SETS}"}
        objs.append(p)
    return objs


def run_pass(scale: float = 1.0) -> PassResult:
    """One pass on the cluster scaled by `scale` (nodes and hot nodes; the sets stay 40). The pass
    is timed in process CPU, which other work on the machine disturbs less than the wall clock."""
    nodes, hot = int(NODES * scale), int(HOT * scale)
    cluster = Cluster()
    for obj in _objects(nodes, hot):
        cluster.create(obj)
    cluster.run()
    d = Descheduler(cluster.api, cluster.clock, load_policy(POLICY), [cluster.scheduler.config],
                    cluster.kubelets.usage, indexes=cluster.pod_indexes)
    d.start()
    start = time.process_time()
    record = d.run_pass()
    pass_seconds = time.process_time() - start
    start = time.perf_counter()
    cluster.run()
    return PassResult(nodes, hot * PODS_PER_HOT, record.evicted,
                      sum(1 for a in record.attempts if a.result == "Refused"),
                      pass_seconds, time.perf_counter() - start)
