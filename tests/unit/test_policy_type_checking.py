"""A ValidatingAdmissionPolicy's status.typeChecking on the in-process API server: expressions
checked against each matched kind's schema as cel-go's checker checks them (field names, operand
types of operators and standard functions, the conditional, `in`, indexing), with `variables`,
`request` and `namespaceObject` typed; expressions that are well typed are never reported."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore

GROUP = "admissionregistration.k8s.io/v1"
DEPLOYMENTS = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}


def _warnings(expressions: list[str], rules: list[dict[str, Any]] | None = None, api: APIServer | None = None,
              **spec: Any) -> list[dict[str, str]]:
    api = api or APIServer(MemoryStore(), lambda: 0.0)
    policy = api.create({"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
                         "spec": {"matchConstraints": {"resourceRules": rules or [DEPLOYMENTS]},
                                  "validations": [{"expression": e} for e in expressions], **spec}})
    api.store.delete("ValidatingAdmissionPolicy", "", "p")
    return list(policy["status"]["typeChecking"].get("expressionWarnings") or [])


def test_a_string_and_an_int_added_is_reported_as_cel_go_reports_it() -> None:
    assert _warnings(["'replicas: ' + object.spec.replicas != ''"]) == [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:14: found no matching overload for '_+_' applied to "
                   "'(string, int)'\n | 'replicas: ' + object.spec.replicas != ''\n | .............^\n"}]


def test_each_matched_kind_and_each_issue_in_order() -> None:
    rules = [{**DEPLOYMENTS, "resources": ["replicasets", "deployments"]}]
    (warning,) = _warnings(["object.spec.paused == 'yes' || object.spec.replicas > 'two'"], rules)
    assert warning["warning"] == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:20: found no matching overload for '_==_' applied to "
        "'(bool, string)'\n | object.spec.paused == 'yes' || object.spec.replicas > 'two'\n"
        " | ...................^\n"
        "ERROR: <input>:1:53: found no matching overload for '_>_' applied to '(int, string)'\n"
        " | object.spec.paused == 'yes' || object.spec.replicas > 'two'\n"
        " | ....................................................^\n"
        "\n"
        "apps/v1, Kind=ReplicaSet: ERROR: <input>:1:12: undefined field 'paused'\n"
        " | object.spec.paused == 'yes' || object.spec.replicas > 'two'\n"
        " | ...........^\n"
        "ERROR: <input>:1:53: found no matching overload for '_>_' applied to '(int, string)'\n"
        " | object.spec.paused == 'yes' || object.spec.replicas > 'two'\n"
        " | ....................................................^\n")


@pytest.mark.parametrize(("expression", "issue"), [
    ("size(object.spec.replicas) > 0", "1:5: found no matching overload for 'size' applied to '(int)'"),
    ("object.spec.replicas.value > 0", "1:21: type 'int' does not support field selection"),
    ("!object.spec.replicas", "1:1: found no matching overload for '!_' applied to '(int)'"),
    ("object.spec.paused ? 1 : 'one'", "1:20: found no matching overload for '_?_:_' applied to '(bool, int, string)'"),
    ("object.metadata.name in [1, 2]", "1:22: found no matching overload for '@in' applied to '(string, list(int))'"),
    ("object.metadata.labels.app.startsWith(1)",
     "1:38: found no matching overload for 'startsWith' applied to '(string, int)'"),
    ("object.metadata.creationTimestamp > '2024'",
     "1:35: found no matching overload for '_>_' applied to '(google.protobuf.Timestamp, string)'"),
    ("object.spec.template.spec.containers.all(c, c.name + 1 != '')",
     "1:52: found no matching overload for '_+_' applied to '(string, int)'"),
    ("variables.desired + 'x' != ''", "1:19: found no matching overload for '_+_' applied to '(int, string)'"),
    ("variables.undeclared", "1:10: undefined field 'undeclared'"),
    ("request.dryRun == 'true'", "1:16: found no matching overload for '_==_' applied to '(bool, string)'"),
    ("request.userInfo.name != ''", "1:17: undefined field 'name'"),
    ("request.uid != ''", "1:8: undefined field 'uid'"),
    ("namespaceObject.metadata.ownerReferences.size() > 0", "1:25: undefined field 'ownerReferences'"),
])
def test_issues(expression: str, issue: str) -> None:
    (warning,) = _warnings([expression], variables=[{"name": "desired", "expression": "object.spec.replicas"}])
    assert warning["warning"].startswith(f"apps/v1, Kind=Deployment: ERROR: <input>:{issue}\n"), warning


WELL_TYPED = [
    "object.spec.replicas <= 5 && object.spec.replicas > 1.5",
    "'replicas: ' + string(object.spec.replicas) != ''",
    "object.metadata.labels['app'] == 'web' && object.metadata.labels.app != ''",
    "object.spec.template.spec.containers.all(c, c.image.startsWith('registry/') && size(c.name) < 64)",
    "object.spec.template.spec.containers.exists(c, c.ports.exists(p, p.containerPort > 1024))",
    "object.spec.template.spec.containers.map(c, c.name).join(',') != ''",
    "object.spec.template.spec.containers.filter(c, c.name == 'x').size() == 0",
    "quantity(object.spec.template.spec.containers[0].resources.limits.cpu).isLessThan(quantity('2'))",
    "object.spec.strategy.rollingUpdate.maxSurge == '25%' || object.spec.strategy.rollingUpdate.maxSurge > 1",
    "has(object.spec.replicas) && object.spec.replicas in [1, 2, 3]",
    "object.spec.replicas == null || oldObject.spec.replicas == object.spec.replicas",
    "object.metadata.creationTimestamp < timestamp('2030-01-01T00:00:00Z')",
    "request.operation == 'CREATE' && request.userInfo.groups.exists(g, g == 'admins')",
    "namespaceObject.metadata.labels.env == 'prod' && request.kind.kind == 'Deployment'",
    "authorizer.group('apps').resource('deployments').check('create').allowed()",
    "variables.desired <= 10 && variables.names.all(n, n.matches('^[a-z-]+$'))",
    "int(object.spec.replicas) + 1 > 0 ? true : false",
    "dyn(object.spec.replicas) + 'x' != ''",
]


def test_well_typed_expressions_are_not_reported() -> None:
    assert _warnings(WELL_TYPED, variables=[
        {"name": "desired", "expression": "object.spec.replicas"},
        {"name": "names", "expression": "object.spec.template.spec.containers.map(c, c.name)"}]) == []


def test_a_custom_resource_schema_types_its_fields() -> None:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                             "type": "object", "properties": {"spec": {"type": "object", "properties": {
                                 "size": {"type": "integer"}, "ratio": {"type": "number"},
                                 "port": {"x-kubernetes-int-or-string": True},
                                 "until": {"type": "string", "format": "date-time"},
                                 "tags": {"type": "object", "additionalProperties": {"type": "integer"}}}}}}}}]}})
    rules = [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}]
    warnings = _warnings(["object.spec.size * object.spec.ratio > 1.0",
                          "object.spec.port == 80 || object.spec.port == 'http'",
                          "object.spec.tags.all(k, object.spec.tags[k] + k > 0)",
                          "object.spec.until - duration('1h') < timestamp('2030-01-01T00:00:00Z')"], rules, api)
    assert [(w["fieldRef"], w["warning"].split("\n")[0]) for w in warnings] == [
        ("spec.validations[0].expression", "example.com/v1, Kind=Widget: ERROR: <input>:1:18: found no matching "
                                           "overload for '_*_' applied to '(int, double)'"),
        ("spec.validations[2].expression", "example.com/v1, Kind=Widget: ERROR: <input>:1:45: found no matching "
                                           "overload for '_+_' applied to '(int, string)'")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["object.spec.replicas", "object.spec.minReadySeconds", "1", "-2",
                                 "size(object.metadata.name)", "variables.desired"]), min_size=1, max_size=5),
       st.lists(st.sampled_from(["+", "-", "*", "%"]), min_size=4, max_size=4),
       st.sampled_from(["<", "<=", "==", "!=", ">"]))
def test_integer_arithmetic_is_never_reported(operands: list[str], operators: list[str], relation: str) -> None:
    """Any arithmetic over integer fields, literals and sizes, compared with an integer, is well typed."""
    expression = operands[0] + "".join(f" {op} {x}" for op, x in zip(operators, operands[1:], strict=False))
    assert _warnings([f"{expression} {relation} 3"],
                     variables=[{"name": "desired", "expression": "object.spec.replicas"}]) == []


def test_params_without_a_param_kind_do_not_compile() -> None:
    """Upstream declares `params` only for a policy with a paramKind: without one, an expression
    reading it is refused when the policy is written."""
    api = APIServer(MemoryStore(), lambda: 0.0)
    policy = {"apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
              "spec": {"matchConstraints": {"resourceRules": [DEPLOYMENTS]},
                       "validations": [{"expression": "object.spec.replicas <= params.max"}]}}
    with pytest.raises(APIError) as e:
        api.create(policy)
    assert ('spec.validations[0].expression: Invalid value: "object.spec.replicas <= params.max": compilation '
            "failed: ERROR: <input>:1:25: undeclared reference to 'params' (in container '')") in e.value.message
    policy["spec"]["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
    assert api.create(policy)["metadata"]["name"] == "p"
