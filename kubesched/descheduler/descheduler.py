"""The descheduler as a cluster component: a pass when the cluster starts, then one every
`deschedulingInterval` of cluster time.

A pass follows the descheduler's runDeschedulerLoop: the ready nodes matching the policy's
nodeSelector (fewer than two: nothing is done, "the cluster size is 0 or 1"), fresh eviction
counters, profiles built anew, then every profile's Deschedule plugins, then every profile's
Balance plugins. The pass runs after everything else due at its instant has settled (budget
status, scheduling), as a descheduler reading informers would see the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Obj
from kubesched.descheduler.framework import (
    BALANCE,
    DESCHEDULE,
    FILTER,
    PRE_EVICTION_FILTER,
    EvictionAttempt,
    EvictionHistory,
    Evictor,
    Handle,
    Plugin,
    PodEvictor,
    Status,
)
from kubesched.descheduler.nodes import ready_nodes
from kubesched.descheduler.placement import Placement
from kubesched.descheduler.plugins import REGISTRY
from kubesched.descheduler.policy import Policy, ProfileSpec
from kubesched.runtime.clock import LATE
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.store.podindex import PodIndexes, PodsByNode

if TYPE_CHECKING:
    from kubesched.apiserver.interface import API
    from kubesched.kubelet.usage import UsageTracker
    from kubesched.runtime.clock import Clock, Timer
    from kubesched.scheduler.config import SchedulerConfig


@dataclass
class PassRecord:
    number: int
    time: float
    nodes: int
    attempts: list[EvictionAttempt] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def evicted(self) -> int:
        return sum(1 for a in self.attempts if a.result == "Evicted")

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.number, "time": self.time, "nodes": self.nodes, "evicted": self.evicted,
                "errors": self.errors, "attempts": [a.to_json() for a in self.attempts]}


@dataclass
class ProfileRunner:
    name: str
    deschedule: list[Plugin]
    balance: list[Plugin]
    plugins: list[Plugin]


class Descheduler:
    pods_by_node: PodsByNode  # the store's pods by node, from start()

    def __init__(self, api: API, clock: Clock, policy: Policy,
                 scheduler_configs: list[SchedulerConfig], metrics: UsageTracker | None = None,
                 observer: Observer = NULL_OBSERVER, indexes: PodIndexes | None = None) -> None:
        self.api = api
        self.clock = clock
        self.indexes = indexes or PodIndexes(api.store)  # shared with the controllers: see PodIndexes
        self.policy = policy
        self.placement = Placement(api.store, scheduler_configs)
        self.pod_evictor = PodEvictor(api, policy.limits, policy.grace_period)
        self.pod_evictor.placement = self.placement
        # Plugins get the metrics API only when the policy asks for one, as upstream wires it.
        self.metrics = metrics if policy.metrics_source else None
        self.observer = observer  # told of every pass
        self.passes_run = 0
        self._timer: Timer | None = None

    def start(self) -> None:
        self.pods_by_node = self.indexes.by_node()
        self.evictions = EvictionHistory(self.api.store, self.api.now)
        self.placement.start()
        self._timer = self.clock.call_at(self.clock.now(), self.run_pass, rank=LATE)

    def build_profile(self, spec: ProfileSpec) -> ProfileRunner:
        evictor = Evictor(spec.name, self.pod_evictor)
        handle = Handle(self.api, self.pods_by_node, evictor, self.placement, self.policy.node_selector,
                        self.metrics, self.evictions)
        plugins: dict[str, Plugin] = {}

        def plugin(name: str) -> Plugin:
            if name not in plugins:
                plugins[name] = REGISTRY[name](handle, spec.args.get(name, {}))
            return plugins[name]

        evictor.filter_plugins = [plugin(n) for n in spec.plugins[FILTER]]
        evictor.pre_eviction_plugins = [plugin(n) for n in spec.plugins[PRE_EVICTION_FILTER]]
        return ProfileRunner(spec.name, [plugin(n) for n in spec.plugins[DESCHEDULE]],
                       [plugin(n) for n in spec.plugins[BALANCE]], list(plugins.values()))

    @staticmethod
    def _collect_error(pl: Plugin, status: Status | None, record: PassRecord) -> None:
        if status is not None and not status.ok:
            record.errors.append(f'plugin "{pl.name}" finished with error: {status.reason}')

    def run_pass(self) -> PassRecord:
        now = self.clock.now()
        nodes: list[Obj] = ready_nodes(self.api.store, self.policy.node_selector)
        self.passes_run += 1
        record = PassRecord(self.passes_run, now, len(nodes))
        self.pod_evictor.reset()
        if len(nodes) <= 1:
            record.errors.append("the cluster size is 0 or 1")
        else:
            runners: list[ProfileRunner] = []
            for spec in self.policy.profiles:
                try:
                    runners.append(self.build_profile(spec))
                except LookupError as e:
                    record.errors.append(f"unable to create a profile {spec.name}: {e}")
            for runner in runners:
                for pl in runner.plugins:
                    pl.prepare()
            for runner in runners:
                for pl in runner.deschedule:
                    self._collect_error(pl, pl.deschedule(nodes), record)
            for runner in runners:
                for pl in runner.balance:
                    self._collect_error(pl, pl.balance(nodes), record)
            self.placement.end_pass()
        record.attempts = self.pod_evictor.attempts
        self.observer.descheduler_pass(record)
        if self.policy.interval > 0:
            # A pass that changed nothing would repeat itself unless something else happens, so
            # alone it does not keep the run going.
            self._timer = self.clock.call_at(now + self.policy.interval, self.run_pass,
                                             daemon=record.evicted == 0, rank=LATE)
        return record
