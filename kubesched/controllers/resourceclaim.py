"""The resource-claim controller (pkg/controller/resourceclaim), as kube-controller-manager runs it.

For a pod claim that names a ResourceClaimTemplate it makes the pod's own claim: the template's
spec, a name generated from `<pod>-<pod claim>-`, the pod as controlling owner (so the garbage
collector deletes it with the pod) and the `resource.kubernetes.io/pod-claim-name` annotation,
then records the name in the pod's `status.resourceClaimStatuses`, which is what lets the
scheduler go on with the pod. It keeps `status.reservedFor` true: a pod that is gone, replaced or
done is dropped from it, and a claim nobody uses any more is deallocated (its allocation cleared
and its delete-protection finalizer removed), so its devices are free again; a claim generated
for a pod that will not run is deleted. A pod bound to a node without the scheduler gets its
allocated claims reserved here. A pod whose claim cannot be made (its template is missing, or
the create is refused, by ResourceQuota for one) gets a `FailedResourceClaimCreation` event and is
retried with the work queue's backoff.
"""

from __future__ import annotations

import functools

from kubesched.api.dra.claims import (
    FINALIZER,
    POD_CLAIM_NAME_ANNOTATION,
    ClaimNameError,
    allocation,
    can_be_reserved,
    claim_name,
    extended_claim_name,
    is_for_pod,
    is_reserved_for,
    owning_pod,
    pod_claims,
    reserved_for,
    resolved_names,
)
from kubesched.api.objects import Obj, deep_copy, is_terminal, is_terminating
from kubesched.apiserver.errors import APIError, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.ratelimit import FailureBackoff
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent

SOURCE = "resource_claim"
MAX_BASE_LENGTH = 57  # room for the generator's five characters in a 63-character name


def _is_done(pod: Obj) -> bool:
    """isPodDone: none of its containers runs or ever will."""
    return is_terminal(pod) or (is_terminating(pod) and not (pod.get("spec") or {}).get("nodeName"))


class ResourceClaimController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.store = api.store
        self.queue = WorkQueue(clock, self._sync)
        self.backoff = FailureBackoff(clock, self.queue)
        self._users: dict[tuple[str, str], set[str]] = {}  # claim (ns, name) -> pods naming it
        self._owned: dict[str, set[tuple[str, str]]] = {}  # pod uid -> the claims it controls

    def start(self) -> None:
        for claim in self.store.list("ResourceClaim"):
            self._on_claim(WatchEvent("ADDED", "ResourceClaim", claim, None))
        for pod in self.store.list("Pod"):
            self._on_pod(WatchEvent("ADDED", "Pod", pod, None))
        self.store.watch(self._on_pod, {"Pod"})
        self.store.watch(self._on_claim, {"ResourceClaim"})

    # ---- events --------------------------------------------------------------------------------

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        claims = (pod.get("spec") or {}).get("resourceClaims")
        if not claims and not extended_claim_name(pod) and not (ev.old is not None and pod_claims(ev.old)):
            return
        namespace, name = pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]
        deleted = ev.type == DELETED
        names = resolved_names(pod)
        for claim in names:
            users = self._users.setdefault((namespace, claim), set())
            if deleted:
                users.discard(name)
            else:
                users.add(name)
        if deleted or _is_done(pod):
            for claim in names:
                self.queue.add(("claim", namespace, claim))
        if not deleted and self._needs_work(pod, claims or []):
            self.queue.add(("pod", namespace, name))

    def _needs_work(self, pod: Obj, claims: list[Obj]) -> bool:
        """podNeedsWork: a claim to make from a template, or, once the pod is bound, an allocated
        claim to reserve for it; most pod updates need neither."""
        if is_terminating(pod):
            return False
        namespace = pod["metadata"].get("namespace", "default")
        bound = (pod.get("spec") or {}).get("nodeName")
        for pod_claim in claims:
            try:
                name, check_owner = claim_name(pod, pod_claim)
            except ClaimNameError:
                return True
            if name is None:
                return False
            claim = self.store.get("ResourceClaim", namespace, name)
            if claim is None:
                return bool(pod_claim.get("resourceClaimTemplateName"))
            if check_owner and is_for_pod(pod, claim) is not None:
                return False
            if bound and allocation(claim) is not None and \
                    not is_reserved_for(pod["metadata"].get("uid", ""), claim) and can_be_reserved(claim):
                return True
        return False

    def _on_claim(self, ev: WatchEvent) -> None:
        claim = ev.obj
        namespace, name = claim["metadata"].get("namespace", "default"), claim["metadata"]["name"]
        owner = owning_pod(claim)[1]
        if owner:
            owned = self._owned.setdefault(owner, set())
            if ev.type == DELETED:
                owned.discard((namespace, name))
                if not owned:
                    del self._owned[owner]
            else:
                owned.add((namespace, name))
        if ev.type != DELETED:
            self.queue.add(("claim", namespace, name))
        for pod in sorted(self._users.get((namespace, name), ())):
            self.queue.add(("pod", namespace, pod))

    def _sync(self, key: tuple[str, str, str]) -> None:
        what, namespace, name = key
        if what == "pod":
            self._sync_pod(namespace, name)
        else:
            self._sync_claim(namespace, name)

    # ---- pods ------------------------------------------------------------------------------------

    def _sync_pod(self, namespace: str, name: str) -> None:
        pod = self.store.get("Pod", namespace, name)
        if pod is None or is_terminating(pod) or _is_done(pod):
            return
        made: dict[str, str] = {}
        for pod_claim in pod_claims(pod):
            try:
                self._handle_claim(pod, pod_claim, made)
            except _Failed as e:
                self.api.record_event(pod, "Warning", "FailedResourceClaimCreation",
                                      f"PodResourceClaim {pod_claim.get('name', '')}: {e}", source=SOURCE)
                self.backoff.retry(("pod", namespace, name))
                return
        self.backoff.forget(("pod", namespace, name))
        if made:
            def record(status: Obj) -> None:
                statuses = [s for s in status.get("resourceClaimStatuses") or () if s.get("name") not in made]
                status["resourceClaimStatuses"] = statuses + [
                    {"name": pc, "resourceClaimName": claim} for pc, claim in made.items()]
            try:
                pod = self.api.update_status("Pod", namespace, name, record)
            except APIError:
                return
        if not (pod.get("spec") or {}).get("nodeName"):
            return  # the scheduler reserves the claims of the pods it places
        for pod_claim in pod_claims(pod):
            try:
                claim_ref, check_owner = claim_name(pod, pod_claim)
            except ClaimNameError:
                return
            if claim_ref is None:
                continue
            claim = self.store.get("ResourceClaim", namespace, claim_ref)
            if claim is None or (check_owner and is_for_pod(pod, claim) is not None):
                return
            if allocation(claim) is not None and not is_reserved_for(pod["metadata"].get("uid", ""), claim) \
                    and can_be_reserved(claim):
                reference = {"resource": "pods", "name": name, "uid": pod["metadata"].get("uid", "")}
                try:
                    self.api.update_status("ResourceClaim", namespace, claim_ref, functools.partial(_reserve, reference=reference))
                except APIError:
                    return

    def _handle_claim(self, pod: Obj, pod_claim: Obj, made: dict[str, str]) -> None:
        namespace = pod["metadata"].get("namespace", "default")
        try:
            name, check_owner = claim_name(pod, pod_claim)
        except ClaimNameError:
            name, check_owner = "", False  # not created yet
        else:
            if name is None:
                return
            existing = self.store.get("ResourceClaim", namespace, name)
            if existing is not None and (not check_owner or is_for_pod(pod, existing) is None):
                return
        template_name = pod_claim.get("resourceClaimTemplateName")
        if not template_name:
            return
        claim = self._orphan(pod, pod_claim.get("name", ""))
        if claim is None:
            template = self.store.get("ResourceClaimTemplate", namespace, template_name)
            if template is None:
                raise _Failed(f'resource claim template "{template_name}": resourceclaimtemplate.resource.k8s.io '
                              f'"{template_name}" not found')
            try:
                claim = self.api.create(self._from_template(pod, pod_claim.get("name", ""), template), owned=True)
            except APIError as e:
                # Upstream names the claim it asked for, which has only a generateName: hence the blank.
                raise _Failed(f"create ResourceClaim : {e.message}") from None
        made[pod_claim.get("name", "")] = claim["metadata"]["name"]

    def _orphan(self, pod: Obj, pod_claim: str) -> Obj | None:
        """A claim made for this pod claim before its name reached the pod's status."""
        for namespace, name in sorted(self._owned.get(pod["metadata"].get("uid", ""), ())):
            claim = self.store.get("ResourceClaim", namespace, name)
            if claim is not None and \
                    (claim["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) == pod_claim:
                return claim
        return None

    @staticmethod
    def _from_template(pod: Obj, pod_claim: str, template: Obj) -> Obj:
        meta = pod["metadata"]
        base = f"{meta['name']}-{pod_claim}-"
        if len(base) > MAX_BASE_LENGTH:
            # Both names are cut in proportion, so a long pod name does not swallow the claim's.
            pod_name = meta["name"][:len(meta["name"]) * MAX_BASE_LENGTH // len(base)]
            base = f"{pod_name}-{pod_claim[:len(pod_claim) * MAX_BASE_LENGTH // len(base)]}"
        tmeta = ((template.get("spec") or {}).get("metadata") or {})
        annotations = dict(tmeta.get("annotations") or {})
        annotations[POD_CLAIM_NAME_ANNOTATION] = pod_claim
        claim_meta: Obj = {"generateName": base, "namespace": meta.get("namespace", "default"),
                           "annotations": annotations,
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                                "uid": meta.get("uid"), "controller": True,
                                                "blockOwnerDeletion": True}]}
        if tmeta.get("labels"):
            claim_meta["labels"] = dict(tmeta["labels"])
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": claim_meta,
                "spec": deep_copy((template.get("spec") or {}).get("spec") or {})}

    # ---- claims ----------------------------------------------------------------------------------

    def _sync_claim(self, namespace: str, name: str) -> None:
        claim = self.store.get("ResourceClaim", namespace, name)
        if claim is None:
            return
        users = reserved_for(claim)
        valid = [r for r in users if r.get("apiGroup") or r.get("resource") != "pods" or self._pod_uses(namespace, r)]
        has_finalizer = FINALIZER in (claim["metadata"].get("finalizers") or ())
        try:
            if len(valid) < len(users):
                def keep(status: Obj) -> None:
                    if valid:
                        status["reservedFor"] = valid
                    else:
                        status.pop("reservedFor", None)
                        if has_finalizer:
                            status.pop("allocation", None)  # deallocate: the devices are free again
                claim = self.api.update_status("ResourceClaim", namespace, name, keep)
                if FINALIZER in (claim["metadata"].get("finalizers") or ()) and allocation(claim) is None:
                    claim = self._drop_finalizer(claim)
            elif has_finalizer and is_terminating(claim) and not valid:
                if allocation(claim) is not None:
                    claim = self.api.update_status("ResourceClaim", namespace, name,
                                                   lambda s: s.pop("allocation", None))
                claim = self._drop_finalizer(claim)
            if not valid:
                self._delete_if_unneeded(claim)
        except NotFoundError:
            return
        except APIError:
            self.queue.add_after(("claim", namespace, name), 1.0)

    def _pod_uses(self, namespace: str, reference: Obj) -> bool:
        pod = self.store.get("Pod", namespace, reference.get("name", ""))
        return pod is not None and pod["metadata"].get("uid") == reference.get("uid") and not _is_done(pod)

    def _drop_finalizer(self, claim: Obj) -> Obj:
        claim = deep_copy(claim)
        claim["metadata"]["finalizers"] = [f for f in claim["metadata"].get("finalizers") or () if f != FINALIZER]
        if not claim["metadata"]["finalizers"]:
            del claim["metadata"]["finalizers"]
        return self.api.update(claim)

    def _delete_if_unneeded(self, claim: Obj) -> None:
        """A generated claim whose pod was replaced or will not run goes."""
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        pod = self.store.get("Pod", claim["metadata"].get("namespace", "default"), pod_name)
        if pod is not None and (pod["metadata"].get("uid") != pod_uid or _is_done(pod)):
            self.api.delete("ResourceClaim", claim["metadata"].get("namespace", "default"), claim["metadata"]["name"])


class _Failed(Exception):
    pass


def _reserve(status: Obj, reference: Obj) -> None:
    status["reservedFor"] = [*(status.get("reservedFor") or ()), reference]
