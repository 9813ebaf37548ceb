"""The kubelet's side of Dynamic Resource Allocation: before it starts a pod's containers it
prepares the pod's ResourceClaims (the DRA manager's PrepareResources), which it may only do for
claims that exist, are the pod's own if made from a template, and are allocated and reserved for
the pod. Until then the pod stays Pending and the kubelet retries as the claims change.
"""

from __future__ import annotations

from kubesched.api.dra.claims import (
    ClaimNameError,
    allocation,
    claim_name,
    extended_claim_name,
    is_for_pod,
    is_reserved_for,
    pod_claims,
    resolved_names,
)
from kubesched.api.objects import Obj
from kubesched.store.base import Store

FAILED_PREPARE = "FailedPrepareDynamicResources"


def claim_keys(pod: Obj) -> set[tuple[str, str]]:
    """The (namespace, name) of each claim the pod's claims resolve to so far."""
    namespace = pod["metadata"].get("namespace", "default")
    return {(namespace, name) for name in resolved_names(pod)}


def prepare_problem(store: Store, pod: Obj) -> str | None:
    """Why the pod's claims cannot be prepared on its node yet, or None when they can."""
    meta = pod["metadata"]
    namespace, uid = meta.get("namespace", "default"), meta.get("uid", "")
    for pod_claim in pod_claims(pod):
        try:
            name, check_owner = claim_name(pod, pod_claim)
        except ClaimNameError as e:
            return str(e)
        if name is None:
            continue
        claim = store.get("ResourceClaim", namespace, name)
        if claim is None:
            return (f"failed to fetch ResourceClaim {name} referenced by pod {meta['name']}: "
                    f'resourceclaims.resource.k8s.io "{name}" not found')
        problem = is_for_pod(pod, claim) if check_owner else None
        if problem is not None:
            return problem
        if allocation(claim) is None or not is_reserved_for(uid, claim):
            return (f"pod {meta['name']}({uid}) is not allowed to use resource claim {name}"
                    f"({claim['metadata'].get('uid', '')})")
    return _extended_problem(store, pod)


def _extended_problem(store: Store, pod: Obj) -> str | None:
    """The claim made for the pod's extended resources is prepared like the others (the kubelet
    adds it to the pod's claims from `status.extendedResourceClaimStatus`)."""
    name = extended_claim_name(pod)
    if name is None:
        return None
    meta = pod["metadata"]
    uid = meta.get("uid", "")
    claim = store.get("ResourceClaim", meta.get("namespace", "default"), name)
    if claim is None:
        return (f"failed to fetch ResourceClaim {name} referenced by pod {meta['name']}: "
                f'resourceclaims.resource.k8s.io "{name}" not found')
    if allocation(claim) is None or not is_reserved_for(uid, claim):
        return (f"pod {meta['name']}({uid}) is not allowed to use resource claim {name}"
                f"({claim['metadata'].get('uid', '')})")
    return None
