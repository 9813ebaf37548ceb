"""The Cluster: one store, one API server, and the components, on one clock.

It also keeps what a run reports: every pod that ever existed with its fate, the Events the
components recorded, and the objects the API refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubesched.api.objects import DEFAULT_EPOCH, Obj, get_condition, namespaced, ref
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.kubelet.agent import Kubelets
from kubesched.runtime.clock import VirtualClock
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.record import DecisionRecord
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import ADDED, DELETED, WatchEvent
from kubesched.store.memory import MemoryStore

# DisruptionTarget condition reasons -> the removal reason results report.
REMOVAL_REASONS = {
    "PreemptionByScheduler": "Preempted",
    "EvictionByEvictionAPI": "EvictionAPI",
    "TerminationByKubelet": "Evicted",
    "DeletionByTaintManager": "TaintManagerEviction",
    "DeletionByPodGC": "NodeLost",
}


@dataclass
class PodHistory:
    """The last known state of a pod, kept after it is deleted."""

    obj: Obj
    deleted: bool = False
    deleted_at: float | None = None
    reason: str | None = None


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
    epoch: datetime = DEFAULT_EPOCH
    clock: VirtualClock = field(default_factory=VirtualClock)
    pods: dict[str, PodHistory] = field(default_factory=dict)  # by uid, in creation order
    events: list[ClusterEvent] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.store = MemoryStore()
        self.api = APIServer(self.store, self.clock.now, self.seed, self.epoch)
        self.store.watch(self._track_pod, {"Pod"})
        self.store.watch(self._track_event, {"Event"})
        self.schedulers = [Scheduler(self.api, self.clock, cfg, self.seed, self.explain)
                           for cfg in [self.scheduler_config, *self.other_scheduler_configs]]
        self.scheduler = self.schedulers[0]
        self.kubelets = Kubelets(self.api, self.clock)
        for scheduler in self.schedulers:
            scheduler.start()
        self.kubelets.start()

    def now(self) -> float:
        return self.clock.now()

    def preemptions(self) -> list[dict[str, Any]]:
        """Every preemption any scheduler performed, in time order."""
        return sorted((p for s in self.schedulers for p in s.handle.preemptions), key=lambda p: p["time"])

    def records(self) -> dict[str, list[DecisionRecord]]:
        """The decision records of explained pods, from every scheduler."""
        return {k: r for s in self.schedulers for k, r in s.records.items()}

    # ---- applying input -----------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj | None:
        """Create through the API; a refusal is recorded as a result, not raised."""
        try:
            return self.api.create(obj)
        except APIError as e:
            meta = obj.get("metadata") or {}
            if namespaced(obj.get("kind", "")) and not meta.get("namespace"):
                obj = {**obj, "metadata": {**meta, "namespace": "default"}}
            self.rejected.append(Rejection(self.now(), ref(obj), e.message, e.code))
            return None

    def run(self, until: float | None = None) -> None:
        self.clock.run(until)

    # ---- tracking -----------------------------------------------------------------------------

    def _track_pod(self, ev: WatchEvent) -> None:
        uid = ev.obj["metadata"].get("uid", "")
        if ev.type == ADDED or uid not in self.pods:
            self.pods[uid] = PodHistory(ev.obj)
        history = self.pods[uid]
        history.obj = ev.obj
        if ev.type == DELETED:
            history.deleted = True
            history.deleted_at = self.now()
            cond = get_condition(ev.obj, "DisruptionTarget")
            history.reason = REMOVAL_REASONS.get(cond.get("reason", ""), "Deleted") if cond else "Deleted"

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
