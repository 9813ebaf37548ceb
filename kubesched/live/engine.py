"""The live commands' engine: kubesched's components on a real cluster, in real time.

It is `serve`'s engine turned inside out. There the API server is ours and the components read
its store; here the API server is the cluster's, the components read a mirror of it that
informers keep (listed in full before anything starts, as kube-scheduler waits for its caches to
sync) and write through `RemoteAPI`. The clock is the simulation's, driven by the wall clock on an
asyncio loop; informer threads hand their events to that loop, so components still run on one
thread, as everywhere in kubesched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from kubesched.api.restmapping import RESOURCES, Resource
from kubesched.live.connection import Connection
from kubesched.live.informer import Informer
from kubesched.live.mirror import MirrorStore
from kubesched.live.remoteapi import RemoteAPI
from kubesched.runtime.clock import REACT, Timer, VirtualClock
from kubesched.runtime.realtime import RealtimeDriver

log = logging.getLogger("kubesched.live")


class SafeClock(VirtualClock):
    """A clock whose callbacks cannot stop it: against a real cluster a request can fail in ways
    the in-process API never does (the object went away between the informer's event and the
    write); the component's step is logged and the others go on, as a controller's worker
    survives a failed sync."""

    def call_at(self, when: float, fn: Callable[[], object], daemon: bool = False, rank: int = REACT,
                fixed: bool = False) -> Timer:
        def guarded() -> None:
            try:
                fn()
            except Exception:
                log.exception("a component step failed")

        return super().call_at(when, guarded, daemon, rank, fixed)


def resource_of(kind: str) -> Resource:
    return next(r for r in RESOURCES if r.kind == kind and r.stored and not r.stored_as)


class LiveEngine:
    def __init__(self, conn: Connection, component: str, kinds: list[str]) -> None:
        """`kinds`: what the components read (each gets an informer)."""
        self.conn = conn
        self.mirror = MirrorStore()
        self.clock = SafeClock()
        self.epoch = datetime.now(UTC).replace(microsecond=0)
        self.api = RemoteAPI(conn, self.mirror, self.clock.now, self.epoch, component)
        self.driver = RealtimeDriver(self.clock)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.informers = [Informer(conn, resource_of(kind), self.mirror.replace, self.mirror.observe, self._deliver)
                          for kind in kinds]

    def sync(self) -> None:
        """List every kind before the components start, so they start from the whole cluster."""
        for informer in self.informers:
            informer.sync()

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start following the cluster; events are applied on `loop`'s thread."""
        self.loop = loop
        for informer in self.informers:
            informer.start()

    def _deliver(self, apply: Callable[[], None]) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return

        def run() -> None:
            self.driver.pump()
            try:
                apply()
            except Exception:
                log.exception("applying a watch event failed")
            self.driver.kick()

        loop.call_soon_threadsafe(run)

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop.set()
