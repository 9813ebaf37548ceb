"""Validation rules of custom resources (`x-kubernetes-validations`): CEL expressions over `self`, the
value of the schema node they sit on, and for transition rules `oldSelf`, the value it had before
the update (a rule that reads `oldSelf` is skipped on create and where there was no old value).

A failed rule answers as kube-apiserver words it: `path: Invalid value: "<type>": <message>`,
the message being the rule's `messageExpression` result, its `message`, or `failed rule: <rule>`;
`reason` turns it into Forbidden, Required or Duplicate, and `fieldPath` points below the node.
A rule on the root reports at `<nil>`, as upstream's empty path prints.

Evaluated by cel-python (as DRA's selectors are, api/dra/cel.py); without upstream's type checker,
a rule that does not compile is caught when the definition is written, one that is not boolean
when it runs."""

from __future__ import annotations

import functools
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes

from kubesched.api.crd.definition import as_dict, json_type_name

Obj = dict[str, Any]
@functools.cache
def _env() -> celpy.Environment:
    """The CEL environment, built on first use: its parser takes a noticeable part of a second to
    build, which a run that meets no CEL should not pay."""
    return celpy.Environment()
_REASONS = {"FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required value",
            "FieldValueDuplicate": "Duplicate value"}


@lru_cache(maxsize=1024)
def _program(expression: str) -> Any:
    return _env().program(_env().compile(expression))


def compile_error(expression: str) -> str | None:
    """Why `expression` does not compile, in upstream's form, or None."""
    try:
        _program(expression)
    except celpy.CELParseError as e:
        detail = str(e).splitlines()[0] if str(e) else "syntax error"
        return f"compilation failed: ERROR: <input>: Syntax error: {detail}"
    return None


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    try:
        result = _program(expression).evaluate(activation)
    except (celpy.CELEvalError, celpy.CELParseError, TypeError, ValueError) as e:
        return e
    return result


def rule_problems(obj: Obj, old: Obj | None, schema: Obj) -> list[str]:
    """Every failed rule of `schema` over `obj` (`old`: the object before an update)."""
    out: list[str] = []
    _walk(obj, old, schema, "", out)
    return out


def _walk(value: Any, old: Any, s: Obj, path: str, out: list[str]) -> None:
    if value is None:
        return
    for rule in s.get("x-kubernetes-validations") or ():
        if isinstance(rule, dict) and isinstance(rule.get("rule"), str):
            _check(rule, value, old, path, out)
    if isinstance(value, dict):
        props = as_dict(s.get("properties"))
        extra = s.get("additionalProperties")
        for key, child in value.items():
            sub = props.get(key) if key in props else extra if isinstance(extra, dict) else None
            if isinstance(sub, dict):
                _walk(child, old.get(key) if isinstance(old, dict) else None, sub, f"{path}.{key}" if path else key,
                      out)
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        keys = s.get("x-kubernetes-list-map-keys") if s.get("x-kubernetes-list-type") == "map" else None
        for i, item in enumerate(value):
            _walk(item, _old_item(item, i, old, keys), s["items"], f"{path}[{i}]", out)


def _old_item(item: Any, index: int, old: Any, keys: Any) -> Any:
    """The old value of a list item: by its map keys in a map list (where oldSelf is defined),
    nothing otherwise (upstream gives atomic and set lists' items no oldSelf)."""
    if not keys or not isinstance(old, list) or not isinstance(item, dict):
        return None
    return next((o for o in old if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys)), None)


def _check(rule: Obj, value: Any, old: Any, path: str, out: list[str]) -> None:
    expression = rule["rule"]
    if old is not None and old == value and "oldSelf" not in expression:
        return  # an unchanged value is not judged again (validation ratcheting)
    activation = {"self": celpy.json_to_cel(value)}
    if "oldSelf" in expression:
        if old is None and not rule.get("optionalOldSelf"):
            return  # a transition rule: only when there is an old value
        activation["oldSelf"] = celpy.json_to_cel(old) if old is not None else celtypes.MapType()
    result = _evaluate(expression, activation)
    if isinstance(result, celtypes.BoolType) and bool(result):
        return
    where = path + (rule.get("fieldPath") or "") if rule.get("fieldPath") else path
    where = where.lstrip(".") or "<nil>"
    if isinstance(result, Exception) or not isinstance(result, celtypes.BoolType):
        detail = str(result.args[0]) if isinstance(result, Exception) and result.args else str(result)
        out.append(f"{where}: Invalid value: \"{json_type_name(value)}\": {expression}: {detail}")
        return
    message = rule.get("message") or f"failed rule: {expression}"
    if isinstance(rule.get("messageExpression"), str):
        said = _evaluate(rule["messageExpression"], activation)
        if isinstance(said, str) and said.strip():
            message = str(said)
    reason = _REASONS.get(str(rule.get("reason") or ""))
    if reason:
        out.append(f"{where}: {reason}: {message}")
    else:
        out.append(f'{where}: Invalid value: "{json_type_name(value)}": {message}')
