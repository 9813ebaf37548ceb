"""Node-pressure eviction: every node's eviction manager (pkg/kubelet/eviction/eviction_manager.go).

Each kubelet runs `synchronize` every 10 s (housekeeping): observe the signals, find the thresholds
met (soft ones only once met for their grace period; previously met ones until the signal is back
above threshold plus minimum reclaim), report MemoryPressure / DiskPressure / PIDPressure (a
condition stays reported for the transition period after it was last observed), and evict at most
one pod, the first in the ranking for the most urgent threshold. Before that, every pod using
more ephemeral storage than its limits allow is evicted, pressure or not (localStorageEviction).
After an eviction the loop waits for the pod to be gone (its kill, then the 1 s cleanup poll)
and synchronizes again at once.

Simulating 5,000 nodes must not cost 500 node checks per virtual second, so a node is only
synchronized while something is pending (a threshold met or not yet resolved, a condition still
reported) or when its usage or pods changed in a way that meets a threshold; the sync then runs at
the node's next 10 s tick, so the outcome is the same as ticking every node. The tick keeps the
run alive only while it will change something (set or clear a condition, evict a pod); a node
that stays under pressure with nothing left to evict ticks as a daemon, and once such a tick would
only repeat the last one (a standstill) it merely notes the time until the node is touched again.

Deliberate differences: node-level reclaim (image and dead-container garbage collection) frees
nothing here; node conditions are written by the sync that changes them rather than by the next
10 s node status update; the "EvictionThresholdMet" node event is recorded only by syncs that
evict a pod (upstream's recorder aggregates the repeats).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.objects import Obj, set_condition
from kubesched.api.qos import BEST_EFFORT, qos_class
from kubesched.api.taints import tolerated
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.kubelet.config import EvictionConfig, Threshold
from kubesched.kubelet.signals import (
    CONDITIONS,
    MEMORY_PRESSURE,
    SIGNAL_RESOURCE,
    Observation,
    by_eviction_priority,
    conditions_of,
    eviction_message,
    observe,
    rank,
    storage_limit_message,
    summary,
    thresholds_met,
)
from kubesched.kubelet.usage import (
    SYSTEM_CRITICAL_PRIORITY,
    NodeResources,
    PodUsage,
    UsageTracker,
    node_figures,
)
from kubesched.runtime.clock import LATE, Clock, Timer
from kubesched.runtime.observer import NULL_OBSERVER, Observer

MONITORING_INTERVAL = 10.0  # housekeeping interval
CLEANUP_POLL = 1.0  # podCleanupPollFreq: how soon after a kill the next sync can see the pod gone
IMMEDIATE_GRACE_PERIOD = 1  # immediateEvictionGracePeriodSeconds, and the kubelet's minimum
REASON = "Evicted"
MAX_ALIKE = 1024  # node shapes whose resources are kept; a run has a few
# Node condition -> (reason and message when True, when False, node events), as the kubelet's setters write them.
_CONDITION_TEXT = {
    "MemoryPressure": (("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
                       ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                       ("NodeHasInsufficientMemory", "NodeHasSufficientMemory")),
    "DiskPressure": (("KubeletHasDiskPressure", "kubelet has disk pressure"),
                     ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                     ("NodeHasDiskPressure", "NodeHasNoDiskPressure")),
    "PIDPressure": (("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
                    ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    ("NodeHasInsufficientPID", "NodeHasSufficientPID")),
}
MEMORY_PRESSURE_TAINT = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}

# Evicts a pod: (pod, grace period in seconds, message, with a DisruptionTarget condition) -> when
# its containers are gone.
Killer = Callable[[PodUsage, int, str, bool], float]


@dataclass
class NodeState:
    """One node's eviction manager state (managerImpl's fields), kept only while it matters."""

    first_observed: dict[Threshold, float] = field(default_factory=dict)
    last_observed: dict[str, float] = field(default_factory=dict)  # condition -> last met
    thresholds_met: list[Threshold] = field(default_factory=list)
    conditions: set[str] = field(default_factory=set)  # reported, transition period applied
    blocked_until: float = -math.inf  # waiting for an evicted pod to be cleaned up
    timer: Timer | None = None
    parked: bool = False  # at a standstill: until a touch, each tick repeats the last


_IDLE = NodeState()  # how a node without pressure state looks (never modified)


class EvictionManager:
    """The eviction managers of all simulated nodes."""

    def __init__(self, api: APIServer, clock: Clock, config: EvictionConfig, usage: UsageTracker,
                 kill: Killer, observer: Observer = NULL_OBSERVER) -> None:
        self.api = api
        self.clock = clock
        self.config = config
        self.usage = usage
        self.kill = kill
        self.observer = observer  # told of every eviction with its signal and threshold, before the kill
        self.nodes: dict[str, NodeState] = {}  # nodes with pressure state or a housekeeping pending
        # node -> its loop's last synchronize (before the first: one interval before its kubelet started)
        self._last_sync: dict[str, float] = {}
        self._resources: dict[str, NodeResources] = {}
        self._versions: dict[str, str] = {}  # node -> resourceVersion its resources were read at
        self._alike: dict[tuple[Any, ...], NodeResources] = {}  # by node_figures

    # ---- what a node has --------------------------------------------------------------------

    def resources(self, node: str) -> NodeResources | None:
        obj = self.api.store.get("Node", "", node)
        if obj is None:
            return None
        version = obj["metadata"].get("resourceVersion", "")
        if self._versions.get(node) != version:
            self._versions[node] = version
            self._resources[node] = self._resources_of(obj)
        return self._resources[node]

    def _resources_of(self, node: Obj) -> NodeResources:
        """NodeResources.of, shared by the nodes that have the same figures."""
        figures = node_figures(node)
        try:
            res = self._alike.get(figures)
        except TypeError:  # a malformed figure (a list, a map): worked out for this node alone
            return NodeResources.of(node, self.config)
        if res is None:
            if len(self._alike) >= MAX_ALIKE:
                self._alike.clear()
            res = self._alike[figures] = NodeResources.of(node, self.config)
        return res

    def observations(self, node: str) -> dict[str, Observation]:
        res = self.resources(node)
        return {} if res is None else observe(res, self.usage.node_totals(node))

    # ---- lifecycle ----------------------------------------------------------------------------

    def node_added(self, node: str) -> None:
        """The node's kubelet starts: its first synchronize is now (when anything asks for one)."""
        self._last_sync.setdefault(node, self.clock.now() - MONITORING_INTERVAL)

    def node_removed(self, node: str) -> None:
        st = self.nodes.pop(node, None)
        if st is not None and st.timer is not None:
            st.timer.cancel()
        self._last_sync.pop(node, None)
        self._resources.pop(node, None)
        self._versions.pop(node, None)

    def touch(self, node: str) -> None:
        """Usage, pods or capacity changed on `node`: make sure its next tick happens if it matters."""
        if node in self._last_sync:
            self._schedule(node)

    # ---- admission ----------------------------------------------------------------------------

    def admit(self, pod: Obj, node: str) -> tuple[str, str] | None:
        """The eviction manager's admit handler: under MemoryPressure alone only BestEffort pods
        (not tolerating the memory-pressure taint) are refused; under any other pressure, all."""
        st = self.nodes.get(node)
        spec = pod.get("spec") or {}
        if st is None or not st.conditions or int(spec.get("priority") or 0) >= SYSTEM_CRITICAL_PRIORITY:
            return None
        if st.conditions == {MEMORY_PRESSURE} and (
                qos_class(pod) != BEST_EFFORT or tolerated(spec.get("tolerations") or [], MEMORY_PRESSURE_TAINT)):
            return None
        names = " ".join(c for c in CONDITIONS if c in st.conditions)
        return REASON, f"The node had condition: [{names}]. "

    # ---- the loop -----------------------------------------------------------------------------

    def _pending(self, node: str, st: NodeState) -> tuple[bool, bool]:
        """(a sync is needed, it will change something): from the signals as they are now; the
        second only matters when the first holds."""
        obs = self.observations(node)
        met = self._met(obs, st)
        # A pod at its requests (base kept) is within its limits: only the others (most often
        # none, hence the list first) are asked.
        unbased = [p for p in self.usage.on_node(node) if p.base is None]
        over_limit = bool(unbased) and any(self._storage_limit_message(node, p) for p in unbased)
        need = bool(met or st.conditions or st.first_observed or st.thresholds_met or over_limit)
        if not need:
            return False, False
        busy = over_limit or conditions_of(met) != st.conditions or (
            bool(met) and any(not p.critical for p in self.usage.on_node(node)))
        return need, busy

    def _met(self, obs: dict[str, Observation], st: NodeState) -> list[Threshold]:
        """Thresholds met now, plus those met before whose minimum reclaim is not yet done."""
        met = thresholds_met(self.config.thresholds, obs, False)
        if not st.thresholds_met:  # most nodes: none met before
            return met
        for t in thresholds_met(st.thresholds_met, obs, True):
            if t not in met:
                met.append(t)
        return met

    def _schedule(self, node: str, synced: bool = False) -> None:
        """Arrange the node's next tick, if one is needed; `synced`: right after a sync, which
        may find the node at a standstill. Any other call (a touch) ends a standstill."""
        st = self.nodes.get(node)
        if st is not None and not synced:
            st.parked = False
        need, busy = self._pending(node, st or _IDLE)
        if not need:
            if st is not None:  # nothing left to remember: conditions not reported have expired
                if st.timer is not None:
                    st.timer.cancel()
                del self.nodes[node]
            return
        if st is None:
            st = self.nodes[node] = NodeState()
        if synced and not busy and self._at_standstill(node, st):
            st.parked = True
        last = self._last_sync[node]
        if st.blocked_until > last:
            when = st.blocked_until
        else:
            ticks = max(1, math.ceil((self.clock.now() - last) / MONITORING_INTERVAL - 1e-9))
            when = last + ticks * MONITORING_INTERVAL
        timer = st.timer
        if timer is not None and not timer.cancelled and timer.when == when and timer.daemon == (not busy):
            return
        if timer is not None:
            timer.cancel()
        st.timer = self.clock.call_at(when, lambda: self._synchronize(node), daemon=not busy, rank=LATE)

    def _synchronize(self, node: str) -> None:
        st = self.nodes.get(node)
        if st is None:
            return
        now = self.clock.now()
        st.timer, self._last_sync[node] = None, now
        if st.parked:
            # The same signals as the last tick: it only observes the conditions met once more.
            # The next tick is as _schedule would set it (one interval on, a daemon), so timers
            # keep the order they had.
            st.last_observed.update(dict.fromkeys(st.conditions, now))
            st.timer = self.clock.call_at(now + MONITORING_INTERVAL, lambda: self._synchronize(node), daemon=True,
                                          rank=LATE)
            return
        obs = self.observations(node)
        met = self._met(obs, st)
        st.first_observed = {t: st.first_observed.get(t, now) for t in met}
        st.last_observed = {**st.last_observed, **dict.fromkeys(conditions_of(met), now)}
        reported = {c for c, at in st.last_observed.items() if now - at < self.config.pressure_transition_period}
        st.thresholds_met = [t for t in met if now - st.first_observed[t] >= t.grace_period]
        self._report(node, st, reported)
        if not self._evict_over_limit(node, st) and st.thresholds_met:
            threshold = by_eviction_priority(st.thresholds_met)[0]
            self._evict_one(node, st, threshold, obs[threshold.signal])
        self._schedule(node, synced=True)

    def _at_standstill(self, node: str, st: NodeState) -> bool:
        """Whether the next tick, seeing the same signals, would do exactly what this one did,
        which (the node not being busy) changed nothing: no eviction to wait for, every met
        threshold past its grace period, and no condition reported only until its transition
        period runs out. Then only a touch (usage, pods or capacity changed) can change that."""
        if st.blocked_until > self.clock.now() or not st.thresholds_met:
            return False
        met = self._met(self.observations(node), st)
        return met == st.thresholds_met and st.conditions == conditions_of(met)

    def _storage_limit_message(self, node: str, pod: PodUsage) -> str | None:
        """localStorageEviction: why a pod using more ephemeral storage than its limits allow must go
        (its containers' total limit, or one container's own), whatever the node has left."""
        if pod.base is not None or pod.critical:
            return None  # at its requests, which its limits cannot be below
        res = self.resources(node)
        return storage_limit_message(pod, res is not None and res.dedicated_imagefs)

    def _evict_over_limit(self, node: str, st: NodeState) -> bool:
        """Evict every pod over its ephemeral-storage limits at once (immediate grace, no condition)."""
        done = -math.inf
        for pod in list(self.usage.on_node(node)):
            message = self._storage_limit_message(node, pod)
            if message is not None:
                self.observer.pressure_evicted(pod.uid, {
                    "node": node, "time": self.clock.now(), "pod": f"{pod.namespace}/{pod.name}",
                    "signal": "ephemeral-storage limit", "message": message})
                done = max(done, self.kill(pod, IMMEDIATE_GRACE_PERIOD, message, False))
        if done == -math.inf:
            return False
        st.blocked_until = done + CLEANUP_POLL
        return True

    def _evict_one(self, node: str, st: NodeState, threshold: Threshold, observed: Observation) -> None:
        res = self.resources(node)
        for pod in rank(threshold.signal, self.usage.on_node(node), res is not None and res.dedicated_imagefs):
            if pod.critical:
                continue  # evictPod refuses critical pods; the next one is tried
            if threshold.hard:
                grace = IMMEDIATE_GRACE_PERIOD
            else:
                grace = max(IMMEDIATE_GRACE_PERIOD, min(self.config.max_pod_grace_period, pod.termination_grace_period))
            message = eviction_message(threshold, observed, pod)
            node_obj = self.api.store.get("Node", "", node)
            if node_obj is not None:
                self.api.record_event(node_obj, "Warning", "EvictionThresholdMet",
                                      f"Attempting to reclaim {SIGNAL_RESOURCE[threshold.signal]}", source="kubelet")
            self.observer.pressure_evicted(pod.uid, {"node": node, "time": self.clock.now(),
                                                     "pod": f"{pod.namespace}/{pod.name}",
                                                     **summary(threshold, observed), "message": message})
            st.blocked_until = self.kill(pod, grace, message, True) + CLEANUP_POLL
            return

    def _report(self, node: str, st: NodeState, reported: set[str]) -> None:
        """Write the pressure conditions that changed on the Node, with the kubelet's node events."""
        changed = [c for c in CONDITIONS if (c in reported) != (c in st.conditions)]
        st.conditions = reported
        if not changed:
            return
        stamp = self.api.timestamp()

        def write(status: Obj) -> bool:
            dirty = False
            for ctype in changed:
                (true_reason, true_msg), (false_reason, false_msg), _ = _CONDITION_TEXT[ctype]
                on = ctype in reported
                dirty |= set_condition(status, {
                    "type": ctype, "status": "True" if on else "False",
                    "reason": true_reason if on else false_reason, "message": true_msg if on else false_msg,
                    "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
            return dirty

        try:
            obj = self.api.update_status("Node", "", node, write)
        except APIError:
            return
        for ctype in changed:
            event = _CONDITION_TEXT[ctype][2][0 if ctype in reported else 1]
            self.api.record_event(obj, "Normal", event, f"Node {node} status is now: {event}", source="kubelet")
