"""The work queue every controller syncs from, as client-go's workqueue does: a key added while
it is already waiting is not added twice, so a burst of watch events costs one sync."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from kubesched.runtime.clock import Clock


class WorkQueue:
    """Keys are synced soon after they are added, in the order they were first added."""

    def __init__(self, clock: Clock, sync: Callable[[Any], None]) -> None:
        self._clock = clock
        self._sync = sync
        self._waiting: set[Hashable] = set()

    def add(self, key: Hashable) -> None:
        if key not in self._waiting:
            self._waiting.add(key)
            self._clock.call_soon(lambda: self._run(key))

    def waiting(self) -> int:
        """How many keys wait for their sync."""
        return len(self._waiting)

    def add_after(self, key: Hashable, delay: float) -> None:
        """Requeue later (a recheck when something expires)."""
        self._clock.call_later(delay, lambda: self.add(key))

    def _run(self, key: Hashable) -> None:
        self._waiting.discard(key)
        self._sync(key)
