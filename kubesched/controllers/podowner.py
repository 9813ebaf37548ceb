"""What the ReplicaSet and DaemonSet controllers share: both own pods directly, so both wake on
their own objects and on the pods they own, and both keep their status syncs for the end of the
instant (a pod turning ready changes only the status they report)."""

from __future__ import annotations

from typing import ClassVar

from kubesched.apiserver.server import APIServer
from kubesched.controllers.podevents import became_ready, owners_to_sync
from kubesched.controllers.ratelimit import FailureBackoff
from kubesched.controllers.settle import SettledSyncs, status_only
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent
from kubesched.store.podindex import (
    OwnerIndex,
    PodIndexes,
    changes_what_controllers_do,
    object_key,
)


class PodOwnerController:
    kind: ClassVar[str]  # the workload kind this controller syncs
    pods: OwnerIndex  # the store's pods by controller, from start()

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        self.api = api
        self.clock = clock
        self.indexes = indexes or PodIndexes(api.store)  # shared: see PodIndexes
        self.queue = WorkQueue(clock, self._sync)
        self.backoff = FailureBackoff(clock, self.queue)
        self.settled = SettledSyncs(clock, self.queue)

    def start(self) -> None:
        self.pods = self.indexes.by_owner()
        for obj in self.api.store.list(self.kind):
            self.queue.add(object_key(obj))
        self.api.store.watch(self._on_owner, {self.kind})
        self.api.store.watch(self._on_pod, {"Pod"}, while_held=self.kind)

    def _sync(self, key: tuple[str, str]) -> None:
        raise NotImplementedError

    def _on_owner(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            self.backoff.forget(object_key(ev.obj))
        elif status_only(ev):
            self.settled.add(object_key(ev.obj))  # its own status write: a resync, not a change to act on
        else:
            self.queue.add(object_key(ev.obj))

    def _on_pod(self, ev: WatchEvent) -> None:
        owners = owners_to_sync(ev, self.kind, self.api.store)
        if not owners:
            return
        acts = changes_what_controllers_do(ev)
        for owner in owners:
            (self.queue if acts else self.settled).add(object_key(owner))
            min_ready = (owner.get("spec") or {}).get("minReadySeconds") or 0
            if min_ready > 0 and became_ready(ev):
                self.queue.add_after(object_key(owner), min_ready + 1)  # count it as available then
