"""The Cluster: one store, one API server, and the components, on one clock.

It also keeps what a run reports: every pod that ever existed with its fate, the Events the
components recorded, and the objects the API refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubesched.api.duration import format_duration
from kubesched.api.kinds import SIMULATED
from kubesched.api.objects import (
    DEFAULT_EPOCH,
    Obj,
    controller_of,
    get_condition,
    is_terminating,
    namespaced,
    ref,
)
from kubesched.api.quantity import format_amount
from kubesched.api.resources import pod_requests
from kubesched.apiserver.admission import SYSTEM_PRIORITY_CLASSES
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.cronjob import CronJobController
from kubesched.controllers.daemonset import DaemonSetController
from kubesched.controllers.deployment import DeploymentController
from kubesched.controllers.disruption import DisruptionController
from kubesched.controllers.ephemeral import EphemeralVolumeController
from kubesched.controllers.garbagecollector import GarbageCollector
from kubesched.controllers.job import JobController
from kubesched.controllers.nodelifecycle import NodeLifecycleController
from kubesched.controllers.persistentvolume import PersistentVolumeController
from kubesched.controllers.podgc import PodGCController
from kubesched.controllers.replicaset import ReplicaSetController, ReplicationControllerController
from kubesched.controllers.resourcequota import ResourceQuotaController
from kubesched.controllers.statefulset import StatefulSetController, parent_and_ordinal
from kubesched.controllers.tainteviction import TaintEvictionController
from kubesched.controllers.ttlafterfinished import TTLAfterFinishedController
from kubesched.descheduler.descheduler import Descheduler
from kubesched.descheduler.framework import REQUESTER as DESCHEDULER
from kubesched.descheduler.policy import Policy
from kubesched.kubectl.drain import Drainer, DrainOptions
from kubesched.kubelet.agent import Kubelets
from kubesched.runtime.clock import VirtualClock
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.record import DecisionRecord
from kubesched.scheduler.scheduler import Scheduler
from kubesched.scheduler.types import node_allocatable
from kubesched.store.base import ADDED, DELETED, Store, WatchEvent
from kubesched.store.memory import MemoryStore

LOOP_REPEATS = 10  # a removal repeated this many times through replacements is a loop

# DisruptionTarget condition reasons -> the removal reason results report.
REMOVAL_REASONS = {
    "PreemptionByScheduler": "Preempted",
    "EvictionByEvictionAPI": "EvictionAPI",
    "TerminationByKubelet": "Evicted",
    "DeletionByTaintManager": "TaintManagerEviction",
    "DeletionByPodGC": "NodeLost",
}


def running_since_created(pod: Obj, now: str) -> Obj:
    """A bound pod whose status is not in the input has been running since its creation (at
    `now` if it has no creationTimestamp): phase Running, startTime and the conditions its kubelet
    would have reported (a Running pod exported without conditions gets them too: they are the
    kubelet's to write). Preemption ranks victims by that startTime; budgets count Ready pods."""
    status = pod.get("status") or {}
    if status.get("phase") not in (None, "", "Running"):
        return pod
    started = status.get("startTime") or (pod.get("metadata") or {}).get("creationTimestamp") or now
    conditions = status.get("conditions") or [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
        for t in ("PodScheduled", "Initialized", "Ready", "ContainersReady")]
    return {**pod, "status": {**status, "phase": "Running", "startTime": started, "conditions": conditions}}


@dataclass
class PodHistory:
    """The last known state of a pod, kept after it is deleted."""

    obj: Obj
    deleted: bool = False
    deleted_at: float | None = None
    reason: str | None = None


@dataclass
class Disruption:
    """A running (or bound) pod's removal: when it began, why, and what replaced it."""

    time: float
    pod: str  # namespace/name
    uid: str
    node: str | None
    cause: str  # Preempted, Evicted, TaintManagerEviction, EvictionAPI, Drained, Descheduled, Deleted, or a failure reason
    detail: str
    owner_uid: str | None = None
    replacement: str | None = None
    scaled_down: bool = False
    repeats: int = 1  # how many removals in a row, this one included, each of the previous one's replacement
    # Why nothing will replace it although a controller owns it: "ReplicaSet/web-1 is not in the cluster".
    unowned: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"time": self.time, "pod": self.pod, "node": self.node, "cause": self.cause,
               "detail": self.detail, "replacement": self.replacement}
        if self.unowned:
            out["notReplaced"] = self.unowned
        return out


@dataclass
class Rejection:
    time: float
    object: str
    message: str
    code: int = 403


@dataclass
class ClusterEvent:
    time: float
    type: str
    reason: str
    object: str
    message: str


@dataclass
class Cluster:
    seed: int = 0
    scheduler_config: SchedulerConfig | None = None
    # More scheduler instances, each with its own cache and queue (other schedulerNames).
    other_scheduler_configs: list[SchedulerConfig] = field(default_factory=list)
    explain: set[str] | None = None
    kubelet_config: Obj | None = None  # KubeletConfiguration for every simulated node
    descheduler_policy: Policy | None = None  # runs the descheduler when given
    epoch: datetime = DEFAULT_EPOCH
    clock: VirtualClock = field(default_factory=VirtualClock)
    # A server's store (SQLite) outlives the Cluster; simulate's is in memory.
    store: Store = field(default_factory=MemoryStore)
    # False (serve): UIDs and generated names from the system's randomness, not from `seed`.
    reproducible_ids: bool = True
    pods: dict[str, PodHistory] = field(default_factory=dict)  # by uid, in creation order
    events: list[ClusterEvent] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    disruptions: list[Disruption] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the run noticed was off (a loop, a snapshot pod)
    # Stop a run that goes round in circles (set when no end time was asked for).
    stop_on_loop: bool = True

    def __post_init__(self) -> None:
        self._replacing: dict[str, Disruption] = {}  # replacement pod uid -> the removal it replaced
        self.api = APIServer(self.store, self.clock.now, self.seed if self.reproducible_ids else None,
                             self.epoch)
        self.store.watch(self._track_pod, {"Pod"})
        self.store.watch(self._track_event, {"Event"})
        # Controllers watch before the schedulers do, so a budget's status or a replacement pod
        # is settled before a scheduling cycle at the same instant reads it; the quota controller
        # before the workload controllers, so quota a pod frees is recounted before its owner retries.
        self.controllers = [DisruptionController(self.api, self.clock, warn=self.warnings.append)]
        self.controllers += [cls(self.api, self.clock) for cls in (
            ResourceQuotaController, DeploymentController, ReplicaSetController, ReplicationControllerController,
            StatefulSetController, DaemonSetController, CronJobController, JobController, TTLAfterFinishedController, GarbageCollector,
            NodeLifecycleController, TaintEvictionController, PodGCController, PersistentVolumeController,
            EphemeralVolumeController)]
        for controller in self.controllers:
            controller.start()
        self.schedulers = [Scheduler(self.api, self.clock, cfg, self.seed, self.explain)
                           for cfg in [self.scheduler_config, *self.other_scheduler_configs]]
        self.scheduler = self.schedulers[0]
        self.kubelets = Kubelets(self.api, self.clock, self.kubelet_config)
        self.drainer = Drainer(self.api, self.clock)
        for scheduler in self.schedulers:
            scheduler.start()
        self.kubelets.start()
        self.descheduler: Descheduler | None = None
        if self.descheduler_policy is not None:
            self.descheduler = Descheduler(self.api, self.clock, self.descheduler_policy,
                                           [s.config for s in self.schedulers], self.kubelets.usage)
            self.descheduler.start()

    def now(self) -> float:
        return self.clock.now()

    def preemptions(self) -> list[dict[str, Any]]:
        """Every preemption any scheduler performed, in time order."""
        return sorted((p for s in self.schedulers for p in s.handle.preemptions), key=lambda p: p["time"])

    def records(self) -> dict[str, list[DecisionRecord]]:
        """The decision records of explained pods, from every scheduler."""
        return {k: r for s in self.schedulers for k, r in s.records.items()}

    # ---- applying input -----------------------------------------------------------------------

    def create(self, obj: Obj, existing: bool = False) -> Obj | None:
        """Create through the API (`existing`: an object of the snapshot, see APIServer.create); a
        refusal is recorded as a result, not raised."""
        try:
            return self.api.create(obj, existing=existing)
        except APIError as e:
            meta = obj.get("metadata") or {}
            if namespaced(obj.get("kind", "")) and not meta.get("namespace"):
                obj = {**obj, "metadata": {**meta, "namespace": "default"}}
            self.rejected.append(Rejection(self.now(), ref(obj), e.message, e.code))
            return None

    def restore(self, obj: Obj) -> Obj | None:
        """Create an object of the snapshot the run starts from: it exists already, so it is
        stored as it is. A pod bound to a node runs there since it was created (its status says
        so when the input has none) and is not admitted again: what admission would refuse today
        is a warning, not a reason to drop it. Nothing in the snapshot (a bound pod, or an object
        with the uid or creationTimestamp the API server gave it) is refused by a LimitRange or a
        ResourceQuota: it exists already, and counts towards its quotas' usage; the rest of the
        input is being created, and admitted as such. A built-in
        PriorityClass in an export is the one the API server already has."""
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        if kind == "PriorityClass" and meta.get("name") in SYSTEM_PRIORITY_CLASSES:
            if obj.get("value") != SYSTEM_PRIORITY_CLASSES[meta["name"]]:
                self.warnings.append(f"PriorityClass/{meta['name']}: built in with value "
                                     f"{SYSTEM_PRIORITY_CLASSES[meta['name']]}; the value {obj.get('value')} "
                                     "in the input is ignored")
            return self.store.get("PriorityClass", "", meta["name"])
        if kind != "Pod" or not (obj.get("spec") or {}).get("nodeName"):
            # Exported (it carries what the API server sets), or being created now, as a
            # hand-written Deployment or pod added to an export is.
            return self.create(obj, existing=any(meta.get(k) for k in ("uid", "creationTimestamp", "resourceVersion")))
        key = f"Pod/{meta.get('namespace') or 'default'}/{meta.get('name')}"
        try:
            return self.api.create(running_since_created(obj, self.api.timestamp()), existing=True, warn=lambda message: (
                self.warnings.append(f"{key}: kept running as exported, though admission would refuse it today: "
                                     f"{message}")))
        except APIError as e:
            self.rejected.append(Rejection(self.now(), key, e.message, e.code))
            return None

    def check_snapshot(self) -> None:
        """Warn about nodes whose snapshot pods ask for more than the node has: they run (they
        did in the cluster exported), but the export is inconsistent (an edited file, a node
        resized since) and kubesched's answers for those nodes are only as good as it."""
        used: dict[str, dict[str, int]] = {}
        for pod in self.store.list("Pod"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") == "Running":  # not those the kubelet admits yet
                totals = used.setdefault(node, {"pods": 0})
                totals["pods"] += 1
                for name, amount in pod_requests(pod["spec"]).items():
                    totals[name] = totals.get(name, 0) + amount
        for name, totals in used.items():
            node = self.store.get("Node", "", name)
            if node is None:
                continue
            alloc = node_allocatable(node)
            over = [f"{r} {format_amount(r, v)} > {format_amount(r, alloc.get(r, 0))}"
                    for r, v in sorted(totals.items()) if v > alloc.get(r, 0)]
            if over:
                self.warnings.append(f"Node/{name}: its pods in the input request more than it has "
                                     f"({', '.join(over)} allocatable); they are kept running as they are")

    def drain(self, node: str, options: DrainOptions) -> None:
        self.drainer.drain(node, options)

    def run(self, until: float | None = None, progress: Callable[[float], None] | None = None) -> None:
        self.clock.run(until, progress)

    # ---- tracking -----------------------------------------------------------------------------

    def _track_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        if ev.type == ADDED or uid not in self.pods:
            self.pods[uid] = PodHistory(pod)
            owner = controller_of(pod)
            if ev.type == ADDED and owner is not None:
                self._note_replacement(pod, owner.get("uid"))
        history = self.pods[uid]
        history.obj = pod
        if ev.type == DELETED:
            history.deleted = True
            history.deleted_at = self.now()
            history.reason = self._removal_cause(pod)
        self._track_disruption(ev)

    def _removal_cause(self, pod: Obj) -> str:
        cond = get_condition(pod, "DisruptionTarget")
        cause = REMOVAL_REASONS.get(cond.get("reason", ""), "Deleted") if cond else "Deleted"
        if cause == "EvictionAPI":
            uid = pod["metadata"].get("uid")
            # The first accepted eviction started the termination; later ones found it terminating.
            requester = next((e["requester"] for e in self.api.evictions
                              if e.get("uid") == uid and e["code"] == 200), "")
            if requester.startswith("drain/"):
                return "Drained"
            if requester == DESCHEDULER:
                return "Descheduled"
        return cause

    def _track_disruption(self, ev: WatchEvent) -> None:
        """Record a pod's removal once, when it begins: graceful termination starting, the pod
        failing on its node (kubelet eviction, admission, pod GC), or a deletion with no grace."""
        pod, old = ev.obj, ev.old
        if not pod.get("spec", {}).get("nodeName") or ev.type == ADDED or old is None:
            return  # a pod that never had a node is not disrupted by going away
        if is_terminating(old) or old.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return  # recorded already, or it had finished
        status = pod.get("status") or {}
        if ev.type == DELETED or is_terminating(pod):
            cause = self._removal_cause(pod)
        elif status.get("phase") == "Failed":
            # Marked by a controller (pod GC): its reason; failed by the kubelet: the kubelet's.
            target = (get_condition(pod, "DisruptionTarget") or {}).get("reason")
            cause = self._removal_cause(pod) if target in REMOVAL_REASONS and target != "TerminationByKubelet" \
                else status.get("reason") or "Failed"
        else:
            return
        key = f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
        owner = controller_of(pod)
        d = Disruption(
            self.now(), key, pod["metadata"].get("uid", ""), pod["spec"]["nodeName"], cause,
            self._removal_detail(pod, key, cause), owner.get("uid") if owner else None,
            # removed by its own controller's scale-down: no replacement is coming
            scaled_down=owner is not None and cause == "Deleted" and self._scaled_down(pod, owner),
            unowned=self._absent_controller(key, owner) if owner is not None else None)
        before = self._replacing.pop(d.uid, None)
        if before is not None and (before.node, before.cause) == (d.node, d.cause):
            d.repeats = before.repeats + 1
        self.disruptions.append(d)
        if owner is not None and d.repeats >= LOOP_REPEATS and self.stop_on_loop:
            self._stop_loop(d, owner)

    def _stop_loop(self, d: Disruption, owner: Obj) -> None:
        """The same pods are removed and recreated over and over: nothing new will happen."""
        ns = d.pod.split("/", 1)[0]
        why = f"{d.cause}: {d.detail}" if d.detail else d.cause
        self.warnings.append(
            f"stopped at {format_duration(self.now())} of virtual time: {owner.get('kind')}/{ns}/{owner.get('name')} "
            f"is going round in circles - its pod on {d.node} was removed ({why}), replaced, and the replacement "
            f"removed the same way, {d.repeats} times in a row; pass --until to run regardless")
        self.clock.stop()

    def _absent_controller(self, key: str, owner: Obj) -> str | None:
        """Why a pod's controller will not replace it: the export lacked the controller, or it is
        of a kind nothing in kubesched runs (an operator's custom resource)."""
        kind, name = owner.get("kind", ""), owner.get("name", "")
        if self.store.get(kind, "" if not namespaced(kind) else key.split("/", 1)[0], name) is None:
            return f"{kind}/{name} is not in the cluster"
        return None if kind in SIMULATED else f"{kind}/{name} is not simulated"

    def _scaled_down(self, pod: Obj, owner: Obj) -> bool:
        """Whether a deleted pod's ReplicaSet (or ReplicationController) still has all the replicas
        it wants without it, or a StatefulSet's has an ordinal beyond them."""
        ns = pod["metadata"].get("namespace", "default")
        kind = owner.get("kind", "")
        rs = self.store.get(kind, ns, owner.get("name", "")) \
            if kind in ("ReplicaSet", "ReplicationController", "StatefulSet") else None
        if rs is None or (rs.get("spec") or {}).get("replicas") is None:
            return False
        if kind == "StatefulSet":
            start = ((rs["spec"].get("ordinals") or {}).get("start")) or 0
            return parent_and_ordinal(pod["metadata"]["name"])[1] >= start + rs["spec"]["replicas"]
        active = sum(1 for p in self.store.list("Pod", ns)
                     if not is_terminating(p) and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                     and (controller_of(p) or {}).get("uid") == owner.get("uid"))
        return active >= rs["spec"]["replicas"]

    def _removal_detail(self, pod: Obj, key: str, cause: str) -> str:
        """What the results say besides the cause: the preemptor, the kubelet's signal, the
        remover's condition message, or the kubelet's own status message."""
        if cause == "Preempted":
            by = next((p for p in reversed(self.preemptions()) for v in p["victims"] if v["pod"] == key), None)
            if by is not None:
                return f"by {by['preemptor']} (priority {by['priority']})"
        pressure = self.kubelets.pressure_evictions.get(pod["metadata"].get("uid", "")) if cause == "Evicted" else None
        if pressure is not None and "threshold" in pressure:
            kind = "hard" if pressure["hard"] else "soft"
            return f"{pressure['signal']} {pressure['available']} < {pressure['threshold']} ({kind} threshold)"
        if pressure is not None:
            return f"{pressure['signal']}: {pressure['message']}"
        if cause == "Descheduled" and self.descheduler is not None:
            uid = pod["metadata"].get("uid")
            by = next((a for a in reversed(self.descheduler.attempts) if a.uid == uid and a.result == "Evicted"), None)
            if by is not None:
                return f"by {by.strategy} (profile {by.profile})"
        if cause in REMOVAL_REASONS.values() or cause == "Drained":
            return (get_condition(pod, "DisruptionTarget") or {}).get("message", "")
        return (pod.get("status") or {}).get("message") or ""

    def _note_replacement(self, pod: Obj, owner_uid: str | None) -> None:
        """The new pod replaces its owner's earliest removal still unreplaced; a pod recreated
        under the same name (a StatefulSet's) replaces its own predecessor first."""
        meta = pod["metadata"]
        key = f"{meta.get('namespace', 'default')}/{meta['name']}"
        waiting = [d for d in self.disruptions
                   if d.owner_uid == owner_uid and d.replacement is None and not d.scaled_down]
        d = next((d for d in waiting if d.pod == key), waiting[0] if waiting else None)
        if d is not None:
            d.replacement = key
            self._replacing[meta.get("uid", "")] = d

    def _track_event(self, ev: WatchEvent) -> None:
        if ev.type != ADDED:
            return
        e = ev.obj
        inv = e["involvedObject"]
        name = f"{inv['kind']}/{inv['namespace']}/{inv['name']}" if inv.get("namespace") else \
            f"{inv['kind']}/{inv['name']}"
        self.events.append(ClusterEvent(self.now(), e["type"], e["reason"], name, e["message"]))

    def pod(self, namespace: str, name: str) -> PodHistory | None:
        """The latest pod with that name (a replacement with the same name wins over its predecessor)."""
        found = None
        for h in self.pods.values():
            meta = h.obj["metadata"]
            if meta.get("namespace") == namespace and meta["name"] == name:
                found = h
        return found
