"""In-memory store backend: dicts per kind, insertion-ordered so lists are stable.

`simulate` keeps no event window (nothing resumes a watch there); `serve --data :memory:`
keeps one so HTTP watches can resume. The SQLite backend is this store with every write made
durable first (`_persist`) and its window kept in the file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from kubesched.store.base import (
    ADDED,
    DELETED,
    MODIFIED,
    Conflict,
    NotFound,
    Obj,
    Store,
    WatchEvent,
    key_of,
)


class MemoryStore(Store):
    def __init__(self, window: int = 0) -> None:
        """`window`: how many past events `events_since` can replay (0: none)."""
        super().__init__()
        self._objs: dict[str, dict[tuple[str, str], Obj]] = {}
        self._rv = 0
        self._window = window
        self._events: deque[tuple[int, WatchEvent]] = deque(maxlen=window or None)
        self._oldest = 0

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def oldest_resource_version(self) -> int:
        return self._oldest if self._window else self._rv

    def _emit(self, event: WatchEvent) -> None:
        if self._window:
            if len(self._events) == self._window:
                self._oldest = self._events[0][0]
            self._events.append((self._rv, event))
        self._notify(event)

    def _notify(self, event: WatchEvent) -> None:
        """Store._notify with `while_held` read from the buckets themselves: a pod write passes
        that test for each workload controller, and a call of `holds` apiece was a visible part
        of every write."""
        objs = self._objs
        for fn, held in self._watchers_of(event.kind):
            if held is None or objs.get(held):
                fn(event)

    def _events_after(self, rv: int, kinds: frozenset[str] | None) -> list[WatchEvent]:
        return [WatchEvent(e.type, e.kind, e.obj, None) for v, e in self._events
                if v > rv and (kinds is None or e.kind in kinds)]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._objs.get(kind, {}).get((namespace, name))

    def holds(self, kind: str) -> bool:
        return bool(self._objs.get(kind))

    def kinds(self) -> list[str]:
        return [kind for kind, objs in self._objs.items() if objs]

    def list(self, kind: str, namespace: str | None = None) -> Iterator[Obj]:
        objs = self._objs.get(kind, {})
        if namespace is None:
            return iter(list(objs.values()))
        return iter([o for (ns, _), o in objs.items() if ns == namespace])

    def create(self, obj: Obj) -> Obj:
        kind, ns, name = key_of(obj)
        bucket = self._objs.setdefault(kind, {})
        if (ns, name) in bucket:
            raise Conflict(f'{kind} "{name}" already exists')
        rv = self._rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        self._persist(rv, ADDED, kind, ns, name, obj)
        self._rv = rv
        bucket[(ns, name)] = obj
        self._emit(WatchEvent(ADDED, kind, obj, None))
        return obj

    def update(self, obj: Obj, expect_rv: str | None = None) -> Obj:
        kind, ns, name = key_of(obj)
        bucket = self._objs.get(kind, {})
        old = bucket.get((ns, name))
        if old is None:
            raise NotFound(f'{kind} "{name}" not found')
        if expect_rv is not None and old["metadata"]["resourceVersion"] != expect_rv:
            raise Conflict(f'{kind} "{name}": the object has been modified')
        rv = self._rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        self._persist(rv, MODIFIED, kind, ns, name, obj)
        self._rv = rv
        bucket[(ns, name)] = obj
        self._emit(WatchEvent(MODIFIED, kind, obj, old))
        return obj

    def delete(self, kind: str, namespace: str, name: str) -> Obj:
        bucket = self._objs.get(kind, {})
        old = bucket.get((namespace, name))
        if old is None:
            raise NotFound(f'{kind} "{name}" not found')
        rv = self._rv + 1
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        self._persist(rv, DELETED, kind, namespace, name, gone)
        self._rv = rv
        del bucket[(namespace, name)]
        self._emit(WatchEvent(DELETED, kind, gone, old))
        return gone

    def _persist(self, rv: int, type_: str, kind: str, namespace: str, name: str, obj: Obj) -> None:
        """Make a change durable before memory and watchers see it (a backend with a file);
        raising leaves the store as it was."""
