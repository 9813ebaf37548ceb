"""Rebuilding the ReplicaSets an export of Deployments and pods lacks: exported from a real
(simulated) cluster without its ReplicaSets, a Deployment's pods give back the ReplicaSet the
cluster has; pods made from a template are recognised as such, and others are not."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import deep_copy
from kubesched.cluster.cluster import Cluster
from kubesched.controllers.deploymentutil import HASH_LABEL
from kubesched.controllers.podcontrol import made_from, pods_revision
from kubesched.controllers.rebuiltreplicasets import rebuild_replica_sets
from kubesched.sim.runner import load, simulate

TEMPLATE = {"metadata": {"labels": {"app": "web"}, "annotations": {"team": "a"}},
            "spec": {"containers": [{"name": "c", "image": "web:1", "resources": {"requests": {"cpu": "500m"}}}]}}


def running_deployment() -> Cluster:
    c = Cluster()
    c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
    c.create({"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "default", "annotations": {"owner": "shop"}},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}})
    c.run(60)
    return c


def export(c: Cluster, *kinds: str) -> list[dict[str, Any]]:
    return [deep_copy(o) for kind in kinds for o in c.api.list(kind, "default")]


def test_a_deployments_pods_give_back_its_replica_set() -> None:
    c = running_deployment()
    [live] = c.api.list("ReplicaSet", "default")
    rebuilt, note = rebuild_replica_sets(export(c, "Deployment", "Pod"))
    assert len(rebuilt) == 1 and note is not None and live["metadata"]["name"] in note
    rs = rebuilt[0]
    for field in ("name", "namespace", "uid", "ownerReferences", "labels"):
        assert rs["metadata"][field] == live["metadata"][field], field
    assert rs["metadata"]["annotations"] == live["metadata"]["annotations"]
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["selector"] == live["spec"]["selector"]
    assert rs["spec"]["template"] == live["spec"]["template"]


def test_nothing_is_rebuilt_when_the_export_has_the_replica_sets_or_lacks_the_deployment() -> None:
    c = running_deployment()
    assert rebuild_replica_sets(export(c, "Deployment", "ReplicaSet", "Pod")) == ([], None)
    assert rebuild_replica_sets(export(c, "Pod")) == ([], None)


def test_pods_are_made_from_their_template_and_not_from_another() -> None:
    c = running_deployment()
    pods = export(c, "Pod")
    assert len(pods) == 3 and made_from(TEMPLATE, pods)  # admitted and bound: more than the template says
    other = deep_copy(TEMPLATE)
    other["spec"]["containers"][0]["image"] = "web:2"
    assert not made_from(other, pods)
    relabelled = deep_copy(TEMPLATE)
    relabelled["metadata"]["labels"]["tier"] = "front"
    assert not made_from(relabelled, pods)
    as_written = deep_copy(TEMPLATE)
    as_written["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 0.5  # the same quantity
    assert made_from(as_written, pods)


def test_the_pods_revision_is_the_one_most_pods_of_the_template_carry() -> None:
    c = running_deployment()
    pods = export(c, "Pod")
    assert pods_revision(TEMPLATE, pods, HASH_LABEL) == pods[0]["metadata"]["labels"][HASH_LABEL]
    other = deep_copy(TEMPLATE)
    other["spec"]["containers"][0]["image"] = "web:2"
    assert pods_revision(other, pods, HASH_LABEL) is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replicas=st.integers(1, 6), strategy=st.sampled_from(["Recreate", "RollingUpdate"]),
       min_ready=st.sampled_from([0, 10]), nodes=st.integers(1, 3))
def test_an_export_without_replica_sets_runs_on_with_the_same_pods(tmp_path_factory: pytest.TempPathFactory,
                                                                    replicas: int, strategy: str, min_ready: int,
                                                                    nodes: int) -> None:
    """Invariant: a settled Deployment exported as `kubectl get deploy,pods` (no ReplicaSets) and
    simulated again keeps exactly its pods, on their nodes: none created, none deleted."""
    c = Cluster()
    for i in range(nodes):
        c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                  "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
    c.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"replicas": replicas, "minReadySeconds": min_ready, "strategy": {"type": strategy},
                       "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}})
    c.run(120)
    exported = [deep_copy(n) for n in c.api.list("Node")] + export(c, "Deployment", "Pod")
    before = {(p["metadata"]["name"], p["spec"]["nodeName"]) for p in exported if p["kind"] == "Pod"}
    path = tmp_path_factory.mktemp("export") / "snap.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": exported}))
    scenario = load([str(path)])
    scenario.until = 300
    result = simulate(scenario)
    after = {(p["metadata"]["name"], p["spec"]["nodeName"]) for p in result.cluster.api.list("Pod", "default")}
    assert after == before
    assert any("rebuilt 1 ReplicaSet(s)" in str(w) for w in scenario.warnings)
