"""InterPodAffinity: pods placed by (or kept away from) the labels of pods already in a topology domain.

Follows plugins/interpodaffinity (v1.35: filtering.go, scoring.go, plugin.go) and the affinity-term
parsing of framework/types.go. PreFilter counts, per (topologyKey, value) pair, the existing pods
whose required anti-affinity matches the incoming pod and the existing pods matching the incoming
pod's required (anti-)affinity; Filter then only looks a node's labels up in those counts. PreScore
builds a topologyKey -> value -> weight map from the preferred terms (both ways) and existing pods'
required affinity (weighted by hardPodAffinityWeight); Score sums it over a node's labels.

Upstream walks every pod on every node for each attempt. Here an index kept up to date from the
cache's change notifications groups existing pods by (namespace, labels) -- a term matches all
pods of a group or none -- and existing pods' terms by their effective content, with counts per
topology value. An attempt then evaluates each term once per group, and the counts it builds are
sums of the index's per-group tables: the same numbers as upstream's, at a cost that follows the
number of distinct pod shapes rather than the number of pods.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Obj
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.scheduler.cache import Cache, NodeTable
from kubesched.scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
PREFILTER_KEY = "PreFilterInterPodAffinity"
PRESCORE_KEY = "PreScoreInterPodAffinity"
_TERMS_KEY = "InterPodAffinity"  # PodInfo.extra: the pod's parsed terms
_GROUP_KEY = "InterPodAffinity.group"  # PodInfo.extra: (namespace, labels) signature
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_NO_LABELS: Mapping[str, str] = {}

Pair = tuple[str, str]  # (topologyKey, value)


# ---- terms ------------------------------------------------------------------------------------


class AffinityTerm:
    """framework.AffinityTerm: a pod matches when its namespace is in `namespaces` or the labels of
    its namespace match `namespace_selector`, and its own labels match `selector`. `key` is the
    term's effective content, equal for terms that match exactly the same pods."""

    __slots__ = ("key", "namespace_selector", "namespaces", "selector", "topology_key")

    def __init__(self, namespaces: Container[str], selector: LabelSelector, topology_key: str,
                 namespace_selector: LabelSelector, key: Any = None) -> None:
        self.namespaces = namespaces
        self.selector = selector
        self.topology_key = topology_key
        self.namespace_selector = namespace_selector
        self.key = key

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str]) -> bool:
        if pod.namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(pod.labels)
        return False


class PodTerms:
    """A pod's parsed pod (anti-)affinity terms, built once per pod version (PodInfo.Update)."""

    __slots__ = ("error", "preferred_affinity", "preferred_anti_affinity", "required_affinity",
                 "required_anti_affinity")

    def __init__(self, pod: PodInfo) -> None:
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {}
        pa, paa = affinity.get("podAffinity") or {}, affinity.get("podAntiAffinity") or {}
        errors: list[str] = []
        self.required_affinity = _parse(pod, pa.get(_REQUIRED), "requiredAffinityTerms", errors)
        self.required_anti_affinity = _parse(pod, paa.get(_REQUIRED), "requiredAntiAffinityTerms", errors)
        self.preferred_affinity = _parse_weighted(pod, pa.get(_PREFERRED), "preferredAffinityTerms", errors)
        self.preferred_anti_affinity = _parse_weighted(pod, paa.get(_PREFERRED), "preferredAntiAffinityTerms",
                                                       errors)
        # utilerrors.NewAggregate: one error prints bare, several as "[a, b]".
        self.error = errors[0] if len(errors) == 1 else ("[" + ", ".join(errors) + "]" if errors else None)


def terms_of(pod: PodInfo) -> PodTerms:
    terms = pod.extra.get(_TERMS_KEY)
    if terms is None:
        terms = pod.extra[_TERMS_KEY] = PodTerms(pod)
    return terms


def merge_label_keys(selector: Mapping[str, Any] | None, term: Mapping[str, Any], labels: Mapping[str, str]
                     ) -> Mapping[str, Any] | None:
    """matchLabelKeys / mismatchLabelKeys become `key In (value)` / `key NotIn (value)` requirements.

    The API server does this when the pod is created (MatchLabelKeysInPodAffinity, on by default,
    registry/core/pod/strategy.go applyMatchLabelKeysAndMismatchLabelKeys), so the scheduler only
    ever sees the merged selector; keys the pod lacks and a null selector are left alone. We apply
    it while parsing; on a pod exported from a live cluster it repeats requirements already there.
    """
    match, mismatch = term.get("matchLabelKeys") or (), term.get("mismatchLabelKeys") or ()
    if selector is None or not (match or mismatch):
        return selector
    extra = [{"key": k, "operator": op, "values": [labels[k]]}
             for keys, op in ((match, "In"), (mismatch, "NotIn")) for k in keys if k in labels]
    return {**selector, "matchExpressions": [*(selector.get("matchExpressions") or ()), *extra]}


def _term(pod: PodInfo, term: Mapping[str, Any]) -> AffinityTerm:
    """newAffinityTerm: null namespaces and null namespaceSelector mean the pod's own namespace."""
    raw_selector = merge_label_keys(term.get("labelSelector"), term, pod.labels)
    names, raw_ns_selector = term.get("namespaces") or [], term.get("namespaceSelector")
    namespaces = frozenset((pod.namespace,)) if not names and raw_ns_selector is None else frozenset(names)
    topology_key = term.get("topologyKey") or ""
    key = (topology_key, namespaces, json.dumps(raw_selector, sort_keys=True),
           json.dumps(raw_ns_selector, sort_keys=True))
    return AffinityTerm(namespaces, LabelSelector.compile(raw_selector), topology_key,
                        LabelSelector.compile(raw_ns_selector), key)


def _parse(pod: PodInfo, terms: list[Obj] | None, what: str, errors: list[str]) -> tuple[AffinityTerm, ...]:
    try:
        return tuple(_term(pod, t) for t in terms or ())
    except SelectorError as err:  # a bad selector voids that whole group, as GetAffinityTerms does
        errors.append(f"{what}: {err}")
        return ()


def _parse_weighted(pod: PodInfo, terms: list[Obj] | None, what: str, errors: list[str]
                    ) -> tuple[tuple[AffinityTerm, int], ...]:
    try:
        return tuple((_term(pod, t.get("podAffinityTerm") or {}), int(t.get("weight") or 0)) for t in terms or ())
    except SelectorError as err:
        errors.append(f"{what}: {err}")
        return ()


class _SelectedNamespaces:
    """Explicit namespaces plus those a namespaceSelector picks, looked up lazily.

    Stands for mergeAffinityTermNamespacesIfNotEmpty, which lists the matching Namespace objects
    into the term's namespace set once per cycle; built per cycle, so label changes are seen."""

    __slots__ = ("_labels_of", "_memo", "_selector")

    def __init__(self, names: frozenset[str], selector: LabelSelector,
                 labels_of: Callable[[str], Mapping[str, str]]) -> None:
        self._memo: dict[Any, bool] = dict.fromkeys(names, True)
        self._selector = selector
        self._labels_of = labels_of

    def __contains__(self, name: object) -> bool:
        hit = self._memo.get(name)
        if hit is None:
            hit = self._memo[name] = isinstance(name, str) and self._selector.matches(self._labels_of(name))
        return hit


def _resolve(term: AffinityTerm, labels_of: Callable[[str], Mapping[str, str]]) -> AffinityTerm:
    """An incoming pod's term with its namespaceSelector folded into the namespaces (an empty
    selector, meaning all namespaces, and a null one, meaning none, stay as they are)."""
    sel = term.namespace_selector
    if sel.is_empty or sel is LabelSelector.NOTHING:
        return term
    assert isinstance(term.namespaces, frozenset)
    return AffinityTerm(_SelectedNamespaces(term.namespaces, sel, labels_of), term.selector, term.topology_key,
                        LabelSelector.NOTHING)


def _all_match(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """podMatchesAllAffinityTerms: no terms never match; namespace labels are not consulted."""
    if not terms:
        return False
    for t in terms:  # noqa: SIM110 - hot loop
        if not t.matches(pod, _NO_LABELS):
            return False
    return True


def _bump(counts: dict[Any, int], key: Any, value: int) -> None:
    """Add `value`; entries that drop to zero disappear (map length is consulted upstream)."""
    n = counts.get(key, 0) + value
    if n:
        counts[key] = n
    else:
        counts.pop(key, None)


# ---- the index --------------------------------------------------------------------------------


class _PodGroup:
    """Existing pods with the same namespace and labels: any term matches all of them or none."""

    __slots__ = ("by_key", "nodes", "pod")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod  # a representative: only its namespace and labels are read
        self.nodes: dict[str, int] = {}  # node name -> pods of the group there
        self.by_key: dict[str, dict[str, int]] = {}  # topology key -> value -> pods, built on demand


class _TermGroup:
    """Identical terms of existing pods: pods carrying one, per value of the term's topology key."""

    __slots__ = ("counts", "term", "weight")

    def __init__(self, term: AffinityTerm, weight: int | None) -> None:
        self.term = term
        self.weight = weight  # None: a required affinity term (scored at hardPodAffinityWeight)
        self.counts: dict[str, int] = {}


class AffinityIndex:
    """Existing pods by group and existing pods' terms by content, synced lazily from cache changes.

    `anti` holds required anti-affinity terms (filtering); `scoring` the terms that score an
    incoming pod: required affinity (hardPodAffinityWeight), preferred affinity (+weight) and
    preferred anti-affinity (-weight)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.groups: dict[Any, _PodGroup] = {}
        self.anti: dict[Any, _TermGroup] = {}
        self.scoring: dict[Any, _TermGroup] = {}
        # node name -> (labels, groups and term groups its pods were counted in)
        self._nodes: dict[str, tuple[Mapping[str, str], list[_PodGroup], list[tuple[dict, Any, _TermGroup]]]] = {}
        self._dirty: set[str] = set(cache.nodes)
        cache.listeners.append(self._dirty.add)

    def sync(self) -> None:
        while self._dirty:
            self._resync(self._dirty.pop())
        # A set keeps the table its largest size needed (every node, at the start), and each pop
        # scans it for the next entry: cleared, the one or two nodes a binding dirties cost nothing.
        self._dirty.clear()

    def by_key(self, group: _PodGroup, key: str) -> dict[str, int]:
        """Pods of `group` per value of topology key `key` (nodes without the key are left out)."""
        values = group.by_key.get(key)
        if values is None:
            values = group.by_key[key] = {}
            for name, n in group.nodes.items():
                value = self._nodes[name][0].get(key)
                if value is not None:
                    values[value] = values.get(value, 0) + n
        return values

    def _resync(self, name: str) -> None:
        old = self._nodes.pop(name, None)
        if old is not None:
            labels, groups, terms = old
            for g in groups:
                self._move(g, name, labels, -1)
            for table, sig, tg in terms:
                _bump(tg.counts, labels[tg.term.topology_key], -1)
                if not tg.counts:
                    del table[sig]
        ni = self.cache.nodes.get(name)
        if ni is None or not ni.pods:
            return
        labels = ni.labels
        groups = []
        terms: list[tuple[dict, Any, _TermGroup]] = []
        for p in ni.pods.values():
            sig = p.extra.get(_GROUP_KEY)
            if sig is None:
                sig = p.extra[_GROUP_KEY] = (p.namespace, frozenset(p.labels.items()))
            g = self.groups.get(sig)
            if g is None:
                g = self.groups[sig] = _PodGroup(p)
            self._move(g, name, labels, 1)
            groups.append(g)
            if p.has_pod_affinity:
                for table, sig, term, weight in self._terms(p):
                    value = labels.get(term.topology_key)
                    if value is None:
                        continue
                    tg = table.get(sig)
                    if tg is None:
                        tg = table[sig] = _TermGroup(term, weight)
                    tg.counts[value] = tg.counts.get(value, 0) + 1
                    terms.append((table, sig, tg))
        self._nodes[name] = (labels, groups, terms)

    def _terms(self, p: PodInfo) -> Iterator[tuple[dict, Any, AffinityTerm, int | None]]:
        t = terms_of(p)
        for term in t.required_anti_affinity:
            yield self.anti, term.key, term, None
        for term in t.required_affinity:
            yield self.scoring, ("required", term.key), term, None
        for term, w in t.preferred_affinity:
            yield self.scoring, ("preferred", w, term.key), term, w
        for term, w in t.preferred_anti_affinity:
            yield self.scoring, ("preferred", -w, term.key), term, -w

    def _move(self, g: _PodGroup, name: str, labels: Mapping[str, str], sign: int) -> None:
        _bump(g.nodes, name, sign)
        for key, values in g.by_key.items():
            value = labels.get(key)
            if value is not None:
                _bump(values, value, sign)
        if not g.nodes:
            del self.groups[g.pod.extra[_GROUP_KEY]]


# ---- cycle state ------------------------------------------------------------------------------


class Counts:
    """Upstream's topologyToMatchedTermCount map ((topologyKey, value) -> pods), built as a sum of
    read-only per-key tables of the index (all counts positive) and made a plain map on first write."""

    __slots__ = ("_flat", "_layers")

    def __init__(self) -> None:
        self._layers: list[tuple[str, Mapping[str, int]]] = []
        self._flat: dict[Pair, int] | None = None

    def add(self, key: str, values: Mapping[str, int]) -> None:
        if values:
            self._layers.append((key, values))

    def flat(self) -> dict[Pair, int]:
        if self._flat is None:
            flat: dict[Pair, int] = {}
            for key, values in self._layers:
                for value, n in values.items():
                    flat[(key, value)] = flat.get((key, value), 0) + n
            self._flat, self._layers = flat, []
        return self._flat

    def get(self, key: str, value: str) -> int:
        if self._flat is not None:
            return self._flat.get((key, value), 0)
        n = 0
        for k, values in self._layers:
            if k == key:
                n += values.get(value, 0)
        return n

    def __bool__(self) -> bool:
        return bool(self._flat) if self._flat is not None else bool(self._layers)

    def any_positive(self, labels: Mapping[str, str]) -> bool:
        """Whether some (key, value) of `labels` has a positive count."""
        if self._flat is not None:
            flat = self._flat
            return any(flat.get(pair, 0) > 0 for pair in labels.items())
        for key, values in self._layers:
            value = labels.get(key)
            if value is not None and value in values:
                return True
        return False

    def bump(self, key: str, value: str, n: int) -> None:
        _bump(self.flat(), (key, value), n)

    def clone(self) -> Counts:
        c = Counts()
        c._flat = dict(self.flat())
        return c


class PreFilterState:
    """The three count maps; `clone` and `update_with_pod` serve AddPod/RemovePod."""

    __slots__ = ("affinity", "affinity_counts", "anti_affinity", "anti_affinity_counts", "existing_counts",
                 "namespace_labels", "pod", "self_match")

    def __init__(self, pod: PodInfo, affinity: tuple[AffinityTerm, ...], anti_affinity: tuple[AffinityTerm, ...],
                 namespace_labels: Mapping[str, str]) -> None:
        self.pod = pod
        self.affinity = affinity
        self.anti_affinity = anti_affinity
        self.namespace_labels = namespace_labels  # of the incoming pod's namespace
        self.self_match = _all_match(affinity, pod)  # for the first pod of a self-affine group
        self.existing_counts = Counts()  # existing pods' required anti-affinity terms matching the pod
        self.affinity_counts = Counts()  # existing pods matching all required affinity terms
        self.anti_affinity_counts = Counts()  # existing pods matching a required anti-affinity term

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        for name in self.__slots__:
            setattr(c, name, getattr(self, name))
        c.existing_counts = self.existing_counts.clone()
        c.affinity_counts = self.affinity_counts.clone()
        c.anti_affinity_counts = self.anti_affinity_counts.clone()
        return c

    def update_with_pod(self, other: PodInfo, node: NodeInfo, sign: int) -> None:
        labels = node.labels
        for t in terms_of(other).required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels) and t.topology_key in labels:
                self.existing_counts.bump(t.topology_key, labels[t.topology_key], sign)
        if _all_match(self.affinity, other):
            for t in self.affinity:
                if t.topology_key in labels:
                    self.affinity_counts.bump(t.topology_key, labels[t.topology_key], sign)
        for t in self.anti_affinity:
            if t.matches(other, _NO_LABELS) and t.topology_key in labels:
                self.anti_affinity_counts.bump(t.topology_key, labels[t.topology_key], sign)

    def check(self, labels: Mapping[str, str]) -> int:
        """0 = passes; else 1 (affinity), 2 (anti-affinity), 3 (existing pods' anti-affinity)."""
        if self.affinity:
            pods_exist = True
            counts = self.affinity_counts
            for t in self.affinity:
                value = labels.get(t.topology_key)
                if value is None:
                    return 1  # every topology key must exist on the node
                if counts.get(t.topology_key, value) <= 0:
                    pods_exist = False
            # The first pod of a group with affinity to itself: nothing matches anywhere yet.
            if not pods_exist and not (not counts and self.self_match):
                return 1
        if self.anti_affinity_counts:
            counts = self.anti_affinity_counts
            for t in self.anti_affinity:
                value = labels.get(t.topology_key)
                if value is not None and counts.get(t.topology_key, value) > 0:
                    return 2
        if self.existing_counts and self.existing_counts.any_positive(labels):
            return 3
        return 0


class PreScoreState:
    __slots__ = ("topology_score",)

    def __init__(self, topology_score: dict[str, dict[str, int]]) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self  # read-only once built, as upstream


def _add_scores(m: dict[str, dict[str, int]], key: str, values: Mapping[str, int], weight: int) -> None:
    """scoreMap.processTerm for `n` matching pods per value: an entry appears even if weight is 0."""
    if not values:
        return
    scores = m.setdefault(key, {})
    for value, n in values.items():
        scores[value] = scores.get(value, 0) + weight * n


# ---- the plugin -------------------------------------------------------------------------------


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "InterPodAffinity"
    _statuses = {
        1: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), "InterPodAffinity"),
        2: Status(Code.UNSCHEDULABLE, (REASON_ANTI_AFFINITY,), "InterPodAffinity"),
        3: Status(Code.UNSCHEDULABLE, (REASON_EXISTING_ANTI_AFFINITY,), "InterPodAffinity"),
    }

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        weight = self.args.get("hardPodAffinityWeight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
            raise ValueError(f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0-100]")
        self.hard_weight = weight
        self.ignore_preferred_of_existing = bool(self.args.get("ignorePreferredTermsOfExistingPods", False))
        self.index = AffinityIndex(handle.cache)

    def _labels_of(self) -> Callable[[str], Mapping[str, str]]:
        """A per-cycle memo of namespace labels."""
        memo: dict[str, Mapping[str, str]] = {}

        def get(name: str) -> Mapping[str, str]:
            labels = memo.get(name)
            if labels is None:
                labels = memo[name] = self.handle.namespace_labels(name)
            return labels
        return get

    # ---- PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        if not (pod.has_pod_affinity or self.handle.cache.anti_affinity_pods):
            return None, SKIP  # no terms on either side (the index need not even be brought up to date)
        terms = terms_of(pod)
        if terms.error is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: {terms.error}",), self.name)
        index = self.index
        index.sync()
        if not (terms.required_affinity or terms.required_anti_affinity or index.anti):
            return None, SKIP  # no required term on either side: what the full count would find
        labels_of = self._labels_of()
        s = PreFilterState(pod, tuple(_resolve(t, labels_of) for t in terms.required_affinity),
                           tuple(_resolve(t, labels_of) for t in terms.required_anti_affinity),
                           labels_of(pod.namespace))
        for tg in index.anti.values():  # existing pods' required anti-affinity vs the incoming pod
            if tg.term.matches(pod, s.namespace_labels):
                s.existing_counts.add(tg.term.topology_key, tg.counts)
        if s.affinity or s.anti_affinity:
            for g in index.groups.values():
                if s.affinity and _all_match(s.affinity, g.pod):
                    for t in s.affinity:
                        s.affinity_counts.add(t.topology_key, index.by_key(g, t.topology_key))
                for t in s.anti_affinity:
                    if t.matches(g.pod, _NO_LABELS):
                        s.anti_affinity_counts.add(t.topology_key, index.by_key(g, t.topology_key))
        elif not s.existing_counts:
            return None, SKIP
        state[PREFILTER_KEY] = s
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status:
        s = state.get(PREFILTER_KEY)
        if s is not None:
            s.update_with_pod(pod_to_add, node, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status:
        s = state.get(PREFILTER_KEY)
        if s is not None:
            s.update_with_pod(pod_to_remove, node, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        code = state[PREFILTER_KEY].check(node.labels)
        return self._statuses[code] if code else SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray:
        s: PreFilterState = state[PREFILTER_KEY]
        codes = np.zeros(len(positions), dtype=np.int64)
        if not (s.affinity or s.anti_affinity_counts or s.existing_counts):
            return codes
        check = s.check
        for k, i in enumerate(positions.tolist()):
            code = check(nodes[i].labels)
            if code:
                codes[k] = code
        return codes

    def decode(self, state: CycleState, code: int) -> Status:
        return self._statuses[code]

    # ---- PreScore / Score --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {} if pod.has_pod_affinity else {}
        has_constraints = bool(((affinity.get("podAffinity") or {}).get(_PREFERRED))
                               or ((affinity.get("podAntiAffinity") or {}).get(_PREFERRED)))
        if self.ignore_preferred_of_existing and not has_constraints:
            return SKIP
        if not (has_constraints or self.handle.cache.affinity_pods):
            return SKIP  # no preferred term of its own, no existing pod's term to score by
        index = self.index
        index.sync()
        labels_of = self._labels_of()
        terms = terms_of(pod)
        m: dict[str, dict[str, int]] = {}
        if has_constraints:  # the incoming pod's preferred terms, over every existing pod
            weighted = [(_resolve(t, labels_of), w) for t, w in terms.preferred_affinity]
            weighted += [(_resolve(t, labels_of), -w) for t, w in terms.preferred_anti_affinity]
            for g in index.groups.values():
                for t, w in weighted:
                    if t.matches(g.pod, _NO_LABELS):
                        _add_scores(m, t.topology_key, index.by_key(g, t.topology_key), w)
        ns_labels = labels_of(pod.namespace)
        for tg in index.scoring.values():  # existing pods' terms the incoming pod matches
            weight = self.hard_weight if tg.weight is None else tg.weight
            if tg.weight is None and weight <= 0:
                continue
            if tg.term.matches(pod, ns_labels):
                _add_scores(m, tg.term.topology_key, tg.counts, weight)
        if not m:
            return SKIP
        state[PRESCORE_KEY] = PreScoreState(m)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        total = 0
        labels = node.labels
        for key, values in state[PRESCORE_KEY].topology_score.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total

    def normalize(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """Min-max scaling in float64, truncated to int64; all equal -> all 0."""
        if not len(scores):
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        if hi - lo <= 0:
            return np.zeros_like(scores)
        fraction = (scores - lo).astype(np.float64) / float(hi - lo)
        return (float(MAX_NODE_SCORE) * fraction).astype(np.int64)

    # ---- queueing hints ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("AssignedPod", ActionType.Add, self._after_pod_add),
            ClusterEvent("AssignedPod", ActionType.Update, self._after_pod_update),
            ClusterEvent("AssignedPod", ActionType.Delete, self._after_pod_delete),
            ClusterEvent("Node", ActionType.Add, self._after_node_change),
            ClusterEvent("Node", ActionType.UpdateNodeLabel, self._after_node_change),
        ]

    # The queue delivers only assigned pods as AssignedPod events, which is what upstream's
    # "the added/updated/deleted pod is unscheduled" early return filters for.

    @staticmethod
    def _after_pod_add(pod: PodInfo, old: Any, new: Any) -> bool:
        """A new assigned pod helps only if it matches all of the pod's required affinity terms."""
        added = _as_pod(new)
        return added is not None and _all_match(terms_of(pod).required_affinity, added)

    @staticmethod
    def _after_pod_update(pod: PodInfo, old: Any, new: Any) -> bool:
        """Queue when a label change makes an assigned pod match the affinity, or stop matching the anti-affinity."""
        before, after = _as_pod(old), _as_pod(new)
        if before is None or after is None:
            return False
        terms = terms_of(pod)
        return ((not _all_match(terms.required_affinity, before) and _all_match(terms.required_affinity, after))
                or (_all_match(terms.required_anti_affinity, before)
                    and not _all_match(terms.required_anti_affinity, after)))

    @staticmethod
    def _after_pod_delete(pod: PodInfo, old: Any, new: Any) -> bool:
        """Queue when the deleted pod matched all required anti-affinity terms. A pod kept out only by
        another pod's anti-affinity is not woken by that pod's deletion: upstream's hint has this gap too."""
        gone = _as_pod(old)
        return gone is not None and _all_match(terms_of(pod).required_anti_affinity, gone)

    @staticmethod
    def _after_node_change(pod: PodInfo, old: Any, new: Any) -> bool:
        """isSchedulableAfterNodeChange: a node gaining a topology key (or moving domain) may help."""
        terms = terms_of(pod)
        before = None if old is None else (old.get("metadata") or {}).get("labels") or {}
        after = (new.get("metadata") or {}).get("labels") or {}
        for t in terms.required_affinity:
            key = t.topology_key
            if before is None:
                if key in after:
                    return True
                continue
            if key in after and (key not in before or before[key] != after[key]):
                return True
        for t in terms.required_anti_affinity:
            key = t.topology_key
            if before is None:
                return True  # any new node may be free of the pods it avoids
            if key in before and (key not in after or before[key] != after[key]):
                return True
        return False


def _as_pod(obj: Any) -> PodInfo | None:
    if obj is None or isinstance(obj, PodInfo):
        return obj
    return PodInfo.of(obj)
