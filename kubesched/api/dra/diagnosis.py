"""Why a node cannot give a pod's claims their devices, in more words than "cannot allocate all claims".

Upstream reports only that sentence per node. `--explain` goes further by asking the same
allocator smaller questions: the first claim (in the pod's order) that cannot be added to those
before it, the first of its requests that cannot be added (constraints left aside), and then how
many devices on the node that request's selectors match and how many of those are held by other
claims. Nothing here decides anything: it re-runs the allocator on parts of the same input.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from kubesched.api.dra.allocator import AllocationError, Allocator

Obj = dict[str, Any]


def _key(claim: Obj) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _devices(claim: Obj) -> Obj:
    return (claim.get("spec") or {}).get("devices") or {}


def _with_requests(claim: Obj, requests: Sequence[Obj], constraints: bool) -> Obj:
    """`claim` asking only `requests`, with or without its constraints."""
    out = copy.copy(claim)
    devices = dict(_devices(claim), requests=list(requests))
    if not constraints:
        devices.pop("constraints", None)
    out["spec"] = dict(claim.get("spec") or {}, devices=devices)
    return out


def _fits(allocator: Allocator, node: Obj, claims: Sequence[Obj]) -> bool:
    try:
        return allocator.allocate(node, claims) is not None
    except AllocationError:
        return False


def _probe(allocator: Allocator, node: Obj, request: Obj, **fields: Any) -> list[Obj] | None:
    """The devices `request` (changed by `fields`) would get from an allocator that sees nothing
    held."""
    exact = {k: v for k, v in request.items() if k not in ("count", "adminAccess")} | fields
    free = copy.copy(allocator)
    free.allocated, free.consumed, free.shared = frozenset(), {}, frozenset()
    claim = {"metadata": {"name": "diagnosis"}, "spec": {"devices": {"requests": [
        {"name": "probe", "exactly": exact}]}}}
    try:
        results = free.allocate(node, [claim])
    except AllocationError:
        return None
    return results[0]["devices"]["results"] if results else None


def _matching(allocator: Allocator, node: Obj, request: Obj) -> tuple[int, int] | None:
    """How many devices on the node `request`'s class and selectors select (allocation mode All),
    and how many of those other claims hold, whole or in shares of its capacity; None when some
    match but they cannot all be taken at once (more than one claim may hold, or an incomplete
    pool)."""
    results = _probe(allocator, node, request, allocationMode="All")
    if results is None:
        return None if _probe(allocator, node, request, allocationMode="ExactCount", count=1) else (0, 0)
    devices = [(r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in results]
    return len(devices), sum(1 for d in devices if d in allocator.allocated or d in allocator.consumed)


def _request(allocator: Allocator, node: Obj, request: Obj) -> str:
    """What the node lacks for one request on its own."""
    exact = request.get("exactly")
    if exact is None:
        subs = request.get("firstAvailable") or ()
        parts = [f"{s.get('name', '')}: {_wants(allocator, node, s)}" for s in subs]
        return "none of its subrequests can be satisfied (" + "; ".join(parts) + ")"
    return _wants(allocator, node, exact)


def _wants(allocator: Allocator, node: Obj, exact: Obj) -> str:
    counted = _matching(allocator, node, exact)
    klass = exact.get("deviceClassName", "")
    if (exact.get("allocationMode") or "ExactCount") == "All":
        wanted = "all devices"
    else:
        wanted = f"{exact.get('count', 1)} device(s)"
    if counted is None:
        return f"wants {wanted} of class {klass}; devices on this node match it"
    matching, held = counted
    if not matching:
        return f"wants {wanted} of class {klass}; no device on this node matches"
    return f"wants {wanted} of class {klass}; {matching} on this node match, {held} of them held by other claims"


def diagnose(allocator: Allocator, node: Obj, claims: Sequence[Obj]) -> str | None:
    """The first claim and request that `node` cannot satisfy, and why; None when it can."""
    for ci, claim in enumerate(claims):
        before = list(claims[:ci])
        if _fits(allocator, node, [*before, claim]):
            continue
        requests = _devices(claim).get("requests") or []
        for ri, request in enumerate(requests):
            if _fits(allocator, node, [*before, _with_requests(claim, requests[:ri + 1], False)]):
                continue
            name = request.get("name", "")
            if not _fits(allocator, node, [_with_requests(claim, [request], False)]):
                return f"claim {_key(claim)}, request {name}: {_request(allocator, node, request)}"
            if ri:
                return (f"claim {_key(claim)}, request {name}: the node's devices cannot serve it together "
                        "with the claim's earlier requests")
            return (f"claim {_key(claim)}, request {name}: the node's devices cannot serve it together "
                    "with the pod's earlier claims")
        matched = ", ".join(c.get("matchAttribute", "") for c in _devices(claim).get("constraints") or ())
        return f"claim {_key(claim)}: no choice of devices satisfies its constraints (matchAttribute {matched})"
    return None
