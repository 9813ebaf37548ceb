"""Pod resource requests as the kube-scheduler (v1.35) computes them.

Why these formulas (component-helpers/resource.PodRequests and scheduler NodeInfo accounting):

* Regular containers run together, so their requests add up. Init containers run one at a time,
  so only the largest matters, except sidecars (init containers with ``restartPolicy: Always``)
  which keep running: they add to the regular total, and every later init container runs
  alongside the sidecars started before it. The pod needs
  ``max(sum(regular) + sum(sidecars), max_i(init_i + sidecars declared before i))`` per resource.
* ``spec.resources.requests`` (PodLevelResources, beta and on by default since 1.34) replaces the
  container aggregate for cpu, memory and hugepages-*; ``spec.overhead`` (RuntimeClass) is then
  added on top.
* Scoring must not let pods that request nothing pile onto one node, so the non-zero variant
  counts a container with no cpu / memory request as 100m / 200Mi (an explicit 0 stays 0).
  NodeResourcesFit's scorer sees the pod being placed without its pod-level requests (an
  upstream quirk kept for fidelity); its filter, BalancedAllocation and node totals see them.

Specs are read as the API server would have stored them: a container limit without a request
counts as the request, pod-level requests are defaulted from pod-level limits, and every quantity
is rounded up to milli precision before summing. Amounts are summed in integer millis, then
converted once (cpu stays in millicores, everything else rounds up to whole units), exactly like
summing ``resource.Quantity`` values and calling ``MilliValue``/``Value`` on the total.

In-place resize (status.containerStatuses[].allocatedResources) is not modelled: only the spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from kubesched.api.quantity import _millis, _millis_to_units

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "add_into",
    "aggregate_containers",
    "default_pod_level_requests",
    "effective_container_requests",
    "incoming_pod_non_zero_requests",
    "is_pod_level_resource",
    "pod_non_zero_requests",
    "pod_requests",
    "pod_requests_over",
]

DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest, bytes

_Millis = dict[str, int]
_NON_ZERO_DEFAULTS: _Millis = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST * 1000}
_OVERCOMMITTABLE_POD_LEVEL = ("cpu", "memory")


def is_pod_level_resource(name: str) -> bool:
    """Whether ``spec.resources`` may set ``name`` (cpu, memory, hugepages-*)."""
    return name in _OVERCOMMITTABLE_POD_LEVEL or name.startswith("hugepages-")


def effective_container_requests(container: Mapping[str, Any]) -> Mapping[str, Any]:
    """A container's requests after API defaulting: a limit without a request becomes the request."""
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits")
    return {**limits, **requests} if limits else requests


def _to_millis(resource_list: Mapping[str, Any]) -> _Millis:
    return {name: _millis(raw) for name, raw in resource_list.items()}


class Summable(Protocol):
    """An amount the aggregation can add and compare: integer millis here, quota's Amount there."""

    def __add__(self, other: Any, /) -> Any: ...

    def __gt__(self, other: Any, /) -> bool: ...


N = TypeVar("N", bound=Summable)


def add_into(into: dict[str, N], other: Mapping[str, N]) -> None:
    """Every resource of ``other`` added to ``into`` (a resource new to ``into`` is taken as it is)."""
    for name, amount in other.items():
        into[name] = into[name] + amount if name in into else amount


def _max_into(into: dict[str, N], other: Mapping[str, N]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def aggregate_containers(spec: Mapping[str, Any], amounts_of: Callable[[Mapping[str, Any]], dict[str, N]]
                         ) -> dict[str, N]:
    """AggregateContainerRequests/Limits: the sidecar-aware max/sum over all of a pod's containers.

    One walk serves the scheduler (integer millis) and ResourceQuota and LimitRanger (quantities
    that keep their format), so the three cannot disagree on what a pod with sidecars needs.
    """
    total: dict[str, N] = {}
    for container in spec.get("containers") or ():
        add_into(total, amounts_of(container))
    sidecars: dict[str, N] = {}
    init_peak: dict[str, N] = {}
    for container in spec.get("initContainers") or ():
        amounts = amounts_of(container)
        if container.get("restartPolicy") == "Always":
            add_into(total, amounts)
            add_into(sidecars, amounts)
            _max_into(init_peak, sidecars)
        else:
            add_into(amounts, sidecars)
            _max_into(init_peak, amounts)
    _max_into(total, init_peak)
    return total


def default_pod_level_requests(spec: Mapping[str, Any], convert: Callable[[Any], N]) -> dict[str, N] | None:
    """``spec.resources.requests`` after defaulting, or None when ``spec.resources`` is unset.

    Mirrors defaultPodRequests: when pod-level limits exist, a missing cpu/memory request defaults
    to the containers' aggregate request for it, and any other missing supported request to the
    pod-level limit.
    """
    resources = spec.get("resources")
    if resources is None:
        return None
    requests = {name: convert(raw) for name, raw in (resources.get("requests") or {}).items()}
    limits = resources.get("limits")
    if limits:
        def converted(container: Mapping[str, Any]) -> dict[str, N]:
            return {name: convert(raw) for name, raw in effective_container_requests(container).items()}
        for name, amount in aggregate_containers(spec, converted).items():
            if name in _OVERCOMMITTABLE_POD_LEVEL:
                requests.setdefault(name, amount)
        for name, raw in limits.items():
            if name not in requests and is_pod_level_resource(name):
                requests[name] = convert(raw)
    return requests


def pod_requests_over(spec: Mapping[str, Any], containers: dict[str, N], pod_level: Mapping[str, N] | None,
                      overhead: Callable[[Any], N]) -> dict[str, N]:
    """PodRequests from the containers' aggregate: pod-level requests replace the resources they
    set, and RuntimeClass overhead is added on top. ``containers`` is updated and returned."""
    if pod_level:
        for name, amount in pod_level.items():
            if is_pod_level_resource(name):
                containers[name] = amount
    extra = spec.get("overhead")
    if extra:
        add_into(containers, {name: overhead(raw) for name, raw in extra.items()})
    return containers


def _container_millis(container: Mapping[str, Any], non_missing: Mapping[str, int] | None) -> _Millis:
    amounts = _to_millis(effective_container_requests(container))
    if non_missing:
        for name, default in non_missing.items():
            amounts.setdefault(name, default)
    return amounts


def _aggregate_container_requests(spec: Mapping[str, Any], non_missing: Mapping[str, int] | None) -> _Millis:
    return aggregate_containers(spec, lambda container: _container_millis(container, non_missing))


def _pod_requests_millis(
    spec: Mapping[str, Any], pod_level: _Millis | None, non_missing: Mapping[str, int] | None
) -> _Millis:
    """PodRequests in millis, keeping zero-valued keys (the non-zero logic tests key presence)."""
    return pod_requests_over(spec, _aggregate_container_requests(spec, non_missing), pod_level, _millis)


def _level_requests_if_set(spec: Mapping[str, Any]) -> _Millis | None:
    """Pod-level requests when IsPodLevelRequestsSet holds (some supported resource requested)."""
    pod_level = default_pod_level_requests(spec, _millis)
    if pod_level and any(is_pod_level_resource(name) for name in pod_level):
        return pod_level
    return None


def pod_requests(spec: Mapping[str, Any], *, pod_level: bool = True) -> dict[str, int]:
    """The pod's effective requests: cpu in millicores, others per ``resource_amount``; zeros omitted.

    ``pod_level=False`` is PodRequests' SkipPodLevelResources: the containers' aggregate and the
    overhead only, as NodeResourcesFit's scorer sees a pod (see :func:`incoming_pod_non_zero_requests`).
    """
    level = _level_requests_if_set(spec) if pod_level else None
    return _units(_pod_requests_millis(spec, level, None))


def _units(millis: _Millis) -> dict[str, int]:
    """Millis as ``pod_requests`` reports them: cpu in millicores, others per ``resource_amount``;
    zeros omitted."""
    result: dict[str, int] = {}
    for name, amount in millis.items():
        if name != "cpu":
            amount = _millis_to_units(amount)
        if amount:
            result[name] = amount
    return result


def pod_requests_and_non_zero(spec: Mapping[str, Any]) -> tuple[dict[str, int], int, int]:
    """``pod_requests`` and ``pod_non_zero_requests`` together. Without pod-level resources, when
    every container names both cpu and memory no default applies, so one walk over the containers
    gives both: what a scheduler pays for every pod it learns of."""
    if spec.get("resources") is not None:
        return (pod_requests(spec), *pod_non_zero_requests(spec))
    named = True

    def amounts(container: Mapping[str, Any]) -> _Millis:
        nonlocal named
        millis = _to_millis(effective_container_requests(container))
        if named and ("cpu" not in millis or "memory" not in millis):
            named = False
        return millis

    millis = pod_requests_over(spec, aggregate_containers(spec, amounts), None, _millis)
    if not named:
        return _units(millis), *pod_non_zero_requests(spec)
    return _units(millis), *_cpu_memory(millis)


def _cpu_memory(requests: _Millis) -> tuple[int, int]:
    return requests.get("cpu", 0), _millis_to_units(requests.get("memory", 0))


def pod_non_zero_requests(spec: Mapping[str, Any]) -> tuple[int, int]:
    """(millicores, bytes) a placed pod adds to ``NodeInfo.NonZeroRequested``.

    Containers missing a cpu/memory request count as 100m/200Mi, init containers and sidecars
    included, and overhead is added. With pod-level requests set, a default only applies to a
    resource that neither the pod level, any container nor the overhead mentions.
    """
    pod_level = _level_requests_if_set(spec)
    if pod_level is None:
        return _cpu_memory(_pod_requests_millis(spec, None, _NON_ZERO_DEFAULTS))
    requests = _pod_requests_millis(spec, pod_level, None)
    non_missing = {name: d for name, d in _NON_ZERO_DEFAULTS.items() if name not in requests}
    if non_missing:
        requests = _pod_requests_millis(spec, pod_level, non_missing)
    return _cpu_memory(requests)


def incoming_pod_non_zero_requests(spec: Mapping[str, Any]) -> tuple[int, int]:
    """(millicores, bytes) NodeResourcesFit's scorer uses for the pod being scheduled.

    resourceAllocationScorer applies the 100m/200Mi defaults to every container unconditionally,
    and Fit's scorer ignores pod-level requests: v1.35's NewFit builds it from the scoring
    strategy alone and sets only its DRA fields, so its PodLevelResources flag stays false and
    PodRequests skips ``spec.resources``. BalancedAllocation's scorer has the flag, and NodeInfo
    counts placed pods with it. This differs from :func:`pod_non_zero_requests` only for pods
    with pod-level requests.
    """
    return _cpu_memory(_pod_requests_millis(spec, None, _NON_ZERO_DEFAULTS))
