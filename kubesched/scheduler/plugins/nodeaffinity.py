"""NodeAffinity: nodeSelector and required node affinity filter; preferred terms score."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api.selectors import NodeSelector, PreferredSchedulingTerms
from kubesched.scheduler.cache import NodeTable
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    default_normalize,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
_ABSENT = "\0absent"  # what a node lacking a label is keyed by: no label value can contain a NUL


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "NodeAffinity"
    pods_via_requests = True
    _status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_POD,), "NodeAffinity")
    _enforced = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_ENFORCED,), "NodeAffinity")

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        added = self.args.get("addedAffinity") or {}
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution")
        self.added_required = NodeSelector.compile(required) if required else None
        self.added_preferred = PreferredSchedulingTerms.compile(preferred) if preferred else None
        # label keys -> (the node list it was built for, kept referenced; per position the class
        # of nodes alike in those labels; a node of each class)
        self._classes: dict[tuple[str, ...], tuple[Sequence[NodeInfo], np.ndarray, list[NodeInfo]]] = {}

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        spec = pod.obj.get("spec", {})
        required_terms = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        if required_terms is None and self.added_required is None and spec.get("nodeSelector") is None:
            return None, SKIP
        if required_terms is None:
            return None, SUCCESS
        # Terms that pin metadata.name narrow the nodes worth filtering (ORed terms, ANDed fields);
        # upstream narrows even with addedAffinity, which Filter still checks on the named nodes.
        names: set[str] | None = None
        for term in required_terms.get("nodeSelectorTerms") or ():
            term_names: set[str] | None = None
            for req in term.get("matchFields") or ():
                if req.get("key") == "metadata.name" and req.get("operator") == "In":
                    values = set(req.get("values") or ())
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None, SUCCESS
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_CONFLICT,), self.name)
        return (PreFilterResult(names) if names else None), SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if self.added_required is not None and not self.added_required.matches(node.labels, node.name):
            return self._enforced
        if pod.required_affinity is not None and not pod.required_affinity.matches(node.labels, node.name):
            return self._status
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray | None:
        """A node's verdict depends only on its values of the labels the selectors name (unless a
        term names nodes): each class of nodes alike in those is matched once, so a pod costs one
        selector match per class (a GPU model), not per node."""
        keys: set[str] | None = set()
        for selector in (self.added_required, pod.required_affinity):
            if selector is not None and keys is not None:
                more = selector.label_keys()
                keys = None if more is None else keys | more
        if keys is None:
            return None
        classes, representatives = self._alike(tuple(sorted(keys)), nodes)
        of = classes[positions]
        lut = np.zeros(len(representatives), dtype=np.int64)
        for c in np.unique(of).tolist():
            status = self.filter(state, pod, representatives[c])
            lut[c] = 0 if status.ok else 1 if status is self._enforced else 2
        return lut[of]

    def _alike(self, names: tuple[str, ...], nodes: Sequence[NodeInfo]) -> tuple[np.ndarray, list[NodeInfo]]:
        """Per position in `nodes`, which class of nodes alike in the labels `names` it is in, and
        a node of each class. Kept while the node list stands: the cache hands out a new list
        whenever a node is added, removed or relabelled, and pods asking about the same labels
        (a GPU model, a zone) share it."""
        known = self._classes.get(names)
        if known is not None and known[0] is nodes:
            return known[1], known[2]
        ids: dict[tuple[str, ...], int] = {}
        representatives: list[NodeInfo] = []
        classes = np.empty(len(nodes), dtype=np.int64)
        for i, node in enumerate(nodes):
            labels = node.labels
            seen = tuple([labels.get(name, _ABSENT) for name in names])
            c = ids.get(seen)
            if c is None:
                c = ids[seen] = len(representatives)
                representatives.append(node)
            classes[i] = c
        if len(self._classes) > 64:
            self._classes.clear()
        self._classes[names] = (nodes, classes, representatives)
        return classes, representatives

    def decode(self, state: CycleState, code: int) -> Status:
        return self._enforced if code == 1 else self._status

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        error = pod.extra.get("preferred_affinity_error")
        if error:
            return Status(Code.ERROR, (error,), self.name)
        if pod.preferred_affinity is None and self.added_preferred is None:
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        total = 0
        if pod.preferred_affinity is not None:
            total += pod.preferred_affinity.score(node.labels, node.name)
        if self.added_preferred is not None:
            total += self.added_preferred.score(node.labels, node.name)
        return total

    def normalize(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=False)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.Add, self._node_hint), ClusterEvent("Node", ActionType.UpdateNodeLabel, self._node_hint),
                ClusterEvent("Pod", ActionType.Update)]

    def _matches(self, pod: PodInfo, node: dict) -> bool:
        labels, name = node["metadata"].get("labels") or {}, node["metadata"]["name"]
        if self.added_required is not None and not self.added_required.matches(labels, name):
            return False
        return pod.required_affinity is None or pod.required_affinity.matches(labels, name)

    def _node_hint(self, pod: PodInfo, old: dict | None, new: dict) -> bool:
        """Queue when the node matches now and did not before (or is new)."""
        return self._matches(pod, new) and (old is None or not self._matches(pod, old))
