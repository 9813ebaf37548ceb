"""The LimitRanger admission plugin (plugin/pkg/admission/limitranger), and LimitRange defaulting.

It changes what the scheduler sees: a container created without requests or limits (typically
from a controller's template) gets its namespace's `defaultRequest` and `default`, so it is
scheduled with those requests; and a pod or claim outside a LimitRange's `min`, `max` or
`maxLimitRequestRatio` is refused with upstream's 403. Like upstream it runs twice: defaulting in
the mutating phase (before validation), the checks in the validating phase (once the name is
generated, so a controller's event names the pod). Pods are only admitted on create (their
containers are immutable); claims are checked on create.

Each LimitRange of the namespace is applied in turn, in creation order (upstream lists them from
an informer's cache); within one item, resources are checked in name order, where upstream walks
a Go map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Obj
from kubesched.api.quantity import quantity_string
from kubesched.api.quota import (
    Amount,
    ResourceList,
    amount,
    container_limits,
    container_totals,
    pod_level_requests,
    resource_list,
)
from kubesched.api.resources import effective_container_requests
from kubesched.apiserver.errors import admission_forbidden

if TYPE_CHECKING:
    from kubesched.store.base import Store

ANNOTATION = "kubernetes.io/limit-ranger"
CONTAINER, POD, CLAIM = "Container", "Pod", "PersistentVolumeClaim"
POD_LEVEL = ("cpu", "memory")  # what LimitRanger reads from spec.resources


def default_limit_range(limit_range: Obj) -> None:
    """SetDefaults_LimitRangeItem, for Container items: `default` from `max`, then
    `defaultRequest` from `default`, then from `min`."""
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        if item.get("type") != CONTAINER:
            continue
        default, request = dict(item.get("default") or {}), dict(item.get("defaultRequest") or {})
        for source, target in ((item.get("max"), default), (default, request), (item.get("min"), request)):
            for name, value in (source or {}).items():
                target.setdefault(name, value)
        for key, values in (("default", default), ("defaultRequest", request)):
            if values:  # an empty map is omitted, as the API serialises it
                item[key] = values


def _ranges(obj: Obj, store: Store) -> list[Obj]:
    return list(store.list("LimitRange", obj["metadata"].get("namespace", "default")))


def default_pod(pod: Obj, store: Store) -> bool:
    """The mutating half: each LimitRange's Container `defaultRequest` and `default` fill in the
    requests and limits a container (or init container) lacks, and the pod is annotated with
    what was set (`LimitRanger plugin set: cpu, memory request for container app; ...`). True
    when something was set."""
    changed = False
    for limit_range in _ranges(pod, store):
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        for item in (limit_range.get("spec") or {}).get("limits") or ():
            if item.get("type") == CONTAINER:
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
        if not requests and not limits:
            continue
        notes: list[str] = []
        for group, label in (("containers", "container"), ("initContainers", "init container")):
            for container in pod["spec"].get(group) or ():
                notes += _fill(container, requests, limits, label)
        if notes:
            annotations = pod["metadata"].setdefault("annotations", {})
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
            changed = True
    return changed


def _fill(container: Obj, requests: Mapping[str, Any], limits: Mapping[str, Any], label: str) -> list[str]:
    """mergeContainerResources: fill in what the container lacks; the notes name the requests set,
    then the limits."""
    resources = container.setdefault("resources", {})
    notes = []
    for key, defaults in (("requests", requests), ("limits", limits)):
        have = resources.get(key) or {}
        added = sorted(name for name in defaults if name not in have)
        if added:
            resources[key] = {**have, **{name: defaults[name] for name in added}}
            notes.append(f"{', '.join(added)} {key[:-1]} for {label} {container.get('name', '')}")
    return notes


def validate_pod(pod: Obj, store: Store) -> None:
    """The validating half for a pod: the first LimitRange it violates refuses it, with every
    violation of that range."""
    for limit_range in _ranges(pod, store):
        problems = pod_violations(limit_range, pod["spec"])
        if problems:
            raise admission_forbidden(pod, aggregate(problems))


def validate_claim(pvc: Obj, store: Store) -> None:
    """PersistentVolumeClaim items: `min` and `max` storage against the claim's request."""
    for limit_range in _ranges(pvc, store):
        problems = claim_violations(limit_range, pvc)
        if problems:
            raise admission_forbidden(pvc, aggregate(problems))


def aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate's text: one message alone, several (duplicates once) in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def pod_violations(limit_range: Obj, spec: Obj) -> list[str]:
    """PodValidateLimitFunc: each container and init container against Container items, the
    pod's totals (sidecar-aware, pod-level resources over them) against Pod items."""
    problems: list[str] = []
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        kind = item.get("type")
        if kind == CONTAINER:
            for group in ("containers", "initContainers"):
                for container in spec.get(group) or ():
                    resources = container.get("resources") or {}
                    problems += _item_violations(item, CONTAINER, resource_list(resources.get("requests")),
                                                 resource_list(resources.get("limits")))
        elif kind == POD:
            problems += _item_violations(item, POD, *pod_totals(spec))
    return problems


def pod_totals(spec: Obj) -> tuple[ResourceList, ResourceList]:
    """LimitRanger's podRequests and podLimits: the containers' totals, sidecars running alongside,
    with spec.resources cpu and memory in their place; no overhead (RuntimeClass sets it later)."""
    requests = container_totals(spec, effective_container_requests)
    limits = container_totals(spec, container_limits)
    if spec.get("resources") is not None:
        requests.update((n, v) for n, v in (pod_level_requests(spec) or {}).items() if n in POD_LEVEL)
        limits.update((n, v) for n, v in resource_list(spec["resources"].get("limits")).items() if n in POD_LEVEL)
    return requests, limits


def claim_violations(limit_range: Obj, pvc: Obj) -> list[str]:
    requests = resource_list(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    problems: list[str] = []
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        if item.get("type") != CLAIM:
            continue
        for name, raw in sorted((item.get("min") or {}).items()):
            problems += _minimum(CLAIM, name, raw, requests, {})
        for name, raw in sorted((item.get("max") or {}).items()):
            if name not in requests:
                problems.append(f"maximum {name} usage per {CLAIM} is {quantity_string(raw)}.  No request is specified")
            elif requests[name].value > amount(raw).value:
                problems.append(f"maximum {name} usage per {CLAIM} is {quantity_string(raw)}, "
                                f"but request is {requests[name]}")
    return problems


def _item_violations(item: Obj, kind: str, requests: ResourceList, limits: ResourceList) -> list[str]:
    problems: list[str] = []
    for name, raw in sorted((item.get("min") or {}).items()):
        problems += _minimum(kind, name, raw, requests, limits)
    for name, raw in sorted((item.get("max") or {}).items()):
        problems += _maximum(kind, name, raw, requests, limits)
    for name, raw in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        problems += _ratio(kind, name, raw, requests, limits)
    return problems


def _minimum(kind: str, name: str, raw: Any, requests: ResourceList, limits: ResourceList) -> list[str]:
    """minConstraint: a request is required, and neither it nor a limit may be below the minimum."""
    shown, least = quantity_string(raw), amount(raw).value
    head = f"minimum {name} usage per {kind} is {shown}"
    if name not in requests:
        return [f"{head}.  No request is specified"]
    if requests[name].value < least:
        return [f"{head}, but request is {requests[name]}"]
    if name in limits and limits[name].value < least:
        return [f"{head}, but limit is {limits[name]}"]
    return []


def _maximum(kind: str, name: str, raw: Any, requests: ResourceList, limits: ResourceList) -> list[str]:
    """maxConstraint: a limit is required, and neither it nor a request may be above the maximum."""
    shown, most = quantity_string(raw), amount(raw).value
    head = f"maximum {name} usage per {kind} is {shown}"
    if name not in limits:
        return [f"{head}.  No limit is specified"]
    if limits[name].value > most:
        return [f"{head}, but limit is {limits[name]}"]
    if name in requests and requests[name].value > most:
        return [f"{head}, but request is {requests[name]}"]
    return []


def _ratio(kind: str, name: str, raw: Any, requests: ResourceList, limits: ResourceList) -> list[str]:
    """limitRequestRatioConstraint: limit / request may not exceed the ratio (computed in
    millis, in floating point, as upstream does)."""
    head = f"{name} max limit to request ratio per {kind} is {quantity_string(raw)}"
    request, limit = _millis(requests.get(name)), _millis(limits.get(name))
    if not request:
        return [f"{head}, but no request is specified or request is 0"]
    if not limit:
        return [f"{head}, but no limit is specified or limit is 0"]
    observed = limit / request
    if observed * 1000 > _millis(amount(raw)):
        return [f"{head}, but provided ratio is {observed:f}"]
    return []


def _millis(value: Amount | None) -> int:
    return 0 if value is None else int(value.value * 1000)
