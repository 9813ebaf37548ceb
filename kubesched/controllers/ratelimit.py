"""Retrying a failed sync, as the controllers' rate-limited work queue does (AddRateLimited with
the default per-item exponential limiter: 5 ms, doubling, at most 1000 s; Forget on success).

The retries are daemon timers: a failure the API keeps giving (a template naming a missing
PriorityClass) would come back forever, and only a change made by something else (a timed event
creating the class) can end it, so retries alone never keep a simulation running.
"""

from __future__ import annotations

from collections.abc import Hashable

from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue

BASE_DELAY = 0.005
MAX_DELAY = 1000.0


class FailureBackoff:
    def __init__(self, clock: Clock, queue: WorkQueue) -> None:
        self._clock = clock
        self._queue = queue
        self._failures: dict[Hashable, int] = {}

    def retry(self, key: Hashable) -> None:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = min(BASE_DELAY * 2 ** min(n, 40), MAX_DELAY)
        self._clock.call_at(self._clock.now() + delay, lambda: self._queue.add(key), daemon=True)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)
