"""DefaultEvictor: which pods the descheduler may evict, with upstream's reasons (defaultevictor_test.go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster.cluster import Cluster
from kubesched.sim.runner import build_cluster, load

OWNED = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid",
                              "controller": True}]}
NODES = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": pool}},
          "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}}
         for name, pool in (("n1", "a"), ("n2", "a"), ("n3", "b"))]


def make_pod(name: str, node: str = "n1", meta: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body = {"nodeName": node, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}],
            **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **OWNED, **(meta or {})}, "spec": body}


def cluster_with(tmp_path: Path, pods: list[dict[str, Any]], args: dict[str, Any],
                 extra: list[dict[str, Any]] | None = None) -> Cluster:
    policy = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
              "profiles": [{"name": "p", "pluginConfig": [{"name": "DefaultEvictor", "args": args}]}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all([*NODES, *(extra or []), *pods, policy]))
    cluster = build_cluster(load([str(path)]))
    cluster.run(until=0.0)
    return cluster


def verdicts(tmp_path: Path, pods: list[dict[str, Any]], args: dict[str, Any] | None = None,
             extra: list[dict[str, Any]] | None = None, until: float = 0.0) -> dict[str, tuple[bool, str]]:
    """Each pod's Filter answer and the reason DefaultEvictor gives for a refusal."""
    cluster = cluster_with(tmp_path, pods, args or {}, extra)
    if until:
        cluster.run(until=until)
    d = cluster.descheduler
    assert d is not None
    evictor = d.build_profile(d.policy.profiles[0]).plugins[0]
    out = {}
    for p in pods:
        obj = cluster.store.get("Pod", "default", p["metadata"]["name"])
        status = evictor.filter(obj)
        out[p["metadata"]["name"]] = (status.ok, status.reason)
    return out


def test_default_protections(tmp_path: Path) -> None:
    pods = [
        make_pod("owned"),
        make_pod("bare", meta={"ownerReferences": []}),
        make_pod("daemon", meta={"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                                      "uid": "ds-uid", "controller": True}]}),
        make_pod("mirror", meta={"annotations": {"kubernetes.io/config.mirror": "x"}}),
        make_pod("static", meta={"annotations": {"kubernetes.io/config.source": "file"}}),
        make_pod("critical", priorityClassName="system-cluster-critical"),
        make_pod("scratch", volumes=[{"name": "v", "emptyDir": {}}]),
        make_pod("claim", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
        make_pod("forced", meta={"annotations": {"descheduler.alpha.kubernetes.io/evict": ""}, "ownerReferences": []}),
    ]
    v = verdicts(tmp_path, pods)
    assert v["owned"] == (True, "")
    assert v["bare"] == (False, "pod does not have any ownerRefs")
    assert v["daemon"] == (False, "daemonset pods are protected against eviction")
    assert v["mirror"] == (False, "pod is a mirror pod")
    assert v["static"] == (False, "pod is a static pod")
    assert v["critical"] == (False, "pod has system critical priority and is protected against eviction, "
                                    "pod has higher priority than specified priority class threshold")
    assert v["scratch"] == (False, "pod has local storage and is protected against eviction")
    assert v["claim"] == (True, "")  # ignorePvcPods is off by default
    assert v["forced"] == (True, "")  # the evict annotation overrides every check


def test_legacy_switches_lift_protections(tmp_path: Path) -> None:
    pods = [
        make_pod("daemon", meta={"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                                      "uid": "ds-uid", "controller": True}]}),
        make_pod("critical", priorityClassName="system-cluster-critical"),
        make_pod("scratch", volumes=[{"name": "v", "emptyDir": {}}]),
        make_pod("claim", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
        make_pod("bare-running", meta={"ownerReferences": []}),
    ]
    v = verdicts(tmp_path, pods, {"evictDaemonSetPods": True, "evictSystemCriticalPods": True,
                                  "evictLocalStoragePods": True, "ignorePvcPods": True, "evictFailedBarePods": True})
    assert v["daemon"][0] and v["critical"][0] and v["scratch"][0]
    assert v["claim"] == (False, "pod with PVC is protected against eviction")
    # evictFailedBarePods lets only failed bare pods go
    assert v["bare-running"] == (False, "pod does not have any ownerRefs and is not in failed phase")


def test_priority_threshold_by_value_and_by_class(tmp_path: Path) -> None:
    pods = [make_pod("low", priority=0), make_pod("gold", priorityClassName="gold")]
    gold = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gold"}, "value": 1000}
    by_value = verdicts(tmp_path, pods, {"priorityThreshold": {"value": 1000}}, [gold])
    assert by_value["low"] == (True, "")
    assert by_value["gold"] == (False, "pod has higher priority than specified priority class threshold")
    by_class = verdicts(tmp_path, pods, {"priorityThreshold": {"name": "gold"}}, [gold])
    assert by_class == by_value


def test_label_selector_min_replicas_and_min_pod_age(tmp_path: Path) -> None:
    pods = [make_pod("web", meta={"labels": {"app": "web"}}), make_pod("db", meta={"labels": {"app": "db"}})]
    v = verdicts(tmp_path, pods, {"labelSelector": {"matchLabels": {"app": "web"}}})
    assert v["web"] == (True, "")
    assert v["db"] == (False, "pod labels do not match the labelSelector filter in the policy parameter")
    v = verdicts(tmp_path, pods, {"minReplicas": 3})
    assert v["web"] == (False, "owner has 2 replicas which is less than minReplicas of 3")
    v = verdicts(tmp_path, pods, {"minReplicas": 2})
    assert v["web"] == (True, "")
    young = verdicts(tmp_path, pods, {"minPodAge": "5m"}, until=60.0)
    assert young["web"] == (False, "pod age is not older than MinPodAge: 5m seconds")
    old = verdicts(tmp_path, pods, {"minPodAge": "5m"}, until=301.0)
    assert old["web"] == (True, "")


def test_node_fit_uses_the_scheduler_filters(tmp_path: Path) -> None:
    """nodeFit: a pod pinned to pool a fits n2 (same pool) while n2 has room, and no longer when it is full."""
    pinned = {"nodeSelector": {"pool": "a"}}
    pods = [make_pod("mover", **pinned)]
    cluster = cluster_with(tmp_path, pods, {"nodeFit": True})
    d = cluster.descheduler
    assert d is not None
    evictor = d.build_profile(d.policy.profiles[0]).plugins[0]
    mover = cluster.store.get("Pod", "default", "mover")
    assert evictor.pre_eviction_filter(mover).ok
    filler = make_pod("filler", node="n2")
    filler["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1950m"
    cluster.create(filler)
    cluster.run(until=1.0)
    status = evictor.pre_eviction_filter(mover)
    assert not status.ok
    assert status.reason == ("pod does not fit on any other node because of nodeSelector(s), Taint(s), "
                              "or nodes marked as unschedulable")


@pytest.mark.parametrize("protections,protected", [
    ({"defaultDisabled": ["PodsWithLocalStorage"]}, False),
    ({"extraEnabled": ["PodsWithPVC"]}, True),
])
def test_pod_protections_replace_the_legacy_switches(tmp_path: Path, protections: dict[str, Any],
                                                     protected: bool) -> None:
    volume = "emptyDir" if "defaultDisabled" in protections else "persistentVolumeClaim"
    pods = [make_pod("p", volumes=[{"name": "v", volume: {} if volume == "emptyDir" else {"claimName": "c"}}])]
    v = verdicts(tmp_path, pods, {"podProtections": protections})
    assert v["p"][0] is not protected
