"""DefaultBinder: binds through the API's pods/binding subresource."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.apiserver.errors import APIError
from kubesched.scheduler.framework import BindPlugin, CycleState
from kubesched.scheduler.types import SUCCESS, Code, PodInfo, Status


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"
    binder: Callable[[str, str, str], object] | None = None

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        assert self.binder is not None
        try:
            self.binder(pod.namespace, pod.name, node_name)
        except APIError as e:
            return Status(Code.ERROR, (e.message,), self.name)
        return SUCCESS
