"""How many replicas a resource metric asks for (pkg/controller/podautoscaler/replica_calculator.go
and metrics/utilization.go, v1.35).

Values are milli-units, as the controller reads metrics and requests (`Quantity.MilliValue`): a
millicore of cpu, a thousandth of a byte of memory. The ratio of usage to target decides; within
the tolerance nothing changes. Pods that cannot speak for the load are set aside and, when the
ratio says scale, counted in the direction that moves the answer least: a pod still starting or
not ready counts as idle on a scale up, a pod without a metric as idle on a scale up and as fully
busy on a scale down. If that recount would reverse the direction, the replica count stays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Obj, get_condition
from kubesched.api.quantity import milli_value, parse_quantity
from kubesched.api.resources import (
    default_pod_level_requests,
    effective_container_requests,
    is_pod_level_resource,
)

DEFAULT_TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance
CPU_INITIALIZATION_PERIOD = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
DELAY_OF_INITIAL_READINESS_STATUS = 30.0  # --horizontal-pod-autoscaler-initial-readiness-delay


class ReplicaError(Exception):
    """Why no replica count could be computed, worded as upstream's error."""


@dataclass(frozen=True)
class Tolerances:
    """How far below (scale_down) or above (scale_up) 1 the usage ratio may be before it counts."""

    scale_down: float = DEFAULT_TOLERANCE
    scale_up: float = DEFAULT_TOLERANCE

    def within(self, ratio: float) -> bool:
        return 1.0 - self.scale_down <= ratio <= 1.0 + self.scale_up


@dataclass(frozen=True)
class PodMetric:
    value: int  # milli-units
    timestamp: float  # seconds of cluster time
    window: float  # seconds the sample covers


PodMetrics = dict[str, PodMetric]  # by pod name


@dataclass(frozen=True)
class PodGroups:
    ready: int
    unready: frozenset[str]
    missing: frozenset[str]
    ignored: frozenset[str]


def group_pods(pods: Sequence[Obj], metrics: Mapping[str, PodMetric], resource: str, now: float,
               seconds: Callable[[str], float]) -> PodGroups:
    """groupPods: terminating and failed pods are ignored, pending ones unready, pods without a
    metric missing. For cpu, a pod is unready too while its sample may still reflect start-up:
    within the initialisation period, if it is not ready or became ready less than a window before
    the sample; after it, if it has never been ready."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        phase = status.get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu" and _cpu_unready(pod, metric, now, seconds):
            unready.add(name)
            continue
        ready += 1
    return PodGroups(ready, frozenset(unready), frozenset(missing), frozenset(ignored))


def _cpu_unready(pod: Obj, metric: PodMetric, now: float, seconds: Callable[[str], float]) -> bool:
    condition = get_condition(pod, "Ready")
    started = (pod.get("status") or {}).get("startTime")
    if condition is None or not started:
        return True
    start = seconds(started)
    transition = seconds(condition["lastTransitionTime"]) if condition.get("lastTransitionTime") else start
    if start + CPU_INITIALIZATION_PERIOD > now:
        return condition.get("status") == "False" or metric.timestamp < transition + metric.window
    return condition.get("status") == "False" and start + DELAY_OF_INITIAL_READINESS_STATUS > transition


def _millis(raw: Any) -> int:
    return milli_value(parse_quantity(raw))


def calculate_requests(pods: Sequence[Obj], container: str, resource: str) -> dict[str, int]:
    """calculateRequests: each pod's request of `resource` in milli-units; pod-level requests when
    the pod sets them and no container is named (PodLevelResources is on by default), else the sum
    over its containers and sidecars, every one of which must request it."""
    requests: dict[str, int] = {}
    for pod in pods:
        name, spec = pod["metadata"]["name"], pod.get("spec") or {}
        level = default_pod_level_requests(spec, _millis) if not container else None
        if level and any(is_pod_level_resource(key) for key in level):
            if resource not in level:
                raise ReplicaError(f"missing pod-level request for {resource} in Pod {name}")
            requests[name] = level[resource]
            continue
        containers = [*(spec.get("containers") or ()),
                      *(c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always")]
        total, found = 0, False
        for c in containers:
            if container and c.get("name") != container:
                continue
            wanted = effective_container_requests(c)
            if resource not in wanted:
                raise ReplicaError(f"missing request for {resource} in container {c.get('name', '')} of Pod {name}")
            total += _millis(wanted[resource])
            found = True
            if container:
                break
        if container and not found:
            raise ReplicaError(f"container {container} not found in Pod {name}")
        requests[name] = total
    return requests


def utilization_ratio(metrics: Mapping[str, PodMetric], requests: Mapping[str, int],
                      target: int) -> tuple[float, int, int]:
    """GetResourceUtilizationRatio: (usage / target utilisation, the utilisation in percent of
    the requests, the average usage), over the pods that have both a metric and a request."""
    used = requested = entries = 0
    for name, metric in metrics.items():
        if name in requests:
            used += metric.value
            requested += requests[name]
            entries += 1
    if requested == 0:
        raise ReplicaError("no metrics returned matched known pods")
    utilization = used * 100 // requested
    return utilization / target, utilization, used // entries


def usage_ratio(metrics: Mapping[str, PodMetric], target: int) -> tuple[float, int]:
    """GetMetricUsageRatio: (average usage / target, the average usage)."""
    average = sum(m.value for m in metrics.values()) // len(metrics)
    return average / target, average


def _ceil(x: float) -> int:
    return min(math.ceil(x), 2**31 - 1)


def _settled(pods: Sequence[Obj], metrics: PodMetrics, resource: str, now: float,
             seconds: Callable[[str], float]) -> tuple[PodGroups, PodMetrics]:
    if not pods:
        raise ReplicaError("no pods returned by selector while calculating replica count")
    groups = group_pods(pods, metrics, resource, now, seconds)
    kept = {name: m for name, m in metrics.items() if name not in groups.ignored and name not in groups.unready}
    if not kept:
        raise ReplicaError("did not receive metrics for targeted pods (pods might be unready)")
    return groups, kept


def _recount(current: int, ratio: float, new_ratio: float, counted: int, tolerances: Tolerances) -> int:
    """The answer after the set-aside pods were counted in: unchanged if that is within
    tolerance or turns the direction round."""
    if tolerances.within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    replicas = _ceil(new_ratio * counted)
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current
    return replicas


def resource_replicas(current: int, target_utilization: int, resource: str, tolerances: Tolerances,
                      pods: Sequence[Obj], metrics: PodMetrics, container: str, now: float,
                      seconds: Callable[[str], float]) -> tuple[int, int, int]:
    """GetResourceReplicas: (replicas, utilisation in percent, average usage in milli-units) for a
    Utilization target."""
    groups, metrics = _settled(pods, metrics, resource, now, seconds)
    requests = calculate_requests(pods, container, resource)
    ratio, utilization, raw = utilization_ratio(metrics, requests, target_utilization)
    with_unready = bool(groups.unready) and ratio > 1.0
    if not with_unready and not groups.missing:
        return (current if tolerances.within(ratio) else _ceil(ratio * groups.ready)), utilization, raw
    if groups.missing:
        if ratio < 1.0:
            fallback = max(100, target_utilization)
            metrics.update((name, PodMetric(requests[name] * fallback // 100, 0.0, 0.0)) for name in groups.missing)
        elif ratio > 1.0:
            metrics.update((name, PodMetric(0, 0.0, 0.0)) for name in groups.missing)
    if with_unready:
        metrics.update((name, PodMetric(0, 0.0, 0.0)) for name in groups.unready)
    new_ratio = utilization_ratio(metrics, requests, target_utilization)[0]
    return _recount(current, ratio, new_ratio, len(metrics), tolerances), utilization, raw


def raw_resource_replicas(current: int, target_usage: int, resource: str, tolerances: Tolerances,
                          pods: Sequence[Obj], metrics: PodMetrics, now: float,
                          seconds: Callable[[str], float]) -> tuple[int, int]:
    """GetRawResourceReplicas (calcPlainMetricReplicas): (replicas, average usage in milli-units)
    for an AverageValue target."""
    groups, metrics = _settled(pods, metrics, resource, now, seconds)
    ratio, usage = usage_ratio(metrics, target_usage)
    with_unready = bool(groups.unready) and ratio > 1.0
    if not with_unready and not groups.missing:
        return (current if tolerances.within(ratio) else _ceil(ratio * groups.ready)), usage
    if groups.missing:
        if ratio < 1.0:
            metrics.update((name, PodMetric(target_usage, 0.0, 0.0)) for name in groups.missing)
        elif ratio > 1.0:
            metrics.update((name, PodMetric(0, 0.0, 0.0)) for name in groups.missing)
    if with_unready:
        metrics.update((name, PodMetric(0, 0.0, 0.0)) for name in groups.unready)
    new_ratio = usage_ratio(metrics, target_usage)[0]
    return _recount(current, ratio, new_ratio, len(metrics), tolerances), usage
