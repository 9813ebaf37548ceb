"""Which kinds are checked by which group's rules, and the entry points: one object, a whole input
(every object once, no two the same), and the problems of one object for the API server's writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.dra import convert as dra_convert
from kubesched.api.errors import InputError, Problem
from kubesched.api.loader import LoadedObject
from kubesched.api.names import group_of
from kubesched.api.objects import namespaced
from kubesched.api.served import is_custom_group, no_match, resource_kind
from kubesched.api.validation.admissionregistration import (
    _validating_admission_policy,
    _validating_admission_policy_binding,
)
from kubesched.api.validation.apps import _statefulset, _workload
from kubesched.api.validation.autoscaling import _horizontal_pod_autoscaler
from kubesched.api.validation.batch import _cronjob, _job_spec
from kubesched.api.validation.checker import Checker, KindCheck, KindRule, _metadata, check_shape, subpath
from kubesched.api.validation.core import (
    _limit_range,
    _node,
    _node_affinity,
    _persistent_volume,
    _persistent_volume_claim,
    _pod,
    _replication_controller,
    _resource_quota,
)
from kubesched.api.validation.discovery import _endpoint_slice
from kubesched.api.validation.networking import _ingress
from kubesched.api.validation.node import _runtime_class
from kubesched.api.validation.policy import _pdb
from kubesched.api.validation.resource import (
    _device_class,
    _device_taint_rule,
    _resource_claim,
    _resource_claim_template,
    _resource_slice,
    claim_status,
    request_names,
)
from kubesched.api.validation.scheduling import _priority_class
from kubesched.api.validation.storage import _csi_driver, _csi_node, _storage_class
from kubesched.api.validation.webhooks import (
    _mutating_webhook_configuration,
    _validating_webhook_configuration,
)

API_VERSIONS: dict[str, tuple[str, ...]] = {
    "Namespace": ("v1",),
    "Node": ("v1",),
    "Pod": ("v1",),
    "PriorityClass": ("scheduling.k8s.io/v1",),
    "PodDisruptionBudget": ("policy/v1",),
    "RuntimeClass": ("node.k8s.io/v1",),
    "ReplicaSet": ("apps/v1",),
    "Deployment": ("apps/v1",),
    "DaemonSet": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
    "ReplicationController": ("v1",),
    "Job": ("batch/v1",),
    "CronJob": ("batch/v1",),
    "PersistentVolume": ("v1",),
    "PersistentVolumeClaim": ("v1",),
    "StorageClass": ("storage.k8s.io/v1",),
    "CSINode": ("storage.k8s.io/v1",),
    "CSIDriver": ("storage.k8s.io/v1",),
    "LimitRange": ("v1",),
    "ResourceQuota": ("v1",),
    "DeviceClass": ("resource.k8s.io/v1",),
    "ResourceSlice": ("resource.k8s.io/v1",),
    "ResourceClaim": ("resource.k8s.io/v1",),
    "ResourceClaimTemplate": ("resource.k8s.io/v1",),
    "DeviceTaintRule": ("resource.k8s.io/v1alpha3",),
}
# Kinds that are cluster objects (have metadata; created, deleted and patched through the API).
OBJECT_KINDS = ("Namespace", "Node", "Pod", "PriorityClass", "PodDisruptionBudget", "RuntimeClass",
                "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "ReplicationController", "Job", "CronJob",
                "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "LimitRange",
                "ResourceQuota", "DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                "DeviceTaintRule")
_KIND_CHECKS: dict[str, KindCheck] = {
    "Pod": _pod,
    "Node": _node,
    "PriorityClass": _priority_class,
    "PodDisruptionBudget": _pdb,
    "RuntimeClass": _runtime_class,
    "ReplicaSet": lambda c, obj, path: _workload(c, obj, path, "ReplicaSet"),
    "Deployment": lambda c, obj, path: _workload(c, obj, path, "Deployment"),
    "DaemonSet": lambda c, obj, path: _workload(c, obj, path, "DaemonSet"),
    "StatefulSet": _statefulset,
    "ReplicationController": _replication_controller,
    "Job": lambda c, obj, path: _job_spec(c, obj.get("spec"), subpath(path, "spec")),
    "CronJob": _cronjob,
    "PersistentVolume": _persistent_volume,
    "PersistentVolumeClaim": _persistent_volume_claim,
    "StorageClass": _storage_class,
    "CSINode": _csi_node,
    "CSIDriver": _csi_driver,
    "LimitRange": _limit_range,
    "ResourceQuota": _resource_quota,
    "Namespace": lambda c, obj, path: None,
    "DeviceClass": _device_class,
    "ResourceSlice": _resource_slice,
    "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _resource_claim_template,
    "DeviceTaintRule": _device_taint_rule,
}
# Kinds the API server stores for other components, with the simplest of upstream's rules: their
# writes are checked, an input holding them is read as any stored kind is.
STORED_CHECKS: dict[str, KindCheck] = {
    "Ingress": _ingress,
    "HorizontalPodAutoscaler": _horizontal_pod_autoscaler,
    "EndpointSlice": _endpoint_slice,
    "ValidatingAdmissionPolicy": _validating_admission_policy,
    "ValidatingAdmissionPolicyBinding": _validating_admission_policy_binding,
    "MutatingWebhookConfiguration": _mutating_webhook_configuration,
    "ValidatingWebhookConfiguration": _validating_webhook_configuration,
}
# The kinds kubesched models: their apiVersions and their checks.
KINDS: dict[str, KindRule] = {kind: (versions, _KIND_CHECKS[kind]) for kind, versions in API_VERSIONS.items()}


def check_object(c: Checker, obj: dict[str, Any], path: str, allowed: tuple[str, ...],
                 kinds: Mapping[str, KindRule] = KINDS) -> bool:
    """Check one object (top level, or inside a document at `path`); False if its kind is unusable.
    `kinds` are the kinds the reader knows, `allowed` those it takes here. A kind it does not know
    (a Service, a custom resource) is checked as the API server would store it: well-formed
    metadata, and its fields if the Kubernetes client knows the kind."""
    if c.decoding and dra_convert.is_beta(obj):
        # An export of a v1.32-v1.33 cluster: read in v1, the one version v1.35 serves.
        converted = dra_convert.to_v1(obj)
        obj.clear()
        obj.update(converted)
    kind = c.need(obj, "kind", path, str)
    api_version = c.need(obj, "apiVersion", path, str)
    if kind is None:
        return False
    custom = isinstance(api_version, str) and is_custom_group(api_version)
    if kind not in allowed or custom:
        if kind in kinds and not custom:
            c.unsupported(subpath(path, "kind"), kind, allowed)
            return False
        if isinstance(api_version, str) and (refusal := no_match(api_version, kind)) is not None:
            c.err(path, refusal)  # as kubectl refuses it, before the API server is asked
            return False
        findings = c.decode(kind, obj)
        before = len(c.problems)
        _metadata(c, obj, kind, path)
        c.decoded(findings, path, {p.path for p in c.problems[before:]})
        return True
    versions, check = kinds[kind]
    if api_version is not None and api_version not in versions:
        expected = " or ".join(f'"{v}"' for v in versions)
        c.err(subpath(path, "apiVersion"),
              f'no kind "{kind}" in version "{api_version}" (expected {expected})')
    findings = c.decode(kind, obj)  # first: it drops nulls, as the API server's decoding does
    before = len(c.problems)
    if kind in OBJECT_KINDS:
        _metadata(c, obj, kind, path)
    check(c, obj, path)
    c.decoded(findings, path, {p.path for p in c.problems[before:]})
    return True


def object_key(obj: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name) identifying an object; a namespaced object without a namespace is
    in "default", where the API server creates it (custom resources too: see namespaced)."""
    kind = str(obj.get("kind"))
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    return kind, (namespace or "default") if namespaced(kind) else "", name


def _group(obj: dict[str, Any], kind: str) -> str:
    """The API group whose resource stores `obj` (a modelled kind's own when `obj` does not say):
    a ServiceMonitor and a Service are different resources however alike their kinds, and an
    Event is one resource served by two groups."""
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str):
        return group_of(API_VERSIONS[kind][0]) if kind in API_VERSIONS else ""
    group = group_of(api_version)
    return "" if (group, kind) == ("events.k8s.io", "Event") else group


def _describe(key: tuple[str, str, str]) -> str:
    kind, namespace, name = key
    if not name:
        return kind
    return f'{kind} "{namespace}/{name}"' if namespace else f'{kind} "{name}"'


class Definitions:
    """The objects an input defines, by resource and key, with where each was defined first:
    defining one again is a duplicate, as creating it twice would be refused."""

    def __init__(self) -> None:
        # (group, kind, namespace, name) -> where it was defined first
        self.first: dict[tuple[str, str, str, str], str] = {}
        self.known: dict[tuple[str, str, str], dict[str, Any]] = {}  # object -> its latest known content

    def define(self, c: Checker, obj: dict[str, Any], path: str, where: str,
               key: tuple[str, str, str] | None = None) -> None:
        key = key or object_key(obj)
        identity = (_group(obj, key[0]), *key)
        if identity in self.first:
            c.err(subpath(path, "metadata.name" if key[2] else "kind"),
                  f"duplicate {_describe(key)} (first defined in {self.first[identity]})")
        else:
            self.first[identity] = where
            self.known[key] = obj

    def define_document(self, c: Checker, lo: LoadedObject) -> None:
        """A top-level object that `check_object` accepted (a nameless one was reported already)."""
        key = object_key(lo.obj)
        if key[2] or lo.obj["kind"] not in OBJECT_KINDS:
            self.define(c, lo.obj, "", lo.where, key)

    def remove(self, key: tuple[str, str, str]) -> None:
        """Forget a modelled object (a Scenario's delete or eviction of it)."""
        self.first.pop((_group({}, key[0]), *key), None)
        self.known.pop(key, None)


def validate(objects: list[LoadedObject], warnings: list[Problem] | None = None) -> None:
    """Check every object as the API server would create it, and that no two are the same object;
    raise InputError listing every problem found, in input order. What kube-apiserver would only
    warn about (unknown fields) is appended to `warnings`. Objects of the modelled kinds are
    decoded in place as the API server decodes them (a null field is unset): see fieldschema.decode.
    """
    problems: list[Problem] = []
    defined = Definitions()
    for lo in objects:
        c = Checker(lo, problems, warnings, decoding=True)
        if check_object(c, lo.obj, "", OBJECT_KINDS):
            defined.define_document(c, lo)
    if problems:
        raise InputError(problems)


def _findings(check: Callable[[Checker], None]) -> list[tuple[str, str]]:
    """(path, message) for each problem `check` finds, for checks run outside a loaded document."""
    problems: list[Problem] = []
    check(Checker(LoadedObject({}, "", 0), problems))
    return [(p.path, p.message) for p in problems]


def node_affinity_problems(value: Any, path: str) -> list[tuple[str, str]]:
    """(path, message) for what is wrong with a node affinity at `path` (the NodeAffinity scheduler
    plugin's `addedAffinity` is checked as a pod's node affinity is)."""
    return _findings(lambda c: _node_affinity(c, value, path))


def shape_problems(value: Any, schema: Any) -> list[tuple[str, str]]:
    """(path, message) for each value of `value` whose type `schema` does not allow (see check_shape)."""
    return _findings(lambda c: check_shape(c, value, "", schema))


def object_problems(obj: dict[str, Any], checker: type[Checker] = Checker) -> list[str]:
    """`path: message` for each problem of one cluster object, for the API server's create/update.

    Kinds kubesched does not model (Event, ...) are accepted as they are. `checker` adds a
    reader's own rules (kubesched.input.annotations.SimulationChecker).
    """
    if not isinstance(obj.get("kind"), str):
        return []
    problems: list[Problem] = []
    if (stored_check := STORED_CHECKS.get(resource_kind(obj))) is not None:
        stored_check(checker(LoadedObject(obj, "", 0), problems), obj, "")
        return [f"{p.path}: {p.message}" for p in problems]
    if resource_kind(obj) not in OBJECT_KINDS:
        return []
    check_object(checker(LoadedObject(obj, "", 0), problems), obj, "", OBJECT_KINDS)
    return [f"{p.path}: {p.message}" if p.path else p.message for p in problems]


def claim_status_problems(current: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`path: message` for each problem of a ResourceClaim's status update (resourceclaims/status,
    and every component's write of it): see validation.resource.claim_status."""
    problems: list[Problem] = []
    deleting = bool((new.get("metadata") or {}).get("deletionTimestamp"))
    claim_status(Checker(LoadedObject(new, "", 0), problems), new.get("status"), current.get("status"), deleting,
                 request_names(new.get("spec")), "status")
    return [f"{p.path}: {p.message}" for p in problems]
