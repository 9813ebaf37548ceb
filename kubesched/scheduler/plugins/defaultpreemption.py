"""DefaultPreemption (PostFilter): when a pod fits nowhere, make room by preempting
lower-priority pods on one node (plugins/defaultpreemption)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.api.objects import get_condition
from kubesched.gosort import sort_slice
from kubesched.scheduler.candidates import Budget, WhatIf, importance_key, split_by_pdb_violation
from kubesched.scheduler.framework import ConfigError, CycleState, PostFilterPlugin, PostFilterResult, Profile
from kubesched.scheduler.preemption import RECORD_KEY, Evaluator
from kubesched.scheduler.types import SUCCESS, Code, NodeInfo, PodInfo, Status

NAME = "DefaultPreemption"
NO_VICTIMS = "No preemption victims found for incoming pod"


def terminating_by_preemption(pod: PodInfo) -> bool:
    if not pod.terminating:
        return False
    cond = get_condition(pod.obj, "DisruptionTarget")
    return cond is not None and cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"


def _validate_args(pct: Any, absolute: Any) -> None:
    base = f"pluginConfig[{NAME}].args"
    if not isinstance(pct, int) or not 0 <= pct <= 100:
        raise ConfigError(f"{base}.minCandidateNodesPercentage", f"Invalid value: {pct}: not in valid range [0, 100]")
    if not isinstance(absolute, int) or absolute < 0:
        raise ConfigError(f"{base}.minCandidateNodesAbsolute", f"Invalid value: {absolute}: not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        raise ConfigError(f"{base}.minCandidateNodesPercentage",
                          "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute")


class DefaultPreemption(PostFilterPlugin):
    name = NAME
    # The Evaluator may judge nodes on totals: a node's potential victims are exactly its pods of
    # lower priority, and a node without any gets `no_victims()`.
    victims_below_priority = True

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        pct = self.args.get("minCandidateNodesPercentage", 10)
        absolute = self.args.get("minCandidateNodesAbsolute", 100)
        _validate_args(pct, absolute)
        self.evaluator = Evaluator(self, handle, pct, absolute)

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        profile = self.handle.profiles[pod.scheduler_name]
        record = state.get(RECORD_KEY)
        result, status = self.evaluator.preempt(profile, state, pod, statuses, record)
        if status.reasons:
            return result, Status(status.code, (f"preemption: {status.message()}",), self.name)
        return result, status

    def eligible(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]:
        """PodEligibleToPreemptOthers: not for preemptionPolicy Never; and not while the node it
        already preempted on still has lower-priority victims shutting down, unless that node can
        no longer take the pod at all."""
        if pod.preemption_policy == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = pod.obj.get("status", {}).get("nominatedNodeName")
        if nominated:
            if nominated_status is None or nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = self.handle.cache.nodes.get(nominated)
            if ni is not None and any(p.priority < pod.priority and terminating_by_preemption(p)
                                      for p in ni.pods.values()):
                return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def no_victims(self) -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,), self.name)

    def select_victims_on_node(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo,
                               budgets: Sequence[Budget], node_now: WhatIf | None = None
                               ) -> tuple[list[PodInfo], dict[str, list[str]], Status]:
        """Remove every lower-priority pod; if the pod then fits, put them back one at a time, most
        important first and budget-protected ones before the rest, keeping each that still lets the
        pod fit. Those that cannot come back are the victims."""
        potential = self.lower_priority(pod, node)
        if not potential:
            return [], {}, self.no_victims()
        if node_now is None:
            node_now = self.evaluator.what_if(profile, state, pod, node)
        for p in potential:
            node_now.remove(p)
        status = node_now.check()
        if not status.ok:
            return [], {}, status
        order, violations, keys = self.reprieve_order(potential, budgets)
        victims: list[PodInfo] = []
        for p in order:
            node_now.add(p)
            if not node_now.check().ok:
                node_now.remove(p)
                victims.append(p)
        if keys is not None:
            self.sort_victims(victims, keys)
        return victims, violations, SUCCESS

    def lower_priority(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo]:
        """The node's potential victims, in the node's pod order."""
        return [p for p in node.pods.values() if p.priority < pod.priority]

    def reprieve_order(self, potential: list[PodInfo], budgets: Sequence[Budget]
                       ) -> tuple[list[PodInfo], dict[str, list[str]], dict[str, tuple[int, float]] | None]:
        """The order in which a node's potential victims are offered back (most important first,
        budget-protected ones before the rest), the budgets each would violate, and the keys to
        re-sort the victims by when that split reordered them (None: they stay in order)."""
        keys = {p.uid: importance_key(p, self.evaluator.now) for p in potential}
        _most_important_first(potential, keys)
        violating, others, violations = split_by_pdb_violation(potential, budgets)
        return violating + others, violations, keys if violating and others else None

    def sort_victims(self, victims: list[PodInfo], keys: dict[str, tuple[int, float]]) -> None:
        """Most important first again, after `reprieve_order`'s budget split reordered them."""
        _most_important_first(victims, keys)


def _most_important_first(pods: list[PodInfo], keys: dict[str, tuple[int, float]]) -> None:
    """Sort as upstream's sort.Slice with MoreImportantPod does. Only pods that tie are left in an
    order particular to Go's algorithm; with none, any sort gives the same order, and a fast one."""
    if len({keys[p.uid] for p in pods}) == len(pods):
        pods.sort(key=lambda p: keys[p.uid])
    else:
        sort_slice(pods, lambda a, b: keys[a.uid] < keys[b.uid])
