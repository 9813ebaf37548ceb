"""The garbage collector: deleting an owner removes its dependents (pkg/controller/garbagecollector).

Dependents are found through their ownerReferences, kept in a graph from the watch of every kind.
As upstream (v1.35):
- Background propagation (the default): the owner goes at once; each dependent whose owners are
  all gone is then deleted (with the propagation its own finalizers ask for, else Background),
  and one that still has a live owner only loses its references to the gone ones.
- Foreground: the owner stays with a deletionTimestamp and the foregroundDeletion finalizer while
  its dependents are deleted (a dependent that has dependents itself in Foreground too); once no
  dependent with blockOwnerDeletion is left, the finalizer is removed and the owner goes.
- Orphan: the dependents lose their references to the owner, then the orphan finalizer is
  removed and the owner goes.
An object already being deleted is left to finish.

Only owners deleted during the run count as gone: a reference to an owner that never was in the
input (an export that lacked it) is left alone, so its dependents behave as they did in the cluster
they came from. The graph is built from what the store holds when the collector starts (a server
restarted on its data file), then from watch events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable

from kubesched.api.objects import Obj, is_terminating, namespaced
from kubesched.api.served import resource_kind
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, APIServer
from kubesched.controllers.ratelimit import FailureBackoff
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import ADDED, DELETED, WatchEvent
from kubesched.store.podindex import same_owner_references

Key = tuple[str, str, str]  # kind, namespace ("" for cluster-scoped), name
UNOWNABLE = frozenset({"Event"})  # kinds that are never owners nor dependents worth following


def _key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return resource_kind(obj), meta.get("namespace", ""), meta["name"]


def _refs(obj: Obj | None) -> list[Obj]:
    return list((obj or {}).get("metadata", {}).get("ownerReferences") or ())


def _finalizers(obj: Obj) -> list[str]:
    return list(obj["metadata"].get("finalizers") or ())


class GarbageCollector:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.clock = clock
        self.queue = WorkQueue(clock, self._process)
        self.backoff = FailureBackoff(clock, self.queue)
        self._dependents: dict[str, dict[Key, None]] = {}  # owner uid -> its dependents
        self._gone: set[str] = set()  # uids of objects deleted during the run

    def start(self) -> None:
        """The graph starts from what the store holds (a server restarted on its data file)."""
        store = self.api.store
        for kind in store.kinds():
            for obj in store.list(kind):
                self._on_event(WatchEvent(ADDED, kind, obj, None))
        store.watch(self._on_event)

    # ---- the graph (GraphBuilder) -----------------------------------------------------------------

    def _on_event(self, ev: WatchEvent) -> None:
        if ev.kind in UNOWNABLE:
            return
        obj, old = ev.obj, ev.old
        key = _key(obj)
        if same_owner_references(ev):
            before = after = []
        else:
            before = _refs(old) if ev.type != "ADDED" else []
            after = _refs(obj) if ev.type != DELETED else []
        if before != after:
            for ref in before:
                self._dependents.get(ref.get("uid", ""), {}).pop(key, None)
            for ref in after:
                self._dependents.setdefault(ref.get("uid", ""), {})[key] = None
                if ref.get("uid") in self._gone:
                    self.queue.add(("delete", key))
        if ev.type == DELETED:
            uid = obj["metadata"].get("uid", "")
            self._gone.add(uid)
            for dependent in self._dependents.pop(uid, {}):
                self.queue.add(("delete", dependent))
            for ref in before:  # an owner deleting in the foreground may now be free to go
                owner = self._owner(obj, ref)
                if owner is not None and FOREGROUND_FINALIZER in _finalizers(owner):
                    self.queue.add(("foreground", _key(owner)))
            return
        if is_terminating(obj) and (old is None or not is_terminating(old) or _finalizers(old) != _finalizers(obj)):
            finalizers = _finalizers(obj)
            if ORPHAN_FINALIZER in finalizers:
                self.queue.add(("orphan", key))
            if FOREGROUND_FINALIZER in finalizers:
                self.queue.add(("foreground", key))

    def _owner(self, dependent: Obj, ref: Obj) -> Obj | None:
        """The live owner a reference names (same uid), if it exists."""
        kind = ref.get("kind", "")
        ns = dependent["metadata"].get("namespace", "") if namespaced(kind) else ""
        owner = self.api.store.get(resource_kind({"apiVersion": ref.get("apiVersion"), "kind": kind}), ns,
                                   ref.get("name", ""))
        return owner if owner is not None and owner["metadata"].get("uid") == ref.get("uid") else None

    # ---- the work (attemptToDeleteItem, orphanDependents, processDeletingDependentsItem) -------------

    def _process(self, item: Hashable) -> None:
        action, key = item  # type: ignore[misc]
        obj = self.api.store.get(*key)
        if obj is None:
            return
        try:
            {"delete": self._attempt_delete, "orphan": self._orphan, "foreground": self._foreground}[action](obj)
        except APIError:
            self.backoff.retry(item)
        else:
            self.backoff.forget(item)

    def _attempt_delete(self, obj: Obj) -> None:
        """Delete an object whose owners are all gone; drop its references to gone owners when
        another owner is still there."""
        finalizers = _finalizers(obj)
        if is_terminating(obj) and FOREGROUND_FINALIZER not in finalizers:
            return
        solid, dangling, waiting = [], [], []
        for ref in _refs(obj):
            owner = self._owner(obj, ref)
            if owner is None:
                (dangling if ref.get("uid") in self._gone else solid).append(ref)
            elif is_terminating(owner) and FOREGROUND_FINALIZER in _finalizers(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        if not dangling and not waiting:
            return
        kind, ns, name = _key(obj)
        if solid:
            drop = {r.get("uid") for r in dangling + waiting}
            kept = [r for r in _refs(obj) if r.get("uid") not in drop]
            self.api.patch(kind, ns, name, {"metadata": {"ownerReferences": kept or None}})
            return
        if waiting and self._dependents.get(obj["metadata"].get("uid", "")):
            policy = "Foreground"
        elif ORPHAN_FINALIZER in finalizers:
            policy = "Orphan"
        elif FOREGROUND_FINALIZER in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        with contextlib.suppress(APIError):
            self.api.delete(kind, ns, name, propagation_policy=policy)

    def _orphan(self, owner: Obj) -> None:
        """orphanDependents, then the orphan finalizer goes (and with it the owner)."""
        if not is_terminating(owner) or ORPHAN_FINALIZER not in _finalizers(owner):
            return
        uid = owner["metadata"]["uid"]
        for key in list(self._dependents.get(uid, {})):
            dependent = self.api.store.get(*key)
            if dependent is None:
                continue
            kept = [r for r in _refs(dependent) if r.get("uid") != uid]
            self.api.patch(key[0], key[1], key[2], {"metadata": {"ownerReferences": kept or None}})
        self._remove_finalizer(owner, ORPHAN_FINALIZER)

    def _foreground(self, owner: Obj) -> None:
        """Delete the dependents; once none that blocks the owner's deletion is left, the
        foregroundDeletion finalizer goes (and with it the owner)."""
        if not is_terminating(owner) or FOREGROUND_FINALIZER not in _finalizers(owner):
            return
        uid = owner["metadata"]["uid"]
        blocking = False
        for key in list(self._dependents.get(uid, {})):
            dependent = self.api.store.get(*key)
            if dependent is None:
                continue
            ref = next((r for r in _refs(dependent) if r.get("uid") == uid), None)
            blocking = blocking or bool(ref and ref.get("blockOwnerDeletion"))
            self.queue.add(("delete", key))
        if not blocking:
            self._remove_finalizer(owner, FOREGROUND_FINALIZER)

    def _remove_finalizer(self, obj: Obj, finalizer: str) -> None:
        kind, ns, name = _key(obj)
        kept = [f for f in _finalizers(obj) if f != finalizer]
        self.api.patch(kind, ns, name, {"metadata": {"finalizers": kept or None}})
