"""A run as functions of virtual time: what each node's pods requested, what the nodes offered, and
how many pods waited and why. The report plots them and statistics read them.

Everything is derived from each pod's recorded life (created, bound, ended) and the Events, by
sorting change points once, so a run of months with thousands of pods costs O(pods log pods), not
one sample per tick. A series is a step function: `values[i]` holds from `times[i]` until
`times[i + 1]` (the last value until the end of the run).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.objects import Obj
from kubesched.api.resources import pod_requests
from kubesched.cluster.recorder import PodHistory, Recorder
from kubesched.sim import fiterror

AWAITING = "awaiting a scheduling attempt"  # pending with no FailedScheduling Event yet


@dataclass(frozen=True)
class Step:
    """A step function of virtual time."""

    times: np.ndarray
    values: np.ndarray

    @classmethod
    def from_changes(cls, times: Iterable[float], deltas: Iterable[float], start: float = 0.0) -> Step:
        """Sum of `deltas`, each applied from its time on; starts at 0 at `start`. Changes at one
        instant are merged, so a pod ending as another starts leaves no spike."""
        t = np.fromiter(times, dtype=float)
        d = np.fromiter(deltas, dtype=float, count=len(t))
        order = np.argsort(t, kind="stable")
        t, d = t[order], np.cumsum(d[order])
        keep = np.append(t[1:] != t[:-1], True) if len(t) else np.zeros(0, dtype=bool)  # last change per instant
        t, v = t[keep], d[keep]
        if not len(t) or t[0] > start:
            t, v = np.insert(t, 0, start), np.insert(v, 0, 0.0)
        return cls(t, v)

    def at(self, time: float) -> float:
        i = int(np.searchsorted(self.times, time, side="right")) - 1
        return float(self.values[i]) if i >= 0 else 0.0

    def maximum(self) -> float:
        return float(self.values.max()) if len(self.values) else 0.0

    def mean(self, start: float, end: float) -> float:
        """The time-weighted average over [start, end]."""
        if end <= start:
            return self.at(start)
        t = np.clip(np.append(self.times, end), start, end)
        return float(np.sum(np.diff(t) * self.values) / (end - start))

    def values_at(self, times: np.ndarray) -> np.ndarray:
        """The values at each of `times` (0 before the first change)."""
        i = np.searchsorted(self.times, times, side="right") - 1
        return np.where(i >= 0, self.values[np.maximum(i, 0)], 0.0)

    def ratio(self, other: Step) -> Step:
        """self / other at every change of either (0 where `other` is 0)."""
        t = union_of_times(self.times, other.times)
        num, den = self.values_at(t), other.values_at(t)
        return Step(t, np.divide(num, den, out=np.zeros_like(num), where=den > 0))


def union_of_times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.union1d of two arrays of instants, without np.unique: that imports numpy.ma (16 ms of a
    run's output) to ask whether its argument is masked."""
    t = np.concatenate([a, b])
    t.sort()
    keep = np.ones(len(t), dtype=bool)
    np.not_equal(t[1:], t[:-1], out=keep[1:])
    return t[keep]


@dataclass(frozen=True)
class PodSpan:
    """A pod holding its node's resources, from its binding until it ended (or the run did)."""

    key: str  # namespace/name
    uid: str
    node: str
    start: float
    end: float
    priority: int
    outcome: str  # Running, Succeeded, Failed, or the removal reason (Preempted, Evicted, Deleted, ...)
    requests: dict[str, int]


def pod_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def outcome(h: PodHistory) -> str:
    if h.deleted:
        return h.reason or "Deleted"
    return (h.obj.get("status") or {}).get("phase") or "Pending"


def pod_spans(recorder: Recorder, end: float) -> list[PodSpan]:
    """Every pod that was bound, in creation order."""
    requests = RequestsBySpec()
    spans = []
    for uid, h in recorder.pods.items():
        if h.bound_at is None or h.node is None:
            continue
        spec = h.obj.get("spec") or {}
        spans.append(PodSpan(pod_key(h.obj), uid, h.node, h.bound_at, h.ended_at if h.ended_at is not None else end,
                             spec.get("priority") or 0, outcome(h), requests(spec)))
    return spans


class RequestsBySpec:
    """pod_requests, worked out once per distinct container resources among pods of the common shape
    (see `_shape_key`): the pods of one template (a Deployment's, a Job's, a trace's) all ask alike.
    Other pods are worked out one by one. Pods that ask alike share one dict, which callers only read."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Any, ...], dict[str, int]] = {}

    def __call__(self, spec: Obj) -> dict[str, int]:
        key = _shape_key(spec)
        found = self._seen.get(key) if key is not None else None
        if found is None:
            found = pod_requests(spec)
            # Only keys of strings are kept: equal numbers of different types can parse apart (a float
            # is read through its repr), and no number equals a string, so a key found is all strings.
            if key is not None and all(type(item[0]) is str and type(item[1]) is str for item in key if item):
                self._seen[key] = found
        return found


def _shape_key(spec: Obj) -> tuple[Any, ...] | None:
    """All that pod_requests reads of a pod with one container and no init containers, pod-level
    resources or overhead: its container's requests and limits, in order. None for any other pod."""
    containers = spec.get("containers")
    if not containers or len(containers) != 1 or "initContainers" in spec or "resources" in spec \
            or "overhead" in spec:
        return None
    resources = containers[0].get("resources") or {}
    return (*(resources.get("requests") or {}).items(), None, *(resources.get("limits") or {}).items())


class Requested:
    """The cluster's total requests over time, gathered pod by pod (`add`): for each resource, the
    (start, end, amount) of every pod asking for some, in the order added."""

    def __init__(self) -> None:
        self.starts: list[float] = []  # every pod, for the pod count
        self.ends: list[float] = []
        self.by_resource: dict[str, tuple[list[float], list[float], list[int]]] = {}

    def add(self, start: float, end: float, requests: Mapping[str, int]) -> None:
        """A pod holding `requests` from `start` to `end`."""
        self.starts.append(start)
        self.ends.append(end)
        for name, amount in requests.items():
            if amount:
                changes = self.by_resource.get(name)
                if changes is None:
                    changes = self.by_resource[name] = ([], [], [])
                changes[0].append(start)
                changes[1].append(end)
                changes[2].append(amount)

    def step(self, name: str) -> Step:
        """`name`'s total over time ("pods": how many pods held a node)."""
        if name == "pods":
            n = len(self.starts)
            return Step.from_changes(self.starts + self.ends, [1] * n + [-1] * n)
        starts, ends, amounts = self.by_resource.get(name, ([], [], []))
        return Step.from_changes(starts + ends, amounts + [-a for a in amounts])


def requested_over_time(spans: list[PodSpan], resources: Iterable[str]) -> dict[str, Step]:
    """The cluster's total requests of each resource over time ("pods": how many pods held a node)."""
    requested = Requested()
    for s in spans:
        requested.add(s.start, s.end, s.requests)
    return {name: requested.step(name) for name in resources}


def allocatable_over_time(recorder: Recorder) -> dict[str, Step]:
    """The cluster's total allocatable of each resource: each node counted from when it joined
    (a node of the snapshot from the start) until it was deleted, with its changes in between."""
    return {name: Step.from_changes((t for t, _ in c), (a for _, a in c))
            for name, c in recorder.allocatable_changes.items()}


def devices_over_time(recorder: Recorder) -> tuple[dict[str, Step], dict[str, Step]]:
    """Per driver ("DRIVER devices"), the DRA devices allocated and the devices published over time."""
    allocated, published = {}, {}
    for driver, changes in recorder.device_changes.items():
        name = f"{driver} devices"
        published[name] = Step.from_changes((t for t, _, _ in changes), (p for _, p, _ in changes))
        allocated[name] = Step.from_changes((t for t, _, _ in changes), (a for _, _, a in changes))
    return allocated, published


def utilisation_resources(spans: list[PodSpan], allocatable: dict[str, Step]) -> list[str]:
    """cpu, memory, then every other resource the nodes offer or the pods ask for (extended ones such
    as nvidia.com/gpu, ephemeral storage, hugepages), except the pod count."""
    asked = {name for s in spans for name in s.requests}
    offered = {name for name, step in allocatable.items() if step.maximum() > 0}
    others = sorted((asked | offered) - {"cpu", "memory", "pods"})
    return ["cpu", "memory", *[n for n in others if n in asked or "/" in n]]


@dataclass(frozen=True)
class PendingWindow:
    """A stretch of a pod's wait for a node with one reason: from `start` to `end`."""

    key: str
    start: float
    end: float
    reason: str


def pending_windows(recorder: Recorder, end: float) -> list[PendingWindow]:
    """Each pod's wait for a node, cut where its FailedScheduling reason changed. A pod is pending
    from its creation until it was bound, ended or the run did; before its first FailedScheduling
    Event its reason is AWAITING."""
    failures: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for e in recorder.events:
        if e.reason == "FailedScheduling" and e.object.startswith("Pod/"):
            failures[e.object[4:]].append((e.time, fiterror.parse(e.message).reason_set))
    windows = []
    for h in recorder.pods.values():
        stop = h.bound_at if h.bound_at is not None else h.ended_at if h.ended_at is not None else end
        if stop <= h.created_at:
            continue
        key = pod_key(h.obj)
        at, reason = h.created_at, AWAITING
        # A name reused by a later pod (a StatefulSet's replacement) only lends it Events of its own lifetime.
        for t, why in failures.get(key, ()):
            if t < h.created_at or t >= stop or why == reason:
                continue
            if t > at:
                windows.append(PendingWindow(key, at, t, reason))
            at, reason = t, why
        windows.append(PendingWindow(key, at, stop, reason))
    return windows


def pending_over_time(windows: list[PendingWindow]) -> dict[str, Step]:
    """How many pods were pending over time for each reason."""
    by_reason: dict[str, list[PendingWindow]] = defaultdict(list)
    for w in windows:
        by_reason[w.reason].append(w)
    return {reason: Step.from_changes([w.start for w in ws] + [w.end for w in ws], [1] * len(ws) + [-1] * len(ws))
            for reason, ws in by_reason.items()}


def total(steps: Iterable[Step]) -> Step:
    """The sum of step functions."""
    steps = list(steps)
    if not steps:
        return Step(np.zeros(1), np.zeros(1))
    times = np.concatenate([s.times for s in steps])
    deltas = np.concatenate([np.diff(s.values, prepend=0.0) for s in steps])
    return Step.from_changes(times, deltas, start=float(times.min()))
