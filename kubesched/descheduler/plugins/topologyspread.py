"""RemovePodsViolatingTopologySpreadConstraint: evict the fewest pods that bring every topology
spread constraint back within its maxSkew (descheduler
pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint, v0.34).

A Balance plugin. The pods it looks at are those on the pass's nodes that are not finished and
that the profile's Filter plugins, the `namespaces` and the `labelSelector` arguments accept; only
they are counted, so pods the descheduler may not evict do not weigh on the balance (upstream
decided so on purpose, PR 413). Per namespace, the distinct constraints of those pods whose
whenUnsatisfiable is listed in `constraints` (DoNotSchedule by default; ScheduleAnyway on request)
are balanced one by one:

- domains are the topologyKey values of the nodes the constraint's node inclusion policies admit
  (nodeAffinityPolicy Honor, the default: the pod's nodeSelector and required node affinity must
  match; nodeTaintsPolicy Honor: every NoSchedule/NoExecute taint must be tolerated), so an empty
  domain counts too; each non-terminating pod matching the selector (with matchLabelKeys' values
  ANDed in) is counted in its node's domain;
- a constraint whose largest and smallest domains differ by at most maxSkew is left alone;
- otherwise domains are sorted by size and two cursors walk in from both ends: the large domain
  gives the smallest of half the skew above maxSkew, what it has above the ideal average, and
  what the small domain lacks below it (each rounded up). The pods given are taken from the back
  of the large domain's list, which is ordered: pods with a nodeSelector or node affinity first,
  then by priority ascending (no priority first) -- so, as upstream's comparator works out, the
  highest-priority pods without a node constraint go first -- and then, stably, pods that fit no
  node of a below-average domain before those that do.

With `topologyBalanceNodeFit` (default true) a chosen pod is kept when it fits no node, other
than its own, in the domains below the ideal average; it still counts as moved so the walk ends.
Upstream asks its node-fit helper (PodFitsAnyOtherNode); kubesched asks its own scheduler's
filters through `handle.placement`, so the answer also weighs what the real scheduler would
check (the pod's spread constraints and inter-pod affinity included).

Chosen pods are evicted after every namespace and constraint has been walked, each once even
when several constraints chose it, after the PreEvictionFilter: a pod on a node at its limit is
skipped, the pass's total limit ends the plugin, any other refusal is skipped.

Deliberate differences, all about order where upstream iterates Go maps (so its order is random):
nodes come in the pass's order (by name), pods on a node by name (as upstream's tests list them),
namespaces by name, domains of equal size in node order, and pods are evicted in the order they
were chosen. Pods of equal rank keep their listing order (upstream's comparator is not strict,
so Go's sort may shuffle them, from an order that is random already). minDomains is not honoured (upstream's
README says so), nor the pod's other hard constraints as the unmerged upstream PR 1918 proposes,
beyond what the scheduler's filters already check.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Obj, is_terminal, is_terminating
from kubesched.api.selectors import LabelSelector, RequiredNodeAffinity, SelectorError
from kubesched.api.taints import first_untolerated
from kubesched.descheduler.framework import BALANCE, Handle, Plugin, Status, try_evict
from kubesched.descheduler.podutil import (
    all_of,
    label_filter,
    namespace_filter,
    priority,
    validate_pod_selection,
)

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR = "Honor"
SUPPORTED_CONSTRAINTS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)


@dataclass(frozen=True)
class SpreadConstraint:
    """One constraint as the plugin uses it: selector parsed (matchLabelKeys merged in), node
    inclusion policies resolved against the pod that declared it. `identity` is what makes two
    constraints the same one (upstream compares the parsed structs)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    affinity: RequiredNodeAffinity | None  # the pod's required node affinity, when honoured
    tolerations: tuple[Obj, ...] | None  # the pod's tolerations, when taints are honoured
    identity: str

    def includes(self, node: Obj) -> bool:
        """matchNodeInclusionPolicies: whether the node's domain takes part in the balance."""
        labels = node["metadata"].get("labels") or {}
        if self.affinity is not None and not self.affinity.matches(labels, node["metadata"]["name"]):
            return False
        if self.tolerations is not None:
            taints = (node.get("spec") or {}).get("taints") or ()
            if first_untolerated(taints, list(self.tolerations), _hard_taint) is not None:
                return False
        return True


def _hard_taint(taint: Obj) -> bool:
    return taint.get("effect") in ("NoSchedule", "NoExecute")


def parse_constraint(raw: Obj, pod: Obj) -> SpreadConstraint:
    """newTopologySpreadConstraint; raises SelectorError for a selector that does not parse."""
    selector = raw.get("labelSelector")
    labels = pod["metadata"].get("labels") or {}
    extra = {k: labels[k] for k in raw.get("matchLabelKeys") or () if k in labels}
    requirements: list[tuple[str, str, list[str]]] = []
    if selector is not None:  # a nil selector selects nothing, whatever is merged into it
        for k, v in (selector.get("matchLabels") or {}).items():
            requirements.append((k, "=", [v]))
        for expr in selector.get("matchExpressions") or ():
            requirements.append((expr.get("key"), expr.get("operator"), sorted(expr.get("values") or ())))
        requirements += [(k, "=", [v]) for k, v in extra.items()]
        if extra:
            selector = {"matchLabels": selector.get("matchLabels") or {},
                        "matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in extra.items()]
                        + list(selector.get("matchExpressions") or ())}
    compiled = LabelSelector.compile(selector)
    spec = pod.get("spec") or {}
    honor_affinity = (raw.get("nodeAffinityPolicy") or HONOR) == HONOR
    honor_taints = raw.get("nodeTaintsPolicy") == HONOR
    affinity = RequiredNodeAffinity.from_pod(spec) if honor_affinity else None
    tolerations = tuple(spec.get("tolerations") or ()) if honor_taints else None
    node_constraint = ({"nodeSelector": spec.get("nodeSelector") or {},
                        "required": ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                            "requiredDuringSchedulingIgnoredDuringExecution")} if honor_affinity else None)
    identity = json.dumps([raw.get("maxSkew"), raw.get("topologyKey"),
                           None if selector is None else sorted(requirements),
                           honor_affinity, honor_taints, node_constraint, tolerations], sort_keys=True)
    return SpreadConstraint(int(raw.get("maxSkew") or 0), raw.get("topologyKey") or "", compiled, affinity,
                            tolerations, identity)


def has_selector_or_affinity(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return bool(spec.get("nodeSelector")) or (spec.get("affinity") or {}).get("nodeAffinity") is not None


def _eviction_rank(pod: Obj) -> tuple[int, int, int]:
    """Position in a domain's list (the back is evicted first): pods with a node constraint
    first, then no priority, then ascending priority -- sortDomains' comparator."""
    p = priority(pod)
    return (0 if has_selector_or_affinity(pod) else 1, p is not None, p or 0)


@dataclass
class _Domain:
    value: str
    pods: list[Obj]


class RemovePodsViolatingTopologySpreadConstraint(Plugin):
    name = "RemovePodsViolatingTopologySpreadConstraint"
    points = frozenset({BALANCE})
    fields = frozenset({"namespaces", "labelSelector", "constraints", "topologyBalanceNodeFit"})

    @classmethod
    def defaults(cls, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(args)
        if not out.get("constraints"):
            out["constraints"] = [DO_NOT_SCHEDULE]
        if out.get("topologyBalanceNodeFit") is None:
            out["topologyBalanceNodeFit"] = True
        return out

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        validate_pod_selection(args, errors)
        constraints = args.get("constraints")
        if not isinstance(constraints, list):
            errors.append(f"constraints: must be a list of {' or '.join(SUPPORTED_CONSTRAINTS)}, got {constraints!r}")
        else:
            errors.extend(f"constraint {c} is not one of map[DoNotSchedule:{{}} ScheduleAnyway:{{}}]"
                          for c in constraints if c not in SUPPORTED_CONSTRAINTS)
        if not isinstance(args.get("topologyBalanceNodeFit"), bool):
            errors.append(f"topologyBalanceNodeFit: must be a boolean, got {args.get('topologyBalanceNodeFit')!r}")
        return errors

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        ev = handle.evictor
        self.pod_filter = all_of(lambda p: not is_terminal(p), ev.filter, namespace_filter(args), label_filter(args))
        self.allowed = set(args.get("constraints") or (DO_NOT_SCHEDULE,))
        self.node_fit = args.get("topologyBalanceNodeFit", True)

    # ---- Balance --------------------------------------------------------------------------------

    def balance(self, nodes: list[Obj]) -> Status | None:
        node_map = {n["metadata"]["name"]: n for n in nodes}
        by_namespace: dict[str, list[Obj]] = {}
        for name in node_map:
            on_node = sorted(self.handle.pods_on_node(name, self.pod_filter), key=lambda p: p["metadata"]["name"])
            for pod in on_node:
                by_namespace.setdefault(pod["metadata"].get("namespace", "default"), []).append(pod)
        chosen: dict[str, Obj] = {}  # podsForEviction, by uid, in the order chosen
        for namespace in sorted(by_namespace):
            pods = by_namespace[namespace]
            for c in self._constraints(pods):
                domains, total = self._domains(c, pods, nodes, node_map)
                if _balanced(domains, c.max_skew):
                    continue
                self._balance_domains(chosen, c, domains, total, nodes)
        self._evict(chosen)
        return None

    def _constraints(self, pods: list[Obj]) -> list[SpreadConstraint]:
        """The namespace's distinct constraints with an allowed whenUnsatisfiable, in pod order;
        one whose selector does not parse is skipped."""
        out: dict[str, SpreadConstraint] = {}
        for pod in pods:
            for raw in (pod.get("spec") or {}).get("topologySpreadConstraints") or ():
                if raw.get("whenUnsatisfiable") not in self.allowed:
                    continue
                try:
                    c = parse_constraint(raw, pod)
                except SelectorError:
                    continue
                out.setdefault(c.identity, c)
        return list(out.values())

    @staticmethod
    def _domains(c: SpreadConstraint, pods: list[Obj], nodes: list[Obj],
                 node_map: dict[str, Obj]) -> tuple[dict[str, list[Obj]], int]:
        """Matching pods per domain value, with every admitted node's domain present (even
        empty); a pod on a node outside the inclusion policies still counts in its domain, as
        upstream counts it."""
        key = c.topology_key
        domains: dict[str, list[Obj]] = {}
        for node in nodes:
            node_labels = node["metadata"].get("labels") or {}
            if key in node_labels and c.includes(node):
                domains.setdefault(node_labels[key], [])
        total = 0
        for pod in pods:
            if is_terminating(pod) or not c.selector.matches(pod["metadata"].get("labels") or {}):
                continue
            pod_node = node_map.get(pod["spec"].get("nodeName") or "")
            labels = (pod_node or {}).get("metadata", {}).get("labels") or {}
            if key not in labels:
                continue
            domains.setdefault(labels[key], []).append(pod)
            total += 1
        return domains, total

    def _balance_domains(self, chosen: dict[str, Obj], c: SpreadConstraint, domains: dict[str, list[Obj]],
                         total: int, nodes: list[Obj]) -> None:
        """balanceDomains: walk the size-sorted domains from both ends, choosing pods to move."""
        ideal = total / len(domains)
        ordered = [_Domain(v, sorted(pods, key=_eviction_rank)) for v, pods in domains.items()]
        ordered.sort(key=lambda d: len(d.pods))
        below = {d.value for d in ordered if len(d.pods) < ideal}
        targets = {n["metadata"]["name"] for n in nodes
                   if (n["metadata"].get("labels") or {}).get(c.topology_key) in below and c.includes(n)}
        fits = self._fit_check(targets)
        i, j = 0, len(ordered) - 1
        while i < j:
            if len(ordered[j].pods) <= ideal:
                j -= 1
            skew = len(ordered[j].pods) - len(ordered[i].pods)
            if skew <= c.max_skew:
                i += 1
                continue
            move = int(min(math.ceil(len(ordered[j].pods) - ideal), math.ceil(ideal - len(ordered[i].pods)),
                           math.ceil((skew - c.max_skew) / 2)))
            if move <= 0:
                i += 1
                continue
            ordered[j].pods.sort(key=fits)  # stable: pods that fit a target go to the back
            moved = ordered[j].pods[-move:]
            for pod in moved:
                if self.node_fit and not fits(pod):
                    continue  # would come back where it is; it still counts as moved
                chosen.setdefault(pod["metadata"].get("uid", ""), pod)
            del ordered[j].pods[-move:]
            ordered[i].pods.extend(moved)

    def _fit_check(self, targets: set[str]) -> Callable[[Obj], bool]:
        """PodFitsAnyOtherNode over `targets`, answered by the scheduler's filters; memoised, as
        nothing changes while the domains are walked."""
        memo: dict[str, bool] = {}

        def fits(pod: Obj) -> bool:
            uid = pod["metadata"].get("uid", "")
            if uid not in memo:
                memo[uid] = bool(targets) and self.handle.placement.fits_elsewhere(pod, targets)
            return memo[uid]
        return fits

    def _evict(self, chosen: dict[str, Obj]) -> None:
        """The eviction loop. Upstream runs the plugin's pod filter again here; every chosen pod
        already passed it."""
        limited: set[str] = set()
        for pod in chosen.values():
            node = pod["spec"].get("nodeName") or ""
            if node in limited:
                continue
            outcome = try_evict(self.handle, pod, self.name)
            if outcome == "node":
                limited.add(node)
            elif outcome == "stop":
                return


def _balanced(domains: dict[str, list[Obj]], max_skew: int) -> bool:
    """topologyIsBalanced: no two domains differ by more than maxSkew (no domain: balanced)."""
    sizes = [len(p) for p in domains.values()]
    return not sizes or max(sizes) - min(sizes) <= max_skew
