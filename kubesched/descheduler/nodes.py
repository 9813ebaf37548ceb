"""Node facts the descheduler shares (descheduler pkg/descheduler/node)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.objects import Obj, get_condition
from kubesched.api.selectors import LabelSelector

if TYPE_CHECKING:
    from kubesched.store.base import Store


def is_ready(node: Obj) -> bool:
    """IsReady: a Ready condition other than True rules a node out; no condition at all does not."""
    cond = get_condition(node, "Ready")
    return cond is None or cond.get("status") == "True"


def is_unschedulable(node: Obj) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def ready_nodes(store: Store, selector: str | None = None) -> list[Obj]:
    """ReadyNodes: the nodes matching the policy's nodeSelector that are ready, in name order."""
    match = LabelSelector.parse(selector) if selector else None
    nodes = [n for n in store.list("Node")
             if is_ready(n) and (match is None or match.matches(n["metadata"].get("labels") or {}))]
    return sorted(nodes, key=lambda n: n["metadata"]["name"])
