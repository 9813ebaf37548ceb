"""The object store contract: what every backend (memory, SQLite) provides.

The store knows nothing of Kubernetes semantics (admission, graceful deletion, binding):
those live in the API server, the store's only writer. It keeps objects by (kind, namespace,
name), stamps every write with a cluster-wide increasing `resourceVersion` (exactly one per
write, deletes included, as etcd's revision), tells watchers about each change in write order,
and keeps a bounded window of past events so that an HTTP watch can resume from a version a
client saw (`events_since`), as kube-apiserver's watch cache does.

A store is not thread-safe: every call, reads included, comes from one thread (the engine's;
`serve` hands HTTP requests to it), and watchers run on that thread inside the write.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kubesched.api.served import resource_kind

Obj = dict[str, Any]
Key = tuple[str, str, str]  # kind, namespace ("" if cluster-scoped), name

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(slots=True)  # not frozen: a frozen one costs three times as much to make, once per write
class WatchEvent:
    """One change. `obj` carries the change's own resourceVersion, a DELETED one too (the deleted
    object as it was, stamped with the deletion's version, as kube-apiserver sends it). `old` is
    the previous version for live watchers; events replayed by `events_since` have None."""

    type: str
    kind: str
    obj: Obj
    old: Obj | None


Watcher = Callable[[WatchEvent], None]


class Conflict(Exception):
    """Create of an existing key, or an update carrying a stale resourceVersion."""


class NotFound(Exception):
    """The key does not exist."""


class Gone(Exception):
    """`events_since` was asked to resume from a version older than the retained window.

    kube-apiserver answers such a watch with 410 (reason Expired) and this message, `oldest`
    being the oldest version a watch can still start from; the client then lists afresh.
    """

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class TooLarge(Exception):
    """`events_since` was asked to resume from a version the store has not reached.

    kube-apiserver answers 504 (reason Timeout, cause ResourceVersionTooLarge) with this message
    once its cache has not caught up in time; a single store is always caught up, so at once.
    """

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"Too large resource version: {requested}, current: {current}")
        self.requested = requested
        self.current = current


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return resource_kind(obj), meta.get("namespace", ""), meta["name"]


class Store(ABC):
    """Objects are treated as immutable once stored: writers pass new dicts, readers never mutate."""

    def __init__(self) -> None:
        self._watchers: list[tuple[frozenset[str] | None, Watcher, str | None]] = []
        # Each kind's watchers in registration order, built on first use: a write then calls only
        # the watchers of its kind instead of testing every watcher of every component.
        self._by_kind: dict[str, tuple[tuple[Watcher, str | None], ...]] = {}

    def watch(self, fn: Watcher, kinds: Iterable[str] | None = None, while_held: str | None = None) -> None:
        """Call `fn` for every later change to objects of `kinds` (all kinds if None). With
        `while_held`, only while the store holds an object of that kind: a controller whose handler
        has nothing to do without one (pods owned by a kind the cluster has none of) is not called."""
        self._watchers.append((frozenset(kinds) if kinds else None, fn, while_held))
        self._by_kind = {}

    def unwatch(self, fn: Watcher) -> None:
        """Stop calling `fn` (an HTTP watch whose client went away); safe from inside a watcher."""
        self._watchers = [w for w in self._watchers if w[1] is not fn]
        self._by_kind = {}

    def _watchers_of(self, kind: str) -> tuple[tuple[Watcher, str | None], ...]:
        fns = self._by_kind.get(kind)
        if fns is None:
            fns = self._by_kind[kind] = tuple(
                (fn, held) for kinds, fn, held in self._watchers if kinds is None or kind in kinds)
        return fns

    def _notify(self, event: WatchEvent) -> None:
        holds = self.holds
        for fn, held in self._watchers_of(event.kind):
            if held is None or holds(held):
                fn(event)

    def events_since(self, rv: int, kinds: Iterable[str] | None = None) -> list[WatchEvent]:
        """The events after version `rv`, in write order (of `kinds` only, if given): what a watch
        resuming from `rv` must send before live events. Raises Gone if `rv` is older than the
        retained window, TooLarge if it is newer than the store."""
        current = self.resource_version
        if rv > current:
            raise TooLarge(rv, current)
        oldest = self.oldest_resource_version
        if rv < oldest:
            raise Gone(rv, oldest)
        return self._events_after(rv, frozenset(kinds) if kinds else None)

    def list_with_version(self, kind: str, namespace: str | None = None) -> tuple[list[Obj], int]:
        """The objects and the resourceVersion they are consistent with, for a list response whose
        version a watch then resumes from (single-threaded, so nothing can write in between)."""
        return list(self.list(kind, namespace)), self.resource_version

    def close(self) -> None:  # noqa: B027 - a backend holding nothing has nothing to release
        """Release what the backend holds (a file); the store is unusable afterwards."""

    @abstractmethod
    def get(self, kind: str, namespace: str, name: str) -> Obj | None: ...

    @abstractmethod
    def list(self, kind: str, namespace: str | None = None) -> Iterator[Obj]:
        """Objects of `kind` in creation order (an update keeps an object's place)."""

    def holds(self, kind: str) -> bool:
        """Whether any object of `kind` exists: lets a watcher that only acts on objects of a kind
        ignore events at once in a cluster that has none."""
        return next(self.list(kind), None) is not None

    @abstractmethod
    def kinds(self) -> list[str]:
        """The kinds that have objects (what a component rebuilding its state from a store it
        did not see filled has to list)."""

    @abstractmethod
    def create(self, obj: Obj) -> Obj: ...

    @abstractmethod
    def update(self, obj: Obj, expect_rv: str | None = None) -> Obj: ...

    @abstractmethod
    def delete(self, kind: str, namespace: str, name: str) -> Obj:
        """Remove the object; returns it stamped with the deletion's resourceVersion."""

    @property
    @abstractmethod
    def resource_version(self) -> int:
        """The version of the latest write (0 before any)."""

    @property
    def durable_version(self) -> int:
        """The latest version that survives the process: a client is shown nothing newer. Only a
        backend committing in the background lags behind `resource_version`."""
        return self.resource_version

    @property
    @abstractmethod
    def oldest_resource_version(self) -> int:
        """The oldest version `events_since` accepts: the retained window starts after it."""

    @abstractmethod
    def _events_after(self, rv: int, kinds: frozenset[str] | None) -> list[WatchEvent]:
        """The retained events after `rv` (already checked to be in the window)."""
