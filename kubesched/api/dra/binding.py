"""Binding conditions (DRADeviceBindingConditions, alpha in v1.35): devices that need preparing
outside the node, such as a fabric-attached GPU, before a pod may be bound to use them.

A device lists `bindingConditions` and `bindingFailureConditions`; the allocator copies them into
the claim's allocation, and the scheduler's PreBind waits until the driver reports every binding
condition True in the claim's `status.devices[].conditions`. A failure condition that turns True,
or `bindingTimeout` after the allocation's `allocationTimestamp`, gives the allocation up: the
next scheduling attempt finds the claim unavailable and deallocates it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

Obj = dict[str, Any]
BINDING_TIMEOUT = 600.0  # DynamicResourcesBindingTimeoutDefault
POLL_INTERVAL = 5.0  # PreBind's wait.PollUntilContextTimeout interval


class BindingFailed(Exception):
    """A binding failure condition of an allocated device is True."""


def _results(claim: Obj) -> list[Obj]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or ())


def _device_status(claim: Obj, result: Obj) -> Obj | None:
    for status in (claim.get("status") or {}).get("devices") or ():
        if all(status.get(k) == result.get(k) for k in ("driver", "pool", "device")):
            return status
    return None


def _condition(status: Obj, kind: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == kind), None)


def ready_for_binding(claim: Obj) -> bool:
    """isClaimReadyForBinding: every binding condition of every allocated device True (or none
    to wait for); raises BindingFailed when a failure condition is True."""
    if not (claim.get("status") or {}).get("allocation"):
        return False
    for result in _results(claim):
        if not result.get("bindingConditions"):
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or ():
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                raise BindingFailed(f"claim {claim['metadata']['name']} binding failed: "
                                    f"reason={failed.get('reason', '')}, message={json.dumps(failed.get('message', ''), ensure_ascii=False)}")
        for kind in result["bindingConditions"]:
            condition = _condition(status, kind)
            if condition is None or condition.get("status") != "True":
                return False
    return True


def timed_out(claim: Obj, now: float, timeout: float, seconds: Callable[[str], float]) -> bool:
    """isClaimTimeout: an allocation with binding conditions older than `timeout`."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    stamp = allocation.get("allocationTimestamp")
    if not stamp or not any(r.get("bindingConditions") is not None for r in _results(claim)):
        return False
    return seconds(stamp) + timeout < now


def has_binding_conditions(claims: Iterable[Obj]) -> bool:
    return any(r.get("bindingConditions") for claim in claims for r in _results(claim))
