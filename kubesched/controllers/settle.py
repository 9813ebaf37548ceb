"""Syncs that can wait until the current instant has settled.

A pod's readiness changing only changes what a workload's status reports, never which pods the
controller creates or deletes; syncing for it at once would repeat a whole sync for every pod a
rollout starts. Those syncs are gathered and run once, after everything else due at that virtual
instant (a late timer), still at the same instant. Upstream's status writes trail the pods as
well, by however long its informers and workers take.
"""

from __future__ import annotations

from collections.abc import Hashable

from kubesched.runtime.clock import LATE, Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import MODIFIED, WatchEvent


class SettledSyncs:
    def __init__(self, clock: Clock, queue: WorkQueue) -> None:
        self._clock = clock
        self._queue = queue
        self._keys: dict[Hashable, None] = {}  # insertion-ordered set
        self._pending = False

    def add(self, key: Hashable) -> None:
        self._keys[key] = None
        if not self._pending:
            self._pending = True
            self._clock.call_at(self._clock.now(), self._flush, rank=LATE)

    def _flush(self) -> None:
        keys, self._keys, self._pending = list(self._keys), {}, False
        for key in keys:
            self._queue.add(key)


def status_only(ev: WatchEvent) -> bool:
    """An update that changed nothing but the status (and so the resourceVersion)."""
    if ev.type != MODIFIED or ev.old is None:
        return False
    old, new = ev.old, ev.obj
    return old.get("spec") == new.get("spec") and \
        {**old["metadata"], "resourceVersion": None} == {**new["metadata"], "resourceVersion": None}
