"""The Cluster: one store, one API server, and the components, on one clock.

What a run reports is kept by a results recorder watching the API and told by every component
what no object records (kubesched.cluster.recorder, an Observer); a cluster without one (`serve`)
keeps nothing beyond what is in its store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from kubesched.api.duration import format_duration
from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.objects import DEFAULT_EPOCH, LAST_TIME, Obj, format_time, namespaced, ref
from kubesched.apiserver.admission import SYSTEM_PRIORITY_CLASSES
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.cluster.recorder import Recorder
from kubesched.controllers.cronjob import CronJobController
from kubesched.controllers.daemonset import DaemonSetController
from kubesched.controllers.deployment import DeploymentController
from kubesched.controllers.devicetainteviction import DeviceTaintEvictionController
from kubesched.controllers.disruption import DisruptionController
from kubesched.controllers.ephemeral import EphemeralVolumeController
from kubesched.controllers.garbagecollector import GarbageCollector
from kubesched.controllers.job import JobController
from kubesched.controllers.nodelifecycle import NodeLifecycleController
from kubesched.controllers.persistentvolume import PersistentVolumeController
from kubesched.controllers.podautoscaler import HorizontalPodAutoscalerController
from kubesched.controllers.podgc import PodGCController
from kubesched.controllers.replicaset import ReplicaSetController, ReplicationControllerController
from kubesched.controllers.resourceclaim import ResourceClaimController
from kubesched.controllers.resourcequota import ResourceQuotaController
from kubesched.controllers.statefulset import StatefulSetController
from kubesched.controllers.tainteviction import TaintEvictionController
from kubesched.controllers.ttlafterfinished import TTLAfterFinishedController
from kubesched.input.annotations import SimulationChecker
from kubesched.kubectl.drain import Drainer, DrainOptions
from kubesched.kubelet.agent import Kubelets
from kubesched.kubelet.prober import reports_readiness
from kubesched.runtime.clock import VirtualClock
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import Store
from kubesched.store.memory import MemoryStore
from kubesched.store.podindex import PodIndexes

if TYPE_CHECKING:  # the descheduler is imported only by a run that has one (tens of ms of start-up)
    from kubesched.descheduler.descheduler import Descheduler
    from kubesched.descheduler.policy import Policy


def running_since_created(pod: Obj, now: str) -> Obj:
    """A bound pod whose status is not in the input has been running since its creation (at
    `now` if it has no creationTimestamp): phase Running, startTime and the conditions its kubelet
    would have reported (a Running pod exported without conditions gets them too: they are the
    kubelet's to write). Preemption ranks victims by that startTime; budgets count Ready pods. A
    pod with probes is left for its kubelet to say whether it is Ready by now."""
    status = pod.get("status") or {}
    if status.get("phase") not in (None, "", "Running"):
        return pod
    started = status.get("startTime") or (pod.get("metadata") or {}).get("creationTimestamp") or now
    kinds = ("PodScheduled", "Initialized") if reports_readiness(pod) else \
        ("PodScheduled", "Initialized", "Ready", "ContainersReady")
    conditions = status.get("conditions") or [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started} for t in kinds]
    return {**pod, "status": {**status, "phase": "Running", "startTime": started, "conditions": conditions}}


class Controller(Protocol):
    def start(self) -> None: ...


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
    feature_gates: FeatureGates = DEFAULT_FEATURE_GATES  # kube-scheduler's --feature-gates
    clock: VirtualClock = field(default_factory=VirtualClock)
    # A server's store (SQLite) outlives the Cluster; simulate's is in memory.
    store: Store = field(default_factory=MemoryStore)
    # False (serve): UIDs and generated names from the system's randomness, not from `seed`.
    reproducible_ids: bool = True
    # Services get cluster IPs and node ports from this range (serve); None: as they are given.
    service_cidr: str | None = None
    # Keeps what a run reports; None: nothing is kept but the store (serve).
    recorder: Recorder | None = field(default_factory=Recorder)
    # Without a recorder, refusals of the input and warnings are told to this instead (serve logs them).
    notes: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        observer: Observer = self.recorder if self.recorder is not None else NULL_OBSERVER
        self.api = APIServer(self.store, self.clock.now, self.seed if self.reproducible_ids else None,
                             self.epoch, observer, SimulationChecker, self.feature_gates, self.service_cidr)
        if self.recorder is not None:  # first: it sees a removal before a controller replaces the pod
            self.recorder.start(self.api, self.clock)
            # What matters is every write but the Events (a simulation only adds them): repeated
            # answers do not keep idle housekeeping from being jumped over.
            recorder, store = self.recorder, self.store
            self.clock.changes = lambda: store.resource_version - len(recorder.events)
        # Controllers watch before the schedulers do, so a budget's status or a replacement pod
        # is settled before a scheduling cycle at the same instant reads it; the quota controller
        # before the workload controllers, so quota a pod frees is recounted before its owner retries.
        # The pod indexes every component reads, shared as informers' indexers are.
        self.pod_indexes = PodIndexes(self.store)
        api, clock, indexes = self.api, self.clock, self.pod_indexes
        self.controllers: list[Controller] = [
            DisruptionController(api, clock, warn=self._warn), ResourceQuotaController(api, clock),
            DeploymentController(api, clock), ReplicaSetController(api, clock, indexes),
            ReplicationControllerController(api, clock, indexes), StatefulSetController(api, clock, indexes),
            DaemonSetController(api, clock, indexes), CronJobController(api, clock), JobController(api, clock, indexes),
            TTLAfterFinishedController(api, clock), GarbageCollector(api, clock),
            NodeLifecycleController(api, clock, indexes), TaintEvictionController(api, clock, indexes),
            PodGCController(api, clock, indexes), PersistentVolumeController(api, clock),
            EphemeralVolumeController(api, clock), ResourceClaimController(api, clock),
            DeviceTaintEvictionController(api, clock, self.feature_gates)]
        for controller in self.controllers:
            controller.start()
        self.schedulers = [Scheduler(self.api, self.clock, cfg, self.seed, self.explain, observer, self.feature_gates)
                           for cfg in [self.scheduler_config, *self.other_scheduler_configs]]
        self.scheduler = self.schedulers[0]
        self.kubelets = Kubelets(self.api, self.clock, self.kubelet_config, observer)
        self.drainer = Drainer(self.api, self.clock, observer)
        for scheduler in self.schedulers:
            scheduler.start()
        self.kubelets.start()
        # The HPA reads the usage the kubelets report, as upstream's reads metrics-server.
        self.autoscaler = HorizontalPodAutoscalerController(self.api, self.clock, self.kubelets.usage.metrics_of,
                                                            self.feature_gates)
        self.autoscaler.start()
        self.descheduler: Descheduler | None = None
        if self.descheduler_policy is not None:
            from kubesched.descheduler.descheduler import Descheduler

            self.descheduler = Descheduler(self.api, self.clock, self.descheduler_policy,
                                           [s.config for s in self.schedulers], self.kubelets.usage, observer,
                                           self.pod_indexes)
            self.descheduler.start()

    def now(self) -> float:
        return self.clock.now()

    # ---- applying input -----------------------------------------------------------------------

    def _reject(self, obj: str, e: APIError) -> None:
        if self.recorder is not None:
            self.recorder.reject(obj, e.message, e.code)
        elif self.notes is not None:
            self.notes(f"{obj}: refused ({e.code}): {e.message}")

    def _warn(self, message: str) -> None:
        if self.recorder is not None:
            self.recorder.warn(message)
        elif self.notes is not None:
            self.notes(message)

    def create(self, obj: Obj, existing: bool = False, validated: bool = False, owned: bool = False) -> Obj | None:
        """Create through the API (`existing`, `validated`, `owned`: see APIServer.create); a
        refusal is a result the recorder keeps, not an error."""
        try:
            return self.api.create(obj, existing=existing, validated=validated, owned=owned)
        except APIError as e:
            meta = obj.get("metadata") or {}
            if namespaced(obj.get("kind", "")) and not meta.get("namespace"):
                obj = {**obj, "metadata": {**meta, "namespace": "default"}}
            self._reject(ref(obj), e)
            return None

    def restore(self, obj: Obj, validated: bool = False, owned: bool = False) -> Obj | None:
        """Create an object of the snapshot the run starts from: it exists already, so it is
        stored as it is. A pod bound to a node runs there since it was created (its status says
        so when the input has none) and is not admitted again: what admission would refuse today
        is a warning, not a reason to drop it. Nothing in the snapshot (a bound pod, or an object
        with the uid or creationTimestamp the API server gave it) is refused by a LimitRange or a
        ResourceQuota: it exists already, and counts towards its quotas' usage; the rest of the
        input is being created, and admitted as such. A built-in
        PriorityClass in an export is the one the API server already has. `validated`, `owned`:
        see APIServer.create."""
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        if kind == "PriorityClass" and meta.get("name") in SYSTEM_PRIORITY_CLASSES:
            if obj.get("value") != SYSTEM_PRIORITY_CLASSES[meta["name"]]:
                self._warn(f"PriorityClass/{meta['name']}: built in with value "
                           f"{SYSTEM_PRIORITY_CLASSES[meta['name']]}; the value {obj.get('value')} in the input "
                           "is ignored")
            return self.store.get("PriorityClass", "", meta["name"])
        if kind != "Pod" or not (obj.get("spec") or {}).get("nodeName"):
            # Exported (it carries what the API server sets), or being created now, as a
            # hand-written Deployment or pod added to an export is.
            return self.create(obj, existing=any(meta.get(k) for k in ("uid", "creationTimestamp", "resourceVersion")),
                               validated=validated, owned=owned)
        key = f"Pod/{meta.get('namespace') or 'default'}/{meta.get('name')}"
        try:
            return self.api.create(
                running_since_created(obj, self.api.timestamp()), existing=True, validated=validated, owned=owned,
                warn=lambda message: self._warn(
                    f"{key}: kept running as exported, though admission would refuse it today: {message}"))
        except APIError as e:
            self._reject(key, e)
            return None

    def drain(self, node: str, options: DrainOptions) -> None:
        self.drainer.drain(node, options)

    def run(self, until: float | None = None, progress: Callable[[float], None] | None = None) -> None:
        """Run to `until` (None: until nothing but housekeeping is left), but never past the last
        time a timestamp can name."""
        last = (LAST_TIME - self.epoch).total_seconds()
        if not self.clock.run(until, progress, limit=last) and self.recorder is not None:
            self.recorder.warn(f"the run stopped at {format_duration(last)} ({format_time(self.epoch, last)}), "
                               "the last time a Kubernetes timestamp can name")
