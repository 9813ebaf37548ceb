"""Extended resources backed by DRA (KEP-5004, the alpha gate DRAExtendedResource).

A pod may ask for devices the old way, `nvidia.com/gpu: 1` in a container's requests, and be
given them by DRA: a DeviceClass names the extended resource it serves in
`spec.extendedResourceName`, and every class also serves the implicit name
`deviceclass.resource.kubernetes.io/<class>`. On a node whose allocatable does not carry the
resource (no device plugin there), the scheduler allocates it through a ResourceClaim of its own
making: one request per container and resource, created at PreBind, owned by the pod, annotated
as the pod's extended-resource claim and named in `pod.status.extendedResourceClaimStatus`.

These are the pure parts the scheduler, the controllers, the kubelet and quota share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import parse_quantity
from kubesched.api.resources import effective_container_requests, pod_requests

Obj = dict[str, Any]
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # ExtendedResourceClaimAnnotation
IN_MEMORY_NAME = "<extended-resources>"  # not a valid name: the claim before PreBind creates it


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: domain-prefixed, outside kubernetes.io, not `requests.`."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_dra_extended_resource_name(name: str) -> bool:
    """IsDRAExtendedResourceName: an extended resource name, or a class's implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _newer(a: Obj, b: Obj) -> bool:
    """Whether class `a` is preferred to `b` for the same explicit name: created later, or at the
    same time with the name that sorts first (so a name can move to a new class)."""
    ta, tb = a["metadata"].get("creationTimestamp") or "", b["metadata"].get("creationTimestamp") or ""
    if ta == tb:
        return bool(a["metadata"]["name"] < b["metadata"]["name"])
    return bool(ta > tb)


def device_class_mapping(classes: Iterable[Obj]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name: every class's implicit name, and its explicit
    `extendedResourceName` (when two classes claim one, the preferred one)."""
    mapping: dict[str, str] = {}
    chosen: dict[str, Obj] = {}
    for cls in sorted(classes, key=lambda c: c["metadata"]["name"]):
        name = cls["metadata"]["name"]
        mapping[DEVICE_CLASS_PREFIX + name] = name
        explicit = (cls.get("spec") or {}).get("extendedResourceName")
        if explicit:
            have = chosen.get(explicit)
            if have is None or _newer(cls, have):
                chosen[explicit] = cls
                mapping[explicit] = name
    return mapping


def containers(pod: Obj) -> list[Obj]:
    """Init containers then containers: the order request names are numbered in."""
    spec = pod.get("spec") or {}
    return [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]


def _count(raw: Any) -> int:
    """A container's request as a whole number of devices (0 when it is not one, as AsInt64)."""
    amount = parse_quantity(str(raw))
    return int(amount) if amount.denominator == 1 else 0


def request_name(index: int, requests: Mapping[str, Any], resource: str) -> str:
    """container-<container index>-request-<the resource's index among the container's sorted
    request names>."""
    return f"container-{index}-request-{sorted(requests).index(resource)}"


def device_requests(pod: Obj, resources: Iterable[str], mapping: Mapping[str, str]) -> list[Obj]:
    """The claim's requests for `resources` on one node (createDeviceRequests): one ExactCount
    request per container and resource, of the container's amount, from the mapped class."""
    out = []
    for resource in sorted(resources):
        class_name = mapping.get(resource)
        if not class_name:
            continue
        for i, container in enumerate(containers(pod)):
            requests = effective_container_requests(container)
            if resource not in requests:
                continue
            count = _count(requests[resource])
            if count:
                out.append({"name": request_name(i, requests, resource),
                            "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount",
                                        "count": count}})
    return out


def request_mappings(claim: Obj, pod: Obj) -> list[Obj]:
    """pod.status.extendedResourceClaimStatus.requestMappings: which container and resource each
    of the claim's requests serves (createRequestMappings)."""
    names = {r.get("name") for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()}
    out = []
    for i, container in enumerate(containers(pod)):
        requests = effective_container_requests(container)
        for resource in sorted(requests):
            name = request_name(i, requests, resource)
            if name in names:
                out.append({"containerName": container.get("name", ""), "resourceName": resource,
                            "requestName": name})
    return out


def is_extended_claim_of(pod: Obj, claim: Obj) -> bool:
    """Whether `claim` is the pod's extended-resource claim: annotated so, the pod its controller."""
    meta, pm = claim["metadata"], pod["metadata"]
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return False
    return any(o.get("controller") and o.get("name") == pm["name"] and o.get("uid") == pm.get("uid")
               for o in meta.get("ownerReferences") or ())


def in_memory_claim(pod: Obj, uid: str) -> Obj:
    """The claim PreFilter starts from when the pod has none yet: no requests (each node gets its
    own), a temporary uid, and what PreBind creates it with (generateName, owner, annotation)."""
    meta = pod["metadata"]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {
            "namespace": meta.get("namespace", "default"), "name": IN_MEMORY_NAME, "uid": uid,
            "generateName": f"{meta['name']}-extended-resources-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta.get("uid", ""),
                                 "controller": True, "blockOwnerDeletion": True}],
            "annotations": {CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {}},
    }


# ---- ResourceQuota -------------------------------------------------------------------------------

QUOTA_REQUESTS = "requests."
QUOTA_IMPLICIT_PREFIX = QUOTA_REQUESTS + DEVICE_CLASS_PREFIX  # corev1.ResourceImplicitExtendedClaimsPerClass
Getter = Callable[[str, str, str], "Obj | None"]  # (kind, namespace, name) -> the object, if any


def counts_in_quota(name: str) -> bool:
    """The quota names a claim also counts in with the gate on (claimEvaluator.MatchingResources):
    `requests.deviceclass.resource.kubernetes.io/<class>` and `requests.<extended resource>`."""
    return name.startswith(QUOTA_IMPLICIT_PREFIX) or (
        name.startswith(QUOTA_REQUESTS) and is_extended_resource_name(name[len(QUOTA_REQUESTS):]))


def quota_usage(claim: Obj, devices: Iterable[tuple[str, int]], get: Getter) -> dict[str, Fraction]:
    """What a claim's devices (class, how many, per request) count against extended-resource
    quotas, so that a GPU is one GPU whether a pod asks for it in its requests or through a claim:
    each counts in the class's implicit name and in its `extendedResourceName`. The claim made for
    a pod's extended resources is not counted again in the name the pod's own request for those
    devices already counts in (claimEvaluator's setResourceQuantity)."""
    owed = _pod_requests(claim, get)
    extended = owed is not None
    left = owed or []
    out: dict[str, Fraction] = {}
    for class_name, count in devices:
        amount = Fraction(count)
        implicit = QUOTA_IMPLICIT_PREFIX + class_name
        cls = get("DeviceClass", "", class_name)
        named = ((cls or {}).get("spec") or {}).get("extendedResourceName")
        explicit = QUOTA_REQUESTS + named if named else None
        by_implicit = _index(left, implicit, amount) if extended else None
        by_explicit = _index(left, explicit, amount) if extended and explicit and by_implicit is None else None
        if not extended or by_implicit is None or by_explicit is not None:
            out[implicit] = out.get(implicit, Fraction(0)) + amount
        if explicit and (not extended or by_implicit is not None or by_explicit is None):
            out[explicit] = out.get(explicit, Fraction(0)) + amount
        for index in (by_implicit, by_explicit):
            if index is not None:
                del left[index]
                break
    return out


def _index(entries: list[tuple[str, Fraction]], name: str | None, amount: Fraction) -> int | None:
    return next((i for i, (n, a) in enumerate(entries) if n == name and a == amount), None)


def _pod_requests(claim: Obj, get: Getter) -> list[tuple[str, Fraction]] | None:
    """verifyOwner: for the claim made for a pod's extended resources (its controller a pod that
    exists, that names no other such claim), the pod's requests for extended resources as quota
    names: each long-running container's, and what the init containers ask beyond them."""
    meta = claim["metadata"]
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return None
    owner = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)
    if owner is None or owner.get("kind") != "Pod" or owner.get("apiVersion") != "v1":
        return None
    pod = get("Pod", meta.get("namespace", ""), owner.get("name", ""))
    if pod is None or pod["metadata"].get("uid") != owner.get("uid"):
        return None
    named = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if named and named != meta["name"]:
        return None
    spec = pod.get("spec") or {}
    init = len(spec.get("initContainers") or ())
    out: list[tuple[str, Fraction]] = []
    sums: dict[str, Fraction] = {}
    for i, container in enumerate(containers(pod)):
        for name, raw in effective_container_requests(container).items():
            if not is_dra_extended_resource_name(name):
                continue
            if i < init and container.get("restartPolicy") != "Always":
                sums.setdefault(name, Fraction(0))
                continue
            amount = parse_quantity(str(raw))
            out.append((QUOTA_REQUESTS + name, amount))
            sums[name] = sums.get(name, Fraction(0)) + amount
    peak = pod_requests(spec)
    for name, total in sums.items():
        if peak.get(name, 0) > total:
            out.append((QUOTA_REQUESTS + name, peak[name] - total))
    return out
