"""Each node's heartbeat Lease, for `serve`: the kubelet's nodelease controller keeps a
coordination.k8s.io/v1 Lease named after its node in `kube-node-lease`, held by the node and
renewed every quarter of its duration (v1.35: 40 s, renewed every 10 s), owned by the Node so the
garbage collector removes it with the node. Tools and operators read it to tell a live node.

When time jumps ahead (`kubesched advance`), a renewal due inside the jump waits for its end and
renews once there, as a kubelet on a suspended machine would: no client can read the cluster in
the middle of a jump, so the renewals in between would only ever be overwritten, and a node's
360 writes an hour made `advance 1h` on thousands of nodes take minutes.

`simulate` keeps none: nothing in the simulation reads a heartbeat (its kubelets always report),
and a snapshot's thousands of nodes renewing every 10 s would add hundreds of writes per simulated
second, and keep the clock from jumping over idle hours, without changing any decision.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from kubesched.api.objects import Obj
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.store.base import DELETED, WatchEvent

NAMESPACE = "kube-node-lease"
LEASE_DURATION = 40  # KubeletConfiguration nodeLeaseDurationSeconds' default
RENEW_FRACTION = 0.25  # nodeLeaseRenewIntervalFraction


class NodeLeaseController:
    def __init__(self, api: APIServer, clock: Clock, duration: int = LEASE_DURATION) -> None:
        self.api = api
        self.clock = clock
        self.duration = duration
        self.interval = duration * RENEW_FRACTION
        self._renewing: set[str] = set()  # nodes with a renewal due

    def start(self) -> None:
        for node in self.api.store.list("Node"):
            self._begin(node["metadata"]["name"])
        self.api.store.watch(self._on_node, {"Node"})

    def _on_node(self, ev: WatchEvent) -> None:
        if ev.type != DELETED:
            self._begin(ev.obj["metadata"]["name"])

    def _begin(self, name: str) -> None:
        """A kubelet starts its lease loop once its node is registered, and renews at once."""
        if name not in self._renewing:
            self._renewing.add(name)
            self.clock.call_soon(lambda: self._renew(name))

    def _renew(self, name: str) -> None:
        node = self.api.store.get("Node", "", name)
        if node is None:  # the kubelet is gone; the garbage collector takes its Lease
            self._renewing.discard(name)
            return
        end = self.clock.horizon()
        if end >= self.clock.now() + self.interval:
            # Time jumps past the next tick too: renew once, where the jump lands.
            self.clock.call_at(end, lambda: self._renew(name), daemon=True)
            return
        lease = self.api.store.get("Lease", NAMESPACE, name)
        with contextlib.suppress(APIError):  # a conflict or a vanished node: the next tick retries
            if lease is None:
                self.api.create(self._new_lease(node))
            else:
                spec = {**(lease.get("spec") or {}), "renewTime": self._micro_time()}
                meta = lease["metadata"]
                if not meta.get("ownerReferences"):
                    meta = {**meta, "ownerReferences": [_owner(node)]}
                self.api.update({**lease, "metadata": meta, "spec": spec})
        self.clock.call_at(self.clock.now() + self.interval, lambda: self._renew(name), daemon=True)

    def _new_lease(self, node: Obj) -> Obj:
        name = node["metadata"]["name"]
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": [_owner(node)]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": self.duration,
                         "renewTime": self._micro_time()}}

    def _micro_time(self) -> str:
        """metav1.MicroTime, as a Lease's times are written."""
        t = self.api.epoch + timedelta(seconds=self.clock.now())
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _owner(node: Obj) -> Obj:
    """The kubelet's owner reference to its Node: neither controller nor blocking deletion."""
    return {"apiVersion": "v1", "kind": "Node", "name": node["metadata"]["name"], "uid": node["metadata"].get("uid", "")}
