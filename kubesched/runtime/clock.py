"""Clocks: the one place that knows whether time is virtual or real.

Components only ever ask the clock for `now()` and schedule callbacks; in simulation the
clock jumps from one due callback to the next, so an hour of cluster time costs only the work
done in it. Callbacks due at the same instant run by rank, then in the order they were scheduled,
which is what makes a run reproducible:

* REACT - what components do in reaction to a change (syncs, bindings, kubelets, scenario events);
* SCHEDULE - a scheduling cycle: it starts once the reactions to everything before it at this
  instant have run, as kube-scheduler's informers have caught up before it takes its snapshot;
* LATE - observers and housekeeping that look at the instant once it has settled.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Protocol

REACT, SCHEDULE, LATE = 0, 1, 2
# Housekeeping that has changed nothing for this long repeats itself: the clock jumps ahead by whole
# hours, a multiple of every housekeeping period (1 s to 5 min ticks), which keeps their phases.
IDLE_JUMP = 3600.0


class Timer:
    """A scheduled callback; `cancel()` makes it a no-op without touching the heap."""

    __slots__ = ("when", "rank", "seq", "fn", "daemon", "fixed", "cancelled", "owner")

    def __init__(self, when: float, rank: int, seq: int, fn: Callable[[], object], daemon: bool = False,
                 owner: VirtualClock | None = None, fixed: bool = False) -> None:
        self.when = when
        self.rank = rank  # REACT, SCHEDULE or LATE: the order among callbacks due at the same instant
        self.seq = seq
        self.fn = fn
        self.daemon = daemon
        self.fixed = fixed  # a daemon due at a set instant (a cron schedule), not a period's next tick
        self.cancelled = False
        self.owner = owner

    def __repr__(self) -> str:
        return f"Timer(when={self.when}, rank={self.rank}, seq={self.seq}, cancelled={self.cancelled})"

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            if not self.daemon and self.owner is not None:
                self.owner._live -= 1


class Clock(Protocol):
    """What components ask of time: `now()` and callbacks at a time. A VirtualClock alone
    (simulate), or driven by the wall clock (serve, live mode); no component knows which."""

    def now(self) -> float: ...

    def call_at(self, when: float, fn: Callable[[], object], daemon: bool = False, rank: int = REACT,
                fixed: bool = False) -> Timer: ...

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer: ...

    def call_soon(self, fn: Callable[[], object], rank: int = REACT) -> Timer: ...

    def horizon(self) -> float: ...


class VirtualClock:
    """Discrete-event clock: time advances only when the next timer is due."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        # (when, rank, seq, timer): tuples, so that the heap compares them in C
        self._heap: list[tuple[float, int, int, Timer]] = []
        self._seq = itertools.count()
        self._live = 0  # pending non-daemon timers
        self._stopped = False
        # How many changes the run has made that matter (the cluster's writes, not its Events); set,
        # it lets `run` jump over housekeeping that changes nothing (see `_jump`).
        self.changes: Callable[[], int] | None = None
        self._until: float | None = None  # where the run in progress ends

    def now(self) -> float:
        return self._now

    def horizon(self) -> float:
        """The instant the run in progress goes to (now when none does, or it has no end): a
        periodic writer may sleep through a jump ahead and write once at its end, as a kubelet
        whose machine was suspended does, where every tick in between would only be overwritten
        before anyone could read it."""
        return self._now if self._until is None else max(self._until, self._now)

    def call_at(self, when: float, fn: Callable[[], object], daemon: bool = False, rank: int = REACT,
                fixed: bool = False) -> Timer:
        """Schedule `fn`; a daemon timer (periodic housekeeping) alone does not keep a run going;
        `rank` orders it among the callbacks due at the same instant; a `fixed` daemon is due at
        that instant whatever came before (a jump over idle housekeeping stops short of it)."""
        timer = Timer(max(when, self._now), rank, next(self._seq), fn, daemon, owner=self, fixed=fixed)
        heapq.heappush(self._heap, (timer.when, rank, timer.seq, timer))
        if not daemon:
            self._live += 1
        return timer

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        return self.call_at(self._now + delay, fn)

    def call_soon(self, fn: Callable[[], object], rank: int = REACT) -> Timer:
        return self.call_at(self._now, fn, rank=rank)

    def next_time(self) -> float | None:
        while self._heap and self._heap[0][3].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def stop(self) -> None:
        """End `run` after the current callback (a run found to be going round in circles)."""
        self._stopped = True

    def run(self, until: float | None = None, progress: Callable[[float], None] | None = None,
            limit: float = math.inf) -> bool:
        """Run due callbacks in (time, scheduling order) until `until`, or without it until only
        daemon timers are left: then nothing more can happen that they would not just repeat.
        `limit` is the last instant time can reach at all (where timestamps end); False if the run
        stopped there with work left. `progress` is told the virtual time now and then (every
        50,000 callbacks)."""
        if until is not None:
            until = min(until, limit)
        outer, self._until = self._until, until
        try:
            return self._run(until, progress, limit)
        finally:
            self._until = outer

    def _run(self, until: float | None, progress: Callable[[float], None] | None, limit: float) -> bool:
        heap = self._heap
        count = 0
        idle_since, idle_mark = None, 0  # since when only housekeeping has run, and the changes then
        while heap and not self._stopped:
            if until is None and self._live == 0:
                return True
            count += 1
            if progress is not None and count % 50_000 == 0:
                progress(self._now)
            timer = heap[0][3]
            if timer.daemon and not timer.cancelled and self.changes is not None:
                mark = self.changes()
                if idle_since is None or mark != idle_mark:
                    idle_since, idle_mark = timer.when, mark
                elif timer.when - idle_since >= IDLE_JUMP and \
                        self._jump(timer.when, limit if until is None else until):
                    idle_since = None
                    continue
            if until is not None and timer.when > until and not timer.cancelled:
                self._now = until
                return True
            if timer.when > limit and not timer.cancelled:
                self._now = limit
                return False
            heapq.heappop(heap)
            if timer.cancelled:
                continue
            timer.owner = None  # it has run: a later cancel() must not count it off again
            if not timer.daemon:
                self._live -= 1
            self._now = timer.when
            timer.fn()
        if until is not None and not self._stopped:
            self._now = max(self._now, until)
        return True

    def _jump(self, now: float, end: float) -> bool:
        """Move every period's next tick ahead by the whole hours before the next thing due at a set
        instant (`end`, a non-daemon timer, a fixed daemon); true if it did. Ticking there would
        only have repeated what the last hour did, which changed nothing: the same pods retried
        with the same answer, the same resyncs. The state is as ticking leaves it; the repeated
        answers (Events Kubernetes folds into one series) are not listed again."""
        due = min((t.when for _, _, _, t in self._heap if not t.cancelled and (not t.daemon or t.fixed)),
                  default=end)
        hours = math.floor((min(due, end) - now) / IDLE_JUMP)
        if hours < 1:
            return False
        shift = hours * IDLE_JUMP
        entries = [e for e in self._heap if not e[3].cancelled]
        for _, _, _, t in entries:
            if t.daemon and not t.fixed:
                t.when += shift
        self._heap[:] = [(t.when, rank, seq, t) for _, rank, seq, t in entries]
        heapq.heapify(self._heap)
        self._now = now + shift
        return True
