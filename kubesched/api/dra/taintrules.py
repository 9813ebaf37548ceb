"""DeviceTaintRules (DRADeviceTaintRules, alpha in v1.35): an administrator's taint on devices.

A rule selects devices by driver, pool and device name (each optional; a rule without a selector
selects nothing) and puts its one taint on them, exactly as if the driver had published it in
its ResourceSlice. The scheduler sees slices with the rules' taints added (the resourceslice
tracker's ListWithDeviceTaintRules); the eviction controller evicts for them alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]


def matches(rule: Obj, driver: str, pool: str, device: str) -> bool:
    """ruleMatchesDevice."""
    selector = (rule.get("spec") or {}).get("deviceSelector")
    if not isinstance(selector, dict):
        return False
    return all(selector.get(key) is None or selector[key] == value
               for key, value in (("driver", driver), ("pool", pool), ("device", device)))


def taint(rule: Obj) -> Obj:
    return dict((rule.get("spec") or {}).get("taint") or {})


def with_rules(slice_: Obj, rules: Iterable[Obj]) -> Obj:
    """The slice as the scheduler sees it: each device with the taints of the rules selecting it
    after its own. The slice itself when no rule selects any of its devices."""
    spec = slice_.get("spec") or {}
    driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
    rules = list(rules)
    devices = []
    changed = False
    for device in spec.get("devices") or ():
        added = [taint(r) for r in rules if matches(r, driver, pool, device.get("name", ""))]
        if added:
            device = {**device, "taints": [*(device.get("taints") or ()), *added]}
            changed = True
        devices.append(device)
    if not changed:
        return slice_
    return {**slice_, "spec": {**spec, "devices": devices}}
