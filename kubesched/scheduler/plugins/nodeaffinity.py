"""NodeAffinity: nodeSelector and required node affinity filter; preferred terms score."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api.selectors import NodeSelector, PreferredSchedulingTerms
from kubesched.scheduler.cache import NodeTable
from kubesched.scheduler.framework import (
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
        term names nodes): nodes alike in those are matched once, so a pod that fits nowhere
        costs a dictionary lookup per node rather than a selector match."""
        keys: set[str] | None = set()
        for selector in (self.added_required, pod.required_affinity):
            if selector is not None and keys is not None:
                more = selector.label_keys()
                keys = None if more is None else keys | more
        if keys is None:
            return None
        names = tuple(sorted(keys))
        verdicts: dict[tuple[str | None, ...], int] = {}
        codes = []
        for i in positions.tolist():
            node = nodes[i]
            labels = node.labels
            seen = tuple([labels.get(name, _ABSENT) for name in names])
            code = verdicts.get(seen)
            if code is None:
                status = self.filter(state, pod, node)
                code = verdicts[seen] = 0 if status.ok else 1 if status is self._enforced else 2
            codes.append(code)
        return np.array(codes, dtype=np.int64)

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
        return [ClusterEvent("Node", "Add", self._node_hint), ClusterEvent("Node", "UpdateNodeLabel", self._node_hint),
                ClusterEvent("Pod", "Update")]

    def _matches(self, pod: PodInfo, node: dict) -> bool:
        labels, name = node["metadata"].get("labels") or {}, node["metadata"]["name"]
        if self.added_required is not None and not self.added_required.matches(labels, name):
            return False
        return pod.required_affinity is None or pod.required_affinity.matches(labels, name)

    def _node_hint(self, pod: PodInfo, old: dict | None, new: dict) -> bool:
        """Queue when the node matches now and did not before (or is new)."""
        return self._matches(pod, new) and (old is None or not self._matches(pod, old))
