"""storage.k8s.io/v1: StorageClasses, CSINodes and CSIDrivers (pkg/apis/storage/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.names import dns_subdomain_errors
from kubesched.api.storage import (
    IMMEDIATE,
    WAIT_FOR_FIRST_CONSUMER,
)
from kubesched.api.validation.checker import NONNEGATIVE_MSG, Checker, _show, qualified_name_errors, subpath


def _topology_terms(c: Checker, value: Any, path: str) -> None:
    """A StorageClass's allowedTopologies: label keys with distinct values, each term distinct."""
    seen: list[dict[str, set[str]]] = []
    for i, term in enumerate(c.typed(value, path, list) or []):
        term_path = f"{path}[{i}]"
        exprs_path = subpath(term_path, "matchLabelExpressions")
        exprs: dict[str, set[str]] = {}
        for j, expr in enumerate(c.get(c.typed(term, term_path, dict) or {}, "matchLabelExpressions", term_path,
                                       list) or []):
            expr_path = f"{exprs_path}[{j}]"
            if c.typed(expr, expr_path, dict) is None:
                continue
            values: set[str] = set()
            listed = c.get(expr, "values", expr_path, list) or []
            if not listed:
                c.required(subpath(expr_path, "values"))
            for k, item in enumerate(listed):
                if c.typed(item, f"{expr_path}.values[{k}]", str) is None:
                    continue
                if item in values:
                    c.err(f"{expr_path}.values[{k}]", f"Duplicate value: {_show(item)}")
                values.add(item)
            key = c.get(expr, "key", expr_path, str) or ""
            c.names(key, subpath(expr_path, "key"), qualified_name_errors)
            if key in exprs:
                c.err(subpath(expr_path, "key"), f"Duplicate value: {_show(key)}")
            exprs[key] = values
        # Upstream compares each term with the ones before it and with as many empty placeholders,
        # so an empty term is always a duplicate.
        if exprs in seen or not exprs:
            c.err(exprs_path, 'Duplicate value: ""')
        seen.append(exprs)


def _storage_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    provisioner = c.get(obj, "provisioner", path, str)
    if not provisioner:
        c.required(subpath(path, "provisioner"))
    else:
        for msg in qualified_name_errors(provisioner.lower()):
            c.invalid(subpath(path, "provisioner"), provisioner.lower(), msg)
    c.get(obj, "parameters", path, dict)
    c.enum(obj, "reclaimPolicy", path, ("Delete", "Retain"))
    c.enum(obj, "volumeBindingMode", path, (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER))
    _topology_terms(c, obj.get("allowedTopologies"), subpath(path, "allowedTopologies"))


def _csi_driver_name(c: Checker, name: Any, path: str) -> None:
    """ValidateCSIDriverName: required, at most 63 characters, a DNS subdomain once lower-cased."""
    if not name:
        c.required(path)
        return
    if len(name) > 63:
        c.err(path, "Too long: may not be more than 63 bytes")
    for msg in dns_subdomain_errors(name.lower()):
        c.invalid(path, name, msg)


def _csi_node(c: Checker, obj: dict[str, Any], path: str) -> None:
    drivers_path = subpath(path, "spec.drivers")
    names: set[str] = set()
    for i, driver in enumerate(c.get(c.get(obj, "spec", path, dict) or {}, "drivers", subpath(path, "spec"), list) or []):
        driver_path = f"{drivers_path}[{i}]"
        if c.typed(driver, driver_path, dict) is None:
            continue
        name = c.get(driver, "name", driver_path, str)
        _csi_driver_name(c, name, subpath(driver_path, "name"))
        if name and name in names:
            c.err(subpath(driver_path, "name"), f"Duplicate value: {_show(name)}")
        names.add(name or "")
        node_id = c.get(driver, "nodeID", driver_path, str)
        if not node_id:
            c.required(subpath(driver_path, "nodeID"))
        elif len(node_id) > 192:
            c.invalid(subpath(driver_path, "nodeID"), node_id, "must be 192 characters or less")
        count = c.get(c.get(driver, "allocatable", driver_path, dict) or {}, "count", subpath(driver_path, "allocatable"),
                      int, 32)
        if count is not None and count < 0:
            c.invalid(subpath(driver_path, "allocatable.count"), count, NONNEGATIVE_MSG)
        keys: set[str] = set()
        for k, key in enumerate(c.get(driver, "topologyKeys", driver_path, list) or []):
            if c.typed(key, f"{driver_path}.topologyKeys[{k}]", str) is None:
                continue
            if key in keys:
                c.err(driver_path, f"Duplicate value: {_show(key)}")
            keys.add(key)
            c.names(key, driver_path, qualified_name_errors)


def _csi_driver(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    for key in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"):
        c.get(spec, key, spec_path, bool)
    c.enum(spec, "fsGroupPolicy", spec_path, ("File", "None", "ReadWriteOnceWithFSType"))
    modes_path = subpath(spec_path, "volumeLifecycleModes")
    for mode in c.get(spec, "volumeLifecycleModes", spec_path, list) or []:
        if mode not in ("Persistent", "Ephemeral"):
            c.unsupported(modes_path, mode, ("Persistent", "Ephemeral"))
