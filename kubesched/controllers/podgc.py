"""Pod garbage collection: force-deletes pods that no kubelet will ever finish off.

Follows pkg/controller/podgc (v1.35). Its loop runs every 20 s — here at 0 s, 20 s, 40 s ... of
virtual time — and each pass, in this order, deletes:

- terminated pods (Succeeded or Failed) beyond --terminated-pod-gc-threshold (12500): the excess,
  evicted ones first, then the oldest, then by name;
- terminating pods on a node that is not Ready and carries node.kubernetes.io/out-of-service;
- orphans, pods bound to a node that does not exist: the pass that first notices the missing
  node quarantines it for 40 s; the pass 40 s later checks that it is still missing and marks
  each of its pods with DisruptionTarget (DeletionByPodGC, "PodGC: node no longer exists");
- terminating pods that were never scheduled.

A pod that has not finished is marked Failed first; every deletion has no grace period.

The loop is event-driven here: a pass is scheduled only when a watch event gave it work, so an
idle cluster costs nothing and a run still ends when nothing is left to do.
"""

from __future__ import annotations

import contextlib
import math

from kubesched.api.objects import Obj, is_terminal, is_terminating, set_condition
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.nodelifecycle import ready_status
from kubesched.runtime.clock import Clock, Timer
from kubesched.store.base import ADDED, DELETED, WatchEvent
from kubesched.store.podindex import PodIndexes, PodKey, PodsByNode, object_key

GC_CHECK_PERIOD = 20.0
QUARANTINE_TIME = 40.0
TERMINATED_POD_THRESHOLD = 12500
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


class PodGCController:
    pods: PodsByNode  # the store's pods by node, from start()

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        self.api = api
        self.clock = clock
        self.indexes = indexes or PodIndexes(api.store)  # shared: see PodIndexes
        self.threshold = TERMINATED_POD_THRESHOLD
        self._terminated: dict[PodKey, None] = {}
        self._unscheduled_terminating: dict[PodKey, None] = {}
        self._missing: dict[str, float] = {}  # node -> the pass that checks it is still gone
        self._pass: Timer | None = None

    def start(self) -> None:
        self.pods = self.indexes.by_node()
        for pod in self.api.store.list("Pod"):
            self._on_pod(WatchEvent(ADDED, "Pod", pod, None))
        self.api.store.watch(self._on_pod, {"Pod"})
        self.api.store.watch(self._on_node, {"Node"})

    # ---- what gives a pass work ---------------------------------------------------------------

    def _on_pod(self, ev: WatchEvent) -> None:
        pod, key = ev.obj, object_key(ev.obj)
        gone = ev.type == DELETED
        node = pod["spec"].get("nodeName")
        _keep(self._terminated, key, not gone and is_terminal(pod))
        _keep(self._unscheduled_terminating, key, not gone and not node and is_terminating(pod))
        if gone:
            return
        if len(self._terminated) > self.threshold or key in self._unscheduled_terminating:
            self._schedule(self._next_pass())
        if node and self.api.store.get("Node", "", node) is None:
            self._quarantine(node)
        elif node and is_terminating(pod) and _out_of_service(self.api.store.get("Node", "", node)):
            self._schedule(self._next_pass())

    def _on_node(self, ev: WatchEvent) -> None:
        name = ev.obj["metadata"]["name"]
        if ev.type == DELETED:
            if self.pods.pods(name):
                self._quarantine(name)
        elif _out_of_service(ev.obj) and any(is_terminating(p) for p in self.pods.pods(name)):
            self._schedule(self._next_pass())

    def _quarantine(self, node: str) -> None:
        if node not in self._missing:
            self._missing[node] = self._next_pass() + QUARANTINE_TIME
            self._schedule(self._missing[node])

    def _next_pass(self) -> float:
        return math.ceil(self.clock.now() / GC_CHECK_PERIOD) * GC_CHECK_PERIOD

    def _schedule(self, at: float) -> None:
        if self._pass is not None:
            if self._pass.when <= at:
                return
            self._pass.cancel()
        self._pass = self.clock.call_at(at, self._gc)

    # ---- the pass -----------------------------------------------------------------------------

    def _gc(self) -> None:
        self._pass = None
        self._gc_terminated()
        self._gc_terminating()
        self._gc_orphaned()
        for key in list(self._unscheduled_terminating):
            pod = self.api.store.get("Pod", *key)
            if pod is not None:
                self._force_delete(pod)
        if self._missing:
            self._schedule(min(self._missing.values()))

    def _gc_terminated(self) -> None:
        excess = len(self._terminated) - self.threshold
        if excess <= 0:
            return
        pods = [p for p in (self.api.store.get("Pod", *k) for k in self._terminated) if p is not None]
        pods.sort(key=lambda p: (not _evicted(p), self.api.seconds(p["metadata"]["creationTimestamp"]),
                                 p["metadata"]["name"]))
        for pod in pods[:excess]:
            self._force_delete(pod)

    def _gc_terminating(self) -> None:
        for node in list(self.api.store.list("Node")):
            if _out_of_service(node):
                for pod in self.pods.pods(node["metadata"]["name"]):
                    if is_terminating(pod):
                        self._force_delete(pod)

    def _gc_orphaned(self) -> None:
        now = self.clock.now()
        for node in [n for n, at in self._missing.items() if at <= now]:
            del self._missing[node]
            if self.api.store.get("Node", "", node) is not None:
                continue
            cond = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                    "lastTransitionTime": self.api.timestamp(), "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists"}
            for pod in self.pods.pods(node):
                self._force_delete(pod, cond)

    def _force_delete(self, pod: Obj, condition: Obj | None = None) -> None:
        """markFailedAndDeletePodWithCondition."""
        ns, name = object_key(pod)

        def failed(status: Obj) -> None:
            status["phase"] = "Failed"
            if condition is not None:
                set_condition(status, condition)

        with contextlib.suppress(NotFoundError):
            if not is_terminal(pod):
                self.api.update_status("Pod", ns, name, failed)
            self.api.delete("Pod", ns, name, grace_period=0)


def _keep(keys: dict[PodKey, None], key: PodKey, member: bool) -> None:
    if member:
        keys[key] = None
    else:
        keys.pop(key, None)


def _out_of_service(node: Obj | None) -> bool:
    """Not Ready and tainted node.kubernetes.io/out-of-service (any effect)."""
    if node is None or ready_status(node) == "True":
        return False
    return any(t.get("key") == OUT_OF_SERVICE for t in (node.get("spec") or {}).get("taints") or ())


def _evicted(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"
