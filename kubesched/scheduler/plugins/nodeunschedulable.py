"""NodeUnschedulable: cordoned nodes accept only pods tolerating node.kubernetes.io/unschedulable."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api.taints import tolerated
from kubesched.scheduler.cache import NodeFlag, NodeTable
from kubesched.scheduler.framework import ActionType, ClusterEvent, CycleState, FilterPlugin
from kubesched.scheduler.types import SUCCESS, Code, NodeInfo, PodInfo, Status

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
CORDONED = NodeFlag("unschedulable", lambda ni: ni.unschedulable)


class NodeUnschedulable(FilterPlugin):
    name = "NodeUnschedulable"
    node_flags = (CORDONED,)
    pods_via_requests = True
    _status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), "NodeUnschedulable")

    def _tolerates(self, pod: PodInfo) -> bool:
        return tolerated(pod.tolerations, UNSCHEDULABLE_TAINT)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.unschedulable and not self._tolerates(pod):
            return self._status
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray:
        if self._tolerates(pod):
            return np.zeros(len(slots), dtype=np.int64)
        return table.flags["unschedulable"][slots].astype(np.int64)

    def decode(self, state: CycleState, code: int) -> Status:
        return self._status

    def passes_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not table.flagged["unschedulable"] or self._tolerates(pod)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.Add, self._node_hint), ClusterEvent("Node", ActionType.UpdateNodeTaint, self._node_hint),
                ClusterEvent("Pod", ActionType.Update)]

    def _node_hint(self, pod: PodInfo, old: dict | None, new: dict) -> bool:
        """Queue for a schedulable new node, or a node that stopped being unschedulable."""
        now = bool((new.get("spec") or {}).get("unschedulable"))
        if old is None:
            return not now or self._tolerates(pod)
        return bool((old.get("spec") or {}).get("unschedulable")) and not now
