"""NodePorts: a host port (protocol, IP) can be used by one pod per node; 0.0.0.0 clashes with every IP."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.scheduler.cache import NodeFlag, NodeTable
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, HostPort, NodeInfo, PodInfo, Status
from kubesched.scheduler.vectorised.filters import reject_flagged

REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD = "0.0.0.0"
HAS_PORTS = NodeFlag("has_ports", lambda ni: bool(ni.used_ports), with_pods=True)  # some pod uses a host port


def conflicts(node: NodeInfo, want: HostPort) -> bool:
    ips = node.used_ports.get((want.protocol, want.port))
    if not ips:
        return False
    return want.ip == WILDCARD or WILDCARD in ips or want.ip in ips


class NodePorts(PreFilterPlugin, FilterPlugin):
    name = "NodePorts"
    node_flags = (HAS_PORTS,)
    _status = Status(Code.UNSCHEDULABLE, (REASON,), "NodePorts")

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        return None, (SUCCESS if pod.host_ports else SKIP)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if any(conflicts(node, hp) for hp in pod.host_ports):
            return self._status
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray:
        return reject_flagged(table.flags["has_ports"][slots], nodes, positions,
                              lambda node: any(conflicts(node, hp) for hp in pod.host_ports))

    def decode(self, state: CycleState, code: int) -> Status:
        return self._status

    def passes_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not table.flagged["has_ports"]

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("AssignedPod", ActionType.Delete, self._pod_deleted_hint), ClusterEvent("Node", ActionType.Add)]

    @staticmethod
    def _pod_deleted_hint(pod: PodInfo, old: PodInfo | None, new: object) -> bool:
        """Queue only if the deleted pod held a host port this pod wants."""
        if old is None:
            return True
        return any(w.port == h.port and w.protocol == h.protocol and (w.ip == h.ip or WILDCARD in (w.ip, h.ip))
                   for w in pod.host_ports for h in old.host_ports)
