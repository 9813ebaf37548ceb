"""Eviction signals, thresholds met, pod ranking and the eviction message (pkg/kubelet/eviction/helpers.go).

Why the ranking is what it is: the kubelet must free the starved resource without punishing pods
that stay within what they asked for, so for memory and disk it first evicts pods using more than
they request, then lower priority first, then the larger excess over the request. Inodes and PIDs
cannot be requested: for inodes "exceeds its request" means "uses any" (and, as upstream does, the
excess is taken over the ephemeral-storage request); PIDs rank by priority, then the larger count.
Go's sort is not stable, so upstream breaks remaining ties arbitrarily; here the pods keep the
order they started in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from kubesched.api.quantity import canonical, parse_quantity, quantity_string
from kubesched.kubelet.config import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    SIGNALS,
    Threshold,
)
from kubesched.kubelet.usage import NodeResources, PodUsage

MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE = "MemoryPressure", "DiskPressure", "PIDPressure"
CONDITIONS = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)  # the order messages list them in
SIGNAL_CONDITION = {MEMORY_AVAILABLE: MEMORY_PRESSURE, ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
                    NODEFS_AVAILABLE: DISK_PRESSURE, NODEFS_INODES_FREE: DISK_PRESSURE,
                    IMAGEFS_AVAILABLE: DISK_PRESSURE, IMAGEFS_INODES_FREE: DISK_PRESSURE,
                    PID_AVAILABLE: PID_PRESSURE}
SIGNAL_RESOURCE = {MEMORY_AVAILABLE: "memory", ALLOCATABLE_MEMORY_AVAILABLE: "memory",
                   NODEFS_AVAILABLE: "ephemeral-storage", IMAGEFS_AVAILABLE: "ephemeral-storage",
                   NODEFS_INODES_FREE: "inodes", IMAGEFS_INODES_FREE: "inodes", PID_AVAILABLE: "pids"}
_SIGNAL_ORDER = {s: i for i, s in enumerate((MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE, *SIGNALS[1:]))}


@dataclass(slots=True)  # not frozen: made for every signal at every touch of a node, and three times cheaper
class Observation:
    available: int
    capacity: int


def observe(res: NodeResources, totals: Mapping[str, int]) -> dict[str, Observation]:
    """makeSignalObservations: each signal the node's numbers allow, as (available, capacity)."""
    sys = res.system
    obs: dict[str, Observation] = {}
    if res.memory_capacity is not None:
        used = sys["memory"] + totals["memory"]
        obs[MEMORY_AVAILABLE] = Observation(res.memory_capacity - used, res.memory_capacity)
    if res.pods_memory_limit is not None:
        obs[ALLOCATABLE_MEMORY_AVAILABLE] = Observation(res.pods_memory_limit - totals["memory"],
                                                         res.pods_memory_limit)
    shared = not res.dedicated_imagefs  # images and writable layers live on nodefs
    if res.nodefs_capacity is not None:
        used = sys["ephemeral-storage"] + totals["ephemeral-storage"]
        if shared:
            used += sys["images"] + totals["writable-layer"]
        obs[NODEFS_AVAILABLE] = Observation(res.nodefs_capacity - used, res.nodefs_capacity)
    if res.nodefs_inodes is not None:
        used = sys["inodes"] + totals["inodes"]
        if shared:
            used += sys["images-inodes"] + totals["writable-layer-inodes"]
        obs[NODEFS_INODES_FREE] = Observation(res.nodefs_inodes - used, res.nodefs_inodes)
    if shared:
        for imagefs, nodefs in ((IMAGEFS_AVAILABLE, NODEFS_AVAILABLE), (IMAGEFS_INODES_FREE, NODEFS_INODES_FREE)):
            if nodefs in obs:
                obs[imagefs] = obs[nodefs]
    else:
        assert res.imagefs_capacity is not None
        used = sys["images"] + totals["writable-layer"]
        obs[IMAGEFS_AVAILABLE] = Observation(res.imagefs_capacity - used, res.imagefs_capacity)
        if res.imagefs_inodes is not None:
            used = sys["images-inodes"] + totals["writable-layer-inodes"]
            obs[IMAGEFS_INODES_FREE] = Observation(res.imagefs_inodes - used, res.imagefs_inodes)
    obs[PID_AVAILABLE] = Observation(res.pid_max - sys["pids"] - totals["pids"], res.pid_max)
    return obs


def threshold_amount(t: Threshold, observed: Observation, min_reclaim: bool = False) -> int | Fraction:
    """The threshold's quantity for this capacity, plus the minimum reclaim if asked."""
    quantity = t.value.amount(observed.capacity)
    if min_reclaim and t.min_reclaim is not None:
        quantity += t.min_reclaim.amount(observed.capacity)
    return quantity


def thresholds_met(thresholds: Iterable[Threshold], obs: Mapping[str, Observation],
                   enforce_min_reclaim: bool) -> list[Threshold]:
    """The thresholds whose signal is below them (below them plus minimum reclaim, if enforced)."""
    return [t for t in thresholds
            if t.signal in obs and threshold_amount(t, obs[t.signal], enforce_min_reclaim) > obs[t.signal].available]


def by_eviction_priority(thresholds: Iterable[Threshold]) -> list[Threshold]:
    """Memory first (upstream's byEvictionPriority); the rest in signal order, hard before soft."""
    return sorted(thresholds, key=lambda t: (_SIGNAL_ORDER[t.signal], not t.hard, t.grace_period))


def conditions_of(thresholds: Iterable[Threshold]) -> set[str]:
    return {SIGNAL_CONDITION[t.signal] for t in thresholds}


# --- ranking -------------------------------------------------------------------------------------

def _disk_usage(signal: str, dedicated_imagefs: bool) -> Callable[[PodUsage], int]:
    """What a pod uses of the filesystem behind `signal` (buildSignalToRankFunc's fs stats)."""
    inodes = signal in (NODEFS_INODES_FREE, IMAGEFS_INODES_FREE)
    own, layer = ("inodes", "writable-layer-inodes") if inodes else ("ephemeral-storage", "writable-layer")
    if not dedicated_imagefs:
        return lambda p: p.total(own) + p.total(layer)
    if signal in (NODEFS_AVAILABLE, NODEFS_INODES_FREE):
        return lambda p: p.total(own)
    return lambda p: p.total(layer)


def rank(signal: str, pods: Iterable[PodUsage], dedicated_imagefs: bool) -> list[PodUsage]:
    """The pods in the order the kubelet evicts them to relieve `signal` (stable on ties)."""
    if signal == PID_AVAILABLE:
        return sorted(pods, key=lambda p: (p.priority, -p.total("pids")))
    if signal in (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE):
        def key(p: PodUsage) -> tuple[bool, int, int]:
            used, request = p.total("memory"), p.requests.get("memory", 0)
            return used <= request, p.priority, request - used
        return sorted(pods, key=key)
    usage = _disk_usage(signal, dedicated_imagefs)
    inodes = signal in (NODEFS_INODES_FREE, IMAGEFS_INODES_FREE)

    def disk_key(p: PodUsage) -> tuple[bool, int, int]:
        used, storage = usage(p), p.requests.get("ephemeral-storage", 0)
        return used <= (0 if inodes else storage), p.priority, storage - used
    return sorted(pods, key=disk_key)


# --- messages ------------------------------------------------------------------------------------

def _threshold_string(t: Threshold, observed: Observation) -> str:
    if t.value.quantity is not None:
        return quantity_string(t.value.text)
    return canonical(t.value.amount(observed.capacity), "DecimalSI" if SIGNAL_RESOURCE[t.signal] in (
        "inodes", "pids") else "BinarySI")


def eviction_message(t: Threshold, observed: Observation, pod: PodUsage) -> str:
    """evictionMessage: the starved resource, the threshold and what is left, and the containers
    using more than they request of it (memory and ephemeral-storage only)."""
    resource = SIGNAL_RESOURCE[t.signal]
    fmt = "DecimalSI" if resource in ("inodes", "pids") else "BinarySI"
    message = (f"The node was low on resource: {resource}. Threshold quantity: {_threshold_string(t, observed)}, "
               f"available: {canonical(observed.available, fmt)}. ")
    if resource not in ("memory", "ephemeral-storage"):
        return message
    for c in pod.containers:
        used = c.usage.get("memory", 0) if resource == "memory" else \
            c.usage.get("ephemeral-storage", 0) + c.usage.get("writable-layer", 0)
        request = c.requests.get(resource)
        if used > (0 if request is None else parse_quantity(request)):
            shown = "0" if request is None else quantity_string(str(request))
            message += f"Container {c.name} was using {canonical(used)}, request is {shown}, " \
                       f"has larger consumption of {resource}. "
    return message


def summary(t: Threshold, observed: Observation) -> dict[str, str | bool]:
    """The signal, the threshold and what was observed, for the results' Disruptions section."""
    fmt = "DecimalSI" if SIGNAL_RESOURCE[t.signal] in ("inodes", "pids") else "BinarySI"
    return {"signal": t.signal, "threshold": _threshold_string(t, observed),
            "available": canonical(observed.available, fmt), "hard": t.hard}


def storage_limit_message(pod: PodUsage, dedicated_imagefs: bool) -> str | None:
    """localStorageEviction's message for a pod over its ephemeral-storage limits, if it is: the
    containers' limits summed against the pod's whole usage, then each container's own limit
    against its logs (and writable layer, without a dedicated imagefs)."""
    limits = [str(c.limits["ephemeral-storage"]) for c in pod.containers if "ephemeral-storage" in c.limits]
    if not limits:
        return None
    total = sum(parse_quantity(raw) for raw in limits)
    if pod.total("ephemeral-storage") + pod.total("writable-layer") > total:
        fmt = "BinarySI" if limits[0].endswith("i") else "DecimalSI"
        return f"Pod ephemeral local storage usage exceeds the total limit of containers {canonical(total, fmt)}. "
    for c in pod.containers:
        raw = c.limits.get("ephemeral-storage")
        used = c.usage.get("ephemeral-storage", 0) + (0 if dedicated_imagefs else c.usage.get("writable-layer", 0))
        if raw is not None and parse_quantity(raw) != 0 and used > parse_quantity(raw):
            return f'Container {c.name} exceeded its local ephemeral storage limit "{quantity_string(str(raw))}". '
    return None
