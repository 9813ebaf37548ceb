"""The nominator's running per-node request sums must equal summing the nominated pods afresh,
through renominations, deletions and nodes replaced in reused slots."""

from __future__ import annotations

import numpy as np

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.types import PODS, PodInfo


def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, cpu: str, priority: int = 0) -> PodInfo:
    return PodInfo.of({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                       "spec": {"priority": priority, "containers": [
                           {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}})


def fresh_sums(nominator: Nominator, cache: Cache) -> np.ndarray:
    table = cache.table
    out = np.zeros_like(table.req)
    for name, pods in nominator._lists.items():
        if name not in cache.nodes:
            continue
        for p in pods:
            out[cache.nodes[name].slot, table.columns[PODS]] += 1
            for res, amount in p.requests.items():
                if res in table.columns:
                    out[cache.nodes[name].slot, table.columns[res]] += amount
    return out


def check(nominator: Nominator, cache: Cache) -> None:
    table = cache.table
    nominator.delta.refresh(nominator, table, cache.nodes, table.columns[PODS])
    assert (nominator.delta.req == fresh_sums(nominator, cache)).all()
    counts = {cache.nodes[n].slot: len(p) for n, p in nominator._lists.items() if n in cache.nodes}
    assert {int(s): int(c) for s, c in enumerate(nominator.delta.count) if c} == counts


def test_sums_follow_nominations_and_nodes() -> None:
    cache, nominator = Cache(), Nominator()
    for i in range(3):
        cache.add_node(node(f"n{i}"))
    a, b, c = pod("a", "1"), pod("b", "500m"), pod("c", "2")
    nominator.add(a, "n0")
    nominator.add(b, "n0")
    nominator.add(c, "n1")
    check(nominator, cache)
    nominator.add(b, "n2")  # renominated elsewhere
    nominator.delete(a.uid)
    check(nominator, cache)
    cache.remove_node("n2")  # its slot is reused by a new node with no nominations
    cache.add_node(node("n3"))
    check(nominator, cache)
    cache.add_node(node("n2"))  # back, in another slot: b's request counts there
    check(nominator, cache)
    nominator.add(c, "")
    check(nominator, cache)


def test_relevant_leaves_out_the_pod_itself() -> None:
    nominator = Nominator()
    a, b = pod("a", "1", priority=10), pod("b", "1", priority=10)
    nominator.add(a, "n0")
    nominator.add(b, "n0")
    assert nominator.relevant(a) == {"n0": [b]}
    nominator.delete(b.uid)
    assert nominator.relevant(a) == {}
    assert nominator.relevant(pod("x", "1", priority=20)) == {}  # lower-priority nominations do not count
    assert nominator.relevant(pod("y", "1", priority=5)) == {"n0": [a]}
