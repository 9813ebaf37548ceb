"""admissionregistration.k8s.io/v1's checks of ValidatingAdmissionPolicy and its bindings, the part
of upstream's that keeps a policy from being stored when it cannot run: required fields, enums,
every CEL expression compiled (a syntax error or an unknown name is a 422 naming the field,
as kube-apiserver's validation answers), and auditAnnotations' keys."""

from __future__ import annotations

from typing import Any

from kubesched.api.policycel import compile_error
from kubesched.api.validation.checker import Checker, qualified_name_errors, subpath

OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SCOPES = ("*", "Cluster", "Namespaced")
REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
ACTIONS = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS = ("Allow", "Deny")
MAX_AUDIT_ANNOTATIONS = 20
MAX_VALUE_EXPRESSION_BYTES = 5 * 1024


def _expression(c: Checker, obj: dict[str, Any], key: str, path: str, required: bool = True,
                params: bool = True) -> None:
    """A CEL expression of a policy or webhook; `params`: whether the `params` variable is declared."""
    value = c.need(obj, key, path, str) if required else c.get(obj, key, path, str)
    if value is None:
        return
    if not value.strip():
        c.required(subpath(path, key))
    elif (why := compile_error(value, params)) is not None:
        c.invalid(subpath(path, key), value, why)


def _items(c: Checker, obj: dict[str, Any], key: str, path: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a list field, each with its path."""
    out = []
    for i, item in enumerate(c.get(obj, key, path, list) or []):
        item_path = f"{subpath(path, key)}[{i}]"
        if c.typed(item, item_path, dict) is not None:
            out.append((item_path, item))
    return out


def _match_resources(c: Checker, match: dict[str, Any], path: str, policy: bool) -> None:
    c.enum(match, "matchPolicy", path, MATCH_POLICIES)
    if policy and not match.get("resourceRules"):
        c.required(subpath(path, "resourceRules"))
    for key in ("resourceRules", "excludeResourceRules"):
        for rule_path, rule in _items(c, match, key, path):
            for field in ("operations", "apiGroups", "apiVersions", "resources"):
                if not rule.get(field):
                    c.required(subpath(rule_path, field))
            for i, op in enumerate(c.get(rule, "operations", rule_path, list) or []):
                if op not in OPERATIONS:
                    c.unsupported(f"{rule_path}.operations[{i}]", op, OPERATIONS)
            c.enum(rule, "scope", rule_path, SCOPES)


def _validating_admission_policy(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.need(obj, "spec", path, dict) or {}
    c.enum(spec, "failurePolicy", spec_path, FAILURE_POLICIES)
    match = c.need(spec, "matchConstraints", spec_path, dict)
    if match is not None:
        _match_resources(c, match, subpath(spec_path, "matchConstraints"), policy=True)
    if not spec.get("validations") and not spec.get("auditAnnotations"):
        c.required(subpath(spec_path, "validations"), "validations or auditAnnotations must contain at least one item")
    params = spec.get("paramKind") is not None  # upstream declares `params` only with a paramKind
    for item_path, validation in _items(c, spec, "validations", spec_path):
        _expression(c, validation, "expression", item_path, params=params)
        _expression(c, validation, "messageExpression", item_path, required=False, params=params)
        c.enum(validation, "reason", item_path, REASONS)
    for item_path, condition in _items(c, spec, "matchConditions", spec_path):
        c.need(condition, "name", item_path, str)
        _expression(c, condition, "expression", item_path, params=params)
    for item_path, variable in _items(c, spec, "variables", spec_path):
        c.need(variable, "name", item_path, str)
        _expression(c, variable, "expression", item_path, params=params)
    _audit_annotations(c, spec, spec_path, str((obj.get("metadata") or {}).get("name") or ""), params)
    if (kind := c.get(spec, "paramKind", spec_path, dict)) is not None:
        for key in ("apiVersion", "kind"):
            c.need(kind, key, subpath(spec_path, "paramKind"), str)


def _audit_annotations(c: Checker, spec: dict[str, Any], spec_path: str, name: str, params: bool) -> None:
    """Each key, qualified by the policy's name, is an annotation key of the audit event; each
    valueExpression compiles (validateAuditAnnotation)."""
    items = _items(c, spec, "auditAnnotations", spec_path)
    if len(items) > MAX_AUDIT_ANNOTATIONS:
        c.invalid(subpath(spec_path, "auditAnnotations"), spec["auditAnnotations"],
                  f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations")
    keys: set[str] = set()
    for item_path, annotation in items:
        key = c.get(annotation, "key", item_path, str) or ""
        key_path = subpath(item_path, "key")
        if not name:
            c.invalid(key_path, key, "requires metadata.name be non-empty")
        for why in qualified_name_errors(f"{name}/{key}") if name else ():
            c.invalid(key_path, f"{name}/{key}", why)
        if key in keys:
            c.err(key_path, f'Duplicate value: "{key}"')
        keys.add(key)
        expression = (c.get(annotation, "valueExpression", item_path, str) or "").strip()
        expression_path = subpath(item_path, "valueExpression")
        if not expression:
            c.required(expression_path, "valueExpression is not specified")
        elif len(expression.encode()) > MAX_VALUE_EXPRESSION_BYTES:
            c.required(expression_path, f"must not exceed {MAX_VALUE_EXPRESSION_BYTES} bytes in length")
        elif (problem := compile_error(expression, params)) is not None:
            c.invalid(expression_path, annotation["valueExpression"], problem)


def _validating_admission_policy_binding(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.need(obj, "spec", path, dict) or {}
    c.need(spec, "policyName", spec_path, str)
    actions = c.get(spec, "validationActions", spec_path, list)
    actions_path = subpath(spec_path, "validationActions")
    if not actions:
        c.required(actions_path, "at least one validation action is required")
    for i, action in enumerate(actions or []):
        if action not in ACTIONS:
            c.unsupported(f"{actions_path}[{i}]", action, ACTIONS)
    if actions and "Deny" in actions and "Warn" in actions:
        c.invalid(actions_path, actions, "must not contain both Deny and Warn (repeating the same validation "
                                         "failure information in the API response and headers serves no purpose)")
    if (match := c.get(spec, "matchResources", spec_path, dict)) is not None:
        _match_resources(c, match, subpath(spec_path, "matchResources"), policy=False)
    ref = c.get(spec, "paramRef", spec_path, dict)
    if ref is not None:
        ref_path = subpath(spec_path, "paramRef")
        if ref.get("name") and ref.get("selector") is not None:
            c.err(subpath(ref_path, "name"), "Forbidden: name and selector are mutually exclusive")
        elif not ref.get("name") and ref.get("selector") is None:
            c.required(ref_path, "one of name or selector must be specified")
        if ref.get("parameterNotFoundAction") is None:
            c.required(subpath(ref_path, "parameterNotFoundAction"))
        else:
            c.enum(ref, "parameterNotFoundAction", ref_path, NOT_FOUND_ACTIONS)
