"""End to end through the CLI: a workload written to a file and run by `kubesched simulate FILE
-o json` in a child process, so loading, scheduling and printing the results are all counted, as
a user running it pays them.

The real kube-scheduler v1.35 on the same 2-core machine: SchedulingBasic 111 pods/s end to end (242 in its
scheduling phase), PreemptionBasic 46 preemptors/s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.table import Table

from bench.child import ChildRun, simulate
from bench.workloads import WORKLOADS, Obj, node, pod

REAL_END_TO_END = {"SchedulingBasic": 111.0, "PreemptionBasic": 46.0}
REAL_SCHEDULING_PHASE = {"SchedulingBasic": 242.0}


@dataclass
class EndToEnd:
    name: str
    measured: int  # pods (preemptors) whose rate is reported
    placed: int  # of them, bound to a node at the end
    run: ChildRun

    @property
    def rate(self) -> float:
        return self.measured / self.run.seconds


def _scheduling_basic() -> tuple[list[Obj], int]:
    w = next(w for w in WORKLOADS if w.name == "SchedulingBasic")
    measured = w.measured()
    return w.nodes() + w.initial() + measured, len(measured)


def _preemption_basic() -> tuple[list[Obj], int]:
    """The low-priority pods are scheduled at time 0; the preemptors arrive a second later, as
    scheduler_perf creates them once the first pods are placed."""
    w = next(w for w in WORKLOADS if w.name == "PreemptionBasic")
    measured = w.measured()
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "preemption-basic"},
                "spec": {"events": [{"at": "1s", "create": p} for p in measured]}}
    return w.nodes() + w.initial() + [scenario], len(measured)


GPUS_PER_NODE = 8


def _dra_gpus() -> tuple[list[Obj], int]:
    """Dynamic Resource Allocation: 1,000 nodes publishing 8 GPUs each as a ResourceSlice, and
    8,000 pods each asking for one GPU through a ResourceClaimTemplate (the resource-claim
    controller makes every pod its claim; the scheduler allocates a GPU to each)."""
    nodes = 1_000
    objs: list[Obj] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
                       {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": "one-gpu", "namespace": "default"},
                        "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
                                                                    "exactly": {"deviceClassName": "gpu"}}]}}}}]
    for i in range(nodes):
        objs.append(node(i))
        objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"node-{i}-gpu"},
                     "spec": {"driver": "gpu.example.com", "nodeName": f"node-{i}",
                              "pool": {"name": f"node-{i}", "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": f"gpu-{g}", "attributes": {"index": {"int": g}}}
                                          for g in range(GPUS_PER_NODE)]}})
    pods = [pod(f"pod-{i}", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
            for i in range(nodes * GPUS_PER_NODE)]
    return objs + pods, len(pods)


CASES: dict[str, Callable[[], tuple[list[Obj], int]]] = {
    "SchedulingBasic": _scheduling_basic, "PreemptionBasic": _preemption_basic, "DRAGPUs": _dra_gpus}


def end_to_end(name: str) -> EndToEnd:
    objs, measured = CASES[name]()
    run = simulate(objs)
    placed = sum(1 for p in run.results.get("pods", ()) if p["nodeName"] and p["name"].startswith("pod-")
                 and not p["deleted"])
    return EndToEnd(name, measured, placed, run)


# (nodes, pending pods): the two sizes and a smaller one, to show the cost grows linearly.
SCALE_SIZES = [(1_000, 10_000), (5_000, 50_000), (15_000, 150_000)]


def scale(nodes: int, pods: int) -> ChildRun:
    """`nodes` default nodes and `pods` default pending pods (100m / 500Mi: ten to a node)."""
    return simulate([node(i) for i in range(nodes)] + [pod(f"pod-{i}") for i in range(pods)])


def end_to_end_table(progress: Callable[[str], None]) -> Table:
    """Rates by wall time as the reference figures were taken, and by CPU time, which other load
    on the machine does not inflate."""
    table = Table(title="End to end through the CLI: kubesched simulate FILE -o json (loading, scheduling, results)")
    for col in ("workload", "pods", "placed", "wall s", "CPU s", "pods/s", "per CPU s", "× real", "× real (CPU)",
                "× real phase"):
        table.add_column(col, justify="right")
    for name in CASES:
        progress(f"end to end: {name}")
        r = end_to_end(name)
        real, phase = REAL_END_TO_END.get(name), REAL_SCHEDULING_PHASE.get(name)
        per_cpu = r.measured / r.run.cpu
        table.add_row(name, str(r.measured), str(r.placed), f"{r.run.seconds:.1f}", f"{r.run.cpu:.1f}",
                      f"{r.rate:.0f}", f"{per_cpu:.0f}", f"{r.rate / real:.1f}" if real else "-",
                      f"{per_cpu / real:.1f}" if real else "-", f"{r.rate / phase:.1f}" if phase else "-")
    return table


def scale_table(progress: Callable[[str], None]) -> Table:
    table = Table(title="Scale: default nodes and pending pods through the CLI, one process each")
    for col in ("nodes", "pending pods", "bound", "seconds", "CPU s", "CPU µs per pod", "peak RSS MiB"):
        table.add_column(col, justify="right")
    for nodes, pods in SCALE_SIZES:
        progress(f"scale: {nodes} nodes, {pods} pods")
        r = scale(nodes, pods)
        bound = sum(1 for p in r.results.get("pods", ()) if p["nodeName"])
        table.add_row(f"{nodes:,}", f"{pods:,}", f"{bound:,}", f"{r.seconds:.1f}", f"{r.cpu:.1f}",
                      f"{r.cpu / pods * 1e6:.0f}", str(r.rss_mib))
    return table
