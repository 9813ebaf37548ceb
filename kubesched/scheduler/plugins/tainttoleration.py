"""TaintToleration: NoSchedule/NoExecute taints repel; untolerated PreferNoSchedule taints lower the score."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api.taints import first_untolerated, tolerated
from kubesched.scheduler.cache import NodeFlag, NodeTable
from kubesched.scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    default_normalize,
)
from kubesched.scheduler.types import SUCCESS, Code, NodeInfo, PodInfo, Status
from kubesched.scheduler.vectorised.filters import reject_flagged

# v1.35 aggregates this reason; older releases named the taint ("had untolerated taint {k: v}").
REASON = "node(s) had untolerated taint(s)"
STATE_KEY = "PreScoreTaintToleration"
NONE_KEY = "TaintToleration.untainted"  # set by score_many: whether it found no node to count


def _hard(taint: dict) -> bool:
    return taint.get("effect") in ("NoSchedule", "NoExecute")


# Nodes with a taint the filter or the scorer may have to weigh; the others pass untouched.
HARD_TAINTS = NodeFlag("hard_taints", lambda ni: any(map(_hard, ni.taints)))
PREFER_TAINTS = NodeFlag("prefer_taints", lambda ni: any(t.get("effect") == "PreferNoSchedule" for t in ni.taints))


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "TaintToleration"
    node_flags = (HARD_TAINTS, PREFER_TAINTS)
    pods_via_requests = True
    normalized_in_range = True  # counts (never negative) scaled by their maximum and reversed
    _status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), "TaintToleration")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if first_untolerated(node.taints, pod.tolerations, _hard) is not None:
            return self._status
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray:
        return reject_flagged(table.flags["hard_taints"][slots], nodes, positions,
                              lambda node: first_untolerated(node.taints, pod.tolerations, _hard) is not None)

    def decode(self, state: CycleState, code: int) -> Status:
        return self._status

    def passes_all(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not table.flagged["hard_taints"]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        # Tolerations with no effect match every effect, PreferNoSchedule included.
        state[STATE_KEY] = [t for t in pod.tolerations if t.get("effect") in (None, "", "PreferNoSchedule")]
        return SUCCESS

    def _count(self, tolerations: list[dict], node: NodeInfo) -> int:
        return sum(1 for t in node.taints
                   if t.get("effect") == "PreferNoSchedule" and not tolerated(tolerations, t))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self._count(state[STATE_KEY], node)

    def score_many(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                   table: NodeTable) -> np.ndarray:
        scores = np.zeros(len(nodes), dtype=np.int64)
        state[NONE_KEY] = not table.flagged["prefer_taints"]  # no node has a PreferNoSchedule taint
        if state[NONE_KEY]:
            return scores
        tolerations = state[STATE_KEY]
        for k in np.flatnonzero(table.flags["prefer_taints"][slots]):
            scores[k] = self._count(tolerations, nodes[k])
        return scores

    def uniform(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not table.flagged["prefer_taints"]  # every node scores 0, normalised to 100

    def normalize(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        if state.get(NONE_KEY):  # every score is 0, so every node gets the full score
            return np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        return default_normalize(scores, reverse=True)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.Add, self._node_hint), ClusterEvent("Node", ActionType.UpdateNodeTaint, self._node_hint),
                ClusterEvent("Pod", ActionType.Update)]

    @staticmethod
    def _node_hint(pod: PodInfo, old: dict | None, new: dict) -> bool:
        """Queue only when the node goes from having an untolerated taint to having none."""
        def untolerated(node: dict) -> bool:
            taints = (node.get("spec") or {}).get("taints") or []
            return first_untolerated(taints, pod.tolerations, _hard) is not None

        return (old is None or untolerated(old)) and not untolerated(new)
