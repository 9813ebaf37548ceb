"""The run summary a capacity planner reads first: what became of the pods, how full the cluster
was over the whole run, how long pods waited for a node per priority class, and who preempted whom.

Everything is computed after the run from the recorder's pod histories (created, bound, ended on
the virtual clock) and the schedulers' preemption records, in O(pods log pods): it has to answer
for runs of 150,000 pods and traces of many virtual months.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Obj, get_condition
from kubesched.cluster.recorder import PodHistory, Recorder
from kubesched.sim import timeline as tl
from kubesched.sim.runner import SimResult

PERCENTILES = (50, 90, 99)
NOT_ATTEMPTED = "not attempted yet"
# Always shown when nodes have them; other resources only when some pod asks for them.
BASE_RESOURCES = ("cpu", "memory", "pods")
# The node counts of a FailedScheduling message ("0/1523 nodes are available: 3 Insufficient cpu, ..."):
# the total after "0/", and each reason's count after ": " or ", ". Pods whose messages differ only
# in these counts failed for the same set of reasons.
_COUNT = re.compile(r"(?<=0/)\d+(?= nodes are available)|(?<=available: )\d+(?= )|(?<=, )\d+(?= )")


def preemptions(recorder: Recorder) -> list[Mapping[str, Any]]:
    """Every preemption any scheduler performed, in time order: the schedulers' own reports, as
    only they know the candidates and the criterion that chose the node."""
    return sorted(recorder.preemptions, key=lambda p: p["time"])


def summarize(result: SimResult) -> dict[str, Any]:
    """The summary's JSON form (the `summary` key of the results)."""
    cluster, recorder = result.cluster, result.recorder
    end = cluster.now()
    records = preemptions(recorder)
    pods = PodTally(recorder, end, named_in(records))
    return {
        "span": {"start": 0.0, "end": end},
        "pods": pods.phase_counts(),
        "nodes": sum(1 for _ in cluster.store.list("Node")),
        "utilization": utilization(pods.requested, tl.allocatable_over_time(recorder), end),
        "pendingTime": pods.pending_times(),
        "pendingReasons": group_pending(pods.pending),
        "preemptions": preemptions_by_class(records, pods.classes),
        "events": dict(sorted(Counter(e.reason for e in recorder.events).items())),
    }


# ---- one pass over the pods -----------------------------------------------------------------------

def is_pending(h: PodHistory) -> bool:
    """Waiting for a node: still in the cluster and never bound."""
    return not h.deleted and not (h.obj.get("spec") or {}).get("nodeName")


def pod_class(obj: Obj) -> tuple[str, int]:
    """A pod's PriorityClass name (its priority value when it names none) and its priority."""
    spec = obj.get("spec") or {}
    priority = spec.get("priority") or 0
    return spec.get("priorityClassName") or f"priority {priority}", priority


class PodTally:
    """What every section needs from the pods, gathered in one pass over the recorder's histories:
    at 150,000 pods, fetching each pod's object from memory is most of the summary's cost, so it is
    read once, not once per section.

    `named`: the pods (namespace/name) whose class the preemption records need."""

    def __init__(self, recorder: Recorder, end: float, named: set[str]) -> None:
        self.total = len(recorder.pods)
        self.phases: Counter[str] = Counter()  # as the API last had them
        self.deleted: Counter[str] = Counter()  # by why they went
        self.requested = tl.Requested()  # what bound pods held, from binding until they ended
        # Per class, how long pods the scheduler bound waited from creation, and how many were never bound.
        self.waits: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.unbound: Counter[tuple[str, int]] = Counter()
        self.pending: list[PodHistory] = []
        self.classes: dict[str, tuple[str, int]] = {}  # of `named` (the latest pod of a name wins)
        # When the scheduler's Scheduled Events say it bound each pod (a pod that arrived with its node
        # never waited). A name is rarely scheduled twice (reused by a later pod): those are kept apart,
        # as a tuple per pod would set the garbage collector going over the whole run's objects.
        scheduled: dict[str, float] = {}
        again: set[tuple[str, float]] = set()
        for e in recorder.events:
            if e.reason == "Scheduled" and scheduled.setdefault(e.object, e.time) != e.time:
                again.add((e.object, e.time))
        requests = tl.RequestsBySpec()
        for h in recorder.pods.values():
            obj = h.obj
            if h.deleted:
                self.deleted[h.reason or "Deleted"] += 1
            else:
                self.phases[(obj.get("status") or {}).get("phase") or "Pending"] += 1
                if is_pending(h):
                    self.pending.append(h)
            cls = pod_class(obj)
            key = None
            if h.bound_at is None:
                self.unbound[cls] += 1
            else:
                key = tl.pod_key(obj)
                pod = f"Pod/{key}"
                if scheduled.get(pod) == h.bound_at or (again and (pod, h.bound_at) in again):
                    self.waits[cls].append(h.bound_at - h.created_at)
                if h.node is not None:  # a pod holding its node at the end holds it past it: a run
                    # that ends at 0 s (a snapshot) shows the cluster as full as it is at that instant
                    self.requested.add(h.bound_at, h.ended_at if h.ended_at is not None else math.inf,
                                       requests(obj.get("spec") or {}))
            if named and (key := key or tl.pod_key(obj)) in named:
                self.classes[key] = cls

    def phase_counts(self) -> dict[str, Any]:
        """Pods by phase as the API last had them, and those deleted by why they went."""
        phases = self.phases.copy()
        order = ("Running", "Pending", "Succeeded", "Failed")
        out: dict[str, Any] = {"total": self.total}
        out.update({p: phases.pop(p, 0) for p in order})
        out.update(sorted(phases.items()))  # Unknown, or anything else a status said
        out["deleted"] = dict(self.deleted.most_common())
        return out

    def pending_times(self) -> list[dict[str, Any]]:
        """Per class, highest priority first: how long pods waited from creation to binding.

        Only pods a scheduler bound count (a pod that arrived with its node never waited), and pods
        never bound are counted apart (`unbound`): still pending at the end, or deleted first. A pod
        of the snapshot waited from the start of the run."""
        rows = []
        for cls in sorted(set(self.waits) | set(self.unbound), key=lambda c: (-c[1], c[0])):
            ordered = sorted(self.waits.get(cls, ()))
            row: dict[str, Any] = {"class": cls[0], "priority": cls[1], "bound": len(ordered),
                                   "unbound": self.unbound[cls]}
            for q in PERCENTILES:
                row[f"p{q}"] = nearest_rank(ordered, q) if ordered else None
            row["max"] = ordered[-1] if ordered else None
            rows.append(row)
        return rows


# ---- utilisation ----------------------------------------------------------------------------------

def utilization(requested: tl.Requested, allocatable: dict[str, tl.Step], end: float) -> dict[str, Any]:
    """Per resource, requested / allocatable over the whole cluster: its time-weighted average
    over the time any node offered the resource, and its peak (with when it was first reached).

    A pod holds its requests from its binding until it ends (terminal or deleted); a node offers
    its allocatable from its creation until its deletion."""
    asked = set(requested.by_resource)
    offered = {r for r, step in allocatable.items() if step.maximum() > 0}
    names = [r for r in BASE_RESOURCES if r in offered] + sorted(offered & asked - set(BASE_RESOURCES))
    out: dict[str, Any] = {}
    for r in names:
        used_over_time, offer = requested.step(r), allocatable[r]
        times = tl.union_of_times(used_over_time.times, offer.times)
        times = times[times <= end]
        used, have = used_over_time.values_at(times), offer.values_at(times)
        held = np.diff(np.append(times, max(end, times[-1])))
        ratio = np.divide(used, have, out=np.zeros_like(used), where=have > 0)
        span = held[have > 0].sum()
        average = float((ratio * held)[have > 0].sum() / span) if span > 0 else float(ratio[have > 0][-1])
        peak = int(np.argmax(ratio))
        out[r] = {"average": round(average, 4), "peak": round(float(ratio[peak]), 4), "peakAt": float(times[peak])}
    return out


# ---- pending time ---------------------------------------------------------------------------------

def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile by nearest rank: a pending time some pod really had."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


# ---- pending reasons ------------------------------------------------------------------------------

def group_pending(pending: Iterable[PodHistory], examples: int = 3) -> list[dict[str, Any]]:
    """Pending pods grouped by why the scheduler last failed them: messages that differ only in
    node counts are one reason, shown with each count's range over the group. Most pods first."""
    groups: dict[str, list[Any]] = {}  # template -> [pods, example keys, per-count (min, max)]
    for h in pending:
        cond = get_condition(h.obj, "PodScheduled")
        message = (cond or {}).get("message") or NOT_ATTEMPTED
        counts = [int(m) for m in _COUNT.findall(message)]
        template = _COUNT.sub("{}", message)
        group = groups.get(template)
        if group is None:
            group = groups[template] = [0, [], [(c, c) for c in counts]]
        group[0] += 1
        if len(group[1]) < examples:
            group[1].append(tl.pod_key(h.obj))
        group[2] = [(min(lo, c), max(hi, c)) for (lo, hi), c in zip(group[2], counts, strict=True)]
    out = []
    for template, (pods, keys, ranges) in sorted(groups.items(), key=lambda g: -g[1][0]):
        shown = [str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges]
        out.append({"pods": pods, "reason": template.format(*shown), "examples": keys})
    return out


# ---- preemptions ----------------------------------------------------------------------------------

def named_in(records: list[dict[str, Any]]) -> set[str]:
    """The pods (namespace/name) preemption records name: preemptors and victims."""
    return {p["preemptor"] for p in records} | {v["pod"] for p in records for v in p["victims"]}


def preemptions_by_class(records: list[dict[str, Any]], classes: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """Per class: the preemptions its pods made and the victims they cost, and how often its own
    pods were the victims, by the preemptor's class."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}

    def row(cls: tuple[str, int]) -> dict[str, Any]:
        if cls not in rows:
            rows[cls] = {"class": cls[0], "priority": cls[1], "preemptions": 0, "victimsCaused": 0,
                         "preempted": 0, "preemptedBy": Counter()}
        return rows[cls]

    victims = 0
    for p in records:
        by = classes.get(p["preemptor"]) or (f"priority {p['priority']}", p["priority"])
        preemptor = row(by)
        preemptor["preemptions"] += 1
        preemptor["victimsCaused"] += len(p["victims"])
        for v in p["victims"]:
            victim = row(classes.get(v["pod"]) or (f"priority {v['priority']}", v["priority"]))
            victim["preempted"] += 1
            victim["preemptedBy"][by[0]] += 1
        victims += len(p["victims"])
    by_class = [dict(r, preemptedBy=dict(r["preemptedBy"].most_common()))
                for _, r in sorted(rows.items(), key=lambda kv: (-kv[0][1], kv[0][0]))]
    return {"total": len(records), "victims": victims, "byClass": by_class}
