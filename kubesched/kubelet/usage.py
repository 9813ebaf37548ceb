"""Simulated resource usage: what running pods and the node itself consume, and what the node has.

No containers run, so the eviction signals (node capacity minus what is used) are computed from
these numbers. Everything is an annotation or a `usage` scenario event, so a user states only what
matters to the what-if question and everything else stays quiet.

Pod usage, per key: the annotation ``sim.kubesched.io/usage-<key>`` (the pod's total from its start)
or a ``usage`` event (the pod's total, or one container's with ``container:``). Keys:

* ``memory`` - working set bytes (default: the requests);
* ``cpu`` - accepted for completeness, no signal reads it (default: the requests);
* ``ephemeral-storage`` - bytes of logs and local volumes on nodefs (default: the requests);
* ``inodes`` - inodes those use on nodefs (default 0);
* ``pids`` - processes (default 0);
* ``writable-layer`` / ``writable-layer-inodes`` - the containers' writable layers (default 0): on
  the imagefs when the node has a dedicated one, else on nodefs like everything else.

A pod total is spread over the pod's running containers (regular ones and sidecars) in proportion
to their requests of that resource (evenly when none requests it); the remainder of the division
goes to the largest requester. Usage counts from when the pod starts until it stops running.

Node annotations (a Node object carries no usage and only some capacities):

* ``sim.kubesched.io/inodes`` - nodefs inodes (absent: nodefs.inodesFree is not observed);
* ``sim.kubesched.io/imagefs-capacity`` / ``sim.kubesched.io/imagefs-inodes`` - a dedicated image
  filesystem; without one the imagefs signals read nodefs, as on a single-filesystem node;
* ``sim.kubesched.io/pid-max`` - kernel pid_max (default 4194304, systemd's setting on 64-bit hosts);
* ``sim.kubesched.io/system-usage-<key>`` - what system daemons, the kernel and stored images use,
  for keys ``memory``, ``ephemeral-storage``, ``inodes``, ``pids``, ``images``, ``images-inodes``
  (default 0; images are on the imagefs).

Capacities: a real kubelet derives allocatable as capacity minus reservations minus the hard
eviction threshold (memory.available, nodefs.available), so its capacity is larger than
allocatable. A Node that gives only ``status.allocatable``, or a capacity no larger than it (KWOK
and kube-scheduler-simulator nodes report capacity = allocatable), reserved nothing: it is taken to
have allocatable plus the hard threshold, so pods using up to allocatable are not under pressure
and a snapshot of a healthy cluster stays healthy. A capacity above allocatable is the node's own.
The pods' cgroup (kubepods) is limited to allocatable plus the hard memory threshold, the node to
its capacity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.objects import Obj
from kubesched.api.qos import qos_class
from kubesched.api.quantity import QuantityError, resource_amount
from kubesched.api.resources import effective_container_requests, pod_requests
from kubesched.kubelet.config import (
    IMAGEFS_AVAILABLE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    EvictionConfig,
    ThresholdValue,
)

USAGE_KEYS = ("cpu", "memory", "ephemeral-storage", "inodes", "pids", "writable-layer", "writable-layer-inodes")
REQUESTED_KEYS = ("cpu", "memory", "ephemeral-storage")  # the keys that default to the requests
_REQUESTED = frozenset(REQUESTED_KEYS)
METRICS_KEYS = ("cpu", "memory")  # what metrics-server reports
POD_USAGE_PREFIX = "sim.kubesched.io/usage-"
NODE_INODES = "sim.kubesched.io/inodes"
NODE_PID_MAX = "sim.kubesched.io/pid-max"
IMAGEFS_CAPACITY = "sim.kubesched.io/imagefs-capacity"
IMAGEFS_INODES = "sim.kubesched.io/imagefs-inodes"
SYSTEM_USAGE_PREFIX = "sim.kubesched.io/system-usage-"
SYSTEM_KEYS = ("memory", "ephemeral-storage", "inodes", "pids", "images", "images-inodes")
DEFAULT_PID_MAX = 4194304
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # scheduling.SystemCriticalPriority
_USAGE_ANNOTATIONS = tuple((key, POD_USAGE_PREFIX + key) for key in USAGE_KEYS)


def usage_annotations(pod: Obj) -> dict[str, str]:
    """The pod's usage annotations by key: read for every pod that starts, most of which have
    none (or no annotations at all), so the annotation names are not built again each time."""
    annotations = pod["metadata"].get("annotations")
    if not annotations:
        return {}
    return {key: annotations[name] for key, name in _USAGE_ANNOTATIONS if name in annotations}


def amount(key: str, raw: Any) -> int:
    """An integer amount: millicores for cpu, else Quantity.Value(). Raises QuantityError."""
    return resource_amount("cpu" if key == "cpu" else "count", raw)


def _annotation(annotations: Mapping[str, str], key: str) -> int | None:
    """A numeric annotation; an unreadable one counts as absent (input validation reports it)."""
    raw = annotations.get(key)
    if raw is None:
        return None
    try:
        value = amount("count", raw)
    except QuantityError:
        return None
    return value if value >= 0 else None


@dataclass(slots=True)
class ContainerUsage:
    name: str
    requests: Mapping[str, Any]  # as written (after limit defaulting), for eviction messages
    limits: Mapping[str, Any]
    request_amounts: dict[str, int]
    memory_limit: int | None
    sidecar: bool = False  # a restartable init container
    terminated: bool = False  # ended for good (OOM-killed under restartPolicy Never)
    usage: dict[str, int] = field(default_factory=dict)  # shares request_amounts until first changed

    def put(self, key: str, value: int) -> None:
        if self.usage is self.request_amounts:
            self.usage = dict(self.request_amounts)
        self.usage[key] = value


@dataclass(slots=True)
class PodUsage:
    """A running pod as the kubelet's eviction manager and the OOM killer see it.

    Its per-container figures are built only when something needs them (a usage change, a
    ranking, the OOM killer); until then the pod uses its requests, kept as one small total, so a
    5,000-node cluster's pods cost little to account."""

    uid: str
    namespace: str
    name: str
    node: str
    seq: int  # start order: ties in ranking keep it, the OOM killer prefers the newest
    priority: int
    priority_class: str
    restart_policy: str
    termination_grace_period: int
    requests: dict[str, int]  # the pod's requests (memory, ephemeral-storage) as the scheduler counts them
    pod: Obj = field(repr=False)  # the pod as it started
    base: dict[str, int] | None = None  # the totals while the containers are not built
    _containers: list[ContainerUsage] | None = field(default=None, repr=False)
    _qos: str | None = field(default=None, repr=False)

    @property
    def containers(self) -> list[ContainerUsage]:
        if self._containers is None:
            self._containers = _containers_of(self.pod.get("spec") or {})
            self.base = None
        return self._containers

    @property
    def qos(self) -> str:
        if self._qos is None:
            self._qos = qos_class(self.pod)
        return self._qos

    @property
    def critical(self) -> bool:
        """kubelettypes.IsCriticalPod: the kubelet neither refuses nor evicts these."""
        return self.priority >= SYSTEM_CRITICAL_PRIORITY

    @property
    def pod_memory_request(self) -> int | None:
        """spec.resources.requests.memory (pod-level resources; a limit alone is the request)."""
        level = (self.pod.get("spec") or {}).get("resources") or {}
        raw = (level.get("requests") or {}).get("memory", (level.get("limits") or {}).get("memory"))
        return None if raw is None else amount("memory", raw)

    @property
    def pod_memory_limit(self) -> int | None:
        raw = (((self.pod.get("spec") or {}).get("resources") or {}).get("limits") or {}).get("memory")
        return None if raw is None else amount("memory", raw)

    def total(self, key: str) -> int:
        if self.base is not None:
            return self.base.get(key, 0)
        return sum(c.usage.get(key, 0) for c in self.containers)

    def totals(self) -> Iterable[tuple[str, int]]:
        """(key, amount) pairs that add up to the pod's usage."""
        if self.base is not None:
            return self.base.items()
        return ((key, value) for c in self.containers for key, value in c.usage.items())

    def container(self, name: str) -> ContainerUsage | None:
        return next((c for c in self.containers if c.name == name), None)

    def set_pod_total(self, key: str, total: int) -> None:
        _spread(self.containers, key, total)


def _spread(containers: list[ContainerUsage], key: str, total: int) -> None:
    """Spread a pod-level amount over the running containers in proportion to their requests."""
    running = [c for c in containers if not c.terminated]
    if not running:
        return
    weights = [c.request_amounts.get(key, 0) for c in running]
    whole = sum(weights)
    parts = [total * w // whole for w in weights] if whole else [total // len(weights)] * len(weights)
    parts[weights.index(max(weights))] += total - sum(parts)
    for c, part in zip(running, parts, strict=True):
        c.put(key, part)


def _running_containers(spec: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], bool]]:
    """(container, is a sidecar) for every container that runs alongside the others."""
    sidecars = [(c, True) for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    return [*((c, False) for c in spec.get("containers") or ()), *sidecars]


def _request_amounts(container: Mapping[str, Any]) -> dict[str, int]:
    return {k: amount(k, v) for k, v in effective_container_requests(container).items() if k in REQUESTED_KEYS}


def _containers_of(spec: Mapping[str, Any]) -> list[ContainerUsage]:
    """Every running container at its defaults (its requests), pod-level requests spread over them."""
    containers = []
    for c, sidecar in _running_containers(spec):
        limits = (c.get("resources") or {}).get("limits") or {}
        wanted = _request_amounts(c)
        containers.append(ContainerUsage(c.get("name", ""), effective_container_requests(c), limits, wanted,
                                         amount("memory", limits["memory"]) if "memory" in limits else None,
                                         sidecar, usage=wanted))
    if not containers:  # a pod always has a container; keep the record usable if a spec has none
        containers.append(ContainerUsage("", {}, {}, {}, None))
    level = spec.get("resources") or {}
    level_requests = {**(level.get("limits") or {}), **(level.get("requests") or {})}
    for key in REQUESTED_KEYS:
        if key in level_requests:
            _spread(containers, key, amount(key, level_requests[key]))
    return containers


def pod_usage(pod: Obj, node: str, seq: int, requests: dict[str, int] | None = None) -> PodUsage:
    """A starting pod's usage record: what it requests (0 for what cannot be requested), then
    its usage annotations. `requests` are the pod's requests if the caller has them already."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    pu = PodUsage(meta.get("uid", ""), meta.get("namespace", "default"), meta["name"], node, seq,
                  int(spec.get("priority") or 0), spec.get("priorityClassName") or "",
                  spec.get("restartPolicy") or "Always", int(spec.get("terminationGracePeriodSeconds", 30)),
                  pod_requests(spec) if requests is None else requests, pod)
    usage = usage_annotations(pod)
    if not usage and not spec.get("resources"):
        containers = spec.get("containers") or ()
        if requests is not None and len(containers) == 1 and not spec.get("initContainers") \
                and not spec.get("overhead"):
            # One container and nothing beside it: its requests are the pod's (most pods).
            pu.base = requests if requests.keys() <= _REQUESTED else \
                {key: requests[key] for key in REQUESTED_KEYS if key in requests}
            return pu
        base: dict[str, int] = {}
        for c, _ in _running_containers(spec):
            for key, value in _request_amounts(c).items():
                base[key] = base.get(key, 0) + value
        pu.base = base
        return pu
    for key, raw in usage.items():
        try:
            value = amount(key, raw)
        except QuantityError:
            continue
        pu.set_pod_total(key, max(value, 0))
    return pu


class UsageTracker:
    """Usage of every running pod, with per-node totals kept current so a signal costs O(1)."""

    def __init__(self) -> None:
        self.pods: dict[str, PodUsage] = {}
        self.by_node: dict[str, dict[str, PodUsage]] = {}  # node -> uid -> usage, in start order
        self.totals: dict[str, dict[str, int]] = {}
        self._seq = 0

    def add(self, pod: Obj, node: str, requests: dict[str, int] | None = None) -> PodUsage:
        self._seq += 1
        pu = pod_usage(pod, node, self._seq, requests)
        self.pods[pu.uid] = pu
        self.by_node.setdefault(node, {})[pu.uid] = pu
        self._account(pu, 1)
        return pu

    def remove(self, uid: str) -> PodUsage | None:
        pu = self.pods.pop(uid, None)
        if pu is not None:
            self._account(pu, -1)
            del self.by_node[pu.node][uid]
        return pu

    def update(self, pu: PodUsage, amounts: Mapping[str, int], container: ContainerUsage | None) -> None:
        """New amounts for the pod (spread) or one of its containers; node totals follow."""
        self._account(pu, -1)
        for key, value in amounts.items():
            if container is None:
                pu.set_pod_total(key, value)
            else:
                container.put(key, value)
        self._account(pu, 1)

    def container_metrics(self, pu: PodUsage) -> dict[str, dict[str, int]]:
        """What metrics-server reports of a running pod: each running container's cpu
        (millicores) and memory (bytes). `kubectl top` and the HPA controller read these."""
        return {c.name: {key: c.usage.get(key, 0) for key in METRICS_KEYS} for c in pu.containers if not c.terminated}

    def metrics_of(self, pods: Iterable[Obj]) -> dict[str, dict[str, dict[str, int]]]:
        """container_metrics of those of `pods` that run, by uid."""
        found = (self.pods.get((pod.get("metadata") or {}).get("uid", "")) for pod in pods)
        return {pu.uid: self.container_metrics(pu) for pu in found if pu is not None}

    def node_totals(self, node: str) -> dict[str, int]:
        return self.totals.get(node) or dict.fromkeys(USAGE_KEYS, 0)

    def on_node(self, node: str) -> Iterable[PodUsage]:
        return (self.by_node.get(node) or {}).values()

    def _account(self, pu: PodUsage, sign: int) -> None:
        totals = self.totals.get(pu.node)
        if totals is None:
            totals = self.totals[pu.node] = dict.fromkeys(USAGE_KEYS, 0)
        for key, value in pu.totals():
            totals[key] += sign * value


def _derived_capacity(allocatable: int, thresholds: Iterable[ThresholdValue | None]) -> int:
    """The least capacity C with C - threshold(C) >= allocatable for every threshold: allocatable
    plus the largest hard threshold measured on that resource."""
    return max((_above(allocatable, t) for t in thresholds), default=allocatable)


def _above(allocatable: int, threshold: ThresholdValue | None) -> int:
    if threshold is None:
        return allocatable
    if threshold.quantity is not None:
        return allocatable + math.ceil(threshold.quantity)
    capacity = math.ceil(allocatable / (1 - threshold.percentage)) if threshold.percentage < 1 else allocatable
    while capacity - threshold.amount(capacity) < allocatable:
        capacity += 1
    return capacity


_NODE_ANNOTATIONS = (NODE_INODES, NODE_PID_MAX, IMAGEFS_CAPACITY, IMAGEFS_INODES,
                     *(SYSTEM_USAGE_PREFIX + key for key in SYSTEM_KEYS))


def node_figures(node: Obj) -> tuple[Any, ...]:
    """Everything `NodeResources.of` reads of a node, as they are written: nodes alike in these
    (a fleet of one machine type) have alike resources, worked out once for all of them."""
    status = node.get("status") or {}
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    annotations = node["metadata"].get("annotations")
    return (capacity.get("memory"), capacity.get("ephemeral-storage"), allocatable.get("memory"),
            allocatable.get("ephemeral-storage"),
            tuple(annotations.get(key) for key in _NODE_ANNOTATIONS) if annotations else None)


@dataclass(frozen=True)
class NodeResources:
    """What a node has and what its system (not its pods) uses, for the eviction signals."""

    memory_capacity: int | None
    pods_memory_limit: int | None  # the kubepods cgroup
    nodefs_capacity: int | None
    nodefs_inodes: int | None
    imagefs_capacity: int | None  # None: no dedicated imagefs
    imagefs_inodes: int | None
    pid_max: int
    system: Mapping[str, int]

    @property
    def dedicated_imagefs(self) -> bool:
        return self.imagefs_capacity is not None

    @classmethod
    def of(cls, node: Obj, config: EvictionConfig) -> NodeResources:
        status = node.get("status") or {}
        capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
        annotations = node["metadata"].get("annotations") or {}

        def read(raw: Mapping[str, Any], key: str) -> int | None:
            try:
                return amount(key, raw[key]) if key in raw else None
            except QuantityError:
                return None

        def size(key: str, *signals: str) -> tuple[int | None, int | None]:
            """(capacity, allocatable) of memory or ephemeral-storage."""
            cap, alloc = read(capacity, key), read(allocatable, key)
            if alloc is not None and (cap is None or cap <= alloc):
                cap = _derived_capacity(alloc, map(config.hard_value, signals))
            return cap, alloc

        memory, memory_alloc = size("memory", MEMORY_AVAILABLE)
        pods_limit = memory
        hard_memory = config.hard_value(MEMORY_AVAILABLE)
        if memory is not None and memory_alloc is not None:
            reserve = 0 if hard_memory is None else int(hard_memory.amount(memory))
            pods_limit = min(memory_alloc + reserve, memory)
        system = {key: _annotation(annotations, SYSTEM_USAGE_PREFIX + key) or 0 for key in SYSTEM_KEYS}
        pid_max = _annotation(annotations, NODE_PID_MAX)
        imagefs = _annotation(annotations, IMAGEFS_CAPACITY)
        # Without a dedicated imagefs the kubelet reads imagefs.available off nodefs too, so its
        # (larger, by default) threshold is the one the reserve must stay clear of.
        nodefs_signals = (NODEFS_AVAILABLE,) if imagefs is not None else (NODEFS_AVAILABLE, IMAGEFS_AVAILABLE)
        return cls(memory, pods_limit, size("ephemeral-storage", *nodefs_signals)[0],
                   _annotation(annotations, NODE_INODES), imagefs,
                   _annotation(annotations, IMAGEFS_INODES), DEFAULT_PID_MAX if pid_max is None else pid_max,
                   system)
