"""NodeName: a pod that names a node fits only that node."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.scheduler.cache import NodeTable
from kubesched.scheduler.framework import ActionType, ClusterEvent, CycleState, FilterPlugin
from kubesched.scheduler.types import SUCCESS, Code, NodeInfo, PodInfo, Status

REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin):
    name = "NodeName"
    pods_via_requests = True
    _status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), "NodeName")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if pod.node_name and pod.node_name != node.name:
            return self._status
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray | None:
        return None if pod.node_name else np.zeros(len(positions), dtype=np.int64)

    def decode(self, state: CycleState, code: int) -> Status:
        return self._status

    def passes_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not pod.node_name

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.Add)]
