"""The scheduler component: watches pods and nodes, runs scheduling cycles, writes results via the API.

One cycle handles one pod, as scheduleOne does: PreFilter, Filter over nodes in zone-interleaved
round-robin order until enough feasible nodes are found, PostFilter on failure, PreScore/Score
and host selection, then Reserve, Permit and binding. Cycles run at the current clock instant;
the queue's backoff and flush timers are the only reason the scheduler waits, and a binding only
waits for a Permit or PreBind plugin (VolumeBinding, until the pod's claims are bound). Storage
objects are watched for the cluster events the volume plugins' pods wait on.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.objects import Obj, is_terminal, set_condition
from kubesched.apiserver.interface import API
from kubesched.runtime.clock import SCHEDULE, Clock, Timer
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig, build_profiles
from kubesched.scheduler.dramanager import DRA_KINDS
from kubesched.scheduler.framework import (
    ActionType,
    CycleState,
    Handle,
    Profile,
    WaitingPod,
)
from kubesched.scheduler.plugins.defaultbinder import DefaultBinder
from kubesched.scheduler.preemption import RECORD_KEY as PREEMPTION_RECORD
from kubesched.scheduler.queue import Event, QueuedPodInfo, SchedulingQueue
from kubesched.scheduler.record import DecisionRecord, ScoreDetail
from kubesched.scheduler.types import Code, NodeInfo, PodInfo, Status
from kubesched.scheduler.vectorised.filters import find_feasible, fit_error_message
from kubesched.store.base import ADDED, DELETED, WatchEvent

STORAGE_KINDS = {"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver"}
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
NOTE_LENGTH_LIMIT = 1024
MAX_PERMIT_TIMEOUT = 15 * 60.0  # framework runtime's maxTimeout


def num_feasible_nodes_to_find(percentage: int | None, num_nodes: int) -> int:
    """How many feasible nodes are enough (schedule_one.go numFeasibleNodesToFind)."""
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_nodes * min(pct, 100) // 100, MIN_FEASIBLE_NODES_TO_FIND)


@functools.lru_cache(maxsize=4)
def _preorder(size: int) -> np.ndarray:
    """Per heap index below `size`, a number that is larger the earlier a preorder walk of the
    heap's tree (children of i: 2i+1, then 2i+2) meets it."""
    keys = [0] * size
    stack, left = [0], size
    while stack:
        t = stack.pop()
        left -= 1
        keys[t] = left
        stack.extend(c for c in (2 * t + 2, 2 * t + 1) if c < size)
    return np.array(keys, dtype=np.int64)


def select_host(totals: np.ndarray) -> int:
    """Index of the winner as Go's container/heap leaves it after heap.Init (no extenders: no randomizer).

    Among equal top scores this is not always the first one. Heapify only moves values within
    subtrees, and a node keeps its own value when it equals its subtree's maximum, else takes its
    left subtree's winner unless only the right one holds the maximum: so the root ends with the top
    score met first in a preorder walk of the heap's tree, which is found without replaying it.
    """
    # Preorder among indices below n is the same in any larger tree: one table of a power-of-two
    # size serves every length up to it. The score, scaled past every preorder number, and that
    # number make one key whose maximum is the winner.
    n = len(totals)
    size = 1 << max(n - 1, 1).bit_length()
    best = int(totals.argmax())  # argmax and argmin cost a fraction of max() and min()
    lo, hi = int(totals[totals.argmin()]), int(totals[best])
    if lo == hi:
        return 0  # all equal: the root
    bound = 2**62 // size
    if -bound < lo and hi < bound:
        key = totals * size
        key += _preorder(size)[:n]
        return int(key.argmax())
    top = np.flatnonzero(totals == hi)
    return int(top[_preorder(size).take(top).argmax()])


def format_go_duration(seconds: float) -> str:
    """Go's time.Duration String() for whole and fractional seconds ("10s", "1m30s", "1.5s")."""
    whole = int(seconds)
    if whole != seconds or seconds < 60:
        return f"{seconds:g}s"
    h, rem = divmod(whole, 3600)
    m, sec = divmod(rem, 60)
    return (f"{h}h" if h else "") + f"{m}m{sec}s"


@dataclass
class Failure:
    """Why an attempt failed: the message users see and the plugins to wait on."""

    message: str
    code: Code
    rejectors: set[str] = field(default_factory=set)
    statuses: dict[str, Status] = field(default_factory=dict)
    nominate: str | None = ""  # NominatingInfo: a node, "" to clear the nomination, None to leave it


class Scheduler:
    def __init__(self, api: API, clock: Clock, config: SchedulerConfig | None = None, seed: int = 0,
                 explain: set[str] | None = None, observer: Observer = NULL_OBSERVER,
                 features: FeatureGates = DEFAULT_FEATURE_GATES) -> None:
        self.api = api
        self.clock = clock
        self.config = config or SchedulerConfig()
        self.cache = Cache()
        self.handle = Handle(self.cache, api.store, clock, observer)
        self.handle.api = api
        self.handle.rng = random.Random(seed)
        self.handle.features = features  # before the plugins are built: they may read it then
        self.handle.dra.taint_rules = features.enabled("DRADeviceTaintRules")
        self.nominator = self.handle.nominator
        self.profiles: dict[str, Profile] = build_profiles(self.config, self.handle)
        self.handle.profiles = self.profiles
        for profile in self.profiles.values():
            for pl in profile.at("bind"):
                if isinstance(pl, DefaultBinder):
                    pl.binder = api.bind
        first = next(iter(self.profiles.values()))
        all_plugins = {pl.name: pl for p in self.profiles.values() for pls in p.plugins.values() for pl in pls}
        self.queue = SchedulingQueue(first.at("queueSort")[0].sort_key(), clock.now, first.at("preEnqueue"),
                                     list(all_plugins.values()), self.config.initial_backoff,
                                     self.config.max_backoff)
        self.next_start = 0
        self.explain = explain
        self.records: dict[str, list[DecisionRecord]] = {}
        self._cycle_timer: Timer | None = None
        # Told of every attempt's end in wall-clock seconds (SchedulerMetrics in live mode).
        self.metrics: Any = None
        self._flush_timers: dict[bool, Timer | None] = {False: None, True: None}  # by daemon

    # ---- wiring ---------------------------------------------------------------------------------

    def start(self) -> None:
        store = self.api.store
        for node in store.list("Node"):
            self.cache.add_node(node)
        for pod in store.list("Pod"):
            self._on_pod(WatchEvent(ADDED, "Pod", pod, None))
        store.watch(self._on_node, {"Node"})
        store.watch(self._on_pod, {"Pod"})
        store.watch(self._on_storage, STORAGE_KINDS)
        for kind in sorted(DRA_KINDS):
            for obj in store.list(kind):
                self.handle.dra.on_event(WatchEvent(ADDED, kind, obj, None))
        store.watch(self._on_dra, DRA_KINDS)

    def _kick(self) -> None:
        if self._cycle_timer is None and self.queue.has_ready():
            self._cycle_timer = self.clock.call_soon(self._run_cycle, rank=SCHEDULE)
        flushes = self.queue.next_flushes()
        if flushes == (None, None):
            return  # nothing waits for a flush (timers set before stay: they find nothing to do)
        for due, daemon in zip(flushes, (False, True), strict=True):
            timer = self._flush_timers[daemon]
            if due is None or (timer is not None and not timer.cancelled and timer.when <= due):
                continue
            if timer is not None:
                timer.cancel()
            self._flush_timers[daemon] = self.clock.call_at(due, lambda d=daemon: self._flush(d), daemon=daemon)

    def _flush(self, daemon: bool) -> None:
        self._flush_timers[daemon] = None
        self.queue.flush()
        self._kick()

    def _on_node(self, ev: WatchEvent) -> None:
        if ev.type == ADDED:
            self.cache.add_node(ev.obj)
            self.queue.move_all(Event("Node", ActionType.Add, None, ev.obj))
        elif ev.type == DELETED:
            self.queue.move_all(Event("Node", ActionType.Delete, ev.obj, None))  # before the cache forgets it
            self.cache.remove_node(ev.obj["metadata"]["name"])
        else:
            self.cache.update_node(ev.obj)
            for action in node_update_actions(ev.old or {}, ev.obj):
                self.queue.move_all(Event("Node", action, ev.old, ev.obj))
        self._kick()

    def _on_storage(self, ev: WatchEvent) -> None:
        """Volumes, claims, classes and CSI objects only matter as events the volume plugins' pods
        wait for; the plugins read the objects themselves."""
        action = {ADDED: ActionType.Add, DELETED: ActionType.Delete}.get(ev.type, ActionType.Update)
        self.queue.move_all(Event(ev.kind, action, ev.obj if ev.type == DELETED else ev.old,
                                  None if ev.type == DELETED else ev.obj))
        self._kick()

    def _on_dra(self, ev: WatchEvent) -> None:
        """Claims, slices and classes: the DRA manager's indexes first, then the cluster event. A
        DeviceTaintRule reaches the queue as what it changes, its slices (an update of them, as
        the resourceslice tracker reports it)."""
        self.handle.dra.on_event(ev)
        if ev.kind == "DeviceTaintRule":
            if self.handle.dra.taint_rules:
                self.queue.move_all(Event("ResourceSlice", ActionType.Update, None, None))
                self._kick()
            return
        self._on_storage(ev)

    def _on_pod(self, ev: WatchEvent) -> None:
        pod, old = ev.obj, ev.old
        uid = pod["metadata"].get("uid", "")
        gone = ev.type == DELETED or is_terminal(pod)
        assigned = bool(pod.get("spec", {}).get("nodeName"))
        if gone:
            if self.cache.node_of(uid) is not None:
                removed = self.cache.remove_pod(uid)
                self.queue.move_all(Event("AssignedPod", ActionType.Delete, removed, None))
            self.queue.delete(uid)
            self.nominator.delete(uid)
            if not assigned:
                self._nomination_given_up(pod, (pod.get("status") or {}).get("nominatedNodeName"))
        elif assigned:
            if old is None or not old.get("spec", {}).get("nodeName"):  # it was queued or nominated until now
                self.queue.delete(uid)
                self.nominator.delete(uid)
            node = pod["spec"]["nodeName"]
            cached = self.cache.pod_info(uid)
            if cached is not None and self.cache.node_of(uid) == node and same_scheduling_view(cached.obj, pod):
                cached.obj = pod  # a status change, or the binding of a pod this scheduler assumed
                if old is not None and not old.get("spec", {}).get("nodeName"):
                    self.queue.move_all(Event("AssignedPod", ActionType.Add, old, cached))
            else:
                info = PodInfo.of(pod)
                self.cache.add_pod(info, node)
                self.queue.move_all(Event("AssignedPod", ActionType.Add if cached is None else ActionType.Update, old, info))
        elif self.cache.node_of(uid) is not None:
            pass  # assumed, not bound yet: the queue ignores its updates (the nomination binding writes)
        elif pod.get("spec", {}).get("schedulerName", "default-scheduler") in self.profiles:
            info = self._pending_info(pod, old)
            node = (pod.get("status") or {}).get("nominatedNodeName") or ""
            was = ((old or {}).get("status") or {}).get("nominatedNodeName") or ""
            if not node and not was and self.nominator.node_of(uid):
                node = self.nominator.node_of(uid) or ""  # our own nomination, not written back yet
            self.nominator.add(info, node)
            if ev.type == ADDED:
                self.queue.add(info)
            else:
                self.queue.update(info)
            if was != ((pod.get("status") or {}).get("nominatedNodeName") or ""):
                self._nomination_given_up(old or pod, was)
        self._kick()

    def _pending_info(self, pod: Obj, old: Obj | None) -> PodInfo:
        """The PodInfo of a pending pod's new version. A status write (the claim controller's
        resourceClaimStatuses, a condition) keeps the spec and metadata maps it had, and with them
        everything PodInfo derives: the queued one is reused with the new object."""
        queued = self.queue.pods.get(pod["metadata"].get("uid", ""))
        if queued is not None and old is not None and queued.pod.obj is old and pod.get("spec") is old.get("spec"):
            meta, old_meta = pod["metadata"], old["metadata"]
            if meta.get("labels") is old_meta.get("labels") \
                    and meta.get("deletionTimestamp") == old_meta.get("deletionTimestamp"):
                return dataclasses.replace(queued.pod, obj=pod)
        return PodInfo.of(pod)

    def _nomination_given_up(self, pod: Obj, node: str | None) -> None:
        """A pending pod whose nominatedNodeName went away (changed, cleared, or the pod deleted)
        frees what it held on that node for pods of lower or equal priority, which upstream
        signals as an assigned pod's deletion (hasNominatedNodeNameChanged)."""
        if not node:
            return
        priority = (pod.get("spec") or {}).get("priority") or 0
        self.queue.move_all(Event("AssignedPod", ActionType.Delete, PodInfo.of(pod), None),
                            only=lambda q: q.pod.priority <= priority)

    # ---- the scheduling cycle -------------------------------------------------------------------

    def _run_cycle(self) -> None:
        self._cycle_timer = None
        q = self.queue.pop()
        if q is not None:
            self.schedule_one(q)
        self._kick()

    def _record(self, pod: PodInfo, profile: Profile, attempt: int, num_nodes: int) -> DecisionRecord | None:
        if self.explain is None or (pod.key not in self.explain and "*" not in self.explain):
            return None
        rec = DecisionRecord(pod.key, self.clock.now(), attempt, profile.scheduler_name, num_nodes)
        self.records.setdefault(pod.key, []).append(rec)
        return rec

    def schedule_one(self, q: QueuedPodInfo) -> None:
        pod = q.pod
        profile = self.profiles[pod.scheduler_name]
        if pod.terminating:
            self.api.record_event(pod.obj, "Warning", "FailedScheduling",
                                  f"skip schedule deleting pod: {pod.namespace}/{pod.name}", source=pod.scheduler_name)
            self.queue.delete(pod.uid)
            return
        state = CycleState()
        if self.metrics is not None:
            q.attempt_started = time.perf_counter()
            q.first_queued = q.first_queued or q.attempt_started
        nodes, _ = self.cache.ordered()
        rec = self._record(pod, profile, q.attempts, len(nodes))
        result = self._schedule_pod(profile, state, pod, rec)
        if isinstance(result, Failure):
            self._handle_failure(q, profile, state, result, rec)
            return
        self._assume_and_bind(q, profile, state, result, rec)

    def _details(self, profile: Profile, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
                 ) -> dict[str, str]:
        """What the rejecting plugins can say of each node beyond their message (`--explain`)."""
        plugins = {pl.name: pl for pl in profile.at("filter")}
        out = {}
        for name, status in statuses.items():
            plugin, node = plugins.get(status.plugin), self.cache.nodes.get(name)
            if plugin is not None and node is not None:
                detail = plugin.explain(state, pod, node, status)
                if detail:
                    out[name] = detail
        return out

    def _schedule_pod(self, profile: Profile, state: CycleState, pod: PodInfo,
                      rec: DecisionRecord | None) -> str | Failure:
        all_nodes, all_slots = self.cache.ordered()
        if not all_nodes:
            return Failure(NO_NODES_AVAILABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        num_all = len(all_nodes)
        pre, status, rejectors = profile.run_pre_filter(state, pod, all_nodes)
        if not status.ok:
            if status.code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                return Failure(status.message(), Code.ERROR)
            statuses = {n.name: status for n in all_nodes}
            if rec is not None:
                rec.prefilter = f"{status.plugin}: {status.message()}"
            return self._fit_failure(profile, state, pod, rec, num_all, statuses, None, status.message(),
                                     rejectors)
        nodes, slots, absent = all_nodes, all_slots, None
        if pre.node_names is not None:
            keep = [i for i, n in enumerate(all_nodes) if n.name in pre.node_names]
            nodes, slots = [all_nodes[i] for i in keep], all_slots[keep]
            absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejectors))}]",))
        nominated = self.nominator.relevant(pod) if len(self.nominator) else {}
        first = (pod.obj.get("status") or {}).get("nominatedNodeName")
        nominated_status = None
        if first and first in self.cache.nodes:
            # The node this pod preempted on is likely the only one that fits: try it alone first.
            ni = self.cache.nodes[first]
            nominated_status = profile.filter_with_nominated(state, pod, ni, nominated.get(first, ()))
            if nominated_status.ok:
                if rec is not None:
                    rec.feasible, rec.not_checked, rec.nominated_first = [first], num_all - 1, True
                return first
        want = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, len(nodes))
        if not profile.at("score"):
            want = 1
        outcome = find_feasible(profile, state, pod, nodes, slots, self.cache.table,
                                self.next_start % max(len(nodes), 1), want, nominated)
        if nominated_status is not None and first not in outcome.statuses and first not in outcome.feasible:
            outcome.statuses[first] = nominated_status  # counted even when the full pass stopped before it
        self.next_start = (self.next_start + len(outcome.feasible) + len(outcome.statuses)) % num_all
        if rec is not None:
            rec.verdicts = {name: (st.plugin, st.code.name, list(st.reasons)) for name, st in outcome.statuses.items()}
            rec.details = self._details(profile, state, pod, outcome.statuses)
            rec.feasible = [n.name for n in outcome.feasible]
            rec.not_checked = len(nodes) - outcome.processed
            rec.skipped = sorted(state.skip_filter)
        if not outcome.feasible:
            for st, _ in outcome.statuses.counts():
                if st.rejected and st.plugin:
                    rejectors.add(st.plugin)
            return self._fit_failure(profile, state, pod, rec, num_all, outcome.statuses, absent, None, rejectors)
        if len(outcome.feasible) == 1:
            return outcome.feasible[0].name
        status = profile.run_pre_score(state, pod, outcome.feasible)
        if not status.ok:
            return Failure(status.message(), Code.ERROR)
        feasible_slots = slots[outcome.positions]
        totals, detail = profile.run_score(state, pod, outcome.feasible, feasible_slots, self.cache.table,
                                           detail=rec is not None)
        winner = outcome.feasible[select_host(totals)].name
        if rec is not None:
            rec.skipped = sorted(state.skip_filter | state.skip_score)
            rec.scores = [ScoreDetail(name, w, raw, norm) for name, (raw, norm, w) in detail.items()]
            rec.totals = totals
        return winner

    def _fit_failure(self, profile: Profile, state: CycleState, pod: PodInfo, rec: DecisionRecord | None,
                     num_all: int, statuses: dict[str, Status], absent: Status | None,
                     prefilter_msg: str | None, rejectors: set[str]) -> Failure:
        """RunPostFilterPlugins on a FitError: the first success ends it (and its message is empty);
        the reasons of plugins that could not help are joined into the message's last part."""
        plugins = profile.at("postFilter")
        if not plugins:
            return Failure(fit_error_message(num_all, statuses, absent, prefilter_msg, None), Code.UNSCHEDULABLE,
                           rejectors, statuses, "")
        if rec is not None:
            state[PREEMPTION_RECORD] = rec.postfilter = {}
        reasons: list[str] = []
        nominate: str | None = None
        for pl in plugins:
            result, status = pl.post_filter(state, pod, statuses)
            if status.ok:
                reasons, nominate = [], (result.nominated_node_name if result is not None else None)
                break
            if status.code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                # An error ends the phase; the pod is still unschedulable, the error the message's end.
                message = fit_error_message(num_all, statuses, absent, prefilter_msg, status.message())
                return Failure(message, Code.UNSCHEDULABLE, rejectors, statuses, None)
            if result is not None:
                nominate = result.nominated_node_name
            reasons.extend(status.reasons)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                break
        message = fit_error_message(num_all, statuses, absent, prefilter_msg, ", ".join(reasons) or None)
        return Failure(message, Code.UNSCHEDULABLE, rejectors, statuses, nominate)

    def _handle_failure(self, q: QueuedPodInfo, profile: Profile, state: CycleState, failure: Failure,
                        rec: DecisionRecord | None) -> None:
        pod = q.pod
        if rec is not None:
            rec.result = "Unschedulable" if failure.code != Code.ERROR else "Error"
            rec.message = failure.message
        if self.metrics is not None:
            self.metrics.attempt("unschedulable" if failure.code != Code.ERROR else "error", pod.scheduler_name,
                                 time.perf_counter() - q.attempt_started)
        current = self.api.store.get("Pod", pod.namespace, pod.name)
        if current is None or current["metadata"].get("uid") != pod.uid or current["spec"].get("nodeName"):
            self.queue.delete(pod.uid)
            return
        if failure.nominate is not None:
            self.nominator.add(pod, failure.nominate)
        message = failure.message
        if len(message) > NOTE_LENGTH_LIMIT:
            message = message[: NOTE_LENGTH_LIMIT - 4] + " ..."
        self.api.record_event(current, "Warning", "FailedScheduling", message, source=pod.scheduler_name)
        reason = "Unschedulable" if failure.code != Code.ERROR else "SchedulerError"
        condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                     "lastTransitionTime": self.api.timestamp(), "reason": reason, "message": failure.message}

        def update(status: Obj) -> bool:
            changed = set_condition(status, condition)
            if failure.nominate is not None and (status.get("nominatedNodeName") or "") != failure.nominate:
                changed = True
                if failure.nominate:
                    status["nominatedNodeName"] = failure.nominate
                else:
                    status.pop("nominatedNodeName", None)
            return changed

        self.api.update_status("Pod", pod.namespace, pod.name, update)
        self.queue.add_unschedulable(q, failure.rejectors)

    def _assume_and_bind(self, q: QueuedPodInfo, profile: Profile, state: CycleState, node_name: str,
                         rec: DecisionRecord | None) -> None:
        pod = q.pod
        self.cache.add_pod(pod, node_name)
        self.nominator.delete(pod.uid)
        reserved = []
        failure: Status | None = None
        for pl in profile.at("reserve"):
            st = pl.reserve(state, pod, node_name)
            reserved.append(pl)
            if not st.ok:
                failure = st if st.plugin else Status(st.code, st.reasons, pl.name)
                break
        waits: dict[str, float] = {}
        if failure is None:
            for pl in profile.at("permit"):
                st, timeout = pl.permit(state, pod, node_name)
                if st.code == Code.WAIT:
                    waits[pl.name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                elif not st.ok:
                    failure = st if st.plugin else Status(st.code, st.reasons, pl.name)
                    break
        if failure is None and waits:
            # Binding waits for the plugins' verdicts; meanwhile the pod stays assumed on the node.
            def done(wp: WaitingPod, status: Status | None) -> None:
                self.handle.waiting_pods.pop(pod.uid, None)
                self.clock.call_soon(lambda: self._finish_binding(q, profile, state, node_name, reserved, rec,
                                                                  status), rank=SCHEDULE)

            pending: dict[str, Any] = {}
            wp = WaitingPod(pod, node_name, pending, done)
            for name, timeout in waits.items():
                pending[name] = self.clock.call_later(timeout, lambda n=name, t=timeout: wp.reject(
                    n, f"rejected due to timeout after waiting {format_go_duration(t)} at plugin {n}"))
            self.handle.waiting_pods[pod.uid] = wp
            return
        # The binding cycle runs apart from the scheduling cycle (a goroutine upstream): it ends
        # before this scheduler's next cycle, but another scheduler acting at this instant does
        # not see this pod on the node until it is bound.
        self.clock.call_soon(lambda: self._finish_binding(q, profile, state, node_name, reserved, rec, failure),
                             rank=SCHEDULE)

    def _finish_binding(self, q: QueuedPodInfo, profile: Profile, state: CycleState, node_name: str,
                        reserved: list[Any], rec: DecisionRecord | None, failure: Status | None) -> None:
        """The binding cycle after Permit: PreBind (which may wait), Bind, PostBind."""
        if failure is None:
            failure = self._pre_bind_pre_flight(profile, state, q.pod, node_name)
        if failure is not None:
            self._binding_failed(q, profile, state, node_name, reserved, rec, failure)
            return
        self._pre_bind(profile, state, q.pod, node_name, 0, lambda st: self._bind_after_pre_bind(
            q, profile, state, node_name, reserved, rec, st))

    def _pre_bind_pre_flight(self, profile: Profile, state: CycleState, pod: PodInfo, node_name: str
                             ) -> Status | None:
        """RunPreBindPreFlights: plugins with nothing to do are skipped at PreBind; when one has
        work, the pod is nominated to the node first (NominatedNodeNameForExpectation)."""
        work = False
        for pl in profile.at("preBind"):
            st = pl.pre_bind_pre_flight(state, pod, node_name)
            if st.code == Code.SKIP:
                state.skip_pre_bind.add(pl.name)
            elif st.ok:
                work = True
            else:
                return Status(Code.ERROR, (f'running PreBindPreFlight "{pl.name}": {st.message()}',), pl.name)
        if work:
            current = self.api.store.get("Pod", pod.namespace, pod.name)
            if current is not None and current["metadata"].get("uid") == pod.uid \
                    and (current.get("status") or {}).get("nominatedNodeName") != node_name:
                self.api.update_status("Pod", pod.namespace, pod.name,
                                       lambda st: st.update(nominatedNodeName=node_name))
        return None

    def _pre_bind(self, profile: Profile, state: CycleState, pod: PodInfo, node_name: str, start: int,
                  then: Callable[[Status | None], None]) -> None:
        """RunPreBindPlugins from plugin `start` on, then `then(failure or None)`; a plugin returning
        WAIT continues the chain when it calls handle.resume_pre_bind."""
        plugins = profile.at("preBind")
        for i in range(start, len(plugins)):
            pl = plugins[i]
            if pl.name in state.skip_pre_bind:
                continue
            st = pl.pre_bind(state, pod, node_name)
            if st.code == Code.WAIT:
                def resume(result: Status, i: int = i, name: str = pl.name) -> None:
                    if result.ok:
                        self._pre_bind(profile, state, pod, node_name, i + 1, then)
                    else:
                        then(_pre_bind_failure(name, result))

                self.handle.pre_binding[pod.uid] = resume
                return
            if not st.ok and st.code != Code.SKIP:
                then(_pre_bind_failure(pl.name, st))
                return
        then(None)

    def _bind_after_pre_bind(self, q: QueuedPodInfo, profile: Profile, state: CycleState, node_name: str,
                             reserved: list[Any], rec: DecisionRecord | None, failure: Status | None) -> None:
        pod = q.pod
        if failure is None:
            failure = self._bind(profile, state, pod, node_name)
        if failure is not None:
            self._binding_failed(q, profile, state, node_name, reserved, rec, failure)
            return
        if rec is not None:
            rec.result, rec.chosen = "Scheduled", node_name
        if self.metrics is not None:
            now = time.perf_counter()
            self.metrics.attempt("scheduled", pod.scheduler_name, now - q.attempt_started)
            self.metrics.pod_scheduled(q.attempts, now - q.first_queued)
        self.queue.done_success(q)
        self.api.record_event(pod.obj, "Normal", "Scheduled",
                              f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}",
                              source=pod.scheduler_name)
        for pl in profile.at("postBind"):
            pl.post_bind(state, pod, node_name)

    def _binding_failed(self, q: QueuedPodInfo, profile: Profile, state: CycleState, node_name: str,
                        reserved: list[Any], rec: DecisionRecord | None, failure: Status) -> None:
        """handleBindingCycleError: unreserve, forget the assumed pod (an assigned pod's deletion
        to the queue) and handle the failure, which clears the pod's nomination."""
        pod = q.pod
        for pl in reversed(reserved):
            pl.unreserve(state, pod, node_name)
        self.cache.remove_pod(pod.uid)
        self.queue.move_all(Event("AssignedPod", ActionType.Delete, pod, None))
        rejected = failure.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        msg = failure.message() if not rejected else fit_error_message(1, {node_name: failure}, None, None, None)
        self._handle_failure(q, profile, state, Failure(msg, failure.code, {failure.plugin} if rejected else set()),
                             rec)
        self._kick()

    def _bind(self, profile: Profile, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in profile.at("bind"):
            st = pl.bind(state, pod, node_name)
            if st.code == Code.SKIP:
                continue
            return None if st.ok else st
        return Status(Code.ERROR, ("no bind plugin bound the pod",))

    # ---- introspection ------------------------------------------------------------------------

    def node_info(self, name: str) -> NodeInfo | None:
        return self.cache.nodes.get(name)


def _pre_bind_failure(plugin: str, status: Status) -> Status:
    """A PreBind plugin's failure as RunPreBindPlugins reports it: a rejection as it is, anything
    else as an error naming the plugin."""
    if status.rejected:
        return Status(status.code, status.reasons, plugin)
    return Status(Code.ERROR, (f'running PreBind plugin "{plugin}": {status.message()}',), plugin)


def same_scheduling_view(a: Obj, b: Obj) -> bool:
    """Whether two versions of a pod look the same to the scheduler (spec other than nodeName,
    labels, termination); status-only updates then cost no re-parsing."""
    ma, mb = a["metadata"], b["metadata"]
    if ma.get("labels") != mb.get("labels") or ma.get("deletionTimestamp") != mb.get("deletionTimestamp"):
        return False
    sa, sb = a.get("spec", {}), b.get("spec", {})
    if sa is sb:
        return True
    if len(sa) - ("nodeName" in sa) != len(sb) - ("nodeName" in sb):
        return False
    for k, v in sa.items():  # a binding copies the spec's values, so most are the same objects
        if k != "nodeName":
            w = sb.get(k)
            if w is not v and w != v:
                return False
    return True


def node_update_actions(old: Obj, new: Obj) -> list[ActionType]:
    """The scheduling-relevant parts of a node update (NodeSchedulingPropertiesChange)."""
    actions: list[ActionType] = []
    os_, ns = old.get("status") or {}, new.get("status") or {}
    if os_.get("allocatable") != ns.get("allocatable"):
        actions.append(ActionType.UpdateNodeAllocatable)
    if old.get("metadata", {}).get("labels") != new.get("metadata", {}).get("labels"):
        actions.append(ActionType.UpdateNodeLabel)
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    if ospec.get("taints") != nspec.get("taints") or (ospec.get("unschedulable") and not nspec.get("unschedulable")):
        actions.append(ActionType.UpdateNodeTaint)
    if os_.get("conditions") != ns.get("conditions"):
        actions.append(ActionType.UpdateNodeCondition)
    if old.get("metadata", {}).get("annotations") != new.get("metadata", {}).get("annotations"):
        actions.append(ActionType.UpdateNodeAnnotation)
    return actions
