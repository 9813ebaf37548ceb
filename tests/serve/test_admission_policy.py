"""ValidatingAdmissionPolicy in `serve`, driven by kubectl and the official client as a policy
author would: the upstream docs' replicas limit scoped by a namespaceSelector, a ConfigMap as the
policy's parameters, Warn bindings answering with kubectl warnings, matchConditions that exempt a
user, a DELETE judged on oldObject, `authorizer` asking RBAC, bindings and evictions judged as
CREATEs of pods/binding and pods/eviction, and a policy that does not compile refused when written."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.serve.harness import Served, wait_for

GROUP = "admissionregistration.k8s.io/v1"


def _policy(name: str, resources: list[str], validations: list[dict], **spec: object) -> dict:
    group = "apps" if resources[0].startswith("deployments") else ""
    operations = spec.pop("operations", ["CREATE", "UPDATE"])
    return {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail", "validations": validations, **spec,
                     "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
                                                             "operations": operations, "resources": resources}]}}}


def _binding(name: str, policy: str, actions: list[str], namespace: str, **spec: object) -> dict:
    return {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": policy, "validationActions": actions, **spec, "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}}}


def _apply(served: Served, *objs: dict) -> None:
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("vap")).start()
    for ns in ("test", "prod", "params", "notes", "locked", "authz", "pinned"):
        server.kubectl("create", "namespace", ns)
    server.kubectl("label", "namespace", "test", "environment=test")
    try:
        yield server
    finally:
        server.kill()


def _api(served: Served) -> client.AppsV1Api:
    cfg = client.Configuration()
    config.load_kube_config(served.kubeconfig, client_configuration=cfg)
    return client.AppsV1Api(client.ApiClient(cfg))


def _deployment(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_replicas_limit_in_the_selected_namespace(served: Served) -> None:
    """The upstream docs' example: deployments of more than 5 replicas are refused in namespaces
    labelled environment=test, with kube-apiserver's message, 422 and Invalid."""
    _apply(served, _policy("demo-policy.example.com", ["deployments"], [{"expression": "object.spec.replicas <= 5"}]),
           {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "demo-binding-test.example.com"},
            "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}}}})
    # In force at once: observed, with no type warnings, as a tool waiting on the policy checks.
    assert yaml.safe_load(served.kubectl("get", "validatingadmissionpolicy", "demo-policy.example.com",
                                         "-o", "yaml"))["status"] == {"observedGeneration": 1, "typeChecking": {}}
    out = served.kubectl("create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "test", check=False)
    assert ('deployments.apps "nginx" is forbidden: ValidatingAdmissionPolicy \'demo-policy.example.com\' with '
            "binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
            ) in out
    assert "NotFound" in served.kubectl("get", "deployment", "nginx", "-n", "test", check=False)
    served.kubectl("create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "prod")
    apps = _api(served)
    with pytest.raises(ApiException) as e:
        apps.create_namespaced_deployment("test", _deployment("big", 7))
    assert (e.value.status, e.value.reason) == (422, "Unprocessable Entity")
    assert '"reason":"Invalid"' in e.value.body.replace(" ", "")
    apps.create_namespaced_deployment("test", _deployment("small", 3))
    # An update is judged too; the scale subresource is not deployments, so the rule leaves it alone.
    out = served.kubectl("patch", "deployment", "small", "-n", "test", "--type=merge", "-p",
                         '{"spec":{"replicas":9}}', check=False)
    assert "denied request: failed expression: object.spec.replicas <= 5" in out
    served.kubectl("scale", "deployment", "small", "-n", "test", "--replicas=8")
    assert apps.read_namespaced_deployment("small", "test").spec.replicas == 8
    # deployments/scale selects it, and sees the Scale.
    _apply(served, _policy("scale-limit", ["deployments/scale"], [{
        "expression": "request.kind.kind == 'Scale' && object.spec.replicas <= 8"}]),
           _binding("scale-limit-test", "scale-limit", ["Deny"], "test"))
    out = served.kubectl("scale", "deployment", "small", "-n", "test", "--replicas=9", check=False)
    assert "ValidatingAdmissionPolicy 'scale-limit' with binding 'scale-limit-test' denied request" in out
    # A server-side dry run is judged as the write would be, and writes nothing.
    out = served.kubectl("create", "deployment", "dry", "--image=nginx", "--replicas=6", "-n", "test",
                         "--dry-run=server", check=False)
    assert "denied request" in out


def test_configmap_parameters(served: Served) -> None:
    """paramKind ConfigMap: the limit comes from the binding's ConfigMap, messageExpression and a
    variable word the refusal, reason Forbidden answers 403; no ConfigMap with Deny refuses all."""
    policy = _policy("replica-limit", ["deployments"], [{
        "expression": "object.spec.replicas <= variables.limit",
        "messageExpression": "'replicas must be no greater than ' + string(variables.limit)",
        "reason": "Forbidden"}], paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        variables=[{"name": "limit", "expression": "int(params.data.maxReplicas)"}])
    _apply(served, policy, _binding("replica-limit-params", "replica-limit", ["Deny"], "params", paramRef={
        "name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}))
    out = served.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1", "-n", "params", check=False)
    assert ("ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-params' denied request: "
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
            ) in out
    served.kubectl("create", "configmap", "limits", "-n", "default", "--from-literal=maxReplicas=3")
    apps = _api(served)
    with pytest.raises(ApiException) as e:
        apps.create_namespaced_deployment("params", _deployment("web", 4))
    assert e.value.status == 403
    assert "denied request: replicas must be no greater than 3" in e.value.body
    apps.create_namespaced_deployment("params", _deployment("web", 3))


def test_warn_binding_answers_with_a_warning(served: Served) -> None:
    """A Warn binding lets the write through and kubectl prints upstream's warning, worded by a
    messageExpression that reads namespaceObject."""
    _apply(served, _policy("require-team", ["configmaps"], [{
        "expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
        "messageExpression": "'configmap ' + object.metadata.name + ' in ' + namespaceObject.metadata.name"
                             " + ' has no team label'"}]),
           _binding("require-team-warn", "require-team", ["Warn", "Audit"], "notes"))
    out = served.kubectl("create", "configmap", "untagged", "-n", "notes", check=False)
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'require-team' with binding "
            "'require-team-warn': configmap untagged in notes has no team label") in out
    assert "configmap/untagged created" in out
    served.kubectl("create", "configmap", "tagged", "-n", "notes")
    served.kubectl("label", "configmap", "tagged", "-n", "notes", "team=a")
    assert "Warning" not in served.kubectl("label", "configmap", "tagged", "-n", "notes", "tier=b", check=False)


def test_match_conditions_and_delete(served: Served) -> None:
    """matchConditions exempt the admin (request.userInfo), so only others are refused; a DELETE
    policy reads oldObject."""
    _apply(served,
           _policy("admin-only", ["configmaps"], [{"expression": "false", "message": "only the admin writes here"}],
                   matchConditions=[{"name": "not-admin",
                                     "expression": "request.userInfo.username != 'kubernetes-admin'"}]),
           _binding("admin-only-locked", "admin-only", ["Deny"], "locked"),
           _policy("keep-protected", ["configmaps"], [{
               "expression": "!(has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels)",
               "message": "protected configmaps stay"}], operations=["DELETE"]),
           _binding("keep-protected-locked", "keep-protected", ["Deny"], "locked"))
    served.kubectl("create", "configmap", "mine", "-n", "locked")
    out = served.kubectl("create", "configmap", "theirs", "-n", "locked", "--as=jane", "--as-group=system:masters",
                         check=False)
    assert ("configmaps \"theirs\" is forbidden: ValidatingAdmissionPolicy 'admin-only' with binding "
            "'admin-only-locked' denied request: only the admin writes here") in out
    served.kubectl("label", "configmap", "mine", "-n", "locked", "protected=yes")
    out = served.kubectl("delete", "configmap", "mine", "-n", "locked", check=False)
    assert "denied request: protected configmaps stay" in out
    served.kubectl("label", "configmap", "mine", "-n", "locked", "protected-")
    served.kubectl("delete", "configmap", "mine", "-n", "locked")


def test_a_policy_that_does_not_compile_is_refused(served: Served) -> None:
    bad = _policy("bad", ["pods"], [{"expression": "object.spec.replicas <="}, {"expression": "objct.x == 1"}])
    out = served.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert 'The ValidatingAdmissionPolicy "bad" is invalid' in out
    assert 'spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed' in out
    assert "spec.validations[1].expression: Invalid value: \"objct.x == 1\": compilation failed: ERROR: <input>:1:1: " \
           "undeclared reference to 'objct'" in out
    binding = _binding("b", "bad", ["Deny", "Warn"], "prod")
    out = served.kubectl("apply", "-f", "-", input=yaml.safe_dump(binding), check=False)
    assert "spec.validationActions: Invalid value" in out and "must not contain both Deny and Warn" in out


def test_authorizer_asks_rbac(served: Served) -> None:
    """`authorizer` asks RBAC about the requesting user: bob may create configmaps in `authz` but
    not delete them, and the policy lets in only those who may."""
    served.kubectl("create", "role", "cm-creator", "-n", "authz", "--verb=create,get", "--resource=configmaps")
    served.kubectl("create", "rolebinding", "bob", "-n", "authz", "--role=cm-creator", "--user=bob")
    _apply(served, _policy("deleters-only", ["configmaps"], [{
        "expression": "authorizer.group('').resource('configmaps').namespace(request.namespace)"
                      ".check('delete').allowed()",
        "messageExpression": "request.userInfo.username + ' may not delete configmaps here'"}]),
           _binding("deleters-only-authz", "deleters-only", ["Deny"], "authz"))
    out = served.kubectl("create", "configmap", "bobs", "-n", "authz", "--as=bob", check=False)
    assert "denied request: bob may not delete configmaps here" in out
    served.kubectl("create", "configmap", "admins", "-n", "authz")


def test_bindings_and_evictions(served: Served) -> None:
    """The scheduler's binding is judged as a CREATE of pods/binding (its Binding the object), a
    drain's evictions as CREATEs of pods/eviction."""
    _apply(served, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                               "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}},
           _policy("not-on-n1", ["pods/binding"], [{"expression": "object.target.name != 'n1'",
                                                    "message": "nothing is bound to n1 here"}], operations=["CREATE"]),
           _binding("not-on-n1-pinned", "not-on-n1", ["Deny"], "pinned"),
           _policy("no-evictions", ["pods/eviction"], [{
               "expression": "false", "messageExpression": "request.userInfo.username + ' may not evict ' + "
                                                           "object.metadata.name + ' (' + request.kind.kind + ')'"}],
                   operations=["CREATE"]),
           _binding("no-evictions-pinned", "no-evictions", ["Deny"], "pinned"))
    served.kubectl("run", "p", "--image=nginx", "-n", "pinned")
    events = wait_for(lambda: served.kubectl("get", "events", "-n", "pinned", "--field-selector",
                                             "reason=FailedScheduling", "-o", "jsonpath={.items[*].message}"),
                      what="the refused binding")
    assert "ValidatingAdmissionPolicy 'not-on-n1' with binding 'not-on-n1-pinned' denied request: nothing is " \
           "bound to n1 here" in events, events
    assert served.kubectl("get", "pod", "p", "-n", "pinned", "-o", "jsonpath={.spec.nodeName}") == ""
    served.kubectl("delete", "validatingadmissionpolicybinding", "not-on-n1-pinned")
    wait_for(lambda: served.kubectl("get", "pod", "p", "-n", "pinned", "-o", "jsonpath={.spec.nodeName}") == "n1",
             what="the binding retried")
    out = served.kubectl("drain", "n1", "--force", "--timeout=20s", check=False)
    assert "ValidatingAdmissionPolicy 'no-evictions' with binding 'no-evictions-pinned' denied request: " \
           "kubernetes-admin may not evict p (Eviction)" in out, out
    assert "pod/p" in served.kubectl("get", "pods", "-n", "pinned", "-o", "name")
    served.kubectl("delete", "validatingadmissionpolicybinding", "no-evictions-pinned")
    served.kubectl("delete", "node", "n1")


def test_audit_annotations(served: Served) -> None:
    """auditAnnotations are checked when the policy is written (keys qualified by the policy's
    name, expressions compiled); at admission a value of the wrong type denies the request even
    under an Audit-only binding, as upstream's dispatcher does."""
    bad = _policy("audited", ["configmaps"], [], auditAnnotations=[
        {"key": "bad key!", "valueExpression": "'x'"}, {"key": "bad key!", "valueExpression": "objct.x"},
        {"key": "empty", "valueExpression": " "}])
    out = served.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert 'spec.auditAnnotations[0].key: Invalid value: "audited/bad key!": name part must consist of ' \
           "alphanumeric characters" in out, out
    assert 'spec.auditAnnotations[1].key: Duplicate value: "bad key!"' in out
    assert "spec.auditAnnotations[1].valueExpression: Invalid value: \"objct.x\": compilation failed: ERROR: " \
           "<input>:1:1: undeclared reference to 'objct'" in out
    assert "spec.auditAnnotations[2].valueExpression: Required value: valueExpression is not specified" in out
    good = _policy("audited", ["configmaps"], [], operations=["CREATE"], auditAnnotations=[
        {"key": "creator", "valueExpression": "request.userInfo.username"},
        {"key": "length", "valueExpression": "object.metadata.name.startsWith('long') ? "
                                             "object.metadata.name.size() : null"}])
    _apply(served, good, _binding("audited-notes", "audited", ["Audit"], "notes"))
    served.kubectl("create", "configmap", "short", "-n", "notes")
    out = served.kubectl("create", "configmap", "longer", "-n", "notes", check=False)
    assert "ValidatingAdmissionPolicy 'audited' with binding 'audited-notes' denied request: valueExpression " \
           "'object.metadata.name.startsWith('long') ? object.metadata.name.size() : null' resulted in unsupported " \
           "return type: int. Return type must be either string or null." in out, out
    served.kubectl("delete", "validatingadmissionpolicybinding", "audited-notes")


def _event(name: str, message: str) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "notes"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "notes"}, "reason": "Noted",
            "message": message, "type": "Normal"}


def test_match_policy_equivalent(served: Served) -> None:
    """A policy on events.k8s.io/v1 events (matchPolicy Equivalent, the default) judges a core/v1
    Event too, seen in events.k8s.io/v1's shape (`note`); under Exact it does not."""
    policy = _policy("quiet-events", ["events"], [{
        "expression": "!object.note.startsWith('secret')",
        "messageExpression": "'seen as ' + request.resource.group + '/' + request.resource.version + ', asked as ' + "
                             "request.requestResource.version + ': ' + object.note"}], operations=["CREATE"])
    policy["spec"]["matchConstraints"]["resourceRules"][0]["apiGroups"] = ["events.k8s.io"]
    _apply(served, policy, _binding("quiet-events-notes", "quiet-events", ["Deny"], "notes"))
    _apply(served, _event("fine", "public stuff"))
    out = served.kubectl("apply", "-f", "-", input=yaml.safe_dump(_event("leak", "secret stuff")), check=False)
    assert "ValidatingAdmissionPolicy 'quiet-events' with binding 'quiet-events-notes' denied request: seen as " \
           "events.k8s.io/v1, asked as v1: secret stuff" in out, out
    policy["spec"]["matchConstraints"]["matchPolicy"] = "Exact"
    _apply(served, policy)
    _apply(served, _event("leak", "secret stuff"))
    served.kubectl("delete", "validatingadmissionpolicybinding", "quiet-events-notes")


def test_type_checking_warnings(served: Served) -> None:
    """A field the matched kind does not have is reported in status.typeChecking, as cel-go
    words it; the policy still runs as written."""
    _apply(served, _policy("typo", ["deployments"], [
        {"expression": "object.spec.replica <= 5", "messageExpression": "'too many: ' + string(object.spec.replicas)"},
        {"expression": "object.spec.template.spec.containers.all(c, c.imagex != '')"}]))
    warnings = json.loads(served.kubectl("get", "validatingadmissionpolicy", "typo", "-o",
                                         "jsonpath={.status.typeChecking.expressionWarnings}"))
    assert warnings == [
        {"fieldRef": "spec.validations[0].expression",
         "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n"
                    " | object.spec.replica <= 5\n | ...........^\n"},
        {"fieldRef": "spec.validations[1].expression",
         "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:46: undefined field 'imagex'\n"
                    " | object.spec.template.spec.containers.all(c, c.imagex != '')\n"
                    " | .............................................^\n"}]
    _apply(served, _policy("typo", ["deployments"], [{"expression": "object.spec.replicas <= 5"}]))
    assert served.kubectl("get", "validatingadmissionpolicy", "typo", "-o", "jsonpath={.status.typeChecking}") == "{}"
    served.kubectl("delete", "validatingadmissionpolicy", "typo")
