"""The in-process API: every component changes the cluster only through these calls.

Each call does what the real API server does for it — defaulting, admission, metadata
(uid, creationTimestamp, generation), graceful deletion, the pods/binding and pods/status
subresources — and the store then bumps resourceVersion and notifies watchers. The HTTP
server and the live mode are thin layers over this class.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubesched.api.objects import (
    DEFAULT_EPOCH,
    Obj,
    deep_copy,
    format_time,
    merge_patch,
    namespaced,
    parse_time,
    set_condition,
)
from kubesched.api.qos import qos_class
from kubesched.api.validation import object_problems
from kubesched.apiserver import admission
from kubesched.apiserver import eviction as eviction_subresource
from kubesched.apiserver.errors import AlreadyExists, BadRequest, ConflictError, Invalid, NotFoundError
from kubesched.store.base import Conflict, NotFound, Store

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATED_PREFIX = 58  # 63 - 5 random characters


class APIServer:
    def __init__(self, store: Store, now: Callable[[], float], seed: int = 0,
                 epoch: datetime = DEFAULT_EPOCH) -> None:
        self.store = store
        self.now = now
        self.epoch = epoch
        # UIDs come from their own RNG so that adding objects never shifts tie-breaking draws.
        self._uid_rng = random.Random(f"uid-{seed}")
        self._name_rng = random.Random(f"names-{seed}")  # generateName suffixes
        self._event_seq = 0
        self.evictions: list[Obj] = []  # every pods/eviction request with its answer, in order
        for pc in admission.system_priority_classes():
            self._stamp_new(pc)
            store.create(pc)

    # ---- helpers ---------------------------------------------------------------------------

    def timestamp(self, seconds: float | None = None) -> str:
        return format_time(self.epoch, self.now() if seconds is None else seconds)

    def seconds(self, stamp: str) -> float:
        """A timestamp the API wrote, as seconds of virtual time."""
        return (parse_time(stamp) - self.epoch).total_seconds()

    def _stamp_new(self, obj: Obj) -> None:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.UUID(int=self._uid_rng.getrandbits(128), version=4)))
        meta.setdefault("creationTimestamp", self.timestamp())
        meta.setdefault("generation", 1)

    def get(self, kind: str, namespace: str, name: str) -> Obj:
        obj = self.store.get(kind, namespace if namespaced(kind) else "", name)
        if obj is None:
            raise NotFoundError(f'{kind.lower()}s "{name}" not found')
        return obj

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        return list(self.store.list(kind, namespace))

    # ---- writes ----------------------------------------------------------------------------

    def create(self, obj: Obj, warn: Callable[[str], None] | None = None) -> Obj:
        """Admit and store a copy of `obj`; raises an APIError subclass when refused. `warn`
        makes pod admission lenient (see admission.admit_pod): for pods a snapshot shows running."""
        obj = deep_copy(obj)
        kind = obj.get("kind")
        if not kind:
            raise BadRequest("Object 'Kind' is missing")
        meta = obj.setdefault("metadata", {})
        if namespaced(kind):
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(kind, meta.get("namespace", ""), meta["generateName"])
        self._validate(obj)
        if kind == "PodDisruptionBudget":
            obj["status"] = {}  # status is the disruption controller's to write (PrepareForCreate)
        if kind == "Pod":
            admission.admit_pod(obj, self.store, warn)
            obj["status"]["qosClass"] = qos_class(obj)
        elif kind == "PriorityClass":
            admission.admit_priority_class(obj, self.store)
        self._stamp_new(obj)
        try:
            return self.store.create(obj)
        except Conflict as e:
            raise AlreadyExists(str(e)) from None

    def _generate_name(self, kind: str, namespace: str, prefix: str) -> str:
        """names.SimpleNameGenerator: the prefix (cut to leave room) plus five random characters
        from the alphabet utilrand uses (no vowels, no confusable digits)."""
        while True:
            suffix = "".join(self._name_rng.choice(NAME_ALPHABET) for _ in range(5))
            name = prefix[:MAX_GENERATED_PREFIX] + suffix
            if self.store.get(kind, namespace if namespaced(kind) else "", name) is None:
                return name

    @staticmethod
    def _validate(obj: Obj) -> None:
        """The API server's validation: a malformed object is refused with 422 and every problem."""
        problems = object_problems(obj)
        if problems:
            detail = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
            raise Invalid(f'{obj["kind"]} "{obj["metadata"].get("name", "")}" is invalid: {detail}')

    def update(self, obj: Obj, *, status_only: bool = False) -> Obj:
        """Replace an object; the spec is kept from the stored copy when `status_only` (pods/status)."""
        kind = obj["kind"]
        meta = obj["metadata"]
        current = self.get(kind, meta.get("namespace", ""), meta["name"])
        new = deep_copy(obj)
        if status_only:
            new = {**current, "status": new.get("status", {})}
            new["metadata"] = dict(current["metadata"])
        else:
            self._validate(new)
        if not status_only:
            if kind == "Pod":
                self._check_pod_update(current, new)
            self._bump_generation(current, new)
        return self._write(new, meta.get("resourceVersion"))

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, *, status_only: bool = False) -> Obj:
        current = self.get(kind, namespace, name)
        new = merge_patch(current, patch)
        new["kind"], new["metadata"] = kind, {**merge_patch(current["metadata"], patch.get("metadata", {}))}
        if status_only:
            new = {**current, "status": new.get("status", {}), "metadata": dict(current["metadata"])}
        else:
            self._validate(new)
            if kind == "Pod":
                self._check_pod_update(current, new)
            self._bump_generation(current, new)
        return self._write(new, None)

    @staticmethod
    def _bump_generation(current: Obj, new: Obj) -> None:
        """metadata.generation counts spec changes, so controllers can report observedGeneration."""
        if new.get("spec") != current.get("spec"):
            new["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1

    def update_status(self, kind: str, namespace: str, name: str, mutate: Callable[[Obj], Any]) -> Obj:
        """Read-modify-write of .status: `mutate` edits a copy; returns the stored object."""
        current = self.get(kind, namespace, name)
        new = {**current, "metadata": dict(current["metadata"]), "status": deep_copy(current.get("status", {}))}
        if mutate(new["status"]) is False:
            return current
        return self._write(new, None)

    def _write(self, obj: Obj, expect_rv: str | None) -> Obj:
        try:
            return self.store.update(obj, expect_rv)
        except Conflict as e:
            raise ConflictError(str(e)) from None
        except NotFound as e:
            raise NotFoundError(str(e)) from None

    @staticmethod
    def _check_pod_update(current: Obj, new: Obj) -> None:
        """Pod spec fields the scheduling system relies on are immutable, as in Kubernetes."""
        old_spec, new_spec = current.get("spec", {}), new.get("spec", {})
        for field in ("nodeName", "priority", "priorityClassName", "containers", "schedulerName", "overhead"):
            if field in old_spec and new_spec.get(field) != old_spec.get(field):
                raise Invalid(f"spec.{field}: Forbidden: pod updates may not change this field")

    def bind(self, namespace: str, name: str, node_name: str) -> Obj:
        """POST pods/binding: set spec.nodeName once; PodScheduled=True; clears the nomination."""
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
        set_condition(status, {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": self.timestamp()})
        return self._write(new, None)

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None) -> Obj | None:
        """DELETE: pods bound to a node terminate gracefully; everything else goes at once.

        Returns the pod in its terminating form, or None once the object is gone.
        """
        obj = self.get(kind, namespace, name)
        if kind == "Pod" and obj["spec"].get("nodeName") and obj.get("status", {}).get("phase") not in (
            "Succeeded", "Failed"
        ):
            if grace_period is None:
                grace_period = obj["spec"].get("terminationGracePeriodSeconds", 30)
            if grace_period > 0:
                meta = obj["metadata"]
                # A second delete may only shorten the grace period.
                if meta.get("deletionTimestamp") and grace_period >= meta.get("deletionGracePeriodSeconds", 0):
                    return obj
                new = {**obj, "metadata": {
                    **meta,
                    "deletionTimestamp": self.timestamp(self.now() + grace_period),
                    "deletionGracePeriodSeconds": grace_period,
                }}
                return self._write(new, None)
        ns = namespace if namespaced(kind) else ""
        try:
            self.store.delete(kind, ns, name)
        except NotFound as e:
            raise NotFoundError(str(e)) from None
        return None

    def evict(self, namespace: str, name: str, eviction: Obj | None = None, requester: str = "") -> Obj:
        """POST pods/eviction (policy/v1 or v1beta1 Eviction); see apiserver.eviction."""
        return eviction_subresource.evict(self, namespace, name, eviction, requester)

    def record_event(self, involved: Obj, etype: str, reason: str, message: str,
                     source: str = "default-scheduler") -> Obj:
        """Create a core/v1 Event about `involved`, as an EventRecorder would."""
        self._event_seq += 1
        meta = involved["metadata"]
        ns = meta.get("namespace", "default")
        now = self.timestamp()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{self._event_seq:016x}", "namespace": ns},
            "involvedObject": {"kind": involved["kind"], "namespace": meta.get("namespace"),
                               "name": meta["name"], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "type": etype,
            "reason": reason,
            "message": message,
            "source": {"component": source},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "eventTime": None,
            "reportingComponent": source,
        }
        # Events are stored like any object, so watchers (results, kubectl) see them in order.
        event["metadata"]["creationTimestamp"] = now
        event["metadata"]["uid"] = str(uuid.UUID(int=self._uid_rng.getrandbits(128), version=4))
        return self.store.create(event)
