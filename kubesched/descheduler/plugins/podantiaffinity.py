"""RemovePodsViolatingInterPodAntiAffinity: evict pods whose required anti-affinity is violated.

Follows descheduler pkg/framework/plugins/removepodsviolatinginterpodantiaffinity and
CheckPodsWithAntiAffinityExist (pkg/utils/predicates.go). Required pod anti-affinity is only
enforced when a pod is scheduled; pods that arrived together (bound directly, or scheduled by
another scheduler) or whose topology changed can end up violating it.

A pod violates when one of its own requiredDuringScheduling anti-affinity terms matches another
pod in the same topology domain: on the same node, or on a node with the same value of the
term's topologyKey (both nodes must carry the key). Only the candidate's own terms count, as
upstream; the other side is found when that pod is the candidate. The term's namespaces are its
`namespaces` list, or else the pod's own namespace; `namespaceSelector` is not read, and a pod of
the same name is never a match (upstream compares names only). The pods considered, as
candidates and as the ones matched, are the non-finished pods on the pass's nodes that pass the
`namespaces` and `labelSelector` arguments, whether or not they may be evicted.

Node by node, pods are tried lowest priority first (then BestEffort, Burstable, Guaranteed);
a violating pod the profile's Filter and PreEvictionFilter accept is evicted and no longer
counts against the pods after it, so of two pods that exclude each other only one goes. A
node's eviction limit moves on to the next node; the pass's total limit ends the strategy.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Obj
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.descheduler.framework import DESCHEDULE, Plugin, Status, try_evict
from kubesched.descheduler.podutil import (
    selected_active_pods,
    sort_by_priority_low_to_high,
    validate_pod_selection,
)


def _namespace(pod: Obj) -> str:
    return pod["metadata"].get("namespace", "default")


def same_topology(a: Obj, b: Obj, key: str) -> bool:
    """hasSameLabelValue: the same node, or both nodes labelled `key` with the same value."""
    if a["metadata"]["name"] == b["metadata"]["name"]:
        return True
    la, lb = a["metadata"].get("labels") or {}, b["metadata"].get("labels") or {}
    return key in la and key in lb and la[key] == lb[key]


def violates_anti_affinity(pod: Obj, by_namespace: dict[str, list[Obj]], nodes: dict[str, Obj]) -> bool:
    """CheckPodsWithAntiAffinityExist: whether a pod in `by_namespace` on one of `nodes` matches
    a required anti-affinity term of `pod` within the term's topology."""
    own = nodes.get(pod["spec"].get("nodeName") or "")
    anti = ((pod["spec"].get("affinity") or {}).get("podAntiAffinity")) or {}
    if own is None:
        return False
    for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        namespaces = set(term.get("namespaces") or ()) or {_namespace(pod)}
        try:
            selector = LabelSelector.compile(term.get("labelSelector"))
        except SelectorError:
            return False
        for ns in namespaces:
            for other in by_namespace.get(ns, ()):
                if other["metadata"]["name"] == pod["metadata"]["name"]:
                    continue
                if not selector.matches(other["metadata"].get("labels") or {}):
                    continue
                where = nodes.get(other["spec"].get("nodeName") or "")
                if where is not None and same_topology(own, where, term.get("topologyKey", "")):
                    return True
    return False


class RemovePodsViolatingInterPodAntiAffinity(Plugin):
    name = "RemovePodsViolatingInterPodAntiAffinity"
    points = frozenset({DESCHEDULE})
    fields = frozenset({"namespaces", "labelSelector"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        validate_pod_selection(args, errors)
        return errors

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        keep = selected_active_pods(self.args)
        node_map = {n["metadata"]["name"]: n for n in nodes}
        on_node = {name: self.handle.pods_on_node(name, keep) for name in node_map}
        by_namespace: dict[str, list[Obj]] = {}
        for pods in on_node.values():
            for pod in pods:
                by_namespace.setdefault(_namespace(pod), []).append(pod)
        ev = self.handle.evictor
        for name in node_map:
            for pod in sort_by_priority_low_to_high(on_node[name]):
                if not violates_anti_affinity(pod, by_namespace, node_map) or not ev.filter(pod):
                    continue
                outcome = try_evict(self.handle, pod, self.name)
                if outcome == "evicted":
                    ns = _namespace(pod)
                    by_namespace[ns] = [p for p in by_namespace[ns] if p is not pod]
                elif outcome == "node":
                    break
                elif outcome == "stop":
                    return None
        return None
