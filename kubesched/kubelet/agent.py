"""Simulated node agents: start bound pods, run them for their duration, terminate them gracefully.

No containers run. A pod bound to a node becomes Running at once; `sim.kubesched.io/duration`
makes it Succeed after that long; a deleted pod keeps running through its shutdown time (the
`sim.kubesched.io/shutdown` annotation, else the whole grace period) and is then removed with a
zero-grace delete, as the kubelet confirms termination to the API server.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.duration import parse_duration
from kubesched.api.objects import Obj, set_condition
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Timer
from kubesched.store.base import DELETED, WatchEvent

DURATION_ANNOTATION = "sim.kubesched.io/duration"
SHUTDOWN_ANNOTATION = "sim.kubesched.io/shutdown"


def _annotation_seconds(pod: Obj, key: str) -> float | None:
    value = (pod["metadata"].get("annotations") or {}).get(key)
    return None if value is None else parse_duration(value)


class Kubelets:
    """All simulated kubelets at once; each pod is handled by the agent of the node it is bound to."""

    def __init__(self, api: APIServer, clock: Any) -> None:
        self.api = api
        self.clock = clock
        self._finish: dict[str, Timer] = {}  # uid -> duration timer
        self._terminate: dict[str, Timer] = {}  # uid -> end of graceful shutdown

    def start(self) -> None:
        for pod in self.api.store.list("Pod"):
            self._on_pod(WatchEvent("ADDED", "Pod", pod, None))
        self.api.store.watch(self._on_pod, {"Pod"})

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        if ev.type == DELETED:
            for timers in (self._finish, self._terminate):
                t = timers.pop(uid, None)
                if t is not None:
                    t.cancel()
            return
        node = pod.get("spec", {}).get("nodeName")
        if not node:
            return
        phase = pod.get("status", {}).get("phase")
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if uid not in self._terminate:
                self._begin_termination(pod)
            return
        if phase == "Pending" and uid not in self._finish:
            ns, name = meta.get("namespace", "default"), meta["name"]
            self._finish[uid] = self.clock.call_soon(lambda: self._start_pod(ns, name, uid))

    def _current(self, ns: str, name: str, uid: str) -> Obj | None:
        pod = self.api.store.get("Pod", ns, name)
        return pod if pod is not None and pod["metadata"].get("uid") == uid else None

    def _start_pod(self, ns: str, name: str, uid: str) -> None:
        pod = self._current(ns, name, uid)
        self._finish.pop(uid, None)
        if pod is None or pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Pending":
            return
        now = self.api.timestamp()

        def running(status: Obj) -> None:
            status["phase"] = "Running"
            status["startTime"] = now
            for ctype in ("Initialized", "Ready", "ContainersReady"):
                set_condition(status, {"type": ctype, "status": "True", "lastProbeTime": None,
                                       "lastTransitionTime": now})

        self.api.update_status("Pod", ns, name, running)
        duration = _annotation_seconds(pod, DURATION_ANNOTATION)
        if duration is not None:
            self._finish[uid] = self.clock.call_later(duration, lambda: self._succeed(ns, name, uid))

    def _succeed(self, ns: str, name: str, uid: str) -> None:
        self._finish.pop(uid, None)
        pod = self._current(ns, name, uid)
        if pod is None or pod["status"].get("phase") != "Running":
            return
        now = self.api.timestamp()

        def done(status: Obj) -> None:
            status["phase"] = "Succeeded"
            for ctype in ("Ready", "ContainersReady"):
                set_condition(status, {"type": ctype, "status": "False", "reason": "PodCompleted",
                                       "lastProbeTime": None, "lastTransitionTime": now})

        self.api.update_status("Pod", ns, name, done)

    def _begin_termination(self, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        t = self._finish.pop(uid, None)
        if t is not None:
            t.cancel()
        grace = float(meta.get("deletionGracePeriodSeconds", 0))
        shutdown = _annotation_seconds(pod, SHUTDOWN_ANNOTATION)
        delay = grace if shutdown is None else min(shutdown, grace)
        ns, name = meta.get("namespace", "default"), meta["name"]
        self._terminate[uid] = self.clock.call_later(delay, lambda: self._remove(ns, name, uid))

    def _remove(self, ns: str, name: str, uid: str) -> None:
        self._terminate.pop(uid, None)
        if self._current(ns, name, uid) is not None:
            self.api.delete("Pod", ns, name, grace_period=0)
