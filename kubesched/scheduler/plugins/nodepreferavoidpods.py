"""NodePreferAvoidPods: score 0 on a node whose `scheduler.alpha.kubernetes.io/preferAvoidPods`
annotation names the pod's ReplicaSet or ReplicationController, 100 elsewhere.

An in-tree plugin until Kubernetes v1.24 (default weight 10000, so it overrode every other score),
removed since; kubesched ships it, off by default, for the descheduler's PreferAvoidPods hint
(from the rescheduling design proposal): enable it in a KubeSchedulerConfiguration profile's `score` plugins. A missing or
unreadable annotation avoids nothing, as upstream did.
"""

from __future__ import annotations

import json

from kubesched.api.objects import controller_of
from kubesched.scheduler.framework import MAX_NODE_SCORE, CycleState, ScorePlugin
from kubesched.scheduler.types import NodeInfo, PodInfo

AVOID_PODS_ANNOTATION = "scheduler.alpha.kubernetes.io/preferAvoidPods"
AVOIDABLE_CONTROLLERS = ("ReplicationController", "ReplicaSet")


class NodePreferAvoidPods(ScorePlugin):
    name = "NodePreferAvoidPods"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        owner = controller_of(pod.obj)
        if owner is None or owner.get("kind") not in AVOIDABLE_CONTROLLERS:
            return MAX_NODE_SCORE
        raw = (node.obj["metadata"].get("annotations") or {}).get(AVOID_PODS_ANNOTATION)
        if not raw:
            return MAX_NODE_SCORE
        try:
            entries = json.loads(raw).get("preferAvoidPods") or []
        except (ValueError, AttributeError):
            return MAX_NODE_SCORE
        for entry in entries:
            ctrl = ((entry or {}).get("podSignature") or {}).get("podController") or {}
            if ctrl.get("kind") == owner.get("kind") and ctrl.get("uid") == owner.get("uid"):
                return 0
        return MAX_NODE_SCORE
