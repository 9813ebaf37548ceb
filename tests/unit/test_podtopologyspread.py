"""PodTopologySpread against a plain re-statement of upstream's loops, plus its edge cases.

`Reference` walks every pod on every node with dicts, line for line as common.go / filtering.go /
scoring.go do. Random clusters (real Cache and MemoryStore) are then changed step by step -- pods
added, removed, relabelled or terminating, nodes relabelled, added and removed -- and the
plugin's cached, vectorised answers (Filter, filter_many, Score, NormalizeScore, AddPod/RemovePod)
must equal the reference after every step.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np
import pytest

from kubesched.api.selectors import LabelSelector
from kubesched.api.taints import first_untolerated
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import ConfigError
from kubesched.scheduler.framework import CycleState, Handle
from kubesched.scheduler.plugins.podtopologyspread import (
    HOSTNAME,
    PREFILTER_KEY,
    PRESCORE_KEY,
    REASON,
    REASON_LABEL,
    Constraint,
    PodTopologySpread,
    PreScoreState,
)
from kubesched.scheduler.types import Code, NodeInfo, PodInfo, Status
from kubesched.store.memory import MemoryStore

_uids = itertools.count()
ZONE = "zone"


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict] | None = None) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels if labels is not None else {}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "500"}}}


def pod(name: str, labels: dict[str, str] | None = None, ns: str = "default", constraints: list[dict] | None = None,
        terminating: bool = False, owner: dict | None = None, **spec: Any) -> PodInfo:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{next(_uids)}", "labels": labels or {}}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner:
        meta["ownerReferences"] = [owner]
    body = {"containers": [{"name": "c", "image": "pause"}], **spec}
    if constraints:
        body["topologySpreadConstraints"] = constraints
    return PodInfo.of({"kind": "Pod", "metadata": meta, "spec": body})


def spread(key: str, skew: int = 1, when: str = "DoNotSchedule", selector: dict | None = None, **extra: Any) -> dict:
    sel = {"matchLabels": {"foo": "bar"}} if selector is None else selector
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": sel, **extra}


def setup(nodes: list[dict], pods: list[tuple[PodInfo, str]], args: dict | None = None,
          store: MemoryStore | None = None) -> tuple[Cache, PodTopologySpread]:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p, where in pods:
        cache.add_pod(p, where)
    return cache, PodTopologySpread(Handle(cache, store), args)


# ---- the reference: upstream's loops with dicts ----------------------------------------------------


def _count(ni: NodeInfo, c: Constraint, ns: str) -> int:
    if c.selector.is_empty:
        return 0
    return sum(1 for p in ni.pods.values()
               if not p.terminating and p.namespace == ns and c.selector.matches(p.labels))


def _included(pod: PodInfo, c: Constraint, ni: NodeInfo) -> bool:
    if c.honor_affinity and not pod.required_affinity.matches(ni.labels, ni.name):
        return False
    hard = lambda t: t.get("effect") in ("NoSchedule", "NoExecute")  # noqa: E731
    return not (c.honor_taints and first_untolerated(ni.taints, pod.tolerations, hard) is not None)


class Reference:
    """calPreFilterState / Filter / updateWithPod / initPreScoreState / Score / NormalizeScore."""

    def __init__(self, pl: PodTopologySpread, cache: Cache, pod: PodInfo) -> None:
        self.pl, self.cache, self.pod = pl, cache, pod
        self.hard = pl.constraints(pod, "DoNotSchedule")
        self.tp: list[dict[str, int]] = [{} for _ in self.hard]
        for ni in cache.nodes.values():
            if not all(c.topology_key in ni.labels for c in self.hard):
                continue
            for i, c in enumerate(self.hard):
                if _included(pod, c, ni):
                    v = ni.labels[c.topology_key]
                    self.tp[i][v] = self.tp[i].get(v, 0) + _count(ni, c, pod.namespace)

    def update(self, other: PodInfo, ni: NodeInfo, delta: int) -> None:
        if other.namespace != self.pod.namespace or not all(c.topology_key in ni.labels for c in self.hard):
            return
        for i, c in enumerate(self.hard):
            if c.selector.matches(other.labels) and _included(self.pod, c, ni):
                v = ni.labels[c.topology_key]
                self.tp[i][v] = self.tp[i].get(v, 0) + delta

    def filter(self, ni: NodeInfo) -> str | None:
        for i, c in enumerate(self.hard):
            if c.topology_key not in ni.labels:
                return REASON_LABEL
            minimum = min(self.tp[i].values()) if self.tp[i] else 2**31 - 1
            if len(self.tp[i]) < c.min_domains:
                minimum = 0
            self_match = 1 if c.selector.matches(self.pod.labels) else 0
            if self.tp[i].get(ni.labels[c.topology_key], 0) + self_match - minimum > c.max_skew:
                return REASON
        return None

    def scores(self, filtered: list[NodeInfo]) -> list[int] | None:
        pod, soft = self.pod, self.pl.constraints(self.pod, "ScheduleAnyway")
        if not soft:
            return None
        require_all = bool(pod.obj["spec"].get("topologySpreadConstraints")) or not self.pl.system_defaulted
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in soft]
        size = [0] * len(soft)
        for ni in filtered:
            if require_all and not all(c.topology_key in ni.labels for c in soft):
                ignored.add(ni.name)
                continue
            for i, c in enumerate(soft):
                if c.topology_key == HOSTNAME:
                    continue
                v = ni.labels.get(c.topology_key, "")
                if v not in counts[i]:
                    counts[i][v] = 0
                    size[i] += 1
        weights = [math.log((len(filtered) - len(ignored) if c.topology_key == HOSTNAME else size[i]) + 2)
                   for i, c in enumerate(soft)]
        for ni in self.cache.nodes.values():
            if require_all and not all(c.topology_key in ni.labels for c in soft):
                continue
            for i, c in enumerate(soft):
                if not _included(pod, c, ni):
                    continue
                v = ni.labels.get(c.topology_key, "")
                if v in counts[i]:
                    counts[i][v] += _count(ni, c, pod.namespace)
        raw = []
        for ni in filtered:
            if ni.name in ignored:
                raw.append(0)
                continue
            score = 0.0
            for i, c in enumerate(soft):
                if c.topology_key in ni.labels:
                    cnt = _count(ni, c, pod.namespace) if c.topology_key == HOSTNAME \
                        else counts[i][ni.labels[c.topology_key]]
                    score += float(cnt) * weights[i] + float(c.max_skew - 1)
            whole = math.floor(score)
            raw.append(int(whole) + (1 if score - whole >= 0.5 else 0))  # math.Round: half away from zero
        lo = min((s for s, ni in zip(raw, filtered, strict=True) if ni.name not in ignored), default=2**63 - 1)
        hi = max((s for s, ni in zip(raw, filtered, strict=True) if ni.name not in ignored), default=0)
        out = []
        for s, ni in zip(raw, filtered, strict=True):
            if ni.name in ignored:
                out.append(0)
            elif hi == 0:
                out.append(100)
            else:
                out.append(100 * (hi + lo - s) // hi)
        return raw + out


# ---- random clusters -------------------------------------------------------------------------------

KEYS = (ZONE, "rack", HOSTNAME)


def random_node(rng: random.Random, i: int) -> dict:
    labels = {HOSTNAME: f"n{i}"} if rng.random() < 0.9 else {}
    if rng.random() < 0.8:
        labels[ZONE] = rng.choice(["a", "b", "c", ""])
    if rng.random() < 0.6:
        labels["rack"] = rng.choice(["r1", "r2"])
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(["x", "y"])
    taints = [{"key": "t", "value": rng.choice(["1", "2"]), "effect": rng.choice(["NoSchedule", "PreferNoSchedule"])}] \
        if rng.random() < 0.3 else []
    return node(f"n{i}", labels, taints)


def random_labels(rng: random.Random) -> dict[str, str]:
    labels = {}
    if rng.random() < 0.7:
        labels["foo"] = rng.choice(["bar", "baz"])
    if rng.random() < 0.5:
        labels["ver"] = rng.choice(["1", "2"])
    return labels


def random_pod(rng: random.Random, i: int) -> PodInfo:
    return pod(f"p{i}", random_labels(rng), ns=rng.choice(["default", "default", "other"]),
               terminating=rng.random() < 0.1)


def random_incoming(rng: random.Random) -> PodInfo:
    constraints = []
    for key in rng.sample(KEYS, rng.randint(1, 3)):
        when = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        selector = rng.choice([{"matchLabels": {"foo": "bar"}},
                               {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "baz"]}]},
                               {}, {"matchLabels": {"foo": "baz"}}])
        extra: dict[str, Any] = {}
        if when == "DoNotSchedule" and rng.random() < 0.3:
            extra["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            extra["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.4:
            extra["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.2:
            extra["matchLabelKeys"] = ["ver"]
        constraints.append(spread(key, rng.randint(1, 3), when, selector, **extra))
    spec: dict[str, Any] = {}
    if rng.random() < 0.3:
        spec["nodeSelector"] = {"tier": "x"}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "t", "operator": "Equal", "value": "1", "effect": "NoSchedule"}]
    return pod("incoming", random_labels(rng), constraints=constraints, **spec)


def check(pl: PodTopologySpread, cache: Cache, incoming: PodInfo, rng: random.Random) -> None:
    ref = Reference(pl, cache, incoming)
    nodes, slots = cache.ordered()
    state = CycleState()
    _, status = pl.pre_filter(state, incoming, nodes)
    if not ref.hard:
        assert status.code == Code.SKIP
    else:
        assert status.ok
        want = [ref.filter(ni) for ni in nodes]
        assert [_reason(pl.filter(state, incoming, ni)) for ni in nodes] == want
        codes = pl.filter_many(state, incoming, nodes, np.arange(len(nodes)), slots, cache.table)
        assert codes is not None
        assert [None if c == 0 else _reason(pl.decode(state, int(c))) for c in codes] == want
        # AddPod / RemovePod on a clone leave the original alone and match the reference's update.
        if nodes:
            ni = rng.choice(nodes)
            other = random_pod(rng, 999)
            clone = CycleState()
            clone[PREFILTER_KEY] = state[PREFILTER_KEY].clone()
            pl.add_pod(clone, incoming, other, ni)
            ref.update(other, ni, 1)
            assert [_reason(pl.filter(clone, incoming, n)) for n in nodes] == [ref.filter(n) for n in nodes]
            assert [_reason(pl.filter(state, incoming, n)) for n in nodes] == want
            victims = list(ni.pods.values())
            if victims:
                victim = rng.choice(victims)
                pl.remove_pod(clone, incoming, victim, ni)
                ref.update(victim, ni, -1)
                assert [_reason(pl.filter(clone, incoming, n)) for n in nodes] == [ref.filter(n) for n in nodes]
    filtered = [ni for ni in nodes if rng.random() < 0.8]
    if len(filtered) < 2:
        return
    status = pl.pre_score(state, incoming, filtered)
    want_scores = ref.scores(filtered)
    if want_scores is None:
        assert status.code == Code.SKIP
        return
    assert status.ok
    fslots = np.array([ni.slot for ni in filtered], dtype=np.int64)
    raw = pl.score_many(state, incoming, filtered, fslots, cache.table)
    assert [pl.score(state, incoming, ni) for ni in filtered] == raw.tolist()
    assert raw.tolist() + pl.normalize(state, incoming, raw).tolist() == want_scores


def _reason(status: Status) -> str | None:
    return None if status.ok else status.reasons[0]


@pytest.mark.parametrize("seed", range(60))
def test_matches_reference_through_cluster_changes(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 12))]
    cache, pl = setup(nodes, [])
    pods: list[PodInfo] = []
    for i in range(rng.randint(0, 40)):
        p = random_pod(rng, i)
        cache.add_pod(p, rng.choice(nodes)["metadata"]["name"])
        pods.append(p)
    next_node = len(nodes)
    for _step in range(8):
        for _ in range(3):
            check(pl, cache, random_incoming(rng), rng)
        for _ in range(rng.randint(1, 4)):  # change the cluster between cycles
            what = rng.random()
            names = list(cache.nodes)
            if what < 0.35 and names:
                p = random_pod(rng, next(_uids))
                cache.add_pod(p, rng.choice(names))
                pods.append(p)
            elif what < 0.55 and pods:
                cache.remove_pod(pods.pop(rng.randrange(len(pods))).uid)
            elif what < 0.7 and pods:  # a label change or termination: the pod is re-added
                old = pods.pop(rng.randrange(len(pods)))
                where = cache.node_of(old.uid)
                if where is not None:
                    new = pod(old.name, random_labels(rng), ns=old.namespace, terminating=rng.random() < 0.3)
                    new.uid = old.uid
                    cache.add_pod(new, where)
                    pods.append(new)
            elif what < 0.8 and names:
                n = random_node(rng, next_node)
                n["metadata"]["name"] = rng.choice(names)
                cache.update_node(n)
            elif what < 0.9:
                cache.add_node(random_node(rng, next_node))
                next_node += 1
            elif len(names) > 1:
                cache.remove_node(rng.choice(names))


# ---- worked cases ----------------------------------------------------------------------------------

SEED_NODES = [node(f"node{i}", {"node": f"node{i}", ZONE: z}) for i, z in ((1, "zoneA"), (2, "zoneA"),
                                                                          (3, "zoneB"), (4, "zoneB"))]


def seed_cluster(args: dict | None = None) -> tuple[Cache, PodTopologySpread]:
    return setup(SEED_NODES, [(pod(f"p{i}", {"foo": "bar"}), f"node{i}") for i in (1, 2, 3)], args)


def verdicts(pl: PodTopologySpread, cache: Cache, incoming: PodInfo) -> dict[str, Status]:
    nodes, _ = cache.ordered()
    state = CycleState()
    _, status = pl.pre_filter(state, incoming, nodes)
    assert status.ok
    return {ni.name: pl.filter(state, incoming, ni) for ni in nodes}


def test_one_constraint_allows_only_zone_b() -> None:
    cache, pl = seed_cluster()
    got = verdicts(pl, cache, pod("mypod", {"foo": "bar"}, constraints=[spread(ZONE)]))
    assert {n: s.ok for n, s in got.items()} == {"node1": False, "node2": False, "node3": True, "node4": True}
    assert got["node1"] == Status(Code.UNSCHEDULABLE, (REASON,), "PodTopologySpread")


def test_missing_label_is_unresolvable() -> None:
    cache, pl = seed_cluster()
    got = verdicts(pl, cache, pod("mypod", {"foo": "bar"}, constraints=[spread("rack")]))
    assert all(s == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_LABEL,), "PodTopologySpread")
               for s in got.values())


def test_no_hard_constraints_skip_prefilter() -> None:
    cache, pl = seed_cluster()
    nodes, _ = cache.ordered()
    _, status = pl.pre_filter(CycleState(), pod("p", constraints=[spread(ZONE, when="ScheduleAnyway")]), nodes)
    assert status.code == Code.SKIP


def test_empty_selector_counts_nothing_but_matches_self() -> None:
    """countPodsMatchSelector returns 0 for an empty selector while Selector.Matches(self) is true."""
    cache, pl = seed_cluster()
    got = verdicts(pl, cache, pod("mypod", constraints=[spread(ZONE, selector={})]))
    assert all(s.ok for s in got.values())  # 0 + 1 - 0 <= 1 everywhere


def test_match_label_keys_are_anded() -> None:
    cache, pl = setup(SEED_NODES[:3], [(pod("a", {"foo": "bar", "ver": "1"}), "node1"),
                                       (pod("b", {"foo": "bar", "ver": "1"}), "node2")])
    plain = pod("x", {"foo": "bar", "ver": "2"}, constraints=[spread(ZONE)])
    keyed = pod("y", {"foo": "bar", "ver": "2"}, constraints=[spread(ZONE, matchLabelKeys=["ver", "absent"])])
    assert not verdicts(pl, cache, plain)["node1"].ok
    assert verdicts(pl, cache, keyed)["node1"].ok
    c = pl.constraints(keyed, "DoNotSchedule")[0]
    assert c.selector.matches({"foo": "bar", "ver": "2"}) and not c.selector.matches({"foo": "bar", "ver": "1"})


def test_min_domains_treats_minimum_as_zero() -> None:
    cache, pl = setup(SEED_NODES[1:3], [(pod("a", {"foo": "bar"}), "node2"), (pod("b", {"foo": "bar"}), "node3")])
    assert not any(s.ok for s in verdicts(pl, cache, pod("m", {"foo": "bar"}, constraints=[
        spread(ZONE, minDomains=3)])).values())
    assert all(s.ok for s in verdicts(pl, cache, pod("m", {"foo": "bar"}, constraints=[
        spread(ZONE, minDomains=2)])).values())


def test_add_and_remove_pod_on_a_clone() -> None:
    cache, pl = seed_cluster()
    incoming = pod("mypod", {"foo": "bar"}, constraints=[spread(ZONE)])
    nodes, _ = cache.ordered()
    state = CycleState()
    pl.pre_filter(state, incoming, nodes)
    clone = CycleState()
    clone[PREFILTER_KEY] = state[PREFILTER_KEY].clone()
    node3 = cache.nodes["node3"]
    pl.add_pod(clone, incoming, pod("extra", {"foo": "bar"}), node3)  # zoneB 2: zoneA now fits
    assert pl.filter(clone, incoming, cache.nodes["node1"]).ok
    assert not pl.filter(state, incoming, cache.nodes["node1"]).ok
    pl.add_pod(clone, incoming, pod("other-ns", {"foo": "bar"}, ns="other"), cache.nodes["node1"])  # ignored
    assert pl.filter(clone, incoming, cache.nodes["node1"]).ok
    pl.remove_pod(clone, incoming, next(iter(node3.pods.values())), node3)
    assert not pl.filter(clone, incoming, cache.nodes["node1"]).ok


def test_score_prefers_fewer_matching_pods() -> None:
    cache, pl = seed_cluster()
    incoming = pod("mypod", {"foo": "bar"}, constraints=[spread(ZONE, when="ScheduleAnyway")])
    nodes, slots = cache.ordered()
    state = CycleState()
    assert pl.pre_score(state, incoming, nodes).ok
    raw = pl.score_many(state, incoming, nodes, slots, cache.table)
    by_node = dict(zip([n.name for n in nodes], pl.normalize(state, incoming, raw).tolist(), strict=True))
    assert by_node == {"node1": 33, "node2": 33, "node3": 100, "node4": 100}
    assert isinstance(state[PRESCORE_KEY].weights[0], float)


def test_round_half_away_from_zero() -> None:
    """int64(math.Round(2.5)) is 3 in Go, where Python's round() would give 2."""
    c = Constraint(1, ZONE, LabelSelector.EVERYTHING, "{}", 1, True, False)
    s = PreScoreState([c], [np.array([0, 1])], [None], [np.array([1, 0])], [2.5], np.zeros(2, dtype=bool),
                      np.zeros(2, dtype=bool))
    assert PodTopologySpread._scores(s, np.array([0, 1]), np.zeros(2, dtype=bool)).tolist() == [3, 0]


# ---- default constraints -----------------------------------------------------------------------------

RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-1", "controller": True}


def store_with(*objs: dict) -> MemoryStore:
    store = MemoryStore()
    for o in objs:
        store.create(o)
    return store


def replica_set(selector: dict | None) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "rs-1"}, "spec": {"selector": selector}}


def service(name: str, selector: dict | None, ns: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector} if selector is not None else {}}


def test_system_defaults_need_an_owner_or_service() -> None:
    store = store_with(replica_set({"matchLabels": {"app": "web"}}))
    _, pl = setup(SEED_NODES, [], store=store)
    owned = pod("w", {"app": "web"}, owner=RS_OWNER)
    loose = pod("l", {"app": "web"})
    soft = pl.constraints(owned, "ScheduleAnyway")
    assert [(c.topology_key, c.max_skew) for c in soft] == [(HOSTNAME, 3), ("topology.kubernetes.io/zone", 5)]
    assert soft[0].selector.matches({"app": "web"}) and not soft[0].selector.matches({"app": "db"})
    assert pl.constraints(owned, "DoNotSchedule") == []
    assert pl.constraints(loose, "ScheduleAnyway") == []


def test_default_selector_merges_services_and_controller() -> None:
    store = store_with(replica_set({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                       service("s1", {"app": "web"}), service("s2", {"team": "a"}), service("s3", None),
                       service("s4", {"app": "other"}), service("s5", {"app": "web"}, ns="elsewhere"))
    _, pl = setup(SEED_NODES, [], store=store)
    p = pod("w", {"app": "web", "team": "a", "tier": "1"}, owner=RS_OWNER)
    sel = LabelSelector.compile(pl.default_selector(p))
    assert sel.matches({"app": "web", "team": "a", "tier": "2"})
    assert not sel.matches({"app": "web", "team": "a"})  # the ReplicaSet's Exists requirement
    assert not sel.matches({"app": "web", "tier": "2"})  # s2's team=a
    # A controller that is not found, or of another kind, contributes nothing.
    other = pod("x", {"app": "web"}, owner={**RS_OWNER, "kind": "Deployment"})
    assert pl.default_selector(other) == {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}


def test_list_defaulting_and_hard_defaults() -> None:
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}
    store = store_with(replica_set({"matchLabels": {"foo": "bar"}}))
    cache = Cache()
    for n in SEED_NODES:
        cache.add_node(n)
    for i in (1, 2, 3):
        cache.add_pod(pod(f"p{i}", {"foo": "bar"}), f"node{i}")
    pl = PodTopologySpread(Handle(cache, store), args)
    got = verdicts(pl, cache, pod("w", {"foo": "bar"}, owner=RS_OWNER))
    assert {n: s.ok for n, s in got.items()} == {"node1": False, "node2": False, "node3": True, "node4": True}
    assert not pl.system_defaulted


@pytest.mark.parametrize(("args", "path"), [
    ({"defaultingType": "Sometimes"}, "defaultingType"),
    ({"defaultingType": "System", "defaultConstraints": [spread(ZONE, selector=None)]}, "defaultingType"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE,
                                                        "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[0].maxSkew"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                        "whenUnsatisfiable": "DoNotSchedule",
                                                        "labelSelector": {}}]},
     "defaultConstraints[0].labelSelector"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}, "defaultConstraints[1]"),
])
def test_args_validation(args: dict, path: str) -> None:
    with pytest.raises(ConfigError) as err:
        PodTopologySpread(Handle(Cache()), args)
    assert err.value.path.endswith(path)


# ---- queueing hints -----------------------------------------------------------------------------------


def hints(pl: PodTopologySpread) -> dict[tuple[str, str], Any]:
    return {(e.resource, e.action.name): e.hint for e in pl.events_to_register()}


def test_pod_hints() -> None:
    _, pl = seed_cluster()
    h = hints(pl)
    target = pod("t", {"foo": "bar"}, constraints=[spread(ZONE)])
    match, other = pod("m", {"foo": "bar"}), pod("o", {"foo": "baz"})
    assert h[("AssignedPod", "Add")](target, None, match)
    assert not h[("AssignedPod", "Add")](target, None, other)
    assert not h[("AssignedPod", "Add")](target, None, pod("n", {"foo": "bar"}, ns="other"))
    assert h[("AssignedPod", "Delete")](target, match, None)
    assert not h[("AssignedPod", "Delete")](target, other, None)
    relabelled = pod("m", {"foo": "baz"})
    assert h[("AssignedPod", "Update")](target, match, relabelled)
    assert not h[("AssignedPod", "Update")](target, match, pod("m", {"foo": "bar", "x": "y"}))
    # The pod's own toleration change matters only with a nodeTaintsPolicy Honor constraint.
    honor = pod("h", {"foo": "bar"}, constraints=[spread(ZONE, nodeTaintsPolicy="Honor")])
    tolerating = pod("h", {"foo": "bar"}, constraints=[spread(ZONE, nodeTaintsPolicy="Honor")],
                     tolerations=[{"key": "k", "operator": "Exists"}])
    tolerating.uid = honor.uid
    assert h[("Pod", "Update")](honor, honor, tolerating)
    plain_tol = pod("t", {"foo": "bar"}, constraints=[spread(ZONE)], tolerations=[{"key": "k", "operator": "Exists"}])
    plain_tol.uid = target.uid
    assert not h[("Pod", "Update")](target, target, plain_tol)


def test_node_hints() -> None:
    _, pl = seed_cluster()
    h = hints(pl)
    target = pod("t", {"foo": "bar"}, constraints=[spread(ZONE)])
    with_zone, without = node("x", {ZONE: "c"}), node("x", {"other": "1"})
    assert h[("Node", "Add")](target, None, with_zone)
    assert not h[("Node", "Add")](target, None, without)
    assert h[("Node", "Delete")](target, with_zone, None)
    assert h[("Node", "UpdateNodeLabel")](target, without, with_zone)
    assert h[("Node", "UpdateNodeLabel")](target, with_zone, node("x", {ZONE: "d"}))
    assert not h[("Node", "UpdateNodeLabel")](target, with_zone, node("x", {ZONE: "c", "other": "2"}))
    tainted = node("x", {ZONE: "c"}, [{"key": "k", "effect": "NoSchedule"}])
    assert h[("Node", "UpdateNodeTaint")](target, with_zone, tainted)


def test_cache_replaces_its_node_order_on_node_changes() -> None:
    """The plugin rebuilds its per-slot label codes when cache.ordered() returns a new list: keep it so."""
    cache, _ = seed_cluster()
    before, _ = cache.ordered()
    cache.update_node(node("node1", {"node": "node1", ZONE: "zoneC"}))
    after, _ = cache.ordered()
    assert after is not before
    cache.add_pod(pod("x"), "node2")
    assert cache.ordered()[0] is after  # pod changes keep it (counts are tracked by generation instead)
