"""Admission, in the order the API server applies it to a create (after the scheme's defaults,
apiserver.defaults).

Only the plugins whose effects the scheduling system can observe are here: LimitRanger (its
defaulting; limitranger.py), Priority, DefaultTolerationSeconds and RuntimeClass; then, once the
object is valid and named, the validating phase: LimitRanger's checks and ResourceQuota
(resourcequota.py). Each rejects with the message the real plugin uses. The Job strategy's
generated selector is here too, as it needs the uid, and StorageObjectInUseProtection where the
protection controllers run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kubesched.api.objects import Obj, Shared
from kubesched.apiserver import limitranger, resourcequota
from kubesched.apiserver.errors import Forbidden

if TYPE_CHECKING:
    from kubesched.store.base import Store

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_TOLERATED_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_DEFAULT_TOLERATIONS = {key: Shared(key=key, operator="Exists", effect="NoExecute",
                                    tolerationSeconds=DEFAULT_TOLERATION_SECONDS) for key in DEFAULT_TOLERATED_TAINTS}
# StorageObjectInUseProtection: the finalizer each new claim or volume gets.
STORAGE_PROTECTION = {"PersistentVolumeClaim": "kubernetes.io/pvc-protection",
                      "PersistentVolume": "kubernetes.io/pv-protection"}


def protect_storage_object(obj: Obj, honoured: set[str]) -> None:
    """StorageObjectInUseProtection: a new claim or volume gets its protection finalizer, last,
    when the controller that removes it runs (else nothing would ever let it go)."""
    finalizer = STORAGE_PROTECTION[obj["kind"]]
    finalizers = obj["metadata"].get("finalizers") or []
    if finalizer in honoured and finalizer not in finalizers:
        obj["metadata"]["finalizers"] = [*finalizers, finalizer]


def system_priority_classes() -> list[Obj]:
    """The classes the API server creates at start-up (scheduling/v1 bootstrap policy)."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": DEFAULT_PREEMPTION_POLICY,
            "description": "Used for system critical pods that must not be moved from their current node.",
        }
        for name, value in SYSTEM_PRIORITY_CLASSES.items()
    ]


def admit_priority_class(pc: Obj, store: Store) -> None:
    name = pc["metadata"]["name"]
    if name in SYSTEM_PRIORITY_CLASSES:
        raise Forbidden(f'priorityclasses.scheduling.k8s.io "{name}" already exists')
    if name.startswith("system-"):
        raise Forbidden("priority class names with 'system-' prefix are reserved for system use only")
    if pc.get("value", 0) > HIGHEST_USER_DEFINABLE_PRIORITY:
        raise Forbidden(
            f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        )
    pc.setdefault("preemptionPolicy", DEFAULT_PREEMPTION_POLICY)
    if pc.get("globalDefault"):
        for other in store.list("PriorityClass"):
            if other.get("globalDefault") and other["metadata"]["name"] != name:
                raise Forbidden(
                    f"PriorityClass {other['metadata']['name']} is already marked as default. "
                    "Only one default can exist"
                )


def _default_priority_class(store: Store) -> Obj | None:
    for pc in store.list("PriorityClass"):
        if pc.get("globalDefault"):
            return pc
    return None


def admit_pod_priority(pod: Obj, store: Store) -> None:
    """Resolve priorityClassName to spec.priority and spec.preemptionPolicy (plugin/pkg/admission/priority)."""
    spec = pod["spec"]
    class_name = spec.get("priorityClassName")
    if class_name:
        pc = store.get("PriorityClass", "", class_name)
        if pc is None:
            raise Forbidden(f"no PriorityClass with name {class_name} was found")
    else:
        pc = _default_priority_class(store)
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    priority = pc.get("value", 0) if pc else 0
    policy = (pc.get("preemptionPolicy") if pc else None) or DEFAULT_PREEMPTION_POLICY
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise Forbidden(
            f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; "
            f"priority admission controller computed {priority} from the given PriorityClass name"
        )
    if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
        raise Forbidden(
            f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        )
    spec["priority"] = priority
    spec["preemptionPolicy"] = policy


def _tolerates_no_execute(tolerations: list[Obj], key: str) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", "NoExecute"):
            continue
        if t.get("operator") == "Exists" and not t.get("key"):
            return True
        if t.get("key") == key:
            return True
    return False


def admit_default_toleration_seconds(pod: Obj) -> None:
    """Add 300 s not-ready/unreachable NoExecute tolerations unless the pod has its own."""
    tolerations = pod["spec"].setdefault("tolerations", [])
    for key in DEFAULT_TOLERATED_TAINTS:
        if not _tolerates_no_execute(tolerations, key):
            tolerations.append(_DEFAULT_TOLERATIONS[key])


def admit_runtime_class(pod: Obj, store: Store) -> None:
    """Set spec.overhead from the pod's RuntimeClass (plugin/pkg/admission/runtimeclass)."""
    spec = pod["spec"]
    rc_name = spec.get("runtimeClassName")
    if not rc_name:
        if spec.get("overhead"):
            raise Forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
        return
    rc = store.get("RuntimeClass", "", rc_name)
    if rc is None:
        raise Forbidden(f'pod rejected: RuntimeClass "{rc_name}" not found')
    overhead = (rc.get("overhead") or {}).get("podFixed")
    if not overhead:
        if spec.get("overhead"):
            raise Forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
        return
    if spec.get("overhead") and spec["overhead"] != overhead:
        raise Forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    spec["overhead"] = dict(overhead)


def admit_pod(pod: Obj, store: Store, warn: Callable[[str], None] | None = None, existing: bool = False) -> bool:
    """Admit a pod being created (the mutating phase); True when LimitRanger filled in resources,
    so the pod must be validated again. An `existing` pod is one of a snapshot: it got its
    LimitRange defaults when it was created, so its resources are kept as written. With `warn`,
    the pod is one the cluster already runs: it was admitted when it was created, so what today's
    admission would refuse (a PriorityClass or RuntimeClass missing from the export, a changed
    class value) is reported through `warn`."""
    limited = not existing and limitranger.default_pod(pod, store)
    for step in (admit_pod_priority, admit_runtime_class):
        try:
            step(pod, store)
        except Forbidden as e:
            if warn is None:
                raise
            warn(e.message)
            if step is admit_pod_priority:
                spec = pod["spec"]
                spec["priority"] = int(spec.get("priority") or 0)
                spec.setdefault("preemptionPolicy", DEFAULT_PREEMPTION_POLICY)
    admit_default_toleration_seconds(pod)
    return limited


def validate_new(obj: Obj, store: Store, dra_extended: bool = False) -> None:
    """The validating phase of a create: LimitRanger's min, max and ratio checks on pods and
    claims, then ResourceQuota, which charges what it admits (`dra_extended`: DRAExtendedResource)."""
    if obj["kind"] == "Pod":
        limitranger.validate_pod(obj, store)
    elif obj["kind"] == "PersistentVolumeClaim":
        limitranger.validate_claim(obj, store)
    resourcequota.admit(obj, store, dra_extended)


JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def generate_job_selector(job: Obj) -> None:
    """The selector the Job strategy generates on create (generateSelector), unless
    spec.manualSelector: the template is labelled with the Job's name and uid, old and new label
    keys, and the selector picks the uid. Needs metadata.uid set and the Job defaulted."""
    spec = job["spec"]
    if spec.get("manualSelector"):
        return
    meta = job["metadata"]
    template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
    labels = template_meta.setdefault("labels", {})
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, meta.get("name", ""))
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, meta["uid"])
    selector = spec.get("selector") or {}
    spec["selector"] = selector
    selector.setdefault("matchLabels", {}).setdefault(CONTROLLER_UID_LABELS[1], meta["uid"])
