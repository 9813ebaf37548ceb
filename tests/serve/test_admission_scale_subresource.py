"""Writes through the scale subresource as admission webhooks see them, as in kube-apiserver: an
UPDATE of `<resource>/scale` carrying the autoscaling/v1 Scale (the old Scale as oldObject),
matched by rules naming `deployments/scale`, `*/scale` or `deployments/*`; a mutating webhook's
patch to the Scale sets the object's replicas. A webhook server of the test's own on 127.0.0.1
over HTTPS, `kubectl scale` and the official client."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.serve.admissionhook import (  # noqa: F401
    AdmissionHook,
    api_fixture,
    cluster_fixture,
    deny,
    hook_fixture,
    patch,
    register,
    served_fixture,
)
from tests.serve.harness import Served


def _replicas(served: Served, kind: str, name: str) -> int:
    return int(served.kubectl("get", kind, name, "-o", "jsonpath={.spec.replicas}"))


def test_a_scale_write_is_an_update_of_the_scale(served: Served, hook: AdmissionHook, api: client.ApiClient) -> None:
    served.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    deployment = json.loads(served.kubectl("get", "deployment", "web", "-o", "json"))
    hook.answers["limit"] = lambda request: (
        deny(f"at most 5 replicas, not {request['object']['spec']['replicas']}")
        if request["object"]["spec"]["replicas"] > 5 else {})
    register(api, "ValidatingWebhookConfiguration", hook.webhook("limit", ["deployments/scale"]))

    out = served.kubectl("scale", "deployment", "web", "--replicas=9", check=False)
    assert 'admission webhook "limit.example.com" denied the request: at most 5 replicas, not 9' in out, out
    assert _replicas(served, "deployment", "web") == 2
    (_, request), = hook.requests
    scale = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    deployments = {"group": "apps", "version": "v1", "resource": "deployments"}
    assert (request["kind"], request["requestKind"]) == (scale, scale)
    assert (request["resource"], request["requestResource"]) == (deployments, deployments)
    assert (request["subResource"], request["requestSubResource"], request["operation"]) == ("scale", "scale",
                                                                                             "UPDATE")
    assert (request["name"], request["namespace"]) == ("web", "default")
    assert request["options"]["kind"] == "UpdateOptions"
    meta, old = deployment["metadata"], request["oldObject"]
    assert (old["apiVersion"], old["kind"], old["spec"]) == ("autoscaling/v1", "Scale", {"replicas": 2})
    assert sorted(old["metadata"]) == ["creationTimestamp", "name", "namespace", "resourceVersion", "uid"]
    assert all(old["metadata"][k] == meta[k] for k in ("name", "namespace", "uid", "creationTimestamp"))
    assert old["status"]["selector"] == "app=web" and isinstance(old["status"]["replicas"], int)
    assert request["object"]["kind"] == "Scale" and request["object"]["spec"] == {"replicas": 9}

    # The deployment itself is another resource: its own writes do not match deployments/scale.
    served.kubectl("patch", "deployment", "web", "-p", '{"spec":{"replicas":7}}')
    assert len(hook.requests) == 1 and _replicas(served, "deployment", "web") == 7
    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    assert _replicas(served, "deployment", "web") == 3
    request = hook.requests[-1][1]
    assert request["object"]["spec"] == {"replicas": 3} and request["oldObject"]["spec"] == {"replicas": 7}
    with pytest.raises(ApiException) as e:
        apps.replace_namespaced_deployment_scale("web", "default", {
            "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 6}})
    assert e.value.status == 403 and "at most 5 replicas, not 6" in json.loads(e.value.body)["message"]
    # Validating webhooks judge the Scale of the object as it would be stored.
    judged = hook.requests[-1][1]["object"]
    assert judged["spec"] == {"replicas": 6} and judged["metadata"]["uid"] == meta["uid"]
    served.kubectl("delete", "deployment", "web")


def test_rules_name_subresources_as_upstream_matches_them(served: Served, hook: AdmissionHook,
                                                          api: client.ApiClient) -> None:
    register(api, "ValidatingWebhookConfiguration",
              hook.webhook("any-scale", ["*/scale"]), hook.webhook("deployment-subresources", ["deployments/*"]),
              hook.webhook("resources-only", ["*"]), hook.webhook("everything", ["*/*"]),
              hook.webhook("statefulset-scale", ["statefulsets/scale"]))
    served.kubectl("create", "deployment", "d", "--image=nginx")
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs", "tier": "web"},
                                               "matchExpressions": [{"key": "zone", "operator": "In",
                                                                     "values": ["b", "a"]}]},
                   "template": {"metadata": {"labels": {"app": "rs", "tier": "web", "zone": "a"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump(rs))
    hook.requests.clear()

    served.kubectl("scale", "deployment", "d", "--replicas=2")
    assert sorted(hook.called()) == ["any-scale", "deployment-subresources", "everything"]
    hook.requests.clear()
    served.kubectl("scale", "replicaset", "rs", "--replicas=0")
    assert sorted(hook.called()) == ["any-scale", "everything"]
    request = hook.requests[0][1]
    assert request["resource"] == {"group": "apps", "version": "v1", "resource": "replicasets"}
    # spec.replicas 0 is left out of a Scale's JSON; the selector as labels.Selector prints it.
    assert request["object"]["spec"] == {}
    assert request["oldObject"]["status"]["selector"] == "app=rs,tier=web,zone in (a,b)"
    hook.requests.clear()
    # `deployments/*` matches the deployments themselves too: upstream's matcher takes `*` for any
    # subresource, none included.
    served.kubectl("label", "deployment", "d", "seen=yes")
    assert sorted(hook.called()) == ["deployment-subresources", "everything", "resources-only"]
    served.kubectl("delete", "deployment", "d")
    served.kubectl("delete", "replicaset", "rs")


def test_a_mutating_webhook_patches_the_scale(served: Served, hook: AdmissionHook, api: client.ApiClient) -> None:
    served.kubectl("create", "deployment", "capped", "--image=nginx", "--replicas=1")
    hook.answers["cap"] = lambda request: patch({"op": "replace", "path": "/spec/replicas", "value": 3}) \
        if request["object"]["spec"].get("replicas", 0) > 3 else {}
    register(api, "MutatingWebhookConfiguration", hook.webhook("cap", ["deployments/scale"]))
    register(api, "ValidatingWebhookConfiguration", hook.webhook("seen", ["deployments/scale"]))
    out = served.kubectl("scale", "deployment", "capped", "--replicas=10")
    assert "scaled" in out
    assert _replicas(served, "deployment", "capped") == 3
    # The validating webhook judged the Scale as the mutating one left it.
    assert hook.called() == ["cap", "seen"]
    assert hook.requests[1][1]["object"]["spec"] == {"replicas": 3}
    scale = client.AppsV1Api(api).read_namespaced_deployment_scale("capped", "default")
    assert scale.spec.replicas == 3

    # Mutating webhooks see the Scale a PUT carries, as decoded.
    client.AppsV1Api(api).replace_namespaced_deployment_scale("capped", "default", {
        "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "capped", "namespace": "default"},
        "spec": {"replicas": 2}})
    assert hook.requests[-2] == ("cap", {**hook.requests[-2][1], "object": {
        "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "capped", "namespace": "default"},
        "spec": {"replicas": 2}, "status": {"replicas": 0}}})
    assert _replicas(served, "deployment", "capped") == 2

    # A patched Scale is validated as a Scale.
    hook.answers["cap"] = lambda request: patch({"op": "replace", "path": "/spec/replicas", "value": -1})
    out = served.kubectl("scale", "deployment", "capped", "--replicas=5", check=False)
    assert 'The Scale "capped" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0' \
        in out, out
    assert _replicas(served, "deployment", "capped") == 2
    served.kubectl("delete", "deployment", "capped")


WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}, "scale": {
                               "specReplicasPath": ".spec.count", "statusReplicasPath": ".status.count",
                               "labelSelectorPath": ".status.selector"}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"count": {"type": "integer"}}},
                               "status": {"type": "object", "properties": {
                                   "count": {"type": "integer"}, "selector": {"type": "string"}}}}}}}]}}


def test_a_custom_resource_scale(served: Served, hook: AdmissionHook, api: client.ApiClient) -> None:
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump(WIDGETS))
    served.kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com")
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"count": 1}}))
    served.kubectl("patch", "gadget", "g", "--subresource=status", "--type=merge", "-p",
                   '{"status":{"count":1,"selector":"app=g"}}')
    hook.answers["double"] = lambda request: patch(
        {"op": "replace", "path": "/spec/replicas", "value": 2 * request["object"]["spec"]["replicas"]})
    register(api, "MutatingWebhookConfiguration", hook.webhook("double", ["gadgets/scale"]))
    served.kubectl("scale", "gadget", "g", "--replicas=4")
    assert int(served.kubectl("get", "gadget", "g", "-o", "jsonpath={.spec.count}")) == 8
    (_, request), = hook.requests
    assert request["resource"] == {"group": "example.com", "version": "v1", "resource": "gadgets"}
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["oldObject"]["spec"] == {"replicas": 1}
    assert request["oldObject"]["status"] == {"replicas": 1, "selector": "app=g"}
    served.kubectl("delete", "crd", "gadgets.example.com")
