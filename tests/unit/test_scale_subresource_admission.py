"""The HorizontalPodAutoscaler controller scales through the scale subresource, as its scale
client does upstream: a ValidatingAdmissionPolicy on `deployments/scale` judges the Scale it
writes (with the loopback identity), one on `deployments` does not; a refusal reaches the
controller as an APIError. The Scale's JSON as the registries build it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.apiserver.errors import APIError
from kubesched.apiserver.scale import label_selector_string, scale_of, with_replicas
from kubesched.apiserver.server import APIServer
from kubesched.controllers.scaletarget import get_scale, set_replicas
from kubesched.store.memory import MemoryStore

GROUP = "admissionregistration.k8s.io/v1"


def _api(resources: list[str], expression: str) -> APIServer:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    api.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    api.create({"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
                "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                                 "operations": ["UPDATE"], "resources": resources}]},
                         "validations": [{"expression": expression, "messageExpression":
                                          "'at most 3, not ' + string(object.spec.replicas)"}]}})
    api.create({"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
                "spec": {"policyName": "p", "validationActions": ["Deny"]}})
    return api


def test_an_autoscaler_scale_write_is_judged_as_a_scale() -> None:
    api = _api(["deployments/scale"], "request.subResource == 'scale' && request.kind.kind == 'Scale' && "
                                      "request.userInfo.username == 'system:apiserver' && "
                                      "oldObject.spec.replicas == 1 && object.spec.replicas <= 3")
    with pytest.raises(APIError) as e:
        set_replicas(api, get_scale(api, "default", "apps/v1", "Deployment", "web"), 5)
    assert e.value.message == ('deployments.apps "web" is forbidden: ValidatingAdmissionPolicy \'p\' with binding '
                               "'b' denied request: at most 3, not 5")
    set_replicas(api, get_scale(api, "default", "apps/v1", "Deployment", "web"), 3)
    assert api.get("Deployment", "default", "web")["spec"]["replicas"] == 3


def test_a_policy_on_the_deployments_does_not_see_the_scale_write() -> None:
    api = _api(["deployments"], "false")
    set_replicas(api, get_scale(api, "default", "apps/v1", "Deployment", "web"), 5)
    assert api.get("Deployment", "default", "web")["spec"]["replicas"] == 5
    with pytest.raises(APIError):
        api.patch("Deployment", "default", "web", {"spec": {"replicas": 6}})


def test_the_scale_as_the_registries_build_it() -> None:
    selector = {"matchLabels": {"tier": "web", "app": "a"},
                "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b", "a"]},
                                     {"key": "canary", "operator": "DoesNotExist"},
                                     {"key": "env", "operator": "Exists"}]}
    assert label_selector_string(selector) == "app=a,!canary,env,tier=web,zone notin (a,b)"
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r", "uid": "u", "labels": {}},
          "spec": {"replicas": 0, "selector": {"b": "2", "a": "1"}}, "status": {"replicas": 2}}
    assert scale_of(rc) == {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "r", "uid": "u"},
                            "spec": {}, "status": {"replicas": 2, "selector": "a=1,b=2"}}
    custom = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
              "spec": {"count": 4}, "status": {}}
    assert scale_of(custom, {"specReplicasPath": ".spec.count", "statusReplicasPath": ".status.count"}) == {
        "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "g"}, "spec": {"replicas": 4},
        "status": {"replicas": 0}}


@given(st.integers(min_value=0, max_value=10_000), st.sampled_from([None, ".spec.replicas", ".spec.size.count"]),
       st.sampled_from([{}, {"spec": {}}, {"spec": {"replicas": 3, "size": {"count": 2}}}]))
def test_a_scale_reads_back_the_replicas_written(replicas: int, path: str | None, start: dict) -> None:
    """Whatever the object held, the Scale of the object with a Scale's replicas has them."""
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, **start}
    paths = {"specReplicasPath": path} if path else None
    assert scale_of(with_replicas(obj, replicas, paths), paths)["spec"] == ({"replicas": replicas} if replicas else {})
