"""What `serve` answers at kube-apiserver's discovery endpoints: `/version`, `/api`, `/apis`,
`/apis/<group>`, `/api/v1` and `/apis/<group>/<version>`, in the legacy form and in the aggregated
form (`apidiscovery.k8s.io/v2`) that clients since v1.26 ask for first.

Both forms are built from resources.py, so kubectl's `api-resources` and its REST mapper see the
same resources whichever form it gets. Core-group answers carry no `apiVersion`, as upstream strips
it there for compatibility with clients from before API groups existed.
"""

from __future__ import annotations

import base64
import hashlib
import platform
import re
from collections.abc import Sequence
from typing import Any

from kubesched.api.restmapping import GROUPS, RESOURCES, Resource, in_group_version
from kubesched.server.schema import KUBERNETES_VERSION

# The subresources `serve` has: the kind each one answers with ((group, version, kind), None when it
# is the parent's own kind) and its verbs, as kube-apiserver lists them.
SUBRESOURCES: dict[str, tuple[tuple[str, str, str] | None, tuple[str, ...]]] = {
    "status": (None, ("get", "patch", "update")),
    "scale": (("autoscaling", "v1", "Scale"), ("get", "patch", "update")),
    "binding": (("", "v1", "Binding"), ("create",)),
    "eviction": (("policy", "v1", "Eviction"), ("create",)),
    "token": (("authentication.k8s.io", "v1", "TokenRequest"), ("create",)),
}

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def version() -> dict[str, Any]:
    """`/version`. The build metadata suffix (`+kubesched`, as k3s writes `+k3s1`) tells people
    which server this is while leaving the semantic version clients compare intact; fields that
    describe a Go build say what this build is instead."""
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    machine = platform.machine().lower()
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(int(minor) - 1),
        "gitVersion": f"{KUBERNETES_VERSION}+kubesched",
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "1970-01-01T00:00:00Z",  # upstream's value for a build that records none
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{platform.system().lower()}/{_GO_ARCH.get(machine, machine)}",
    }


def api_versions(server_address: str = "") -> dict[str, Any]:
    """`/api` (legacy form). `server_address` is the host:port clients reach this server at."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _version_priority(ver: str) -> tuple[int, int, int]:
    """Kubernetes' version order: GA before beta before alpha, then the higher number first."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", ver)
    if m is None:
        return (0, 0, 0)
    stability = {"alpha": 1, "beta": 2, None: 3}[m.group(2)]
    return (stability, int(m.group(1)), int(m.group(3) or 0))


def versions(group: str, extra: Sequence[Resource] = (), hidden: frozenset[Resource] = frozenset()) -> list[str]:
    """The versions `serve` has of a group, preferred first. `extra`: the custom resources the
    CustomResourceDefinitions add, here and below; `hidden`: built-in ones a feature gate turns off."""
    return sorted({r.version for r in (*RESOURCES, *extra) if r.group == group and r not in hidden},
                  key=_version_priority, reverse=True)


def _in_group_version(group: str, version: str, extra: Sequence[Resource],
                      hidden: frozenset[Resource] = frozenset()) -> list[Resource]:
    return [r for r in in_group_version(group, version) if r not in hidden] + [
        r for r in extra if r.group == group and r.version == version]


def groups(extra: Sequence[Resource] = ()) -> list[str]:
    """The built-in groups in kube-apiserver's priority order, then the custom ones by name."""
    return [*GROUPS, *sorted({r.group for r in extra} - set(GROUPS))]


def _group(group: str, extra: Sequence[Resource], hidden: frozenset[Resource]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions(group, extra, hidden)]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(extra: Sequence[Resource] = (), hidden: frozenset[Resource] = frozenset()) -> dict[str, Any]:
    """`/apis` (legacy form): the groups in kube-apiserver's priority order."""
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group(g, extra, hidden) for g in groups(extra)]}


def api_group(group: str, extra: Sequence[Resource] = (), hidden: frozenset[Resource] = frozenset(),
              ) -> dict[str, Any] | None:
    """`/apis/<group>`, or None for a group `serve` does not have."""
    if group not in groups(extra):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, extra, hidden)}


def storage_version_hash(resource: Resource) -> str | None:
    """The opaque hash kube-apiserver publishes so clients notice a change of storage version: the
    first 8 bytes of SHA-256 over `group/version/kind` of how objects are stored, base64. Events
    of events.k8s.io are stored as core Events, so both resources share one hash. Resources
    without storage (bindings, which only create) have none."""
    if "get" not in resource.verbs or not resource.stored:
        return None
    stored = next((r for r in RESOURCES if r.kind == resource.stored_as and r.stored_as is None), None) \
        if resource.stored_as else None
    group, ver = (stored.group, stored.version) if stored else \
        (resource.group, getattr(resource, "storage_version", resource.version))
    digest = hashlib.sha256(f"{group}/{ver}/{resource.store_kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _sub_kind(resource: Resource, sub: str) -> tuple[str, str, str]:
    kind = SUBRESOURCES[sub][0]
    return kind if kind is not None else (resource.group, resource.version, resource.kind)


def _api_resources(resource: Resource) -> list[dict[str, Any]]:
    """The entries one resource contributes to an APIResourceList: itself, then `plural/sub` for
    each subresource (with its own group and version when they differ from the list's)."""
    entry: dict[str, Any] = {"name": resource.plural, "singularName": resource.singular_name,
                             "namespaced": resource.namespaced, "kind": resource.kind,
                             "verbs": list(resource.verbs)}
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    svh = storage_version_hash(resource)
    if svh:
        entry["storageVersionHash"] = svh
    out = [entry]
    for sub in sorted(resource.subresources):
        group, ver, kind = _sub_kind(resource, sub)
        item: dict[str, Any] = {"name": f"{resource.plural}/{sub}", "singularName": "",
                                "namespaced": resource.namespaced}
        if (group, ver) != (resource.group, resource.version):
            item.update(group=group, version=ver)
        item.update(kind=kind, verbs=list(SUBRESOURCES[sub][1]))
        out.append(item)
    return out


def api_resource_list(group: str, version: str, extra: Sequence[Resource] = (),
                      hidden: frozenset[Resource] = frozenset()) -> dict[str, Any] | None:
    """`/api/v1` or `/apis/<group>/<version>`: the APIResourceList, sorted by name as upstream's
    route installer leaves it; None for a group/version `serve` does not have."""
    served = _in_group_version(group, version, extra, hidden)
    if not served:
        return None
    entries = [e for r in served for e in _api_resources(r)]
    entries.sort(key=lambda e: e["name"])
    head: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        head["apiVersion"] = "v1"
    return {**head, "groupVersion": f"{group}/{version}" if group else version, "resources": entries}


def _discovery_resource(resource: Resource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": resource.plural,
        "responseKind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
        "scope": "Namespaced" if resource.namespaced else "Cluster",
        "singularResource": resource.singular_name,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    if resource.subresources:
        entry["subresources"] = []
        for sub in sorted(resource.subresources):
            group, ver, kind = _sub_kind(resource, sub)
            entry["subresources"].append({"subresource": sub,
                                          "responseKind": {"group": group, "version": ver, "kind": kind},
                                          "verbs": list(SUBRESOURCES[sub][1])})
    return entry


def _discovery_group(group: str, extra: Sequence[Resource], hidden: frozenset[Resource]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": group} if group else {}
    return {"metadata": {**meta, "creationTimestamp": None},
            "versions": [{"version": v,
                          "resources": [_discovery_resource(r) for r in
                                        sorted(_in_group_version(group, v, extra, hidden), key=lambda r: r.plural)],
                          "freshness": "Current"} for v in versions(group, extra, hidden)]}


def aggregated_discovery(core: bool, extra: Sequence[Resource] = (),
                         hidden: frozenset[Resource] = frozenset()) -> dict[str, Any]:
    """`/api` (core=True) or `/apis` in the aggregated form: every group, version and resource in
    one answer, so a client needs two requests instead of one per group/version. Serve it with
    Content-Type AGGREGATED_CONTENT_TYPE (and `Vary: Accept`) when `wants_aggregated` says so."""
    listed = [""] if core else groups(extra)
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": [_discovery_group(g, extra, hidden) for g in listed]}


def _media_range(clause: str) -> tuple[str, dict[str, str], float]:
    kind, *params = (p.strip() for p in clause.split(";"))
    parsed: dict[str, str] = {}
    for p in params:
        key, _, value = p.partition("=")
        parsed[key.strip().lower()] = value.strip().strip('"')
    try:
        q = float(parsed.pop("q", "1"))
    except ValueError:
        q = 0.0
    return kind.lower(), parsed, q


def wants_aggregated(accept: str | None) -> bool:
    """Whether an Accept header prefers aggregated discovery (v2) over the legacy form: the first
    acceptable media range decides, by quality and then by the client's order, as kube-apiserver
    negotiates. The `profile=nopeer` variant is the same answer here, having no peer servers."""
    clauses = [_media_range(c) for c in (accept or "").split(",") if c.strip()]
    for kind, params, q in sorted(clauses, key=lambda c: -c[2]):
        if q <= 0:
            continue
        if kind == "application/json" and params.get("g") == "apidiscovery.k8s.io":
            if params.get("v") == "v2" and params.get("as") == "APIGroupDiscoveryList":
                return True
            continue  # a version we do not serve (v2beta1): try the client's next choice
        if kind in ("application/json", "application/*", "*/*"):
            return False
    return False
