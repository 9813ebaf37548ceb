"""The scheduling cycle's shortcuts give the answers of the slow ways they replace.

Host selection finds the heap's root without replaying heap.Init; the feasible list is sliced
when it is one stretch of the walk; nodes failing alike share one status in the FitError count;
NodeAffinity matches nodes alike in the labels its selectors name once.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kubesched.scheduler.framework import CycleState
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.scheduler import select_host
from kubesched.scheduler.types import Code, NodeInfo, PodInfo, Status
from kubesched.scheduler.vectorised.filters import _pick, fit_error_message


def heap_root(totals: list[int]) -> int:
    """container/heap.Init on indices ordered by descending total, replayed step by step."""
    h = list(range(len(totals)))
    n = len(h)
    for start in range(n // 2 - 1, -1, -1):
        i = start
        while (left := 2 * i + 1) < n:
            j = left + 1 if left + 1 < n and totals[h[left + 1]] > totals[h[left]] else left
            if not totals[h[j]] > totals[h[i]]:
                break
            h[i], h[j] = h[j], h[i]
            i = j
    return h[0]


@pytest.mark.parametrize("size", [2, 3, 7, 64, 500, 1337, 5000])
def test_select_host_matches_the_heap_on_large_ties(size: int) -> None:
    rng = random.Random(size)
    for spread in (0, 1, 3, 100):
        totals = [rng.randint(0, spread) for _ in range(size)]
        assert select_host(np.array(totals, dtype=np.int64)) == heap_root(totals)


def test_pick_keeps_the_walk_order_across_the_wrap() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        n = rng.randint(1, 40)
        start = rng.randrange(n)
        walk = [(start + k) % n for k in range(n)]
        a = rng.randrange(n)
        chosen = walk[a:rng.randint(a, n)] if rng.random() < 0.5 else [w for w in walk if rng.random() < 0.7]
        nodes: list[Any] = [f"node-{i}" for i in range(n)]
        assert _pick(nodes, np.array(chosen, dtype=np.int64), start) == [nodes[i] for i in chosen]


def test_fit_error_counts_shared_and_distinct_statuses_alike() -> None:
    shared = Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "Too many pods"), "NodeResourcesFit")
    same_words = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
    statuses = {f"a{i}": shared for i in range(12)} | {f"b{i}": same_words for i in range(3)}
    statuses["c"] = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
    assert fit_error_message(20, statuses, None, None, None) == (
        "0/20 nodes are available: 12 Too many pods, 16 Insufficient cpu.")


def _node(i: int, labels: dict[str, str]) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": f"node-{i}", "labels": labels},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}, i)


def _pod(spec: dict[str, Any]) -> PodInfo:
    return PodInfo.of({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
                       "spec": {"containers": [{"name": "c", "image": "i"}], **spec}})


AFFINITIES: list[dict[str, Any]] = [
    {"nodeSelector": {"disk": "ssd"}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]},
                              {"key": "disk", "operator": "DoesNotExist"}]},
        {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["2"]}]}]}}}},
    {"nodeSelector": {"zone": "z2"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["3"]},
                                  {"key": "disk", "operator": "Exists"}]}]}}}},
]


@pytest.mark.parametrize("spec", AFFINITIES)
@pytest.mark.parametrize("added", [None, {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z0", "z2"]}]}]}}])
def test_node_affinity_matches_alike_nodes_once_with_the_same_verdicts(spec: dict[str, Any],
                                                                       added: dict[str, Any] | None) -> None:
    rng = random.Random(3)
    nodes = []
    for i in range(300):
        labels = {"kubernetes.io/hostname": f"node-{i}"}
        for key, values in (("zone", ["z0", "z1", "z2"]), ("disk", ["ssd", "hdd", ""]), ("gen", ["1", "3", "x"])):
            if rng.random() < 0.7:
                labels[key] = rng.choice(values)
        nodes.append(_node(i, labels))
    plugin = NodeAffinity(None, {"addedAffinity": added} if added else {})
    pod, state = _pod(spec), CycleState()
    positions = np.array(rng.sample(range(300), 200), dtype=np.int64)
    codes = plugin.filter_many(state, pod, nodes, positions, positions, None)
    assert codes is not None
    verdicts = [plugin.filter(state, pod, nodes[i]) for i in positions.tolist()]
    assert [plugin.decode(state, int(c)) if c else None for c in codes.tolist()] == [
        None if v.ok else v for v in verdicts]
    assert any(v.ok for v in verdicts) and not all(v.ok for v in verdicts)


def test_node_affinity_naming_nodes_is_matched_node_by_node() -> None:
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}}}
    nodes = [_node(i, {}) for i in range(3)]
    positions = np.arange(3, dtype=np.int64)
    assert NodeAffinity(None, {}).filter_many(CycleState(), _pod(spec), nodes, positions, positions, None) is None
