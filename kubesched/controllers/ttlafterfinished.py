"""The TTL-after-finished controller: deletes a finished Job `ttlSecondsAfterFinished` after it
finished (pkg/controller/ttlafterfinished, v1.35).

A Job counts as finished from the lastTransitionTime of its Complete or Failed condition. It is
deleted with propagationPolicy Foreground, so the garbage collector removes its pods before the
Job itself goes.
"""

from __future__ import annotations

import contextlib

from kubesched.api.objects import Obj, is_terminating
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.job import is_finished
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent
from kubesched.store.podindex import object_key


class TTLAfterFinishedController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.clock = clock
        self.queue = WorkQueue(clock, self._sync)
        self._scheduled: dict[tuple[str, str], float] = {}  # key -> when it expires

    def start(self) -> None:
        for job in self.api.store.list("Job"):
            self._on_job_object(job)
        self.api.store.watch(self._on_job, {"Job"})

    def _on_job(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            self._scheduled.pop(object_key(ev.obj), None)
        else:
            self._on_job_object(ev.obj)

    def _on_job_object(self, job: Obj) -> None:
        """needsCleanup: a finished Job with a TTL, not already being deleted."""
        if (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and is_finished(job) \
                and not is_terminating(job):
            self.queue.add(object_key(job))

    def _sync(self, key: tuple[str, str]) -> None:
        job = self.api.store.get("Job", *key)
        if job is None or is_terminating(job) or not is_finished(job):
            return
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        expires = _finish_time(job, self.api) + ttl
        if expires > self.clock.now():
            if self._scheduled.get(key) != expires:
                self._scheduled[key] = expires
                self.queue.add_after(key, expires - self.clock.now())
            return
        self._scheduled.pop(key, None)
        with contextlib.suppress(NotFoundError):
            self.api.delete("Job", *key, propagation_policy="Foreground")


def _finish_time(job: Obj, api: APIServer) -> float:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return api.seconds(cond["lastTransitionTime"])
    return api.seconds(job["metadata"]["creationTimestamp"])
