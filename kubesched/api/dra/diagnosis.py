"""Why a node cannot give a pod's claims their devices, in more words than "cannot allocate all claims".

Upstream reports only that sentence per node. `--explain` goes further by asking the same
allocator smaller questions: the first claim (in the pod's order) that cannot be added to those
before it, the first of its requests that cannot be added (constraints left aside), and then how
many devices on the node that request's selectors match, how many of those are held by other
claims, and which are kept out by device taints the request does not tolerate, with the taints.
Nothing here decides anything: it re-runs the allocator on parts of the same input.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

from kubesched.api.dra.allocator import AllocationError, Allocator
from kubesched.api.dra.taints import EFFECTIVE, tolerated

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


def _matching(allocator: Allocator, node: Obj, request: Obj) -> tuple[int, int, list[str]] | None:
    """How many devices on the node `request`'s class and selectors select (allocation mode All),
    how many of those other claims hold, whole or in shares of its capacity, and (DRADeviceTaints)
    those left out for taints the request does not tolerate, each named with those taints; None
    when some match but they cannot all be taken at once (more than one claim may hold, or an
    incomplete pool). Taints are looked at apart: a tainted device would fail mode All."""
    blind = allocator
    if allocator.features.device_taints:
        blind = copy.copy(allocator)
        blind.features = dataclasses.replace(allocator.features, device_taints=False)
    results = _probe(blind, node, request, allocationMode="All")
    if results is None:
        return None if _probe(blind, node, request, allocationMode="ExactCount", count=1) else (0, 0, [])
    devices = [(r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in results]
    kept = _untolerated(allocator, node, request, devices) if blind is not allocator else {}
    usable = [d for d in devices if d not in kept]
    named = [f"{d[2]} ({', '.join(_taint(t) for t in taints)})" for d, taints in kept.items()]
    return len(usable), sum(1 for d in usable if d in allocator.allocated or d in allocator.consumed), named


def _untolerated(allocator: Allocator, node: Obj, request: Obj,
                 devices: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], list[Obj]]:
    """Of `devices`, those with a NoSchedule or NoExecute taint the request does not tolerate."""
    tolerations = request.get("tolerations") or []
    wanted = set(devices)
    out: dict[tuple[str, str, str], list[Obj]] = {}
    for slice_ in allocator.slices_for_node(node):
        spec = slice_.get("spec") or {}
        for device in spec.get("devices") or ():
            key = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""), device.get("name", ""))
            bad = [t for t in device.get("taints") or () if t.get("effect") in EFFECTIVE and not tolerated(t, tolerations)]
            if key in wanted and bad:
                out[key] = bad
    return dict(sorted(out.items(), key=lambda kv: devices.index(kv[0])))


def _taint(taint: Obj) -> str:
    """A taint as Kubernetes prints one: key=value:Effect (key:Effect without a value)."""
    value = taint.get("value") or ""
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"


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
    matching, held, tainted = counted
    taints = (f"; {len(tainted)} more match but have taints the request does not tolerate: {', '.join(tainted)}"
              if tainted else "")
    if not matching:
        return f"wants {wanted} of class {klass}; no device on this node matches{' otherwise' if tainted else ''}{taints}"
    return (f"wants {wanted} of class {klass}; {matching} on this node match, {held} of them held by other claims"
            f"{taints}")


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
