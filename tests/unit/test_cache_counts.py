"""The scheduler cache's running summaries stay true through any sequence of node and pod changes.

A cycle trusts them instead of looking at rows: the counts of cordoned, tainted and port-holding
nodes let it drop filters every node passes, the least allocatable per resource lets NodeResourcesFit
skip its "more than the node has at all" test, and the counts of pods with pod (anti-)affinity let
InterPodAffinity skip. A count that drifts would make a pod land where the real scheduler would not
put it. The same goes for the table's column-major copies the vectorised plugins read, and for
what they keep derived from allocatable."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache, NodeTable
from kubesched.scheduler.plugins.nodeports import HAS_PORTS
from kubesched.scheduler.plugins.nodeunschedulable import CORDONED
from kubesched.scheduler.plugins.tainttoleration import HARD_TAINTS, PREFER_TAINTS
from kubesched.scheduler.types import PodInfo

FLAGS = (CORDONED, HARD_TAINTS, PREFER_TAINTS, HAS_PORTS)

NODES = ("n0", "n1", "n2", "n3")
EFFECTS = (None, "NoSchedule", "NoExecute", "PreferNoSchedule")
AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}}
PREFERRED = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "a"}},
                                      "topologyKey": "kubernetes.io/hostname"}}]}}


def node(name: str, cpu: int, effect: str | None, cordoned: bool, gpus: int) -> dict:
    allocatable = {"cpu": str(cpu), "memory": "8Gi", "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    spec: dict = {"unschedulable": cordoned}
    if effect:
        spec["taints"] = [{"key": "k", "value": "v", "effect": effect}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": spec, "status": {"allocatable": allocatable}}


def pod(uid: str, port: bool, affinity: dict | None) -> PodInfo:
    container: dict = {"name": "c", "resources": {"requests": {"cpu": "100m"}}}
    if port:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    spec: dict = {"containers": [container]}
    if affinity:
        spec["affinity"] = affinity
    return PodInfo.of({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": uid, "namespace": "default", "uid": uid,
                                                                         "labels": {"app": "a"}}, "spec": spec})


changes = st.lists(st.one_of(
    st.tuples(st.just("node"), st.sampled_from(NODES), st.integers(1, 64), st.sampled_from(EFFECTS), st.booleans(),
              st.integers(0, 2)),
    st.tuples(st.just("remove node"), st.sampled_from(NODES)),
    st.tuples(st.just("pod"), st.sampled_from([f"p{i}" for i in range(8)]), st.sampled_from(NODES), st.booleans(),
              st.sampled_from([None, AFFINITY, PREFERRED])),
    st.tuples(st.just("remove pod"), st.sampled_from([f"p{i}" for i in range(8)])),
), max_size=40)


@settings(max_examples=200, deadline=None)
@given(changes)
def test_summaries_match_the_nodes_and_pods(steps: list[tuple]) -> None:
    cache = Cache()
    cache.table = NodeTable(capacity=1)  # grown as nodes come, as a new resource's column is
    for flag in FLAGS[:2]:
        cache.register_flag(flag)
    for i, step in enumerate(steps):
        if i == len(steps) // 2:  # a plugin's flags are registered when its profile is built, nodes or not
            for flag in FLAGS[2:]:
                cache.register_flag(flag)
        if step[0] == "node":
            obj = node(*step[1:])
            (cache.update_node if step[1] in cache.nodes else cache.add_node)(obj)
        elif step[0] == "remove node":
            if step[1] in cache.nodes:
                cache.remove_node(step[1])
        elif step[0] == "pod":
            cache.add_pod(pod(step[1], step[3], step[4]), step[2])
        else:
            cache.remove_pod(step[1])
        live = list(cache.nodes.values())
        table = cache.table
        for flag in table.flags:
            assert table.flagged[flag] == sum(bool(table.flags[flag][ni.slot]) for ni in live), flag
        assert table.flagged["unschedulable"] == sum(ni.unschedulable for ni in live)
        if "has_ports" in table.flags:
            assert table.flagged["has_ports"] == sum(bool(ni.used_ports) for ni in live)
        if live:
            rows = np.array([table.alloc[ni.slot] for ni in live])
            assert table.alloc_floor() == rows.min(axis=0).tolist()
        for name in ("alloc", "req", "nonzero"):
            assert (table.by_column(name) == getattr(table, name).T).all(), name
        below = table.alloc_derived(("cpu below", 8000), lambda alloc: alloc[0] < 8000)
        assert (below == (table.alloc[:, 0] < 8000)).all()
        if live:  # a bound on what any node has requested, which NodeResourcesFit trusts to skip
            most = np.array([table.req[ni.slot] for ni in live]).max(axis=0)
            assert (np.array(table.req_ceiling()) >= most).all()
        on_nodes = [p for ni in live for p in ni.pods.values()]
        assert cache.affinity_pods == sum(p.has_pod_affinity for p in on_nodes)
        assert cache.anti_affinity_pods == sum(p.has_pod_affinity and p.has_required_anti_affinity for p in on_nodes)
