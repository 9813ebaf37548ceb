"""Turns at the engine: a write that may call admission webhooks runs on a thread of its own,
but only while the engine's loop thread waits for it, so engine code still runs on one thread at
a time. While the write waits on a webhook's answer it gives its turn back: the loop serves other
requests meanwhile (the webhook's own calls back into serve among them), then hands the turn back
when the answer has come.

That is how kube-apiserver admits a write, in its own terms: admission runs before the storage
write, other requests go on meanwhile, and the write is then checked against what changed
(resourceVersion) as it is stored.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")

_local = threading.local()


class _Turn(Generic[T]):
    """One write's exchange with the loop: `yielded` is set when the worker stops running engine
    code (it waits, or it is done); `resume` when the loop lets it run again."""

    def __init__(self, loop: asyncio.AbstractEventLoop, work: Callable[[], T]) -> None:
        self.loop = loop
        self.work = work
        self.yielded = threading.Event()
        self.resume = threading.Event()
        self.answered: asyncio.Future[None] | None = None  # the wait is over: the worker wants its turn
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        _local.turn = self
        try:
            self.result = self.work()
        except BaseException as e:  # handed to the request, which raises it on the loop
            self.error = e
        finally:
            _local.turn = None
            self.done = True
            self.yielded.set()


async def run(work: Callable[[], T]) -> T:
    """`work()` with turns: the loop thread blocks while `work` runs engine code, and serves other
    requests while `work` is `away`."""
    loop = asyncio.get_running_loop()
    turn = _Turn(loop, work)
    turn.answered = loop.create_future()
    threading.Thread(target=turn.run, name="kubesched-write", daemon=True).start()
    cancelled = False
    while True:
        turn.yielded.wait()
        turn.yielded.clear()
        if turn.done:
            break
        while True:  # the worker waits on the network: the loop is free until it is answered
            try:
                await asyncio.shield(turn.answered)
                break
            except asyncio.CancelledError:  # the client left; the write still finishes its turn
                cancelled = True
        turn.answered = loop.create_future()  # for its next wait, before it runs again
        turn.resume.set()
    if cancelled:
        raise asyncio.CancelledError
    if turn.error is not None:
        raise turn.error
    return turn.result  # type: ignore[return-value]


@contextmanager
def away() -> Iterator[None]:
    """Around a wait that touches nothing of the engine (a webhook's HTTP call): the write's turn
    goes back to the loop until the wait is over. On the loop thread itself (a component's write)
    the wait blocks the loop, as before turns."""
    turn: _Turn[object] | None = getattr(_local, "turn", None)
    if turn is None:
        yield
        return
    answered = turn.answered
    turn.yielded.set()
    try:
        yield
    finally:
        assert answered is not None
        turn.loop.call_soon_threadsafe(_answer, answered)
        turn.resume.wait()
        turn.resume.clear()


def _answer(answered: asyncio.Future[None]) -> None:
    if not answered.done():
        answered.set_result(None)
