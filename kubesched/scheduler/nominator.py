"""Pods nominated to nodes by preemption (backend/queue/nominator.go).

A nominated pod is not bound yet, but its node is being freed for it: other pods of equal or
lower priority must be scheduled as if it were already running there. Pods are kept per node in
the order they were nominated, as upstream lists them.
"""

from __future__ import annotations

from kubesched.scheduler.types import PodInfo


class Nominator:
    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}  # uid -> node
        self._pods: dict[str, dict[str, PodInfo]] = {}  # node -> uid -> pod, in nomination order

    def __len__(self) -> int:
        return len(self._node_of)

    def node_of(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def add(self, pod: PodInfo, node: str) -> None:
        """(Re)nominate `pod` to `node`; an empty node name removes the nomination."""
        self.delete(pod.uid)
        if not node:
            return
        self._node_of[pod.uid] = node
        self._pods.setdefault(node, {})[pod.uid] = pod

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is not None:
            pods = self._pods[node]
            del pods[uid]
            if not pods:
                del self._pods[node]

    def pods_for_node(self, node: str) -> list[PodInfo]:
        return list(self._pods.get(node, {}).values())

    def relevant(self, pod: PodInfo) -> dict[str, list[PodInfo]]:
        """Per node, the nominated pods `pod` must make room for: priority >= its own, not itself."""
        out: dict[str, list[PodInfo]] = {}
        for node, pods in self._pods.items():
            chosen = [p for p in pods.values() if p.priority >= pod.priority and p.uid != pod.uid]
            if chosen:
                out[node] = chosen
        return out
