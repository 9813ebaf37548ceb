"""Answers and watch events wait until what they show is on disk.

With group commit the store changes memory at once and commits in the background; a request's
answer (or a watch's next lines) is held until the store reports the version it shows durable,
as kube-apiserver answers only once etcd has committed. Many requests waiting at once is what
lets one commit serve them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools

from kubesched.store.base import Store


class DurabilityError(Exception):
    """A commit failed: what was written in memory may not be acknowledged."""


class Durability:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._error: BaseException | None = None

    def start(self) -> None:
        """Switch a store that can commit in the background to group commit; call on the loop."""
        commit_in_background = getattr(self.store, "commit_in_background", None)
        if commit_in_background is None:
            return
        loop = asyncio.get_running_loop()

        def on_durable(version: int, error: BaseException | None) -> None:  # on the committer's thread
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(self._reached, version, error)

        commit_in_background(on_durable)

    async def wait(self, version: int | None = None) -> None:
        """Return once `version` (default: the store's latest) is durable; raises DurabilityError
        if it never will be."""
        if self._error is not None:
            raise DurabilityError(f"the data file could not be written: {self._error}")
        if version is None:
            version = self.store.resource_version
        if version <= self.store.durable_version:
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (version, next(self._order), future))
        await future

    def _reached(self, version: int, error: BaseException | None) -> None:
        waiting = self._waiting
        if error is not None:
            self._error = error
            for _, _, future in waiting:
                if not future.done():
                    future.set_exception(DurabilityError(f"the data file could not be written: {error}"))
            waiting.clear()
            return
        while waiting and waiting[0][0] <= version:
            future = heapq.heappop(waiting)[2]
            if not future.done():
                future.set_result(None)
