"""The Deployment controller on a real cluster: its ReplicaSets, annotations, events and status."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import controller_of
from kubesched.cluster.cluster import Cluster
from kubesched.controllers.deploymentutil import HASH_LABEL
from kubesched.controllers.podcontrol import compute_hash

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "web:1", "resources": {"requests": {"cpu": "1"}}}]}}


def deployment(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE, **spec}}


def cluster(*objs: dict[str, Any], cpu: str = "16") -> Cluster:
    c = Cluster()
    c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
    for obj in objs:
        assert c.create(obj) is not None
    return c


def replica_sets(c: Cluster) -> dict[str, dict[str, Any]]:
    return {rs["metadata"]["name"]: rs for rs in c.api.list("ReplicaSet", "default")}


def the_deployment(c: Cluster) -> dict[str, Any]:
    return c.api.get("Deployment", "default", "web")


def scaling_events(c: Cluster) -> list[str]:
    return [e.message for e in c.recorder.events if e.reason == "ScalingReplicaSet" and e.object == "Deployment/default/web"]


def template_hash(c: Cluster) -> str:
    """The pod-template-hash of the Deployment's template as stored, that is defaulted."""
    return compute_hash(the_deployment(c)["spec"]["template"])


def condition(c: Cluster, ctype: str) -> dict[str, Any]:
    return next(x for x in the_deployment(c)["status"]["conditions"] if x["type"] == ctype)


def test_the_replica_set_is_named_and_labelled_by_the_template_hash() -> None:
    c = cluster(deployment(3))
    c.run(until=1)
    h = template_hash(c)
    rs = replica_sets(c)[f"web-{h}"]
    assert rs["metadata"]["labels"] == {"app": "web", HASH_LABEL: h}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", HASH_LABEL: h}}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", HASH_LABEL: h}
    assert rs["metadata"]["annotations"] == {
        "team": "a", "deployment.kubernetes.io/revision": "1", "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4"}  # 3 + maxSurge 25% rounded up
    ref = controller_of(rs)
    assert ref is not None and ref["kind"] == "Deployment" and ref["name"] == "web"
    assert all(p["metadata"]["labels"][HASH_LABEL] == h for p in c.api.list("Pod", "default"))
    assert scaling_events(c) == [f"Scaled up replica set web-{h} from 0 to 3"]
    d = the_deployment(c)
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert {k: v for k, v in d["status"].items() if k != "conditions"} == {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
        "terminatingReplicas": 0}
    assert condition(c, "Available")["reason"] == "MinimumReplicasAvailable"
    assert condition(c, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert condition(c, "Progressing")["message"] == f'ReplicaSet "web-{h}" has successfully progressed.'


def test_scaling_resizes_the_replica_set() -> None:
    c = cluster(deployment(3))
    c.run(until=1)
    c.api.patch("Deployment", "default", "web", {"spec": {"replicas": 1}})
    c.run(until=2)
    h = template_hash(c)
    rs = replica_sets(c)[f"web-{h}"]
    assert rs["spec"]["replicas"] == 1
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "1"
    assert scaling_events(c)[-1] == f"Scaled down replica set web-{h} from 3 to 1"


def test_a_template_change_recreates_and_an_old_template_brings_its_replica_set_back() -> None:
    # The pods take their whole grace period (the default 30 s) to stop.
    v1 = {**TEMPLATE, "metadata": {**TEMPLATE["metadata"], "annotations": {"sim.kubesched.io/shutdown": "30s"}}}
    c = cluster(deployment(2, template=v1, strategy={"type": "Recreate"}))
    c.run(until=1)
    old = f"web-{template_hash(c)}"
    v2 = {**v1, "spec": {"containers": [{"name": "c", "image": "web:2"}]}}
    c.api.patch("Deployment", "default", "web", {"spec": {"template": v2}})
    c.run(until=2)
    assert replica_sets(c)[old]["spec"]["replicas"] == 0 and len(replica_sets(c)) == 1  # waits for the old pods
    assert the_deployment(c)["status"]["terminatingReplicas"] == 2
    c.run(until=40)
    new = f"web-{template_hash(c)}"
    assert replica_sets(c)[new]["spec"]["replicas"] == 2
    assert replica_sets(c)[new]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert scaling_events(c)[1:] == [f"Scaled down replica set {old} from 2 to 0",
                                     f"Scaled up replica set {new} from 0 to 2"]
    c.api.patch("Deployment", "default", "web", {"spec": {"template": v1}})
    c.run(until=100)
    back = replica_sets(c)[old]
    assert back["spec"]["replicas"] == 2
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert the_deployment(c)["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


def test_old_replica_sets_beyond_the_history_limit_are_deleted() -> None:
    c = cluster(deployment(1, revisionHistoryLimit=1))
    for i in range(2, 5):
        c.run(until=i * 40)
        template = {**TEMPLATE, "spec": {"containers": [{"name": "c", "image": f"web:{i}"}]}}
        c.api.patch("Deployment", "default", "web", {"spec": {"template": template}})
    c.run(until=400)
    revisions = sorted(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                       for rs in replica_sets(c).values())
    assert revisions == ["3", "4"]


def test_a_paused_deployment_scales_but_does_not_roll_out() -> None:
    c = cluster(deployment(2))
    c.run(until=1)
    v2 = {**TEMPLATE, "spec": {"containers": [{"name": "c", "image": "web:2"}]}}
    c.api.patch("Deployment", "default", "web", {"spec": {"paused": True, "template": v2, "replicas": 3}})
    c.run(until=60)
    assert [rs["spec"]["replicas"] for rs in replica_sets(c).values()] == [3]
    assert condition(c, "Progressing")["reason"] == "DeploymentPaused"
    assert condition(c, "Progressing")["status"] == "Unknown"
    c.api.patch("Deployment", "default", "web", {"spec": {"paused": False}})
    c.run(until=120)
    assert sorted(rs["spec"]["replicas"] for rs in replica_sets(c).values()) == [0, 3]


def test_a_rollout_that_cannot_progress_times_out_at_the_deadline() -> None:
    c = cluster(deployment(3, progressDeadlineSeconds=60), cpu="2")  # room for 2 of the 3 pods
    c.run()
    cond = condition(c, "Progressing")
    assert cond["status"] == "False" and cond["reason"] == "ProgressDeadlineExceeded"
    assert cond["message"].endswith("has timed out progressing.")
    assert 60 < c.now() <= 62
    # maxUnavailable 25% of 3 rounds down to 0, so 2 available pods are not enough.
    assert condition(c, "Available")["reason"] == "MinimumReplicasUnavailable"
    assert the_deployment(c)["status"]["unavailableReplicas"] == 1
