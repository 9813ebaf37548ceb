"""PrioritySort: higher priority first, then the earlier queue timestamp."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.scheduler.framework import QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    name = "PrioritySort"

    def less(self, a: Any, b: Any) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self) -> Callable[[Any], Any]:
        # Same order as `less`; the queue adds its insertion counter to break exact ties FIFO.
        return lambda q: (-q.pod.priority, q.timestamp)
