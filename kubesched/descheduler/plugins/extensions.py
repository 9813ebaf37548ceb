"""kubesched's own descheduler plugins: ideas of the rescheduling design proposal that the
descheduler lacks.

None of them exists upstream; a policy enables them like any plugin, all at the
preEvictionFilter point, so a policy that does not name them behaves exactly as the
descheduler does.

- DisruptionRateLimit: "no more than one disruption per hour across the pods of a budget" —
  a rate on top of the budget's minAvailable/maxUnavailable.
- ScoreImprovement: evict only when our scheduler would score some other node at least
  `minScoreGain` points above the pod's current node (descheduler issue 238; the proposal's "only
  act when it sees particularly bad situations").
- PreferAvoidPods: after an eviction, the node the pod left is annotated with the pod's
  controller (the proposal's PreferAvoidPods) so the scheduler's NodePreferAvoidPods score plugin
  steers the replacement elsewhere; entries expire after `ttl`.
"""

from __future__ import annotations

import json
from typing import Any

from kubesched.api.duration import go_duration, parse_duration
from kubesched.api.objects import Obj, controller_of
from kubesched.api.pdb import pdb_covers, pdb_selector
from kubesched.descheduler.framework import (
    ALLOWED,
    PRE_EVICTION_FILTER,
    EvictionAttempt,
    Handle,
    Plugin,
    Status,
)
from kubesched.scheduler.plugins.nodepreferavoidpods import AVOID_PODS_ANNOTATION


def _duration_error(args: dict[str, Any], key: str) -> list[str]:
    try:
        if parse_duration(args[key]) <= 0:
            return [f"{key}: must be greater than 0"]
    except ValueError as e:
        return [f"{key}: {e}"]
    return []


def _positive_int(args: dict[str, Any], key: str) -> list[str]:
    value = args.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return [f"{key}: must be an integer of at least 1, got {value!r}"]
    return []


class DisruptionRateLimit(Plugin):
    name = "DisruptionRateLimit"
    points = frozenset({PRE_EVICTION_FILTER})
    recheck_at_eviction = True
    fields = frozenset({"maxDisruptions", "period"})

    @classmethod
    def defaults(cls, args: dict[str, Any]) -> dict[str, Any]:
        return {"maxDisruptions": 1, "period": "1h", **args}

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        return _positive_int(args, "maxDisruptions") + _duration_error(args, "period")

    def pre_eviction_filter(self, pod: Obj) -> Status:
        api = self.handle.api
        ns = pod["metadata"].get("namespace", "default")
        budgets = [b["metadata"]["name"] for b in api.store.list("PodDisruptionBudget", ns)
                   if pdb_covers(b, pod, pdb_selector(b))]
        if not budgets:
            return ALLOWED
        period = parse_duration(self.args["period"])
        since = self.handle.now() - period
        history = self.handle.evictions
        for budget in budgets:
            recent = history.count(ns, budget, since) if history is not None else 0
            if recent >= self.args["maxDisruptions"]:
                return Status.refused(f"budget {ns}/{budget} had {recent} disruption(s) in the last "
                                      f"{go_duration(period)} (limit {self.args['maxDisruptions']})")
        return ALLOWED


class ScoreImprovement(Plugin):
    name = "ScoreImprovement"
    points = frozenset({PRE_EVICTION_FILTER})
    recheck_at_eviction = True
    fields = frozenset({"minScoreGain"})

    @classmethod
    def defaults(cls, args: dict[str, Any]) -> dict[str, Any]:
        return {"minScoreGain": 1, **args}

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        return _positive_int(args, "minScoreGain")

    def pre_eviction_filter(self, pod: Obj) -> Status:
        node = pod["spec"].get("nodeName")
        nodes = self.handle.ready_node_names(self.handle.node_selector)
        scores = self.handle.placement.scores_with_current(pod, nodes).scores
        others = {n: s for n, s in scores.items() if n != node}
        if not others:
            return Status.refused("no other node fits the pod")
        best = max(others, key=lambda n: others[n])
        current = scores.get(node) if node else None
        if current is None:
            return ALLOWED  # the pod no longer fits where it runs: any feasible node is better
        gain = others[best] - current
        if gain < self.args["minScoreGain"]:
            return Status.refused(f"best other node {best} scores {others[best]}, current node {node} scores "
                                  f"{current}: gain {gain} < minScoreGain {self.args['minScoreGain']}")
        return ALLOWED


class PreferAvoidPods(Plugin):
    name = "PreferAvoidPods"
    points = frozenset({PRE_EVICTION_FILTER})
    fields = frozenset({"ttl"})

    @classmethod
    def defaults(cls, args: dict[str, Any]) -> dict[str, Any]:
        return {"ttl": "1h", **args}

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        return _duration_error(args, "ttl")

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        handle.evictor.hooks.append(self._evicted)

    def prepare(self) -> None:
        """Drop expired entries on every node before the pass (the proposal's garbage collection)."""
        for node in self.handle.api.store.list("Node"):
            entries = _entries(node)
            kept = self._fresh(entries)
            if len(kept) != len(entries):
                self._write(node["metadata"]["name"], kept)

    def _fresh(self, entries: list[Obj]) -> list[Obj]:
        oldest = self.handle.now() - parse_duration(self.args["ttl"])
        return [e for e in entries if e.get("evictionTime") and self.handle.api.seconds(e["evictionTime"]) > oldest]

    def _evicted(self, pod: Obj, attempt: EvictionAttempt) -> None:
        owner = controller_of(pod)
        node_name = pod["spec"].get("nodeName")
        node = self.handle.api.store.get("Node", "", node_name) if node_name else None
        if owner is None or node is None:
            return
        entries = [e for e in self._fresh(_entries(node))
                   if ((e.get("podSignature") or {}).get("podController") or {}).get("uid") != owner.get("uid")]
        entries.append({"podSignature": {"podController": dict(owner)},
                        "evictionTime": self.handle.api.timestamp(),
                        "reason": attempt.strategy,
                        "message": f"descheduled {attempt.pod} by {attempt.strategy}"})
        self._write(node_name, entries)

    def _write(self, node: str, entries: list[Obj]) -> None:
        value = json.dumps({"preferAvoidPods": entries}) if entries else None
        self.handle.api.patch("Node", "", node, {"metadata": {"annotations": {AVOID_PODS_ANNOTATION: value}}})


def _entries(node: Obj) -> list[Obj]:
    raw = (node["metadata"].get("annotations") or {}).get(AVOID_PODS_ANNOTATION)
    if not raw:
        return []
    try:
        return list(json.loads(raw).get("preferAvoidPods") or [])
    except (ValueError, AttributeError):
        return []
