"""Informers: list, then watch from the list's resourceVersion, for as long as the command runs.

As client-go's reflector: a watch that ends is resumed from the last version seen (BOOKMARK events
keep that version fresh on quiet kinds); a version the server no longer has (410 Expired, as an
ERROR event or an answer) means a fresh list, replacing what the mirror holds; a server that is
gone is retried with backoff, so a restarted API server is picked up where it left off. Events are
handed to the engine's thread (`deliver`), never applied from the informer's own thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubesched.api.restmapping import Resource
from kubesched.apiserver.errors import APIError
from kubesched.live.connection import Connection, Unreachable

log = logging.getLogger("kubesched.live")
WATCH_TIMEOUT = 300  # seconds a watch request lasts before it is renewed (client-go: 5-10 min)
PAGE = 500
MAX_BACKOFF = 30.0

Obj = dict[str, Any]
Deliver = Callable[[Callable[[], None]], None]


def collection_path(resource: Resource) -> str:
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    return f"{base}/{resource.plural}"


class Gone(Exception):
    """The watch's resourceVersion is older than the server keeps: list again."""


class Informer:
    def __init__(self, conn: Connection, resource: Resource, on_list: Callable[[str, list[Obj]], None],
                 on_event: Callable[[str, Obj], None], deliver: Deliver) -> None:
        self.conn = conn
        self.resource = resource
        self.on_list = on_list
        self.on_event = on_event
        self.deliver = deliver
        self.rv = ""
        self.stop = threading.Event()
        self._thread: threading.Thread | None = None

    def list(self) -> list[Obj]:
        """Every object (in pages), each with its kind and apiVersion; remembers the version."""
        res, items, token = self.resource, [], None
        while True:
            query: dict[str, Any] = {"limit": PAGE}
            if token:
                query["continue"] = token
            answer = self.conn.request("GET", collection_path(res), query=query)
            for item in answer.get("items") or ():
                items.append({"apiVersion": res.api_version, "kind": res.kind, **item})
            token = (answer.get("metadata") or {}).get("continue")
            if not token:
                self.rv = (answer.get("metadata") or {}).get("resourceVersion", "")
                return items

    def sync(self) -> None:
        """The first list, applied before the components start (WaitForCacheSync)."""
        self.on_list(self.resource.kind, self.list())

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        backoff = 0.5
        while not self.stop.is_set():
            try:
                if not self.rv:
                    items = self.list()
                    self.deliver(lambda items=items: self.on_list(self.resource.kind, items))
                self._watch()
                backoff = 0.5
            except Gone:
                self.rv = ""
            except (Unreachable, APIError, OSError, ValueError) as e:
                log.warning("watch of %s: %s; retrying in %.1fs", self.resource.plural, e, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _watch(self) -> None:
        query = {"resourceVersion": self.rv, "allowWatchBookmarks": "true", "timeoutSeconds": WATCH_TIMEOUT}
        try:
            events = self.conn.watch(collection_path(self.resource), query)
            for ev in events:
                if self.stop.is_set():
                    return
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone()
                    raise APIError(obj.get("message", "watch error"))
                self.rv = (obj.get("metadata") or {}).get("resourceVersion") or self.rv
                if ev.get("type") == "BOOKMARK":
                    continue
                obj = {"apiVersion": self.resource.api_version, "kind": self.resource.kind, **obj}
                self.deliver(lambda t=ev["type"], o=obj: self.on_event(t, o))
        except APIError as e:
            if e.code == 410:
                raise Gone() from None
            raise

