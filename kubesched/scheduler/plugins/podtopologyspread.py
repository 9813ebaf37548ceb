"""PodTopologySpread: keep pods that match a selector evenly spread over topology domains.

Mirrors pkg/scheduler/framework/plugins/podtopologyspread (v1.35, default gates): DoNotSchedule
constraints filter (skew = matching pods in the node's domain + self-match - global minimum), and
ScheduleAnyway constraints score (fewer matching pods in the domain, better). A pod without
constraints gets the configured defaults, but only when a Service, ReplicationController,
ReplicaSet or StatefulSet selects it (helper.DefaultSelector); the built-in ("System") defaults
are hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway.

Speed: counting matching pods per domain over every node in every cycle would dominate a
5,000-node cycle, so this plugin keeps per-slot arrays across cycles -- each topology key's
label values as integer codes, and per (namespace, selector) the number of matching pods on
each node -- and refreshes only the nodes the cache changed since it last looked. Filter and
Score then are numpy lookups over the nodes' slots.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.api.taints import first_untolerated
from kubesched.scheduler.cache import Cache, NodeTable
from kubesched.scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ConfigError,
    CycleState,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.scheduler.plugins.tainttoleration import HARD_TAINTS
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

NAME = "PodTopologySpread"
REASON = "node(s) didn't match pod topology spread constraints"
REASON_LABEL = REASON + " (missing required label)"
PREFILTER_KEY = "PreFilter" + NAME
PRESCORE_KEY = "PreScore" + NAME
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MAX_INT32 = 2**31 - 1  # the global minimum when no domain is eligible (then minDomains makes it 0)
SYSTEM_DEFAULT_CONSTRAINTS: list[dict[str, Any]] = [
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
]
_MISSING_LABEL, _SKEW = 1, 2  # filter_many codes
_MAX_SELECTORS = 256  # (namespace, selector) count arrays kept across cycles, least recently used dropped
_OWNER_KINDS = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}


@dataclass(frozen=True)
class Constraint:
    """A parsed constraint (topologySpreadConstraint in common.go); `key` identifies the selector."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    key: str
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def _canonical(selector: dict[str, Any] | None) -> str:
    return json.dumps(selector, sort_keys=True, separators=(",", ":"))


# ---- per-slot arrays kept across cycles --------------------------------------------------------


@dataclass
class _Domains:
    """One topology key: per slot the code of the node's label value (-1: no label or no node)."""

    codes: np.ndarray
    values: dict[str, int]


@dataclass
class _Counts:
    """Matching pods per slot for one (namespace, selector), right as of cache generation `gen`."""

    gen: int
    seen: int  # how far into the index's log of touched nodes it is up to date
    counts: np.ndarray


class _SlotIndex:
    """Derived per-slot arrays, refreshed lazily from the cache.

    Node arrays are rebuilt when the cache's ordered node list is a new object (the cache makes a
    new one on every node add, update or removal). A count array is patched in place: the cache
    tells the index every node whose pods or labels changed, and only those are recounted (all of
    them when a node was removed, or when the log of touched nodes was emptied meanwhile).
    """

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._order: list[NodeInfo] | None = None
        self.size = 0
        self.slot_nodes: list[NodeInfo | None] = []
        self.live = np.zeros(0, dtype=bool)
        self._domains: dict[str, _Domains] = {}
        self._counts: OrderedDict[tuple[str, str], _Counts] = OrderedDict()
        # The slots of the nodes the cache changed, in order (-1: a node removed, whose slot may
        # be reused: every count recounts), and how many older entries were dropped.
        self._touched: list[int] = []
        self._dropped = 0
        cache.listeners.append(self._touch)

    def _touch(self, name: str) -> None:
        if len(self._touched) > max(4 * self.size, 4096):  # bounded: a rare full recount instead
            self._dropped += len(self._touched)
            self._touched.clear()
        ni = self.cache.nodes.get(name)
        self._touched.append(ni.slot if ni is not None else -1)

    def sync(self) -> None:
        nodes, slots = self.cache.ordered()
        size = self.cache.table.req.shape[0]
        if nodes is self._order and size == self.size:
            return
        self._order, self.size = nodes, size
        self.slot_nodes = [None] * size
        for ni in nodes:
            self.slot_nodes[ni.slot] = ni
        self.live = np.zeros(size, dtype=bool)
        self.live[slots] = True
        self._domains.clear()

    def domains(self, key: str) -> _Domains:
        d = self._domains.get(key)
        if d is None:
            codes = np.full(self.size, -1, dtype=np.int64)
            values: dict[str, int] = {}
            for ni in self.slot_nodes:
                if ni is not None and (v := ni.labels.get(key)) is not None:
                    codes[ni.slot] = values.setdefault(v, len(values))
            d = self._domains[key] = _Domains(codes, values)
        return d

    def counts(self, namespace: str, c: Constraint) -> np.ndarray:
        """Per slot: pods in `namespace`, not terminating, matching `c.selector` (countPodsMatchSelector)."""
        if c.selector.is_empty:  # upstream counts nothing for an empty selector
            return np.zeros(self.size, dtype=np.int64)
        gen = self.cache.generation
        logged = self._dropped + len(self._touched)
        ck = (namespace, c.key)
        entry = self._counts.get(ck)
        if entry is not None and len(entry.counts) == self.size:
            self._counts.move_to_end(ck)
            if entry.gen == gen:
                return entry.counts
            if entry.seen >= self._dropped:
                changed = set(self._touched[entry.seen - self._dropped:])
                if -1 not in changed:
                    for s in changed:
                        entry.counts[s] = _count(self.slot_nodes[s], namespace, c.selector)
                    entry.gen, entry.seen = gen, logged
                    return entry.counts
        counts = np.fromiter((_count(ni, namespace, c.selector) for ni in self.slot_nodes),
                             dtype=np.int64, count=self.size)
        self._counts[ck] = _Counts(gen, logged, counts)
        self._counts.move_to_end(ck)
        while len(self._counts) > _MAX_SELECTORS:
            self._counts.popitem(last=False)
        return counts


def _count(ni: NodeInfo | None, namespace: str, selector: LabelSelector) -> int:
    if ni is None:
        return 0
    n = 0
    for p in ni.pods.values():
        if p.namespace == namespace and not p.terminating and selector.matches(p.labels):  # #87621
            n += 1
    return n


# ---- cycle state -------------------------------------------------------------------------------


@dataclass
class PreFilterState:
    """Per DoNotSchedule constraint: matching pods per domain code, which domains are eligible,
    and the global minimum (TpValueToMatchNum and the critical paths)."""

    constraints: list[Constraint]
    domains: list[_Domains]
    self_match: list[int]
    match: list[np.ndarray]
    present: list[np.ndarray]
    minimum: list[int] = field(default_factory=list)

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, self.domains, self.self_match, [m.copy() for m in self.match],
                              [p.copy() for p in self.present], list(self.minimum))

    def recompute_min(self, i: int) -> None:
        present = self.present[i]
        self.minimum[i] = int(self.match[i][present].min()) if present.any() else MAX_INT32

    def min_match(self, i: int) -> int:
        """The global minimum, 0 while fewer than minDomains domains are eligible."""
        if int(self.present[i].sum()) < self.constraints[i].min_domains:
            return 0
        return self.minimum[i]


@dataclass
class PreScoreState:
    constraints: list[Constraint]
    codes: list[np.ndarray]  # per constraint: per slot label code (-1 = node lacks the key)
    pod_counts: list[np.ndarray | None]  # hostname constraints: matching pods per slot
    domain_counts: list[np.ndarray | None]  # other constraints: matching pods per label code
    weights: list[float]
    ignored: np.ndarray  # per node given to PreScore (in its order): lacks a required key, scores 0
    ignored_slots: np.ndarray  # the same per slot

    def clone(self) -> PreScoreState:
        return self


# ---- the plugin --------------------------------------------------------------------------------


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    node_flags = (HARD_TAINTS,)  # read for nodeTaintsPolicy: Honor
    _missing = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_LABEL,), NAME)
    _skew = Status(Code.UNSCHEDULABLE, (REASON,), NAME)

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        defaulting = self.args.get("defaultingType") or "System"  # SetDefaults_PodTopologySpreadArgs
        defaults = self.args.get("defaultConstraints") or []
        _validate_args(defaulting, defaults)
        self.system_defaulted = defaulting == "System"
        self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else defaults
        self._selectors: dict[str, LabelSelector] = {}
        self._index = _SlotIndex(handle.cache)
        # Defaults without matchLabelKeys parse the same for every pod: do it once per action.
        self._templates: dict[str, list[Constraint]] | None = None
        if not any(c.get("matchLabelKeys") for c in self.default_constraints):
            self._templates = {a: self._parse(self.default_constraints, {}, a) for a in (DO_NOT_SCHEDULE,
                                                                                       SCHEDULE_ANYWAY)}

    # ---- constraints ---------------------------------------------------------------------------

    def _selector(self, d: dict[str, Any] | None) -> tuple[LabelSelector, str]:
        key = _canonical(d)
        sel = self._selectors.get(key)
        if sel is None:
            if len(self._selectors) > 4096:
                self._selectors.clear()
            sel = self._selectors[key] = LabelSelector.compile(d)
        return sel, key

    def _parse(self, raw: list[dict[str, Any]], labels: dict[str, str], action: str) -> list[Constraint]:
        """filterTopologySpreadConstraints: those with `action`, matchLabelKeys ANDed into the selector."""
        out = []
        for c in raw:
            if c.get("whenUnsatisfiable") != action:
                continue
            sel_dict = c.get("labelSelector")
            keys = c.get("matchLabelKeys") or ()
            extra = [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys if k in labels]
            if extra and sel_dict is not None:  # a nil selector has no requirements to merge with
                sel_dict = {"matchLabels": sel_dict.get("matchLabels") or {},
                            "matchExpressions": extra + list(sel_dict.get("matchExpressions") or ())}
            selector, key = self._selector(sel_dict)
            out.append(Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=c.get("topologyKey") or "",
                selector=selector,
                key=key,
                min_domains=int(c["minDomains"]) if c.get("minDomains") is not None else 1,
                honor_affinity=(c.get("nodeAffinityPolicy") or HONOR) == HONOR,
                honor_taints=(c.get("nodeTaintsPolicy") or IGNORE) == HONOR,
            ))
        return out

    def constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """The pod's own constraints with `action`, or else the defaults (getConstraints)."""
        own = pod.obj.get("spec", {}).get("topologySpreadConstraints")
        if own:
            cache_key = (NAME, action)
            parsed = pod.extra.get(cache_key)  # PodInfo is per object version, so this never goes stale
            if parsed is None:
                parsed = pod.extra[cache_key] = self._parse(own, pod.labels, action)
            return parsed
        return self._default_constraints(pod, action)

    def _default_constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """buildDefaultConstraints: the defaults with `action`, all using the pod's default selector."""
        templates = (self._templates[action] if self._templates is not None
                     else self._parse(self.default_constraints, pod.labels, action))
        if not templates:
            return []
        sel_dict = self.default_selector(pod)
        if sel_dict is None:
            return []
        selector, key = self._selector(sel_dict)
        if selector.is_empty:
            return []
        return [Constraint(t.max_skew, t.topology_key, selector, key, t.min_domains, t.honor_affinity,
                           t.honor_taints) for t in templates]

    def default_selector(self, pod: PodInfo) -> dict[str, Any] | None:
        """helper.DefaultSelector: Services selecting the pod, then its controller if that is an
        RC, ReplicaSet or StatefulSet; as a LabelSelector dict, None when it selects nothing."""
        handle = self.handle
        label_set: dict[str, str] = {}
        for svc in handle.list_objects("Service", pod.namespace):
            sel = (svc.get("spec") or {}).get("selector")
            if sel is None:  # a nil selector matches nothing
                continue
            if all(pod.labels.get(k) == v for k, v in sel.items()):
                label_set.update(sel)
        requirements: list[dict[str, Any]] = []
        owner = next((o for o in pod.obj["metadata"].get("ownerReferences") or () if o.get("controller")), None)
        obj = None
        if owner is not None and (owner.get("apiVersion"), owner.get("kind")) in _OWNER_KINDS:
            obj = handle.get_object(owner["kind"], pod.namespace, owner.get("name") or "")
        if obj is not None:  # a controller the listers do not know contributes nothing
            spec = obj.get("spec") or {}
            if obj["kind"] == "ReplicationController":  # a map selector, merged like a Service's
                label_set.update(spec.get("selector") or {})
            elif (sel := spec.get("selector")) is not None and _valid_selector(sel):
                requirements += [{"key": k, "operator": "In", "values": [v]}
                                 for k, v in (sel.get("matchLabels") or {}).items()]
                requirements += list(sel.get("matchExpressions") or ())
        requirements = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(label_set.items())] \
            + requirements
        if not requirements or not _valid_selector({"matchExpressions": requirements}):
            return None
        return {"matchExpressions": requirements}

    # ---- node inclusion policies -----------------------------------------------------------------

    def _policy_masks(self, pod: PodInfo, constraints: list[Constraint]
                      ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Per slot: whether the node passes the pod's required node affinity / tolerates the node's
        NoSchedule+NoExecute taints (matchNodeInclusionPolicies); None = every node does."""
        idx = self._index
        affinity = taints = None
        spec = pod.obj.get("spec", {})
        has_required = bool(spec.get("nodeSelector")) or (
            ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution") is not None)
        if has_required and any(c.honor_affinity for c in constraints):
            affinity = np.zeros(idx.size, dtype=bool)
            req = pod.required_affinity
            for ni in idx.slot_nodes:
                if ni is not None and req.matches(ni.labels, ni.name):
                    affinity[ni.slot] = True
        if any(c.honor_taints for c in constraints):
            taints = np.ones(idx.size, dtype=bool)
            tainted = np.flatnonzero(self.handle.cache.table.flags["hard_taints"][:idx.size] & idx.live)
            for s in tainted.tolist():
                ni = idx.slot_nodes[s]
                if ni is not None and first_untolerated(ni.taints, pod.tolerations, _hard) is not None:
                    taints[s] = False
        return affinity, taints

    def _included(self, pod: PodInfo, c: Constraint, node: NodeInfo) -> bool:
        if c.honor_affinity and not pod.required_affinity.matches(node.labels, node.name):
            return False
        return not (c.honor_taints and first_untolerated(node.taints, pod.tolerations, _hard) is not None)

    # ---- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as e:
            return None, Status(Code.ERROR, (f"get constraints from pod: {e}",), NAME)
        if not constraints:
            return None, SKIP
        idx = self._index
        idx.sync()
        domains = [idx.domains(c.topology_key) for c in constraints]
        has_all = idx.live.copy()
        for d in domains:
            has_all &= d.codes >= 0
        affinity, taints = self._policy_masks(pod, constraints)
        s = PreFilterState(constraints, domains, [int(c.selector.matches(pod.labels)) for c in constraints], [], [])
        for c, d in zip(constraints, domains, strict=True):
            eligible = has_all
            if c.honor_affinity and affinity is not None:
                eligible = eligible & affinity
            if c.honor_taints and taints is not None:
                eligible = eligible & taints
            codes = d.codes[eligible]
            nv = len(d.values)
            s.present.append(np.bincount(codes, minlength=nv) > 0)
            weights = idx.counts(pod.namespace, c)[eligible]
            s.match.append(np.bincount(codes, weights=weights, minlength=nv).astype(np.int64))
            s.minimum.append(0)
            s.recompute_min(len(s.minimum) - 1)
        state[PREFILTER_KEY] = s
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status:
        self._update(state, pod, pod_to_add, node, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status:
        self._update(state, pod, pod_to_remove, node, -1)
        return SUCCESS

    def _update(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, delta: int) -> None:
        """updateWithPod: a pod added to / removed from `node` for this attempt only."""
        s: PreFilterState | None = state.get(PREFILTER_KEY)
        if s is None or other.namespace != pod.namespace:
            return
        if any(c.topology_key not in node.labels for c in s.constraints):
            return
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(other.labels) or not self._included(pod, c, node):
                continue
            code = s.domains[i].values.get(node.labels[c.topology_key])
            if code is None:  # cannot happen for a node of this cycle's snapshot
                continue
            s.match[i][code] += delta
            s.present[i][code] = True
            s.recompute_min(i)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        s: PreFilterState | None = state.get(PREFILTER_KEY)
        if s is None:
            return Status(Code.ERROR, (f'reading "{PREFILTER_KEY}" from cycleState: not found',), NAME)
        for i, c in enumerate(s.constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                return self._missing
            code = s.domains[i].values.get(value)
            match = int(s.match[i][code]) if code is not None else 0
            if match + s.self_match[i] - s.min_match(i) > c.max_skew:
                return self._skew
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray | None:
        s: PreFilterState | None = state.get(PREFILTER_KEY)
        if s is None:
            return None
        out = np.zeros(len(slots), dtype=np.int64)
        undecided = np.ones(len(slots), dtype=bool)
        for i, c in enumerate(s.constraints):
            codes = s.domains[i].codes[slots]
            missing = undecided & (codes < 0)
            out[missing] = _MISSING_LABEL
            undecided &= ~missing
            match = s.match[i][np.maximum(codes, 0)] if len(s.match[i]) else np.zeros(len(slots), dtype=np.int64)
            skewed = undecided & (match + (s.self_match[i] - s.min_match(i)) > c.max_skew)
            out[skewed] = _SKEW
            undecided &= ~skewed
        return out

    def decode(self, state: CycleState, code: int) -> Status:
        return self._missing if code == _MISSING_LABEL else self._skew

    # ---- PreScore / Score ------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        if not self.handle.cache.nodes:
            return SKIP
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as e:
            return Status(Code.ERROR, (f"calculating preScoreState: {e}",), NAME)
        if not constraints:
            return SKIP
        idx = self._index
        idx.sync()
        # Only the pod's own or configured List constraints need every key on a node: with the
        # System defaults a node without a zone label still gets hostname spreading.
        require_all = bool(pod.obj.get("spec", {}).get("topologySpreadConstraints")) or not self.system_defaulted
        domains = [idx.domains(c.topology_key) for c in constraints]
        fslots = np.fromiter((n.slot for n in nodes), dtype=np.int64, count=len(nodes))
        has_all = idx.live.copy()
        for d in domains:
            has_all &= d.codes >= 0
        ignored_slots = ~has_all if require_all else np.zeros(idx.size, dtype=bool)
        ignored = ignored_slots[fslots]
        scored = fslots[~ignored]
        eligible_all = has_all if require_all else idx.live
        affinity, taints = self._policy_masks(pod, constraints)
        s = PreScoreState(constraints, [], [], [], [], ignored, ignored_slots)
        for c, d in zip(constraints, domains, strict=True):
            s.codes.append(d.codes)
            counts = idx.counts(pod.namespace, c)
            if c.topology_key == HOSTNAME:  # per-node counts, read at Score time
                s.pod_counts.append(counts)
                s.domain_counts.append(None)
                s.weights.append(math.log(len(scored) + 2))
                continue
            # A node without the label counts as the "" domain here (node.Labels[key] in Go).
            nv = len(d.values)
            empty = d.values.get("", nv)
            eff = np.where(d.codes < 0, empty, d.codes)
            in_domain = np.zeros(nv + 1, dtype=bool)
            in_domain[eff[scored]] = True
            eligible = eligible_all
            if c.honor_affinity and affinity is not None:
                eligible = eligible & affinity
            if c.honor_taints and taints is not None:
                eligible = eligible & taints
            total = np.bincount(eff[eligible], weights=counts[eligible], minlength=nv + 1).astype(np.int64)
            total[~in_domain] = 0
            s.pod_counts.append(None)
            s.domain_counts.append(total)
            s.weights.append(math.log(int(in_domain.sum()) + 2))
        state[PRESCORE_KEY] = s
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: PreScoreState = state[PRESCORE_KEY]
        slots = np.array([node.slot], dtype=np.int64)
        return int(self._scores(s, slots, s.ignored_slots[slots])[0])

    def score_many(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                   table: NodeTable) -> np.ndarray:
        s: PreScoreState = state[PRESCORE_KEY]
        return self._scores(s, slots, s.ignored)

    @staticmethod
    def _scores(s: PreScoreState, slots: np.ndarray, ignored: np.ndarray) -> np.ndarray:
        """Score: sum over constraints of count * weight + (maxSkew - 1), in float64 and in order,
        then int64(math.Round(x)); ignored nodes get 0."""
        total = np.zeros(len(slots), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            codes = s.codes[i][slots]
            has = codes >= 0
            pod_counts, domain_counts = s.pod_counts[i], s.domain_counts[i]
            if pod_counts is not None:
                cnt = pod_counts[slots]
            else:
                assert domain_counts is not None
                cnt = domain_counts[np.maximum(codes, 0)]
            term = cnt.astype(np.float64) * s.weights[i] + float(c.max_skew - 1)
            total = np.where(has, total + term, total)
        floor = np.floor(total)
        rounded = np.where(total - floor >= 0.5, floor + 1, floor)  # Go's math.Round: half away from zero
        return np.where(ignored, 0, rounded.astype(np.int64))

    def normalize(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """Fewer matching pods is better: 100 * (max + min - score) / max over the non-ignored nodes."""
        s: PreScoreState | None = state.get(PRESCORE_KEY)
        if s is None:
            return scores
        ignored = s.ignored
        valid = scores[~ignored]
        out = np.zeros(len(scores), dtype=np.int64)
        if not len(valid):
            return out
        lo, hi = int(valid.min()), int(valid.max())
        if hi == 0:
            out[~ignored] = MAX_NODE_SCORE
        else:
            out[~ignored] = MAX_NODE_SCORE * (hi + lo - valid) // hi
        return out

    # ---- queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("AssignedPod", ActionType.Add, lambda pod, old, new: self.after_pod_change(pod, None, new, True)),
            ClusterEvent("AssignedPod", ActionType.Update, lambda pod, old, new: self.after_pod_change(pod, old, new, True)),
            ClusterEvent("AssignedPod", ActionType.Delete, lambda pod, old, new: self.after_pod_change(pod, old, None, True)),
            ClusterEvent("Pod", ActionType.Update, lambda pod, old, new: self.after_pod_change(pod, old, new, False)),
            ClusterEvent("Node", ActionType.Add, self.after_node_change),
            ClusterEvent("Node", ActionType.Delete, self.after_node_change),
            ClusterEvent("Node", ActionType.UpdateNodeLabel, self.after_node_change),
            ClusterEvent("Node", ActionType.UpdateNodeTaint, self.after_node_change),
        ]

    def after_pod_change(self, pod: PodInfo, old: Any, new: Any, assigned: bool) -> bool:
        """isSchedulableAfterPodChange: only pods in the same namespace whose labels (or, with a
        nodeTaintsPolicy Honor constraint, the pod's own tolerations) change what counts matter."""
        o, n = _pod_view(old), _pod_view(new)

        def involved(v: _PodView) -> bool:
            return v.uid == pod.uid or (assigned and v.namespace == pod.namespace)

        if (n is not None and not involved(n)) or (o is not None and not involved(o)):
            return False
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return True
        if o is not None and n is not None:
            if pod.uid == n.uid and o.tolerations != n.tolerations and any(c.honor_taints for c in constraints):
                return True
            if o.labels == n.labels:
                return False
            return any(c.selector.matches(o.labels) != c.selector.matches(n.labels) for c in constraints)
        v = n if n is not None else o
        return v is not None and any(c.selector.matches(v.labels) for c in constraints)

    def after_node_change(self, pod: PodInfo, old: Any, new: Any) -> bool:
        """isSchedulableAfterNodeChange: a node that has (or had) every topology key."""
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return True
        old_labels = _node_labels(old)
        new_labels = _node_labels(new)
        old_ok = old_labels is not None and all(c.topology_key in old_labels for c in constraints)
        new_ok = new_labels is not None and all(c.topology_key in new_labels for c in constraints)
        if old_labels is not None and new_labels is not None:
            if old_ok != new_ok:
                return True
            changed = any(old_labels.get(c.topology_key) != new_labels.get(c.topology_key) for c in constraints)
            taints = ((old or {}).get("spec") or {}).get("taints") != ((new or {}).get("spec") or {}).get("taints")
            return new_ok and (changed or taints)
        return new_ok if new_labels is not None else old_ok


def _valid_selector(sel: dict[str, Any]) -> bool:
    try:
        LabelSelector.compile(sel)
    except SelectorError:
        return False
    return True


def _hard(taint: dict[str, Any]) -> bool:
    return taint.get("effect") in ("NoSchedule", "NoExecute")  # helper.DoNotScheduleTaintsFilterFunc


def _validate_args(defaulting: str, defaults: list[dict[str, Any]]) -> None:
    """ValidatePodTopologySpreadArgs, raising the configuration's error type."""

    base = f"pluginConfig[{NAME}].args"
    if defaulting not in ("System", "List"):
        raise ConfigError(f"{base}.defaultingType",
                          f'Unsupported value: "{defaulting}": supported values: "System", "List"')
    if defaulting == "System" and defaults:
        raise ConfigError(f"{base}.defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty')
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(defaults):
        path = f"{base}.defaultConstraints[{i}]"
        max_skew = c.get("maxSkew") or 0
        if not isinstance(max_skew, int) or max_skew <= 0:
            raise ConfigError(f"{path}.maxSkew", f"Invalid value: {max_skew}: not in valid range (0, inf)")
        if not c.get("topologyKey"):
            raise ConfigError(f"{path}.topologyKey", "Required value: can not be empty")
        action = c.get("whenUnsatisfiable") or ""
        if not action:
            raise ConfigError(f"{path}.whenUnsatisfiable", "Required value: can not be empty")
        if action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ConfigError(f"{path}.whenUnsatisfiable",
                              f'Unsupported value: "{action}": supported values: "DoNotSchedule", "ScheduleAnyway"')
        if c.get("labelSelector") is not None:
            raise ConfigError(f"{path}.labelSelector",
                              "Forbidden: constraint must not define a selector, as they deduced for each pod")
        if (c["topologyKey"], action) in seen:
            raise ConfigError(f"{base}.defaultConstraints[{i}]",
                              f'Duplicate value: "{{{c["topologyKey"]}, {action}}}"')
        seen.add((c["topologyKey"], action))


@dataclass
class _PodView:
    uid: str
    namespace: str
    labels: dict[str, str]
    tolerations: list[Any]


def _pod_view(x: Any) -> _PodView | None:
    """The fields the hints read, from a PodInfo or a pod object (events carry either)."""
    if x is None:
        return None
    if isinstance(x, PodInfo):
        return _PodView(x.uid, x.namespace, x.labels, x.tolerations)
    meta = x.get("metadata") or {}
    return _PodView(meta.get("uid", ""), meta.get("namespace", "default"), meta.get("labels") or {},
                    (x.get("spec") or {}).get("tolerations") or [])


def _node_labels(x: Any) -> dict[str, str] | None:
    if x is None:
        return None
    if isinstance(x, NodeInfo):
        return x.labels
    return (x.get("metadata") or {}).get("labels") or {}


