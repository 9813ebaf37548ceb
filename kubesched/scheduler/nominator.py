"""Pods nominated to nodes by preemption (backend/queue/nominator.go).

A nominated pod is not bound yet, but its node is being freed for it: other pods of equal or
lower priority must be scheduled as if it were already running there. Pods are kept per node in
the order they were nominated, as upstream lists them.

Scheduling cycles mostly need every nominated pod's requests summed per node; those sums are kept
as nominations come and go (`RequestsDelta`), so a cycle costs nothing per nominated pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kubesched.scheduler.types import PODS, PodInfo


class AllNominated(Mapping[str, list[PodInfo]]):
    """`Nominator.relevant`'s answer when it holds every nominated pod except, possibly, the asking
    pod itself (`excluded`): its requests can then be read from the running sums. A view of the
    nominator's lists rather than a copy: a cycle reads the pods of a node or two, if any (a
    preemptor retrying on the node it nominated would otherwise copy every nomination)."""

    def __init__(self, owner: Nominator, excluded: PodInfo | None = None) -> None:
        self.owner, self.excluded = owner, excluded
        self._own = owner.node_of(excluded.uid) if excluded is not None else None

    def __getitem__(self, node: str) -> list[PodInfo]:
        pods = self.owner._lists[node]
        if node == self._own:
            assert self.excluded is not None
            pods = [p for p in pods if p.uid != self.excluded.uid]
            if not pods:
                raise KeyError(node)
        return pods

    def __iter__(self) -> Iterator[str]:
        lists, own = self.owner._lists, self._own
        return (node for node in lists if node != own or len(lists[node]) > 1)

    def __len__(self) -> int:
        lists, own = self.owner._lists, self._own
        return len(lists) - (own is not None and len(lists[own]) == 1)


class RequestsDelta:
    """Per node slot of a NodeTable: the nominated pods' summed requests (the table's columns, a
    pod counting 1 in its pods column) and how many there are, refreshed only where nominations
    changed since the last use."""

    def __init__(self) -> None:
        self.req: np.ndarray | None = None
        self.count: np.ndarray | None = None
        self.columns: dict[str, int] = {}
        self.written: dict[str, int] = {}  # node -> slot its row was written to
        self.absent: set[str] = set()  # nodes with nominated pods but not in the cache
        # Nodes the cache reported changed since the last refresh, once `follow` is called: only
        # those can have been removed or moved. None: every written node is checked.
        self.touched: set[str] | None = None

    def follow(self, cache: Any) -> None:
        """Be told by `cache` which nodes change, so a refresh need not check every other one."""
        if self.touched is None:
            self.touched = set(self.written)  # changes before now went unreported
            cache.listeners.append(self.touched.add)

    def refresh(self, nominator: Nominator, table: Any, nodes: dict[str, Any], pods_col: int) -> None:
        """Bring the rows up to date with `nominator`, for `table` and the cache's `nodes`."""
        if self.req is None or self.req.shape != table.req.shape or self.columns != table.columns:
            self.req = np.zeros_like(table.req)
            self.count = np.zeros(table.req.shape[0], dtype=np.int64)
            self.columns, self.written, self.absent = dict(table.columns), {}, set()
            changed = set(nominator._pods)
            nominator._changed.clear()
        else:
            changed, nominator._changed = nominator._changed, set()
            # A node removed, or added again elsewhere, moves or drops its row; one added late gets it.
            suspects = self.written if self.touched is None else [n for n in self.touched if n in self.written]
            for name in suspects:
                ni = nodes.get(name)
                if ni is None or ni.slot != self.written[name]:
                    changed.add(name)
            changed.update(name for name in self.absent if name in nodes)
        if self.touched is not None:
            self.touched.clear()
        assert self.req is not None and self.count is not None
        for name in changed:  # clear every moved row before writing any: slots are reused
            old = self.written.pop(name, None)
            if old is not None:
                self.req[old] = 0
                self.count[old] = 0
        for name in changed:
            pods, ni = nominator._pods.get(name), nodes.get(name)
            self.absent.discard(name)
            if pods and ni is None:
                self.absent.add(name)
            if not pods or ni is None:
                continue
            row = self.req[ni.slot]
            for other in pods.values():
                row[pods_col] += 1
                for res, amount in other.requests.items():
                    col = table.columns.get(res)
                    if col is not None:
                        row[col] += amount
            self.count[ni.slot] = len(pods)
            self.written[name] = ni.slot


class Nominator:
    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}  # uid -> node
        self._pods: dict[str, dict[str, PodInfo]] = {}  # node -> uid -> pod, in nomination order
        self._lists: dict[str, list[PodInfo]] = {}  # node -> its pods as a list, kept in step
        self._all = AllNominated(self)
        self._priorities: dict[int, int] = {}  # priority -> number of nominated pods having it
        self._changed: set[str] = set()  # nodes whose nominations changed since `delta` last read them
        self.delta = RequestsDelta()

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
        self._changed.add(node)

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
            self._changed.add(node)

    def nominated_pod(self, uid: str) -> PodInfo:
        """The pod as nominated (the version whose requests the sums hold); it must be nominated."""
        return self._pods[self._node_of[uid]][uid]

    def pods_for_node(self, node: str) -> list[PodInfo]:
        """In nomination order; shared, must not be changed."""
        return self._lists.get(node, [])

    def relevant_requests(self, pod: PodInfo, table: Any, nodes: dict[str, Any]) -> np.ndarray:
        """Per slot of `table` (a NodeTable of the cache's `nodes`), the summed requests of the pods
        `relevant(pod)` holds there, the pods column counting them; a new array."""
        pods_col = table.columns[PODS]
        if min(self._priorities, default=pod.priority) >= pod.priority:  # every other nominated pod counts
            self.delta.refresh(self, table, nodes, pods_col)
            assert self.delta.req is not None
            out = self.delta.req.copy()
            own = self._node_of.get(pod.uid)
            if own is not None and own in nodes:
                _add_requests(out[nodes[own].slot], table, pods_col, self.nominated_pod(pod.uid), -1)
            return out
        out = np.zeros_like(table.req)
        for node, pods in self._lists.items():
            ni = nodes.get(node)
            if ni is not None:
                for other in pods:
                    if other.priority >= pod.priority and other.uid != pod.uid:
                        _add_requests(out[ni.slot], table, pods_col, other, 1)
        return out

    def relevant_on(self, pod: PodInfo, node: str) -> list[PodInfo]:
        """The pods nominated to `node` that `pod` must make room for: priority >= its own, not itself."""
        return [p for p in self._lists.get(node, ()) if p.priority >= pod.priority and p.uid != pod.uid]

    def relevant(self, pod: PodInfo) -> Mapping[str, list[PodInfo]]:
        """Per node, the nominated pods `pod` must make room for: priority >= its own, not itself.
        The result is shared and must not be changed."""
        if min(self._priorities, default=pod.priority) >= pod.priority:  # every other nominated pod counts
            return self._all if pod.uid not in self._node_of else AllNominated(self, pod)
        out: dict[str, list[PodInfo]] = {}
        for node in self._lists:
            chosen = self.relevant_on(pod, node)
            if chosen:
                out[node] = chosen
        return out


def _add_requests(row: np.ndarray, table: Any, pods_col: int, pod: PodInfo, sign: int) -> None:
    row[pods_col] += sign
    for res, amount in pod.requests.items():
        col = table.columns.get(res)
        if col is not None:
            row[col] += sign * amount
