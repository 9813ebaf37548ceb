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
        self._lists: dict[str, list[PodInfo]] = {}  # node -> its pods as a list, kept in step
        self._priorities: dict[int, int] = {}  # priority -> number of nominated pods having it

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
        pods = self._pods.setdefault(node, {})
        pods[pod.uid] = pod
        self._lists[node] = list(pods.values())
        self._priorities[pod.priority] = self._priorities.get(pod.priority, 0) + 1

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is not None:
            pods = self._pods[node]
            priority = pods.pop(uid).priority
            self._priorities[priority] -= 1
            if not self._priorities[priority]:
                del self._priorities[priority]
            if pods:
                self._lists[node] = list(pods.values())
            else:
                del self._pods[node], self._lists[node]

    def pods_for_node(self, node: str) -> list[PodInfo]:
        """In nomination order; shared, must not be changed."""
        return self._lists.get(node, [])

    def relevant_on(self, pod: PodInfo, node: str) -> list[PodInfo]:
        """The pods nominated to `node` that `pod` must make room for: priority >= its own, not itself."""
        return [p for p in self._lists.get(node, ()) if p.priority >= pod.priority and p.uid != pod.uid]

    def relevant(self, pod: PodInfo) -> dict[str, list[PodInfo]]:
        """Per node, the nominated pods `pod` must make room for: priority >= its own, not itself.
        The result is shared and must not be changed."""
        if pod.uid not in self._node_of and min(self._priorities, default=pod.priority) >= pod.priority:
            return self._lists  # every nominated pod counts
        out: dict[str, list[PodInfo]] = {}
        for node in self._lists:
            chosen = self.relevant_on(pod, node)
            if chosen:
                out[node] = chosen
        return out
