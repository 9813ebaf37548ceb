"""The ServiceAccounts controller (pkg/controller/serviceaccount, v1.35): every active Namespace has
a ServiceAccount named `default`, made again if it is deleted, so that pods and
`kubectl create token default` find it as on a real cluster.

`serve` runs it (see kubesched.server.engine); `simulate` does not, so a snapshot's objects stay
exactly those it was given.
"""

from __future__ import annotations

import contextlib

from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent

MANAGED_NAMES = ("default",)  # kube-controller-manager's ServiceAccountsControllerOptions


class ServiceAccountsController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        for namespace in self.api.store.list("Namespace"):
            self.queue.add(namespace["metadata"]["name"])
        self.api.store.watch(self._on_change, {"Namespace", "ServiceAccount"})

    def _on_change(self, ev: WatchEvent) -> None:
        meta = ev.obj["metadata"]
        if ev.kind == "Namespace":
            if ev.type != DELETED:
                self.queue.add(meta["name"])
        elif ev.type == DELETED and meta["name"] in MANAGED_NAMES:
            self.queue.add(meta["namespace"])

    def _sync(self, name: str) -> None:
        namespace = self.api.store.get("Namespace", "", name)
        if namespace is None or (namespace.get("status") or {}).get("phase", "Active") != "Active":
            return
        for account in MANAGED_NAMES:
            if self.api.store.get("ServiceAccount", name, account) is None:
                # Already made by someone else, or the namespace began terminating meanwhile.
                with contextlib.suppress(APIError):
                    self.api.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                     "metadata": {"name": account, "namespace": name}})
