"""DynamicResources' part for extended resources backed by DRA (DRAExtendedResource, alpha).

As v1.35's plugin does it: PreFilter notices a pod asking for an extended resource some
DeviceClass serves and starts from the claim an earlier attempt created for it, else from an
in-memory claim without requests. Filter gives that claim, per node, one request per container
and resource the node does not publish in its allocatable (those it publishes are the device
plugin's, checked by NodeResourcesFit), and allocates it with the pod's other claims. Reserve
marks the chosen devices in flight under the in-memory claim's temporary uid; PreBind creates the
claim (generateName `<pod>-extended-resources-`, owned by the pod, annotated), writes its
allocation and reservation, and records it in `pod.status.extendedResourceClaimStatus`.
A claim left from an earlier attempt cannot be allocated again: Filter refuses every node, and
PostFilter (or Unreserve) deletes it so that the next attempt starts anew.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field

from kubesched.api.dra.claims import FINALIZER, allocation, claim_key
from kubesched.api.dra.extended import (
    IN_MEMORY_NAME,
    device_requests,
    in_memory_claim,
    is_dra_extended_resource_name,
    request_mappings,
)
from kubesched.api.objects import Obj, deep_copy
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.interface import API
from kubesched.scheduler.types import NodeInfo, PodInfo

CANNOT_SCHEDULE = "cannot schedule extended resource claim"
CANNOT_FIT = "cannot fit resource"


@dataclass
class ExtendedClaim:
    """The pod's extended-resource claim through one scheduling attempt."""

    claim: Obj  # in memory (IN_MEMORY_NAME) until PreBind creates it, or one an earlier attempt made
    uid: str  # its uid when PreFilter found it: what in-flight allocations are signalled under
    requests: dict[str, int]  # the pod's requests (the DRA-backed ones are picked per node)
    mapping: dict[str, str]  # extended resource name -> DeviceClass
    # Filter's outcome per node: the user claims' allocations, the node's claim and its allocation.
    per_node: dict[str, tuple[list[Obj], Obj | None, Obj | None]] = field(default_factory=dict)
    node_claim: Obj | None = None  # set by Reserve: the claim as PreBind creates it
    allocation: Obj | None = None  # and its allocation

    @property
    def in_memory(self) -> bool:
        return bool(self.claim["metadata"]["name"] == IN_MEMORY_NAME)


def find(pod: PodInfo, mapping: dict[str, str], existing: Obj | None) -> ExtendedClaim | None:
    """preFilterExtendedResources: the pod's extended-resource claim when it asks for a resource
    some class serves; None when it asks for none."""
    if not any(amount and is_dra_extended_resource_name(name) and name in mapping
               for name, amount in pod.requests.items()):
        return None
    claim = existing if existing is not None else in_memory_claim(pod.obj, str(uuid.uuid4()))
    return ExtendedClaim(claim, claim["metadata"].get("uid", ""), dict(pod.requests), mapping)


def node_claim(x: ExtendedClaim, pod: PodInfo, node: NodeInfo) -> tuple[Obj | None, str | None]:
    """filterExtendedResources: the claim for `node` (None: nothing for DRA to allocate there) or
    why the pod cannot go there (an unschedulable reason)."""
    if ((x.claim.get("spec") or {}).get("devices") or {}).get("requests"):
        return None, CANNOT_SCHEDULE  # an earlier attempt's: PostFilter deletes it
    backed = []
    for name, amount in x.requests.items():
        if not amount or not is_dra_extended_resource_name(name):
            continue
        published = name in node.allocatable
        if name in x.mapping:
            if not published:
                backed.append(name)
        elif not published:
            return None, CANNOT_FIT
    if not backed or allocation(x.claim) is not None:
        return None, None
    claim = deep_copy(x.claim)
    claim["spec"] = {"devices": {"requests": device_requests(pod.obj, backed, x.mapping)}}
    return claim, None


def bind(api: API, x: ExtendedClaim, pod: PodInfo) -> None:
    """PreBind for the extended-resource claim: create it, add the finalizer, write its allocation
    and the pod's reservation, then record it in the pod's status. APIError or RuntimeError say
    what failed."""
    if x.allocation is None or x.node_claim is None:
        return  # the node's device plugin serves the pod's extended resources
    if x.in_memory:
        claim = deep_copy(x.node_claim)
        claim.pop("status", None)
        meta = claim["metadata"]
        for key in ("name", "uid"):
            meta.pop(key, None)
        try:
            x.claim = api.create(claim)
        except APIError as e:
            raise RuntimeError(f"create claim for extended resources {meta.get('namespace', '')}/: {e.message}") \
                from None
    meta = x.claim["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    latest = api.get("ResourceClaim", namespace, name)
    if latest["metadata"].get("deletionTimestamp"):
        raise RuntimeError(f"claim {claim_key(latest)} got deleted in the meantime")
    if allocation(latest) is not None:
        raise RuntimeError(f"claim {claim_key(latest)} got allocated elsewhere in the meantime")
    if FINALIZER not in (latest["metadata"].get("finalizers") or ()):
        latest = deep_copy(latest)
        latest["metadata"].setdefault("finalizers", []).append(FINALIZER)
        latest = api.update(latest)
    result = x.allocation
    reference = {"resource": "pods", "name": pod.name, "uid": pod.uid}

    def write(status: Obj) -> None:
        status["allocation"] = result
        status["reservedFor"] = [*(status.get("reservedFor") or ()), reference]
    x.claim = api.update_status("ResourceClaim", namespace, name, write)
    mappings = request_mappings(x.claim, pod.obj)

    def record(status: Obj) -> None:
        status["extendedResourceClaimStatus"] = {"requestMappings": mappings, "resourceClaimName": name}
    try:
        api.update_status("Pod", pod.namespace, pod.name, record)
    except APIError as e:
        raise RuntimeError(f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {e.message}") \
            from None


def delete(api: API, claim: Obj) -> None:
    """deleteClaim: drop the delete-protection finalizer, then delete the claim."""
    meta = claim["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    latest = api.get("ResourceClaim", namespace, name)
    if FINALIZER in (latest["metadata"].get("finalizers") or ()):
        latest = deep_copy(latest)
        latest["metadata"]["finalizers"] = [f for f in latest["metadata"]["finalizers"] if f != FINALIZER]
        api.update(latest)
    with contextlib.suppress(APIError):
        api.delete("ResourceClaim", namespace, name)
