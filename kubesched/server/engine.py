"""The engine behind `serve`: the simulation's Cluster on a store that outlives the process,
driven by the wall clock.

A new data file starts from the input (a snapshot or scenario, loaded and validated as
`simulate` loads it) and the namespaces every cluster has; a data file that exists is the cluster
as it was left, the input's configurations (scheduler, kubelet, descheduler) still applied.
Components rebuild their state from the store when they start, as they would after a restart
on a real cluster (informers list, then watch). Virtual time resumes where it stopped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.fieldschema import decode
from kubesched.api.objects import DEFAULT_EPOCH, format_time, parse_time
from kubesched.api.restmapping import RESOURCES, Resource
from kubesched.apiserver.serviceips import SERVICE_CIDR, kubernetes_service
from kubesched.cluster.cluster import Cluster
from kubesched.controllers.endpoints import EndpointsController
from kubesched.controllers.endpointslice import EndpointSliceController
from kubesched.controllers.job import TRACKING_FINALIZER
from kubesched.controllers.namespace import NamespaceController
from kubesched.controllers.serviceaccounts import ServiceAccountsController
from kubesched.controllers.storageprotection import PVCProtectionController, PVProtectionController
from kubesched.descheduler.policy import load_policy
from kubesched.kubelet.nodelease import LEASE_DURATION, NodeLeaseController
from kubesched.kubelet.nodestatus import NodeStatusReporter
from kubesched.runtime.clock import VirtualClock
from kubesched.runtime.realtime import RealtimeDriver
from kubesched.server import openapi, versions
from kubesched.server.crdcontrollers import DefinitionControllers
from kubesched.server.custom import CustomResources
from kubesched.server.kubernetesservice import KubernetesService, advertised_address
from kubesched.server.metrics import Metrics
from kubesched.server.rest import INITIAL_NAMESPACES, Rest
from kubesched.server.webhooks import Webhooks
from kubesched.sim.runner import check_config, load
from kubesched.store.base import Store
from kubesched.store.memory import MemoryStore
from kubesched.store.sqlite import SQLiteStore

log = logging.getLogger("kubesched.serve")
MEMORY = ":memory:"
WATCH_WINDOW = 100_000  # past events a watch can resume from (kube-apiserver keeps minutes of them)
EVENT_TTL = 3600.0  # kube-apiserver's --event-ttl: Events are removed an hour after their last update
EVENT_SWEEP = 60.0


def _warm_up() -> None:
    """Load what the first requests would otherwise wait for (the client's models behind field
    validation, the OpenAPI definitions behind managed fields and kubectl's documents), so the
    first answers are as fast as the rest."""
    decode("Pod", {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": [{}]}})
    openapi.openapi_v3_index()


class _MemoryMeta:
    """The data-file bits of a store that has no file."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def meta_get(self, key: str) -> str | None:
        return self.values.get(key)

    def meta_set(self, key: str, value: str) -> None:
        self.values[key] = value


@dataclass
class ServeOptions:
    paths: tuple[str, ...] = ()
    data: str = "kubesched.db"
    speed: float = 1.0
    feature_gates: FeatureGates | None = None  # --feature-gates, over the seed Scenario's


class Engine:
    def __init__(self, options: ServeOptions) -> None:
        scenario = load(list(options.paths), feature_gates=options.feature_gates) if options.paths else None
        gates = scenario.feature_gates if scenario else options.feature_gates or DEFAULT_FEATURE_GATES
        # What was off in the input or refused while seeding, printed at start; later notes are logged.
        self.warnings = [str(w) for w in scenario.warnings] if scenario else []
        self._started = False
        self.store: Store = MemoryStore(window=WATCH_WINDOW) if options.data == MEMORY else \
            SQLiteStore(options.data, window=WATCH_WINDOW)
        if isinstance(self.store, SQLiteStore):
            # Seeding a new file from a large input commits in groups too; synced below, and the
            # server says who is told of commits once it runs.
            self.store.commit_in_background(lambda version, error: None)
        meta: Any = self.store if hasattr(self.store, "meta_get") else _MemoryMeta()
        self.meta = meta
        fresh = meta.meta_get("epoch") is None
        if fresh:
            # The input's export moment, else now: a new cluster in a box starts at the wall clock.
            epoch = scenario.epoch if scenario and scenario.epoch != DEFAULT_EPOCH else \
                datetime.now(UTC).replace(microsecond=0)
            meta.meta_set("epoch", format_time(epoch, 0))
            meta.meta_set("virtual-time", "0")
        epoch = parse_time(meta.meta_get("epoch"))
        clock = VirtualClock(start=float(meta.meta_get("virtual-time") or 0))
        configs = [check_config(lo.obj, lo) for lo in scenario.scheduler_configs] if scenario else []
        configs = configs or [check_config(None, None)]
        policy = load_policy(scenario.descheduler_policy) if scenario and scenario.descheduler_policy else None
        self.cluster = Cluster(seed=scenario.seed if scenario else 0, scheduler_config=configs[0],
                               other_scheduler_configs=configs[1:], epoch=epoch,
                               kubelet_config=scenario.kubelet_config if scenario else None,
                               descheduler_policy=policy, clock=clock, store=self.store, reproducible_ids=False,
                               service_cidr=SERVICE_CIDR, recorder=None, notes=self._note, feature_gates=gates)
        self.api = self.cluster.api
        self.rest = Rest(self.api, Metrics(self.cluster.kubelets.usage, self.api.timestamp))
        self.custom = CustomResources(self.store)
        self.webhooks = Webhooks(self.store, self._custom_kind)
        self.api.webhooks = self.webhooks
        self.api.policies.convert = versions.convert  # Events' and HPAs' two shapes
        self.crd_controllers = DefinitionControllers(self.api, clock)
        self.crd_controllers.start()
        self.namespaces = NamespaceController(self.api, clock, {r.store_kind for r in RESOURCES if r.namespaced and r.stored},
                                              lambda: {r.store_kind for r in self.custom.all() if r.namespaced})
        self.namespaces.start()
        self.service_accounts = ServiceAccountsController(self.api, clock)
        self.service_accounts.start()
        self.endpoint_slices = EndpointSliceController(self.api, clock)
        self.endpoint_slices.start()
        self.endpoints = EndpointsController(self.api, clock)
        self.endpoints.start()
        # Kubernetes' own finalizers held until their controllers let go. Not in `simulate`: a
        # snapshot's claims and Job pods would linger there, changing what a run has decided.
        self.pvc_protection = PVCProtectionController(self.api, clock)
        self.pvc_protection.start()
        self.pv_protection = PVProtectionController(self.api, clock)
        self.pv_protection.start()
        self.api.honour(TRACKING_FINALIZER)  # the Job controller runs (in the Cluster)
        self.node_status = NodeStatusReporter(self.api, clock)
        self.node_status.start()
        duration = ((scenario.kubelet_config if scenario else None) or {}).get("nodeLeaseDurationSeconds")
        self.node_leases = NodeLeaseController(self.api, clock, duration if isinstance(duration, int) and duration > 0
                                               else LEASE_DURATION)
        self.node_leases.start()
        if fresh:
            for name in INITIAL_NAMESPACES:
                if self.store.get("Namespace", "", name) is None:
                    self.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
                                         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
            if scenario is not None:
                for at, obj in scenario.objects:
                    if at <= 0:
                        self.cluster.restore(obj)
                    else:
                        clock.call_at(at, lambda obj=obj: self.cluster.create(obj))
        if self.store.get("Service", "default", "kubernetes") is None:  # kube-apiserver keeps it
            self.cluster.create(kubernetes_service())
        self.driver = RealtimeDriver(clock, options.speed, self._persist_time)
        clock.call_at(clock.now(), self._expire_events, daemon=True)
        if isinstance(self.store, SQLiteStore):
            self.store.sync()
        _warm_up()

    def advertise(self, host: str, port: int) -> None:
        """Once listening: keep the `kubernetes` Service's endpoints on the address and port served."""
        self.kubernetes_service = KubernetesService(self.api, self.cluster.clock, advertised_address(host), port)
        self.kubernetes_service.start()

    def _custom_kind(self, api_version: str, kind: str) -> Resource | None:
        return next((r for r in self.custom.all() if r.api_version == api_version and r.kind == kind), None)

    def _note(self, message: str) -> None:
        if self._started:
            log.warning("%s", message)
        else:
            self.warnings.append(message)

    def started(self) -> None:
        """From now on notes go to the log: the start-up warnings have been printed."""
        self._started = True

    def _expire_events(self) -> None:
        """Events live an hour past their last update, as etcd's lease on them makes upstream."""
        clock = self.cluster.clock
        cutoff = clock.now() - EVENT_TTL
        for event in list(self.store.list("Event")):
            stamp = event.get("lastTimestamp") or event.get("eventTime") or event["metadata"].get("creationTimestamp")
            if stamp and self.api.seconds(stamp) < cutoff:
                self.store.delete("Event", event["metadata"].get("namespace", ""), event["metadata"]["name"])
        clock.call_at(clock.now() + EVENT_SWEEP, self._expire_events, daemon=True)

    def _persist_time(self, now: float) -> None:
        self.meta.meta_set("virtual-time", repr(now))

    def close(self) -> None:
        self.store.close()
