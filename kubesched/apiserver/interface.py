"""The API as the scheduler and the descheduler call it, whoever answers.

Two implementations: the in-process `APIServer` (simulate, serve), and live mode's `RemoteAPI`,
which turns the same calls into REST requests to a real cluster and reads the informers' mirror.
Components that run in both modes are typed against this Protocol, so a method one side lacks is
an error of the type checker, not of a live run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from kubesched.api.objects import Obj
from kubesched.runtime.observer import Observer
from kubesched.store.base import Store


class API(Protocol):
    # Read-only members, so that an implementation may hold a narrower type (live mode's mirror).
    @property
    def store(self) -> Store:
        """Reads: the API's own store, or the informers' mirror of a real one."""

    @property
    def now(self) -> Callable[[], float]:
        """Seconds of cluster time since `epoch`."""

    @property
    def epoch(self) -> datetime: ...

    @property
    def observer(self) -> Observer:
        """Told of every Eviction request and its answer."""

    def timestamp(self, seconds: float | None = None) -> str: ...

    def seconds(self, stamp: str) -> float: ...

    def get(self, kind: str, namespace: str, name: str) -> Obj: ...

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]: ...

    def create(self, obj: Obj) -> Obj: ...

    def update(self, obj: Obj, *, status_only: bool = False) -> Obj: ...

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, *, status_only: bool = False) -> Obj: ...

    def update_status(self, kind: str, namespace: str, name: str, mutate: Callable[[Obj], Any]) -> Obj: ...

    def bind(self, namespace: str, name: str, node_name: str) -> Obj: ...

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None,
               propagation_policy: str | None = None) -> Obj | None: ...

    def evict(self, namespace: str, name: str, eviction: Obj | None = None, requester: str = "") -> Obj: ...

    def record_event(self, involved: Obj, etype: str, reason: str, message: str,
                     source: str = "default-scheduler") -> Obj: ...
