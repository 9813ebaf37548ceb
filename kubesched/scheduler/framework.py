"""The scheduling framework: extension points, plugin contracts, and running a profile.

Each extension point is a base class; a plugin subclasses those it implements, which is also
how configuration checks that a plugin is enabled only where it can run. Filter and Score
plugins may add a vectorised path (`filter_many` / `score_many`) over the cache's arrays; the
framework uses it when present and otherwise calls the per-node method, with identical results.
"""

from __future__ import annotations

import enum
import functools
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.scheduler.dramanager import DRAManager
from kubesched.scheduler.nodescores import ORDINARY, NodeLocalScores
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.types import (
    SKIP,
    SKIP_CODE,
    SUCCESS,
    SUCCESS_CODE,
    UNRESOLVABLE_CODE,
    UNSCHEDULABLE_CODE,
    Code,
    NodeInfo,
    PodInfo,
    Status,
)

if TYPE_CHECKING:
    from kubesched.apiserver.interface import API
    from kubesched.scheduler.cache import Cache, NodeFlag, NodeTable
    from kubesched.store.base import Store

MAX_NODE_SCORE = 100


class ConfigError(ValueError):
    """Invalid scheduler configuration; `path` is the field path in the configuration document."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class CycleState(dict[str, Any]):
    """Per-attempt scratch space shared by a profile's plugins; `skip_*` record Skip results (of
    PreFilter, PreScore and PreBindPreFlight)."""

    def __init__(self) -> None:
        super().__init__()
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.skip_pre_bind: set[str] = set()

    def clone(self) -> CycleState:
        """A copy whose plugin data can be changed for a what-if (nominated pods, preemption's
        dry run) without touching this one; values with a `clone()` are copied through it."""
        out = CycleState()
        for key, value in self.items():
            clone = getattr(value, "clone", None)
            out[key] = clone() if clone is not None else value
        out.skip_filter, out.skip_score = set(self.skip_filter), set(self.skip_score)
        out.skip_pre_bind = set(self.skip_pre_bind)
        return out


@dataclass
class PostFilterResult:
    """NominatingInfo of a PostFilter: the node to nominate the pod to ("" clears the nomination)."""

    nominated_node_name: str


@dataclass
class PreFilterResult:
    """Restricts the nodes worth filtering (None = all nodes)."""

    node_names: set[str] | None = None


class ActionType(enum.IntFlag):
    """What happened to an object (framework/types.go ActionType), one bit per kind of change; a
    plugin registers the bits it cares about (`ActionType.Add | ActionType.UpdateNodeTaint`) and
    an event matches a registration when they share one. The names are upstream's."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdatePodLabel = 1 << 7
    UpdatePodScaleDown = 1 << 8
    UpdatePodToleration = 1 << 9
    UpdatePodSchedulingGatesEliminated = 1 << 10
    UpdatePodGeneratedResourceClaim = 1 << 11
    UpdatePodOther = 1 << 12  # upstream's updatePodOther: a change none of the above names
    UpdateNodeOther = 1 << 13  # upstream's updateNodeOther
    Update = ((1 << 14) - 1) & ~3  # any update
    All = (1 << 14) - 1


class QueueingHint(enum.IntEnum):
    """Whether an event may make a rejected pod schedulable (framework QueueingHint): QueueSkip
    leaves it in the unschedulable pool, Queue moves it to backoff or active."""

    QueueSkip = 0
    Queue = 1


@dataclass
class ClusterEvent:
    """A change that may make a rejected pod schedulable: resource + action (framework/events.go)."""

    resource: str  # Node, Pod, AssignedPod, ...
    action: ActionType
    # The plugin's QueueingHintFn: whether this event may make the pod schedulable (true: Queue).
    hint: Callable[[PodInfo, Any, Any], bool] | None = None


class WaitingPod:
    """A pod held at Permit: bound once every waiting plugin allows it, failed if one rejects or times out."""

    def __init__(self, pod: PodInfo, node_name: str, pending: dict[str, Any],
                 on_done: Callable[[WaitingPod, Status | None], None]) -> None:
        self.pod = pod
        self.node_name = node_name
        self._pending = pending  # plugin name -> its timeout timer
        self._on_done = on_done
        self.done = False

    @property
    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        timer = self._pending.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._pending and not self.done:
            self.done = True
            self._on_done(self, None)

    def reject(self, plugin: str, message: str) -> None:
        if self.done:
            return
        self.done = True
        for timer in self._pending.values():
            timer.cancel()
        self._pending.clear()
        self._on_done(self, Status(Code.UNSCHEDULABLE, (message,), plugin))


class Handle:
    """What plugins may reach: the cache (read only), listers, the clock, and pods waiting at Permit."""

    def __init__(self, cache: Cache, store: Store | None = None, clock: Clock | None = None,
                 observer: Observer = NULL_OBSERVER) -> None:
        self.cache = cache
        self.store = store  # read-only listers (Namespaces); optional so a bare cache still works
        self.clock = clock
        self.waiting_pods: dict[str, WaitingPod] = {}  # by pod uid
        # Bindings held by a PreBind plugin that returned WAIT: pod uid -> how binding goes on.
        self.pre_binding: dict[str, Callable[[Status], None]] = {}
        self.observer = observer  # told of every preemption
        # Filled in by the scheduler that owns this handle: the API client, the nominator, the
        # profiles by schedulerName, the seeded RNG (preemption's dry-run offset).
        self.api: API | None = None
        self.nominator = Nominator()
        self.dra = DRAManager(cache)  # kept current by the scheduler's informers
        self.profiles: dict[str, Profile] = {}
        self.rng = random.Random(0)
        self.features: FeatureGates = DEFAULT_FEATURE_GATES  # kube-scheduler's --feature-gates

    def now(self) -> float:
        return self.clock.now() if self.clock is not None else 0.0

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Run `fn` after `delay` seconds of cluster time (virtual in simulation)."""
        assert self.clock is not None, "a handle without a clock schedules nothing"
        return self.clock.call_later(delay, fn)

    def resume_pre_bind(self, uid: str, status: Status) -> None:
        """A PreBind plugin that returned WAIT for pod `uid` reports its outcome."""
        resume = self.pre_binding.pop(uid, None)
        if resume is not None:
            resume(status)

    def namespace_labels(self, name: str) -> dict[str, str]:
        """Labels of Namespace `name` as the scheduler's namespace lister sees them (GetNamespaceLabelsSnapshot).

        The API server gives every namespace `kubernetes.io/metadata.name`; a namespace with pods but
        no object in the store (usual in exported snapshots, impossible in a live cluster) is taken to
        exist with just that label. Without a store: `{}`, upstream's answer for an unknown namespace.
        """
        if self.store is None:
            return {}
        ns = self.store.get("Namespace", "", name)
        labels = dict((ns or {}).get("metadata", {}).get("labels") or {})
        labels.setdefault(NAMESPACE_NAME_LABEL, name)
        return labels

    def list_objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Objects of `kind` (in `namespace`, or all) as the scheduler's informers see them, e.g. the
        Services and ReplicaSets PodTopologySpread derives default selectors from; [] without a store."""
        return [] if self.store is None else list(self.store.list(kind, namespace))

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """One object by key (a lister's Get); None if absent or without a store."""
        return None if self.store is None else self.store.get(kind, namespace, name)


class Plugin:
    name: ClassVar[str] = ""
    # Per-node flags the plugin's vectorised paths read from the cache table (NodeTable.flags).
    node_flags: ClassVar[tuple[NodeFlag, ...]] = ()

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        self.handle = handle
        self.args = args or {}
        for flag in self.node_flags:
            handle.cache.register_flag(flag)

    def events_to_register(self) -> list[ClusterEvent]:
        """Events after which a pod this plugin rejected is worth retrying."""
        return []


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def less(self, a: Any, b: Any) -> bool:
        raise NotImplementedError

    def sort_key(self) -> Callable[[Any], Any]:
        """A key for heaps; plugins written in terms of `less` get a comparison-based key."""
        return functools.cmp_to_key(lambda a, b: -1 if self.less(a, b) else (1 if self.less(b, a) else 0))


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        raise NotImplementedError

    # PreFilterExtensions: keep the PreFilter state right when a pod is added to / removed from
    # `node` for this attempt only (nominated pods, preemption's what-if). Default: nothing to update.
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


class FilterPlugin(Plugin):
    # True when the verdict depends on a node's pods only through its requested totals (the
    # cache table's `req` columns), or not at all. Pods nominated to a node can then be taken
    # into account on the vectorised path by adding their requests to those columns.
    pods_via_requests: ClassVar[bool] = False
    uses_requests: ClassVar[bool] = False  # of those, whether the requested totals matter at all

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise NotImplementedError

    def filter_requested(self, state: CycleState, pod: PodInfo, node: NodeInfo, requested: dict[str, int],
                         num_pods: int) -> Status:
        """Required of `uses_requests` plugins: the verdict if `node`'s pods requested `requested`
        in total and numbered `num_pods` (what-ifs without copying the node)."""
        raise NotImplementedError

    def requests_key(self, state: CycleState, pod: PodInfo) -> Hashable | None:
        """Of `uses_requests` plugins: a key that is the same for two pods only if the plugin's
        verdicts on any requested totals are the same for both, so preemption can reuse a node's
        victims across preemptors; None: no such key."""
        return None

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray | None:
        """Optional fast path over `nodes[positions]` (whose cache slots are `slots`): an int64 code
        per node, 0 = passes, else `decode(code)` is its status."""
        return None

    def decode(self, state: CycleState, code: int) -> Status:
        raise NotImplementedError

    def explain(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> str | None:
        """For `--explain` only: why this plugin rejected `node` with `status`, in more detail than
        upstream's message gives (None: the message says it all). May cost a search."""
        return None

    def passes_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        """Whether every node of `table` passes, as it stands, which lets an attempt skip the
        plugin outright; only ever True when that is certain."""
        return False


class PostFilterPlugin(Plugin):
    def post_filter(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        """Called when no node fits; `statuses` has each filtered node's failure."""
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        raise NotImplementedError


class ScorePlugin(Plugin):
    # True when the normalised scores cannot leave 0..100 whatever the input, so the framework
    # need not check them.
    normalized_in_range: ClassVar[bool] = False

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def score_many(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                   table: NodeTable) -> np.ndarray | None:
        """Optional fast path returning the raw scores of `nodes` as int64."""
        return None

    def normalize(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """NormalizeScore; the default is none (scores are already 0..100)."""
        return scores

    def uniform(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        """Whether this attempt's normalised scores are certain to be the same on every node,
        after PreScore: they then cannot change which node wins, and are left out when nobody
        reads the plugin's own scores."""
        return False

    def node_local_key(self, state: CycleState, pod: PodInfo) -> tuple[int, ...] | None:
        """The pod's amounts (non-negative) that this plugin's score reads, if the score depends
        on nothing else but the node's own allocatable and pods, `score()` and `score_many()`
        agree, and NormalizeScore leaves it as it is: the framework may then keep a node's score
        for pods with the same key until the node changes (nodescores.py). None: it may not."""
        return None


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """(status, timeout seconds); WAIT holds the pod until allowed, rejected or timed out."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Whether pre_bind has work for this pod (SUCCESS) or none (SKIP); before it runs, a pod
        with work is nominated to the node so others see where it is going."""
        return SUCCESS

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """WAIT: the outcome comes later, through `handle.resume_pre_bind` (binding waits for it)."""
        raise NotImplementedError


class BindPlugin(Plugin):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """SKIP passes the pod to the next Bind plugin."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def default_normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """helper.DefaultNormalizeScore: scale to 0..100 by the maximum (integer division), optionally reversed."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out


@dataclass
class Profile:
    """A configured framework instance (one per schedulerName)."""

    scheduler_name: str
    handle: Handle
    plugins: dict[str, list[Plugin]]
    score_weights: dict[str, int]
    percentage_of_nodes_to_score: int | None = None
    _local: NodeLocalScores | None = field(default=None, init=False, repr=False)  # made on first use

    def at(self, point: str) -> list[Any]:
        return self.plugins.get(point, [])

    # ---- PreFilter / Filter ------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                       ) -> tuple[PreFilterResult, Status, set[str]]:
        """RunPreFilterPlugins: the merged node restriction, the status, and the plugins that
        rejected the pod or restricted its nodes (what the pod then waits on)."""
        result = PreFilterResult()
        restricting: list[str] = []
        rejected: Status | None = None
        for pl in self.at("preFilter"):
            res, status = pl.pre_filter(state, pod, nodes)
            code = status.code
            if code == SKIP_CODE:
                state.skip_filter.add(pl.name)
                continue
            if code != SUCCESS_CODE:
                status = status if status.plugin else Status(status.code, status.reasons, pl.name)
                if code == UNRESOLVABLE_CODE:
                    return result, status, {pl.name}
                if code != UNSCHEDULABLE_CODE:
                    return result, status, set()
                rejected = status  # keep going: the last Unschedulable status wins
                continue
            if res is not None and res.node_names is not None:
                restricting.append(pl.name)
                result.node_names = (res.node_names if result.node_names is None
                                     else result.node_names & res.node_names)
                if not result.node_names:
                    names = sorted(restricting)
                    msg = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1
                           else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), pl.name), set(names)
        if rejected is not None:
            return result, rejected, {rejected.plugin}
        return result, SUCCESS, set(restricting)

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """All filters on one node, stopping at the first failure (RunFilterPlugins)."""
        for pl in self.at("filter"):
            if pl.name in state.skip_filter:
                continue
            status = pl.filter(state, pod, node)
            if not status.ok:
                if not status.plugin:
                    status = Status(status.code, status.reasons, pl.name)
                return status
        return SUCCESS

    def run_add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo) -> None:
        """RunPreFilterExtensionAddPod: `added` now counts as running on `node` for this attempt."""
        for pl in self.at("preFilter"):
            if pl.name not in state.skip_filter:
                pl.add_pod(state, pod, added, node)

    def run_remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo) -> None:
        for pl in self.at("preFilter"):
            if pl.name not in state.skip_filter:
                pl.remove_pod(state, pod, removed, node)

    def filter_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                              nominated: Sequence[PodInfo]) -> Status:
        """RunFilterPluginsWithNominatedPods. `nominated`: pods nominated to `node` with priority
        >= the pod's. The pod must fit both with them (they will run there once their victims are
        gone) and without them (they may end up elsewhere, and anti-affinity must hold either way)."""
        if nominated:
            with_them, with_state = node.clone(), state.clone()
            for other in nominated:
                with_them.add_pod(other)
                self.run_add_pod(with_state, pod, other, with_them)
            status = self.filter_node(with_state, pod, with_them)
            if not status.ok:
                return status
        return self.filter_node(state, pod, node)

    # ---- PreScore / Score --------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        for pl in self.at("preScore"):
            status = pl.pre_score(state, pod, nodes)
            if status.code == SKIP_CODE:
                state.skip_score.add(pl.name)
            elif status.code != SUCCESS_CODE:
                return status
        return SUCCESS

    def run_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], slots: np.ndarray,
                  table: NodeTable, detail: bool = True
                  ) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray, int]]]:
        """Total weighted score per node, and per plugin (raw, normalised, weight).

        Without `detail` only the winner matters: the per-plugin scores are not returned, the
        totals leave out plugins whose scores are the same everywhere (a constant less on every
        node, so the same winner) and take node-local plugins' scores from those kept."""
        total: np.ndarray | None = None  # made by the first plugin that adds to it
        scores: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
        local: list[tuple[ScorePlugin, int]] = []
        keys: list[tuple[str, tuple[int, ...]]] = []
        own = not detail and table is self.handle.cache.table
        for pl in self.at("score"):
            if pl.name in state.skip_score:
                continue
            weight = self.score_weights.get(pl.name, 1)
            if not detail:
                if pl.uniform(state, pod, table):
                    continue
                key = pl.node_local_key(state, pod) if own else None
                if key is not None and all(0 <= v < ORDINARY for v in key):
                    local.append((pl, weight))
                    keys.append((pl.name, key))
                    continue
            raw = pl.score_many(state, pod, nodes, slots, table)
            if raw is None:
                raw = np.fromiter((pl.score(state, pod, ni) for ni in nodes), dtype=np.int64, count=len(nodes))
            norm = pl.normalize(state, pod, raw)
            if not pl.normalized_in_range and len(norm) and (norm.min() < 0 or norm.max() > MAX_NODE_SCORE):
                raise ValueError(f"plugin {pl.name} returned a score outside 0..{MAX_NODE_SCORE}")
            weighted = norm if weight == 1 else norm * weight
            if total is None:
                total = weighted.astype(np.int64, copy=weighted is norm)  # never the plugin's own
            else:
                total += weighted
            if detail:
                scores[pl.name] = (raw, norm, weight)
        if local:
            if self._local is None:
                self._local = NodeLocalScores(self.handle.cache)
            kept = self._local.totals(local, tuple(keys), state, pod, nodes, slots, table)
            if total is not None:
                kept += total
            total = kept
        if total is None:
            total = np.zeros(len(nodes), dtype=np.int64)
        return total, scores


__all__ = ["SKIP", "SUCCESS", "Code", "Status", "PodInfo", "NodeInfo"]
