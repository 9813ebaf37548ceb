"""What preemption weighs, shared by the node-by-node dry run and the batched one: when a pod
started, what-ifs of a node with pods taken off, the disruption budgets, and the candidates with
pickOneNodeForPreemption's criteria (framework/preemption upstream)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Obj, parse_time
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.scheduler.types import NodeInfo, PodInfo, Status

if TYPE_CHECKING:
    from kubesched.scheduler.framework import CycleState, Profile

INT32_MAX = 2**31 - 1
START_KEY = "preemption/startTime"  # PodInfo.extra: status.startTime as Unix seconds, None if unset
_UNSET = object()


def start_time(pod: PodInfo, now: float) -> float:
    """GetPodStartTime as Unix seconds: status.startTime, or `now` for pods not started yet."""
    started = pod.extra.get(START_KEY, _UNSET)
    if started is _UNSET:
        raw = (pod.obj.get("status") or {}).get("startTime")
        started = pod.extra[START_KEY] = _unix(raw) if raw else None
    return now if started is None else started


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
    # pick_one_node's criteria values in CRITERIA's order, made when first needed; kept with a
    # candidate reused across attempts only while they cannot change (see the Evaluator).
    scores: tuple[float, ...] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, node: str, victims: list[PodInfo], violations: dict[str, list[str]]) -> Candidate:
        """From the node's victims and the budgets each of its potential victims would violate."""
        if not violations:
            return cls(node, victims, 0, {})
        mine = {v.uid: violations[v.uid] for v in victims if v.uid in violations}
        return cls(node, victims, len(mine), mine)


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


def _scores(c: Candidate, now: float) -> tuple[float, ...]:
    """The candidate's criteria values, kept with it."""
    values = c.scores = tuple(score(c, now) for _, score in CRITERIA)
    return values


_SCORES = operator.attrgetter("scores")


def pick_one_node(candidates: Sequence[Candidate], now: float) -> tuple[Candidate, str]:
    """pickOneNodeForPreemption: apply the criteria in order until one candidate is left; the
    second value names the criterion that decided ("only candidate", or "first of the rest").

    Applying them in turn keeps the candidates best on every criterion so far, so the winner is the
    first candidate whose values are the greatest in CRITERIA's order; comparing whole tuples finds
    it in one pass. The criterion that decided is the first on which the runner-up (the greatest
    of the others) differs from the winner: any other candidate shares a shorter prefix of values
    with the winner, so it was gone by then."""
    if len(candidates) == 1:
        return candidates[0], "only candidate"
    # Most candidates come back from the Evaluator's cache with their values: read in one pass.
    values = list(map(_SCORES, candidates))
    if None in values:
        values = [v or _scores(c, now) for v, c in zip(values, candidates, strict=True)]
    best = max(values)
    at = values.index(best)
    if values.count(best) > 1:
        return candidates[at], "first of the candidates left"
    runner_up = max(values[:at] + values[at + 1:])
    return candidates[at], next(name for (name, _), mine, theirs in zip(CRITERIA, best, runner_up, strict=True)
                                if mine != theirs)
