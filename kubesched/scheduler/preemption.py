"""Preemption (framework/preemption): find nodes where removing lower-priority pods lets a pod
fit, pick one, and start removing its victims.

The Evaluator is the generic part upstream shares between preemption plugins; which pods may be
victims on one node is the plugin's `select_victims_on_node`. Everything here works on copies
(`NodeInfo.clone`, `CycleState.clone`) changed one pod at a time, never on the cache itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import Obj, parse_time, set_condition
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.scheduler.framework import CycleState, PostFilterResult, Profile, fit_error_message
from kubesched.scheduler.types import Code, NodeInfo, PodInfo, Status

if TYPE_CHECKING:
    from kubesched.scheduler.framework import Handle

NOT_HELPFUL = "Preemption is not helpful for scheduling"
RECORD_KEY = "DefaultPreemption/record"  # CycleState key of a dict to fill in when the attempt is explained
INT32_MAX = 2**31 - 1


def start_time(pod: PodInfo, now: float) -> float:
    """GetPodStartTime as Unix seconds: status.startTime, or `now` for pods not started yet."""
    raw = (pod.obj.get("status") or {}).get("startTime")
    return _unix(raw) if raw else now


@functools.lru_cache(maxsize=4096)
def _unix(raw: str) -> float:
    return parse_time(raw).timestamp()


def wall_now(api: Any) -> float:
    """The API server's current time as Unix seconds (the unit of `start_time`)."""
    return parse_time(api.timestamp()).timestamp()


def importance_key(pod: PodInfo, now: float) -> tuple[int, float]:
    """Sort key putting MoreImportantPod first: higher priority, then the earlier start."""
    return (-pod.priority, start_time(pod, now))


class WhatIf:
    """A node with pods taken off or put back for one attempt only (NodeInfo.Snapshot + CycleState
    Clone upstream), answering whether the pod fits, nominated pods included."""

    def __init__(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo,
                 nominated: Sequence[PodInfo]) -> None:
        self.profile, self.pod, self.nominated = profile, pod, nominated
        self.node, self.state = node.clone(), state.clone()

    def remove(self, other: PodInfo) -> None:
        self.node.add_pod(other, -1)
        self.profile.run_remove_pod(self.state, self.pod, other, self.node)

    def add(self, other: PodInfo) -> None:
        self.node.add_pod(other)
        self.profile.run_add_pod(self.state, self.pod, other, self.node)

    def check(self) -> Status:
        return self.profile.filter_with_nominated(self.state, self.pod, self.node, self.nominated)

    def hopeless(self) -> bool:
        """A cheap proof that the pod cannot fit whatever is removed; False when there is none."""
        return False


class TotalsWhatIf(WhatIf):
    """The same answers from running totals alone, valid when every active filter sees a node's
    pods only through their summed requests (`pods_via_requests`): nothing is copied, and the
    verdicts of filters that ignore pods altogether are taken once."""

    def __init__(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo,
                 nominated: Sequence[PodInfo], dynamic: list[Any], fixed: Status | None) -> None:
        """`dynamic`: the filters reading requested totals that run before `fixed`, the verdict of
        the first pod-independent filter that rejects the node (None if all pass)."""
        self.profile, self.pod, self.nominated = profile, pod, nominated
        self.node, self.state = node, state
        self.requested = dict(node.requested)
        self.num_pods = len(node.pods)
        self.extra: dict[str, int] = {}
        for other in nominated:
            for name, amount in other.requests.items():
                self.extra[name] = self.extra.get(name, 0) + amount
        self.dynamic, self.fixed = dynamic, fixed

    def remove(self, other: PodInfo) -> None:
        req = self.requested
        for name, amount in other.requests.items():
            req[name] = req.get(name, 0) - amount
        self.num_pods -= 1

    def add(self, other: PodInfo) -> None:
        req = self.requested
        for name, amount in other.requests.items():
            req[name] = req.get(name, 0) + amount
        self.num_pods += 1

    def _run(self, requested: dict[str, int], num_pods: int) -> Status:
        for pl in self.dynamic:
            st = pl.filter_requested(self.state, self.pod, self.node, requested, num_pods)
            if not st.ok:
                return st if st.plugin else Status(st.code, st.reasons, pl.name)
        return self.fixed or Status()

    def _with_nominated(self, requested: dict[str, int], num_pods: int) -> Status:
        if self.nominated:
            with_them = dict(requested)
            for name, amount in self.extra.items():
                with_them[name] = with_them.get(name, 0) + amount
            st = self._run(with_them, num_pods + len(self.nominated))
            if not st.ok:
                return st
        return self._run(requested, num_pods)

    def check(self) -> Status:
        return self._with_nominated(self.requested, self.num_pods)

    def hopeless(self) -> bool:
        """Whether the pod would not fit even with every pod gone (only nominated ones left)."""
        return not self._with_nominated({}, 0).ok


def totals_filters(profile: Profile, state: CycleState) -> list[Any] | None:
    """The active filters if what-ifs can run on totals (TotalsWhatIf), else None."""
    filters = [pl for pl in profile.at("filter") if pl.name not in state.skip_filter]
    return filters if all(pl.pods_via_requests for pl in filters) else None


@dataclass
class Budget:
    """The parts of a PodDisruptionBudget preemption reads."""

    namespace: str
    name: str
    selector: LabelSelector | None  # None: invalid, matches nothing
    allowed: int
    disrupted: set[str]

    @classmethod
    def of(cls, pdb: Obj) -> Budget:
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        try:
            selector = LabelSelector.compile(spec.get("selector")) if spec.get("selector") is not None else None
        except SelectorError:
            selector = None
        return cls(pdb["metadata"].get("namespace", "default"), pdb["metadata"]["name"], selector,
                   int(status.get("disruptionsAllowed") or 0), set(status.get("disruptedPods") or {}))

    def covers(self, pod: PodInfo) -> bool:
        # A nil or empty selector matches nothing here (unlike in the eviction API).
        return (self.namespace == pod.namespace and self.selector is not None and not self.selector.is_empty
                and self.selector.matches(pod.labels))


def split_by_pdb_violation(pods: Sequence[PodInfo], budgets: Sequence[Budget]
                           ) -> tuple[list[PodInfo], list[PodInfo], dict[str, list[str]]]:
    """filterPodsWithPDBViolation: taking `pods` in order, each matching budget's allowance is
    debited; a pod that drives one below zero would violate it. Pods the API server already
    counts as disrupted are not debited again. Returns (violating, others, pod uid -> budgets)."""
    allowed = [b.allowed for b in budgets]
    violating, others = [], []
    violated: dict[str, list[str]] = {}
    for pod in pods:
        hit = []
        if pod.labels:
            for i, b in enumerate(budgets):
                if not b.covers(pod) or pod.name in b.disrupted:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    hit.append(b.name)
        if hit:
            violating.append(pod)
            violated[pod.uid] = hit
        else:
            others.append(pod)
    return violating, others, violated


@dataclass
class Candidate:
    node: str
    victims: list[PodInfo]  # most important first
    num_pdb_violations: int
    violations: dict[str, list[str]] = field(default_factory=dict)  # victim uid -> budgets it violates


CRITERIA: list[tuple[str, Callable[[Candidate, float], float]]] = [
    ("fewest PodDisruptionBudget violations", lambda c, now: -c.num_pdb_violations),
    ("lowest highest-victim priority", lambda c, now: -c.victims[0].priority),
    ("smallest sum of victim priorities", lambda c, now: -sum(v.priority + INT32_MAX + 1 for v in c.victims)),
    ("fewest victims", lambda c, now: -len(c.victims)),
    # The latest of the earliest start times among each node's highest-priority victims: disrupt
    # the pods that have run the least.
    ("latest start of the highest-priority victims",
     lambda c, now: min(start_time(v, now) for v in c.victims if v.priority == c.victims[0].priority)),
]


def pick_one_node(candidates: Sequence[Candidate], now: float) -> tuple[Candidate, str]:
    """pickOneNodeForPreemption: apply the criteria in order until one candidate is left; the
    second value names the criterion that decided ("only candidate", or "first of the rest")."""
    if len(candidates) == 1:
        return candidates[0], "only candidate"
    remaining = list(candidates)
    for name, score in CRITERIA:
        values = [score(c, now) for c in remaining]
        best = max(values)
        remaining = [c for c, v in zip(remaining, values, strict=True) if v == best]
        if len(remaining) == 1:
            return remaining[0], name
    return remaining[0], "first of the candidates left"


class Evaluator:
    """Runs one preemption attempt for a plugin that supplies eligibility and victim selection."""

    def __init__(self, plugin: Any, handle: Handle, min_percentage: int, min_absolute: int) -> None:
        self.plugin = plugin
        self.handle = handle
        self.min_percentage = min_percentage
        self.min_absolute = min_absolute
        self.now = 0.0  # the API server's clock in Unix seconds, taken once per attempt (start times)
        self.totals: list[Any] | None = None  # per attempt: see totals_filters
        self.dynamic_at: list[tuple[int, Any]] = []  # of those, the ones reading requests, with positions
        self.dynamic: list[Any] = []
        self.fixed: dict[str, tuple[int, Status]] = {}  # node -> first rejecting pod-independent filter

    def what_if(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo) -> WhatIf:
        """A what-if of `node` for `pod`, with the pods nominated there that it must respect."""
        nominated = self.handle.nominator.relevant_on(pod, node.name)
        if self.totals is None:
            return WhatIf(profile, state, pod, node, nominated)
        fixed = self.fixed.get(node.name)
        if fixed is None:
            return TotalsWhatIf(profile, state, pod, node, nominated, self.dynamic, None)
        return TotalsWhatIf(profile, state, pod, node, nominated,
                            [pl for i, pl in self.dynamic_at if i < fixed[0]], fixed[1])

    def _fixed_verdicts(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> None:
        """Run the pod-independent filters once over all `nodes`, vectorised: per node, the first
        one that rejects it (position in the filter order, status)."""
        assert self.totals is not None
        self.dynamic_at = [(i, pl) for i, pl in enumerate(self.totals) if pl.uses_requests]
        self.dynamic = [pl for _, pl in self.dynamic_at]
        self.fixed = {}
        table = self.handle.cache.table
        slots = np.fromiter((ni.slot for ni in nodes), dtype=np.int64, count=len(nodes))
        alive = np.ones(len(nodes), dtype=bool)
        for i, pl in enumerate(self.totals):
            live = np.flatnonzero(alive)
            if pl.uses_requests or not len(live):
                continue
            codes = pl.filter_many(state, pod, nodes, live, slots[live], table)
            failed = ([(int(j), pl.filter(state, pod, nodes[int(j)])) for j in live] if codes is None
                      else [(int(live[k]), pl.decode(state, int(codes[k]))) for k in np.flatnonzero(codes)])
            for j, st in failed:
                if not st.ok:
                    self.fixed[nodes[j].name] = (i, st if st.plugin else Status(st.code, st.reasons, pl.name))
                    alive[j] = False

    def num_candidates(self, num_nodes: int) -> int:
        """calculateNumCandidates: a percentage of the nodes, at least the absolute minimum."""
        n = num_nodes * self.min_percentage // 100
        return min(max(n, self.min_absolute), num_nodes)

    def preempt(self, profile: Profile, state: CycleState, pod: PodInfo, statuses: dict[str, Status],
                record: dict[str, Any] | None) -> tuple[PostFilterResult | None, Status]:
        cache = self.handle.cache
        self.now = wall_now(self.handle.api)
        self.totals = totals_filters(profile, state)
        nominated = pod.obj.get("status", {}).get("nominatedNodeName") or ""
        ok, why = self.plugin.eligible(pod, statuses.get(nominated))
        if not ok:
            if record is not None:
                record["eligible"] = False
            return None, Status(Code.UNSCHEDULABLE, (why,))
        all_nodes, _ = cache.ordered()
        potential = [ni for ni in all_nodes if ni.name in statuses
                     and statuses[ni.name].code != Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
        node_statuses: dict[str, Status] = {}
        candidates: list[Candidate] = []
        if potential:  # else the empty result below clears any nomination
            budgets = [Budget.of(p) for p in self.handle.list_objects("PodDisruptionBudget")]
            if self.totals is not None:
                self._fixed_verdicts(state, pod, potential)
            offset = self.handle.rng.randrange(len(potential))
            want = self.num_candidates(len(potential))
            if record is not None:
                record.update(potentialNodes=len(potential), offset=offset, numCandidates=want)
            candidates, node_statuses = self.dry_run(profile, state, pod, potential, offset, want, budgets,
                                                     record is not None)
            if record is not None:
                record["candidates"] = [_candidate_json(c) for c in candidates]
                record["rejected"] = {n: st.message() for n, st in node_statuses.items()}
        if not candidates:
            # The dry run's verdicts as a FitError; nodes it did not try could not be helped.
            not_helpful = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))
            msg = fit_error_message(len(all_nodes), node_statuses, not_helpful, None, None)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (msg,))
        best, criterion = pick_one_node(candidates, self.now)
        if record is not None:
            record.update(nominatedNode=best.node, decidedBy=criterion)
        self.prepare_candidate(best, pod, profile.scheduler_name, criterion)
        return PostFilterResult(best.node), Status()

    def dry_run(self, profile: Profile, state: CycleState, pod: PodInfo, potential: list[NodeInfo], offset: int,
                want: int, budgets: list[Budget], explain: bool = False) -> tuple[list[Candidate], dict[str, Status]]:
        """Try nodes from `offset` round-robin; stop once `want` candidates are found, at least one
        of them violating no budget. Non-violating candidates come first."""
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        hopeless: list[NodeInfo] = []  # cannot be candidates; why matters only if nothing else is
        n = len(potential)
        for i in range(n):
            ni = potential[(offset + i) % n]
            node_now = self.what_if(profile, state, pod, ni)
            if node_now.hopeless():
                hopeless.append(ni)
                continue
            victims, violations, status = self.plugin.select_victims_on_node(profile, state, pod, ni, budgets,
                                                                             node_now)
            if status.ok and victims:
                c = Candidate(ni.name, victims, sum(1 for v in victims if v.uid in violations),
                              {v.uid: violations[v.uid] for v in victims if v.uid in violations})
                (violating if c.num_pdb_violations else clean).append(c)
                if clean and len(clean) + len(violating) >= want:
                    break
                continue
            if status.ok:
                status = Status(Code.ERROR, (f'expected at least one victim pod on node "{ni.name}"',))
            statuses[ni.name] = status
        if hopeless and (explain or not (clean or violating)):
            for ni in hopeless:
                statuses[ni.name] = self.plugin.select_victims_on_node(profile, state, pod, ni, budgets)[2]
        return clean + violating, statuses

    def prepare_candidate(self, c: Candidate, pod: PodInfo, scheduler_name: str, criterion: str) -> None:
        """Hand the node to the preemptor (prepareCandidateAsync). The API calls run just after this
        scheduling attempt, as upstream's goroutine does: lower-priority pods nominated to the node
        lose their nomination, then each victim gets the DisruptionTarget condition, a graceful
        delete and a `Preempted` event (a victim waiting at Permit is rejected instead). Victims
        already terminating need nothing; when all are, v1.35 also leaves nominations alone."""
        h = self.handle
        to_delete = [v for v in c.victims if not v.terminating]
        chosen = {v.uid for v in c.victims}
        node = h.cache.nodes.get(c.node)
        h.preemptions.append({
            "time": h.now(), "preemptor": pod.key, "priority": pod.priority, "node": c.node, "decidedBy": criterion,
            "victims": [{"pod": v.key, "priority": v.priority, "violates": c.violations.get(v.uid, []),
                         "alreadyTerminating": v.terminating} for v in c.victims],
            # Lower-priority pods left running there: the preemptor fits with them back.
            "reprieved": [p.key for p in (node.pods.values() if node else ())
                          if p.priority < pod.priority and p.uid not in chosen],
        })
        if to_delete:
            h.clock.call_soon(lambda: self._preempt(c.node, pod, to_delete, scheduler_name))

    def _preempt(self, node: str, pod: PodInfo, victims: list[PodInfo], scheduler_name: str) -> None:
        h = self.handle
        api = h.api
        assert api is not None
        for other in h.nominator.pods_for_node(node):
            if other.priority < pod.priority:
                clear_nomination(api, other)
        for victim in victims:
            message = f"Preempted by pod {pod.uid} on node {node}"
            waiting = h.waiting_pods.get(victim.uid)
            if waiting is not None:
                waiting.reject(self.plugin.name, "preempted")
                api.record_event(victim.obj, "Normal", "Preempted", message, source=scheduler_name)
                continue
            current = api.store.get("Pod", victim.namespace, victim.name)
            if current is None or current["metadata"].get("uid") != victim.uid:
                continue  # already gone: nothing to do, no event
            cond = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                    "lastTransitionTime": api.timestamp(), "reason": "PreemptionByScheduler",
                    "message": f"{scheduler_name}: preempting to accommodate a higher priority pod"}
            api.update_status("Pod", victim.namespace, victim.name, lambda st, cond=cond: set_condition(st, cond))
            current = api.delete("Pod", victim.namespace, victim.name) or current
            api.record_event(current, "Normal", "Preempted", message, source=scheduler_name)


def clear_nomination(api: Any, pod: PodInfo) -> None:
    """ClearNominatedNodeName: a status patch; the nominator follows from the update event."""
    current = api.store.get("Pod", pod.namespace, pod.name)
    if current is None or current["metadata"].get("uid") != pod.uid:
        return
    if (current.get("status") or {}).get("nominatedNodeName"):
        api.update_status("Pod", pod.namespace, pod.name, lambda st: st.pop("nominatedNodeName", None))


def _candidate_json(c: Candidate) -> dict[str, Any]:
    return {"node": c.node, "victims": [v.key for v in c.victims], "pdbViolations": c.num_pdb_violations,
            "violatedBudgets": {v.key: c.violations[v.uid] for v in c.victims if v.uid in c.violations}}
