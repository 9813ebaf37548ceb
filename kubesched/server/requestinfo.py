"""A request's authorization attributes, derived from its URL, method and query as
k8s.io/apiserver's RequestInfoFactory derives them, so a rule matches here when it would match
on kube-apiserver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass
class Attributes:
    """Who asks to do what: authorizer.Attributes."""

    user: str
    groups: list[str]
    verb: str
    resource_request: bool = True
    namespace: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)


def request_info(method: str, path: str, query: Any) -> Attributes:
    """Attributes without the user: `/api` and `/apis` below a group/version are resources,
    anything else is a non-resource path whose verb is the lower-cased method."""
    parts = [p for p in path.strip("/").split("/") if p]
    nonresource = Attributes("", [], method.lower(), resource_request=False, path=path)
    if not parts or parts[0] not in ("api", "apis"):
        return nonresource
    if parts[0] == "apis":
        if len(parts) < 3:
            return nonresource
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        if len(parts) < 2:
            return nonresource
        group, version, rest = "", parts[1], parts[2:]
    if not rest:
        return nonresource
    verb = _METHOD_VERBS.get(method.upper(), method.lower())
    if rest[0] == "watch" and method.upper() == "GET":  # the deprecated /watch/ prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    info = Attributes("", [], verb, group=group, version=version, namespace=namespace,
                      resource=rest[0] if rest else "", name=rest[1] if len(rest) > 1 else "",
                      subresource=rest[2] if len(rest) > 2 else "", path=path)
    if not info.name and info.verb == "get":
        info.verb = "watch" if query.get("watch") in ("true", "1") else "list"
    if not info.name and info.verb == "delete":
        info.verb = "deletecollection"
    if info.verb in ("list", "watch"):  # a list of one object by name authorizes as that name
        for term in query.get("fieldSelector", "").split(","):
            key, _, value = term.partition("=")
            if key.strip() == "metadata.name" and value and not value.startswith("="):
                info.name = value.strip()
    return info
