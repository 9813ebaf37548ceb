"""The namespace controller: empties a namespace being deleted, then removes it.

Follows pkg/controller/namespace (v1.35) in outline: deleting a Namespace only marks it
(deletionTimestamp, phase Terminating — the API's part); this controller deletes every object in
it, pods gracefully, and once nothing is left removes the namespace (upstream: the `kubernetes`
finalizer is removed and the namespace goes). Objects still terminating keep it Terminating, so
`kubectl delete namespace` waits for its pods, as on a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent


class NamespaceController:
    def __init__(self, api: APIServer, clock: Clock, kinds: Iterable[str],
                 custom_kinds: Callable[[], Iterable[str]] | None = None) -> None:
        """`kinds`: the namespaced kinds to empty a namespace of (what the server serves);
        `custom_kinds`: those CustomResourceDefinitions serve at the moment."""
        self.api = api
        self.kinds = sorted(set(kinds))
        self.custom_kinds = custom_kinds
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        store = self.api.store
        for ns in store.list("Namespace"):
            if ns["metadata"].get("deletionTimestamp"):
                self.queue.add(ns["metadata"]["name"])
        store.watch(self._on_namespace, {"Namespace"})
        store.watch(self._on_content, self.kinds)

    def _on_namespace(self, ev: WatchEvent) -> None:
        if ev.type != DELETED and ev.obj["metadata"].get("deletionTimestamp"):
            self.queue.add(ev.obj["metadata"]["name"])

    def _on_content(self, ev: WatchEvent) -> None:
        if ev.type != DELETED:
            return
        name = ev.obj["metadata"].get("namespace", "")
        ns = self.api.store.get("Namespace", "", name)
        if ns is not None and ns["metadata"].get("deletionTimestamp"):
            self.queue.add(name)

    def _sync(self, name: str) -> None:
        store = self.api.store
        ns = store.get("Namespace", "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        left = 0
        kinds = self.kinds + sorted(set(self.custom_kinds()) - set(self.kinds) if self.custom_kinds else ())
        for kind in kinds:
            for obj in list(store.list(kind, name)):
                left += 1
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    self.api.delete(kind, name, obj["metadata"]["name"])
                except APIError:
                    continue  # gone meanwhile
        if left == 0 or not any(True for kind in kinds for _ in store.list(kind, name)):
            store.delete("Namespace", "", name)
