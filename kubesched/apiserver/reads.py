"""What both faces of the API answer alike: the simulated `APIServer` and live mode's `RemoteAPI`
read objects from the store they keep (the API's own, or the informers' mirror of a real one) and
tell time as the API writes it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubesched.api.objects import format_time, namespaced, parse_time
from kubesched.api.restmapping import qualified_resource
from kubesched.apiserver.errors import NotFoundError
from kubesched.store.base import Store

Obj = dict[str, Any]


class StoreReads:
    store: Store
    now: Callable[[], float]
    epoch: datetime  # virtual time 0

    def timestamp(self, seconds: float | None = None) -> str:
        return format_time(self.epoch, self.now() if seconds is None else seconds)

    def seconds(self, stamp: str) -> float:
        """A timestamp the API wrote, as seconds of virtual time."""
        return (parse_time(stamp) - self.epoch).total_seconds()

    def get(self, kind: str, namespace: str, name: str) -> Obj:
        obj = self.store.get(kind, namespace if namespaced(kind) else "", name)
        if obj is None:
            raise NotFoundError(f'{qualified_resource(kind)} "{name}" not found')
        return obj

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        return list(self.store.list(kind, namespace))
