"""InterPodAffinity: pods placed by (or kept away from) the labels of pods already in a topology domain.

Follows plugins/interpodaffinity (v1.35: filtering.go, scoring.go, plugin.go) and the affinity-term
parsing of framework/types.go. PreFilter counts, per (topologyKey, value) pair, the existing pods
whose required anti-affinity matches the incoming pod and the existing pods matching the incoming
pod's required (anti-)affinity; Filter then only looks a node's labels up in those counts. PreScore
builds a topologyKey -> value -> weight map from the preferred terms (both ways) and existing pods'
required affinity (weighted by hardPodAffinityWeight); Score sums it over a node's labels.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Obj
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.scheduler.cache import NodeTable
from kubesched.scheduler.framework import (
    MAX_NODE_SCORE,
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
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_NO_LABELS: Mapping[str, str] = {}

Pair = tuple[str, str]  # (topologyKey, value)


class AffinityTerm:
    """framework.AffinityTerm: a pod matches when its namespace is in `namespaces` or the labels of
    its namespace match `namespace_selector`, and its own labels match `selector`."""

    __slots__ = ("namespace_selector", "namespaces", "selector", "topology_key")

    def __init__(self, namespaces: Container[str], selector: LabelSelector, topology_key: str,
                 namespace_selector: LabelSelector) -> None:
        self.namespaces = namespaces
        self.selector = selector
        self.topology_key = topology_key
        self.namespace_selector = namespace_selector

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
    selector = LabelSelector.compile(merge_label_keys(term.get("labelSelector"), term, pod.labels))
    names, ns_selector = term.get("namespaces") or [], term.get("namespaceSelector")
    namespaces = frozenset((pod.namespace,)) if not names and ns_selector is None else frozenset(names)
    return AffinityTerm(namespaces, selector, term.get("topologyKey") or "", LabelSelector.compile(ns_selector))


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

    def __init__(self, names: Container[str], selector: LabelSelector,
                 labels_of: Callable[[str], Mapping[str, str]]) -> None:
        self._memo: dict[str, bool] = dict.fromkeys(names, True)  # type: ignore[arg-type]
        self._selector = selector
        self._labels_of = labels_of

    def __contains__(self, name: object) -> bool:
        hit = self._memo.get(name)  # type: ignore[call-overload]
        if hit is None:
            hit = self._memo[name] = self._selector.matches(self._labels_of(name))  # type: ignore[arg-type]
        return hit


def _resolve(term: AffinityTerm, labels_of: Callable[[str], Mapping[str, str]]) -> AffinityTerm:
    """An incoming pod's term with its namespaceSelector folded into the namespaces (an empty
    selector, meaning all namespaces, and a null one, meaning none, stay as they are)."""
    sel = term.namespace_selector
    if sel.is_empty or sel is LabelSelector.NOTHING:
        return term
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


def _bump(counts: dict[Pair, int], pair: Pair, value: int) -> None:
    n = counts.get(pair, 0) + value
    if n:
        counts[pair] = n
    else:
        counts.pop(pair, None)  # entries that drop to zero disappear (len() is consulted)


class PreFilterState:
    """Counts per (topologyKey, value); `clone` and `update_with_pod` serve AddPod/RemovePod."""

    __slots__ = ("affinity", "affinity_counts", "anti_affinity", "anti_affinity_counts", "existing_counts",
                 "namespace_labels", "pod", "self_match")

    def __init__(self, pod: PodInfo, affinity: tuple[AffinityTerm, ...], anti_affinity: tuple[AffinityTerm, ...],
                 namespace_labels: Mapping[str, str]) -> None:
        self.pod = pod
        self.affinity = affinity
        self.anti_affinity = anti_affinity
        self.namespace_labels = namespace_labels  # of the incoming pod's namespace
        self.self_match = _all_match(affinity, pod)  # for the first pod of a self-affine group
        self.existing_counts: dict[Pair, int] = {}  # existing pods' required anti-affinity vs the pod
        self.affinity_counts: dict[Pair, int] = {}  # existing pods matching all required affinity terms
        self.anti_affinity_counts: dict[Pair, int] = {}  # existing pods matching a required anti-affinity term

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        for name in self.__slots__:
            setattr(c, name, getattr(self, name))
        c.existing_counts = dict(self.existing_counts)
        c.affinity_counts = dict(self.affinity_counts)
        c.anti_affinity_counts = dict(self.anti_affinity_counts)
        return c

    def update_with_pod(self, other: PodInfo, node: NodeInfo, sign: int) -> None:
        labels = node.labels
        for t in terms_of(other).required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels) and t.topology_key in labels:
                _bump(self.existing_counts, (t.topology_key, labels[t.topology_key]), sign)
        if _all_match(self.affinity, other):
            for t in self.affinity:
                if t.topology_key in labels:
                    _bump(self.affinity_counts, (t.topology_key, labels[t.topology_key]), sign)
        for t in self.anti_affinity:
            if t.matches(other, _NO_LABELS) and t.topology_key in labels:
                _bump(self.anti_affinity_counts, (t.topology_key, labels[t.topology_key]), sign)

    def check(self, labels: Mapping[str, str]) -> int:
        """0 = passes; else 1 (affinity), 2 (anti-affinity), 3 (existing pods' anti-affinity)."""
        if self.affinity:
            pods_exist = True
            counts = self.affinity_counts
            for t in self.affinity:
                value = labels.get(t.topology_key)
                if value is None:
                    return 1  # every topology key must exist on the node
                if counts.get((t.topology_key, value), 0) <= 0:
                    pods_exist = False
            # The first pod of a group with affinity to itself: nothing matches anywhere yet.
            if not pods_exist and not (not counts and self.self_match):
                return 1
        if self.anti_affinity_counts:
            counts = self.anti_affinity_counts
            for t in self.anti_affinity:
                value = labels.get(t.topology_key)
                if value is not None and counts.get((t.topology_key, value), 0) > 0:
                    return 2
        if self.existing_counts:
            counts = self.existing_counts
            for pair in labels.items():
                if counts.get(pair, 0) > 0:
                    return 3
        return 0


class PreScoreState:
    __slots__ = ("topology_score",)

    def __init__(self, topology_score: dict[str, dict[str, int]]) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self  # read-only once built, as upstream


def _add_score(m: dict[str, dict[str, int]], term: AffinityTerm, weight: int, pod: PodInfo,
               ns_labels: Mapping[str, str], node_labels: Mapping[str, str]) -> None:
    """scoreMap.processTerm: a match in a domain the node belongs to adds `weight` there (even 0)."""
    if term.matches(pod, ns_labels):
        value = node_labels.get(term.topology_key)
        if value is not None:
            scores = m.setdefault(term.topology_key, {})
            scores[value] = scores.get(value, 0) + weight


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
        if not isinstance(weight, int) or not 0 <= weight <= 100:
            raise ValueError(f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0-100]")
        self.hard_weight = weight
        self.ignore_preferred_of_existing = bool(self.args.get("ignorePreferredTermsOfExistingPods", False))

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
        terms = terms_of(pod)
        if terms.error is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: {terms.error}",), self.name)
        labels_of = self._labels_of()
        s = PreFilterState(pod, tuple(_resolve(t, labels_of) for t in terms.required_affinity),
                           tuple(_resolve(t, labels_of) for t in terms.required_anti_affinity),
                           labels_of(pod.namespace))
        existing = s.existing_counts
        ns_labels = s.namespace_labels
        for ni in nodes:  # HavePodsWithRequiredAntiAffinityList
            if not ni.pods_with_required_anti_affinity:
                continue
            labels = ni.labels
            for other in ni.pods_with_required_anti_affinity.values():
                for t in terms_of(other).required_anti_affinity:
                    if t.matches(pod, ns_labels):
                        value = labels.get(t.topology_key)
                        if value is not None:
                            pair = (t.topology_key, value)
                            existing[pair] = existing.get(pair, 0) + 1
        if s.affinity or s.anti_affinity:
            self._count_incoming(s, nodes)
        elif not existing:
            return None, SKIP
        state[PREFILTER_KEY] = s
        return None, SUCCESS

    @staticmethod
    def _count_incoming(s: PreFilterState, nodes: Sequence[NodeInfo]) -> None:
        """Existing pods matching the incoming pod's required terms, over every pod on every node."""
        aff, anti = s.affinity, s.anti_affinity
        aff_counts, anti_counts = s.affinity_counts, s.anti_affinity_counts
        for ni in nodes:
            if not ni.pods:
                continue
            labels = ni.labels
            for other in ni.pods.values():
                if aff and _all_match(aff, other):
                    for t in aff:
                        value = labels.get(t.topology_key)
                        if value is not None:
                            pair = (t.topology_key, value)
                            aff_counts[pair] = aff_counts.get(pair, 0) + 1
                for t in anti:
                    if t.matches(other, _NO_LABELS):
                        value = labels.get(t.topology_key)
                        if value is not None:
                            pair = (t.topology_key, value)
                            anti_counts[pair] = anti_counts.get(pair, 0) + 1

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
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {}
        has_constraints = bool(((affinity.get("podAffinity") or {}).get(_PREFERRED))
                               or ((affinity.get("podAntiAffinity") or {}).get(_PREFERRED)))
        if self.ignore_preferred_of_existing and not has_constraints:
            return SKIP
        terms = terms_of(pod)
        labels_of = self._labels_of()
        preferred = [(_resolve(t, labels_of), w) for t, w in terms.preferred_affinity]
        preferred_anti = [(_resolve(t, labels_of), -w) for t, w in terms.preferred_anti_affinity]
        ns_labels = labels_of(pod.namespace)
        hard = self.hard_weight
        m: dict[str, dict[str, int]] = {}
        for ni in self.handle.cache.nodes.values():
            # Without preferred terms of its own, only pods with (anti-)affinity can contribute.
            others = ni.pods if has_constraints else ni.pods_with_affinity
            labels = ni.labels
            if not others or not labels:
                continue
            for other in others.values():
                for t, w in preferred:
                    _add_score(m, t, w, other, _NO_LABELS, labels)
                for t, w in preferred_anti:
                    _add_score(m, t, w, other, _NO_LABELS, labels)
                if not other.has_pod_affinity:
                    continue
                ot = terms_of(other)
                if hard > 0:
                    for t in ot.required_affinity:
                        _add_score(m, t, hard, pod, ns_labels, labels)
                for t, w in ot.preferred_affinity:
                    _add_score(m, t, w, pod, ns_labels, labels)
                for t, w in ot.preferred_anti_affinity:
                    _add_score(m, t, -w, pod, ns_labels, labels)
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
            ClusterEvent("AssignedPod", "Add", self._after_pod_add),
            ClusterEvent("AssignedPod", "Update", self._after_pod_update),
            ClusterEvent("AssignedPod", "Delete", self._after_pod_delete),
            ClusterEvent("Node", "Add", self._after_node_change),
            ClusterEvent("Node", "UpdateNodeLabel", self._after_node_change),
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
