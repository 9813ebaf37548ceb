"""Scores kept across cycles (nodescores.py), and host selection, choose as scoring every node afresh does.

A cluster fills up with pods of a few shapes while nodes change under it (allocatable raised,
a node deleted and another added, a node with amounts too large for the kept path); after
each step, for a pod of every shape, the totals without detail (kept node-local scores,
uniform plugins left out) differ from the detailed ones by one constant, so the same node wins.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.scheduler.framework import CycleState
from kubesched.scheduler.scheduler import select_host
from kubesched.scheduler.types import PodInfo
from kubesched.scheduler.vectorised.filters import find_feasible

SHAPES = [{}, {"cpu": "100m", "memory": "500Mi"}, {"cpu": "1", "memory": "64Mi"}, {"memory": "1Gi"}]


def node(name: str, cpu: str, memory: str | None, prefer_taint: bool) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "pods": "110"}
    if memory is not None:
        allocatable["memory"] = memory
    spec = {"taints": [{"key": "spot", "effect": "PreferNoSchedule"}]} if prefer_taint else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": spec, "status": {"allocatable": allocatable}}


def pod(name: str, shape: int) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "app"}
    if SHAPES[shape]:
        container["resources"] = {"requests": SHAPES[shape]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def check_same_winner(cluster: Cluster) -> None:
    sched = cluster.scheduler
    profile = sched.profiles["default-scheduler"]
    nodes, slots = sched.cache.ordered()
    for shape in range(len(SHAPES)):
        probe = PodInfo.of({**pod(f"probe-{shape}", shape), "metadata": {"name": f"probe-{shape}", "uid": f"p{shape}"}})
        state = CycleState()
        _, status, _ = profile.run_pre_filter(state, probe, nodes)
        assert status.ok
        outcome = find_feasible(profile, state, probe, nodes, slots, sched.cache.table, 0, len(nodes))
        if len(outcome.feasible) < 2:
            continue
        assert profile.run_pre_score(state, probe, outcome.feasible).ok
        feasible_slots = slots[outcome.positions]
        full, _ = profile.run_score(state, probe, outcome.feasible, feasible_slots, sched.cache.table)
        fast, detail = profile.run_score(state, probe, outcome.feasible, feasible_slots, sched.cache.table,
                                         detail=False)
        assert not detail
        shift = full - fast
        assert (shift == shift[0]).all(), (shape, full.tolist(), fast.tolist())
        assert select_host(full) == select_host(fast)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["2", "4", "8"]), st.sampled_from(["4Gi", "8Gi", "7Ei", None]),
                          st.booleans()), min_size=2, max_size=8),
       st.lists(st.one_of(st.integers(0, len(SHAPES) - 1), st.sampled_from(["grow", "replace", "evict"])),
                min_size=1, max_size=30))
def test_kept_scores_choose_as_fresh_ones(node_specs: list[tuple[str, str | None, bool]],
                                          steps: list[int | str]) -> None:
    cluster = Cluster()
    names = [f"n{i}" for i in range(len(node_specs))]
    for name, (cpu, memory, taint) in zip(names, node_specs, strict=True):
        cluster.create(node(name, cpu, memory, taint))
    cluster.run()
    check_same_winner(cluster)
    placed: list[str] = []
    for k, step in enumerate(steps):
        if step == "grow":  # some node's allocatable changes
            cluster.api.update_status("Node", "", names[0], lambda s: s["allocatable"].update(cpu="16"))
        elif step == "replace":  # a node goes and another comes, perhaps into its slot
            cluster.api.delete("Node", "", names.pop())
            names.append(f"m{k}")
            cluster.create(node(names[-1], "4", "16Gi", False))
        elif step == "evict" and placed:
            name = placed.pop(0)
            if cluster.store.get("Pod", "default", name) is not None:  # not gone with its node
                cluster.api.delete("Pod", "default", name, grace_period=0)
        elif isinstance(step, int):
            cluster.create(pod(f"p{k}", step))
            placed.append(f"p{k}")
        cluster.run()
        check_same_winner(cluster)


def test_a_run_places_pods_as_with_every_node_rescored() -> None:
    """The same pods placed with kept scores (no --explain) and with every score computed and
    recorded (--explain for every pod) land on the same nodes."""
    def placements(explain: set[str] | None) -> dict[str, str]:
        cluster = Cluster(explain=explain)
        for i in range(12):
            cluster.create(node(f"n{i}", ["2", "4", "8"][i % 3], ["4Gi", "8Gi", "7Ei", None][i % 4], i % 5 == 0))
        for i in range(60):
            cluster.create(pod(f"p{i}", i % len(SHAPES)))
        cluster.run()
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in cluster.store.list("Pod")}

    kept, fresh = placements(None), placements({"*"})
    assert kept == fresh
    assert len(set(kept.values())) > 1
    assert np.all([v for v in kept.values()])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=600), st.sampled_from([2**61, -(2**61), 2**40]))
def test_host_selection_ignores_a_constant_however_large(totals: list[int], shift: int) -> None:
    """Scores far from zero take select_host's other way to the same winner: a constant added to
    every node changes nothing."""
    base = np.array(totals, dtype=np.int64)
    assert select_host(base + shift) == select_host(base)
