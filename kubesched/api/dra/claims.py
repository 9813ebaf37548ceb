"""How a pod refers to its ResourceClaims (k8s.io/dynamic-resource-allocation/resourceclaim).

A pod claim names a claim directly (`resourceClaimName`, shareable) or a template
(`resourceClaimTemplateName`): then the resource-claim controller makes a claim for this pod and
records its generated name in `status.resourceClaimStatuses`; until it has, the claim "is not
created yet". A generated claim is only the pod's if the pod is its controller.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
RESERVED_FOR_MAX = 256  # ResourceClaimReservedForMaxSize


class ClaimNameError(Exception):
    """The pod claim's ResourceClaim cannot be named yet (or the pod claim is of an unknown form)."""


def pod_claims(pod: Obj) -> list[Obj]:
    return list((pod.get("spec") or {}).get("resourceClaims") or ())


def claim_name(pod: Obj, pod_claim: Obj) -> tuple[str | None, bool]:
    """resourceclaim.Name: the claim's name (None: none is needed) and whether the claim must be
    checked to be this pod's."""
    meta = pod["metadata"]
    if pod_claim.get("resourceClaimName"):
        return pod_claim["resourceClaimName"], False
    if pod_claim.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
            if status.get("name") == pod_claim.get("name"):
                return status.get("resourceClaimName") or None, True
        raise ClaimNameError(f'pod "{meta.get("namespace", "")}/{meta["name"]}": ResourceClaim not created yet')
    raise ClaimNameError(f'pod "{meta.get("namespace", "")}/{meta["name"]}", spec.resourceClaim '
                         f'"{pod_claim.get("name", "")}": none of the supported fields are set')


def resolved_names(pod: Obj) -> list[str]:
    """The names of the claims the pod's claims resolve to so far (templates' once made), and
    the claim the scheduler made for its extended resources, if any."""
    names = []
    for pod_claim in pod_claims(pod):
        try:
            name, _ = claim_name(pod, pod_claim)
        except ClaimNameError:
            continue
        if name is not None:
            names.append(name)
    extended = extended_claim_name(pod)
    if extended is not None:
        names.append(extended)
    return names


def extended_claim_name(pod: Obj) -> str | None:
    """The claim the scheduler made for the pod's extended resources backed by DRA
    (`status.extendedResourceClaimStatus`), if any."""
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    return status.get("resourceClaimName") or None


def is_for_pod(pod: Obj, claim: Obj) -> str | None:
    """IsForPod: why the claim is not the one made for this pod, or None if it is."""
    pm, cm = pod["metadata"], claim["metadata"]
    owned = any(o.get("controller") and o.get("uid") == pm.get("uid") for o in cm.get("ownerReferences") or ())
    if cm.get("namespace") != pm.get("namespace") or not owned:
        return (f"ResourceClaim {cm.get('namespace', '')}/{cm['name']} was not created for pod "
                f"{pm.get('namespace', '')}/{pm['name']} (pod is not owner)")
    return None


def reserved_for(claim: Obj) -> list[Obj]:
    return list((claim.get("status") or {}).get("reservedFor") or ())


def is_reserved_for(pod_uid: str, claim: Obj) -> bool:
    for reference in (claim.get("status") or {}).get("reservedFor") or ():
        if reference.get("uid") == pod_uid:
            return True
    return False


def can_be_reserved(claim: Obj) -> bool:
    return len((claim.get("status") or {}).get("reservedFor") or ()) < RESERVED_FOR_MAX


def allocation(claim: Obj) -> Obj | None:
    return (claim.get("status") or {}).get("allocation") or None


def owning_pod(claim: Obj) -> tuple[str, str]:
    """The pod a generated claim belongs to (name, uid), or ("", "")."""
    for owner in claim["metadata"].get("ownerReferences") or ():
        if owner.get("controller") and owner.get("apiVersion") == "v1" and owner.get("kind") == "Pod":
            return owner.get("name", ""), owner.get("uid", "")
    return "", ""


def claim_key(claim: Obj) -> str:
    return f"{claim['metadata'].get('namespace', '')}/{claim['metadata']['name']}"
