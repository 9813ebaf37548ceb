"""Preemption (framework/preemption): find nodes where removing lower-priority pods lets a pod
fit, pick one, and start removing its victims.

The Evaluator is the generic part upstream shares between preemption plugins; which pods may be
victims on one node is the plugin's `select_victims_on_node`. Everything here works on copies
(`NodeInfo.clone`, `CycleState.clone`) changed one pod at a time, never on the cache itself.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kubesched.api.objects import Obj, set_condition
from kubesched.scheduler.candidates import (
    Budget,
    Candidate,
    WhatIf,
    pick_one_node,
    wall_now,
)
from kubesched.scheduler.framework import (
    CycleState,
    PostFilterResult,
    Profile,
)
from kubesched.scheduler.types import Code, NodeInfo, PodInfo, Status
from kubesched.scheduler.vectorised.dryrun import BatchedDryRun
from kubesched.scheduler.vectorised.filters import NodeStatuses, fit_error_message

if TYPE_CHECKING:
    from kubesched.scheduler.framework import Handle

NOT_HELPFUL = "Preemption is not helpful for scheduling"
RECORD_KEY = "DefaultPreemption/record"  # CycleState key of a dict to fill in when the attempt is explained
INT32_MAX = 2**31 - 1


def _set_condition(condition: Obj, status: Obj) -> bool:
    return set_condition(status, condition)


class PreemptionInterface(Protocol):
    """What the Evaluator asks of a preemption plugin (upstream's preemption.Interface): whether
    the pod may preempt at all, and which pods it would have to remove from a node."""

    # The plugin's name (a victim waiting at Permit is rejected in it).
    @property
    def name(self) -> str: ...

    # Whether a node's potential victims are exactly its pods of lower priority, so nodes may
    # be judged on totals and a node without any gets `no_victims()`.
    @property
    def victims_below_priority(self) -> bool: ...

    def eligible(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]: ...

    def no_victims(self) -> Status: ...

    def select_victims_on_node(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo,
                               budgets: Sequence[Budget], node_now: WhatIf | None = None
                               ) -> tuple[list[PodInfo], dict[str, list[str]], Status]: ...

    def lower_priority(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo]: ...

    def reprieve_order(self, potential: list[PodInfo], budgets: Sequence[Budget]
                       ) -> tuple[list[PodInfo], dict[str, list[str]], dict[str, tuple[int, float]] | None]: ...

    def sort_victims(self, victims: list[PodInfo], keys: dict[str, tuple[int, float]]) -> None: ...


class Evaluator:
    """Runs one preemption attempt for a plugin that supplies eligibility and victim selection."""

    def __init__(self, plugin: PreemptionInterface, handle: Handle, min_percentage: int, min_absolute: int) -> None:
        self.plugin = plugin
        self.handle = handle
        self.min_percentage = min_percentage
        self.min_absolute = min_absolute
        self.now = 0.0  # the API server's clock in Unix seconds, taken once per attempt (start times)
        self.batched = BatchedDryRun(plugin, handle)  # the fast path, beside the node-by-node one
        self._names: tuple[list[NodeInfo] | None, list[str]] = (None, [])  # the node order's names

    def what_if(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo) -> WhatIf:
        """A what-if of `node` for `pod`, with the pods nominated there that it must respect."""
        return self.batched.what_if(profile, state, pod, node)

    def _potential(self, nodes: list[NodeInfo], slots: np.ndarray, statuses: dict[str, Status]
                   ) -> tuple[list[NodeInfo], np.ndarray]:
        """nodesWherePreemptionMightHelp: the nodes the filters rejected as resolvable, in order,
        and their slots. Nodes failing alike share a Status, so each distinct one is read once."""
        if isinstance(statuses, NodeStatuses) and statuses.nodes is nodes:
            which = statuses.which_at()
            hopeless = [i for i, st in enumerate(statuses.distinct) if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
            keep = np.flatnonzero((which >= 0) & ~np.isin(which, hopeless))
            if len(keep) == len(nodes):  # every node (the usual case when preempting): no gather
                return list(nodes), slots
            return list(map(nodes.__getitem__, keep.tolist())), slots[keep]
        if self._names[0] is not nodes:
            self._names = (nodes, [ni.name for ni in nodes])
        found = list(map(statuses.get, self._names[1]))
        distinct = dict(zip(map(id, statuses.values()), statuses.values(), strict=True))
        hopeless = [i for i, st in distinct.items() if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
        ids = np.fromiter(map(id, found), dtype=np.uint64, count=len(found))
        keep = np.flatnonzero(~np.isin(ids, np.array([*hopeless, id(None)], dtype=np.uint64)))
        return [nodes[i] for i in keep.tolist()], slots[keep]

    def num_candidates(self, num_nodes: int) -> int:
        """calculateNumCandidates: a percentage of the nodes, at least the absolute minimum."""
        n = num_nodes * self.min_percentage // 100
        return min(max(n, self.min_absolute), num_nodes)

    def preempt(self, profile: Profile, state: CycleState, pod: PodInfo, statuses: dict[str, Status],
                record: dict[str, Any] | None) -> tuple[PostFilterResult | None, Status]:
        cache = self.handle.cache
        self.now = wall_now(self.handle.api)
        self.batched.start(profile, state)
        nominated = pod.obj.get("status", {}).get("nominatedNodeName") or ""
        # Only a nominated node's status is read; looking one up may build the whole name map.
        ok, why = self.plugin.eligible(pod, statuses.get(nominated) if nominated else None)
        if not ok:
            if record is not None:
                record["eligible"] = False
            return None, Status(Code.UNSCHEDULABLE, (why,))
        all_nodes, all_slots = cache.ordered()
        potential, potential_slots = self._potential(all_nodes, all_slots, statuses)
        node_statuses: dict[str, Status] = {}
        candidates: list[Candidate] = []
        if potential:  # else the empty result below clears any nomination
            budgets = [Budget.of(p) for p in self.handle.list_objects("PodDisruptionBudget")]
            if self.batched.totals is not None:
                self.batched.fix_verdicts(state, pod, potential, potential_slots)
            offset = self.handle.rng.randrange(len(potential))
            want = self.num_candidates(len(potential))
            if record is not None:
                record.update(potentialNodes=len(potential), offset=offset, numCandidates=want)
            found = None
            if self.batched.totals is not None and self.plugin.victims_below_priority:
                found = self.batched.dry_run(profile, state, pod, potential, potential_slots, offset, want,
                                             budgets, record is not None)
            if found is not None:
                candidates, node_statuses = found
            else:
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
                c = Candidate.of(ni.name, victims, violations)
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
        h.observer.preempted({
            "time": h.now(), "preemptor": pod.key, "priority": pod.priority, "node": c.node, "decidedBy": criterion,
            "victims": [{"pod": v.key, "priority": v.priority, "violates": c.violations.get(v.uid, []),
                         "alreadyTerminating": v.terminating} for v in c.victims],
            # Lower-priority pods left running there: the preemptor fits with them back.
            "reprieved": [p.key for p in (node.pods.values() if node else ())
                          if p.priority < pod.priority and p.uid not in chosen],
        })
        if to_delete:
            assert h.clock is not None  # a scheduler's handle has its clock
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
            api.update_status("Pod", victim.namespace, victim.name, functools.partial(_set_condition, cond))
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
