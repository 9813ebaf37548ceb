"""RemoveDuplicates: spread the pods of one owner that pile up on a node.

Follows descheduler pkg/framework/plugins/removeduplicates. Two pods on the same node are
duplicates when they have exactly the same owner references (namespace, kind, name) and the
same container images. For every owner key (namespace, owner kind, owner name, sorted images)
the strategy counts all its pods on the pass's nodes, finds the nodes the pods could run on,
and evicts from each node the pods beyond the upper average
ceil(pods of the owner / target nodes); fewer than two target nodes: nothing is evicted.

Target nodes are judged the way upstream does, by static constraints only: nodes whose
NoSchedule and NoExecute taints the pod tolerates and that match its nodeSelector and required
node affinity (our selector and taint helpers, not the scheduler: free capacity must not change
how many duplicates a node may keep). A node counts only when at least two nodes qualify for
the same duplicate. Only duplicates (not the first pod of a kind on a node) are looked at.

A pod counts when it is not finished, passes the `namespaces` argument and the profile's
Filter, has owners none of which is of a kind in `excludeOwnerKinds`, and passes the
PreEvictionFilter (nodeFit), which upstream applies while listing, so a pod that could not go
elsewhere does not count at all. The excess pods of a node are its last-listed duplicates. A
pod with two owner references is counted under both owners and may be evicted for each.
Upstream walks owners and nodes in Go map order; here owners come in the order first seen and
nodes in the pass's order. A node's eviction limit moves on to the next node of that owner;
the pass's total limit ends the strategy.
"""

from __future__ import annotations

import math
from typing import Any

from kubesched.api.objects import Obj, is_terminal
from kubesched.api.selectors import RequiredNodeAffinity
from kubesched.api.taints import first_untolerated
from kubesched.descheduler.framework import (
    BALANCE,
    EvictionFailed,
    NamespaceLimitError,
    NodeLimitError,
    Plugin,
    Status,
    TotalLimitError,
)
from kubesched.descheduler.podutil import namespace_filter, owner_refs, validate_namespaces

OwnerKey = tuple[str, str, str, str]  # namespace, owner kind, owner name, images joined by "#"
SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def _placement_terms(pod: Obj) -> str:
    """What decides where a pod may land here (tolerations, nodeSelector, required node
    affinity), as one comparable value: pods alike in these reach the same nodes."""
    spec = pod["spec"]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    return repr((spec.get("tolerations"), spec.get("nodeSelector"), required))


def landing_nodes(pod: Obj, nodes: list[Obj]) -> list[str]:
    """The nodes whose NoSchedule/NoExecute taints `pod` tolerates and whose labels match its
    nodeSelector and required node affinity."""
    tolerations = pod["spec"].get("tolerations") or []
    affinity = RequiredNodeAffinity.from_pod(pod["spec"])
    out = []
    for node in nodes:
        taints = (node.get("spec") or {}).get("taints") or []
        if first_untolerated(taints, tolerations, lambda t: t.get("effect") in SCHEDULING_EFFECTS) is not None:
            continue
        if affinity.matches(node["metadata"].get("labels") or {}, node["metadata"]["name"]):
            out.append(node["metadata"]["name"])
    return out


def target_nodes(duplicates: dict[str, list[Obj]], nodes: list[Obj]) -> set[str]:
    """getTargetNodes: the union of the landing nodes of every duplicate that has at least two."""
    targets: set[str] = set()
    seen: set[str] = set()
    for pods in duplicates.values():
        for pod in pods:
            terms = _placement_terms(pod)
            if terms in seen:
                continue
            seen.add(terms)
            found = landing_nodes(pod, nodes)
            if len(found) > 1:
                targets.update(found)
    return targets


class RemoveDuplicates(Plugin):
    name = "RemoveDuplicates"
    points = frozenset({BALANCE})
    fields = frozenset({"namespaces", "excludeOwnerKinds"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        validate_namespaces(args, errors)
        return errors

    def _counted(self, pod: Obj, excluded: set[str]) -> bool:
        """Whether the pod has owners, none of an excluded kind, and passes PreEvictionFilter."""
        refs = owner_refs(pod)
        return bool(refs) and not any(r.get("kind") in excluded for r in refs) \
            and self.handle.evictor.pre_eviction_filter(pod, self.name)

    def balance(self, nodes: list[Obj]) -> Status | None:
        in_namespaces = namespace_filter(self.args)
        excluded = set(self.args.get("excludeOwnerKinds") or ())
        occurrences: dict[OwnerKey, int] = {}
        duplicates: dict[OwnerKey, dict[str, list[Obj]]] = {}
        for node in nodes:
            node_name = node["metadata"]["name"]
            seen: set[tuple[str, ...]] = set()  # the sorted key lists of the pods met on this node
            pods = self.handle.evictable_pods_on_node(
                node_name, lambda p: not is_terminal(p) and in_namespaces(p) and self._counted(p, excluded))
            for pod in pods:
                ns = pod["metadata"].get("namespace", "default")
                images = sorted(c.get("image", "") for c in pod["spec"].get("containers") or ())
                owners = [(ns, r.get("kind", ""), r.get("name", ""), "#".join(images)) for r in owner_refs(pod)]
                for owner in owners:
                    occurrences[owner] = occurrences.get(owner, 0) + 1
                keys = tuple(sorted(f"{ns}/{kind}/{name}/{image}" for ns, kind, name, _ in owners for image in images))
                if keys not in seen:
                    seen.add(keys)
                    continue
                for owner in owners:
                    duplicates.setdefault(owner, {}).setdefault(node_name, []).append(pod)
        for owner, by_node in duplicates.items():
            targets = target_nodes(by_node, nodes)
            if len(targets) < 2:
                continue
            upper_avg = math.ceil(occurrences[owner] / len(targets))
            for extra in by_node.values():
                # `extra` leaves out the node's first pod of the owner, which stays.
                if len(extra) + 1 <= upper_avg:
                    continue
                if not self._evict(extra[upper_avg - 1:]):
                    return None
        return None

    def _evict(self, pods: list[Obj]) -> bool:
        """Evict `pods` of one node; False when the pass's total limit is reached."""
        for pod in pods:
            try:
                self.handle.evictor.evict(pod, self.name)
            except NodeLimitError:
                return True
            except TotalLimitError:
                return False
            except (NamespaceLimitError, EvictionFailed):
                continue
        return True
