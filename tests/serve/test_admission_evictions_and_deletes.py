"""Evictions, bindings and deletes as admission webhooks see them in `serve`, as in kube-apiserver:
an Eviction is decoded into policy/v1 before it is judged; an Eviction and a Binding are judged
before their pod is looked up;
a delete's mutating webhooks are told of it; a delete that keeps changing under its webhooks
ends in apierrors.NewConflict's answer. A webhook server of the test's own on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.serve.admissionhook import (  # noqa: F401
    AdmissionHook,
    api_fixture,
    cluster_fixture,
    deny,
    hook_fixture,
    register,
    served_fixture,
)
from tests.serve.harness import Served


def _pod(name: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})


def _evict(served: Served, pod: str, api_version: str = "policy/v1") -> str:
    body = {"apiVersion": api_version, "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}}
    return served.kubectl("create", "--raw", f"/api/v1/namespaces/default/pods/{pod}/eviction", "-f", "-",
                          input=json.dumps(body), check=False)


def test_an_eviction_is_judged_as_policy_v1_before_the_pod_is_read(served: Served, hook: AdmissionHook,
                                                                   api: client.ApiClient) -> None:
    register(api, "ValidatingWebhookConfiguration", hook.webhook("evictions", ["pods/eviction"], ("CREATE",)))
    served.kubectl("apply", "-f", "-", input=_pod("old-client"))
    _evict(served, "old-client", "policy/v1beta1")
    (_, request), = hook.requests
    assert request["kind"] == request["requestKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert request["object"]["apiVersion"] == "policy/v1"
    assert (request["resource"]["resource"], request["subResource"], request["operation"]) == (
        "pods", "eviction", "CREATE")

    # A missing pod is found missing after admission, as EvictionREST.Create reads it.
    out = _evict(served, "nowhere")
    assert 'pods "nowhere" not found' in out, out
    assert hook.requests[-1][1]["name"] == "nowhere"
    hook.answers["evictions"] = lambda request: deny("evictions are frozen")
    out = _evict(served, "nowhere")
    assert 'admission webhook "evictions.example.com" denied the request: evictions are frozen' in out, out


def test_a_binding_is_judged_before_the_pod_is_read(served: Served, hook: AdmissionHook,
                                                   api: client.ApiClient) -> None:
    """BindingREST.Create: the Binding is validated and admitted, then its pod looked up."""
    register(api, "ValidatingWebhookConfiguration", hook.webhook("bindings", ["pods/binding"], ("CREATE",)))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "ghost"}, "target": {"name": "n1"}}
    out = served.kubectl("create", "--raw", "/api/v1/namespaces/default/pods/ghost/binding", "-f", "-",
                         input=json.dumps(binding), check=False)
    assert 'pods "ghost" not found' in out, out
    assert hook.requests[-1][1]["object"]["target"]["name"] == "n1"
    hook.answers["bindings"] = lambda request: deny("no binding by hand")
    out = served.kubectl("create", "--raw", "/api/v1/namespaces/default/pods/ghost/binding", "-f", "-",
                         input=json.dumps(binding), check=False)
    assert 'admission webhook "bindings.example.com" denied the request: no binding by hand' in out, out
    binding["target"] = {}
    out = served.kubectl("create", "--raw", "/api/v1/namespaces/default/pods/ghost/binding", "-f", "-",
                         input=json.dumps(binding), check=False)
    assert 'is invalid' in out, out  # validated before admission: the webhook is not called
    assert len(hook.requests) == 2


def test_a_delete_goes_through_mutating_admission(served: Served, hook: AdmissionHook, api: client.ApiClient) -> None:
    served.kubectl("apply", "-f", "-", input=_pod("told"))
    register(api, "MutatingWebhookConfiguration", hook.webhook("told", ["pods"], ("DELETE",)))
    served.kubectl("delete", "pod", "told", "--wait=false")
    (name, request), = hook.requests
    assert name == "told" and request["operation"] == "DELETE" and request["object"] is None
    assert request["oldObject"]["metadata"]["name"] == "told" and request["options"]["kind"] == "DeleteOptions"


def test_a_delete_that_keeps_changing_is_a_conflict(served: Served, hook: AdmissionHook,
                                                    api: client.ApiClient) -> None:
    """The webhook annotates the pod each time it is called: the delete is judged again on the
    changed pod, and gives up with kube-apiserver's conflict."""
    served.kubectl("apply", "-f", "-", input=_pod("busy"))
    core = client.CoreV1Api(config.new_client_from_config(served.kubeconfig))  # the webhook's own client

    def touch(request: dict[str, Any]) -> dict[str, Any]:
        core.patch_namespaced_pod("busy", "default", {"metadata": {"annotations": {
            "seen": request["oldObject"]["metadata"]["resourceVersion"]}}})
        return {}

    hook.answers["touch"] = touch
    register(api, "ValidatingWebhookConfiguration", hook.webhook("touch", ["pods"], ("DELETE",)))
    with pytest.raises(ApiException) as e:
        client.CoreV1Api(api).delete_namespaced_pod("busy", "default")
    assert e.value.status == 409
    status = json.loads(e.value.body)
    assert status["reason"] == "Conflict"
    assert status["message"] == ('Operation cannot be fulfilled on pods "busy": the object has been modified; '
                                 "please apply your changes to the latest version and try again")
    assert len(hook.requests) > 1
    assert "pod/busy" in served.kubectl("get", "pods", "-o", "name")
