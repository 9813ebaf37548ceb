"""The scheduling framework: extension points, plugin contracts, and running a profile.

Each extension point is a base class; a plugin subclasses those it implements, which is also
how configuration checks that a plugin is enabled only where it can run. Filter and Score
plugins may add a vectorised path (`filter_many` / `score_many`) over the cache's arrays; the
framework uses it when present and otherwise calls the per-node method, with identical results.
"""

from __future__ import annotations

import copy
import enum
import functools
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.scheduler.nominator import AllNominated, Nominator
from kubesched.scheduler.types import PODS, SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

if TYPE_CHECKING:
    from kubesched.apiserver.interface import API
    from kubesched.scheduler.cache import Cache, NodeTable
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
        self.profiles: dict[str, Profile] = {}
        self.rng = random.Random(0)

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

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        self.handle = handle
        self.args = args or {}

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

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray | None:
        """Optional fast path over `nodes[positions]` (whose cache slots are `slots`): an int64 code
        per node, 0 = passes, else `decode(code)` is its status."""
        return None

    def decode(self, state: CycleState, code: int) -> Status:
        raise NotImplementedError

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


def reject_flagged(flags: np.ndarray, nodes: Sequence[NodeInfo], positions: np.ndarray,
                   rejects: Callable[[NodeInfo], bool]) -> np.ndarray:
    """Filter codes where only flagged nodes (say, those with any taint) need a per-node look."""
    codes = np.zeros(len(positions), dtype=np.int64)
    for k in np.flatnonzero(flags):
        if rejects(nodes[positions[k]]):
            codes[k] = 1
    return codes


def default_normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """helper.DefaultNormalizeScore: scale to 0..100 by the maximum (integer division), optionally reversed."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out


def distinct_statuses(statuses: Mapping[str, Status]) -> list[tuple[Status, int]]:
    """Each distinct Status with how many nodes failed with it (nodes failing alike share one)."""
    if isinstance(statuses, NodeStatuses):
        return statuses.counts()
    shared = Counter(map(id, statuses.values()))
    return [(st, shared[i]) for i, st in {id(st): st for st in statuses.values()}.items()]


def fit_error_message(num_nodes: int, statuses: Mapping[str, Status], absent: Status | None,
                      prefilter_msg: str | None, postfilter_msg: str | None) -> str:
    """FitError.Error(): reasons counted over nodes, "<count> <reason>" sorted as strings."""
    msg = f"0/{num_nodes} nodes are available:"
    if prefilter_msg:
        msg += f" {prefilter_msg}."
    else:
        counts: dict[str, int] = {}
        for status, nodes in distinct_statuses(statuses):
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + nodes
        if absent is not None and len(statuses) < num_nodes:
            for reason in absent.reasons:
                counts[reason] = counts.get(reason, 0) + num_nodes - len(statuses)
        parts = sorted(f"{c} {r}" for r, c in counts.items())
        if parts:
            msg += " " + ", ".join(parts) + "."
    if postfilter_msg:
        msg += " " + postfilter_msg
    return msg


class Picked(Sequence[NodeInfo]):
    """The feasible nodes: `nodes` at `positions`. Most cycles read only how many there are and
    the winner, so the list is made only when something walks or slices it."""

    __slots__ = ("_nodes", "_positions", "_start", "_array", "_list")

    def __init__(self, nodes: list[NodeInfo], positions: np.ndarray, start: int, array: np.ndarray | None) -> None:
        self._nodes, self._positions, self._start, self._array = nodes, positions, start, array
        self._list: list[NodeInfo] | None = None

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.as_list()[i]
        return self._nodes[int(self._positions[i])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.as_list())

    def as_list(self) -> list[NodeInfo]:
        if self._list is None:
            self._list = _pick(self._nodes, self._positions, self._start, self._array)
        return self._list


def _pick(nodes: list[NodeInfo], positions: np.ndarray, start: int, array: np.ndarray | None = None
          ) -> list[NodeInfo]:
    """`nodes` at `positions` (walk order from `start`). Usually they are one unbroken stretch of
    the walk (every node fits), which two slices copy far faster than indexing each; else
    `array`, `nodes` as an object array when there is one, gathers them."""
    count = len(positions)
    if count:
        n = len(nodes)
        first = int(positions[0])
        if (int(positions[-1]) - start) % n - (first - start) % n == count - 1:
            if first + count <= n:
                return nodes[first:first + count]
            return nodes[first:] + nodes[:first + count - n]
    if array is not None:
        return array.take(positions).tolist()
    return [nodes[i] for i in positions.tolist()]


@dataclass
class _Undecoded:
    """A vectorised filter's failure codes, decoded into Statuses only if something reads them: a
    pod that is placed never does, however many nodes failed on the way."""

    plugin: FilterPlugin
    state: CycleState
    codes: np.ndarray

    def __getitem__(self, which: np.ndarray) -> _Undecoded:
        return _Undecoded(self.plugin, self.state, self.codes[which])


def _intern_codes(pl: FilterPlugin, state: CycleState, codes: np.ndarray, statuses: NodeStatuses) -> np.ndarray:
    """Per code, the index in `statuses` of the Status it decodes to; distinct codes are decoded
    and interned once each, in increasing order."""
    first = codes[0]
    if (codes == first).all():  # often a pod fails everywhere for one reason
        return np.full(len(codes), statuses.intern(pl.decode(state, int(first))), dtype=np.int64)
    ordered = np.sort(codes)
    distinct = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    lookup = np.array([statuses.intern(pl.decode(state, code)) for code in distinct.tolist()], dtype=np.int64)
    return lookup[np.searchsorted(distinct, codes)]


class NodeStatuses(Mapping[str, Status]):
    """Each filtered-out node's first failing Status, in the order they were found.

    A pod that fits nowhere fails on every node, nearly all alike (nodes failing alike share one
    Status): the verdicts are kept as node positions with indices into the distinct Statuses, so
    that counting reasons, finding the rejecting plugins and the nodes preemption might help cost
    per distinct Status, not per node. The name -> Status dict is built only when something asks
    for single nodes (decision records, a nominated node), and a vectorised filter's codes are
    decoded only when something reads the Statuses at all (a pod that fits nowhere)."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes  # what the positions index
        self._distinct: list[Status] = []
        self._index: dict[int, int] = {}  # id(status) -> its index in `distinct`
        self._positions: list[np.ndarray] = []
        self._which: list[np.ndarray | _Undecoded] = []
        self._undecoded = False
        self._count = 0
        self._extra: dict[str, Status] = {}  # added by name, after the rest
        self._dict: dict[str, Status] | None = None

    @property
    def distinct(self) -> list[Status]:
        self._decode()
        return self._distinct

    def intern(self, status: Status) -> int:
        i = self._index.get(id(status))
        if i is None:
            i = self._index[id(status)] = len(self._distinct)
            self._distinct.append(status)
        return i

    def add_many(self, positions: np.ndarray, which: np.ndarray | _Undecoded) -> None:
        """The nodes at `positions` failed with `distinct[which]`, or with what a filter's codes
        decode to."""
        if len(positions):
            self._positions.append(positions)
            self._which.append(which)
            self._undecoded = self._undecoded or isinstance(which, _Undecoded)
            self._count += len(positions)
            self._dict = None

    def _decode(self) -> list[np.ndarray]:
        """Decode and intern the codes not read yet, in the order they came; the decoded list."""
        if self._undecoded:
            self._undecoded = False
            self._which = [_intern_codes(w.plugin, w.state, w.codes, self) if isinstance(w, _Undecoded) else w
                           for w in self._which]
        return cast("list[np.ndarray]", self._which)

    def __setitem__(self, name: str, status: Status) -> None:
        self.intern(status)
        self._extra[name] = status
        self._dict = None

    def counts(self) -> list[tuple[Status, int]]:
        """Each distinct Status with how many nodes failed with it."""
        decoded = self._decode()
        per = np.bincount(np.concatenate(decoded), minlength=len(self.distinct)).tolist() if decoded \
            else [0] * len(self.distinct)
        for st in self._extra.values():
            per[self._index[id(st)]] += 1
        return [(st, n) for st, n in zip(self._distinct, per, strict=True) if n]

    def first(self) -> Status | None:
        """The Status of the first node filtered out."""
        if self._which:
            return self._distinct[int(self._decode()[0][0])]
        return next(iter(self._extra.values()), None)

    def which_at(self) -> np.ndarray:
        """Per position in `nodes`, the index of its Status in `distinct` (-1: not filtered out)."""
        out = np.full(len(self.nodes), -1, dtype=np.int64)
        for positions, which in zip(self._positions, self._decode(), strict=True):
            out[positions] = which
        if self._extra:
            at = {ni.name: i for i, ni in enumerate(self.nodes)}
            for name, st in self._extra.items():
                if name in at:
                    out[at[name]] = self._index[id(st)]
        return out

    def _as_dict(self) -> dict[str, Status]:
        if self._dict is None:
            nodes, distinct = self.nodes, self.distinct  # decoded
            self._dict = {nodes[i].name: distinct[k] for positions, which in zip(self._positions, self._decode(),
                                                                                    strict=True)
                          for i, k in zip(positions.tolist(), which.tolist(), strict=True)}
            self._dict.update(self._extra)
        return self._dict

    def __getitem__(self, name: str) -> Status:
        return self._as_dict()[name]

    def get(self, name: Any, default: Any = None) -> Any:
        if name is None or name in self._extra:
            return self._extra.get(name, default)
        return self._as_dict().get(name, default) if self._count else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return self._count + len(self._extra)


@dataclass(slots=True)
class FilterOutcome:
    """Result of the filter phase over the nodes processed in iteration order."""

    statuses: NodeStatuses  # failing node -> first failing status
    feasible: Sequence[NodeInfo]
    positions: np.ndarray  # of `feasible`, in the node list
    processed: int


@dataclass
class Profile:
    """A configured framework instance (one per schedulerName)."""

    scheduler_name: str
    handle: Handle
    plugins: dict[str, list[Plugin]]
    score_weights: dict[str, int]
    percentage_of_nodes_to_score: int | None = None

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
            if status.code == Code.SKIP:
                state.skip_filter.add(pl.name)
                continue
            if not status.ok:
                status = status if status.plugin else Status(status.code, status.reasons, pl.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return result, status, {pl.name}
                if status.code != Code.UNSCHEDULABLE:
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

    def _filter_chain(self, filters: list[Any], state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                      chunk: np.ndarray, live: np.ndarray | None, node_slots: np.ndarray, table: Any,
                      statuses: NodeStatuses, failed: list[tuple[np.ndarray, np.ndarray | _Undecoded]]
                      ) -> np.ndarray | None:
        """Run the filters over the `live` offsets of `chunk` (None: all of it), whose slots are
        `node_slots`; return the offsets that pass every filter (None: all of the chunk). Failing
        offsets are appended to `failed` with their Statuses (indices in `statuses`, or codes yet
        to decode), in the order they failed."""
        positions = chunk if live is None else chunk[live]
        last = len(filters) - 1
        for at, pl in enumerate(filters):
            if not len(positions):
                break
            codes = pl.filter_many(state, pod, nodes, positions, node_slots, table)
            if codes is None:
                offsets, which = [], []
                for k, i in enumerate(positions.tolist()):
                    st = pl.filter(state, pod, nodes[i])
                    if not st.ok:
                        offsets.append(k)
                        which.append(statuses.intern(st if st.plugin else Status(st.code, st.reasons, pl.name)))
                if not offsets:
                    continue
                bad = np.array(offsets, dtype=np.int64)
                lookup: np.ndarray | _Undecoded = np.array(which, dtype=np.int64)
                kept = np.ones(len(positions), dtype=bool)
                kept[bad] = False
            else:
                # A pod that never fits fails on most nodes: each distinct code is decoded once, if
                # the Statuses are read.
                bad = np.flatnonzero(codes)
                if not len(bad):
                    continue
                lookup = _Undecoded(pl, state, codes[bad])
                kept = codes == 0
            failed.append((bad if live is None else live[bad], lookup))
            live = np.flatnonzero(kept) if live is None else live[kept]
            if at < last:  # the next filters see only the nodes that passed this one
                positions, node_slots = positions[kept], node_slots[kept]
        return live

    def _with_nominated_requests(self, table: NodeTable, nominated: dict[str, list[PodInfo]]) -> Any:
        """A view of `table` in which nominated pods' requests already count on their nodes."""
        view = copy.copy(table)
        view.req = table.req.copy()
        pods_col = table.columns[PODS]
        for name, pods in nominated.items():
            slot = self.handle.cache.nodes[name].slot
            for other in pods:
                view.req[slot, pods_col] += 1
                for res, amount in other.requests.items():
                    col = table.columns.get(res)
                    if col is not None:
                        view.req[slot, col] += amount
        return view

    def _with_all_nominated(self, table: NodeTable, excluded: PodInfo | None) -> tuple[Any, np.ndarray]:
        """`_with_nominated_requests` for every nominated pod but `excluded`, from the sums the
        nominator keeps; also which slots have any of those pods."""
        nominator, nodes = self.handle.nominator, self.handle.cache.nodes
        pods_col = table.columns[PODS]
        nominator.delta.refresh(nominator, table, nodes, pods_col)
        delta, count = nominator.delta.req, nominator.delta.count
        assert delta is not None and count is not None
        view = copy.copy(table)
        view.req = table.req + delta
        own = nominator.node_of(excluded.uid) if excluded is not None else None
        if excluded is None or own is None or own not in nodes:
            return view, count > 0
        slot = nodes[own].slot
        view.req[slot, pods_col] -= 1
        for res, amount in nominator.nominated_pod(excluded.uid).requests.items():
            col = table.columns.get(res)
            if col is not None:
                view.req[slot, col] -= amount
        has = count > 0
        has[slot] = count[slot] > 1
        return view, has

    def find_feasible(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                      table: NodeTable, start: int, want: int,
                      nominated: dict[str, list[PodInfo]] | None = None) -> FilterOutcome:
        """Walk `nodes` from `start` round-robin until `want` feasible nodes are found.

        As findNodesThatPassFilters does: the walk goes on after the `want`-th feasible node, and
        the next feasible one cancels it without being kept or counted, so the nodes that fail in
        between are in `statuses` (and move the next cycle's start index) too.

        Equivalent to checking nodes one by one in that order; done in vectorised chunks. Nodes
        with `nominated` pods are checked with them too, vectorised when every filter sees pods
        only through requests, else one by one.
        """
        statuses = NodeStatuses(nodes)
        n = len(nodes)
        filters = [pl for pl in self.at("filter") if pl.name not in state.skip_filter]
        vectorised = all(pl.pods_via_requests for pl in filters)
        has_nominated: np.ndarray | None = None  # per slot, when the sums kept by the nominator apply
        adjusted = None
        if not nominated:
            nominated = None
        elif vectorised and isinstance(nominated, AllNominated) and nominated.owner is self.handle.nominator:
            adjusted, has_nominated = self._with_all_nominated(table, nominated.excluded)
            nominated = None
        else:
            nominated = {k: v for k, v in nominated.items() if k in self.handle.cache.nodes}
            nom_slots = np.fromiter((self.handle.cache.nodes[k].slot for k in nominated), dtype=np.int64)
            adjusted = self._with_nominated_requests(table, nominated) if nominated and vectorised else None
        # Filters every node passes (nothing to repel, room for the pod everywhere) are left out;
        # pods nominated to a node change the verdicts of those reading requests only.
        own = adjusted is None and not nominated  # the requests are the cache's, as they stand
        filters = [pl for pl in filters if not ((own or not pl.uses_requests) and pl.passes_all(state, pod, table))]
        found: list[np.ndarray] = []
        num_found = 0
        pos = 0
        cancelled = False
        while pos < n and not cancelled:
            need = want - num_found  # 0 once enough are found: the walk looks for the one that cancels it
            size = min(n - pos, max(need + need // 4, 64))
            first = (start + pos) % n
            if first + size <= n:  # one unbroken stretch of `nodes`
                chunk = np.arange(first, first + size)
                chunk_slots = slots[first:first + size]
            else:
                chunk = (first + np.arange(size)) % n  # positions in `nodes`
                chunk_slots = slots.take(chunk)
            failed: list[tuple[np.ndarray, np.ndarray | _Undecoded]] = []  # (chunk offsets, their Statuses)
            if has_nominated is None and not nominated:
                ok = self._filter_chain(filters, state, pod, nodes, chunk, None, chunk_slots, table,
                                        statuses, failed)
            else:
                alive = np.ones(size, dtype=bool)  # passed every filter so far
                check = np.ones(size, dtype=bool)  # still to run through the plain filters
                special = has_nominated[chunk_slots] if has_nominated is not None else np.isin(chunk_slots, nom_slots)
                if adjusted is not None:
                    live = np.flatnonzero(special)
                    passed = self._filter_chain(filters, state, pod, nodes, chunk, live, chunk_slots[live], adjusted,
                                                statuses, failed)
                    rejected = special.copy()
                    rejected[live if passed is None else passed] = False
                    alive &= ~rejected
                    check &= ~rejected
                else:
                    assert nominated is not None
                    check &= ~special
                    for j in np.flatnonzero(special).tolist():
                        node = nodes[int(chunk[j])]
                        st = self.filter_with_nominated(state, pod, node, nominated[node.name])
                        if not st.ok:
                            failed.append((np.array([j]), np.array([statuses.intern(st)])))
                            alive[j] = False
                live = np.flatnonzero(check)
                passed = self._filter_chain(filters, state, pod, nodes, chunk, live, chunk_slots[live], table,
                                            statuses, failed)
                if passed is not None:
                    alive[live] = False
                    alive[passed] = True
                ok = np.flatnonzero(alive)
            cut = size
            count = size if ok is None else len(ok)
            if count > need:
                cut = need if ok is None else int(ok[need])
                cancelled = True
            found.append(chunk[:need] if ok is None else chunk[ok[:need]])
            num_found += min(count, need)
            for offsets, which in failed:
                within = offsets < cut
                statuses.add_many(chunk[offsets[within]], which[within])
            pos += cut
        if len(found) == 1:
            positions = found[0]
        else:
            positions = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return FilterOutcome(statuses, Picked(nodes, positions, start, self.handle.cache.ordered_array(nodes)),
                             positions, pos)

    # ---- PreScore / Score --------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        for pl in self.at("preScore"):
            status = pl.pre_score(state, pod, nodes)
            if status.code == Code.SKIP:
                state.skip_score.add(pl.name)
            elif not status.ok:
                return status
        return SUCCESS

    def run_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], slots: np.ndarray,
                  table: NodeTable) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray, int]]]:
        """Total weighted score per node, and per plugin (raw, normalised, weight)."""
        total = np.zeros(len(nodes), dtype=np.int64)
        detail: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
        for pl in self.at("score"):
            if pl.name in state.skip_score:
                continue
            raw = pl.score_many(state, pod, nodes, slots, table)
            if raw is None:
                raw = np.fromiter((pl.score(state, pod, ni) for ni in nodes), dtype=np.int64, count=len(nodes))
            norm = pl.normalize(state, pod, raw)
            if not pl.normalized_in_range and len(norm) and (norm.min() < 0 or norm.max() > MAX_NODE_SCORE):
                raise ValueError(f"plugin {pl.name} returned a score outside 0..{MAX_NODE_SCORE}")
            weight = self.score_weights.get(pl.name, 1)
            total += norm if weight == 1 else norm * weight
            detail[pl.name] = (raw, norm, weight)
        return total, detail


__all__ = ["SKIP", "SUCCESS", "Code", "Status", "PodInfo", "NodeInfo"]
