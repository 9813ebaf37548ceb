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
from kubesched.api.quantity import resource_amount
from kubesched.api.resources import pod_requests
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Timer
from kubesched.store.base import DELETED, WatchEvent

DURATION_ANNOTATION = "sim.kubesched.io/duration"
DEFAULT_MAX_PODS = 110  # kubelet --max-pods
SHUTDOWN_ANNOTATION = "sim.kubesched.io/shutdown"


def insufficient(resource: str, requested: int, used: int, capacity: int) -> str:
    """InsufficientResourceError's text; cpu in millicores, memory and storage in bytes."""
    return f"Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"


def _annotation_seconds(pod: Obj, key: str) -> float | None:
    value = (pod["metadata"].get("annotations") or {}).get(key)
    return None if value is None else parse_duration(value)


class Kubelets:
    """All simulated kubelets at once; each pod is handled by the agent of the node it is bound to."""

    def __init__(self, api: APIServer, clock: Any, config: Obj | None = None) -> None:
        self.api = api
        self.clock = clock
        self.config = config or {}
        self._finish: dict[str, Timer] = {}  # uid -> duration timer
        self._terminate: dict[str, Timer] = {}  # uid -> end of graceful shutdown
        self._admitted: dict[str, dict[str, dict[str, int]]] = {}  # node -> uid -> requests of pods it runs
        self._allocatable: dict[str, tuple[str, dict[str, int]]] = {}  # node -> (resourceVersion, parsed)

    def start(self) -> None:
        for pod in self.api.store.list("Pod"):
            self._on_pod(WatchEvent("ADDED", "Pod", pod, None))
        self.api.store.watch(self._on_pod, {"Pod"})

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        node = pod.get("spec", {}).get("nodeName")
        phase = pod.get("status", {}).get("phase")
        if ev.type == DELETED or phase in ("Succeeded", "Failed"):
            self._admitted.get(node or "", {}).pop(uid, None)
        if ev.type == DELETED:
            for timers in (self._finish, self._terminate):
                t = timers.pop(uid, None)
                if t is not None:
                    t.cancel()
            return
        if not node:
            return
        if phase == "Running":
            self._admitted.setdefault(node, {}).setdefault(uid, pod_requests(pod.get("spec", {})))
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if uid not in self._terminate:
                self._begin_termination(pod)
            return
        if phase == "Pending" and uid not in self._finish:
            ns, name = meta.get("namespace", "default"), meta["name"]
            self._finish[uid] = self.clock.call_soon(lambda: self._start_pod(ns, name, uid))

    def set_usage(self, ns: str, name: str, amounts: dict[str, str], container: str | None = None) -> None:
        """A `usage` scenario event: what the pod (or one container) uses from now on."""

    def _current(self, ns: str, name: str, uid: str) -> Obj | None:
        pod = self.api.store.get("Pod", ns, name)
        return pod if pod is not None and pod["metadata"].get("uid") == uid else None

    def _start_pod(self, ns: str, name: str, uid: str) -> None:
        pod = self._current(ns, name, uid)
        self._finish.pop(uid, None)
        if pod is None or pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Pending":
            return
        node = pod["spec"]["nodeName"]
        requests = pod_requests(pod["spec"])
        refusal = self._admit(node, requests)
        if refusal is not None:
            self._reject(pod, *refusal)
            return
        self._admitted.setdefault(node, {})[uid] = requests
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

    def _admit(self, node_name: str, requests: dict[str, int]) -> tuple[str, str] | None:
        """The kubelet's own resource check at admission (GeneralPredicates): the pods it already
        runs (terminating ones too) plus this one must fit the node's allocatable. A scheduler that
        raced another one, or a pod bound by hand, can fail it. Returns (reason, message)."""
        node = self.api.store.get("Node", "", node_name)
        if node is None:
            return None
        version = node["metadata"].get("resourceVersion", "")
        cached = self._allocatable.get(node_name)
        if cached is None or cached[0] != version:
            status = node.get("status") or {}
            raw = status.get("allocatable") or status.get("capacity") or {}
            cached = self._allocatable[node_name] = (version, {k: resource_amount(k, v) for k, v in raw.items()})
        alloc = cached[1]
        running = self._admitted.get(node_name, {})
        max_pods = alloc.get("pods", DEFAULT_MAX_PODS)
        if len(running) + 1 > max_pods:
            return "OutOfpods", insufficient("pods", 1, len(running), max_pods)
        for name in ("cpu", "memory", "ephemeral-storage", *sorted(k for k in requests if "/" in k)):
            want = requests.get(name, 0)
            if not want:
                continue
            used = sum(r.get(name, 0) for r in running.values())
            if used + want > alloc.get(name, 0):
                return f"OutOf{name}", insufficient(name, want, used, alloc.get(name, 0))
        return None

    def _reject(self, pod: Obj, reason: str, message: str) -> None:
        meta = pod["metadata"]

        def failed(status: Obj) -> None:
            status.update(phase="Failed", reason=reason, message=f"Pod was rejected: {message}")

        self.api.update_status("Pod", meta.get("namespace", "default"), meta["name"], failed)
        self.api.record_event(pod, "Warning", reason, message, source="kubelet")

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
