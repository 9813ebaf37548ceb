"""The in-process API: every component changes the cluster only through these calls.

Each call does what the real API server does for it — defaulting, admission, metadata
(uid, creationTimestamp, generation), graceful deletion, the pods/binding and pods/status
subresources — and the store then bumps resourceVersion and notifies watchers. The HTTP
server and the live mode are thin layers over this class.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, overload

from kubesched.api.crd import definition as crd_definition
from kubesched.api.dra.claims import FINALIZER as DRA_FINALIZER
from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.objects import (
    DEFAULT_EPOCH,
    Obj,
    Shared,
    deep_copy,
    merge_patch,
    namespaced,
    set_condition,
    shared_condition,
)
from kubesched.api.qos import qos_class
from kubesched.api.restmapping import qualified_resource
from kubesched.api.served import resource_kind
from kubesched.api.validation.checker import Checker
from kubesched.api.validation.objects import claim_status_problems, object_problems
from kubesched.apiserver import admission, admissionpolicy, dra, dragates
from kubesched.apiserver import eviction as eviction_subresource
from kubesched.apiserver.caller import POD_ACTIONS, SCHEDULER_USER, Caller
from kubesched.apiserver.customresources import CustomResources
from kubesched.apiserver.defaults import set_defaults
from kubesched.apiserver.errors import (
    AlreadyExists,
    BadRequest,
    ConflictError,
    Invalid,
    NotFoundError,
    conflict,
)
from kubesched.apiserver.podupdate import pod_update_problems
from kubesched.apiserver.reads import StoreReads
from kubesched.apiserver.scale import ScaleWrite, replicas_problem
from kubesched.apiserver.serviceips import ServiceIPs
from kubesched.apiserver.storage import STORAGE_KINDS, default_storage_class
from kubesched.apiserver.webhookadmission import WebhookAdmission
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.store.base import Conflict, NotFound, Store

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATED_PREFIX = 58  # 63 - 5 random characters
DELETE_ATTEMPTS = 5  # a deletion judged again on a changed object before it gives up with a Conflict
# An object being deleted stays, with its deletionTimestamp, while it has a finalizer its owner
# will remove: the garbage collector's (metav1.FinalizerOrphanDependents, FinalizerDeleteDependents),
# a ResourceClaim's delete protection (the resource-claim controller), a CRD's cleanup, every
# finalizer that is not Kubernetes' own (an operator's, which the operator removes, as an operator
# author tests), and those of Kubernetes' own whose controller runs here and said so (`honour`).
# Kubernetes' other finalizers (kubernetes.io/pvc-protection, batch.kubernetes.io/job-tracking, ...
# where their controller does not run) are not waited for, as if their controller had let the
# object go at once.
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
GC_FINALIZERS = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)
WAITED_FINALIZERS = (*GC_FINALIZERS, DRA_FINALIZER, crd_definition.CLEANUP_FINALIZER)


def waited(finalizer: str, honoured: Collection[str] = ()) -> bool:
    """Whether an object with `finalizer` stays until it is removed (see WAITED_FINALIZERS);
    `honoured`: Kubernetes' own finalizers whose controllers run."""
    if finalizer in WAITED_FINALIZERS or finalizer in honoured:
        return True
    domain = finalizer.partition("/")[0] if "/" in finalizer else ""
    return not (domain in ("kubernetes.io", "k8s.io") or domain.endswith((".kubernetes.io", ".k8s.io"))
                or domain.startswith(("external-attacher", "external-provisioner", "external-resizer")))


class APIServer(StoreReads):
    def __init__(self, store: Store, now: Callable[[], float], seed: int | None = 0,
                 epoch: datetime = DEFAULT_EPOCH, observer: Observer = NULL_OBSERVER,
                 checker: type[Checker] = Checker, features: FeatureGates = DEFAULT_FEATURE_GATES,
                 service_cidr: str | None = None) -> None:
        """`observer` is told of every Eviction request and its answer; `checker` validates what is
        written (with the rules of the simulation's annotations, when the cluster gives them);
        `features` decide which gated fields a write keeps. `service_cidr`: Services get cluster IPs
        and node ports from it (serve); without it they keep what they say (an export's own range).
        `seed` None (a server whose store outlives it) draws UIDs and generated names from the
        system's randomness and numbers Events from the wall clock, as kube-apiserver does, so a
        restarted server never repeats a name it gave before."""
        self.store = store
        self.now = now
        self.epoch = epoch
        # UIDs come from their own RNG so that adding objects never shifts tie-breaking draws.
        self._uid_rng = random.Random(f"uid-{seed}" if seed is not None else None)
        self._name_rng = random.Random(f"names-{seed}" if seed is not None else None)  # generateName suffixes
        self._event_seq = 0 if seed is not None else time.time_ns()
        self.observer = observer
        self.checker = checker
        self.features = features  # the gates the resource.k8s.io strategies drop fields by
        # DRAExtendedResource: ResourceQuota counts claims' devices in extended-resource names too.
        self.dra_extended_resource = features.enabled("DRAExtendedResource")
        self.custom = CustomResources(store)
        self.policies = admissionpolicy.ValidatingAdmissionPolicies(store, self.custom)
        self.service_ips = ServiceIPs(store, service_cidr) if service_cidr else None
        self.webhooks: WebhookAdmission | None = None  # serve's admission webhooks (server.webhooks)
        self.honoured: set[str] = set()  # Kubernetes' own finalizers whose controllers run (see honour)
        for pc in admission.system_priority_classes():
            if store.get("PriorityClass", "", pc["metadata"]["name"]) is None:
                self._stamp_new(pc)
                store.create(pc)

    def honour(self, finalizer: str) -> None:
        """A controller that removes `finalizer` runs: objects being deleted now wait for it, and
        admission adds the storage protection finalizers as StorageObjectInUseProtection does."""
        self.honoured.add(finalizer)

    # ---- helpers ---------------------------------------------------------------------------

    def _new_uid(self) -> str:
        return _uuid4(self._uid_rng.getrandbits(128))

    def _stamp_new(self, obj: Obj) -> None:
        meta = obj.setdefault("metadata", {})
        if not meta.get("uid"):
            meta["uid"] = self._new_uid()
        meta.setdefault("creationTimestamp", self.timestamp())
        meta.setdefault("generation", 1)

    # ---- writes ----------------------------------------------------------------------------

    def create(self, obj: Obj, warn: Callable[[str], None] | None = None, existing: bool = False,
               dry_run: bool = False, validated: bool = False, owned: bool = False,
               caller: Caller | None = None, defaulted: bool = False) -> Obj:
        """Admit and store a copy of `obj`; raises an APIError subclass when refused. `warn`
        makes pod admission lenient (see admission.admit_pod): for pods a snapshot shows running.
        `existing` is for an object the exported cluster holds already: it was admitted when it
        was made, so LimitRanger and ResourceQuota leave it as it is (the quota controller counts it).
        `dry_run` (dryRun=All) defaults, validates and admits, but neither charges quota nor stores.
        `validated`: the input's checks (input.validation, a superset of this server's) passed it
        already, so validating it again before admission would only repeat them. `owned`: the
        caller hands `obj` over and never reads it again, so it is stored as it is, not copied (a
        large input would otherwise be held twice for the whole run). `caller`: who asks, for
        admission (see caller.py). `defaulted`: the caller defaulted `obj` as decoding does (the
        REST handler, before it records managed fields), so only a generated name asks again."""
        if not owned:
            obj = deep_copy(obj)
        if not obj.get("kind"):
            raise BadRequest("Object 'Kind' is missing")
        kind = resource_kind(obj)  # a custom resource is never taken for the built-in kind it shares a name with
        meta = obj.setdefault("metadata", {})
        crd = self.custom.definition_of(obj)
        if crd_definition.namespaced(crd) if crd is not None else namespaced(kind):
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(kind, meta.get("namespace", ""), meta["generateName"])
            defaulted = False  # a Namespace is labelled with its name
        if not meta.get("name"):  # ValidateObjectMeta's first rule, whatever the kind
            raise Invalid.of(kind, _group(obj), "", ["metadata.name: Required value: name or generateName is required"])
        if not defaulted:
            set_defaults(obj)  # as decoding the request does; defaults are valid, so `validated` holds
        if kind == "Job":  # its generated selector names the uid, so the uid comes first
            meta["uid"] = meta.get("uid") or self._new_uid()
            admission.generate_job_selector(obj)
            validated = False  # labelled since
        if kind in STORAGE_KINDS:
            default_storage_class(obj, self.store)
            validated = False
        elif kind == "LimitRange":
            validated = False  # the defaults set_defaults derived are checked against its min and max
        elif kind in dra.KINDS:
            dra.default(obj)
            stored = obj if existing else None  # what a snapshot holds is stored as it is
            dra.drop_disabled_fields(obj, stored, self.features)
            dragates.prepare(obj, stored, self.features, self.timestamp())
            if problems := dra.selector_problems(obj, stored, self.features):
                raise Invalid.of(kind, _group(obj), meta.get("name", ""), problems)
        if not validated:
            self._validate(obj)
        # What a cluster exported was admitted there: kept as it is.
        if crd is not None and not existing:
            self.custom.prepare(obj, crd, None)
        elif crd_definition.is_crd(obj) and not existing:
            self.custom.prepare_definition(obj, None)
        if kind in dra.KINDS and not existing and (problems := dra.admin_access_problems(obj, self.store)):
            raise Invalid.of(kind, _group(obj), meta.get("name", ""), problems)
        if kind in admission.STORAGE_PROTECTION and not existing:
            admission.protect_storage_object(obj, self.honoured)
        if kind == "Service" and self.service_ips is not None and not existing:
            self.service_ips.allocate(obj)
        if kind in ("PodDisruptionBudget", "ResourceQuota"):
            obj["status"] = {}  # status is its controller's to write (PrepareForCreate)
        if kind == "Pod":
            if admission.admit_pod(obj, self.store, warn, existing):
                self._validate(obj)  # LimitRanger's defaults may leave a request above its limit
        elif kind == "PriorityClass":
            admission.admit_priority_class(obj, self.store)
        if not existing and (mutated := self._mutate_by_webhooks("CREATE", obj, None, caller)) is not obj:
            # What a webhook changed goes through the built-in plugins again (they are reinvoked
            # after a webhook's change) and the definition's schema.
            obj, meta = mutated, mutated["metadata"]
            if kind == "Pod" and admission.admit_pod(obj, self.store, warn, existing):
                self._validate(obj)
            if crd is not None:
                self.custom.prepare(obj, crd, None)
        if kind == "Pod":
            obj["status"]["qosClass"] = qos_class(obj)
        self._stamp_new(obj)
        if kind == admissionpolicy.POLICY:
            self.policies.observe(obj)
        if not existing:
            self._admit("CREATE", obj, None, caller)
            name = meta.get("name", "")
            if self.store.get(kind, meta.get("namespace", ""), name) is not None:
                raise AlreadyExists(f'{kind} "{name}" already exists')  # before quota charges it
            if dry_run:
                return obj
            admission.validate_new(obj, self.store, self.dra_extended_resource)
        try:
            return self.store.create(obj)
        except Conflict as e:
            raise AlreadyExists(str(e)) from None

    # ---- admission webhooks: MutatingAdmissionWebhook after the built-in mutating plugins and
    # before validation; ValidatingAdmissionWebhook after validation, before the store ----------

    @overload
    def _mutate_by_webhooks(self, operation: str, obj: Obj, old: Obj | None, caller: Caller | None,
                            subresource: str = "") -> Obj: ...

    @overload
    def _mutate_by_webhooks(self, operation: str, obj: None, old: Obj, caller: Caller | None,
                            subresource: str = "") -> None: ...

    def _mutate_by_webhooks(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
                            subresource: str = "") -> Obj | None:
        """Mutating admission, for every verb: `obj` as the mutating webhooks leave it (a DELETE's
        None: they are told of it, and change nothing). What one changed of an object being
        stored is defaulted and validated again, as kube-apiserver decodes a patched object with
        its defaults before validation; a Binding or an Eviction is taken as it is."""
        if self.webhooks is None or _admitted(caller):
            return obj
        if caller is not None and caller.scale is not None and obj is not None and old is not None:
            return self._mutate_scale(obj, old, caller.scale, caller)
        mutated = self.webhooks.mutate(operation, obj, old, caller, subresource)
        if obj is None or mutated is None or mutated is obj or mutated == obj:
            return obj
        if subresource in POD_ACTIONS:
            return mutated
        set_defaults(mutated)
        if operation == "CREATE":
            self._validate(mutated)
        return mutated

    def _mutate_scale(self, obj: Obj, old: Obj, write: ScaleWrite, caller: Caller) -> Obj:
        """A scale write's mutating webhooks see the Scale it carries (and the object's as it was);
        the replicas of the Scale they leave, validated as a Scale, are what `obj` gets."""
        assert self.webhooks is not None
        scale = self.webhooks.mutate("UPDATE", write.requested, write.of(old), caller, "scale")
        if scale is None or scale == write.requested:
            return obj
        if problem := replicas_problem(scale):
            raise Invalid.of("Scale", "autoscaling", obj["metadata"].get("name", ""), [problem])
        return write.with_replicas(obj, (scale.get("spec") or {}).get("replicas", 0))

    def _generate_name(self, kind: str, namespace: str, prefix: str) -> str:
        """names.SimpleNameGenerator: the prefix (cut to leave room) plus five random characters
        from the alphabet utilrand uses (no vowels, no confusable digits)."""
        while True:
            suffix = "".join(self._name_rng.choice(NAME_ALPHABET) for _ in range(5))
            name = prefix[:MAX_GENERATED_PREFIX] + suffix
            if self.store.get(kind, namespace if namespaced(kind) else "", name) is None:
                return name

    def _validate(self, obj: Obj, more: list[str] | None = None) -> None:
        """The API server's validation: a malformed object is refused with 422 and every problem
        (`more`: those an update's own rules found)."""
        problems = object_problems(obj, self.checker) + (more or [])
        if problems:
            raise Invalid.of(obj["kind"], _group(obj), obj["metadata"].get("name", ""), problems)

    def update(self, obj: Obj, *, status_only: bool = False, caller: Caller | None = None,
               dry_run: bool = False) -> Obj:
        """Replace an object; the spec is kept from the stored copy when `status_only` (pods/status).
        `dry_run` validates and admits the update, and answers what would be stored."""
        kind = resource_kind(obj)
        meta = obj["metadata"]
        current = self.get(kind, meta.get("namespace", ""), meta["name"])
        new = deep_copy(obj)
        if status_only:
            new = {**current, "status": new.get("status", {})}
            new["metadata"] = dict(current["metadata"])
            new = self._status_by_webhooks(current, new, caller)
            self._prepare_status(current, new)
        else:
            set_defaults(new)
            new = self._mutate_by_webhooks("UPDATE", new, current, caller)
            self._validate_update(current, new)
        if not self._prepare_custom(current, new, status_only) and not status_only:
            if kind == "Pod":
                self._check_pod_update(current, new)
            self._bump_generation(current, new)
        self._admit("UPDATE", new, current, caller, "status" if status_only else "")
        if dry_run:
            return new
        return self._finish_deletion(self._write(new, meta.get("resourceVersion")))

    def _status_by_webhooks(self, current: Obj, new: Obj, caller: Caller | None) -> Obj:
        """A status write's mutating webhooks: only the status they return is kept."""
        mutated = self._mutate_by_webhooks("UPDATE", new, current, caller, "status")
        return new if mutated is new else {**new, "status": mutated.get("status", {})}

    def _prepare_custom(self, current: Obj, new: Obj, status_only: bool) -> bool:
        """A custom object's or a definition's update: defaulted, pruned and validated as on
        create. True when it was one (its generation is then counted its own way)."""
        crd = self.custom.definition_of(new)
        if crd is not None:
            self.custom.prepare(new, crd, current)
            if not status_only:
                self.custom.bump_generation(crd, current, new)
            return True
        if crd_definition.is_crd(new) and not status_only:
            self.custom.prepare_definition(new, current)
        return False

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, *, status_only: bool = False,
              caller: Caller | None = None) -> Obj:
        current = self.get(kind, namespace, name)
        new = merge_patch(current, patch)
        new["kind"], new["metadata"] = current["kind"], {**merge_patch(current["metadata"], patch.get("metadata", {}))}
        if status_only:
            new = {**current, "status": new.get("status", {}), "metadata": dict(current["metadata"])}
            new = self._status_by_webhooks(current, new, caller)
            self._prepare_status(current, new)
        else:
            set_defaults(new)
            new = self._mutate_by_webhooks("UPDATE", new, current, caller)
            self._validate_update(current, new)
            if kind == "Pod":
                self._check_pod_update(current, new)
            self._bump_generation(current, new)
        self._admit("UPDATE", new, current, caller, "status" if status_only else "")
        return self._finish_deletion(self._write(new, None))

    # ---- validating admission --------------------------------------------------------------

    def _admit(self, operation: str, new: Obj | None, old: Obj | None, caller: Caller | None,
               subresource: str = "") -> None:
        """Validating admission, where kube-apiserver runs it: after the object's own validation
        and the mutating plugins, before ResourceQuota and the write (`subresource`: the one written
        through, else the caller's): ValidatingAdmissionPolicy, then the validating webhooks. A
        scale write is judged as the Scales of the object, new and old, as toScaleUpdateValidation
        hands them over."""
        if _admitted(caller):
            return
        subresource = subresource or (caller.subresource if caller is not None else "")
        if caller is not None and caller.scale is not None:  # the Scales of the object, new and old
            new = caller.scale.of(new) if new is not None else None
            old = caller.scale.of(old) if old is not None else None
        self.policies.validate(operation, new, old, caller, subresource)
        if self.webhooks is not None:
            self.webhooks.validate(operation, new, old, caller, subresource)

    def _validate_update(self, current: Obj, new: Obj) -> None:
        """An update's validation: the object's own, and what its kind lets an update change."""
        if current["metadata"].get("deletionTimestamp"):  # ValidateObjectMetaUpdate
            had = set(current["metadata"].get("finalizers") or ())
            added = [f for f in new["metadata"].get("finalizers") or () if f not in had]
            if added:
                raise Invalid.of(new["kind"], _group(new), new["metadata"].get("name", ""), [
                    "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, "
                    "found new finalizers []string{" + ", ".join(f'"{f}"' for f in added) + "}"])
        if new.get("kind") in dra.KINDS:
            dra.default(new)
            dra.drop_disabled_fields(new, current, self.features)
            dragates.prepare(new, current, self.features, self.timestamp())
            self._validate(new, dra.update_problems(current, new) + dra.selector_problems(new, current, self.features))
        else:
            self._validate(new)
        if new.get("kind") == "Service" and self.service_ips is not None:
            self.service_ips.allocate(new, current)

    def _prepare_status(self, current: Obj, new: Obj) -> None:
        """A status write as the status strategy takes it: gated fields dropped, then validated."""
        if new.get("kind") in dra.KINDS:
            dra.drop_disabled_fields(new, current, self.features)
        if new.get("kind") == "ResourceClaim":
            dragates.prepare_claim_status(new.get("status") or {}, current.get("status") or {}, self.features)
        self._validate_status(current, new)

    @staticmethod
    def _validate_status(current: Obj, new: Obj) -> None:
        """A status write's validation, for the kinds whose status the API server checks."""
        if new.get("kind") == "ResourceClaim" and (problems := claim_status_problems(current, new)):
            raise Invalid.of("ResourceClaim", _group(new), new["metadata"].get("name", ""), problems)

    def _finish_deletion(self, obj: Obj) -> Obj:
        """An object being deleted goes once its last garbage-collector finalizer is removed (a pod
        still in its grace period stays for its kubelet)."""
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or any(waited(f, self.honoured) for f in meta.get("finalizers") or ()):
            return obj
        if obj["kind"] == "Pod" and meta.get("deletionGracePeriodSeconds") and obj["spec"].get("nodeName") \
                and (obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            return obj
        try:
            self.store.delete(resource_kind(obj), meta.get("namespace", ""), meta["name"])
        except NotFound as e:
            raise NotFoundError(str(e)) from None
        return obj

    def _bump_generation(self, current: Obj, new: Obj) -> None:
        """metadata.generation counts spec changes, so controllers can report observedGeneration."""
        if new.get("spec") != current.get("spec"):
            new["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
        if new.get("kind") == admissionpolicy.POLICY:
            self.policies.observe(new)

    def update_status(self, kind: str, namespace: str, name: str, mutate: Callable[[Obj], Any],
                      caller: Caller | None = None) -> Obj:
        """Read-modify-write of .status: `mutate` edits a copy; returns the stored object."""
        current = self.get(kind, namespace, name)
        new = {**current, "metadata": dict(current["metadata"]), "status": deep_copy(current.get("status", {}))}
        if mutate(new["status"]) is False:
            return current
        new = self._status_by_webhooks(current, new, caller)
        self._prepare_status(current, new)
        self._admit("UPDATE", new, current, caller, "status")
        return self._write(new, None)

    def _write(self, obj: Obj, expect_rv: str | None) -> Obj:
        try:
            return self.store.update(obj, expect_rv)
        except Conflict:
            raise conflict(self._qualified_resource(obj), obj["metadata"]["name"]) from None
        except NotFound as e:
            raise NotFoundError(str(e)) from None

    @staticmethod
    def _check_pod_update(current: Obj, new: Obj) -> None:
        """A pod's spec is fixed but for what ValidatePodUpdate lets an update change."""
        if problems := pod_update_problems(current, new):
            raise Invalid.of("Pod", "", current["metadata"]["name"], problems)

    def bind(self, namespace: str, name: str, node_name: str, caller: Caller | None = None) -> Obj:
        """POST pods/binding: set spec.nodeName once; PodScheduled=True; clears the nomination.
        Admitted first, as the Binding the scheduler sends (`caller` None: the scheduler's own)."""
        if self._admission_configured():
            binding = self._admit_action("binding", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
                "target": {"kind": "Node", "name": node_name}}, caller or Caller(SCHEDULER_USER))
            target = binding.get("target")
            if isinstance(target, dict) and isinstance(target.get("name"), str) and target["name"]:
                node_name = target["name"]  # as a mutating webhook left it
        pod = self.get("Pod", namespace, name)
        if pod["metadata"].get("deletionTimestamp"):
            raise ConflictError(f"pod {name} is being deleted, cannot be assigned to a host")
        if pod["spec"].get("schedulingGates"):
            raise ConflictError(f"pod {name} has non-empty .spec.schedulingGates")
        if pod["spec"].get("nodeName"):
            raise ConflictError(f"pod {name} is already assigned to node \"{pod['spec']['nodeName']}\"")
        new = {**pod, "metadata": dict(pod["metadata"]), "spec": {**pod["spec"], "nodeName": node_name}}
        status = new["status"] = deep_copy(pod.get("status", {}))
        status.pop("nominatedNodeName", None)
        set_condition(status, shared_condition("PodScheduled", "True", self.timestamp()))
        return self._write(new, None)

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None,
               propagation_policy: str | None = None, caller: Caller | None = None,
               dry_run: bool = False) -> Obj | None:
        """DELETE with its options: pods bound to a node terminate gracefully; `propagation_policy`
        Orphan or Foreground leaves the object, with a deletionTimestamp and the garbage
        collector's finalizer, until the collector has orphaned or deleted its dependents
        (Background, the default, deletes it at once and the collector follows).

        Returns the object in its terminating form, or None once it is gone (or, with `dry_run`,
        once admission has let the delete through).
        """
        obj = self._admit_delete(kind, namespace, name, caller)
        if dry_run:
            return None
        meta = obj["metadata"]
        finalizers = _gc_finalizers(meta.get("finalizers") or [], propagation_policy)
        if kind == "Pod" and obj["spec"].get("nodeName") and obj.get("status", {}).get("phase") not in (
            "Succeeded", "Failed"
        ):
            if grace_period is None:
                grace_period = obj["spec"].get("terminationGracePeriodSeconds", 30)
            if grace_period > 0:
                # A second delete may only shorten the grace period.
                if meta.get("deletionTimestamp") and grace_period >= meta.get("deletionGracePeriodSeconds", 0):
                    return obj
                return self._mark_deleted(obj, grace_period, finalizers)
        if any(waited(f, self.honoured) for f in finalizers):
            return self._mark_deleted(obj, 0, finalizers)
        ns = namespace if namespaced(kind) else ""
        try:
            self.store.delete(kind, ns, name)
        except NotFound as e:
            raise NotFoundError(str(e)) from None
        return None

    def _admit_delete(self, kind: str, namespace: str, name: str, caller: Caller | None) -> Obj:
        """The object as it is once its deletion is admitted: judged again when it changed while a
        webhook was called (serve goes on meanwhile), as store.Delete retries its validation."""
        obj = self.get(kind, namespace, name)
        for _ in range(DELETE_ATTEMPTS):
            self._mutate_by_webhooks("DELETE", None, obj, caller)
            self._admit("DELETE", None, obj, caller)
            if self.webhooks is None:
                return obj
            now = self.get(kind, namespace, name)
            if now["metadata"].get("resourceVersion") == obj["metadata"].get("resourceVersion"):
                return now
            obj = now
        raise conflict(self._qualified_resource(obj), name)

    def _qualified_resource(self, obj: Obj) -> str:
        """The resource storing `obj`, qualified by its group, as error messages name it."""
        crd = self.custom.definition_of(obj)
        if crd is None:
            return qualified_resource(resource_kind(obj))
        return f"{crd_definition.plural(crd)}.{crd_definition.group(crd)}"

    def _mark_deleted(self, obj: Obj, grace: int, finalizers: list[str]) -> Obj:
        meta = dict(obj["metadata"])
        if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds") == grace \
                and meta.get("finalizers", []) == finalizers:
            return obj
        if not meta.get("deletionTimestamp") or grace < meta.get("deletionGracePeriodSeconds", 0):
            meta["deletionTimestamp"] = self.timestamp(self.now() + grace)
        meta["deletionGracePeriodSeconds"] = grace
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        return self._write({**obj, "metadata": meta}, None)

    def evict(self, namespace: str, name: str, eviction: Obj | None = None, requester: str = "",
              caller: Caller | None = None) -> Obj:
        """POST pods/eviction (policy/v1 or v1beta1 Eviction); see apiserver.eviction. Admitted as
        a CREATE of pods/eviction (`caller` None: a component inside the process), the Eviction
        decoded into the subresource's own kind, policy/v1 (v1beta1's has the same fields)."""
        def admit(body: Obj | None) -> Obj:
            meta = (body or {}).get("metadata")
            return self._admit_action("eviction", {
                **(body or {}), "apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, **(meta if isinstance(meta, dict) else {}), "namespace": namespace}},
                caller)

        return eviction_subresource.evict(self, namespace, name, eviction, requester,
                                          admit if self._admission_configured() else None)

    def _admission_configured(self) -> bool:
        """Whether a policy or webhook may judge a write (simulate's writes skip the work when not)."""
        return self.policies.active() or (self.webhooks is not None and self.webhooks.active())

    def _admit_action(self, subresource: str, obj: Obj, caller: Caller | None) -> Obj:
        """A Binding's or an Eviction's admission (CREATE of pods/<subresource>): the mutating
        webhooks, then policies and validating webhooks; the object as the webhooks left it."""
        obj = self._mutate_by_webhooks("CREATE", obj, None, caller, subresource)
        self._admit("CREATE", obj, None, caller, subresource)
        return obj

    def record_event(self, involved: Obj, etype: str, reason: str, message: str,
                     source: str = "default-scheduler") -> Obj:
        """Create a core/v1 Event about `involved`, as an EventRecorder would."""
        self._event_seq += 1
        meta = involved["metadata"]
        ns = meta.get("namespace", "default")
        now = self.timestamp()
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{self._event_seq:016x}", "namespace": ns},
            "involvedObject": {"kind": involved["kind"], "namespace": meta.get("namespace"),
                               "name": meta["name"], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "type": etype,
            "reason": reason,
            "message": message,
            "source": _event_source(source),
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "eventTime": _micro_time(now),
            "reportingComponent": source,
        }
        # Events are stored like any object, so watchers (results, kubectl) see them in order.
        event["metadata"]["creationTimestamp"] = now
        event["metadata"]["uid"] = self._new_uid()
        return self.store.create(event)


def _group(obj: Obj) -> str:
    """The API group of an object's apiVersion ("" for the core group)."""
    api_version = obj.get("apiVersion")
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


@functools.lru_cache(maxsize=64)
def _event_source(component: str) -> Shared:
    """An Event's source: one object for all the Events a component records."""
    return Shared(component=component)


@functools.lru_cache(maxsize=16)
def _micro_time(stamp: str) -> str:
    """`stamp` as a MicroTime, which events.k8s.io/v1 requires: one text for all the Events of
    that second (a large run records one per pod)."""
    return stamp.replace("Z", ".000000Z")


def _uuid4(bits: int) -> str:
    """str(uuid.UUID(int=bits, version=4)) without building the UUID (a write path cost)."""
    bits = (bits & ~(0xC000 << 48) | 0x8000 << 48) & ~(0xF000 << 64) | 4 << 76
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _gc_finalizers(finalizers: list[str], policy: str | None) -> list[str]:
    """The finalizers a delete leaves (deletionFinalizersForGarbageCollection): Orphan asks for the
    orphan finalizer, Foreground for foregroundDeletion, Background for neither; without a
    policy the object keeps what it has."""
    if policy is None:
        return list(finalizers)
    wanted = {"Orphan": ORPHAN_FINALIZER, "Foreground": FOREGROUND_FINALIZER}.get(policy)
    kept = [f for f in finalizers if f not in GC_FINALIZERS]
    return kept + [wanted] if wanted else kept


def _admitted(caller: Caller | None) -> bool:
    """Whether the write is made on behalf of a request admission has judged already."""
    return caller is not None and caller.admitted
