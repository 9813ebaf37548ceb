"""Preemption keeps each node's victim selection for preemptors alike until the node changes, so
that many preemptors of one shape need not judge the same unchanged nodes again. The kept answers
must be the ones a fresh selection gives: a node that changes loses its entry, and runs with and
without anything kept decide the same on random clusters whose nodes change between attempts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler.vectorised.dryrun import LowerPriorityIndex


def node(i: int, cpu: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": "8Gi", "pods": "8"}}}


def pod(name: str, cpu: int, priority: str, on: str | None = None, shutdown: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app",
                                            "resources": {"requests": {"cpu": f"{cpu}m", "memory": "256Mi"}}}],
                            "priorityClassName": priority, "terminationGracePeriodSeconds": 30}
    if on:
        spec["nodeName"] = on
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if shutdown:  # how long the pod takes to stop once deleted
        meta["annotations"] = {"sim.kubesched.io/shutdown": shutdown}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def cluster_of(nodes: list[dict[str, Any]], running: list[dict[str, Any]], seed: int = 0) -> Cluster:
    cluster = Cluster(seed=seed)
    for name, value in (("low", 10), ("mid", 50), ("high", 100)):
        cluster.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                        "value": value})
    for obj in nodes + running:
        cluster.create(obj)
    cluster.run()
    return cluster


def kept(cluster: Cluster) -> LowerPriorityIndex:
    plugin = next(pl for pl in cluster.scheduler.profiles["default-scheduler"].at("postFilter")
                  if isinstance(pl, DefaultPreemption))
    index = plugin.evaluator.batched._below
    assert index is not None
    return index


def decided_nodes(cluster: Cluster) -> set[str]:
    kept_now = kept(cluster).decided.values()
    return {name for name, ni in cluster.scheduler.cache.nodes.items()
            if any(ni.slot < len(decided) and decided[ni.slot] is not None for decided in kept_now)}


def test_a_node_that_changes_loses_its_kept_selection() -> None:
    nodes = [node(i, 4) for i in range(4)]
    cluster = cluster_of(nodes, [pod(f"r{i}", 1000, "low", on=f"n{i % 4}", shutdown="20s") for i in range(16)])
    cluster.create(pod("p0", 3000, "high"))
    cluster.run(until=2.0)
    chosen = cluster.api.store.get("Pod", "default", "p0")["status"]["nominatedNodeName"]
    # The node chosen changed (its victims are terminating); the others were kept as judged.
    assert decided_nodes(cluster) == {"n0", "n1", "n2", "n3"} - {chosen}
    others = sorted({"n0", "n1", "n2", "n3"} - {chosen})
    cluster.api.delete("Pod", "default", next(f"r{i}" for i in range(16) if f"n{i % 4}" == others[0]))
    cluster.run(until=3.0)
    assert others[0] not in decided_nodes(cluster)
    cluster.api.patch("Node", "", others[1], {"metadata": {"labels": {"extra": "yes"}}})
    assert decided_nodes(cluster) == set(others[2:])


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(2, 7))
    nodes = [node(i, draw(st.sampled_from([2, 4]))) for i in range(n)]
    running = [pod(f"r{i}", draw(st.sampled_from([500, 1000])), draw(st.sampled_from(["low", "low", "mid"])),
                   on=f"n{draw(st.integers(0, n - 1))}", shutdown=draw(st.sampled_from([None, "3s", "20s"])))
               for i in range(draw(st.integers(n, 3 * n)))]
    shape = st.tuples(st.sampled_from([1000, 1500, 2000]), st.sampled_from(["mid", "high", "high"]))
    arriving = [(draw(st.integers(0, 12)), draw(shape)) for _ in range(draw(st.integers(2, 8)))]
    # Between attempts nodes change: a running pod leaves, or a node gets a label; or a pod that
    # is not tried arrives nominated to a node, which changes no node.
    changes = [(draw(st.integers(0, 12)), draw(st.sampled_from(["delete", "label", "nominate"])),
                draw(st.integers(0, 3 * n)))
               for _ in range(draw(st.integers(0, 4)))]
    return {"nodes": nodes, "running": running, "arriving": arriving, "changes": changes, "seed": draw(st.integers(0, 3))}


def outcome(w: dict[str, Any]) -> dict[str, Any]:
    cluster = cluster_of(w["nodes"], w["running"], w["seed"])
    api = cluster.api
    for i, (at, (cpu, priority)) in enumerate(w["arriving"]):
        arriving = pod(f"p{i}", cpu, priority)
        cluster.clock.call_at(float(at), lambda obj=arriving: cluster.create(obj))
    for at, what, k in w["changes"]:
        if what == "delete":
            cluster.clock.call_at(float(at), lambda k=k: api.store.get("Pod", "default", f"r{k}")
                                  and api.delete("Pod", "default", f"r{k}"))
            continue
        name = w["nodes"][k % len(w["nodes"])]["metadata"]["name"]
        if what == "nominate":  # a gated pod is never tried, so it stays nominated
            held = pod(f"held-{at}-{k}", 1000, "high")
            held["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
            cluster.clock.call_at(float(at), lambda held=held, name=name: (
                cluster.create(held), api.update_status("Pod", "default", held["metadata"]["name"],
                                                        lambda st: st.update(nominatedNodeName=name))))
        else:
            cluster.clock.call_at(float(at), lambda name=name, at=at: api.patch(
                "Node", "", name, {"metadata": {"labels": {"changed": str(at)}}}))
    cluster.run()
    pods = {p["metadata"]["name"]: (p["spec"].get("nodeName"), (p.get("status") or {}).get("nominatedNodeName"))
            for p in api.store.list("Pod")}
    events = [(e.get("reason"), e.get("message"), (e.get("involvedObject") or {}).get("name"))
              for e in api.store.list("Event")]
    return {"pods": pods, "events": events, "preemptions": cluster.recorder.preemptions}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_kept_selections_decide_as_fresh_ones(w: dict[str, Any]) -> None:
    with_kept = outcome(w)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LowerPriorityIndex, "KEEP", 0)  # nothing remembered from one attempt to the next
        assert with_kept == outcome(w)


def test_preemptors_alike_reuse_what_was_kept() -> None:
    """The comparison is not vacuous: preemptors of one shape keep selections, and preempt."""
    cluster = cluster_of([node(i, 4) for i in range(6)], [pod(f"r{i}", 1000, "low", on=f"n{i % 6}") for i in range(24)])
    for i in range(3):
        cluster.create(pod(f"p{i}", 3000, "high"))
    cluster.run(until=2.0)
    assert len(cluster.recorder.preemptions) == 3
    assert all(len(p["victims"]) == 3 for p in cluster.recorder.preemptions)
    assert len(decided_nodes(cluster)) == 3  # the three nodes not preempted on
