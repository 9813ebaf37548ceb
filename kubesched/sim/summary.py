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
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Obj, get_condition
from kubesched.sim import timeline as tl
from kubesched.sim.recorder import PodHistory, Recorder
from kubesched.sim.runner import SimResult

PERCENTILES = (50, 90, 99)
NOT_ATTEMPTED = "not attempted yet"
# Always shown when nodes have them; other resources only when some pod asks for them.
BASE_RESOURCES = ("cpu", "memory", "pods")
# The node counts of a FailedScheduling message ("0/1523 nodes are available: 3 Insufficient cpu, ..."):
# the total after "0/", and each reason's count after ": " or ", ". Pods whose messages differ only
# in these counts failed for the same set of reasons.
_COUNT = re.compile(r"(?<=0/)\d+(?= nodes are available)|(?<=available: )\d+(?= )|(?<=, )\d+(?= )")


def summarize(result: SimResult) -> dict[str, Any]:
    """The summary's JSON form (the `summary` key of the results)."""
    # Imported here: results imports this module for the table.
    from kubesched.sim.results import preemptions

    cluster, recorder = result.cluster, result.recorder
    end = cluster.now()
    classes = pod_classes(recorder.pods.values())
    return {
        "span": {"start": 0.0, "end": end},
        "pods": phase_counts(recorder),
        "nodes": sum(1 for _ in cluster.store.list("Node")),
        "utilization": utilization(result),
        "pendingTime": pending_times(recorder),
        "pendingReasons": pending_reasons(recorder),
        "preemptions": preemptions_by_class(preemptions(cluster), classes),
        "events": dict(sorted(Counter(e.reason for e in recorder.events).items())),
    }


# ---- counts ---------------------------------------------------------------------------------------

def is_pending(h: PodHistory) -> bool:
    """Waiting for a node: still in the cluster and never bound."""
    return not h.deleted and not (h.obj.get("spec") or {}).get("nodeName")


def phase_counts(recorder: Recorder) -> dict[str, Any]:
    """Pods by phase as the API last had them, and those deleted by why they went."""
    phases: Counter[str] = Counter()
    deleted: Counter[str] = Counter()
    for h in recorder.pods.values():
        if h.deleted:
            deleted[h.reason or "Deleted"] += 1
        else:
            phases[(h.obj.get("status") or {}).get("phase") or "Pending"] += 1
    order = ("Running", "Pending", "Succeeded", "Failed")
    out: dict[str, Any] = {"total": len(recorder.pods)}
    out.update({p: phases.pop(p, 0) for p in order})
    out.update(sorted(phases.items()))  # Unknown, or anything else a status said
    out["deleted"] = dict(deleted.most_common())
    return out


# ---- utilisation ----------------------------------------------------------------------------------

def utilization(result: SimResult) -> dict[str, Any]:
    """Per resource, requested / allocatable over the whole cluster: its time-weighted average
    over the time any node offered the resource, and its peak (with when it was first reached).

    A pod holds its requests from its binding until it ends (terminal or deleted); a node offers
    its allocatable from its creation until its deletion."""
    end = result.cluster.now()
    spans = tl.pod_spans(result.recorder, end)
    allocatable = tl.allocatable_over_time(result.recorder)
    asked = {r for s in spans for r in s.requests}
    offered = {r for r, step in allocatable.items() if step.maximum() > 0}
    names = [r for r in BASE_RESOURCES if r in offered] + sorted(offered & asked - set(BASE_RESOURCES))
    out: dict[str, Any] = {}
    for r, requested in tl.requested_over_time(spans, names).items():
        offer = allocatable[r]
        times = np.union1d(requested.times, offer.times)
        times = times[times <= end]
        used, have = requested.values_at(times), offer.values_at(times)
        held = np.diff(np.append(times, max(end, times[-1])))
        ratio = np.divide(used, have, out=np.zeros_like(used), where=have > 0)
        span = held[have > 0].sum()
        average = float((ratio * held)[have > 0].sum() / span) if span > 0 else float(ratio[have > 0][-1])
        peak = int(np.argmax(ratio))
        out[r] = {"average": round(average, 4), "peak": round(float(ratio[peak]), 4), "peakAt": float(times[peak])}
    return out


# ---- pending time ---------------------------------------------------------------------------------

def pod_class(obj: Obj) -> tuple[str, int]:
    """A pod's PriorityClass name (its priority value when it names none) and its priority."""
    spec = obj.get("spec") or {}
    priority = spec.get("priority") or 0
    return spec.get("priorityClassName") or f"priority {priority}", priority


def pod_classes(pods: Iterable[PodHistory]) -> dict[str, tuple[str, int]]:
    """namespace/name -> class, for records that name pods by key (the latest pod of a name wins)."""
    out = {}
    for h in pods:
        out[tl.pod_key(h.obj)] = pod_class(h.obj)
    return out


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile by nearest rank: a pending time some pod really had."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def pending_times(recorder: Recorder) -> list[dict[str, Any]]:
    """Per class, highest priority first: how long pods waited from creation to binding.

    Only pods a scheduler bound count (a pod that arrived with its node never waited), and pods
    never bound are counted apart (`unbound`): still pending at the end, or deleted first. A pod
    of the snapshot waited from the start of the run."""
    scheduled: dict[str, set[float]] = defaultdict(set)  # the scheduler's Scheduled Events, by pod
    for e in recorder.events:
        if e.reason == "Scheduled":
            scheduled[e.object].add(e.time)
    waits: dict[tuple[str, int], list[float]] = defaultdict(list)
    unbound: Counter[tuple[str, int]] = Counter()
    for h in recorder.pods.values():
        cls = pod_class(h.obj)
        if h.bound_at is None:
            unbound[cls] += 1
            continue
        if h.bound_at in scheduled.get(f"Pod/{tl.pod_key(h.obj)}", ()):
            waits[cls].append(h.bound_at - h.created_at)
    rows = []
    for cls in sorted(set(waits) | set(unbound), key=lambda c: (-c[1], c[0])):
        ordered = sorted(waits.get(cls, ()))
        row: dict[str, Any] = {"class": cls[0], "priority": cls[1], "bound": len(ordered), "unbound": unbound[cls]}
        for q in PERCENTILES:
            row[f"p{q}"] = nearest_rank(ordered, q) if ordered else None
        row["max"] = ordered[-1] if ordered else None
        rows.append(row)
    return rows


# ---- pending reasons ------------------------------------------------------------------------------

def pending_reasons(recorder: Recorder, examples: int = 3) -> list[dict[str, Any]]:
    """Pending pods grouped by why the scheduler last failed them: messages that differ only in
    node counts are one reason, shown with each count's range over the group. Most pods first."""
    groups: dict[str, list[Any]] = {}  # template -> [pods, example keys, per-count (min, max)]
    for h in recorder.pods.values():
        if not is_pending(h):
            continue
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
