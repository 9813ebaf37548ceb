"""InterPodAffinity: the indexed count maps and score map against upstream's plain loops.

`reference_*` below walk every pod on every node exactly as filtering.go / scoring.go do; random
clusters (real Cache, real MemoryStore for Namespace labels) are then changed step by step --
pods added and removed, nodes relabelled -- and the plugin's incrementally indexed answers must
stay identical to the reference after every step.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework import CycleState, Handle
from kubesched.scheduler.plugins.interpodaffinity import (
    PREFILTER_KEY,
    PRESCORE_KEY,
    AffinityTerm,
    InterPodAffinity,
    merge_label_keys,
    terms_of,
)
from kubesched.scheduler.types import Code, NodeInfo, PodInfo
from kubesched.store.memory import MemoryStore

_uids = itertools.count()
NAMESPACES = {"ns1": {"team": "x"}, "ns2": {"team": "y"}}  # `default` has no Namespace object


def node(name: str, **labels: str) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, namespace: str = "default", labels: dict | None = None, affinity: dict | None = None) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if affinity is not None:
        spec["affinity"] = affinity
    return PodInfo.of({"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": f"u{next(_uids)}",
                                                   "labels": labels or {}}, "spec": spec})


def term(key: str = "kubernetes.io/hostname", **match: str) -> dict:
    return {"labelSelector": {"matchLabels": match}, "topologyKey": key}


def cluster() -> tuple[Cache, InterPodAffinity, Callable[[str], dict[str, str]]]:
    store = MemoryStore()
    for name, labels in NAMESPACES.items():
        store.create({"kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    cache = Cache()
    handle = Handle(cache, store)
    return cache, InterPodAffinity(handle), handle.namespace_labels


# ---- the reference: upstream's loops, pod by pod --------------------------------------------


def _matches(t: AffinityTerm, p: PodInfo, ns_labels: Mapping[str, str]) -> bool:
    return (p.namespace in t.namespaces or t.namespace_selector.matches(ns_labels)) and t.selector.matches(p.labels)


def _incoming(t: AffinityTerm, p: PodInfo, labels_of: Callable[[str], Mapping[str, str]]) -> bool:
    """An incoming pod's term with its namespaceSelector merged into the namespaces."""
    return _matches(t, p, labels_of(p.namespace))


def reference_prefilter(incoming: PodInfo, nodes: list[NodeInfo], labels_of: Callable[[str], Mapping[str, str]]
                        ) -> tuple[dict, dict, dict] | None:
    terms = terms_of(incoming)
    ns_labels = labels_of(incoming.namespace)
    existing: dict = {}
    affinity: dict = {}
    anti: dict = {}
    for ni in nodes:
        for p in ni.pods.values():
            if p.has_required_anti_affinity:
                for t in terms_of(p).required_anti_affinity:
                    if _matches(t, incoming, ns_labels) and t.topology_key in ni.labels:
                        pair = (t.topology_key, ni.labels[t.topology_key])
                        existing[pair] = existing.get(pair, 0) + 1
            aff = terms.required_affinity
            if aff and all(_incoming(t, p, labels_of) for t in aff):
                for t in aff:
                    if t.topology_key in ni.labels:
                        pair = (t.topology_key, ni.labels[t.topology_key])
                        affinity[pair] = affinity.get(pair, 0) + 1
            for t in terms.required_anti_affinity:
                if _incoming(t, p, labels_of) and t.topology_key in ni.labels:
                    pair = (t.topology_key, ni.labels[t.topology_key])
                    anti[pair] = anti.get(pair, 0) + 1
    if not existing and not terms.required_affinity and not terms.required_anti_affinity:
        return None
    return existing, affinity, anti


def reference_filter(incoming: PodInfo, maps: tuple[dict, dict, dict], labels: Mapping[str, str],
                     labels_of: Callable[[str], Mapping[str, str]]) -> int:
    existing, affinity, anti = maps
    terms = terms_of(incoming)
    pods_exist = True
    for t in terms.required_affinity:
        if t.topology_key not in labels:
            return 1
        if affinity.get((t.topology_key, labels[t.topology_key]), 0) <= 0:
            pods_exist = False
    if not pods_exist and not (not affinity and all(_incoming(t, incoming, labels_of)
                                                    for t in terms.required_affinity)):
        return 1
    if anti:
        for t in terms.required_anti_affinity:
            if t.topology_key in labels and anti.get((t.topology_key, labels[t.topology_key]), 0) > 0:
                return 2
    if any(existing.get(pair, 0) > 0 for pair in labels.items()):
        return 3
    return 0


def reference_prescore(incoming: PodInfo, nodes: list[NodeInfo], hard: int,
                       labels_of: Callable[[str], Mapping[str, str]]) -> dict | None:
    terms = terms_of(incoming)
    ns_labels = labels_of(incoming.namespace)
    m: dict[str, dict[str, int]] = {}

    def process(t: AffinityTerm, weight: int, matched: bool, labels: Mapping[str, str]) -> None:
        if matched and t.topology_key in labels:
            scores = m.setdefault(t.topology_key, {})
            scores[labels[t.topology_key]] = scores.get(labels[t.topology_key], 0) + weight

    for ni in nodes:
        if not ni.labels:
            continue
        for p in ni.pods.values():
            for t, w in terms.preferred_affinity:
                process(t, w, _incoming(t, p, labels_of), ni.labels)
            for t, w in terms.preferred_anti_affinity:
                process(t, -w, _incoming(t, p, labels_of), ni.labels)
            other = terms_of(p)
            if hard > 0:
                for t in other.required_affinity:
                    process(t, hard, _matches(t, incoming, ns_labels), ni.labels)
            for t, w in other.preferred_affinity:
                process(t, w, _matches(t, incoming, ns_labels), ni.labels)
            for t, w in other.preferred_anti_affinity:
                process(t, -w, _matches(t, incoming, ns_labels), ni.labels)
    return m or None


def flat_maps(state: CycleState) -> tuple[dict, dict, dict] | None:
    s = state.get(PREFILTER_KEY)
    if s is None:
        return None
    return s.existing_counts.clone().flat(), s.affinity_counts.clone().flat(), s.anti_affinity_counts.clone().flat()


def compare(cache: Cache, plugin: InterPodAffinity, labels_of: Callable[[str], Mapping[str, str]],
            incoming: PodInfo) -> None:
    nodes = list(cache.nodes.values())
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, nodes)
    want = reference_prefilter(incoming, nodes, labels_of)
    assert (status.code == Code.SKIP) == (want is None)
    assert flat_maps(state) == want
    if want is not None:
        for ni in nodes:
            expected = reference_filter(incoming, want, ni.labels, labels_of)
            assert state[PREFILTER_KEY].check(ni.labels) == expected, ni.name
        positions = np.arange(len(nodes))
        codes = plugin.filter_many(state, incoming, nodes, positions, positions, cache.table)
        assert codes.tolist() == [state[PREFILTER_KEY].check(ni.labels) for ni in nodes]
    status = plugin.pre_score(state, incoming, nodes)
    want_scores = reference_prescore(incoming, nodes, plugin.hard_weight, labels_of)
    assert (status.code == Code.SKIP) == (want_scores is None)
    if want_scores is not None:
        assert state[PRESCORE_KEY].topology_score == want_scores


# ---- random clusters -------------------------------------------------------------------------

TOPOLOGY_KEYS = ["kubernetes.io/hostname", "zone", "rack"]
selectors = st.sampled_from([
    None, {}, {"matchLabels": {"app": "a"}}, {"matchLabels": {"app": "b"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "c"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
])
ns_selectors = st.sampled_from([None, {}, {"matchLabels": {"team": "x"}},
                                {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["y"]}]},
                                {"matchLabels": {"kubernetes.io/metadata.name": "default"}}])


@st.composite
def affinity_terms(draw: st.DrawFn) -> dict:
    t: dict[str, Any] = {"topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS))}
    selector = draw(selectors)
    if selector is not None:
        t["labelSelector"] = selector
    namespaces = draw(st.sampled_from([None, [], ["ns1"], ["default", "ns2"]]))
    if namespaces is not None:
        t["namespaces"] = namespaces
    ns_selector = draw(ns_selectors)
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    if draw(st.booleans()):
        t["matchLabelKeys"] = ["tier"]
    return t


weighted = st.builds(lambda t, w: {"weight": w, "podAffinityTerm": t}, affinity_terms(), st.integers(1, 100))


@st.composite
def pods(draw: st.DrawFn, name: str) -> PodInfo:
    labels = draw(st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b", "c"]), max_size=2))
    affinity: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if draw(st.booleans()):
            affinity[kind] = {
                "requiredDuringSchedulingIgnoredDuringExecution": draw(st.lists(affinity_terms(), max_size=2)),
                "preferredDuringSchedulingIgnoredDuringExecution": draw(st.lists(weighted, max_size=2)),
            }
    return pod(name, draw(st.sampled_from(["default", "ns1", "ns2"])), labels, affinity or None)


@st.composite
def node_labels(draw: st.DrawFn) -> dict:
    labels = {}
    if draw(st.integers(0, 3)):
        labels["zone"] = draw(st.sampled_from(["z1", "z2"]))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
    return labels


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_index_matches_upstream_loops(data: st.DataObject) -> None:
    cache, plugin, labels_of = cluster()
    names = [f"n{i}" for i in range(data.draw(st.integers(1, 5)))]
    for name in names:
        cache.add_node(node(name, **data.draw(node_labels())))
    placed: list[PodInfo] = []
    for step in range(data.draw(st.integers(1, 8))):
        action = data.draw(st.sampled_from(["add", "add", "remove", "relabel"]))
        if action == "add" or not placed:
            for i in range(data.draw(st.integers(1, 4))):
                p = data.draw(pods(f"p{step}-{i}"))
                cache.add_pod(p, data.draw(st.sampled_from(names)))
                placed.append(p)
        elif action == "remove":
            victim = placed.pop(data.draw(st.integers(0, len(placed) - 1)))
            cache.remove_pod(victim.uid)
        else:
            name = data.draw(st.sampled_from(names))
            cache.update_node(node(name, **data.draw(node_labels())))
        for i in range(3):
            compare(cache, plugin, labels_of, data.draw(pods(f"incoming-{i}")))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_add_remove_pod_match_recomputation(data: st.DataObject) -> None:
    """PreFilterExtensions: counts after AddPod/RemovePod equal counts computed with/without the pod."""
    cache, plugin, labels_of = cluster()
    names = ["n0", "n1", "n2"]
    for name in names:
        cache.add_node(node(name, **data.draw(node_labels())))
    for i in range(data.draw(st.integers(0, 5))):
        cache.add_pod(data.draw(pods(f"p{i}")), data.draw(st.sampled_from(names)))
    incoming = data.draw(pods("incoming"))
    extra = data.draw(pods("extra"))
    where = cache.nodes[data.draw(st.sampled_from(names))]
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, list(cache.nodes.values()))
    if status.code == Code.SKIP:
        return
    before = flat_maps(state)
    added = CycleState()
    added[PREFILTER_KEY] = state[PREFILTER_KEY].clone()
    plugin.add_pod(added, incoming, extra, where)
    cache.add_pod(extra, where.name)
    assert flat_maps(added) == reference_prefilter(incoming, list(cache.nodes.values()), labels_of)
    assert flat_maps(state) == before  # the clone was independent
    plugin.remove_pod(added, incoming, extra, where)
    assert flat_maps(added) == before


# ---- specific behaviour ------------------------------------------------------------------------


def run_prefilter(cache: Cache, plugin: InterPodAffinity, incoming: PodInfo) -> CycleState:
    state = CycleState()
    plugin.pre_filter(state, incoming, list(cache.nodes.values()))
    return state


def test_skip_without_terms_or_matching_existing_anti_affinity() -> None:
    cache, plugin, _ = cluster()
    cache.add_node(node("n1"))
    cache.add_pod(pod("guard", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(app="noisy")]}}), "n1")
    state = CycleState()
    _, status = plugin.pre_filter(state, pod("quiet", labels={"app": "quiet"}), list(cache.nodes.values()))
    assert status.code == Code.SKIP
    _, status = plugin.pre_filter(state, pod("noisy", labels={"app": "noisy"}), list(cache.nodes.values()))
    assert status.ok
    assert state[PREFILTER_KEY].existing_counts.flat() == {("kubernetes.io/hostname", "n1"): 1}


def test_count_maps() -> None:
    """Affinity counts need a pod matching ALL terms (each term counted once per such pod)."""
    cache, plugin, _ = cluster()
    cache.add_node(node("n1", zone="z1"))
    cache.add_node(node("n2", zone="z1"))
    cache.add_node(node("n3"))
    cache.add_pod(pod("db1", labels={"app": "db", "tier": "x"}), "n1")
    cache.add_pod(pod("db2", labels={"app": "db"}), "n2")
    cache.add_pod(pod("db3", labels={"app": "db", "tier": "x"}), "n3")
    incoming = pod("web", affinity={
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", app="db"), term(tier="x")]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", app="db")]}})
    s = run_prefilter(cache, plugin, incoming)[PREFILTER_KEY]
    assert s.affinity_counts.flat() == {("zone", "z1"): 1, ("kubernetes.io/hostname", "n1"): 1,
                                        ("kubernetes.io/hostname", "n3"): 1}
    assert s.anti_affinity_counts.flat() == {("zone", "z1"): 2}
    assert s.existing_counts.flat() == {}


def test_first_pod_rule_needs_self_match_no_matches_and_the_topology_key() -> None:
    cache, plugin, _ = cluster()
    cache.add_node(node("n1", zone="z1"))
    cache.add_node(node("n2"))
    self_affine = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", app="g")]}}
    s = run_prefilter(cache, plugin, pod("first", labels={"app": "g"}, affinity=self_affine))[PREFILTER_KEY]
    assert s.check(cache.nodes["n1"].labels) == 0
    assert s.check(cache.nodes["n2"].labels) == 1  # no zone label
    s = run_prefilter(cache, plugin, pod("stranger", labels={"app": "h"}, affinity=self_affine))[PREFILTER_KEY]
    assert s.check(cache.nodes["n1"].labels) == 1


def test_matchlabelkeys_merge_like_the_api_server() -> None:
    t = {"labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["rev", "absent"],
         "mismatchLabelKeys": ["team"], "topologyKey": "zone"}
    merged = merge_label_keys(t["labelSelector"], t, {"rev": "1", "team": "x"})
    assert merged == {"matchLabels": {"app": "a"}, "matchExpressions": [
        {"key": "rev", "operator": "In", "values": ["1"]}, {"key": "team", "operator": "NotIn", "values": ["x"]}]}
    assert merge_label_keys(None, t, {"rev": "1"}) is None  # a null selector selects nothing either way


def test_invalid_selector_is_unresolvable_at_prefilter() -> None:
    cache, plugin, _ = cluster()
    cache.add_node(node("n1"))
    bad = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, "topologyKey": "zone"}]}}
    _, status = plugin.pre_filter(CycleState(), pod("bad", affinity=bad), list(cache.nodes.values()))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith("parsing pod: requiredAffinityTerms: ")


@pytest.mark.parametrize(("raw", "want"), [
    ([100, 29, 0], [100, 28, 0]),  # 100 * 0.29 is 28.999... in float64, truncated
    ([-5, 0, -29], [82, 100, 0]),
    ([7, 7, 7], [0, 0, 0]),  # no spread: everything 0, not 100
    ([3], [0]),
    ([-10, -20], [100, 0]),
])
def test_normalize_is_float_min_max_truncated(raw: list[int], want: list[int]) -> None:
    _, plugin, _ = cluster()
    out = plugin.normalize(CycleState(), pod("p"), np.array(raw, dtype=np.int64))
    assert out.dtype == np.int64 and out.tolist() == want


def test_score_sums_the_topology_map_over_node_labels() -> None:
    cache, plugin, _ = cluster()
    cache.add_node(node("n1", zone="z1"))
    cache.add_node(node("n2", zone="z2"))
    cache.add_pod(pod("cache", labels={"app": "cache"}), "n1")
    cache.add_pod(pod("batch", labels={"app": "batch"}), "n2")
    incoming = pod("web", affinity={
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": term(app="cache")}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 4, "podAffinityTerm": term("zone", app="batch")}]}})
    state = CycleState()
    assert plugin.pre_score(state, incoming, list(cache.nodes.values())).ok
    assert state[PRESCORE_KEY].topology_score == {"kubernetes.io/hostname": {"n1": 10}, "zone": {"z2": -4}}
    assert [plugin.score(state, incoming, ni) for ni in cache.nodes.values()] == [10, -4]


def test_hard_pod_affinity_weight_and_ignore_preferred_args() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("needy", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(app="web")]}}), "n1")
    web = pod("web", labels={"app": "web"})
    for weight, want in ((1, {"kubernetes.io/hostname": {"n1": 1}}), (7, {"kubernetes.io/hostname": {"n1": 7}})):
        plugin = InterPodAffinity(Handle(cache), {"hardPodAffinityWeight": weight})
        state = CycleState()
        assert plugin.pre_score(state, web, list(cache.nodes.values())).ok
        assert state[PRESCORE_KEY].topology_score == want
    for args in ({"hardPodAffinityWeight": 0}, {"ignorePreferredTermsOfExistingPods": True}):
        plugin = InterPodAffinity(Handle(cache), args)
        assert plugin.pre_score(CycleState(), web, list(cache.nodes.values())).code == Code.SKIP
    with pytest.raises(ValueError, match="not in valid range"):
        InterPodAffinity(Handle(cache), {"hardPodAffinityWeight": 101})


def test_queueing_hints() -> None:
    _, plugin, _ = cluster()
    hints = {(e.resource, e.action.name): e.hint for e in plugin.events_to_register()}
    waiting = pod("web", affinity={
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", app="db")]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(app="web")]}})
    db, other = pod("db", labels={"app": "db"}), pod("x", labels={"app": "x"})
    web = pod("web-1", labels={"app": "web"})
    add, update, delete = hints["AssignedPod", "Add"], hints["AssignedPod", "Update"], hints["AssignedPod", "Delete"]
    assert add(waiting, None, db) and not add(waiting, None, other)
    assert update(waiting, other, db) and not update(waiting, db, db)
    assert update(waiting, web, other) and not update(waiting, other, other)
    assert delete(waiting, web, None) and not delete(waiting, db, None)
    assert not delete(pod("plain"), web, None)  # no anti-affinity of its own: upstream skips too
    node_change = hints["Node", "UpdateNodeLabel"]
    assert hints["Node", "Add"](waiting, None, node("n9"))  # anti-affinity: any new node may do
    affinity_only = pod("a", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term("zone", app="db")]}})
    assert not hints["Node", "Add"](affinity_only, None, node("n9"))
    assert hints["Node", "Add"](affinity_only, None, node("n9", zone="z1"))
    assert node_change(affinity_only, node("n9"), node("n9", zone="z1"))
    assert node_change(affinity_only, node("n9", zone="z1"), node("n9", zone="z2"))
    assert not node_change(affinity_only, node("n9", zone="z1"), node("n9", zone="z1", rack="r"))
    assert node_change(waiting, node("n9"), node("n9", zone="z1"))  # via its affinity term
