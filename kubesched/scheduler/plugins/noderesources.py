"""NodeResourcesFit and NodeResourcesBalancedAllocation.

Fit filters on requests against allocatable minus what is already requested, reporting every
insufficient resource; both score with resourceAllocationScorer's integer arithmetic. Scoring
counts a container without a cpu/memory request as 100m / 200Mi (the non-zero defaults) for
the Fit strategies, while BalancedAllocation uses the real requests — as upstream does. Fit's
scorer also sees the pod being placed without its pod-level requests, as v1.35's does (its
scorer is built without the PodLevelResources flag); Fit's filter and BalancedAllocation use them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from kubesched.api.dra.extended import is_extended_resource_name
from kubesched.scheduler.cache import NodeTable
from kubesched.scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ConfigError,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.scheduler.types import (
    CPU,
    EPHEMERAL,
    MEMORY,
    PODS,
    SKIP,
    SUCCESS,
    Code,
    NodeInfo,
    PodInfo,
    Status,
    node_allocatable,
)

FIT_STATE = "PreFilterNodeResourcesFit"
ALLOC_STATE = "NodeResources.allocatable"  # (slots, the table's array, its columns at slots)
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
BASE = (CPU, MEMORY, EPHEMERAL)
TOO_MANY_PODS = "Too many pods"
UNRESOLVABLE_BIT = 1 << 62


def round_half_away(x: float) -> int:
    """Go's math.Round: halves round away from zero (Python's round() goes to even)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _is_scalar(name: str) -> bool:
    return name not in (CPU, MEMORY, EPHEMERAL, PODS)


def _allocatable(state: CycleState, table: NodeTable, slots: np.ndarray) -> np.ndarray:
    """Allocatable at `slots` as (columns, slots), gathered once per scoring pass for both
    resource scorers."""
    known = state.get(ALLOC_STATE)
    if known is None or known[0] is not slots or known[1] is not table.alloc:
        # take() gathers several times faster than fancy indexing.
        known = state[ALLOC_STATE] = (slots, table.alloc, table.by_column("alloc").take(slots, axis=1))
    return known[2]


def _unresolvable(beyond: tuple[tuple[int, int], ...]) -> Callable[[np.ndarray], np.ndarray]:
    """Per slot, UNRESOLVABLE_BIT where allocatable is below some (column, amount) of `beyond`:
    the pod fits there not even when the node is empty."""
    def make(alloc: np.ndarray) -> np.ndarray:
        short = np.zeros(alloc.shape[1], dtype=bool)
        for col, amount in beyond:
            short |= alloc[col] < amount
        return short * UNRESOLVABLE_BIT
    return make


def _resources(specs: list[dict] | None) -> list[tuple[str, int]]:
    """(name, weight) per configured resource; cpu and memory with weight 1 when none are given."""
    return [(r.get("name", ""), int(r.get("weight", 1))) for r in specs or
            ({"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1})]


def _validate_fit_args(args: dict) -> None:
    """ValidateNodeResourcesFitArgs: a known strategy, resource weights 1..100, and a shape whose
    utilisations rise strictly within 0..100 with scores 0..10."""
    base = "pluginConfig[NodeResourcesFit].args.scoringStrategy"
    strategy = args.get("scoringStrategy") or {}
    kind = strategy.get("type", "LeastAllocated")
    if kind not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
        raise ConfigError(f"{base}.type", f'Unsupported value: "{kind}": supported values: "LeastAllocated", '
                          '"MostAllocated", "RequestedToCapacityRatio"')
    for i, r in enumerate(strategy.get("resources") or ()):
        weight = r.get("weight", 1)
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            raise ConfigError(f"{base}.resources[{i}].weight",
                              f"Invalid value: {weight}: resource weight of {r.get('name')} not in valid range [1, 100]")
    if kind != "RequestedToCapacityRatio":
        return
    shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or []
    if not shape:
        raise ConfigError(f"{base}.requestedToCapacityRatio.shape", "Required value: at least one point must be specified")
    for i, point in enumerate(shape):
        u, score = point.get("utilization"), point.get("score")
        if not isinstance(u, int) or not 0 <= u <= 100:
            raise ConfigError(f"{base}.requestedToCapacityRatio.shape[{i}].utilization",
                              f"Invalid value: {u}: not in valid range [0, 100]")
        if i and u <= shape[i - 1].get("utilization", -1):
            raise ConfigError(f"{base}.requestedToCapacityRatio.shape[{i}].utilization",
                              f"Invalid value: {u}: utilization values must be sorted in increasing order")
        if not isinstance(score, int) or not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(f"{base}.requestedToCapacityRatio.shape[{i}].score",
                              f"Invalid value: {score}: not in valid range [0, 10]")


class _FitState:
    """The pod's filtered requests: base resources then its scalar resources, in a fixed order.
    `deferred` (DRAExtendedResource) names those left to DynamicResources on a node whose
    allocatable does not list them."""

    def __init__(self, pod: PodInfo, ignored: set[str], ignored_groups: set[str],
                 deferred: frozenset[str] = frozenset()) -> None:
        names = [n for n in BASE if pod.requests.get(n)]
        names += sorted(n for n, v in pod.requests.items()
                        if _is_scalar(n) and v and n not in ignored and n.split("/")[0] not in ignored_groups)
        self.names = names
        self.amounts = [pod.requests[n] for n in names]
        self.deferred = deferred
        self.statuses: dict[int, Status] = {}
        self._layout: tuple[dict[str, int], int, _FitLayout] | None = None

    def layout(self, table: NodeTable) -> _FitLayout:
        """The request laid out over `table`'s columns (kept while the columns stay the same)."""
        columns = table.columns
        known = self._layout
        if known is None or known[0] is not columns or known[1] != len(columns):
            known = self._layout = (columns, len(columns), _FitLayout(self, columns))
        return known[2]


class _FitLayout:
    """Fit's checks as arrays over the table's columns: the pods column needs 1 free, each asked-for
    resource its amount, and a failing check sets its bit of the code. A resource no node reports
    fails everywhere, unresolvably."""

    def __init__(self, s: _FitState, columns: dict[str, int]) -> None:
        cols, amounts, bits = [columns[PODS]], [1], [1]
        self.missing = 0  # the code bits every node gets
        self.named: list[tuple[int, int]] = []  # (column, amount) of each resource a node reports
        # Deferred resources some node reports: (row of the checks, name, column, amount).
        self.deferred: list[tuple[int, str, int, int]] = []
        for i, (name, amount) in enumerate(zip(s.names, s.amounts, strict=True)):
            col = columns.get(name)
            if col is None:
                if amount > 0 and name not in s.deferred:
                    self.missing |= (2 << i) | UNRESOLVABLE_BIT
                continue
            if name in s.deferred:
                self.deferred.append((len(cols), name, col, amount))
            else:
                self.named.append((col, amount))
            cols.append(col)
            amounts.append(amount)
            bits.append(2 << i)
        self.checks = list(zip(cols, amounts, strict=True))  # (column, amount needed free)
        self.cols = np.array(cols, dtype=np.int64)
        self.amounts = np.array(amounts, dtype=np.int64)[:, None]  # against (columns, nodes)
        self.bits = np.array(bits, dtype=np.int64)
        # Sums of distinct powers of two up to 2**52 are exact in float64.
        self.float_bits = self.bits.astype(np.float64) if max(bits) <= 2**52 else None
        self._beyond: tuple[list[int], tuple[tuple[int, int], ...]] | None = None

    def beyond(self, floor: list[int]) -> tuple[tuple[int, int], ...]:
        """The (column, amount)s some node may have less than in all, by the table's floor (the
        same list until some node's allocatable changes)."""
        known = self._beyond
        if known is None or known[0] is not floor:
            known = self._beyond = (floor, tuple((col, amount) for col, amount in self.named if amount > floor[col]))
        return known[1]


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "NodeResourcesFit"
    pods_via_requests = True
    uses_requests = True
    # Every strategy averages per-resource scores of 0..100: free or used over allocatable (both
    # clamped to it), or a shape's 0..10 scaled by ten.
    normalized_in_range = True

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        self.ignored = set(self.args.get("ignoredResources") or ())
        self.ignored_groups = set(self.args.get("ignoredResourceGroups") or ())
        # By the pod's requests and the resources deferred to DynamicResources.
        self._fit_states: dict[tuple[tuple[tuple[str, int], ...], frozenset[str]], _FitState] = {}
        self.dra_extended = handle.features.enabled("DRAExtendedResource")
        strategy = self.args.get("scoringStrategy") or {}
        self.strategy = strategy.get("type", "LeastAllocated")
        self.resources = _resources(strategy.get("resources"))
        self._cpu_memory = [name for name, _ in self.resources] == [CPU, MEMORY]
        # Scoring "pods", score_many() reads the table's pod count, which score() does not know.
        self._node_local = all(name != PODS for name, _ in self.resources)
        _validate_fit_args(self.args)
        self.shape: list[tuple[int, int]] | None = None
        if self.strategy == "RequestedToCapacityRatio":
            points = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or ()
            # Shape scores are 0..10 (MaxCustomPriorityScore); node scores are 0..100.
            self.shape = [(int(p["utilization"]), int(p["score"]) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE))
                          for p in points]

    # ---- filter --------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        # Shared by pods asking for the same: it depends only on the requests and this configuration.
        deferred = self._deferred(pod) if self.dra_extended else frozenset()
        key = (tuple(pod.requests.items()), deferred)
        fit = self._fit_states.get(key)
        if fit is None:
            if len(self._fit_states) >= 4096:
                self._fit_states.clear()
            fit = self._fit_states[key] = _FitState(pod, self.ignored, self.ignored_groups, deferred)
        state[FIT_STATE] = fit
        return None, SUCCESS

    def _deferred(self, pod: PodInfo) -> frozenset[str]:
        """DRAExtendedResource: the scalar resources Fit leaves to DynamicResources on a node that
        does not list them. When the pod asks for an extended resource, those some DeviceClass
        serves; otherwise, as upstream has it (no class mapping read), every scalar resource."""
        scalars = [n for n, v in pod.requests.items() if v and _is_scalar(n)]
        if not scalars:
            return frozenset()
        if any(is_extended_resource_name(n) for n in scalars):
            mapping = self.handle.dra.extended_resource_classes()
            return frozenset(n for n in scalars if n in mapping)
        return frozenset(scalars)

    def _fit_code(self, s: _FitState, alloc: dict[str, int], req: dict[str, int], npods: int) -> int:
        code = 0
        if npods + 1 > alloc.get(PODS, 0):
            code |= 1  # never unresolvable: pods may leave
        for i, (name, amount) in enumerate(zip(s.names, s.amounts, strict=True)):
            if name in s.deferred and name not in alloc:
                continue  # DynamicResources allocates it there, if it can
            free = alloc.get(name, 0) - req.get(name, 0)
            if amount > free:
                code |= 2 << i
                if amount > alloc.get(name, 0):
                    code |= UNRESOLVABLE_BIT
        return code

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return self.filter_requested(state, pod, node, node.requested, len(node.pods))

    def filter_requested(self, state: CycleState, pod: PodInfo, node: NodeInfo, requested: dict[str, int],
                         num_pods: int) -> Status:
        code = self._fit_code(state[FIT_STATE], node.allocatable, requested, num_pods)
        return SUCCESS if code == 0 else self.decode(state, code)

    def requests_key(self, state: CycleState, pod: PodInfo) -> Hashable:
        # The verdicts read nothing of the pod but its _FitState, shared by pods asking alike.
        return state[FIT_STATE]

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray:
        layout = state[FIT_STATE].layout(table)
        # take() gathers several times faster than fancy indexing does.
        free = table.by_column("alloc").take(slots, axis=1)
        free -= table.by_column("req").take(slots, axis=1)
        short = free.take(layout.cols, axis=0) < layout.amounts
        unresolvable = None
        for row, name, col, amount in layout.deferred:
            listed = np.fromiter((name in nodes[p].allocatable for p in positions.tolist()), dtype=bool,
                                 count=len(positions))
            short[row] &= listed
            small = (table.by_column("alloc")[col].take(slots) < amount) & listed
            unresolvable = small if unresolvable is None else unresolvable | small
        if not short.any():  # most pods fit most nodes: no bits to build
            codes = np.zeros(len(slots), dtype=np.int64)
        elif layout.float_bits is not None:  # summed exactly, and faster, in floating point
            codes = (layout.float_bits @ short).astype(np.int64)
        else:
            codes = layout.bits @ short
        beyond = layout.beyond(table.alloc_floor())
        if beyond:  # some node may have less than the pod asks for in all: unresolvable there
            codes |= table.alloc_derived(("NodeResourcesFit", beyond), _unresolvable(beyond)).take(slots)
        if layout.missing:
            codes |= layout.missing
        if unresolvable is not None:
            codes |= unresolvable * UNRESOLVABLE_BIT
        return codes

    def passes_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        """The pod fits every node when, per column, the least allocatable of any node less the most
        any node has requested leaves room for it: most cycles of a cluster that is filling up."""
        layout = state[FIT_STATE].layout(table)
        floor = table.alloc_floor()
        if layout.missing or layout.deferred or layout.beyond(floor):
            return False  # some node could not hold it even empty
        ceiling = table.req_ceiling()
        return all(amount <= floor[col] - ceiling[col] for col, amount in layout.checks)

    def decode(self, state: CycleState, code: int) -> Status:
        s: _FitState = state[FIT_STATE]
        status = s.statuses.get(code)
        if status is None:
            reasons = [TOO_MANY_PODS] if code & 1 else []
            reasons += [f"Insufficient {n}" for i, n in enumerate(s.names) if code & (2 << i)]
            resolvable = not code & UNRESOLVABLE_BIT
            status = s.statuses[code] = Status(
                Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                tuple(reasons), self.name)
        return status

    # ---- score ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        return SUCCESS

    def _pod_request(self, pod: PodInfo, name: str) -> int:
        if name == CPU:
            return pod.score_cpu
        if name == MEMORY:
            return pod.score_memory
        return pod.score_requests.get(name, 0)

    def score_many(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                   table: NodeTable) -> np.ndarray | None:
        if self.shape is not None:
            return None
        allocs = _allocatable(state, table, slots)
        nonzero = table.by_column("nonzero").take(slots, axis=1)
        fast = self._score_non_zero(pod, allocs, nonzero, table)
        if fast is not None:
            return fast
        n = len(slots)
        total = np.zeros(n, dtype=np.int64)
        weights: Any = 0  # a number while every node has every resource scored, else per node
        for name, weight in self.resources:
            pod_req = self._pod_request(pod, name)
            if pod_req == 0 and _is_scalar(name):
                continue  # an extended resource the pod does not ask for is not scored
            col = table.columns.get(name)
            if col is None:
                continue
            alloc = allocs[col]
            if name == CPU:
                req = nonzero[0] + pod_req
            elif name == MEMORY:
                req = nonzero[1] + pod_req
            else:
                req = table.by_column("req")[col].take(slots) + pod_req
            valid = alloc > 0
            everywhere = bool(valid.all())
            safe = alloc if everywhere else np.where(valid, alloc, 1)
            if self.strategy == "MostAllocated":
                score = np.minimum(req, safe) * MAX_NODE_SCORE // safe
            else:
                score = np.where(req > alloc, 0, (safe - req) * MAX_NODE_SCORE // safe)
            if everywhere:
                total += score * weight
                weights = weights + weight
            else:
                total += np.where(valid, score * weight, 0)
                weights = weights + np.where(valid, weight, 0)
        return np.where(weights > 0, total // np.where(weights > 0, weights, 1), 0)

    def node_local_key(self, state: CycleState, pod: PodInfo) -> tuple[int, ...] | None:
        if not self._node_local:
            return None
        return tuple(self._pod_request(pod, name) for name, _ in self.resources)

    def _score_non_zero(self, pod: PodInfo, allocs: np.ndarray, nonzero: np.ndarray, table: NodeTable
                        ) -> np.ndarray | None:
        """score_many when cpu and memory are what is scored (the default) and every node has both:
        the same integer arithmetic on both resources at once. None otherwise."""
        if not self._cpu_memory or min(table.alloc_floor()[:2]) <= 0:
            return None
        # The table's first two columns are cpu and memory, as in `nonzero`; `nonzero` is the
        # caller's own gather, so it is worked on in place.
        alloc, score = allocs[:2], nonzero
        score[0] += pod.score_cpu
        score[1] += pod.score_memory
        if self.strategy == "MostAllocated":
            np.minimum(score, alloc, out=score)
        else:  # LeastAllocated: a request beyond allocatable scores 0
            np.subtract(alloc, score, out=score)
            np.maximum(score, 0, out=score)
        score *= MAX_NODE_SCORE
        score //= alloc
        (_, w_cpu), (_, w_mem) = self.resources
        cpu, mem = score[0], score[1]
        if w_cpu != 1:
            cpu *= w_cpu
        if w_mem != 1:
            mem *= w_mem
        cpu += mem
        cpu //= w_cpu + w_mem
        return cpu

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        total = weights = 0
        for name, weight in self.resources:
            pod_req = self._pod_request(pod, name)
            if pod_req == 0 and _is_scalar(name):
                continue
            alloc = node.allocatable.get(name, 0)
            if alloc == 0:
                continue
            if name == CPU:
                req = node.nonzero_cpu + pod_req
            elif name == MEMORY:
                req = node.nonzero_memory + pod_req
            else:
                req = node.requested.get(name, 0) + pod_req
            if self.shape is not None:
                score = self._ratio_score(req, alloc)
                if score <= 0:
                    continue  # upstream counts only resources that score above zero
            elif self.strategy == "MostAllocated":
                score = min(req, alloc) * MAX_NODE_SCORE // alloc
            else:
                score = 0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc
            total += score * weight
            weights += weight
        if not weights:
            return 0
        if self.shape is not None:
            return round_half_away(total / weights)
        return total // weights

    def _ratio_score(self, requested: int, capacity: int) -> int:
        """The broken-linear shape at the utilisation percentage (integer arithmetic)."""
        utilization = MAX_UTILIZATION if requested > capacity else requested * MAX_UTILIZATION // capacity
        shape = self.shape
        assert shape is not None
        for i, (u, score) in enumerate(shape):
            if utilization <= u:
                if i == 0:
                    return score
                pu, ps = shape[i - 1]
                return ps + (score - ps) * (utilization - pu) // (u - pu)
        return shape[-1][1]

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("AssignedPod", ActionType.Delete), ClusterEvent("Node", ActionType.Add, self._node_hint),
                ClusterEvent("Node", ActionType.UpdateNodeAllocatable, self._node_hint), ClusterEvent("Pod", ActionType.Update)]

    def _left_to_dra(self, name: str, alloc: dict[str, int]) -> bool:
        """isFit's view with DRAExtendedResource: a scalar resource the node does not list may be
        DynamicResources' to allocate."""
        return self.dra_extended and _is_scalar(name) and name not in alloc

    def _fits_empty(self, pod: PodInfo, alloc: dict[str, int]) -> bool:
        s = _FitState(pod, self.ignored, self.ignored_groups)
        return alloc.get(PODS, 0) >= 1 and all(
            amount <= alloc.get(name, 0) or self._left_to_dra(name, alloc)
            for name, amount in zip(s.names, s.amounts, strict=True))

    def _node_hint(self, pod: PodInfo, old: dict | None, new: dict) -> bool:
        """Queue if the pod would fit the node when empty and, for an update, something it asks
        for (or the pod count) grew."""
        alloc = node_allocatable(new)
        if not self._fits_empty(pod, alloc):
            return False
        if old is None:
            return True
        before = node_allocatable(old)
        wanted = [n for n, v in pod.requests.items() if v] + [PODS]
        return any(alloc.get(n, 0) > before.get(n, 0) or self._left_to_dra(n, alloc) for n in wanted)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    """Favours nodes whose cpu and memory would be used in equal proportion (1 − std of fractions)."""

    name = "NodeResourcesBalancedAllocation"
    normalized_in_range = True  # 100 × (1 − std) of fractions clamped to 0..1

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        self.resources = [name for name, _ in _resources(self.args.get("resources"))]
        # Two resources every node reports (no extended ones) are scored as arrays; cpu and memory,
        # the default, are the table's first two columns.
        self._vectorised = len(self.resources) == 2 and not any(_is_scalar(n) for n in self.resources)
        self._cpu_memory = self.resources == [CPU, MEMORY]
        self._node_local = PODS not in self.resources  # as NodeResourcesFit's

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        if not any(pod.requests.get(name) for name in self.resources):
            return SKIP  # nothing requested: balance is unaffected by this pod
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        fractions: list[float] = []
        for name in self.resources:
            alloc = node.allocatable.get(name, 0)
            if alloc == 0:
                continue
            req = pod.requests.get(name, 0)
            if req == 0 and _is_scalar(name):
                continue  # an extended resource the pod does not ask for does not count
            fraction = float(node.requested.get(name, 0) + req) / float(alloc)
            fractions.append(min(fraction, 1.0))
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
        return int((1 - std) * float(MAX_NODE_SCORE))

    def node_local_key(self, state: CycleState, pod: PodInfo) -> tuple[int, ...] | None:
        return tuple(pod.requests.get(name, 0) for name in self.resources) if self._node_local else None

    def score_many(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                   table: NodeTable) -> np.ndarray | None:
        if not self._vectorised:
            return None
        allocs, req = _allocatable(state, table, slots), table.by_column("req")
        if self._cpu_memory:
            cols = [0, 1]
            alloc, req = allocs[:2], req[:2].take(slots, axis=1)
        else:
            cols = [table.columns[n] for n in self.resources]
            alloc, req = allocs.take(cols, axis=0), req.take(slots, axis=1).take(cols, axis=0)
        floor = table.alloc_floor()
        if min(floor[cols[0]], floor[cols[1]]) <= 0 and not (alloc > 0).all():
            return None
        for i, name in enumerate(self.resources):
            amount = pod.requests.get(name, 0)
            if amount:
                req[i] += amount
        fractions = req / alloc  # int64 / int64 divides as float64
        np.minimum(fractions, 1.0, out=fractions)
        std = np.subtract(fractions[0], fractions[1])
        std /= 2
        np.abs(std, out=std)
        score = np.subtract(1, std, out=std)
        score *= float(MAX_NODE_SCORE)
        return score.astype(np.int64)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("AssignedPod", ActionType.Delete), ClusterEvent("Node", ActionType.Add),
                ClusterEvent("Node", ActionType.UpdateNodeAllocatable)]
