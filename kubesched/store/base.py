"""The object store contract: what every backend (memory now, SQLite later) provides.

The store knows nothing of Kubernetes semantics (admission, graceful deletion, binding):
those live in the API server. It keeps objects by (kind, namespace, name), stamps every
write with a cluster-wide increasing `resourceVersion`, and tells watchers about each change
in write order, as etcd's watch does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
Key = tuple[str, str, str]  # kind, namespace ("" if cluster-scoped), name

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str
    kind: str
    obj: Obj
    old: Obj | None


Watcher = Callable[[WatchEvent], None]


class Conflict(Exception):
    """Create of an existing key, or an update carrying a stale resourceVersion."""


class NotFound(Exception):
    """The key does not exist."""


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


class Store(ABC):
    """Objects are treated as immutable once stored: writers pass new dicts, readers never mutate."""

    def __init__(self) -> None:
        self._watchers: list[tuple[frozenset[str] | None, Watcher]] = []

    def watch(self, fn: Watcher, kinds: set[str] | None = None) -> None:
        """Call `fn` for every later change to objects of `kinds` (all kinds if None)."""
        self._watchers.append((frozenset(kinds) if kinds else None, fn))

    def _notify(self, event: WatchEvent) -> None:
        for kinds, fn in self._watchers:
            if kinds is None or event.kind in kinds:
                fn(event)

    @abstractmethod
    def get(self, kind: str, namespace: str, name: str) -> Obj | None: ...

    @abstractmethod
    def list(self, kind: str, namespace: str | None = None) -> Iterator[Obj]: ...

    @abstractmethod
    def create(self, obj: Obj) -> Obj: ...

    @abstractmethod
    def update(self, obj: Obj, expect_rv: str | None = None) -> Obj: ...

    @abstractmethod
    def delete(self, kind: str, namespace: str, name: str) -> Obj: ...

    @property
    @abstractmethod
    def resource_version(self) -> int: ...
