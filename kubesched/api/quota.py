"""What a ResourceQuota counts: the usage of each object, as pkg/quota/v1 evaluates it.

The ResourceQuota admission plugin and the resource-quota controller must agree exactly on what an
object uses, or the controller's `status.used` and the admission's running total drift apart; so
both read it here. Amounts keep the format they were written in (`500m`, `128Mi`), because quota
messages and `status.used` print sums in the format of their first non-zero term, as Go's
`Quantity.Add` does.

Evaluators, as upstream registers them: pods (compute resources, `pods`, extended resources as
`requests.<name>`, scopes), services (`services`, `services.loadbalancers`, `services.nodeports`),
persistent volume claims (`persistentvolumeclaims`, `requests.storage`, per storage class),
resource claims (devices per DeviceClass, `<class>.deviceclass.resource.k8s.io/devices`), and an
object count `count/<resource>.<group>` for every kind (with the legacy names `configmaps`,
`secrets`, `replicationcontrollers` and `resourcequotas`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubesched.api.dra.allocator import MAX_RESULTS
from kubesched.api.dra.extended import Getter, counts_in_quota, quota_usage
from kubesched.api.objects import Obj
from kubesched.api.qos import BEST_EFFORT, qos_class
from kubesched.api.quantity import canonical, milli_value, parse_quantity, quantity_format
from kubesched.api.resources import (
    aggregate_containers,
    default_pod_level_requests,
    effective_container_requests,
    is_pod_level_resource,
    pod_requests_over,
)
from kubesched.api.storage import ANN_BETA_STORAGE_CLASS

DECIMAL_SI = "DecimalSI"
COUNT_PREFIX = "count/"
REQUESTS_PREFIX = "requests."
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
DEVICES_PER_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"  # corev1.ResourceClaimsPerClass

POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods"})
SERVICE_RESOURCES = frozenset({"count/services", "services", "services.loadbalancers", "services.nodeports"})
PVC_RESOURCES = frozenset({"count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage"})
# Kinds whose object count also has a name without `count/` (the legacy object-count evaluators).
LEGACY_COUNTS = {"ConfigMap": "configmaps", "Secret": "secrets", "ReplicationController": "replicationcontrollers",
                 "ResourceQuota": "resourcequotas"}
# Resources whose plural is not the guess (meta.UnsafeGuessKindToResource gets these wrong).
IRREGULAR_PLURALS = {"Endpoints": "endpoints"}

# The quota scopes (spec.scopes and spec.scopeSelector) and the scopes' selector operators.
TERMINATING, NOT_TERMINATING = "Terminating", "NotTerminating"
BEST_EFFORT_SCOPE, NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"
PRIORITY_CLASS, CROSS_NAMESPACE_AFFINITY = "PriorityClass", "CrossNamespacePodAffinity"
VOLUME_ATTRIBUTES_CLASS = "VolumeAttributesClass"
SCOPES = (TERMINATING, NOT_TERMINATING, BEST_EFFORT_SCOPE, NOT_BEST_EFFORT, PRIORITY_CLASS, CROSS_NAMESPACE_AFFINITY,
          VOLUME_ATTRIBUTES_CLASS)
SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Amount:
    """A quantity with the format it prints in."""

    value: Fraction
    fmt: str = DECIMAL_SI

    def __str__(self) -> str:
        return canonical(self.value, self.fmt)

    def plus(self, other: Amount) -> Amount:
        """Quantity.Add: the sum keeps this amount's format, unless this amount is zero."""
        return Amount(self.value + other.value, self.fmt if self.value else other.fmt)

    __add__ = plus

    def __gt__(self, other: Amount) -> bool:
        return self.value > other.value


ResourceList = dict[str, Amount]
ONE = Amount(Fraction(1))
ZERO = Amount(Fraction(0))


def amount(raw: str | int | float) -> Amount:
    """A quantity as the API server stores it: rounded up to milli precision (SetDefaults_ResourceList)."""
    return Amount(Fraction(milli_value(parse_quantity(raw)), 1000), quantity_format(raw))


def resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {name: amount(value) for name, value in (raw or {}).items()}


def printable(resources: Mapping[str, Amount]) -> dict[str, str]:
    """A resource list as the API writes it (status.used, status.hard)."""
    return {name: str(resources[name]) for name in sorted(resources)}


def add(a: Mapping[str, Amount], b: Mapping[str, Amount]) -> ResourceList:
    """quota.Add: every resource of either list, summed where both have it."""
    result = {name: value.plus(b[name]) if name in b else value for name, value in a.items()}
    for name, value in b.items():
        result.setdefault(name, value)
    return result


def mask(resources: Mapping[str, Amount], names: Iterable[str]) -> ResourceList:
    wanted = set(names)
    return {name: value for name, value in resources.items() if name in wanted}


def exceeded(used: Mapping[str, Amount], hard: Mapping[str, Amount]) -> list[str]:
    """quota.LessThanOrEqual's failures: resources in both lists where `used` is above `hard`."""
    return sorted(name for name, value in used.items() if name in hard and value.value > hard[name].value)


def pretty(resources: Mapping[str, Amount]) -> str:
    """`requests.cpu=500m,pods=1`, sorted, as quota messages print resource lists."""
    return ",".join(f"{name}={resources[name]}" for name in sorted(resources))


# --- object counts ------------------------------------------------------------------------------

def object_count_name(obj: Obj, crd_plural: Callable[[str, str], str | None] | None = None) -> str:
    """`count/<resource>.<group>` (`count/pods` for the core group); a custom resource's plural
    comes from its CustomResourceDefinition when `crd_plural(group, kind)` knows it."""
    api_version, kind = str(obj.get("apiVersion") or "v1"), str(obj.get("kind"))
    group = api_version.rpartition("/")[0]
    plural = (crd_plural(group, kind) if crd_plural else None) or guess_plural(kind)
    return f"{COUNT_PREFIX}{plural}.{group}" if group else f"{COUNT_PREFIX}{plural}"


def guess_plural(kind: str) -> str:
    """meta.UnsafeGuessKindToResource: lower case, then -s, -es after s, -ies for a final y."""
    if kind in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[kind]
    singular = kind.lower()
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


# --- which quotas and resources an object concerns -----------------------------------------------------

def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_quota_resource(name: str) -> bool:
    """`requests.<extended resource>`: the only form a quota takes for resources that do not overcommit."""
    return name.startswith(REQUESTS_PREFIX) and not _is_native(name)


def is_extended_resource(name: str) -> bool:
    """helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io."""
    return not _is_native(name) and not name.startswith(REQUESTS_PREFIX)


def matching_resources(kind: str, count_name: str, names: Iterable[str], dra_extended: bool = False) -> list[str]:
    """evaluator.MatchingResources: which of a quota's resource names objects of `kind` use;
    `dra_extended` (DRAExtendedResource) has claims count in extended-resource names too."""
    names = list(names)
    if kind == "Pod":
        return [n for n in names if n in POD_RESOURCES or n.startswith(("hugepages-", "requests.hugepages-"))
                or is_extended_quota_resource(n)]
    if kind == "Service":
        return [n for n in names if n in SERVICE_RESOURCES]
    if kind == "PersistentVolumeClaim":
        return [n for n in names if n in PVC_RESOURCES or STORAGE_CLASS_SUFFIX in n
                and n.endswith(("/persistentvolumeclaims", "/requests.storage"))]
    if kind == "ResourceClaim":
        return [n for n in names if n == count_name or n.endswith(DEVICES_PER_CLASS_SUFFIX)
                or dra_extended and counts_in_quota(n)]
    legacy = LEGACY_COUNTS.get(kind)
    return [n for n in names if n in (count_name, legacy)]


def evaluated(names: Iterable[str], dra_extended: bool = False) -> list[str]:
    """The resource names some evaluator counts (any `count/` name: upstream registers an object
    count for every resource it serves); the controller reports each, zero when nothing uses it."""
    return [n for n in names if n.startswith(COUNT_PREFIX) or n in LEGACY_COUNTS.values()
            or n.endswith(DEVICES_PER_CLASS_SUFFIX) or dra_extended and counts_in_quota(n)
            or any(matching_resources(kind, "", [n]) for kind in ("Pod", "Service", "PersistentVolumeClaim"))]


def scope_selectors(quota: Obj) -> list[Obj]:
    """getScopeSelectorsFromQuota: each of spec.scopes as `Exists`, then the scopeSelector's expressions."""
    spec = quota.get("spec") or {}
    selectors: list[Obj] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    return selectors + list((spec.get("scopeSelector") or {}).get("matchExpressions") or ())


def _selector_matches(requirement: Obj, value: str | None) -> bool:
    """A scope selector expression on the one value a scope has (None: none), as a label selector
    on {scope: value} matches it."""
    values = requirement.get("values") or []
    operator = requirement.get("operator")
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    return (value is not None) == (operator == "Exists")


def scope_matches(obj: Obj, requirement: Obj) -> bool:
    """Whether `obj` is in one scope: podMatchesScopeFunc for pods, the VolumeAttributesClass scope
    for claims; no other kind is in any scope."""
    scope, spec = requirement.get("scopeName"), obj.get("spec") or {}
    if obj.get("kind") == "PersistentVolumeClaim":
        return scope == VOLUME_ATTRIBUTES_CLASS and _selector_matches(requirement, spec.get("volumeAttributesClassName") or None)
    if obj.get("kind") != "Pod":
        return False
    if scope in (TERMINATING, NOT_TERMINATING):
        deadline = spec.get("activeDeadlineSeconds")
        return (deadline is not None and deadline >= 0) == (scope == TERMINATING)
    if scope in (BEST_EFFORT_SCOPE, NOT_BEST_EFFORT):
        return (qos_class(obj) == BEST_EFFORT) == (scope == BEST_EFFORT_SCOPE)
    if scope == PRIORITY_CLASS:
        return _selector_matches(requirement, spec.get("priorityClassName") or None)
    if scope == CROSS_NAMESPACE_AFFINITY:
        return _cross_namespace_affinity(spec)
    return False


def _cross_namespace_affinity(spec: Obj) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
        terms += [w.get("podAffinityTerm") or {} for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def quota_matches(quota: Obj, obj: Obj, count_name: str) -> bool:
    """generic.Matches: the quota's status.hard names something `obj` uses, and `obj` is in every scope."""
    hard = ((quota.get("status") or {}).get("hard") or {}).keys()
    return bool(matching_resources(obj["kind"], count_name, hard)) and \
        all(scope_matches(obj, s) for s in scope_selectors(quota))


# --- usage --------------------------------------------------------------------------------------------

def usage(obj: Obj, count_name: str, charged: bool = True, dra_extended: Getter | None = None) -> ResourceList:
    """evaluator.Usage. A pod that is not `charged` (finished, or stuck terminating past its grace
    period: pod_charged) only counts in `count/pods`. `dra_extended` (DRAExtendedResource: how to
    read classes and pods) has a claim's devices count in extended-resource names too."""
    kind = obj["kind"]
    if kind == "Pod":
        return _pod_usage(obj) if charged else {count_name: ONE}
    if kind == "Service":
        return _service_usage(obj)
    if kind == "PersistentVolumeClaim":
        return _claim_usage(obj)
    if kind == "ResourceClaim":
        return _resource_claim_usage(obj, count_name, dra_extended)
    result = {count_name: ONE}
    if kind in LEGACY_COUNTS:
        result[LEGACY_COUNTS[kind]] = ONE
    return result


def pod_charged(pod: Obj, now: float, seconds: Callable[[str], float]) -> bool:
    """QuotaV1Pod: a finished pod is not charged, nor one still terminating a grace period after
    its deletion was due (a lost node's pod must not hold its owner's quota)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod["metadata"]
    grace = meta.get("deletionGracePeriodSeconds")
    return not (meta.get("deletionTimestamp") and grace is not None and now > seconds(meta["deletionTimestamp"]) + grace)


def _pod_usage(pod: Obj) -> ResourceList:
    spec = pod.get("spec") or {}
    result = {"count/pods": ONE}
    result.update(compute_usage(pod_requests(spec), pod_limits(spec)))
    return result


def compute_usage(requests: Mapping[str, Amount], limits: Mapping[str, Amount]) -> ResourceList:
    """podComputeUsageHelper: what a pod's (or one container's) requests and limits charge."""
    result: ResourceList = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            result[name] = result[REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            result["limits." + name] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            result[name] = result[REQUESTS_PREFIX + name] = value
        elif is_extended_resource(name):
            result[REQUESTS_PREFIX + name] = value
    return result


def container_totals(spec: Obj, of: Callable[[Obj], Mapping[str, Any]]) -> ResourceList:
    """The sidecar-aware total over a pod's containers (AggregateContainerRequests/Limits)."""
    return aggregate_containers(spec, lambda container: resource_list(of(container)))


def container_limits(container: Obj) -> Mapping[str, Any]:
    return (container.get("resources") or {}).get("limits") or {}


def pod_level_requests(spec: Obj) -> ResourceList | None:
    """spec.resources.requests after defaulting (None without spec.resources)."""
    return default_pod_level_requests(spec, amount)


def pod_level_set(spec: Obj) -> bool:
    """IsPodLevelResourcesSet: spec.resources requests or limits name a resource it supports."""
    resources = spec.get("resources") or {}
    return any(is_pod_level_resource(n) for key in ("requests", "limits") for n in resources.get(key) or {})


def pod_requests(spec: Obj) -> ResourceList:
    """resourcehelper.PodRequests: containers (sidecar-aware), pod-level requests over them, plus overhead."""
    pod_level = pod_level_requests(spec)
    if pod_level and not any(is_pod_level_resource(n) for n in pod_level):
        pod_level = None
    return pod_requests_over(spec, container_totals(spec, effective_container_requests), pod_level, amount)


def pod_limits(spec: Obj) -> ResourceList:
    """resourcehelper.PodLimits: containers (sidecar-aware), pod-level limits over them, and
    overhead added to each non-zero limit."""
    limits = container_totals(spec, container_limits)
    if pod_level_set(spec):
        limits.update((n, v) for n, v in resource_list((spec.get("resources") or {}).get("limits")).items()
                      if is_pod_level_resource(n))
    for name, value in resource_list(spec.get("overhead")).items():
        if name in limits and limits[name].value:
            limits[name] = limits[name].plus(value)
    return limits


def _service_usage(svc: Obj) -> ResourceList:
    spec = svc.get("spec") or {}
    ports = spec.get("ports") or []
    result = {"count/services": ONE, "services": ONE, "services.loadbalancers": ZERO, "services.nodeports": ZERO}
    if spec.get("type") == "NodePort":
        result["services.nodeports"] = Amount(Fraction(len(ports)))
    elif spec.get("type") == "LoadBalancer":
        # Without node ports allocated for the balancer, only those given explicitly count.
        counted = [p for p in ports if p.get("nodePort")] if spec.get("allocateLoadBalancerNodePorts") is False \
            else ports
        result["services.nodeports"] = Amount(Fraction(len(counted)))
        result["services.loadbalancers"] = ONE
    return result


def claim_class(pvc: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName."""
    annotations = pvc["metadata"].get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in annotations:
        return annotations[ANN_BETA_STORAGE_CLASS]
    return (pvc.get("spec") or {}).get("storageClassName") or ""


def _claim_usage(pvc: Obj) -> ResourceList:
    result = {"persistentvolumeclaims": ONE, "count/persistentvolumeclaims": ONE}
    class_name = claim_class(pvc)
    if class_name:
        result[class_name + STORAGE_CLASS_SUFFIX + "persistentvolumeclaims"] = ONE
    requested = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    allocated = ((pvc.get("status") or {}).get("allocatedResources") or {}).get("storage")
    candidates = [amount(raw) for raw in (requested, allocated) if raw is not None]
    if candidates:
        storage = max(candidates, key=lambda a: a.value)  # the larger of the request and what was allocated
        result["requests.storage"] = storage
        if class_name:
            result[class_name + STORAGE_CLASS_SUFFIX + "requests.storage"] = storage
    return result


def _resource_claim_usage(claim: Obj, count_name: str, dra_extended: Getter | None) -> ResourceList:
    """claimEvaluator.Usage: the claim itself, and per DeviceClass the most devices its requests
    can be given. `All` counts as the claim limit (32) because how many devices match is only
    known at allocation; a prioritized list counts, per class, the largest of its subrequests,
    since any one of them may be the one allocated. Admin access requests count like any other."""
    result = {count_name: ONE}
    devices_by_request: list[tuple[str, int]] = []  # (class, devices) as each request counts them
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        charged: dict[str, int] = {}
        if request.get("firstAvailable"):
            for sub in request["firstAvailable"]:
                name, devices = _devices_requested(sub)
                if devices > charged.get(name, 0):
                    charged[name] = devices
        elif request.get("exactly"):
            name, devices = _devices_requested(request["exactly"])
            charged[name] = devices
        for name, devices in charged.items():
            result[name] = result.get(name, ZERO).plus(Amount(Fraction(devices)))
            devices_by_request.append((name[:-len(DEVICES_PER_CLASS_SUFFIX)], devices))
    if dra_extended is not None:
        for name, amount in quota_usage(claim, devices_by_request, dra_extended).items():
            result[name] = result.get(name, ZERO).plus(Amount(amount))
    return result


def _devices_requested(request: Obj) -> tuple[str, int]:
    """(`<class>.deviceclass.resource.k8s.io/devices`, how many devices at most) for an exact
    request or a subrequest; an allocation mode this version does not know counts none."""
    mode = request.get("allocationMode")
    devices = int(request.get("count") or 0) if mode == "ExactCount" else MAX_RESULTS if mode == "All" else 0
    return str(request.get("deviceClassName") or "") + DEVICES_PER_CLASS_SUFFIX, devices
