"""The scale subresource's object: the autoscaling/v1 Scale a write to `<resource>/scale` carries
and admission judges, built from the object it scales and written back to it (spec.replicas, the
one field a Scale changes).

A built-in kind's Scale (Deployments, ReplicaSets, StatefulSets, ReplicationControllers) is made
as its registry makes it (scaleFromDeployment and its kin): name, namespace, uid, resourceVersion
and creationTimestamp of the object, spec.replicas, status.replicas and the pod selector printed
as a labels.Selector prints itself. A custom resource's is read at the paths its definition's
`scale` subresource names (scaleFromCustomResource).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Obj, deep_copy

API_VERSION = "autoscaling/v1"
KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
_META = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


@dataclass(frozen=True)
class ScaleWrite:
    """A write through the scale subresource: the Scale the request carries (the body of a PUT,
    the patched Scale of a PATCH), which the mutating webhooks see, and the definition's `scale`
    paths for a custom resource (None: a built-in kind)."""

    requested: Obj
    paths: Obj | None = None

    def of(self, obj: Obj) -> Obj:
        return scale_of(obj, self.paths)

    def with_replicas(self, obj: Obj, replicas: int) -> Obj:
        return with_replicas(obj, replicas, self.paths)


def scale_of(obj: Obj, paths: Obj | None = None) -> Obj:
    """The Scale of `obj`; `paths`: its definition's scale subresource, for a custom resource.
    spec.replicas and status.selector are left out when empty, as the JSON of a Scale is."""
    meta = obj.get("metadata") or {}
    if paths is None:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        replicas, observed = spec.get("replicas", 1), status.get("replicas") or 0
        selector = spec.get("selector") or {}
        text = (_selector_string([(k, "=", [v]) for k, v in selector.items()]) if obj.get("kind") ==
                "ReplicationController" else label_selector_string(selector))
    else:
        replicas = _at(obj, str(paths.get("specReplicasPath") or ""))
        observed = _at(obj, str(paths.get("statusReplicasPath") or "")) or 0
        found = _at(obj, str(paths.get("labelSelectorPath") or ""))
        text = found if isinstance(found, str) else ""
    scale: Obj = {"kind": "Scale", "apiVersion": API_VERSION,
                  "metadata": {k: meta[k] for k in _META if k in meta},
                  "spec": {"replicas": replicas} if replicas else {}, "status": {"replicas": observed}}
    if text:
        scale["status"]["selector"] = text
    return scale


def decoded(body: Obj) -> Obj:
    """A Scale a request carries as decoding into autoscaling/v1 leaves it: its own fields only,
    spec.replicas and status.selector left out when empty, status.replicas always there."""
    spec, status = body.get("spec") or {}, body.get("status") or {}
    scale: Obj = {"kind": "Scale", "apiVersion": API_VERSION, "metadata": dict(body.get("metadata") or {}),
                  "spec": {"replicas": spec["replicas"]} if spec.get("replicas") else {},
                  "status": {"replicas": status.get("replicas") or 0}}
    if status.get("selector"):
        scale["status"]["selector"] = status["selector"]
    return scale


def with_replicas(obj: Obj, replicas: int, paths: Obj | None = None) -> Obj:
    """`obj` with the replicas a Scale asks for, at its definition's specReplicasPath for a
    custom resource (the objects on the way made)."""
    if paths is None:
        return {**obj, "metadata": dict(obj["metadata"]), "spec": {**(obj.get("spec") or {}), "replicas": replicas}}
    new = deep_copy(obj)
    node = new
    keys = [k for k in str(paths.get("specReplicasPath") or ".spec.replicas").split(".") if k]
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[keys[-1]] = replicas
    return new


def replicas_problem(scale: Any) -> str | None:
    """ValidateScale: spec.replicas a non-negative integer (absent is 0)."""
    replicas = ((scale.get("spec") or {}) if isinstance(scale, dict) else {}).get("replicas", 0)
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0:
        return None
    return f"spec.replicas: Invalid value: {replicas!r}: must be greater than or equal to 0"


def label_selector_string(selector: Obj) -> str:
    """metav1.LabelSelectorAsSelector(selector).String(): every requirement sorted by key."""
    requirements: list[tuple[str, str, list[str]]] = [
        (str(k), "=", [str(v)]) for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or ():
        op = {"In": "in", "NotIn": "notin", "Exists": "", "DoesNotExist": "!"}.get(str(e.get("operator")), "")
        requirements.append((str(e.get("key")), op, [str(v) for v in e.get("values") or ()]))
    return _selector_string(requirements)


def _selector_string(requirements: list[tuple[str, str, list[str]]]) -> str:
    """labels.Selector's String: `k=v`, `k in (a,b)` (values sorted), `k`, `!k`, comma-joined."""
    parts = []
    for key, op, values in sorted(requirements, key=lambda r: r[0]):
        if op == "=":
            parts.append(f"{key}={values[0]}")
        elif op in ("in", "notin"):
            parts.append(f"{key} {op} ({','.join(sorted(values))})")
        else:
            parts.append(f"{op}{key}")
    return ",".join(parts)


def _at(obj: Any, path: str) -> Any:
    """The value at a `.a.b.c` path (the only form a scale subresource's paths take), or None."""
    if not path:
        return None
    for key in (k for k in path.split(".") if k):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj
