"""resource.k8s.io/v1: DeviceClasses, ResourceSlices, ResourceClaims and their templates (and the
v1alpha3 DeviceTaintRule), as
kube-apiserver v1.35 checks them (pkg/apis/resource/validation).

The allocator trusts what these rules let through: a request names a class and has one form, a
selector compiles, a device's attributes each hold one value, a pool's generation and slice count
make sense. Field paths are upstream's, keys of maps in brackets (`attributes[model]`).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import math
import re
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

from kubesched.api.dra.cel import MAX_EXPRESSION_LENGTH, CELError, compile_selector
from kubesched.api.dra.celcheck import MAX_COST
from kubesched.api.jsonbytes import canonical as canonical_json
from kubesched.api.names import dns_label_errors, dns_subdomain_errors
from kubesched.api.quantity import QuantityError, canonical, parse_quantity, quantity_format, quantity_string
from kubesched.api.validation.checker import (
    POSITIVE_MSG,
    Checker,
    _annotations,
    _labels,
    _node_selector,
    _show,
    label_value_errors,
    qualified_name_errors,
    subpath,
)
from kubesched.api.validation.storage import _csi_driver_name

# pkg/apis/resource/types.go limits.
DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
RESERVED_FOR_MAX = 256
ALLOCATION_RESULTS_MAX = 32
SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_ADVANCED = 64  # with taints or counter consumption
MAX_ATTRIBUTES_AND_CAPACITIES = 32
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_MAX_VALUE_LENGTH = 64
POOL_NAME_MAX_LENGTH = 253
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
DEVICE_TAINTS_MAX = 16
BINDING_CONDITIONS_MAX = 4
CAPACITY_VALID_VALUES_MAX = 10  # CapacityRequestPolicyDiscreteMaxOptions
EXACT_COUNT, ALL = "ExactCount", "All"
ALLOCATION_MODES = (ALL, EXACT_COUNT)
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
CONFIG_SOURCES = ("FromClaim", "FromClass")
_ATTRIBUTE_VALUES = ("bool", "int", "string", "version")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                     "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
                     "validation is '[A-Za-z_][A-Za-z0-9_]*')")
_SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
                     r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?")
# How an error shows a nil value: as the string "null", quoted (field.Error's ErrorBody).
_NULL = "null"
ALLOCATED_DEVICE_CONDITIONS_MAX = 8
NETWORK_INTERFACE_NAME_MAX = 256
NETWORK_HARDWARE_ADDRESS_MAX = 128
NETWORK_IPS_MAX = 16
DEVICE_STATUS_DATA_MAX_LENGTH = 10 * 1024
CONDITION_STATUSES = ("False", "True", "Unknown")
_CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_CONDITION_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string "
                         "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' "
                         "(e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
                         "'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REQUEST_REF_MSG = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
# request name -> its subrequests' names (None for a request without a prioritized list)
RequestNames = dict[str, "set[str] | None"]


# ---- shared ------------------------------------------------------------------------------------

def _too_many(c: Checker, path: str, count: int, limit: int) -> bool:
    if count > limit:
        c.err(path, f"Too many: {count}: must have at most {limit} items")
        return True
    return False


def _too_long(c: Checker, path: str, limit: int) -> None:
    c.err(path, f"Too long: may not be more than {limit} bytes")


def _items(c: Checker, obj: dict[str, Any], key: str, path: str, limit: int | None = None
           ) -> list[tuple[str, Any]]:
    """(path, item) of each item of the list obj[key]; nothing past a limit it exceeds (upstream
    stops there too, rather than check thousands of items)."""
    listed = c.get(obj, key, path, list) or []
    list_path = subpath(path, key)
    if limit is not None and _too_many(c, list_path, len(listed), limit):
        return []
    return [(f"{list_path}[{i}]", item) for i, item in enumerate(listed)]


def _unique(c: Checker, keyed: list[tuple[str, Hashable]]) -> None:
    """Duplicate value at each item whose key an earlier one has (validateSet)."""
    seen: set[Hashable] = set()
    for path, key in keyed:
        if key in seen:
            c.err(path, f"Duplicate value: {_show(key)}")
        seen.add(key)


def _dicts(c: Checker, items: list[tuple[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(p, item) for p, item in items if c.typed(item, p, dict) is not None]


def _dns_label(c: Checker, value: str, path: str) -> None:
    c.names(value, path, dns_label_errors)


def _required_name(c: Checker, obj: dict[str, Any], key: str, path: str, rule: Callable[[str], list[str]]) -> str:
    value = c.get(obj, key, path, str) or ""
    if not value:
        c.required(subpath(path, key))
    else:
        c.names(value, subpath(path, key), rule)
    return value


def _driver(c: Checker, obj: dict[str, Any], key: str, path: str) -> str:
    driver = c.get(obj, key, path, str) or ""
    _csi_driver_name(c, driver, subpath(path, key))
    return driver


def _pool_name(c: Checker, name: str, path: str) -> None:
    if not name:
        c.required(path)
        return
    if len(name) > POOL_NAME_MAX_LENGTH:
        _too_long(c, path, POOL_NAME_MAX_LENGTH)
    for part in name.split("/"):
        c.names(part, path, dns_subdomain_errors)


def _c_identifier(c: Checker, ident: str, path: str) -> None:
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        _too_long(c, path, DEVICE_MAX_ID_LENGTH)
    if not _C_IDENTIFIER.fullmatch(ident):
        c.invalid(path, ident, _C_IDENTIFIER_MSG)


def _qualified_name(c: Checker, name: str, path: str) -> None:
    """An attribute or capacity name: a C identifier, optionally after a driver-like domain and '/'."""
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(c, name, path)
    elif len(parts) == 2:
        if not parts[0]:
            c.invalid(path, "", "the domain must not be empty")
        else:
            _csi_driver_name(c, parts[0], path)
        if not parts[1]:
            c.invalid(path, "", "the name must not be empty")
        else:
            _c_identifier(c, parts[1], path)
    else:
        c.invalid(path, name, "must not contain more than one slash")


def _fully_qualified_name(c: Checker, name: str, path: str) -> None:
    _qualified_name(c, name, path)
    if "/" not in name:
        c.invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")


def _label_name(c: Checker, value: str, path: str) -> None:
    c.names(value, path, qualified_name_errors)


def _selectors(c: Checker, holder: dict[str, Any], path: str) -> None:
    for sel_path, selector in _dicts(c, _items(c, holder, "selectors", path, DEVICE_SELECTORS_MAX)):
        cel = c.get(selector, "cel", sel_path, dict)
        if cel is None:
            c.required(subpath(sel_path, "cel"))
            continue
        expr_path = subpath(sel_path, "cel.expression")
        expression = c.get(cel, "expression", subpath(sel_path, "cel"), str) or ""
        if len(expression) > MAX_EXPRESSION_LENGTH:
            _too_long(c, expr_path, MAX_EXPRESSION_LENGTH)
            continue
        try:
            compiled = compile_selector(expression)
        except CELError as e:
            c.invalid(expr_path, expression, str(e))
            continue
        if compiled.max_cost > MAX_COST:
            c.err(expr_path, "Forbidden: too complex, exceeds cost limit")


def _tolerations(c: Checker, holder: dict[str, Any], path: str) -> None:
    if holder.get("tolerations") is None:
        return  # (the usual case, without building paths)
    for tol_path, tol in _dicts(c, _items(c, holder, "tolerations", path)):
        key = c.get(tol, "key", tol_path, str) or ""
        if key:
            _label_name(c, key, subpath(tol_path, "key"))
        operator = c.get(tol, "operator", tol_path, str)
        value = c.get(tol, "value", tol_path, str) or ""
        if operator is None:
            operator = "Equal"  # the default
        if operator == "Exists":
            if value:
                c.invalid(subpath(tol_path, "value"), value, "must be empty for operator `Exists`")
        elif operator == "Equal":
            c.names(value, subpath(tol_path, "value"), label_value_errors)
        elif not operator:
            c.required(subpath(tol_path, "operator"))
        else:
            c.unsupported(subpath(tol_path, "operator"), operator, TOLERATION_OPERATORS)
        effect = c.get(tol, "effect", tol_path, str)
        if effect and effect not in TAINT_EFFECTS:
            c.unsupported(subpath(tol_path, "effect"), effect, TAINT_EFFECTS)
        c.get(tol, "tolerationSeconds", tol_path, int)


def _opaque(c: Checker, holder: dict[str, Any], path: str) -> None:
    """A configuration: today only `opaque`, a driver and its JSON object of parameters."""
    opaque = c.get(holder, "opaque", path, dict)
    opaque_path = subpath(path, "opaque")
    if opaque is None:
        c.required(opaque_path)
        return
    _driver(c, opaque, "driver", opaque_path)
    params_path = subpath(opaque_path, "parameters")
    params = opaque.get("parameters")
    if params is None:
        c.required(params_path)
    elif len(json.dumps(params, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX_LENGTH:
        _too_long(c, params_path, OPAQUE_PARAMETERS_MAX_LENGTH)
    elif not isinstance(params, dict):
        c.invalid(params_path, "<value omitted>", "must be a valid JSON object")


def _request_refs(c: Checker, holder: dict[str, Any], path: str, names: RequestNames) -> None:
    """A constraint's or configuration's `requests`: unique names of requests or
    `request/subrequest`."""
    keyed = []
    for ref_path, ref in _items(c, holder, "requests", path, DEVICE_REQUESTS_MAX):
        if c.typed(ref, ref_path, str) is None:
            continue
        keyed.append((ref_path, ref))
        _request_ref(c, ref, ref_path, names)
    _unique(c, keyed)


def _request_ref(c: Checker, ref: str, path: str, names: RequestNames) -> None:
    parts = ref.split("/")
    if len(parts) > 2:
        c.invalid(path, ref, _REQUEST_REF_MSG)
        return
    for part in parts:
        _request_name(c, part, path)
    subrequests = names.get(parts[0])
    if parts[0] not in names or (len(parts) == 2 and (subrequests is None or parts[1] not in subrequests)):
        c.invalid(path, ref, _REQUEST_REF_MSG)


def _request_name(c: Checker, name: str, path: str) -> None:
    if not name:
        c.required(path)
    else:
        _dns_label(c, name, path)


# ---- claims ------------------------------------------------------------------------------------

def request_names(spec: Any) -> RequestNames:
    """The requests of a claim spec, each with its subrequests' names if it is a prioritized list."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    names: RequestNames = {}
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            continue
        subs = request.get("firstAvailable")
        names[request["name"]] = {s["name"] for s in subs if isinstance(s, dict) and isinstance(s.get("name"), str)} \
            if isinstance(subs, list) and subs else None
    return names


def _allocation_mode(c: Checker, request: dict[str, Any], path: str) -> None:
    """ExactCount (the default) needs a count > 0 (1 by default); All takes no count."""
    mode = c.get(request, "allocationMode", path, str)
    count = c.get(request, "count", path, int)
    mode = EXACT_COUNT if mode is None else mode
    if mode == ALL:
        if count:
            c.invalid(subpath(path, "count"), count, f"must not be specified when allocationMode is '{ALL}'")
    elif mode == EXACT_COUNT:
        count = 1 if count is None and request.get("count") is None else count
        if count is not None and count <= 0:
            c.invalid(subpath(path, "count"), count, POSITIVE_MSG)
    else:
        c.unsupported(subpath(path, "allocationMode"), mode, ALLOCATION_MODES)


def _device_fields(c: Checker, request: dict[str, Any], path: str) -> None:
    """What an exact request and a subrequest share: class, selectors, mode and count, tolerations."""
    _required_name(c, request, "deviceClassName", path, dns_subdomain_errors)
    _selectors(c, request, path)
    _allocation_mode(c, request, path)
    _tolerations(c, request, path)
    capacity = c.get(request, "capacity", path, dict)
    asked = c.get(capacity, "requests", subpath(path, "capacity"), dict) if capacity is not None else None
    for name, amount in (asked or {}).items():
        requests_path = subpath(path, "capacity.requests")
        _qualified_name(c, name, requests_path)
        _quantity(c, amount, f"{requests_path}[{name}]")


def _request(c: Checker, request: dict[str, Any], path: str) -> None:
    _request_name(c, c.get(request, "name", path, str) or "", subpath(path, "name"))
    first = c.get(request, "firstAvailable", path, list)
    exactly = c.get(request, "exactly", path, dict)
    if first and exactly is not None:
        c.invalid(path, _NULL, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
    elif exactly is not None:
        _device_fields(c, exactly, subpath(path, "exactly"))
        c.get(exactly, "adminAccess", subpath(path, "exactly"), bool)
    elif first:
        subs = _dicts(c, _items(c, request, "firstAvailable", path, FIRST_AVAILABLE_MAX))
        for sub_path, sub in subs:
            _request_name(c, c.get(sub, "name", sub_path, str) or "", subpath(sub_path, "name"))
            _device_fields(c, sub, sub_path)
        _unique(c, [(p, sub.get("name")) for p, sub in subs if isinstance(sub.get("name"), str)])
    else:
        c.required(path, "exactly one of `exactly` or `firstAvailable` is required")


class _ValidOnce:
    """Values found valid (with no warning), as canonical JSON, so an equal value is not checked
    again: the claims the controller makes from one template all carry its spec, every update of
    a claim repeats its immutable spec, the devices of one node share an allocation's node
    selector, and the nodes of a fleet publish the same devices. Only for rules that see nothing
    but the value. Bounded."""

    def __init__(self, kept: int = 1024) -> None:
        self.kept = kept
        self.valid: dict[bytes, None] = {}

    def check(self, c: Checker, value: Any, run: Callable[[], None]) -> None:
        try:
            key = canonical_json(value) if isinstance(value, dict) else None
        except (TypeError, ValueError):
            key = None  # not JSON (a reader's odd value): checked, never remembered
        if key is not None and key in self.valid:
            return
        before = len(c.problems), len(c.warnings or ())
        run()
        if key is not None and (len(c.problems), len(c.warnings or ())) == before:
            if len(self.valid) >= self.kept:
                self.valid.clear()
            self.valid[key] = None


_CLAIM_SPECS = _ValidOnce()
_NODE_SELECTORS = _ValidOnce()
_DEVICES = _ValidOnce()  # a slice's devices, where the slice does not place them on nodes one by one


def claim_spec(c: Checker, spec: Any, path: str) -> None:
    """A ResourceClaimSpec: its requests, constraints and configuration."""
    _CLAIM_SPECS.check(c, spec, lambda: _claim_spec(c, spec, path))


def _claim_spec(c: Checker, spec: Any, path: str) -> None:
    spec = c.typed(spec, path, dict) or {}
    devices_path = subpath(path, "devices")
    devices = c.get(spec, "devices", path, dict) or {}
    names = request_names(spec)
    requests = _dicts(c, _items(c, devices, "requests", devices_path, DEVICE_REQUESTS_MAX))
    for request_path, request in requests:
        _request(c, request, request_path)
    _unique(c, [(p, r.get("name")) for p, r in requests if isinstance(r.get("name"), str)])
    for con_path, constraint in _dicts(c, _items(c, devices, "constraints", devices_path, DEVICE_CONSTRAINTS_MAX)):
        _request_refs(c, constraint, con_path, names)
        attribute = c.get(constraint, "matchAttribute", con_path, str)
        distinct = c.get(constraint, "distinctAttribute", con_path, str)
        if attribute is not None:
            _fully_qualified_name(c, attribute, subpath(con_path, "matchAttribute"))
        elif distinct is not None:
            _fully_qualified_name(c, distinct, subpath(con_path, "distinctAttribute"))
        else:
            c.required(subpath(con_path, "matchAttribute"))
    for conf_path, config in _dicts(c, _items(c, devices, "config", devices_path, DEVICE_CONFIG_MAX)):
        _request_refs(c, config, conf_path, names)
        _opaque(c, config, conf_path)


def _resource_claim(c: Checker, obj: dict[str, Any], path: str) -> None:
    claim_spec(c, obj.get("spec"), subpath(path, "spec"))


def _resource_claim_template(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    meta = c.get(spec, "metadata", spec_path, dict) or {}
    meta_path = subpath(spec_path, "metadata")
    if (labels := meta.get("labels")) is not None:
        _labels(c, labels, subpath(meta_path, "labels"))
    if (annotations := meta.get("annotations")) is not None:
        _annotations(c, annotations, subpath(meta_path, "annotations"), "ResourceClaim")
    claim_spec(c, spec.get("spec"), subpath(spec_path, "spec"))


# ---- claim status ------------------------------------------------------------------------------

def claim_status(c: Checker, status: Any, old_status: Any, deleting: bool, names: RequestNames, path: str) -> None:
    """ResourceClaim status on an update (validateResourceClaimStatusUpdate): unique consumers,
    each fully named; a reservation only with an allocation, and none added while the claim is
    being deleted; an allocation written once (then only cleared), its results naming the
    claim's requests."""
    status = c.typed(status, path, dict) or {}
    old_status = old_status if isinstance(old_status, dict) else {}
    reserved = _dicts(c, _items(c, status, "reservedFor", path, RESERVED_FOR_MAX))
    for ref_path, ref in reserved:
        for key in ("resource", "name", "uid"):
            if not c.get(ref, key, ref_path, str):
                c.required(subpath(ref_path, key))
        c.get(ref, "apiGroup", ref_path, str)
    _unique(c, [(p, ref.get("uid")) for p, ref in reserved if isinstance(ref.get("uid"), str)])
    allocation = c.get(status, "allocation", path, dict)
    _device_statuses(c, status, path, allocation)
    old_allocation = old_status.get("allocation")
    if reserved:
        if allocation is None:
            c.err(subpath(path, "reservedFor"), "Forbidden: may not be specified when `allocated` is not set")
        elif deleting:
            old = {canonical_json(r) for r in old_status.get("reservedFor") or ()}
            if any(canonical_json(r) not in old for _, r in reserved):
                c.err(subpath(path, "reservedFor"), "Forbidden: new entries may not be added while "
                      "`deallocationRequested` or `deletionTimestamp` are set")
    alloc_path = subpath(path, "allocation")
    if allocation is not None and old_allocation is not None:
        if allocation != old_allocation:
            c.invalid(alloc_path, allocation, "field is immutable")
    elif allocation is not None:
        _allocation(c, allocation, alloc_path, names)


def _device_id(holder: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(holder.get(k) for k in ("driver", "pool", "device", "shareID"))


def _device_statuses(c: Checker, status: dict[str, Any], path: str, allocation: dict[str, Any] | None) -> None:
    """What drivers report per allocated device (DRAResourceClaimDeviceStatus, on in v1.35): one
    entry per device of the allocation, its conditions and network data well formed."""
    if status.get("devices") is None:
        return  # (the usual case, without building paths)
    results = ((allocation or {}).get("devices") or {}).get("results") if isinstance(allocation, dict) else None
    allocated = {_device_id(r) for r in results if isinstance(r, dict)} if isinstance(results, list) else set()
    devices = _dicts(c, _items(c, status, "devices", path))
    for device_path, device in devices:
        _driver(c, device, "driver", device_path)
        _pool_name(c, c.get(device, "pool", device_path, str) or "", subpath(device_path, "pool"))
        _required_name(c, device, "device", device_path, dns_label_errors)
        share = c.get(device, "shareID", device_path, str)
        if share is not None:
            _uid(c, share, subpath(device_path, "shareID"))
        if _device_id(device) not in allocated:
            shown = "/".join(str(part) for part in _device_id(device) if part is not None)
            c.err(device_path, f"Invalid value: {shown}: must be an allocated device in the claim")
        _conditions(c, device, device_path)
        data = device.get("data")
        if data is not None:
            data_path = subpath(device_path, "data")
            if len(json.dumps(data, separators=(",", ":"))) > DEVICE_STATUS_DATA_MAX_LENGTH:
                _too_long(c, data_path, DEVICE_STATUS_DATA_MAX_LENGTH)
            elif not isinstance(data, dict):
                c.invalid(data_path, "<value omitted>", "must be a valid JSON object")
        if (network := c.get(device, "networkData", device_path, dict)) is not None:
            _network_data(c, network, subpath(device_path, "networkData"))
    seen: set[tuple[Any, ...]] = set()
    for device_path, device in devices:  # the key prints as upstream's SharedDeviceID, unquoted
        if _device_id(device) in seen:
            c.err(device_path, "Duplicate value: " + "/".join(str(x) for x in _device_id(device) if x is not None))
        seen.add(_device_id(device))


def _uid(c: Checker, uid: str, path: str) -> None:
    if not _UUID.fullmatch(uid.lower()):
        c.invalid(path, uid, f"error validating uid: invalid UUID length: {len(uid)}" if len(uid) != 36
                  else "error validating uid: invalid UUID format")
    elif uid != uid.lower():
        c.invalid(path, uid, "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with "
                  "lowercase hexadecimal characters")


def _conditions(c: Checker, holder: dict[str, Any], path: str) -> None:
    """metav1 Conditions (ValidateConditions): a qualified type, unique; True, False or Unknown; a
    transition time; a CamelCase reason; at most 8 here."""
    listed = c.get(holder, "conditions", path, list) or []
    list_path = subpath(path, "conditions")
    if len(listed) > ALLOCATED_DEVICE_CONDITIONS_MAX:
        _too_many(c, list_path, len(listed), ALLOCATED_DEVICE_CONDITIONS_MAX)
    types: set[str] = set()
    for cond_path, cond in _dicts(c, [(f"{list_path}[{i}]", x) for i, x in enumerate(listed)]):
        ctype = c.get(cond, "type", cond_path, str) or ""
        type_path = subpath(cond_path, "type")
        if not ctype:
            c.required(type_path)
        else:
            _label_name(c, ctype, type_path)
            if ctype in types:
                c.err(type_path, f"Duplicate value: {_show(ctype)}")
            types.add(ctype)
        cstatus = c.get(cond, "status", cond_path, str) or ""
        if cstatus not in CONDITION_STATUSES:
            c.unsupported(subpath(cond_path, "status"), cstatus, CONDITION_STATUSES)
        generation = c.get(cond, "observedGeneration", cond_path, int)
        if generation is not None and generation < 0:
            c.invalid(subpath(cond_path, "observedGeneration"), generation, "must be greater than or equal to zero")
        if not c.get(cond, "lastTransitionTime", cond_path, str):
            c.required(subpath(cond_path, "lastTransitionTime"), "must be set")
        reason = c.get(cond, "reason", cond_path, str) or ""
        reason_path = subpath(cond_path, "reason")
        if not reason:
            c.required(reason_path, "must be set")
        else:
            if not _CONDITION_REASON.fullmatch(reason):
                c.invalid(reason_path, reason, _CONDITION_REASON_MSG)
            if len(reason) > 1024:
                _too_long(c, reason_path, 1024)
        if len(c.get(cond, "message", cond_path, str) or "") > 32768:
            _too_long(c, subpath(cond_path, "message"), 32768)


def _network_data(c: Checker, network: dict[str, Any], path: str) -> None:
    if len(c.get(network, "interfaceName", path, str) or "") > NETWORK_INTERFACE_NAME_MAX:
        _too_long(c, subpath(path, "interfaceName"), NETWORK_INTERFACE_NAME_MAX)
    if len(c.get(network, "hardwareAddress", path, str) or "") > NETWORK_HARDWARE_ADDRESS_MAX:
        _too_long(c, subpath(path, "hardwareAddress"), NETWORK_HARDWARE_ADDRESS_MAX)
    keyed = []
    for ip_path, ip in _items(c, network, "ips", path, NETWORK_IPS_MAX):
        if c.typed(ip, ip_path, str) is None:
            continue
        keyed.append((ip_path, ip))
        _interface_address(c, ip, ip_path)
    _unique(c, keyed)


def _interface_address(c: Checker, value: str, path: str) -> None:
    """IsValidInterfaceAddress: an address with its prefix length, in canonical form."""
    address, _, bits = value.partition("/")
    if ":" not in address:  # IPv4 as Go's sloppy parser reads it: leading zeros allowed
        address = ".".join(part.lstrip("0") or "0" if part.isdigit() else part for part in address.split("."))
    try:
        interface = ipaddress.ip_interface(f"{address}/{bits}" if bits.isdigit() else "invalid")
    except ValueError:
        c.invalid(path, value, "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)")
        return
    canonical = f"{interface.ip}/{interface.network.prefixlen}"
    if value != canonical:
        c.invalid(path, value, f"must be in canonical form ({_show(canonical)})")


def _allocation(c: Checker, allocation: dict[str, Any], path: str, names: RequestNames) -> None:
    devices_path = subpath(path, "devices")
    devices = c.get(allocation, "devices", path, dict) or {}
    for result_path, result in _dicts(c, _items(c, devices, "results", devices_path, ALLOCATION_RESULTS_MAX)):
        _request_ref(c, c.get(result, "request", result_path, str) or "", subpath(result_path, "request"), names)
        _driver(c, result, "driver", result_path)
        _pool_name(c, c.get(result, "pool", result_path, str) or "", subpath(result_path, "pool"))
        _required_name(c, result, "device", result_path, dns_label_errors)
        c.get(result, "adminAccess", result_path, bool)
        if (share := c.get(result, "shareID", result_path, str)) is not None:
            _uid(c, share, subpath(result_path, "shareID"))
        _tolerations(c, result, result_path)
        _binding_conditions(c, result, result_path)
    for conf_path, config in _dicts(c, _items(c, devices, "config", devices_path, 2 * DEVICE_CONFIG_MAX)):
        source = c.get(config, "source", conf_path, str)
        if not source:
            c.required(subpath(conf_path, "source"))
        elif source not in CONFIG_SOURCES:
            c.unsupported(subpath(conf_path, "source"), source, CONFIG_SOURCES)
        _request_refs(c, config, conf_path, names)
        _opaque(c, config, conf_path)
    if (selector := allocation.get("nodeSelector")) is not None:
        _NODE_SELECTORS.check(c, selector, lambda: _node_selector(c, selector, subpath(path, "nodeSelector")))


def _binding_conditions(c: Checker, holder: dict[str, Any], path: str) -> None:
    """A device's (or its allocation's) binding conditions: label-like names, distinct, one list
    only with the other."""
    if holder.get("bindingConditions") is None and holder.get("bindingFailureConditions") is None:
        return  # (the usual case, without building paths)
    lists: dict[str, list[str]] = {}
    for key in ("bindingConditions", "bindingFailureConditions"):
        keyed = []
        for item_path, item in _items(c, holder, key, path, BINDING_CONDITIONS_MAX):
            if c.typed(item, item_path, str) is not None:
                _label_name(c, item, item_path)
                keyed.append((item_path, item))
        _unique(c, keyed)
        lists[key] = [item for _, item in keyed]
    conditions, failures = lists["bindingConditions"], lists["bindingFailureConditions"]
    for i, condition in enumerate(failures):
        if condition in conditions:
            c.invalid(f"{path}.bindingFailureConditions[{i}]", condition,
                      "bindingFailureConditions must not overlap with bindingConditions")
    if failures and not conditions:
        c.invalid(subpath(path, "bindingConditions"), conditions,
                  "bindingConditions are required to use bindingFailureConditions")
    if conditions and not failures:
        c.invalid(subpath(path, "bindingFailureConditions"), failures,
                  "bindingFailureConditions are required to use bindingConditions")


# ---- classes -----------------------------------------------------------------------------------

def _device_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    _selectors(c, spec, spec_path)
    for conf_path, config in _dicts(c, _items(c, spec, "config", spec_path, DEVICE_CONFIG_MAX)):
        _opaque(c, config, conf_path)
    name = c.get(spec, "extendedResourceName", spec_path, str)
    if name is not None and not _is_extended_resource_name(name):
        c.invalid(subpath(spec_path, "extendedResourceName"), name, "must be a valid extended resource name")


def _is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: outside kubernetes.io (requests. prefix not allowed), with
    a domain, and a valid quota resource name once prefixed with `requests.`."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    return not qualified_name_errors("requests." + name)


# ---- slices ------------------------------------------------------------------------------------

def _resource_slice(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    _driver(c, spec, "driver", spec_path)
    pool_path = subpath(spec_path, "pool")
    pool = c.get(spec, "pool", spec_path, dict) or {}
    _pool_name(c, c.get(pool, "name", pool_path, str) or "", subpath(pool_path, "name"))
    slices = c.get(pool, "resourceSliceCount", pool_path, int)
    if slices is None and pool.get("resourceSliceCount") is None:
        slices = 0
    if slices is not None and slices <= 0:
        c.invalid(subpath(pool_path, "resourceSliceCount"), slices, POSITIVE_MSG)
    generation = c.get(pool, "generation", pool_path, int)
    if generation is not None and generation < 0:
        c.invalid(subpath(pool_path, "generation"), generation, "must be greater than or equal to zero")
    per_device = _node_selection(c, spec, spec_path)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        c.invalid(spec_path, "", "only one of `sharedCounters` or `devices` is allowed")
    listed = spec.get("devices")
    raw_devices = listed if isinstance(listed, list) else []
    advanced = any(isinstance(d, dict) and (d.get("taints") or d.get("consumesCounters")) for d in raw_devices)
    devices = _dicts(c, _items(c, spec, "devices", spec_path, SLICE_MAX_DEVICES_ADVANCED if advanced
                               else SLICE_MAX_DEVICES))
    for device_path, device in devices:
        if per_device:
            _device(c, device, device_path, per_device)
        else:  # the nodes of a fleet publish the same devices: each kind is checked once
            _DEVICES.check(c, device, functools.partial(_device, c, device, device_path, per_device))
    _unique(c, [(p, d.get("name")) for p, d in devices if isinstance(d.get("name"), str)])


def _node_selection(c: Checker, spec: dict[str, Any], path: str) -> bool:
    """Exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection; whether devices
    choose their nodes themselves."""
    chosen = []
    node_name = c.get(spec, "nodeName", path, str)
    if node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
            c.names(node_name, subpath(path, "nodeName"), dns_subdomain_errors)
        else:
            c.invalid(subpath(path, "nodeName"), "", "must be either unset or set to a non-empty string")
    selector = c.get(spec, "nodeSelector", path, dict)
    if selector is not None:
        chosen.append("`nodeSelector`")
        _node_selector(c, selector, subpath(path, "nodeSelector"))
        terms = selector.get("nodeSelectorTerms")
        if isinstance(terms, list) and len(terms) != 1:
            c.invalid(subpath(path, "nodeSelector.nodeSelectorTerms"), terms, "must have exactly one node selector term")
    for key in ("allNodes", "perDeviceNodeSelection"):
        flag = c.get(spec, key, path, bool)
        if flag:
            chosen.append(f"`{key}`")
        elif flag is not None:
            c.invalid(subpath(path, key), flag, "must be either unset or set to true")
    if not chosen:
        c.required(path, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")
    elif len(chosen) > 1:
        c.invalid(path, "{" + ", ".join(chosen) + "}", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                  "`perDeviceNodeSelection` is required, but multiple fields are set")
    return spec.get("perDeviceNodeSelection") is True


def _device(c: Checker, device: dict[str, Any], path: str, per_device: bool) -> None:
    _required_name(c, device, "name", path, dns_label_errors)
    attributes = c.get(device, "attributes", path, dict) or {}
    capacity = c.get(device, "capacity", path, dict) or {}
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        c.invalid(path, total, f"the total number of attributes and capacities must not exceed "
                  f"{MAX_ATTRIBUTES_AND_CAPACITIES}")
    for name, attribute in attributes.items():
        item_path = f"{path}.attributes[{name}]"
        _qualified_name(c, name, subpath(path, "attributes"))
        if c.typed(attribute, item_path, dict) is not None:
            _attribute(c, attribute, item_path)
    for name, cap in capacity.items():
        item_path = f"{path}.capacity[{name}]"
        _qualified_name(c, name, subpath(path, "capacity"))
        if c.typed(cap, item_path, dict) is None:
            continue
        amount = None
        if cap.get("value") is None:
            c.required(subpath(item_path, "value"))
        else:
            amount = _quantity(c, cap["value"], subpath(item_path, "value"))
        policy = c.get(cap, "requestPolicy", item_path, dict)
        if policy is not None and device.get("allowMultipleAllocations") is not True:
            c.err(subpath(item_path, "requestPolicy"), "Forbidden: allowMultipleAllocations must be true")
        elif policy is not None and amount is not None:
            _request_policy(c, amount, policy, subpath(item_path, "requestPolicy"))
    for taint_path, taint in _dicts(c, _items(c, device, "taints", path, DEVICE_TAINTS_MAX)):
        _taint(c, taint, taint_path)
    placed = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if per_device:
        _device_node(c, device, path)
    elif placed:
        c.invalid(path, _NULL, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    _binding_conditions(c, device, path)


def _quantity(c: Checker, raw: Any, path: str) -> tuple[Fraction, str] | None:
    """A quantity's value and how Kubernetes prints it (None, told, when it does not parse)."""
    try:
        return parse_quantity(raw), quantity_string(raw)
    except QuantityError as e:
        c.err(path, str(e))
        return None


def _request_policy(c: Checker, capacity: tuple[Fraction, str], policy: dict[str, Any], path: str) -> None:
    """A shared device's capacity requestPolicy (validateRequestPolicy): one of `validValues` and
    `validRange`, either with a `default` it admits, within the capacity."""
    values = c.get(policy, "validValues", path, list)
    valid_range = c.get(policy, "validRange", path, dict)
    if values and valid_range is not None:
        c.err(path, 'Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" '
                    "at the same time")
        return
    if not values and valid_range is None:
        return
    default = None
    if policy.get("default") is None:
        c.required(subpath(path, "default"), f"required when {'validValues' if values else 'validRange'} is defined")
    else:
        default = _quantity(c, policy["default"], subpath(path, "default"))
    if default is None:
        return
    if values:
        _valid_values(c, capacity, default, values, subpath(path, "validValues"))
    elif valid_range is not None:
        _valid_range(c, capacity, default, valid_range, subpath(path, "validRange"))


def _valid_values(c: Checker, capacity: tuple[Fraction, str], default: tuple[Fraction, str], raw: list[Any],
                  path: str) -> None:
    values = [_quantity(c, v, f"{path}[{i}]") for i, v in enumerate(raw)]
    if any(v is None for v in values):
        return
    parsed = [v for v in values if v is not None]
    for i in range(len(parsed) - 1):
        if parsed[i][0] > parsed[i + 1][0]:
            c.invalid(f"{path}[{i + 1}]", parsed[i + 1][1], "values must be sorted in ascending order")
    if _too_many(c, path, len(parsed), CAPACITY_VALID_VALUES_MAX):
        return
    for i, (value, text) in enumerate(parsed):
        if value > capacity[0]:
            c.invalid(f"{path}[{i}]", text, f"option is larger than capacity value: {capacity[1]}")
    _unique(c, [(f"{path}[{i}]", str(math.ceil(value))) for i, (value, _) in enumerate(parsed)])
    if all(value != default[0] for value, _ in parsed):
        c.invalid(path, default[1], "default value is not valid according to the requestPolicy")


def _valid_range(c: Checker, capacity: tuple[Fraction, str], default: tuple[Fraction, str], valid_range: dict[str, Any],
                 path: str) -> None:
    if valid_range.get("min") is None:
        c.required(subpath(path, "min"), "required when validRange is defined")
        return
    bounds = {k: _quantity(c, valid_range[k], subpath(path, k)) if valid_range.get(k) is not None else None
              for k in ("min", "max", "step")}
    low, high, step = bounds["min"], bounds["max"], bounds["step"]
    if low is None:
        return
    if low[0] > capacity[0]:
        c.invalid(subpath(path, "min"), low[1], f"min is larger than capacity value: {capacity[1]}")
    if default[0] < low[0]:
        c.invalid(subpath(path, "min"), default[1], f"default is less than min: {low[1]}")
    if high is not None:
        if low[0] > high[0]:
            c.invalid(subpath(path, "max"), low[1], f"min is larger than max: {high[1]}")
        if high[0] > capacity[0]:
            c.invalid(subpath(path, "max"), high[1], f"max is larger than capacity value: {capacity[1]}")
        if default[0] > high[0]:
            c.invalid(subpath(path, "max"), default[1], f"default is more than max: {high[1]}")
    if step is not None:
        one_step = low[0] + step[0]
        if one_step > capacity[0]:
            shown = canonical(one_step, quantity_format(valid_range["min"]))
            c.invalid(subpath(path, "step"), step[1], f"one step {shown} is larger than capacity value: {capacity[1]}")
        for value in (default, high):
            if value is not None and step[0] and (math.ceil(value[0]) - math.ceil(low[0])) % math.ceil(step[0]):
                c.invalid(subpath(path, "step"), value[1],
                          f"value is not a multiple of a given step ({step[1]}) from ({low[1]})")


def _device_node(c: Checker, device: dict[str, Any], path: str) -> None:
    chosen = []
    node_name = c.get(device, "nodeName", path, str)
    if node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
            c.names(node_name, subpath(path, "nodeName"), dns_subdomain_errors)
        else:
            c.invalid(subpath(path, "nodeName"), "", "must not be empty")
    if (selector := c.get(device, "nodeSelector", path, dict)) is not None:
        chosen.append("`nodeSelector`")
        _node_selector(c, selector, subpath(path, "nodeSelector"))
    all_nodes = c.get(device, "allNodes", path, bool)
    if all_nodes:
        chosen.append("`allNodes`")
    elif all_nodes is not None:
        c.invalid(subpath(path, "allNodes"), all_nodes, "must be either unset or set to true")
    message = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
               "is set to true in the ResourceSlice spec")
    if not chosen:
        c.required(path, message)
    elif len(chosen) > 1:
        c.invalid(path, "{" + ", ".join(chosen) + "}", message)


def _taint(c: Checker, taint: dict[str, Any], path: str) -> None:
    """A device taint: a label-name key, a label value, one of the known effects."""
    _label_name(c, c.get(taint, "key", path, str) or "", subpath(path, "key"))
    value = c.get(taint, "value", path, str) or ""
    if value:
        c.names(value, subpath(path, "value"), label_value_errors)
    effect = c.get(taint, "effect", path, str)
    if not effect:
        c.required(subpath(path, "effect"))
    elif effect not in TAINT_EFFECTS:
        c.unsupported(subpath(path, "effect"), effect, TAINT_EFFECTS)
    c.get(taint, "timeAdded", path, str)


# ---- device taint rules ------------------------------------------------------------------------

def _device_taint_rule(c: Checker, obj: dict[str, Any], path: str) -> None:
    """resource.k8s.io/v1alpha3 DeviceTaintRule: a selector of driver, pool and device names
    (v1.35 no longer has its class and CEL selectors) and one taint."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    selector_path = subpath(spec_path, "deviceSelector")
    selector = c.get(spec, "deviceSelector", spec_path, dict)
    if selector is not None:
        if (driver := c.get(selector, "driver", selector_path, str)) is not None:
            _csi_driver_name(c, driver, subpath(selector_path, "driver"))
        if (pool := c.get(selector, "pool", selector_path, str)) is not None:
            _pool_name(c, pool, subpath(selector_path, "pool"))
        if (device := c.get(selector, "device", selector_path, str)) is not None:
            if not device:
                c.required(subpath(selector_path, "device"))
            else:
                _dns_label(c, device, subpath(selector_path, "device"))
    _taint(c, c.get(spec, "taint", spec_path, dict) or {}, subpath(spec_path, "taint"))


def _attribute(c: Checker, attribute: dict[str, Any], path: str) -> None:
    """Exactly one value: an int, a bool, a string (at most 64 bytes) or a semantic version."""
    given = [k for k in _ATTRIBUTE_VALUES if attribute.get(k) is not None]
    c.get(attribute, "int", path, int)
    c.get(attribute, "bool", path, bool)
    string = c.get(attribute, "string", path, str)
    if string is not None and len(string.encode()) > ATTRIBUTE_MAX_VALUE_LENGTH:
        _too_long(c, subpath(path, "string"), ATTRIBUTE_MAX_VALUE_LENGTH)
    version = c.get(attribute, "version", path, str)
    if version is not None:
        if not _SEMVER.fullmatch(version):
            c.invalid(subpath(path, "version"), version, "must be a string compatible with semver.org spec 2.0.0")
        if len(version.encode()) > ATTRIBUTE_MAX_VALUE_LENGTH:
            _too_long(c, subpath(path, "version"), ATTRIBUTE_MAX_VALUE_LENGTH)
    if not given:
        c.invalid(path, "", "exactly one value must be specified")
    elif len(given) > 1:
        c.invalid(path, attribute, "exactly one value must be specified")
