"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer suits their node affinity.

Follows descheduler pkg/framework/plugins/removepodsviolatingnodeaffinity. Node affinity is only
checked when a pod is scheduled ("IgnoredDuringExecution"); after node labels change, this
strategy evicts so the pod's controller makes a replacement the scheduler places afresh. The
`nodeAffinityType` entries run in the order given:

- requiredDuringSchedulingIgnoredDuringExecution: a pod that has a required node affinity and
  whose node no longer matches it together with its nodeSelector. A pod with only a nodeSelector
  is left alone, as upstream does.
- preferredDuringSchedulingIgnoredDuringExecution: a pod with preferred terms when some ready
  node's weight sum (the weights of the terms the node matches) is strictly greater than its own
  node's. As upstream, the best weight is taken over all ready nodes, independently of whether
  the pod fits on that node: a pod can be evicted for a better node that is full (and land on an
  equally good one). nodeFit only asks that it fit somewhere else.

Either way the pod must fit some ready node (upstream's PodFitsAnyNode, its own node included
and judged as if the pod were not on it); that is asked of our scheduler's filters through
Placement.scores_with_current. Unknown `nodeAffinityType` values are accepted and do nothing, as
upstream only logs them.

Pods are taken node by node; the profile's Filter plugins decide which may go, PreEvictionFilter
runs right before each eviction (upstream applies it while listing: same pods, and a "Filtered"
attempt then means the pod did violate its affinity). A node's limit moves on to the next node;
the pass's total limit ends the current affinity type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.objects import Obj
from kubesched.api.selectors import PreferredSchedulingTerms, RequiredNodeAffinity, SelectorError
from kubesched.descheduler.framework import DESCHEDULE, Plugin, Status, evict_violators
from kubesched.descheduler.podutil import (
    selected_active_pods,
    validate_pod_selection,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _node_affinity(pod: Obj) -> Obj:
    return ((pod["spec"].get("affinity") or {}).get("nodeAffinity")) or {}


def compile_preferred(terms: list[Obj]) -> list[PreferredSchedulingTerms]:
    """The pod's preferred terms, one by one; a term that does not parse matches nothing, as in
    upstream's GetNodeWeightGivenPodPreferredAffinity."""
    out = []
    for term in terms:
        try:
            out.append(PreferredSchedulingTerms.compile([term]))
        except SelectorError:
            continue
    return out


def preferred_weight(terms: list[PreferredSchedulingTerms], node: Obj) -> int:
    """The summed weights of the preferred terms `node` matches."""
    labels, name = node["metadata"].get("labels") or {}, node["metadata"]["name"]
    return sum(t.score(labels, name) for t in terms)


class RemovePodsViolatingNodeAffinity(Plugin):
    name = "RemovePodsViolatingNodeAffinity"
    points = frozenset({DESCHEDULE})
    fields = frozenset({"namespaces", "labelSelector", "nodeAffinityType"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        if not args.get("nodeAffinityType"):
            errors.append("nodeAffinityType needs to be set")
        validate_pod_selection(args, errors)
        return errors

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        keep = selected_active_pods(self.args)
        names = {n["metadata"]["name"] for n in nodes}
        checks: dict[str, Callable[[Obj, Obj], bool]] = {
            REQUIRED: lambda pod, node: self._violates_required(pod, node, names),
            PREFERRED: lambda pod, node: self._better_elsewhere(pod, node, nodes, names),
        }
        for kind in self.args.get("nodeAffinityType") or ():
            check = checks.get(kind)
            if check is not None:
                evict_violators(self.handle, nodes, keep, check, self.name)
        return None

    def _fits_any_node(self, pod: Obj, names: set[str]) -> bool:
        """PodFitsAnyNode by our scheduler's filters; the pod's own node is judged without the
        pod on it (upstream skips the resource check there)."""
        return self.handle.placement.scores_with_current(pod, names, score=False).best is not None

    def _violates_required(self, pod: Obj, node: Obj, names: set[str]) -> bool:
        if _node_affinity(pod).get(REQUIRED) is None:
            return False
        meta = node["metadata"]
        if RequiredNodeAffinity.from_pod(pod["spec"]).matches(meta.get("labels") or {}, meta["name"]):
            return False
        return self._fits_any_node(pod, names)

    def _better_elsewhere(self, pod: Obj, node: Obj, nodes: list[Obj], names: set[str]) -> bool:
        raw = _node_affinity(pod).get(PREFERRED) or []
        if not raw:
            return False
        terms = compile_preferred(raw)
        best = max((preferred_weight(terms, n) for n in nodes), default=0)
        return best > preferred_weight(terms, node) and self._fits_any_node(pod, names)
