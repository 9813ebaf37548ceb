"""Which requests an admission policy or its binding applies to (admission/plugin/policy/matching,
over the webhook predicates for rules, namespaces and objects): a MatchResources' namespace and
object selectors, then its excluded and its included resource rules.

Under matchPolicy `Equivalent` (the default) a rule that does not name the request's resource
still selects it when it names the same objects at another group/version (Events in core/v1 and
events.k8s.io/v1, HorizontalPodAutoscalers in autoscaling/v1 and v2, a custom resource's served
versions); the policy then sees the request as that resource shows it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.selectors import LabelSelector, SelectorError

Obj = dict[str, Any]


@dataclass(frozen=True)
class Request:
    """What matching reads of a request (admission.Attributes)."""

    operation: str  # CREATE, UPDATE, DELETE or CONNECT
    group: str
    version: str
    resource: str  # the plural: pods, deployments
    subresource: str
    name: str
    namespace: str  # for a Namespace itself, its own name, as upstream's attributes carry it
    object: Obj | None
    old_object: Obj | None

    @property
    def is_namespace(self) -> bool:
        return self.group == "" and self.resource == "namespaces" and not self.subresource


class MatchError(ValueError):
    """A selector that cannot be parsed: the policy or binding is misconfigured."""


def _any(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_matches(resources: Any, resource: str, subresource: str) -> bool:
    for entry in resources if isinstance(resources, list) else ():
        res, _, sub = str(entry).partition("/")
        if res in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def _scope_matches(scope: Any, req: Request) -> bool:
    if scope in (None, "*"):
        return True
    if scope == "Cluster":
        return req.namespace == "" or req.is_namespace
    return req.namespace != "" and not req.is_namespace


def rule_matches(rule: Obj, req: Request) -> bool:
    """One NamedRuleWithOperations: operation, group, version, resource (`*`, `pods/*`, `*/status`),
    scope, then resourceNames (a request without a name yet matches none)."""
    if not (_any(rule.get("operations"), req.operation) and _any(rule.get("apiGroups"), req.group)
            and _any(rule.get("apiVersions"), req.version)
            and _resource_matches(rule.get("resources"), req.resource, req.subresource)
            and _scope_matches(rule.get("scope"), req)):
        return False
    names = rule.get("resourceNames")
    return not names or req.name in names


def _selector(value: Any, field: str) -> LabelSelector:
    if value is None:
        return LabelSelector.EVERYTHING
    try:
        return LabelSelector.compile(value)
    except SelectorError as e:
        raise MatchError(f"{field}: {e}") from None


def _labels(obj: Obj | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _rules_match(rules: Any, req: Request, equivalents: Sequence[Request]) -> Request | None:
    """matchesResourceRules: the request as the first rule to select it sees it, the request's
    own resource before its equivalents."""
    named = [r for r in rules or () if isinstance(r, dict)]
    if any(rule_matches(r, req) for r in named):
        return req
    return next((e for r in named for e in equivalents if rule_matches(r, e)), None)


def matches(criteria: Obj, req: Request, namespace: Obj | None, equivalents: Sequence[Request] = ()) -> Request | None:
    """The request as `criteria` (a policy's matchConstraints or a binding's matchResources)
    selects it, None when it does not; `namespace` is the request's namespace object (None when
    cluster-scoped or missing), `equivalents` the request at the other group/versions serving its
    objects. An empty list of resource rules selects every resource. Raises MatchError for a
    selector that does not parse, but only for a request the rules would otherwise select, as
    upstream does."""
    errors: list[str] = []
    namespaced = req.namespace != "" or req.is_namespace
    if namespaced:
        try:
            selector = _selector(criteria.get("namespaceSelector"), "namespaceSelector")
            labels = _labels(req.old_object if req.operation == "DELETE" else req.object) if req.is_namespace \
                else _labels(namespace)
            if not selector.is_empty and not selector.matches(labels):
                return None
        except MatchError as e:
            errors.append(str(e))
    try:
        selector = _selector(criteria.get("objectSelector"), "objectSelector")
        if not selector.is_empty and not any(o is not None and selector.matches(_labels(o))
                                             for o in (req.object, req.old_object)):
            return None
    except MatchError as e:
        errors.append(str(e))
    if criteria.get("matchPolicy") != "Equivalent":
        equivalents = ()
    if _rules_match(criteria.get("excludeResourceRules"), req, equivalents) is not None:
        return None
    rules = criteria.get("resourceRules") or []
    matched = _rules_match(rules, req, equivalents) if rules else req
    if matched is None:
        return None
    if errors:
        raise MatchError(errors[0])
    return matched
