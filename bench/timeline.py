"""A day of a 1,000-node cluster: 24 hours of virtual time through `kubesched simulate`.

Ten Deployments of 100 replicas run all day; twelve CronJobs start a Job of ten five-minute pods
every quarter hour (11,520 pods over the day, each Job deleted once three newer ones have
completed); the descheduler runs LowNodeUtilization and RemoveDuplicates every ten minutes; and on
twenty nodes a system-critical pod keeps memory under the kubelets' soft threshold, so those
kubelets report MemoryPressure all day while their 10 s eviction loop finds nothing to evict. The
other 980 kubelets have nothing to watch: what matters is that time passing where nothing
changes costs next to nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table

from bench.child import ChildRun, simulate
from bench.workloads import Obj, node, pod

NODES, DEPLOYMENTS, REPLICAS, CRONJOBS, PARALLELISM, PRESSED = 1000, 10, 100, 12, 10, 20
KUBELET = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
           "evictionSoft": {"memory.available": "2Gi"}, "evictionSoftGracePeriod": {"memory.available": "5m"}}
POLICY = {
    "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "deschedulingInterval": "10m",
    "profiles": [{
        "name": "rebalance",
        "pluginConfig": [
            {"name": "DefaultEvictor", "args": {"nodeFit": True}},
            {"name": "LowNodeUtilization", "args": {"thresholds": {"cpu": 10, "memory": 10, "pods": 10},
                                                    "targetThresholds": {"cpu": 40, "memory": 40, "pods": 40}}},
            {"name": "RemoveDuplicates"},
        ],
        "plugins": {"balance": {"enabled": ["RemoveDuplicates", "LowNodeUtilization"]}},
    }],
}


def _deployment(i: int) -> Obj:
    labels = {"app": f"web-{i}"}
    template = pod("t", cpu="250m", memory="1Gi")
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"web-{i}", "namespace": "default"},
            "spec": {"replicas": REPLICAS, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": template["spec"]}}}


def _cronjob(i: int) -> Obj:
    template = pod("t", cpu="500m", memory="2Gi", restartPolicy="Never")
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"batch-{i}", "namespace": "default"},
            "spec": {"schedule": "*/15 * * * *", "jobTemplate": {"spec": {
                "parallelism": PARALLELISM, "completions": PARALLELISM,
                "template": {"metadata": {"annotations": {"sim.kubesched.io/duration": "5m"}},
                             "spec": template["spec"]}}}}}


def _pressing(i: int) -> Obj:
    """A system-critical pod using all but 1Gi of its node's 32Gi: under the soft threshold for
    good, and never the kubelet's to evict."""
    p = pod(f"hog-{i}", cpu="100m", memory="100Mi", nodeName=f"node-{i * (NODES // PRESSED)}",
            priorityClassName="system-node-critical")
    p["metadata"].update(namespace="kube-system", annotations={"sim.kubesched.io/usage-memory": "31Gi"})
    return p


def objects() -> list[Obj]:
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "a-day"},
                "spec": {"until": "24h"}}
    return ([KUBELET, POLICY, scenario, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}]
            + [node(i) for i in range(NODES)] + [_pressing(i) for i in range(PRESSED)]
            + [_deployment(i) for i in range(DEPLOYMENTS)] + [_cronjob(i) for i in range(CRONJOBS)])


def a_day() -> ChildRun:
    return simulate(objects())


def timeline_table(progress: Callable[[str], None]) -> Table:
    progress("a day of 1,000 nodes")
    r = a_day()
    passes = r.results.get("descheduler", {}).get("passes", [])
    table = Table(title="A day of a 1,000-node cluster: CronJobs, Deployments, descheduler every 10 min (target < 30 s)")
    for col in ("virtual hours", "pods over the day", "descheduler passes", "evicted by it", "seconds", "CPU s",
                "peak RSS MiB"):
        table.add_column(col, justify="right")
    table.add_row(f"{r.results.get('time', 0) / 3600:.0f}", str(len(r.results.get("pods", ()))), str(len(passes)),
                  str(sum(p["evicted"] for p in passes)), f"{r.seconds:.1f}", f"{r.cpu:.1f}", str(r.rss_mib))
    return table
