"""The scheduling queue (backend/queue): activeQ, backoffQ, error backoffQ and unschedulable pods.

Timing follows v1.35 with its default gates: QueueingHints decide which cluster events move a
rejected pod; backoff is 1 s doubling to 10 s per unschedulable attempt, rounded down to whole
seconds and flushed on whole-second ticks; when activeQ is empty the head of backoffQ is popped
early (SchedulerPopFromBackoffQ); pods left unschedulable for 5 minutes are flushed on 30 s ticks.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.scheduler.framework import ActionType, ClusterEvent, Plugin, PreEnqueuePlugin, QueueingHint
from kubesched.scheduler.types import PodInfo, Status

UNSCHEDULABLE_TIMEOUT = 300.0
FLUSH_UNSCHEDULABLE_PERIOD = 30.0
ACTIVE, BACKOFF, ERROR_BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "errorBackoff", "unsched", "flight"


@dataclass(eq=False)
class QueuedPodInfo:
    pod: PodInfo
    timestamp: float
    attempts: int = 0
    events_seen: int = 0  # the queue's event count when the pod last failed with an error
    rejectors: set[str] = field(default_factory=set)  # UnschedulablePlugins ∪ PendingPlugins
    gated: Status | None = None
    where: str = ""
    token: int = 0  # bumped on every (re)insertion so stale heap entries are recognised
    unschedulable_seq: int = 0  # when it last entered the unschedulable pool: the pool's order
    # The order in which timestamps were taken: upstream's are wall-clock instants, never equal,
    # so pods stamped at one virtual instant keep the order they were stamped in.
    stamp: int = 0
    cares: tuple[str, ...] = ()  # the pool's event index entries it is under (see SchedulingQueue._cares)
    # Wall-clock seconds (time.perf_counter) when the pod was first queued and when its current
    # attempt began: what a scheduler's metrics time (a live scheduler's /metrics); 0 unobserved.
    first_queued: float = 0.0
    attempt_started: float = 0.0

    @property
    def uid(self) -> str:
        return self.pod.uid


@dataclass(slots=True)  # not frozen: one is made for nearly every pod write, three times cheaper
class Event:
    """A cluster change delivered to the queue: `ClusterEvent` pattern plus the objects."""

    resource: str
    action: ActionType
    old: Any = None
    new: Any = None


class SchedulingQueue:
    def __init__(self, sort_key: Callable[[QueuedPodInfo], Any], now: Callable[[], float],
                 pre_enqueue: list[PreEnqueuePlugin], plugins: list[Plugin],
                 initial_backoff: float = 1.0, max_backoff: float = 10.0) -> None:
        self._key = sort_key
        self._now = now
        self._pre_enqueue = pre_enqueue
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self._seq = itertools.count()
        self._stamps = itertools.count()
        self._active: list[tuple[Any, int, int, int, QueuedPodInfo]] = []
        self._backoff: list[tuple[float, Any, int, int, int, QueuedPodInfo]] = []
        self._error_backoff: list[tuple[float, int, int, QueuedPodInfo]] = []
        self.pods: dict[str, QueuedPodInfo] = {}  # every pod the queue knows, by uid
        self._unschedulable: dict[str, QueuedPodInfo] = {}  # the unschedulablePods pool (gated pods too)
        self._in_flight_events: dict[str, list[Event]] = {}
        # Registrations by resource, and those an (event resource, action) matches, worked out once.
        self._hints: dict[str, list[tuple[str, ClusterEvent]]] = {}
        self._matches: dict[tuple[str, ActionType], list[tuple[str, ClusterEvent]]] = {}
        for pl in plugins:
            for ev in pl.events_to_register():
                self._hints.setdefault(ev.resource, []).append((pl.name, ev))
        self._registers_events = {pl.name for pl in plugins if pl.events_to_register()}
        self._events = 0  # cluster events delivered so far
        # The pool's non-gated pods by the plugins whose hints may move them ("" for pods every
        # event moves), so an event only looks at the pods it could concern; and a heap of their
        # (timestamp, pool seq), stale entries skipped, for the oldest one.
        self._cares: dict[str, dict[str, QueuedPodInfo]] = {}
        self._oldest: list[tuple[float, int, int, QueuedPodInfo]] = []
        self._pool_seq = itertools.count(1)

    # ---- bookkeeping ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.pods)

    def pending(self) -> dict[str, int]:
        """How many pods wait where (the scheduler_pending_pods gauge's `queue` label; popped
        pods, in a scheduling or binding cycle, are in none)."""
        where = [q.where for q in self.pods.values() if q.gated is None]
        return {"active": where.count(ACTIVE), "backoff": where.count(BACKOFF) + where.count(ERROR_BACKOFF),
                "unschedulable": where.count(UNSCHEDULABLE),
                "gated": sum(1 for q in self.pods.values() if q.gated is not None)}

    def _put(self, q: QueuedPodInfo, where: str) -> None:
        q.where = where
        q.token += 1
        self._uncare(q)
        if where == UNSCHEDULABLE:
            if q.uid not in self._unschedulable:
                q.unschedulable_seq = next(self._pool_seq)
            self._unschedulable[q.uid] = q
            if q.gated is None:
                q.cares = self._care_keys(q)
                for key in q.cares:
                    self._cares.setdefault(key, {})[q.uid] = q
                heapq.heappush(self._oldest, (q.timestamp, q.unschedulable_seq, q.token, q))
                if len(self._oldest) > 2 * len(self._unschedulable) + 64:  # mostly stale: compact
                    self._oldest = [e for e in self._oldest if self._in_pool(e[-1], e[1])]
                    heapq.heapify(self._oldest)
        else:
            self._unschedulable.pop(q.uid, None)
        seq = next(self._seq)
        if where == ACTIVE:
            heapq.heappush(self._active, (self._key(q), q.stamp, seq, q.token, q))
        elif where == BACKOFF:
            heapq.heappush(self._backoff, (self.backoff_expiry(q), self._key(q), q.stamp, seq, q.token, q))
        elif where == ERROR_BACKOFF:
            heapq.heappush(self._error_backoff, (self.backoff_expiry(q), seq, q.token, q))

    def _care_keys(self, q: QueuedPodInfo) -> tuple[str, ...]:
        """Which events may move the pod (`_worth_requeuing`): all ("") when a plugin that
        rejected it registers no events, or none did; else those its rejectors' hints cover."""
        if not q.rejectors or any(name not in self._registers_events for name in q.rejectors):
            return ("",)
        return tuple(q.rejectors)

    def _uncare(self, q: QueuedPodInfo) -> None:
        for key in q.cares:
            del self._cares[key][q.uid]
        q.cares = ()

    def _in_pool(self, q: QueuedPodInfo, seq: int) -> bool:
        """Whether `q` is still the non-gated pod that entered the pool as `seq`."""
        return q.where == UNSCHEDULABLE and q.unschedulable_seq == seq and q.gated is None

    @staticmethod
    def _live(entry: tuple, where: str) -> bool:
        q = entry[-1]
        return q.where == where and q.token == entry[-2]

    def _clean(self, heap: list, where: str) -> None:
        while heap and not self._live(heap[0], where):
            heapq.heappop(heap)

    # ---- backoff ------------------------------------------------------------------------------

    def backoff_expiry(self, q: QueuedPodInfo) -> float:
        """getBackoffTime: the initial backoff doubled per scheduling attempt, capped, from the
        pod's last failure, truncated to the whole second (the backoffQ's ordering window)."""
        if q.attempts == 0 or self.max_backoff == 0:
            return -math.inf
        duration = min(self.initial_backoff * 2 ** min(q.attempts - 1, 64), self.max_backoff)
        return math.floor(q.timestamp + duration)

    def backing_off(self, q: QueuedPodInfo) -> bool:
        return not self.backoff_expiry(q) < math.floor(self._now())

    # ---- intake -----------------------------------------------------------------------------

    def _run_pre_enqueue(self, q: QueuedPodInfo) -> bool:
        for pl in self._pre_enqueue:
            status = pl.pre_enqueue(q.pod)
            if not status.ok:
                q.gated = status
                q.rejectors = {pl.name}
                return False
        q.gated = None
        return True

    def add(self, pod: PodInfo) -> None:
        q = QueuedPodInfo(pod, self._now(), stamp=next(self._stamps))
        self.pods[pod.uid] = q
        self._put(q, ACTIVE if self._run_pre_enqueue(q) else UNSCHEDULABLE)

    def update(self, pod: PodInfo) -> None:
        q = self.pods.get(pod.uid)
        if q is None:
            self.add(pod)
            return
        old = q.pod
        q.pod = pod
        if q.where in (ACTIVE, BACKOFF, ERROR_BACKOFF):
            self._put(q, q.where)  # re-key: priority and labels may have changed
        elif q.where == IN_FLIGHT:
            self._in_flight_events.setdefault(pod.uid, []).append(Event("Pod", ActionType.Update, old, pod))
        elif q.where == UNSCHEDULABLE:
            if q.gated is not None:
                if self._run_pre_enqueue(q):
                    self._put(q, ACTIVE)
                return
            ev = Event("Pod", ActionType.Update, old, pod)
            if self._worth_requeuing(q, ev, self_update=True):
                self._requeue(q)

    def delete(self, uid: str) -> None:
        q = self.pods.pop(uid, None)
        if q is not None:
            q.where = ""
            self._uncare(q)
            self._unschedulable.pop(uid, None)
            self._in_flight_events.pop(uid, None)

    # ---- pop / done ---------------------------------------------------------------------------

    def has_ready(self) -> bool:
        self._clean(self._active, ACTIVE)
        self._clean(self._backoff, BACKOFF)
        return bool(self._active or self._backoff)

    def pop(self) -> QueuedPodInfo | None:
        self._clean(self._active, ACTIVE)
        if self._active:
            q = heapq.heappop(self._active)[-1]
        else:
            self._clean(self._backoff, BACKOFF)
            if not self._backoff:
                return None
            q = heapq.heappop(self._backoff)[-1]
        q.where = IN_FLIGHT
        q.token += 1
        q.attempts += 1
        self._in_flight_events[q.uid] = []
        return q

    def done_success(self, q: QueuedPodInfo) -> None:
        self.delete(q.uid)

    def add_unschedulable(self, q: QueuedPodInfo, rejectors: set[str]) -> None:
        """A failed attempt: back to unschedulable, or to a backoff queue if an event already helps it."""
        if self.pods.get(q.uid) is not q:
            return  # deleted or bound meanwhile
        events = self._in_flight_events.pop(q.uid, [])
        q.rejectors = set(rejectors)
        q.timestamp, q.stamp = self._now(), next(self._stamps)
        if not rejectors:
            q.events_seen = self._events
            self._put(q, ERROR_BACKOFF)
            return
        if any(self._worth_requeuing(q, ev) for ev in events):
            self._requeue(q)
        else:
            self._put(q, UNSCHEDULABLE)

    def _requeue(self, q: QueuedPodInfo) -> None:
        if self.backing_off(q):
            self._put(q, BACKOFF)
        elif self._run_pre_enqueue(q):
            self._put(q, ACTIVE)
        else:
            self._put(q, UNSCHEDULABLE)

    # ---- cluster events -----------------------------------------------------------------------

    def _worth_requeuing(self, q: QueuedPodInfo, ev: Event, self_update: bool = False,
                         matching: list[tuple[str, ClusterEvent]] | None = None) -> QueueingHint:
        """Queue (after backoff) or QueueSkip (stay in the pool)."""
        if not q.rejectors:
            return QueueingHint.Queue
        for plugin in q.rejectors:
            if plugin not in self._registers_events:
                return QueueingHint.Queue  # plugins without EnqueueExtensions get every event
        for plugin_name, reg in self._matching(ev) if matching is None else matching:
            if plugin_name not in q.rejectors:
                continue
            if ev.resource == "Pod" and not self_update:
                continue
            if reg.hint is None or reg.hint(q.pod, ev.old, ev.new):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def _matching(self, ev: Event) -> list[tuple[str, ClusterEvent]]:
        """The registrations `ev` matches: same resource, an action bit in common."""
        key = (ev.resource, ev.action)
        found = self._matches.get(key)
        if found is None:
            found = self._matches[key] = [(name, reg) for name, reg in self._hints.get(ev.resource, ())
                                          if reg.action & ev.action]
        return found

    def move_all(self, ev: Event, only: Callable[[QueuedPodInfo], bool] | None = None) -> bool:
        """MoveAllToActiveOrBackoffQueue (`only`: its preCheck); returns whether any pod moved."""
        self._events += 1
        for events in self._in_flight_events.values():
            events.append(ev)
        moved = False
        matching = self._matching(ev)
        # Pods whose rejectors all register events and none of them this one cannot move; pod
        # events other than the pod's own update move none of those either.
        keys = {""} if ev.resource == "Pod" else {""} | {name for name, _ in matching}
        groups = [self._cares[key] for key in keys if self._cares.get(key)]
        if not groups:
            return False
        concerned = list(groups[0].values()) if len(groups) == 1 else list({
            uid: q for group in groups for uid, q in group.items()}.values())
        concerned.sort(key=lambda q: q.unschedulable_seq)  # the pool's order
        for q in [q for q in concerned if only is None or only(q)]:
            if self._worth_requeuing(q, ev, matching=matching):
                self._requeue(q)
                moved = True
        return moved

    # ---- periodic flushes ---------------------------------------------------------------------

    def next_flushes(self) -> tuple[float | None, float | None]:
        """The next ticks at which a flush would move something: one that matters, and one that
        is only housekeeping repeating a known answer unless something else changes (the
        5-minute leftover flush; retrying pods that failed with an error, such as no nodes at
        all, when no cluster event came since, which a simulation's deterministic state does not
        cure by waiting). A run that has only housekeeping left is over."""
        if not (self._backoff or self._error_backoff or self._oldest):
            return None, None  # nothing waits: what most pod events find
        now = math.floor(self._now()) + 1
        live: list[float] = []
        idle: list[float] = []
        self._clean(self._backoff, BACKOFF)
        if self._backoff:
            live.append(max(self._backoff[0][0] + 1, now))
        self._clean(self._error_backoff, ERROR_BACKOFF)
        for entry in self._error_backoff:
            q = entry[-1]
            if self._live(entry, ERROR_BACKOFF):
                (idle if q.events_seen == self._events else live).append(max(entry[0] + 1, now))
        heap = self._oldest
        while heap and not self._in_pool(heap[0][-1], heap[0][1]):
            heapq.heappop(heap)
        if heap:
            due = heap[0][0] + UNSCHEDULABLE_TIMEOUT
            tick = (math.floor(due / FLUSH_UNSCHEDULABLE_PERIOD) + 1) * FLUSH_UNSCHEDULABLE_PERIOD
            idle.append(max(tick, self._now()))
        return min(live, default=None), min(idle, default=None)

    def flush(self) -> None:
        now = self._now()
        heaps: tuple[tuple[list[Any], str], ...] = ((self._backoff, BACKOFF), (self._error_backoff, ERROR_BACKOFF))
        for heap, where in heaps:
            while True:
                self._clean(heap, where)
                if not heap or self.backing_off(heap[0][-1]):
                    break
                q = heapq.heappop(heap)[-1]
                self._put(q, ACTIVE)
        if now % FLUSH_UNSCHEDULABLE_PERIOD == 0:
            for q in [q for q in self._unschedulable.values() if q.gated is None]:
                if now - q.timestamp > UNSCHEDULABLE_TIMEOUT:
                    self._requeue(q)
