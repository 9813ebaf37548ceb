"""Custom objects against their structural schema, and definitions against apiextensions' rules:
what kube-apiserver keeps, fills in and refuses, in its words."""

from __future__ import annotations

import copy

import pytest

from kubesched.api.crd.cel import compile_error, rule_problems
from kubesched.api.crd.objects import default_and_prune, object_problems
from kubesched.api.crd.validation import crd_problems

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "string", "enum": ["small", "large"]},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1, "multipleOf": 0.25},
                "name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"},
                         "x-kubernetes-list-type": "set"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
                "port": {"x-kubernetes-int-or-string": True},
                "address": {"type": "string", "format": "ipv4"},
                "when": {"type": "string", "format": "date-time"},
                "note": {"type": "string", "nullable": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"known": {"type": "integer", "default": 7}}},
                "inner": {"type": "object", "properties": {"deep": {"type": "string", "default": "d"}}},
            },
        },
    },
}


def _obj(**spec: object) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": "small", **spec}}


def test_defaults_fill_in_and_unknown_fields_are_pruned() -> None:
    obj = _obj(extra=1, free={"anything": {"goes": True}}, inner={}, note=None, replicas=None)
    obj["top"] = "x"
    pruned = default_and_prune(obj, SCHEMA)
    assert sorted(pruned) == ["spec.extra", "top"]
    assert obj["spec"] == {"size": "small", "free": {"anything": {"goes": True}, "known": 7},
                           "inner": {"deep": "d"}, "note": None, "replicas": 1}
    assert obj["metadata"] == {"name": "w"} and "top" not in obj
    declared = copy.deepcopy(SCHEMA)
    declared["properties"]["metadata"] = {"type": "object"}  # as many published definitions say
    kept = _obj()
    kept["metadata"]["labels"] = {"app": "x"}
    assert default_and_prune(kept, declared) == [] and kept["metadata"] == {"name": "w", "labels": {"app": "x"}}
    unchanged = _obj(extra=1)
    assert default_and_prune(unchanged, SCHEMA, defaults=False) == ["spec.extra"]
    assert "replicas" not in unchanged["spec"]


@pytest.mark.parametrize(("spec", "problem"), [
    ({"size": "medium"}, 'spec.size: Unsupported value: "medium": supported values: "small", "large"'),
    ({"replicas": "two"}, 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: '
                          '"string"'),
    ({"replicas": 0}, "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"),
    ({"replicas": 9}, "spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5"),
    ({"ratio": 1}, "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"),
    ({"ratio": 0.3}, "spec.ratio: Invalid value: 0.3: spec.ratio in body should be a multiple of 0.25"),
    ({"name": "abcdef"}, "spec.name: Too long: may not be more than 4 bytes"),
    ({"name": "a"}, 'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'),
    ({"name": "AB"}, "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
    ({"tags": ["a", "b", "c"]}, "spec.tags: Too many: 3: must have at most 2 items"),
    ({"tags": []}, "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"),
    ({"tags": ["a", "a"]}, 'spec.tags[1]: Duplicate value: "a"'),
    ({"labels": {"a": "1", "b": "2"}}, "spec.labels: Too many: 2: must have at most 1 items"),
    ({"labels": {"a": 1}}, 'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: '
                           '"integer"'),
    ({"port": 1.5}, 'spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'),
    ({"address": "10.0.0.300"}, 'spec.address: Invalid value: "10.0.0.300": spec.address in body must be of type '
                                'ipv4: "10.0.0.300"'),
    ({"when": "yesterday"}, 'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: '
                            '"yesterday"'),
])
def test_schema_refusals(spec: dict, problem: str) -> None:
    assert object_problems(_obj(**spec), SCHEMA) == [problem]


def test_what_the_schema_accepts() -> None:
    good = _obj(replicas=5, ratio=0.75, name="ab", tags=["x"], labels={"a": "b"}, port="http", address="10.0.0.1",
                when="2026-01-02T03:04:05Z", note=None)
    assert object_problems(good, SCHEMA) == []
    assert object_problems({**good, "spec": {}}, SCHEMA) == ["spec.size: Required value"]
    assert object_problems({**good, "metadata": {"name": "Bad_Name"}}, SCHEMA)[0].startswith(
        'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')


def test_unchanged_values_are_not_judged_again() -> None:
    """Validation ratcheting: an object written under a looser schema can still be updated."""
    old = _obj(name="TOOLONG", tags=["x", "x"], replicas=1)
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 9
    assert object_problems(new, SCHEMA, old) == [
        "spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5"]
    new["spec"]["replicas"] = 2
    assert object_problems(new, SCHEMA, old) == []
    new["spec"]["name"] = "ALSOBAD"
    assert len(object_problems(new, SCHEMA, old)) == 2  # a changed value is judged: too long, bad pattern
    assert len(object_problems(old, SCHEMA)) == 3  # a create judges everything


def test_validation_rules() -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas <= 3", "messageExpression": "'too many: ' + string(self.replicas)"},
        {"rule": "self.size == oldSelf.size", "message": "size is immutable", "reason": "FieldValueForbidden"},
        {"rule": "has(self.name)", "fieldPath": ".name", "reason": "FieldValueRequired", "message": "name it"},
    ]
    schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name.startsWith('w')"}]
    assert rule_problems(_obj(replicas=2, name="x"), None, schema) == []
    assert rule_problems(_obj(replicas=4), None, schema) == [
        'spec: Invalid value: "object": too many: 4', "spec.name: Required value: name it"]
    old = _obj(size="large", replicas=1, name="x")
    assert rule_problems(_obj(replicas=1, name="x"), old, schema) == ["spec: Forbidden: size is immutable"]
    renamed = {**_obj(name="x", replicas=1), "metadata": {"name": "v"}}
    assert rule_problems(renamed, None, schema) == [
        '<nil>: Invalid value: "object": failed rule: self.metadata.name.startsWith(\'w\')']
    assert compile_error("self.replicas <") is not None and compile_error("self.a == 1") is None


def _crd(**changes: object) -> dict:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "conversion": {"strategy": "None"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)}}]}}
    crd["spec"].update(changes)
    return crd


def test_definition_problems() -> None:
    assert crd_problems(_crd()) == []
    assert crd_problems(_crd(group="example")) == [
        'metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "example": should be a domain with at least one dot']
    protected = _crd(group="widgets.x-k8s.io")
    protected["metadata"]["name"] = "widgets.widgets.x-k8s.io"
    assert crd_problems(protected) == []
    protected = _crd(group="example.k8s.io")
    protected["metadata"]["name"] = "widgets.example.k8s.io"
    assert crd_problems(protected) == [
        'metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval '
        'annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111']
    protected["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, experimental"}
    assert crd_problems(protected) == []
    two = _crd()
    two["spec"]["versions"].append({**two["spec"]["versions"][0], "name": "v2"})
    assert crd_problems(two) == ['spec.versions: Invalid value: ["v1","v2"]: must have exactly one version marked '
                                 'as storage version']
    untyped = _crd()
    schema = untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["tags"] = {"type": "array"}
    schema["properties"]["spec"]["properties"]["loose"] = {"description": "no type"}
    schema["properties"]["metadata"] = {"type": "object", "properties": {"labels": {"type": "object"}}}
    schema["x-kubernetes-validations"] = [{"rule": "self.spec.size =="}]
    root = "spec.versions[0].schema.openAPIV3Schema"
    assert sorted(crd_problems(untyped)) == sorted([
        f"{root}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but "
        "metadata is implicitly specified",
        f"{root}.properties[spec].properties[tags].items: Required value: must be specified",
        f"{root}.properties[spec].properties[loose].type: Required value: must not be empty for specified object "
        "fields",
        f'{root}.x-kubernetes-validations[0].rule: Invalid value: "self.spec.size ==": compilation failed: ERROR: '
        "<input>: Syntax error: " + str(compile_error("self.spec.size ==")).rsplit("Syntax error: ", 1)[1]])
    established = _crd()
    established["status"] = {"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v1"]}
    renamed = _crd(scope="Cluster")
    renamed["spec"]["names"]["plural"] = "gizmos"
    renamed["metadata"]["name"] = "gizmos.example.com"
    assert crd_problems(renamed, established) == [
        'spec.names.plural: Invalid value: "gizmos": field is immutable',
        'spec.scope: Invalid value: "Cluster": field is immutable']
