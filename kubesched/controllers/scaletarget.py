"""The scale subresource as a controller reaches it (client-go's scale client): what a
`scaleTargetRef` names, its replica counts and pod selector, and how its replicas are set.

The built-in scalable kinds are Deployments, ReplicaSets, StatefulSets and ReplicationControllers;
a custom resource is scalable when its definition's served version has a `scale` subresource,
read and written at the paths it names. Errors read as the API server's would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.crd import definition as d
from kubesched.api.objects import Obj
from kubesched.api.restmapping import Resource
from kubesched.api.selectors import LabelSelector
from kubesched.api.served import resource_kind
from kubesched.apiserver.caller import LOOPBACK_USER, Caller
from kubesched.apiserver.scale import ScaleWrite, scale_of
from kubesched.apiserver.server import APIServer

# (group, kind) -> plural, for kube-apiserver's scalable kinds
BUILTIN: dict[tuple[str, str], str] = {
    ("apps", "Deployment"): "deployments", ("apps", "ReplicaSet"): "replicasets",
    ("apps", "StatefulSet"): "statefulsets", ("", "ReplicationController"): "replicationcontrollers"}
# Kinds kube-apiserver serves without a scale subresource: found, but not scalable.
_UNSCALABLE = {("apps", "DaemonSet"), ("batch", "Job"), ("batch", "CronJob"), ("", "Pod")}


class ScaleError(Exception):
    """The target or its scale cannot be read; the message is the API's."""


def group_of(api_version: str) -> str:
    """schema.ParseGroupVersion's group: "" for the core group, refusing more than one slash."""
    if api_version.count("/") > 1:
        raise ScaleError(f"unexpected GroupVersion string: {api_version}")
    return api_version.rpartition("/")[0] if "/" in api_version else ""


@dataclass(frozen=True)
class Scale:
    obj: Obj  # the target as read
    spec_replicas: int
    status_replicas: int
    selector: LabelSelector | None  # None: the scale has no selector
    selector_text: str  # status.selector, as the scale subresource prints it
    custom: Obj | None  # the definition's scale subresource, for a custom resource
    resource: Resource  # the resource whose scale subresource this is


def _at(obj: Any, path: str) -> Any:
    for key in (k for k in path.split(".") if k):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _definition(api: APIServer, group: str, kind: str) -> tuple[Obj, str] | None:
    """The definition serving `kind` in `group`, and its version with a scale subresource (or
    its first served version when none has one)."""
    for crd in api.store.list("CustomResourceDefinition"):
        if d.group(crd) == group and d.kind(crd) == kind and d.served_versions(crd):
            versions = d.served_versions(crd)
            return crd, next((v for v in versions if isinstance(d.subresources(crd, v).get("scale"), dict)),
                             versions[0])
    return None


def get_scale(api: APIServer, namespace: str, api_version: str, kind: str, name: str) -> Scale:
    group = group_of(api_version)
    if (group, kind) in BUILTIN:
        obj = api.store.get(kind, namespace, name)
        if obj is None:
            raise ScaleError(f'{BUILTIN[group, kind]}{"." + group if group else ""} "{name}" not found')
        spec = obj.get("spec") or {}
        raw = spec.get("selector")
        if kind == "ReplicationController":
            raw = {"matchLabels": raw} if raw else None
        selector = LabelSelector.compile(raw) if raw else None
        return Scale(obj, int(spec.get("replicas", 1)), int((obj.get("status") or {}).get("replicas") or 0),
                     selector, _format(raw or {}), None, Resource(kind, group, "v1", BUILTIN[group, kind]))
    if (group, kind) in _UNSCALABLE:
        raise ScaleError("the server could not find the requested resource")
    found = _definition(api, group, kind)
    if found is None:
        raise ScaleError(f'no matches for kind "{kind}" in group "{group}"')
    crd, version = found
    scale = d.subresources(crd, version).get("scale")
    if not isinstance(scale, dict):
        raise ScaleError("the server could not find the requested resource")
    obj = api.store.get(resource_kind({"apiVersion": f"{group}/{version}", "kind": kind}), namespace, name)
    if obj is None:
        raise ScaleError(f'{d.plural(crd)}.{group} "{name}" not found')
    text = _at(obj, str(scale.get("labelSelectorPath") or "")) if scale.get("labelSelectorPath") else None
    selector = LabelSelector.parse(text) if isinstance(text, str) and text else None
    spec_replicas = _at(obj, str(scale.get("specReplicasPath", ".spec.replicas")))
    status_replicas = _at(obj, str(scale.get("statusReplicasPath", ".status.replicas")))
    return Scale(obj, spec_replicas if isinstance(spec_replicas, int) else 0,
                 status_replicas if isinstance(status_replicas, int) else 0, selector,
                 text if isinstance(text, str) else "", scale,
                 Resource(kind, group, version, d.plural(crd), namespaced=d.namespaced(crd)))


def _format(selector: Obj) -> str:
    """metav1.FormatLabelSelector: matchLabels as k=v, then the expressions."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or ():
        op, key, values = e.get("operator"), e.get("key"), ",".join(e.get("values") or ())
        parts.append(f"{key} {op.lower()} ({values})" if op in ("In", "NotIn") else
                     key if op == "Exists" else f"!{key}")
    return ",".join(parts)


def set_replicas(api: APIServer, scale: Scale, replicas: int) -> Obj:
    """Update the target's replicas through its scale subresource, on the version that was read
    (a conflict is an APIError): admission judges the Scale written, as it judges the scale
    client's PUT, with the identity of kube-apiserver's loopback client."""
    requested = scale_of(scale.obj, scale.custom)
    requested["spec"] = {"replicas": replicas} if replicas else {}
    write = ScaleWrite(requested, scale.custom)
    caller = Caller(LOOPBACK_USER, subresource="scale", resource=scale.resource, scale=write)
    return api.update(write.with_replicas(scale.obj, replicas), caller=caller)
