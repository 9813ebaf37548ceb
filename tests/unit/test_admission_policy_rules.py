"""ValidatingAdmissionPolicy on the in-process API server: which requests a policy selects
(subresources, resourceNames, excluded rules, object selectors on the old and new object), what
an expression that fails does under each failurePolicy, and parameters found by selector."""

from __future__ import annotations

import pytest

from kubesched.apiserver.caller import Caller
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore

GROUP = "admissionregistration.k8s.io/v1"


def _server(rules: list[dict], validations: list[dict], binding: dict | None = None, **spec: object) -> APIServer:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    api.create({"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
                "spec": {"matchConstraints": {"resourceRules": rules}, "validations": validations, **spec}})
    api.create({"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
                "spec": {"policyName": "p", "validationActions": ["Deny"], **(binding or {})}})
    return api


def _rule(resources: list[str], operations: tuple[str, ...] = ("*",), **more: object) -> dict:
    return {"apiGroups": [""], "apiVersions": ["v1"], "operations": list(operations), "resources": resources, **more}


def _configmap(name: str, labels: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default",
                                                                  "labels": labels or {}}}


def _denied(call: object, *args: object, **kw: object) -> str:
    with pytest.raises(APIError) as e:
        call(*args, **kw)  # type: ignore[operator]
    return e.value.message


def test_resource_names_and_excluded_rules() -> None:
    api = _server([_rule(["configmaps"], resourceNames=["locked", "other"])], [{"expression": "false"}],
                  {"matchResources": {"excludeResourceRules": [_rule(["configmaps"], resourceNames=["other"])]}})
    api.create(_configmap("free"))
    api.create(_configmap("other"))  # selected by the policy, excluded by the binding
    assert _denied(api.create, _configmap("locked")) == (
        "configmaps \"locked\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
        "failed expression: false")


def test_status_writes_are_the_status_subresource() -> None:
    api = _server([_rule(["configmaps"], ("UPDATE",))], [{"expression": "false", "message": "no"}])
    api.create(_configmap("c"))
    api.update_status("ConfigMap", "default", "c", lambda s: s.update(x=1))  # configmaps/status: not selected
    assert "denied request: no" in _denied(api.patch, "ConfigMap", "default", "c", {"data": {"a": "b"}})
    status_api = _server([_rule(["*/status"], ("UPDATE",))], [{"expression": "false"}])
    status_api.create(_configmap("c"))
    assert "denied request" in _denied(status_api.update_status, "ConfigMap", "default", "c", lambda s: s.update(x=1))


def test_object_selector_reads_old_and_new_labels() -> None:
    api = _server([_rule(["configmaps"])], [{"expression": "false"}],
                  {"matchResources": {"objectSelector": {"matchLabels": {"guarded": "yes"}}}})
    api.create(_configmap("c"))
    assert "denied request" in _denied(api.patch, "ConfigMap", "default", "c",
                                       {"metadata": {"labels": {"guarded": "yes"}}})
    api.create(_configmap("g", {"guarded": "yes"}), existing=True)  # as a snapshot holds it
    # Taking the label off is judged by the old object's labels; deleting too.
    assert "denied request" in _denied(api.patch, "ConfigMap", "default", "g", {"metadata": {"labels": None}})
    assert "denied request" in _denied(api.delete, "ConfigMap", "default", "g")
    api.delete("ConfigMap", "default", "c")


def test_failure_policy_decides_what_an_error_does() -> None:
    failing = [{"expression": "object.data.missing == 'x'"}]
    api = _server([_rule(["configmaps"])], failing)
    assert _denied(api.create, _configmap("c")).endswith(
        "denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: data")
    lenient = _server([_rule(["configmaps"])], failing, failurePolicy="Ignore")
    lenient.create(_configmap("c"))
    conditions = _server([_rule(["configmaps"])], [{"expression": "false"}],
                         matchConditions=[{"name": "a", "expression": "object.metadata.name == 'judged'"}])
    conditions.create(_configmap("skipped"))
    assert "denied request" in _denied(conditions.create, _configmap("judged"))


def test_parameters_by_selector_and_allow_when_missing() -> None:
    spec = {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}
    ref = {"paramRef": {"selector": {"matchLabels": {"role": "limit"}}, "parameterNotFoundAction": "Allow"}}
    api = _server([_rule(["pods"], ("CREATE",))], [{"expression": "object.metadata.name != params.data.banned",
                                                    "messageExpression": "'banned by ' + params.metadata.name"}],
                  ref, **spec)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    api.create(pod)  # no parameters: Allow
    api.create({**_configmap("one", {"role": "limit"}), "data": {"banned": "y"}})
    api.create({**_configmap("two", {"role": "limit"}), "data": {"banned": "z"}})
    api.create({**pod, "metadata": {"name": "w", "namespace": "default"}})
    assert _denied(api.create, {**pod, "metadata": {"name": "z", "namespace": "default"}}).endswith(
        "denied request: banned by two")


def test_warn_goes_to_the_caller() -> None:
    api = _server([_rule(["configmaps"])], [{"expression": "false", "message": "careful"}],
                  {"validationActions": ["Warn"]})
    caller = Caller({"username": "u"})
    api.create(_configmap("c"), caller=caller)
    assert caller.warnings == ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': careful"]


def test_custom_resources_as_subject_and_parameters() -> None:
    """A policy selects a custom resource by its definition's plural, and takes another object of
    that kind as its parameters."""
    api = _server([{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
                    "resources": ["widgets"]}], [{"expression": "object.spec.size < params.spec.size"}],
                  {"paramRef": {"name": "limit", "parameterNotFoundAction": "Deny"}},
                  paramKind={"apiVersion": "example.com/v1", "kind": "Widget"})
    api.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                             "type": "object", "properties": {"spec": {"type": "object", "properties": {
                                 "size": {"type": "integer"}}}}}}}]}})

    def widget(name: str, size: int) -> dict:
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
                "spec": {"size": size}}

    assert "no params found for policy binding with `Deny` parameterNotFoundAction" in _denied(
        api.create, widget("limit", 10))
    api.create(widget("limit", 10), existing=True)  # as a snapshot holds it: admitted where it was made
    api.create(widget("small", 3))
    assert _denied(api.create, widget("big", 30)) == (
        "widgets.example.com \"big\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
        "failed expression: object.spec.size < params.spec.size")


def test_builtin_functions_compile_and_unknown_names_do_not() -> None:
    api = _server([_rule(["configmaps"])], [{"expression": "size(object.data) <= 1 && object.data.all(k, "
                                                          "k.matches('^[a-z]+$'))"}])
    api.create({**_configmap("c"), "data": {"a": "1"}})
    assert "denied request" in _denied(api.create, {**_configmap("d"), "data": {"a": "1", "b": "2"}})
    bad = {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "bad"},
           "spec": {"matchConstraints": {"resourceRules": [_rule(["pods"])]},
                    "validations": [{"expression": "sizee(object.spec) > 0"}]}}
    assert ("spec.validations[0].expression: Invalid value: \"sizee(object.spec) > 0\": compilation failed: "
            "ERROR: <input>:1:1: undeclared reference to 'sizee'") in _denied(api.create, bad)


def test_type_checking_against_a_custom_resource_schema() -> None:
    """status.typeChecking reports the fields a definition's schema lacks, in `object` and in
    `params`; a map's keys and fields preserved unknown are not reported."""
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                             "type": "object", "properties": {"spec": {"type": "object", "properties": {
                                 "size": {"type": "integer"},
                                 "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                                 "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}}]}})
    policy = api.create({"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
                         "spec": {"paramKind": {"apiVersion": "example.com/v1", "kind": "Widget"},
                                  "matchConstraints": {"resourceRules": [{
                                      "apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
                                      "resources": ["widgets"]}]},
                                  "validations": [
                                      {"expression": "object.spec.size < params.spec.sise"},
                                      {"expression": "object.spec.tags.team == 'a' && object.spec.extra.any.depth "
                                                     "&& object.metadata.name != '' && object.spec.tags.all(k, k != '')"}]}})
    assert policy["status"]["typeChecking"] == {"expressionWarnings": [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "example.com/v1, Kind=Widget: ERROR: <input>:1:31: undefined field 'sise'\n"
                   " | object.spec.size < params.spec.sise\n | ..............................^\n"}]}
