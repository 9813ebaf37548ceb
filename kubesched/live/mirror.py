"""The components' view of a live cluster: a store the informers fill with the server's objects.

Components read it and watch it exactly as they read the in-process store; they never write it
(their writes go to the API server, and come back through the watch). Versions are the server's:
an event older than what the mirror holds is a replay and is dropped, so an object seen through a
write's answer and then through the watch is not applied twice.
"""

from __future__ import annotations

from kubesched.store.base import ADDED, DELETED, MODIFIED, Obj, WatchEvent, key_of
from kubesched.store.memory import MemoryStore


def _rv(obj: Obj | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class MirrorStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        # Objects a write is assumed to have made (a binding answers no object): the server's own
        # version replaces them, whatever its number.
        self._assumed: set[tuple[str, str, str]] = set()

    def observe(self, type_: str, obj: Obj, assumed: bool = False) -> None:
        """Apply one change the server reported (a watch event, or a write's answer); `assumed`:
        the change as the writer expects the server to have made it."""
        kind, ns, name = key_of(obj)
        bucket = self._objs.setdefault(kind, {})
        old = bucket.get((ns, name))
        version = _rv(obj)
        key = (kind, ns, name)
        replaces_assumed = key in self._assumed and not assumed
        if not assumed:
            self._rv = max(self._rv, version)
            self._assumed.discard(key)
        if type_ == DELETED:
            if old is not None and (replaces_assumed or _rv(old) <= version or not version):
                del bucket[(ns, name)]
                self._notify(WatchEvent(DELETED, kind, obj, old))
            return
        if not assumed and old is not None and _rv(old) >= version and not replaces_assumed:
            return  # seen already
        if assumed:
            self._assumed.add(key)
        bucket[(ns, name)] = obj
        self._notify(WatchEvent(ADDED if old is None else MODIFIED, kind, obj, old))

    def replace(self, kind: str, objs: list[Obj]) -> None:
        """A fresh list of `kind` (a relist after the watch fell behind): what is gone is deleted,
        the rest observed."""
        present = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs}
        for key, old in list(self._objs.get(kind, {}).items()):
            if key not in present:
                del self._objs[kind][key]
                self._notify(WatchEvent(DELETED, kind, old, old))
        for obj in objs:
            self.observe(ADDED, obj)
