"""The scheduler's typed views of pods and nodes, built once per object version.

Plugins never re-parse the JSON: requests are integers (cpu in millicores), selectors are
compiled, and per-node totals live both here and in the cache's arrays so that the fast
path can filter and score many nodes at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kubesched.api.objects import Obj
from kubesched.api.quantity import resource_amount
from kubesched.api.resources import incoming_pod_non_zero_requests, pod_requests, pod_requests_and_non_zero
from kubesched.api.selectors import PreferredSchedulingTerms, RequiredNodeAffinity, SelectorError

CPU, MEMORY, EPHEMERAL, PODS = "cpu", "memory", "ephemeral-storage", "pods"
DEFAULT_MAX_PODS = 110  # kubelet --max-pods default, used when a node does not report pods


class Code(IntEnum):
    """Status codes of the scheduling framework (framework/interface.go)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


# The codes hot paths compare against, as module globals: Python 3.11 reads a member off its
# enum class about twenty times slower than a global, which adds up over every plugin call.
SUCCESS_CODE, SKIP_CODE = Code.SUCCESS, Code.SKIP
UNSCHEDULABLE_CODE, UNRESOLVABLE_CODE = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
_REJECTED = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)


@dataclass(slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code == SUCCESS_CODE

    @property
    def rejected(self) -> bool:
        return self.code in _REJECTED

    def message(self) -> str:
        return ", ".join(self.reasons)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
    return Status(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


@dataclass(slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


@dataclass(eq=False)
class PodInfo:
    obj: Obj
    namespace: str
    name: str
    uid: str
    priority: int
    preemption_policy: str
    scheduler_name: str
    node_name: str
    labels: dict[str, str]
    requests: dict[str, int]
    nonzero_cpu: int  # what the pod adds to its node's non-zero totals
    nonzero_memory: int
    # The pod's own requests as NodeResourcesFit's scorer sees them while it is being placed:
    # cpu/memory with the non-zero defaults, and never pod-level requests (resources.py says why).
    score_cpu: int
    score_memory: int
    score_requests: dict[str, int]  # every resource; `requests` itself unless pod-level ones are set
    tolerations: list[Obj]
    host_ports: list[HostPort]
    required_affinity: RequiredNodeAffinity | None
    preferred_affinity: PreferredSchedulingTerms | None
    images: list[str]
    terminating: bool
    extra: dict[str, Any] = field(default_factory=dict)  # per-plugin precomputed data
    # NodeInfo keeps such pods apart so InterPodAffinity visits only them (podWithAffinity,
    # podWithRequiredAntiAffinity in framework/types.go).
    has_pod_affinity: bool = False  # spec.affinity.podAffinity or .podAntiAffinity is set
    has_required_anti_affinity: bool = False  # ...podAntiAffinity.requiredDuringScheduling... not empty
    # The claims its `persistentVolumeClaim` volumes name: NodeInfo.PVCRefCounts counts these.
    claims: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, pod: Obj) -> PodInfo:
        meta, spec = pod["metadata"], pod.get("spec", {})
        pod_affinity = spec.get("affinity") or {}
        extra: dict[str, Any] = {}
        preferred_terms = None
        preferred = (pod_affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") \
            if pod_affinity else None
        if preferred:
            try:
                preferred_terms = PreferredSchedulingTerms.compile(preferred)
            except SelectorError as e:
                extra["preferred_affinity_error"] = str(e)  # NodeAffinity's PreScore reports it
        required = RequiredNodeAffinity.from_pod(spec)
        init = spec.get("initContainers") or []
        regular = spec.get("containers") or []
        # Host ports stay taken only by containers that keep running: sidecars and regular ones.
        running = [c for c in init if c.get("restartPolicy") == "Always"] + regular if init else regular
        ports = [
            HostPort(p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", p["hostPort"])
            for c in running if "ports" in c
            for p in c["ports"] or ()
            if p.get("hostPort")
        ]
        anti = pod_affinity.get("podAntiAffinity")
        requests, nz_cpu, nz_mem = pod_requests_and_non_zero(spec)
        # The scorer's view and the node totals' differ only through pod-level requests.
        score_cpu, score_mem, score_requests = nz_cpu, nz_mem, requests
        if spec.get("resources") is not None:
            score_cpu, score_mem = incoming_pod_non_zero_requests(spec)
            score_requests = pod_requests(spec, pod_level=False)
        return cls(
            obj=pod,
            namespace=meta.get("namespace", "default"),
            name=meta["name"],
            uid=meta.get("uid", ""),
            priority=spec.get("priority") or 0,
            preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
            scheduler_name=spec.get("schedulerName") or "default-scheduler",
            node_name=spec.get("nodeName") or "",
            labels=meta.get("labels") or {},
            requests=requests,
            nonzero_cpu=nz_cpu,
            nonzero_memory=nz_mem,
            score_cpu=score_cpu,
            score_memory=score_mem,
            score_requests=score_requests,
            tolerations=spec.get("tolerations") or [],
            host_ports=ports,
            required_affinity=required,
            preferred_affinity=preferred_terms,
            images=[c["image"] for group in (init, regular) for c in group if c.get("image")],
            terminating=bool(meta.get("deletionTimestamp")),
            has_pod_affinity=pod_affinity.get("podAffinity") is not None or anti is not None,
            has_required_anti_affinity=bool((anti or {}).get("requiredDuringSchedulingIgnoredDuringExecution")),
            claims=tuple(v["persistentVolumeClaim"].get("claimName") or "" for v in spec.get("volumes") or ()
                         if v.get("persistentVolumeClaim") is not None),
        )


def node_allocatable(node: Obj) -> dict[str, int]:
    """status.allocatable (falling back to capacity), parsed; pods defaults to the kubelet's 110."""
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    alloc = {name: resource_amount(name, v) for name, v in raw.items()}
    alloc.setdefault(PODS, DEFAULT_MAX_PODS)
    return alloc


@dataclass(eq=False)
class NodeInfo:
    """A node plus the pods the scheduler has assigned to it (bound, assumed, or terminating)."""

    obj: Obj
    name: str
    slot: int
    labels: dict[str, str]
    taints: list[Obj]
    unschedulable: bool
    allocatable: dict[str, int]
    images: dict[str, int]  # image name as reported -> size in bytes (the first report of a name)
    # (size, number of nodes) of each image as the cache's snapshot last saw it (ImageStates).
    image_states: dict[str, tuple[int, int]] = field(default_factory=dict)
    pods: dict[str, PodInfo] = field(default_factory=dict)  # by uid
    requested: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    # (protocol, port) -> {host IP: number of pods using it}
    used_ports: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    pods_with_affinity: dict[str, PodInfo] = field(default_factory=dict)  # by uid, subset of `pods`
    pods_with_required_anti_affinity: dict[str, PodInfo] = field(default_factory=dict)

    @classmethod
    def of(cls, node: Obj, slot: int) -> NodeInfo:
        spec, status = node.get("spec") or {}, node.get("status") or {}
        images: dict[str, int] = {}
        for image in status.get("images") or ():
            for name in image.get("names") or ():
                images.setdefault(name, int(image.get("sizeBytes") or 0))  # only pods' names are normalised
        return cls(
            obj=node,
            name=node["metadata"]["name"],
            slot=slot,
            labels=node["metadata"].get("labels") or {},
            taints=spec.get("taints") or [],
            unschedulable=bool(spec.get("unschedulable")),
            allocatable=node_allocatable(node),
            images=images,
        )

    def clone(self) -> NodeInfo:
        """A copy whose pods can be added or removed for a what-if (NodeInfo.Snapshot): the
        per-pod collections are copied, the node's own data and the PodInfos are shared."""
        return NodeInfo(self.obj, self.name, self.slot, self.labels, self.taints, self.unschedulable,
                        self.allocatable, self.images, self.image_states, dict(self.pods), dict(self.requested), self.nonzero_cpu,
                        self.nonzero_memory, {k: dict(v) for k, v in self.used_ports.items()},
                        dict(self.pods_with_affinity), dict(self.pods_with_required_anti_affinity))

    def add_pod(self, pod: PodInfo, sign: int = 1) -> None:
        """Account for a pod (sign=1) or remove it (sign=-1)."""
        if sign > 0:
            self.pods[pod.uid] = pod
        else:
            self.pods.pop(pod.uid, None)
        if pod.has_pod_affinity:
            if sign > 0:
                self.pods_with_affinity[pod.uid] = pod
                if pod.has_required_anti_affinity:
                    self.pods_with_required_anti_affinity[pod.uid] = pod
            else:
                self.pods_with_affinity.pop(pod.uid, None)
                self.pods_with_required_anti_affinity.pop(pod.uid, None)
        req = self.requested
        for name, amount in pod.requests.items():
            req[name] = req.get(name, 0) + sign * amount
        self.nonzero_cpu += sign * pod.nonzero_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        for hp in pod.host_ports:
            ips = self.used_ports.setdefault((hp.protocol, hp.port), {})
            ips[hp.ip] = ips.get(hp.ip, 0) + sign
            if ips[hp.ip] <= 0:
                del ips[hp.ip]
                if not ips:
                    del self.used_ports[(hp.protocol, hp.port)]
