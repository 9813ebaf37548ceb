"""What resource.k8s.io's strategies do with fields behind alpha gates (dropDisabledFields).

With DRADeviceTaints off, a slice's device taints and a request's tolerations are dropped on
write, unless the stored object already uses them; with DRADeviceBindingConditions (or
DRAResourceClaimDeviceStatus) off, so are a device's binding conditions and `bindsToNode`, and
their copies in an allocation. So a cluster whose gates are off stores what it would act on:
nothing the scheduler would ignore. With DRADeviceTaints on, a taint written without `timeAdded`
gets the time of the write, which is when a NoExecute taint's toleration period starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubesched.api.features import FeatureGates
from kubesched.api.objects import deep_copy

Obj = dict[str, Any]
BINDING_FIELDS = ("bindingConditions", "bindingFailureConditions", "bindsToNode")
RESULT_BINDING_FIELDS = ("bindingConditions", "bindingFailureConditions")


def binding_conditions_enabled(gates: FeatureGates) -> bool:
    return gates.enabled("DRADeviceBindingConditions") and gates.enabled("DRAResourceClaimDeviceStatus")


def _dicts(value: Any) -> Iterator[Obj]:
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict):
            yield item


def _devices(slice_: Obj | None) -> Iterator[Obj]:
    spec = (slice_ or {}).get("spec")
    yield from _dicts(spec.get("devices") if isinstance(spec, dict) else None)


def _claim_spec(obj: Obj | None) -> Obj:
    spec = (obj or {}).get("spec")
    if (obj or {}).get("kind") == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec = spec.get("spec")
    return spec if isinstance(spec, dict) else {}


def _requests(spec: Obj) -> Iterator[Obj]:
    """Every exact request and subrequest of a claim spec (what holds tolerations)."""
    devices = spec.get("devices")
    for request in _dicts(devices.get("requests") if isinstance(devices, dict) else None):
        if isinstance(request.get("exactly"), dict):
            yield request["exactly"]
        yield from _dicts(request.get("firstAvailable"))


def prepare(obj: Obj, old: Obj | None, gates: FeatureGates, now: str) -> None:
    """PrepareForCreate (`old` None) or PrepareForUpdate of a DRA object, in place."""
    kind = obj.get("kind")
    taints = gates.enabled("DRADeviceTaints")
    if kind == "ResourceSlice":
        if not taints and not any(d.get("taints") for d in _devices(old)):
            for device in _devices(obj):
                device.pop("taints", None)
        if not binding_conditions_enabled(gates) and not any(d.get(k) for d in _devices(old) for k in BINDING_FIELDS):
            for device in _devices(obj):
                for key in BINDING_FIELDS:
                    device.pop(key, None)
        if taints:
            _stamp_taints(obj, old, now)
    elif kind == "DeviceTaintRule":
        _prepare_rule(obj, old, now)
    # A claim whose spec an update leaves as stored has the stored tolerations or none: nothing to drop.
    elif kind in ("ResourceClaim", "ResourceClaimTemplate") and not taints \
            and (old is None or obj.get("spec") != old.get("spec")) \
            and not any(r.get("tolerations") for r in _requests(_claim_spec(old))):
        for request in _requests(_claim_spec(obj)):
            request.pop("tolerations", None)


def _prepare_rule(rule: Obj, old: Obj | None, now: str) -> None:
    """The DeviceTaintRule strategy: status is the controller's (reset on create, kept on a spec
    update); the taint's `timeAdded` is set when missing, and moves to now when an update changes
    the effect but not the time, so it tells when the current effect began."""
    rule["status"] = deep_copy((old or {}).get("status") or {})
    spec = rule.get("spec")
    taint = spec.get("taint") if isinstance(spec, dict) else None
    if not isinstance(taint, dict):
        return
    old_spec = (old or {}).get("spec")
    old_taint = old_spec.get("taint") if isinstance(old_spec, dict) else None
    if isinstance(old_taint, dict) and taint.get("effect") != old_taint.get("effect") \
            and taint.get("timeAdded") == old_taint.get("timeAdded") or not taint.get("timeAdded"):
        taint["timeAdded"] = now


def _stamp_taints(obj: Obj, old: Obj | None, now: str) -> None:
    """A taint without `timeAdded` gets the time of the write, or the time the same taint of the
    stored slice had."""
    before = {(d.get("name"), t.get("key"), t.get("value"), t.get("effect")): t.get("timeAdded")
              for d in _devices(old) for t in _dicts(d.get("taints"))}
    for device in _devices(obj):
        for taint in _dicts(device.get("taints")):
            if not taint.get("timeAdded"):
                key = (device.get("name"), taint.get("key"), taint.get("value"), taint.get("effect"))
                taint["timeAdded"] = before.get(key) or now


def prepare_claim_status(status: Obj, old_status: Obj, gates: FeatureGates) -> None:
    """The claim status strategy: an allocation's tolerations and binding fields go when their
    gate is off and the stored allocation does not have them."""
    allocation = status.get("allocation")
    if not isinstance(allocation, dict):
        return
    old_allocation: Obj = old_status["allocation"] if isinstance(old_status.get("allocation"), dict) else {}
    results = list(_dicts((allocation.get("devices") or {}).get("results")))
    old_results = list(_dicts((old_allocation.get("devices") or {}).get("results")))
    if not gates.enabled("DRADeviceTaints") and not any(r.get("tolerations") for r in old_results):
        for result in results:
            result.pop("tolerations", None)
    if not binding_conditions_enabled(gates) and not old_allocation.get("allocationTimestamp") \
            and not any(r.get(k) for r in old_results for k in RESULT_BINDING_FIELDS):
        allocation.pop("allocationTimestamp", None)
        for result in results:
            for key in RESULT_BINDING_FIELDS:
                result.pop(key, None)
