"""LowNodeUtilization and HighNodeUtilization: move pods between nodes by how full the nodes are
(descheduler pkg/framework/plugins/nodeutilization, the classifier/normalizer generation).

Both plugins take one snapshot per pass of every node's usage: the sum of its pods' requests, or
for LowNodeUtilization with `metricsUtilization` the metrics API's actual usage (here the
kubelets' usage model). Usage becomes percentages of allocatable and each node is classified
against the thresholds; a resource without a threshold is left out of the classification.

* LowNodeUtilization: a schedulable node at or below `thresholds` for every listed resource is
  under-utilised, a node above `targetThresholds` for any of them is over-utilised. Pods leave the
  over-utilised nodes (fullest first) hoping that the scheduler puts their replacements on the
  under-utilised ones. With `useDeviationThresholds` both thresholds are distances from the
  cluster's average usage.
* HighNodeUtilization: nodes at or below `thresholds` are emptied (emptiest first) onto the other
  schedulable nodes, for bin packing with a MostAllocated scheduler (or to free nodes for the
  autoscaler).

The plugins never choose a landing node. What keeps an eviction useful is a budget: the room the
destination nodes have left up to their upper threshold (targetThresholds, or 100% for
resources without one and in HighNodeUtilization), summed over them. Each eviction takes the
pod's requests (its usage with metrics) and one pod slot out of that budget and out of the
source node's usage; a pass stops evicting from a node once it is no longer above its target
(LowNodeUtilization) and stops altogether once any budgeted resource is used up. A pod is only
tried when it tolerates every taint of at least one destination node (PodToleratesTaints); the
profile's PreEvictionFilter (nodeFit) and the policy's limits have the last word, as upstream.

Deliberate differences: nodes and pods that upstream visits in map order (random) are taken in
node-name order and, for equal usage, stable order; the metrics collector's smoothing (an
exponential average over 5 s scrapes) is not modelled, the usage is the current one, and a
node's usage is its pods' (system daemons not included); Prometheus is not a metrics source
here. Upstream only logs a failed usage snapshot; here the pass reports it as the plugin's error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Obj
from kubesched.api.quantity import resource_amount
from kubesched.api.resources import effective_container_requests, pod_requests
from kubesched.api.taints import tolerated
from kubesched.descheduler.framework import (
    BALANCE,
    EvictionFailed,
    Handle,
    NamespaceLimitError,
    NodeLimitError,
    Plugin,
    Status,
    TotalLimitError,
)
from kubesched.descheduler.nodes import is_unschedulable
from kubesched.descheduler.podutil import sort_by_priority_low_to_high

if TYPE_CHECKING:
    from kubesched.kubelet.usage import UsageTracker

MIN_PERCENTAGE, MAX_PERCENTAGE = 0, 100
BASIC_RESOURCES = ("cpu", "memory", "pods")
KUBERNETES_METRICS, PROMETHEUS_METRICS = "KubernetesMetrics", "Prometheus"
ONLY_THRESHOLDING_RESOURCES = "OnlyThresholdingResources"
EVICTION_MODES = (ONLY_THRESHOLDING_RESOURCES,)
METRICS_RESOURCES = ("cpu", "memory")  # what node and pod metrics report

Usage = dict[str, int]  # millicores for cpu, Value() for everything else, a count for pods
Percentages = dict[str, float]


# ---- resources and percentages ------------------------------------------------------------------

def node_capacity(node: Obj) -> Usage:
    """Allocatable, or capacity when the node reports no allocatable."""
    status = node.get("status") or {}
    return {name: resource_amount(name, raw)
            for name, raw in (status.get("allocatable") or status.get("capacity") or {}).items()}


def percentages(usage: Usage, capacity: Usage) -> Percentages:
    """Usage as percentages of capacity; a resource the node does not have is left out."""
    return {name: used / capacity[name] * 100 if capacity[name] > 0 else 0.0
            for name, used in usage.items() if name in capacity}


def capped_capacity(capacity: Usage, thresholds: Percentages, names: Iterable[str]) -> Usage:
    """The amount of each resource a node may hold: its capacity cut at its threshold (truncated
    like upstream's int64 conversion), all of it without a threshold, 0 if it has none."""
    return {name: 0 if name not in capacity
            else int(thresholds[name] * 0.01 * capacity[name]) if name in thresholds
            else capacity[name] for name in names}


def is_below(usage: Percentages, thresholds: Percentages) -> bool:
    """Every thresholded resource at or under its threshold."""
    return all(usage.get(name, 0.0) <= limit for name, limit in thresholds.items())


def is_above(usage: Percentages, thresholds: Percentages) -> bool:
    """Some thresholded resource over its threshold."""
    return any(usage.get(name, 0.0) > limit for name, limit in thresholds.items())


def average(usages: Iterable[Percentages]) -> Percentages:
    """Per resource, the mean over the nodes that have it."""
    total: Percentages = {}
    count: dict[str, int] = {}
    for usage in usages:
        for name, value in usage.items():
            total[name] = total.get(name, 0.0) + value
            count[name] = count.get(name, 0) + 1
    return {name: value / count[name] for name, value in total.items()}


def clamp(values: Percentages) -> Percentages:
    return {name: min(max(value, MIN_PERCENTAGE), MAX_PERCENTAGE) for name, value in values.items()}


def with_basic_resources(names: Iterable[str]) -> list[str]:
    """The thresholded resources plus cpu, memory and pods, which are always accounted."""
    return list(dict.fromkeys([*BASIC_RESOURCES, *names]))


def occupying_pods(handle: Handle, node: str) -> list[Obj]:
    """ListPodsOnANode: pods bound to the node that have not finished (finished ones hold nothing)."""
    return handle.pods_on_node(node, lambda p: (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def requests_any(names: Iterable[str]) -> Callable[[Obj], bool]:
    """The OnlyThresholdingResources filter: some container or init container requests one of `names`."""
    wanted = set(names)

    def keep(pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
        return any(wanted & set(effective_container_requests(c)) for c in containers)
    return keep


def tolerates_some_node(pod: Obj, taints_per_node: list[list[Obj]]) -> bool:
    """PodToleratesTaints: every taint (of any effect) of at least one of the nodes is tolerated.
    Upstream first requires at least as many tolerations as the node has taints; kept."""
    tolerations = pod.get("spec", {}).get("tolerations") or []
    return any(len(tolerations) >= len(taints) and all(tolerated(tolerations, t) for t in taints)
               for taints in taints_per_node)


# ---- usage clients ------------------------------------------------------------------------------

class RequestedUsage:
    """requestedUsageClient: a node uses what its pods request; an evicted pod frees its requests."""

    def __init__(self, handle: Handle, names: list[str]) -> None:
        self.handle = handle
        self.names = names
        self.usage: dict[str, Usage] = {}
        self.pods: dict[str, list[Obj]] = {}

    def sync(self, nodes: list[Obj]) -> str | None:
        """Snapshot every node's usage and pods; a message instead when it cannot be had."""
        self.usage, self.pods = {}, {}
        for node in nodes:
            name = node["metadata"]["name"]
            pods = occupying_pods(self.handle, name)
            usage = self.node_usage(name, pods)
            if isinstance(usage, str):
                return usage
            self.usage[name], self.pods[name] = usage, pods
        return None

    def node_usage(self, name: str, pods: list[Obj]) -> Usage | str:
        usage = {**dict.fromkeys(self.names, 0), "pods": len(pods)}
        for pod in pods:
            requests = pod_requests(pod.get("spec") or {})
            for resource in self.names:
                if resource != "pods":
                    usage[resource] += requests.get(resource, 0)
        return usage

    def pod_usage(self, pod: Obj) -> Usage | None:
        requests = pod_requests(pod.get("spec") or {})
        return {name: requests.get(name, 0) for name in self.names}


class ActualUsage(RequestedUsage):
    """actualUsageClient: the metrics API's node and pod cpu and memory (pods still counted from
    the node's pod list). Node usage is the sum of its pods' usage, as the usage model keeps it.
    A thresholded resource the metrics do not report fails the snapshot, as upstream."""

    def __init__(self, handle: Handle, names: list[str], metrics: UsageTracker) -> None:
        super().__init__(handle, names)
        self.metrics = metrics

    def node_usage(self, name: str, pods: list[Obj]) -> Usage | str:
        totals = self.metrics.node_totals(name)
        usage = {**{r: totals.get(r, 0) for r in METRICS_RESOURCES}, "pods": len(pods)}
        missing = next((r for r in self.names if r not in usage), None)
        if missing is not None:
            return f'unable to find "{missing}" resource for collected "{name}" node metric'
        return usage

    def pod_usage(self, pod: Obj) -> Usage | None:
        """None when the metrics API has nothing for the pod (not running): it is skipped."""
        tracked = self.metrics.pods.get(pod["metadata"].get("uid", ""))
        if tracked is None:
            return None
        return {name: tracked.total(name) for name in self.names if name in METRICS_RESOURCES}


@dataclass
class NodeInfo:
    """A classified node: its usage (absolute, lowered as pods leave), its pods as snapshotted,
    and what it may hold up to its upper threshold."""

    node: Obj
    usage: Usage
    pods: list[Obj]
    available: Usage

    @property
    def name(self) -> str:
        return self.node["metadata"]["name"]

    def total(self) -> int:
        """sortNodesByUsage's key: every resource's amount added up, cpu in millicores."""
        return sum(self.usage.values())


def is_above_target(info: NodeInfo) -> bool:
    """isNodeAboveTargetUtilization: some resource uses more than the node may hold."""
    return any(info.available.get(name, 0) < used for name, used in info.usage.items())


def budget_left(available: Usage) -> bool:
    return all(amount > 0 for amount in available.values())


# ---- arguments ----------------------------------------------------------------------------------

def _threshold_problem(thresholds: Any) -> str | None:
    """validateThresholds."""
    if not thresholds:
        return "no resource threshold is configured"
    if not isinstance(thresholds, dict):
        return "thresholds must map resource names to percentages"
    for name, percent in thresholds.items():
        if isinstance(percent, bool) or not isinstance(percent, int | float):
            return f"{name} threshold must be a number, got {percent!r}"
        if percent < MIN_PERCENTAGE or percent > MAX_PERCENTAGE:
            return f"{name} threshold not in [{MIN_PERCENTAGE}, {MAX_PERCENTAGE}] range"
    return None


def _unknown_keys(args: dict[str, Any], key: str, known: Iterable[str]) -> list[str]:
    value = args.get(key)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{key}: must be an object"]
    return [f'unknown field "{key}.{k}"' for k in value if k not in set(known)]


def _common_problems(args: dict[str, Any]) -> list[str]:
    """What both plugins check first: nested field names, numberOfNodes, only excluded namespaces."""
    problems = _unknown_keys(args, "evictableNamespaces", ("include", "exclude"))
    number = args.get("numberOfNodes")
    if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
        problems.append(f"numberOfNodes: must be an integer, got {number!r}")
    if problems:
        return problems
    if (args.get("evictableNamespaces") or {}).get("include"):
        return ["only Exclude namespaces can be set, inclusion is not supported"]
    return []


def _eviction_modes_problem(args: dict[str, Any]) -> str | None:
    """validateEvictionModes."""
    for mode in args.get("evictionModes") or ():
        if mode not in EVICTION_MODES:
            return f"invalid eviction mode {mode}"
    return None


def _metrics_problem(metrics: dict[str, Any]) -> str | None:
    source = metrics.get("source") or ""
    if source == KUBERNETES_METRICS and metrics.get("metricsServer"):
        return f'it is not allowed to set both "{KUBERNETES_METRICS}" source and metricsServer'
    if source == KUBERNETES_METRICS and metrics.get("prometheus") is not None:
        return f'prometheus configuration is not allowed to set when source is set to "{KUBERNETES_METRICS}"'
    if source == PROMETHEUS_METRICS and not (metrics.get("prometheus") or {}).get("query"):
        return f'prometheus query is required when metrics source is set to "{PROMETHEUS_METRICS}"'
    if source == PROMETHEUS_METRICS:
        return (f'metricsUtilization: source "{PROMETHEUS_METRICS}" is not supported '
                f'(kubesched reads simulated usage as {KUBERNETES_METRICS})')
    return None


def _thresholds(args: dict[str, Any], key: str) -> Percentages:
    return {name: float(value) for name, value in (args.get(key) or {}).items()}


# ---- the plugins ----------------------------------------------------------------------------------

class _NodeUtilization(Plugin):
    """The eviction loop both plugins share (evictPodsFromSourceNodes / evictPods)."""

    points = frozenset({BALANCE})
    usage: RequestedUsage  # or ActualUsage
    pod_filter: Callable[[Obj], bool]

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        self.excluded = set((args.get("evictableNamespaces") or {}).get("exclude") or ())

    def _filter(self, names: Iterable[str]) -> Callable[[Obj], bool]:
        """The pods worth trying: the profile's Filter plugins, and with OnlyThresholdingResources
        only pods requesting a thresholded resource."""
        evictable = self.handle.evictor.filter
        if ONLY_THRESHOLDING_RESOURCES not in (self.args.get("evictionModes") or ()):
            return evictable
        requesting = requests_any(names)
        return lambda p: evictable(p) and requesting(p)

    def _snapshot(self, nodes: list[Obj]) -> dict[str, Usage] | Status:
        """The nodes' usage, or the error that ends the strategy's run."""
        failure = self.usage.sync(nodes)
        if failure is not None:
            return Status.refused(f"error getting node usage: {failure}")
        return self.usage.usage

    def _evict(self, sources: list[NodeInfo], destinations: list[NodeInfo], names: list[str],
               keep_going: Callable[[NodeInfo, Usage], bool], node_limit: int | None) -> None:
        """Try the sources' evictable pods, lowest priority first, while the destinations have room."""
        available = {name: sum(dest.available[name] - dest.usage[name] for dest in destinations) for name in names}
        taints = [(dest.node.get("spec") or {}).get("taints") or [] for dest in destinations]
        for source in sources:
            removable = [p for p in source.pods if self.pod_filter(p)]
            if removable and self._evict_from(source, sort_by_priority_low_to_high(removable), available,
                                              taints, keep_going, node_limit):
                return

    def _evict_from(self, source: NodeInfo, pods: list[Obj], available: Usage, taints: list[list[Obj]],
                    keep_going: Callable[[NodeInfo, Usage], bool], node_limit: int | None) -> bool:
        """Evict from one node until `keep_going` says stop; True when the pass's limit is reached.
        The policy's per-node limit moves on to the next node; a refused eviction, a namespace
        limit or a pod without metrics only skips that pod."""
        if not keep_going(source, available):
            return False
        evictor, evicted = self.handle.evictor, 0
        for pod in pods:
            if node_limit is not None and evicted >= node_limit:
                break
            if not tolerates_some_node(pod, taints):
                continue
            if pod["metadata"].get("namespace", "default") in self.excluded:
                continue
            if not evictor.pre_eviction_filter(pod, self.name):
                continue
            freed = self.usage.pod_usage(pod)
            if freed is None:
                continue
            try:
                evictor.evict(pod, self.name)
            except NodeLimitError:
                return False
            except TotalLimitError:
                return True
            except (NamespaceLimitError, EvictionFailed):
                continue
            evicted += 1
            for name in available:
                amount = 1 if name == "pods" else freed.get(name, 0)
                source.usage[name] -= amount
                available[name] -= amount
            if not keep_going(source, available):
                break
        return False


class LowNodeUtilization(_NodeUtilization):
    """Evict from over-utilised nodes so that under-utilised ones receive the replacements."""

    name = "LowNodeUtilization"
    fields = frozenset({"useDeviationThresholds", "thresholds", "targetThresholds", "numberOfNodes",
                        "metricsUtilization", "evictionModes", "evictableNamespaces", "evictionLimits"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        """ValidateLowNodeUtilizationArgs: the first problem, in upstream's order and words."""
        problems = [*_common_problems(args), *_unknown_keys(args, "metricsUtilization",
                                                             ("metricsServer", "source", "prometheus")),
                    *_unknown_keys(args, "evictionLimits", ("node",))]
        if problems:
            return problems[:1]
        thresholds, targets = args.get("thresholds") or {}, args.get("targetThresholds") or {}
        if (problem := _threshold_problem(thresholds)) is not None:
            return [f"thresholds config is not valid: {problem}"]
        if (problem := _threshold_problem(targets)) is not None:
            return [f"targetThresholds config is not valid: {problem}"]
        if len(thresholds) != len(targets) or any(name not in targets for name in thresholds):
            return ["thresholds and targetThresholds configured different resources"]
        if not args.get("useDeviationThresholds"):
            for name, value in thresholds.items():
                if value > targets[name]:
                    return [f"thresholds' {name} percentage is greater than targetThresholds'"]
        if args.get("metricsUtilization") is not None and (problem := _metrics_problem(args["metricsUtilization"])):
            return [problem]
        if (problem := _eviction_modes_problem(args)) is not None:
            return [problem]
        node_limit = (args.get("evictionLimits") or {}).get("node")
        if node_limit is not None and (isinstance(node_limit, bool) or not isinstance(node_limit, int)
                                       or node_limit < 0):
            return [f"evictionLimits.node: must be a non-negative integer, got {node_limit!r}"]
        return []

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        """NewLowNodeUtilization; a metrics source it cannot serve fails the profile (LookupError)."""
        super().__init__(handle, args)
        self.thresholds = _thresholds(args, "thresholds")
        self.targets = _thresholds(args, "targetThresholds")
        self.names = with_basic_resources(self.thresholds)
        self.pod_filter = self._filter(self.thresholds)
        self.node_limit: int | None = (args.get("evictionLimits") or {}).get("node")
        metrics = args.get("metricsUtilization")
        if metrics is None:
            self.usage = RequestedUsage(handle, self.names)
        elif metrics.get("metricsServer") or metrics.get("source") == KUBERNETES_METRICS:
            if handle.metrics is None:
                raise LookupError("metrics client not initialized")
            self.usage = ActualUsage(handle, self.names, handle.metrics)
        elif metrics.get("source"):
            raise LookupError("unrecognized metrics source")
        else:
            raise LookupError("metrics source is empty")

    def _limits(self, used: dict[str, Percentages]) -> tuple[Percentages, Percentages]:
        """The under and over thresholds: as given, or (deviation) around the average usage."""
        if not self.args.get("useDeviationThresholds"):
            return self.thresholds, self.targets
        mean = average(used.values())
        return (clamp({name: value - self.thresholds.get(name, 0.0) for name, value in mean.items()}),
                clamp({name: value + self.targets.get(name, 0.0) for name, value in mean.items()}))

    def balance(self, nodes: list[Obj]) -> Status | None:
        usage = self._snapshot(nodes)
        if isinstance(usage, Status):
            return usage
        capacities = {n["metadata"]["name"]: node_capacity(n) for n in nodes}
        deviation = bool(self.args.get("useDeviationThresholds"))
        used = {name: percentages({r: v for r, v in usage[name].items() if not deviation or r in self.thresholds},
                                  capacity) for name, capacity in capacities.items()}
        low, high = self._limits(used)
        under: list[NodeInfo] = []
        over: list[NodeInfo] = []
        for node in nodes:
            name = node["metadata"]["name"]
            info = NodeInfo(node, usage[name], self.usage.pods[name], capped_capacity(capacities[name], high, self.names))
            if not is_unschedulable(node) and is_below(used[name], low):
                under.append(info)
            elif is_above(used[name], high):
                over.append(info)
        if (not under or len(under) <= (self.args.get("numberOfNodes") or 0) or len(under) == len(nodes)
                or not over):
            return None

        def keep_going(info: NodeInfo, available: Usage) -> bool:
            return is_above_target(info) and budget_left(available)

        self._evict(sorted(over, key=lambda i: -i.total()), under, self.names, keep_going, self.node_limit)
        return None


class HighNodeUtilization(_NodeUtilization):
    """Empty under-utilised nodes onto the others, so that fewer nodes are used."""

    name = "HighNodeUtilization"
    fields = frozenset({"thresholds", "numberOfNodes", "evictionModes", "evictableNamespaces"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        """ValidateHighNodeUtilizationArgs: the first problem, in upstream's order and words."""
        problems = _common_problems(args)
        if problems:
            return problems[:1]
        if (problem := _threshold_problem(args.get("thresholds"))) is not None:
            return [problem]
        if (problem := _eviction_modes_problem(args)) is not None:
            return [problem]
        return []

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        self.thresholds = _thresholds(args, "thresholds")
        # Destinations may fill up to 100% of what is thresholded (and of everything else).
        self.full = dict.fromkeys(self.thresholds, float(MAX_PERCENTAGE))
        self.names = with_basic_resources(self.thresholds)
        self.pod_filter = self._filter(self.thresholds)
        self.usage = RequestedUsage(handle, self.names)

    def balance(self, nodes: list[Obj]) -> Status | None:
        usage = self._snapshot(nodes)
        if isinstance(usage, Status):
            return usage
        under: list[NodeInfo] = []
        schedulable: list[NodeInfo] = []
        for node in nodes:
            name = node["metadata"]["name"]
            capacity = node_capacity(node)
            info = NodeInfo(node, usage[name], self.usage.pods[name], capped_capacity(capacity, self.full, self.names))
            if is_below(percentages(usage[name], capacity), self.thresholds):
                under.append(info)
            elif not is_unschedulable(node):
                schedulable.append(info)
        if (not under or len(under) <= (self.args.get("numberOfNodes") or 0) or len(under) == len(nodes)
                or not schedulable):
            return None
        self._evict(sorted(under, key=NodeInfo.total), schedulable, self.names,
                    lambda _info, available: budget_left(available), None)
        return None
