"""RBAC as kube-apiserver authorizes with it (plugin/pkg/auth/authorizer/rbac): a request is
allowed when some binding that names the user, one of its groups or its ServiceAccount grants a
rule matching it; nothing ever denies. Also the ClusterRole aggregation controller, which fills
an aggregated role's `rules` from the roles its selectors match, and the bootstrap policy kept
in the store as kube-apiserver keeps it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.server import bootstrappolicy
from kubesched.server.requestinfo import Attributes
from kubesched.store.base import Store

MASTERS = "system:masters"  # the group kube-apiserver lets do anything before asking RBAC


def _has(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def _resource_matches(rule: dict[str, Any], a: Attributes) -> bool:
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    for r in rule.get("resources") or []:
        if r in ("*", combined) or (a.subresource and r == f"*/{a.subresource}"):
            return True
    return False


def rule_allows(rule: dict[str, Any], a: Attributes) -> bool:
    if not _has(rule.get("verbs"), a.verb):
        return False
    if not a.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == a.path or (url.endswith("*") and a.path.startswith(url[:-1])):
                return True
        return False
    names = rule.get("resourceNames") or []
    return (_has(rule.get("apiGroups"), a.group) and _resource_matches(rule, a)
            and (not names or a.name in names))


def _subject_matches(subject: dict[str, Any], binding_namespace: str, user: str, groups: list[str]) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user == f"system:serviceaccount:{namespace}:{name}"
    return False


class Authorizer:
    """Reads roles and bindings from the store on every request: the store is the informer's
    cache here, so a binding applies from the moment it is written."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _rules(self, binding: dict[str, Any]) -> list[dict[str, Any]]:
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            role = self.store.get("ClusterRole", "", ref.get("name", ""))
        elif ref.get("kind") == "Role":
            role = self.store.get("Role", binding["metadata"].get("namespace", ""), ref.get("name", ""))
        else:
            role = None
        return (role or {}).get("rules") or []

    def _grants(self, a: Attributes) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
        """(binding, subject, rule) for every rule bound to the user that applies where the request does."""
        bindings = list(self.store.list("ClusterRoleBinding"))
        if a.namespace:
            bindings += list(self.store.list("RoleBinding", a.namespace))
        for b in bindings:
            ns = b["metadata"].get("namespace", "")
            subject = next((s for s in b.get("subjects") or [] if _subject_matches(s, ns, a.user, a.groups)), None)
            if subject is not None:
                for rule in self._rules(b):
                    yield b, subject, rule

    def authorize(self, a: Attributes) -> tuple[bool, str]:
        """(allowed, reason) with RBAC's reason for an allow."""
        if MASTERS in a.groups:
            return True, ""
        for binding, subject, rule in self._grants(a):
            if rule_allows(rule, a):
                ref, ns = binding["roleRef"], binding["metadata"].get("namespace")
                by = f'{binding["kind"]} "{binding["metadata"]["name"]}' + (f'/{ns}"' if ns else '"')
                to = f'{subject["kind"]} "{subject["name"]}"'
                if subject["kind"] == "ServiceAccount":
                    to = f'ServiceAccount "{subject["name"]}/{subject.get("namespace") or ns}"'
                return True, f'RBAC: allowed by {by} of {ref["kind"]} "{ref["name"]}" to {to}'
        return False, ""

    def rules_for(self, user: str, groups: list[str], namespace: str) -> list[dict[str, Any]]:
        """Every rule the user holds in a namespace: SelfSubjectRulesReview's answer."""
        probe = Attributes(user, groups, "", namespace=namespace)
        return [rule for _, _, rule in self._grants(probe)]


def aggregate(store: Store) -> list[dict[str, Any]]:
    """The aggregated ClusterRoles whose `rules` differ from the union of the roles they select,
    with their new rules; repeated until stable, since an aggregated role may feed another."""
    changed: dict[str, dict[str, Any]] = {}
    roles = {r["metadata"]["name"]: r for r in store.list("ClusterRole")}
    for _ in range(len(roles) + 1):
        progress = False
        for name, role in sorted(roles.items()):
            terms = (role.get("aggregationRule") or {}).get("clusterRoleSelectors")
            if not terms:
                continue
            rules: list[dict[str, Any]] = []
            try:
                selectors = [LabelSelector.compile(t) for t in terms]
            except SelectorError:
                continue
            for other_name, other in sorted(roles.items()):
                labels = other["metadata"].get("labels") or {}
                if other_name != name and any(s.matches(labels) for s in selectors):
                    rules += [r for r in other.get("rules") or [] if r not in rules]
            if rules != (role.get("rules") or []):
                role = {**role, "rules": rules}
                roles[name] = changed[name] = role
                progress = True
        if not progress:
            break
    return list(changed.values())


def bootstrap_objects() -> list[dict[str, Any]]:
    return [*bootstrappolicy.CLUSTER_ROLES, *bootstrappolicy.CLUSTER_ROLE_BINDINGS]
