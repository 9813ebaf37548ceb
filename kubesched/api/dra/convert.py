"""resource.k8s.io objects from the beta versions, in v1 (pkg/apis/resource/v1beta1 and v1beta2
conversion.go).

kube-apiserver v1.35 serves DRA only in v1; the betas need `--runtime-config`. Exports from
v1.32-v1.33 clusters still say `v1beta1` or `v1beta2`, so they are read as the API server would
have stored them, in v1, and nothing downstream (the scheduler, the controllers, the kubelets)
ever sees another shape.

What differs: a v1beta1 request carries its device fields (deviceClassName, selectors,
allocationMode, count, adminAccess, tolerations, capacity) directly, where v1 wraps them in
`exactly` unless the request is a prioritized list (`firstAvailable`); a v1beta1 device keeps its
fields under `basic`. v1beta2 has v1's shapes. Everything else (status, classes, capacity) is the
same in the three versions.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

GROUP = "resource.k8s.io"
V1 = f"{GROUP}/v1"
BETA_VERSIONS = (f"{GROUP}/v1beta1", f"{GROUP}/v1beta2")
KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
# v1beta1 DeviceRequest fields that v1 keeps in ExactDeviceRequest.
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
                 "capacity")


def is_beta(obj: Obj) -> bool:
    """Whether `obj` is a DRA kind in one of the beta versions v1.35 no longer serves by default."""
    return obj.get("kind") in KINDS and obj.get("apiVersion") in BETA_VERSIONS


def to_v1(obj: Obj) -> Obj:
    """`obj` (a DRA kind in v1beta1 or v1beta2) in v1; a new dict, `obj` itself is left as it is.
    Malformed parts are carried over untouched for validation to report in v1's terms."""
    beta1 = obj.get("apiVersion") == BETA_VERSIONS[0]
    out = {**obj, "apiVersion": V1}
    if not beta1:
        return out
    kind = obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    if kind == "ResourceClaim":
        out["spec"] = _claim_spec(spec)
    elif kind == "ResourceClaimTemplate":
        inner = spec.get("spec")
        out["spec"] = {**spec, "spec": _claim_spec(inner)} if isinstance(inner, dict) else spec
    elif kind == "ResourceSlice":
        out["spec"] = _slice_spec(spec)
    return out


def _claim_spec(spec: Obj) -> Obj:
    devices = spec.get("devices")
    if not isinstance(devices, dict) or not isinstance(devices.get("requests"), list):
        return spec
    requests = [_request(r) if isinstance(r, dict) else r for r in devices["requests"]]
    return {**spec, "devices": {**devices, "requests": requests}}


def _request(request: Obj) -> Obj:
    """A v1beta1 DeviceRequest as v1's: `firstAvailable` stays where it is (its subrequests have
    the same fields in both), the rest moves into `exactly`."""
    out = {k: v for k, v in request.items() if k not in _EXACT_FIELDS}
    exact = {k: request[k] for k in _EXACT_FIELDS if k in request}
    # With both given, `exactly` is kept beside the list, for validation to refuse the pair.
    if request.get("firstAvailable") is None or exact:
        out["exactly"] = exact
    return out


def _slice_spec(spec: Obj) -> Obj:
    devices = spec.get("devices")
    if not isinstance(devices, list):
        return spec
    return {**spec, "devices": [_device(d) if isinstance(d, dict) else d for d in devices]}


def _device(device: Obj) -> Obj:
    """A v1beta1 Device (name plus `basic`) as v1's flat one."""
    basic = device.get("basic")
    out = {k: v for k, v in device.items() if k != "basic"}
    if isinstance(basic, dict):
        out.update(basic)
    return out
