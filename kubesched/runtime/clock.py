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
from collections.abc import Callable
from typing import Protocol

REACT, SCHEDULE, LATE = 0, 1, 2


class Timer:
    """A scheduled callback; `cancel()` makes it a no-op without touching the heap."""

    __slots__ = ("when", "rank", "seq", "fn", "daemon", "cancelled", "owner")

    def __init__(self, when: float, rank: int, seq: int, fn: Callable[[], object], daemon: bool = False,
                 owner: VirtualClock | None = None) -> None:
        self.when = when
        self.rank = rank  # REACT, SCHEDULE or LATE: the order among callbacks due at the same instant
        self.seq = seq
        self.fn = fn
        self.daemon = daemon
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

    def call_at(self, when: float, fn: Callable[[], object], daemon: bool = False, rank: int = REACT) -> Timer: ...

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer: ...

    def call_soon(self, fn: Callable[[], object], rank: int = REACT) -> Timer: ...


class VirtualClock:
    """Discrete-event clock: time advances only when the next timer is due."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        # (when, rank, seq, timer): tuples, so that the heap compares them in C
        self._heap: list[tuple[float, int, int, Timer]] = []
        self._seq = itertools.count()
        self._live = 0  # pending non-daemon timers
        self._stopped = False

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, fn: Callable[[], object], daemon: bool = False, rank: int = REACT) -> Timer:
        """Schedule `fn`; a daemon timer (periodic housekeeping) alone does not keep a run going;
        `rank` orders it among the callbacks due at the same instant."""
        timer = Timer(max(when, self._now), rank, next(self._seq), fn, daemon, owner=self)
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

    def run(self, until: float | None = None, progress: Callable[[float], None] | None = None) -> None:
        """Run due callbacks in (time, scheduling order) until `until`, or without it until only
        daemon timers are left: then nothing more can happen that they would not just repeat.
        `progress` is told the virtual time now and then (every 50,000 callbacks)."""
        heap = self._heap
        count = 0
        while heap and not self._stopped:
            if until is None and self._live == 0:
                return
            count += 1
            if progress is not None and count % 50_000 == 0:
                progress(self._now)
            timer = heap[0][3]
            if until is not None and timer.when > until and not timer.cancelled:
                self._now = until
                return
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
