"""resource.k8s.io's registry rules around a write: v1 defaulting (pkg/apis/resource/v1/defaults.go)
and what an update may change (the resourceclaim, resourceclaimtemplate and resourceslice
strategies with their ValidateUpdate), and the fields a disabled feature gate drops on write.

The API server defaults on every decode, so a stored claim always says how many devices each
request wants and how; an update that leaves those out still matches the stored spec.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubesched.api.dra.cel import CELError, compile_selector
from kubesched.api.features import FeatureGates
from kubesched.api.objects import Obj
from kubesched.api.validation.checker import _show
from kubesched.store.base import Store

EXACT_COUNT = "ExactCount"
ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule"})
_IMMUTABLE_SLICE_FIELDS = (("pool", "name"), ("driver",), ("nodeName",))


def default(obj: Obj) -> None:
    """Default a ResourceClaim's or ResourceClaimTemplate's requests in place: ExactCount and a
    count of 1 for exact requests and subrequests, tolerations' operator Equal."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec = spec.get("spec")
    elif kind != "ResourceClaim":
        return
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_device_request(request["exactly"])
        for sub in request.get("firstAvailable") or () if isinstance(request.get("firstAvailable"), list) else ():
            if isinstance(sub, dict):
                _default_device_request(sub)


def _default_device_request(request: dict[str, Any]) -> None:
    if not request.get("allocationMode"):
        request["allocationMode"] = EXACT_COUNT
    if request["allocationMode"] == EXACT_COUNT and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or () if isinstance(request.get("tolerations"), list) else ():
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def update_problems(current: Obj, new: Obj) -> list[str]:
    """`path: message` for what an update of a DRA object's spec may not change: a claim's and a
    template's whole spec, a slice's driver, pool name and node."""
    kind = new.get("kind")
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        if new.get("spec") != current.get("spec"):
            return [f"spec: Invalid value: {_show(new.get('spec'))}: field is immutable"]
        return []
    problems = []
    if kind == "ResourceSlice":
        for path in _IMMUTABLE_SLICE_FIELDS:
            old_value, new_value = _at(current.get("spec"), path), _at(new.get("spec"), path)
            if old_value != new_value:
                problems.append(f"spec.{'.'.join(path)}: Invalid value: {_show(new_value)}: field is immutable")
    return problems


def _selectors(obj: Obj | None) -> Iterator[tuple[str, str]]:
    """(field path, expression) of each CEL selector of a DeviceClass, claim or claim template."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return
    spec, prefix = obj["spec"], "spec"
    if obj.get("kind") == "ResourceClaimTemplate":
        spec, prefix = spec.get("spec"), "spec.spec"
    holders: list[tuple[str, Any]] = []
    if obj.get("kind") == "DeviceClass":
        holders.append((prefix, spec))
    elif isinstance(spec, dict) and isinstance(spec.get("devices"), dict):
        requests = spec["devices"].get("requests")
        for i, request in enumerate(requests if isinstance(requests, list) else ()):
            if not isinstance(request, dict):
                continue
            holders.append((f"{prefix}.devices.requests[{i}].exactly", request.get("exactly")))
            subs = request.get("firstAvailable")
            for j, sub in enumerate(subs if isinstance(subs, list) else ()):
                holders.append((f"{prefix}.devices.requests[{i}].firstAvailable[{j}]", sub))
    for path, holder in holders:
        selectors = holder.get("selectors") if isinstance(holder, dict) else None
        for k, selector in enumerate(selectors if isinstance(selectors, list) else ()):
            cel = selector.get("cel") if isinstance(selector, dict) else None
            expression = cel.get("expression") if isinstance(cel, dict) else None
            if isinstance(expression, str):
                yield f"{path}.selectors[{k}].cel.expression", expression


def selector_problems(new: Obj, old: Obj | None, gates: FeatureGates) -> list[str]:
    """`path: message` for a selector the environment of new expressions refuses: with
    DRAConsumableCapacity off, `device` has no `allowMultipleAllocations` there, while an
    expression the stored object already has keeps the stored environment, which has it. One
    that does not compile at all is validation's to report."""
    if gates.enabled("DRAConsumableCapacity") or (old is not None and new.get("spec") == old.get("spec")):
        return []  # (an unchanged spec has only the expressions the stored object has)
    kept = {expression for _, expression in _selectors(old)}
    problems = []
    for path, expression in _selectors(new):
        if expression in kept:
            continue
        try:
            compile_selector(expression)
            compile_selector(expression, consumable_capacity=False)
        except CELError as e:
            if "allowMultipleAllocations" in str(e):
                problems.append(f"{path}: Invalid value: {_show(expression)}: {e}")
    return problems


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def admin_access_problems(obj: Obj, store: Store) -> list[str]:
    """AuthorizedForAdmin: a claim (or template) asking for admin access to devices must live in a
    namespace labelled for it."""
    kind = obj.get("kind")
    spec, prefix = obj.get("spec"), "spec"
    if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec, prefix = spec.get("spec"), "spec.spec"
    elif kind != "ResourceClaim":
        return []
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    asking = [i for i, r in enumerate(requests if isinstance(requests, list) else ())
              if isinstance(r, dict) and isinstance(r.get("exactly"), dict) and r["exactly"].get("adminAccess") is True]
    if not asking:
        return []
    namespace = store.get("Namespace", "", obj["metadata"].get("namespace", "default"))
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(ADMIN_NAMESPACE_LABEL) == "true":
        return []
    return [f"{prefix}.devices.requests[{i}].exactly.adminAccess: Forbidden: admin access to devices requires the "
            f"`{ADMIN_NAMESPACE_LABEL}: true` label on the containing namespace" for i in asking]


def drop_disabled_fields(new: Obj, old: Obj | None, gates: FeatureGates) -> None:
    """The registry strategies' dropDisabledFields for consumable capacity: with
    DRAConsumableCapacity off, a write loses a slice's `allowMultipleAllocations` and capacity
    `requestPolicy`, a claim's (or template's) capacity requests and `distinctAttribute`
    constraints, and an allocation's `shareID` and `consumedCapacity`, unless the stored object
    already uses them (an object written while the gate was on stays as it is)."""
    if gates.enabled("DRAConsumableCapacity") or (old is not None and _consumable_paths(old)):
        return
    for holder, key in _consumable_paths(new, old):
        del holder[key]


def _consumable_paths(obj: Obj, same_as: Obj | None = None) -> list[tuple[dict[str, Any], str]]:
    """Where an object uses consumable capacity: (the dict holding the field, the field's name).
    `same_as`: a stored version found to use none, whose spec (or status) equal to `obj`'s need
    not be looked at again (every claim write but the first repeats the immutable spec)."""
    kind = obj.get("kind")
    found: list[tuple[dict[str, Any], str]] = []
    spec = obj.get("spec")
    if kind == "ResourceSlice":
        for device in _each(spec, "devices"):
            if device.get("allowMultipleAllocations") is not None:
                found.append((device, "allowMultipleAllocations"))
            capacity = device.get("capacity")
            for cap in capacity.values() if isinstance(capacity, dict) else ():
                if isinstance(cap, dict) and cap.get("requestPolicy") is not None:
                    found.append((cap, "requestPolicy"))
        return found
    if kind not in ("ResourceClaim", "ResourceClaimTemplate"):
        return found
    if same_as is None or spec != same_as.get("spec"):
        if kind == "ResourceClaimTemplate":
            spec = spec.get("spec") if isinstance(spec, dict) else None
        devices = spec.get("devices") if isinstance(spec, dict) else None
        for request in _each(devices, "requests"):
            _mark(found, request.get("exactly"), "capacity")
            for sub in _each(request, "firstAvailable"):
                _mark(found, sub, "capacity")
        for constraint in _each(devices, "constraints"):
            _mark(found, constraint, "distinctAttribute")
    status = obj.get("status")
    if not status or (same_as is not None and status == same_as.get("status")):
        return found
    allocation = status.get("allocation") if isinstance(status, dict) else None
    for result in _each(allocation.get("devices") if isinstance(allocation, dict) else None, "results"):
        _mark(found, result, "shareID")
        _mark(found, result, "consumedCapacity")
    for device in _each(status, "devices"):
        _mark(found, device, "shareID")
    return found


def _each(value: Any, key: str) -> list[dict[str, Any]]:
    items = value.get(key) if isinstance(value, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _mark(found: list[tuple[dict[str, Any], str]], holder: Any, key: str) -> None:
    if isinstance(holder, dict) and holder.get(key) is not None:
        found.append((holder, key))
