"""In-memory store backend: dicts per kind, insertion-ordered so lists are stable."""

from __future__ import annotations

from collections.abc import Iterator

from kubesched.store.base import ADDED, DELETED, MODIFIED, Conflict, NotFound, Obj, Store, WatchEvent, key_of


class MemoryStore(Store):
    def __init__(self) -> None:
        super().__init__()
        self._objs: dict[str, dict[tuple[str, str], Obj]] = {}
        self._rv = 0

    @property
    def resource_version(self) -> int:
        return self._rv

    def _stamp(self, obj: Obj) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._objs.get(kind, {}).get((namespace, name))

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
        self._stamp(obj)
        bucket[(ns, name)] = obj
        self._notify(WatchEvent(ADDED, kind, obj, None))
        return obj

    def update(self, obj: Obj, expect_rv: str | None = None) -> Obj:
        kind, ns, name = key_of(obj)
        bucket = self._objs.get(kind, {})
        old = bucket.get((ns, name))
        if old is None:
            raise NotFound(f'{kind} "{name}" not found')
        if expect_rv is not None and old["metadata"]["resourceVersion"] != expect_rv:
            raise Conflict(f'{kind} "{name}": the object has been modified')
        self._stamp(obj)
        bucket[(ns, name)] = obj
        self._notify(WatchEvent(MODIFIED, kind, obj, old))
        return obj

    def delete(self, kind: str, namespace: str, name: str) -> Obj:
        bucket = self._objs.get(kind, {})
        old = bucket.pop((namespace, name), None)
        if old is None:
            raise NotFound(f'{kind} "{name}" not found')
        self._rv += 1
        self._notify(WatchEvent(DELETED, kind, old, old))
        return old
