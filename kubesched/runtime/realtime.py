"""The wall clock for `serve`: the simulation's clock, driven by real time on an asyncio loop.

Components keep the one clock they know (`VirtualClock`: `now`, `call_at`, ranks); only who
advances it changes. `simulate` jumps from timer to timer; here the driver lets virtual time
follow the wall clock (`speed` times faster), runs whatever fell due, and sleeps until the next
timer or until a request wakes it. `advance` jumps ahead the way a test wants ("ten minutes
later"), running every timer on the way in order, exactly as simulate would. Speed 0 stops the
clock between advances: a test then decides every instant, as a scenario's `at` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from kubesched.runtime.clock import VirtualClock

MAX_SLEEP = 1.0  # wall seconds between checks when nothing is due (also how often `persist` runs)


class RealtimeDriver:
    def __init__(self, clock: VirtualClock, speed: float = 1.0,
                 persist: Callable[[float], None] | None = None) -> None:
        """`persist` is told the virtual time now and then (about once a second) so a restarted
        server resumes where this one stopped: time does not pass while the server is down."""
        if speed < 0:
            raise ValueError("speed must not be negative")
        self.clock = clock
        self.speed = speed
        self._persist = persist
        self._base_virtual = clock.now()
        self._base_wall = time.monotonic()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_persisted = self._base_virtual

    def target(self) -> float:
        """The virtual time the wall clock has reached."""
        return self._base_virtual + (time.monotonic() - self._base_wall) * self.speed

    def pump(self) -> float:
        """Run every callback due by now; returns the virtual time. Requests call it before they
        read the clock and after they write, so the components' reactions are done by the time
        the next request arrives."""
        self.clock.run(until=max(self.target(), self.clock.now()))
        return self.clock.now()

    def advance(self, seconds: float) -> float:
        """Jump virtual time ahead by `seconds`, running what falls due on the way, in order."""
        if seconds < 0:
            raise ValueError("time cannot go back")
        now = self.pump()
        self.clock.run(until=now + seconds)
        # From here on the wall clock counts from the new time.
        self._base_virtual, self._base_wall = self.clock.now(), time.monotonic()
        self._save()
        self.kick()
        return self.clock.now()

    def kick(self) -> None:
        """A request scheduled something: re-plan the sleep."""
        self._wake.set()

    def _save(self) -> None:
        if self._persist is not None:
            self._persist(self.clock.now())
            self._last_persisted = self.clock.now()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.pump()
        self._save()

    async def _run(self) -> None:
        last_save = time.monotonic()
        while True:
            now = self.pump()
            if time.monotonic() - last_save >= MAX_SLEEP:
                self._save()
                last_save = time.monotonic()
            nxt = self.clock.next_time()
            if nxt is not None and nxt <= now:
                sleep = 0.0
            elif nxt is None or self.speed == 0:
                sleep = MAX_SLEEP
            else:
                sleep = min(MAX_SLEEP, (nxt - now) / self.speed)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=sleep)
