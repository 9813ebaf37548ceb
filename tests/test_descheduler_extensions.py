"""kubesched's descheduler extensions beyond the descheduler: the avoid-node hint end to end,
and the scheduler plugin that reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from kubesched.scheduler.framework import CycleState
from kubesched.scheduler.plugins.nodepreferavoidpods import AVOID_PODS_ANNOTATION, NodePreferAvoidPods
from kubesched.scheduler.types import NodeInfo, PodInfo
from kubesched.sim.runner import load, simulate

SCENARIO = Path(__file__).parent / "scenarios" / "descheduler-ext-prefer-avoid-pods.yaml"


def _run(tmp_path: Path, edit: Any = None, until: str | None = None) -> Any:
    docs = list(yaml.safe_load_all(SCENARIO.read_text()))
    for doc in docs:
        if edit is not None:
            edit(doc)
        if doc["kind"] == "Scenario" and until is not None:
            doc["spec"]["until"] = until
            doc["spec"]["expect"] = []
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return simulate(load([str(path)])).cluster


def _replacement_node(cluster: Any) -> str:
    d = next(d for d in cluster.recorder.disruptions if d.pod == "default/web-a")
    ns, name = d.replacement.split("/")
    return cluster.recorder.pod(ns, name).obj["spec"]["nodeName"]


def test_without_the_hint_the_replacement_returns_to_the_node_it_left(tmp_path: Path) -> None:
    def drop_hint(doc: dict[str, Any]) -> None:
        if doc["kind"] == "DeschedulerPolicy":
            profile = doc["profiles"][0]
            profile["pluginConfig"] = [c for c in profile["pluginConfig"] if c["name"] != "PreferAvoidPods"]
            del profile["plugins"]["preEvictionFilter"]

    assert _replacement_node(_run(tmp_path, drop_hint)) == "n1"
    assert _replacement_node(_run(tmp_path)) == "n2"


def test_the_hint_names_the_controller_and_expires_after_its_ttl(tmp_path: Path) -> None:
    cluster = _run(tmp_path, until="5m")
    node = cluster.store.get("Node", "", "n1")
    entries = json.loads(node["metadata"]["annotations"][AVOID_PODS_ANNOTATION])["preferAvoidPods"]
    rs = cluster.store.get("ReplicaSet", "default", "web")
    assert [e["podSignature"]["podController"]["uid"] for e in entries] == [rs["metadata"]["uid"]]
    assert entries[0]["reason"] == "RemovePodsHavingTooManyRestarts"
    assert entries[0]["evictionTime"] == cluster.api.timestamp(60.0)
    later = _run(tmp_path, until="11m")
    assert AVOID_PODS_ANNOTATION not in (later.store.get("Node", "", "n1")["metadata"].get("annotations") or {})


def _pod(kind: str | None, uid: str = "rs-1") -> PodInfo:
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "p1"}
    if kind:
        meta["ownerReferences"] = [{"kind": kind, "name": "o", "uid": uid, "controller": True}]
    return PodInfo.of({"metadata": meta, "spec": {"containers": [{"name": "c"}]}})


def _node(annotation: str | None) -> NodeInfo:
    meta: dict[str, Any] = {"name": "n"}
    if annotation is not None:
        meta["annotations"] = {AVOID_PODS_ANNOTATION: annotation}
    return NodeInfo.of({"metadata": meta, "status": {"allocatable": {"cpu": "1"}}}, 0)


def test_node_prefer_avoid_pods_scores() -> None:
    plugin = NodePreferAvoidPods.__new__(NodePreferAvoidPods)
    avoid = json.dumps({"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "rs-1"}}}]})
    state = CycleState()
    assert plugin.score(state, _pod("ReplicaSet"), _node(avoid)) == 0
    assert plugin.score(state, _pod("ReplicaSet", "rs-2"), _node(avoid)) == 100  # another ReplicaSet
    assert plugin.score(state, _pod("StatefulSet", "rs-1"), _node(avoid)) == 100  # only RS/RC pods avoid
    assert plugin.score(state, _pod(None), _node(avoid)) == 100
    assert plugin.score(state, _pod("ReplicaSet"), _node("{not json")) == 100  # unreadable: no avoidance
    assert plugin.score(state, _pod("ReplicaSet"), _node(None)) == 100
