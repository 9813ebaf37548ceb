"""Watches over HTTP: a stream of `{"type": ..., "object": ...}` lines, as kube-apiserver sends.

A watch starts from a resourceVersion: none or "0" sends the current objects as ADDED first;
a version N replays every change after N from the store's event window (a version older than the
window gets an ERROR event with a 410 Expired Status, and the client lists afresh). Subscribing
and replaying happen in one step on the engine's thread, so no change falls between them or is
sent twice. An object that stops (or starts) matching the selectors is sent as DELETED (ADDED),
as upstream's cache watchers do. BOOKMARK events carry the latest version when asked for.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubesched.api.jsonbytes import dumps, dumps_object
from kubesched.server.rest import Request, Rest
from kubesched.server.selection import Selection, sort_key
from kubesched.server.status import status
from kubesched.store.base import ADDED, DELETED, MODIFIED, Gone, TooLarge, WatchEvent

Obj = dict[str, Any]
MAX_BACKLOG = 50_000  # events queued for one slow client before its watch is closed (it re-watches)
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _dumps(value: Any) -> bytes:
    return dumps(value) + b"\n"


def event_line(etype: str, view: Obj) -> bytes:
    """The line of an event `{"type": etype, "object": view}` as `_dumps` writes it, around the
    store's own bytes of `view` when it is the object just stored."""
    return b"".join((b'{"type":"', etype.encode(), b'","object":', dumps_object(view), b"}\n"))


class Lines:
    """Each event's line, encoded once for all the watches that send it as it is: a store
    notifies its watchers one after the other, so the last line made per resource is the one the
    next watcher of that event wants. Shared by every watch of a server."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str, str], tuple[str, Obj, int, bytes]] = {}

    def line(self, rest: Rest, req: Request, etype: str, obj: Obj) -> tuple[int, bytes]:
        """The event's resourceVersion and line."""
        res = req.resource
        key = (res.group, res.version, res.plural)
        last = self._last.get(key)
        if last is not None and last[1] is obj and last[0] == etype:
            return last[2], last[3]
        rv = _version(obj)
        line = event_line(etype, rest._view(req, obj))
        self._last[key] = (etype, obj, rv, line)
        return rv, line


def _version(obj: Obj) -> int:
    return int(obj["metadata"].get("resourceVersion") or 0)


class Watch:
    """One client's watch: filters store events into a queue of encoded lines."""

    def __init__(self, rest: Rest, req: Request, selection: Selection, lines: Lines | None = None) -> None:
        self.rest = rest
        self.lines = lines or Lines()
        self.req = req
        self.selection = selection
        self.kind = req.resource.store_kind
        # (resourceVersion, line); None ends the stream. A write made inside another write's
        # notification reaches this watcher before the outer one: the writer sorts each batch.
        # A list and a future rather than an asyncio.Queue: a line is queued for every watch on
        # every write, and the writer takes them all at once.
        self.pending: list[tuple[int, bytes] | None] = []
        self._wake: asyncio.Future[None] | None = None
        self.table_header_sent = False
        self.overflowed = False
        self.last_rv = 0
        # Selecting by namespace alone, an object never starts or stops matching on an update:
        # the common watch (a namespace's or every object) tests one field per event.
        self._by_namespace_only = selection.labels is None and not selection.fields

    # ---- the engine's side ---------------------------------------------------------------------

    def start(self) -> None:
        """Subscribe and queue what precedes live events; raises Gone/TooLarge via ERROR lines."""
        store = self.rest.store
        q = self.req.query
        rv_text = q.get("resourceVersion", "")
        initial = q.get("sendInitialEvents") in ("true", "1")
        store.watch(self._on_event, {self.kind})
        self.last_rv = store.resource_version
        if rv_text in ("", "0") or initial:
            for obj in sorted(store.list(self.kind, self.selection.namespace), key=sort_key):
                if self.selection.matches(obj):
                    self._send(ADDED, obj)
            if initial:
                self._bookmark(initial_end=True)
            return
        try:
            rv = int(rv_text)
        except ValueError:
            self._error(status(400, "BadRequest", f'resourceVersion: Invalid value: "{rv_text}": must be an '
                                                  "integer"))
            return
        try:
            replay = store.events_since(rv, {self.kind})
        except Gone as e:
            self._error(status(410, "Expired", str(e)))
            return
        except TooLarge as e:
            self._error(status(504, "Timeout", str(e), details={"causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}))
            return
        for ev in replay:
            self._on_event(ev)

    def stop(self) -> None:
        self.rest.store.unwatch(self._on_event)

    def _on_event(self, ev: WatchEvent) -> None:
        if self.overflowed:
            return
        sel = self.selection
        if self._by_namespace_only:
            if sel.namespace is None or ev.obj["metadata"].get("namespace", "") == sel.namespace:
                self._send(ev.type, ev.obj)
            return
        now_matches = sel.matches(ev.obj)
        if ev.type == MODIFIED and ev.old is not None:
            was = sel.matches(ev.old)
            if was and not now_matches:
                self._send(DELETED, ev.obj)
            elif now_matches:
                self._send(MODIFIED if was else ADDED, ev.obj)
            return
        if now_matches:
            self._send(ev.type, ev.obj)

    def _send(self, etype: str, obj: Obj) -> None:
        if self.req.table:  # the first line carries the column headers: this watch's own
            rv = _version(obj)
            view = self.rest._view(self.req, obj)
            view = self.rest.table(self.req, [view], view["metadata"].get("resourceVersion", ""),
                                   no_headers=self.table_header_sent)
            self.table_header_sent = True
            line = _dumps({"type": etype, "object": view})
        else:
            rv, line = self.lines.line(self.rest, self.req, etype, obj)
        if rv > self.last_rv:
            self.last_rv = rv
        self._put(line, rv)

    def _put(self, line: bytes | None, rv: int = 0) -> None:
        if len(self.pending) >= MAX_BACKLOG:
            self.overflowed = True
            self.stop()
            self.end()
            return
        self.pending.append(None if line is None else (rv or self.rest.store.resource_version, line))
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def end(self) -> None:
        """End the stream after what is queued (the server is shutting down)."""
        self.pending.append(None)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _error(self, answer: Obj) -> None:
        self.stop()
        self._put(_dumps({"type": "ERROR", "object": answer}))
        self._put(None)

    def _bookmark(self, initial_end: bool = False) -> None:
        meta: Obj = {"resourceVersion": str(max(self.last_rv, self.rest.store.resource_version))}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        res = self.req.resource
        self._put(_dumps({"type": "BOOKMARK", "object": {"kind": res.kind, "apiVersion": res.api_version,
                                                         "metadata": meta}}))

    async def batch(self) -> tuple[bytes, bool, int]:
        """The next lines to write, in resourceVersion order, whether the stream ends, and the
        latest version they show (to be durable before they are sent)."""
        while not self.pending:
            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        items, self.pending = self.pending, []
        done = None in items
        lines = sorted((i for i in items if i is not None), key=lambda i: i[0])
        return b"".join(line for _, line in lines), done, lines[-1][0] if lines else 0

    def bookmark(self) -> None:
        """A periodic BOOKMARK: the client may resume from the store's latest version."""
        if not self.overflowed:
            self._bookmark()
