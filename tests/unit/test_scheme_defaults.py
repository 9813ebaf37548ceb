"""The scheme defaults the API server applies to every write (apiserver.defaults), checked on the
in-process API server: what a reconciler reads back is what kube-apiserver v1.35 would store."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.api.objects import deep_copy
from kubesched.apiserver.defaults import pull_policy, set_defaults
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore

CONTAINER = {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
             "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
             "livenessProbe": {"httpGet": {"port": 80}}, "readinessProbe": {"grpc": {"port": 9000}},
             "lifecycle": {"preStop": {"httpGet": {"port": 80}}}}
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [CONTAINER],
                     "volumes": [{"name": "scratch"}, {"name": "conf", "configMap": {"name": "c"}},
                                 {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}}
SELECTOR = {"matchLabels": {"app": "web"}}


def _api() -> APIServer:
    return APIServer(MemoryStore(), now=lambda: 0.0)


def _create(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(_api().create(obj))


def _template_defaults(template: dict[str, Any]) -> None:
    spec = template["spec"]
    assert (spec["dnsPolicy"], spec["restartPolicy"], spec["schedulerName"]) == \
        ("ClusterFirst", "Always", "default-scheduler")
    assert (spec["securityContext"], spec["terminationGracePeriodSeconds"]) == ({}, 30)
    c = spec["containers"][0]
    assert (c["imagePullPolicy"], c["terminationMessagePath"], c["terminationMessagePolicy"], c["resources"]) == \
        ("IfNotPresent", "/dev/termination-log", "File", {})
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    assert c["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                  "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert c["readinessProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert c["lifecycle"]["preStop"]["httpGet"]["scheme"] == "HTTP"
    scratch, conf, token = spec["volumes"]
    assert scratch == {"name": "scratch", "emptyDir": {}}
    assert conf["configMap"]["defaultMode"] == 420
    assert token["projected"] == {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}],
                                  "defaultMode": 420}
    assert "enableServiceLinks" not in spec  # the Pod's own defaults stay off templates


def test_deployment() -> None:
    d = _create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"selector": SELECTOR, "template": TEMPLATE}})
    spec = d["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    _template_defaults(spec["template"])


def test_a_recreate_deployment_gets_no_rolling_parameters() -> None:
    d = _create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"selector": SELECTOR, "template": TEMPLATE, "strategy": {"type": "Recreate"},
                          "replicas": 0}})
    assert d["spec"]["strategy"] == {"type": "Recreate"}
    assert d["spec"]["replicas"] == 0


def test_statefulset_daemonset_replicaset() -> None:
    sts = _create({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                   "spec": {"selector": SELECTOR, "serviceName": "db", "template": TEMPLATE,
                            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    spec = sts["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["podManagementPolicy"]) == (1, 10, "OrderedReady")
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    claim = spec["volumeClaimTemplates"][0]
    assert (claim["spec"]["volumeMode"], claim["status"]) == ("Filesystem", {"phase": "Pending"})
    _template_defaults(spec["template"])
    ds = _create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                  "spec": {"selector": SELECTOR, "template": TEMPLATE}})
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1,
                                                                                       "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10 and "replicas" not in ds["spec"]
    rs = _create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                  "spec": {"selector": SELECTOR, "template": TEMPLATE}})
    assert rs["spec"]["replicas"] == 1 and "revisionHistoryLimit" not in rs["spec"]
    _template_defaults(rs["spec"]["template"])


def test_job_and_cronjob() -> None:
    template = {**copy.deepcopy(TEMPLATE), "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
    job = _create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
                   "spec": {"template": template, "podFailurePolicy": {"rules": [
                       {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}})
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"], spec["completionMode"]) == \
        (1, 1, 6, "NonIndexed")
    assert (spec["suspend"], spec["manualSelector"], spec["podReplacementPolicy"]) == (False, False, "Failed")
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    cj = _create({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
                  "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}}})
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    assert "completions" not in spec["jobTemplate"]["spec"]  # the Job's defaults come with the Job
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_replication_controller_takes_its_templates_labels() -> None:
    rc = _create({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "old"},
                  "spec": {"template": TEMPLATE}})
    assert (rc["spec"]["selector"], rc["metadata"]["labels"], rc["spec"]["replicas"]) == \
        ({"app": "web"}, {"app": "web"}, 1)


def test_pod_gets_the_pods_own_defaults() -> None:
    pod = _create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "hostNetwork": True, "containers": [{**CONTAINER, "image": "nginx",
                                             "resources": {"limits": {"cpu": "1"}}}]}})
    spec = pod["spec"]
    c = spec["containers"][0]
    assert c["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP", "hostPort": 80}]
    assert (c["imagePullPolicy"], spec["enableServiceLinks"], pod["status"]["phase"]) == ("Always", True, "Pending")


@pytest.mark.parametrize("spec, expected", [
    ({"selector": {"app": "web"}, "ports": [{"port": 80}]},
     {"selector": {"app": "web"}, "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
      "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
      "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}),
    ({"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 443, "targetPort": "https"}]},
     {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
      "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}, "externalTrafficPolicy": "Cluster",
      "internalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True,
      "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
      "ports": [{"port": 443, "protocol": "TCP", "targetPort": "https"}]}),
    ({"clusterIP": "None", "ports": [{"port": 53, "protocol": "UDP"}]},
     {"clusterIP": "None", "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
      "ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4"],
      "ports": [{"port": 53, "protocol": "UDP", "targetPort": 53}]}),
    ({"type": "ExternalName", "externalName": "db.example.com"},
     {"type": "ExternalName", "externalName": "db.example.com", "sessionAffinity": "None"}),
])
def test_service(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}
    set_defaults(service)
    assert service["spec"] == expected


def test_defaults_apply_on_update_and_change_nothing_twice() -> None:
    api = _api()
    d = api.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                    "spec": {"selector": SELECTOR, "template": TEMPLATE}})
    again = deep_copy(d)
    set_defaults(again)
    assert again == d
    bare = deep_copy(d)
    del bare["spec"]["strategy"], bare["spec"]["template"]["spec"]["dnsPolicy"]
    updated = api.update(bare)
    assert updated["spec"] == d["spec"]
    assert updated["metadata"]["generation"] == 1  # the defaults filled back in are no spec change


def test_a_custom_resource_named_like_a_builtin_kind_is_left_alone() -> None:
    service = {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}}
    assert not set_defaults(service)
    assert service["spec"] == {}


@pytest.mark.parametrize("image, policy", [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("registry.local:5000/team/app", "Always"), ("registry.local:5000/team/app:v2", "IfNotPresent"),
    ("app@sha256:" + "a" * 64, "IfNotPresent"), ("", "IfNotPresent"),
])
def test_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert pull_policy(image) == policy
