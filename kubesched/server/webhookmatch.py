"""Which webhooks a request calls, as kube-apiserver's webhook predicates decide
(apiserver/pkg/admission/plugin/webhook/predicates and matchconditions): the rules (operations,
groups, versions, resources with their subresources, scope), under `matchPolicy` Equivalent the
same objects served at another group/version too, then `namespaceSelector`, `objectSelector`
and the CEL `matchConditions`."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import celpy

from kubesched.api.objects import Obj
from kubesched.api.selectors import LabelSelector
from kubesched.apiserver.errors import NotFoundError
from kubesched.store.base import Store


@dataclass(frozen=True)
class GVR:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool


def _listed(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_matches(resources: Any, resource: str, subresource: str) -> bool:
    """`pods` is the resource alone, `pods/status` one subresource, `pods/*` every subresource,
    `*` every resource without subresource and `*/*` everything."""
    for entry in resources if isinstance(resources, list) else ():
        res, _, sub = str(entry).partition("/")
        if res in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def _scope_matches(scope: Any, gvr: GVR, namespace: str) -> bool:
    """A Namespace is cluster-scoped whatever namespace the request names."""
    if scope in (None, "*"):
        return True
    is_namespace = gvr.group == "" and gvr.resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and namespace != ""
    if scope == "Cluster":
        return is_namespace or namespace == ""
    return False


def rules_match(hook: Obj, operation: str, gvr: GVR, subresource: str, namespace: str) -> bool:
    for rule in hook.get("rules") or ():
        if (isinstance(rule, dict) and _listed(rule.get("operations"), operation)
                and _listed(rule.get("apiGroups"), gvr.group) and _listed(rule.get("apiVersions"), gvr.version)
                and _resource_matches(rule.get("resources"), gvr.resource, subresource)
                and _scope_matches(rule.get("scope"), gvr, namespace)):
            return True
    return False


def _selector(value: Any) -> LabelSelector | None:
    """The selector, or None when it selects everything (absent or `{}`)."""
    if not isinstance(value, dict) or not (value.get("matchLabels") or value.get("matchExpressions")):
        return None
    return LabelSelector.compile(value)


def _labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def namespace_matches(hook: Obj, gvr: GVR, subresource: str, namespace: str, obj: Obj | None, old: Obj | None,
                      store: Store) -> bool:
    """A Namespace's own request is judged by its labels; cluster-scoped objects always match."""
    selector = _selector(hook.get("namespaceSelector"))
    if selector is None:
        return True
    if gvr.group == "" and gvr.resource == "namespaces" and not subresource:
        return selector.matches(_labels(obj if obj is not None else old))
    if not namespace:
        return True
    ns = store.get("Namespace", "", namespace)
    if ns is None:
        raise NotFoundError(f'namespaces "{namespace}" not found')
    return selector.matches(_labels(ns))


def object_matches(hook: Obj, obj: Obj | None, old: Obj | None) -> bool:
    """The new object's labels or the old one's."""
    selector = _selector(hook.get("objectSelector"))
    if selector is None:
        return True
    return any(o is not None and selector.matches(_labels(o)) for o in (obj, old))


@functools.cache
def _env() -> celpy.Environment:
    return celpy.Environment()


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    return _env().program(_env().compile(expression))


class ConditionError(Exception):
    """A match condition that does not evaluate to a bool."""


def conditions_match(hook: Obj, obj: Obj | None, old: Obj | None, request: Obj) -> bool:
    """All `matchConditions` true. One false skips the webhook even if another failed; a
    failure (raised as ConditionError) is judged by the webhook's failurePolicy."""
    conditions = [c for c in hook.get("matchConditions") or () if isinstance(c, dict)]
    if not conditions:
        return True
    activation = {"object": celpy.json_to_cel(obj), "oldObject": celpy.json_to_cel(old),
                  "request": celpy.json_to_cel(request)}
    errors: list[str] = []
    for condition in conditions:
        name = condition.get("name", "")
        try:
            result = _program(str(condition.get("expression", ""))).evaluate(activation)
        except (celpy.CELEvalError, celpy.CELParseError, TypeError, ValueError, KeyError) as e:
            errors.append(f"failed to evaluate match condition '{name}': {e}")
            continue
        if isinstance(result, celpy.CELEvalError):
            errors.append(f"failed to evaluate match condition '{name}': {result}")
        elif not isinstance(result, bool | celpy.celtypes.BoolType):
            errors.append(f"match condition '{name}' must evaluate to bool")
        elif not result:
            return False
    if errors:
        raise ConditionError("; ".join(errors))
    return True
