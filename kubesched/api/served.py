"""What kube-apiserver v1.35 serves with its default feature gates, group by group, and what it
no longer serves.

kubectl maps an object's apiVersion and kind to a resource through the server's discovery; for a
built-in group that does not serve the kind in that version (a typo, or an API removed in an
upgrade) it refuses the object with `no matches for kind "X" in version "g/v"`. Groups that are
not built in belong to custom resources and aggregated APIs, whose kinds kubesched keeps as they
are. Alpha versions and betas that are off by default are not served (`--runtime-config` would
turn them on).
"""

from __future__ import annotations

from typing import Any

_CORE = ("Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
         "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController",
         "ResourceQuota", "Secret", "Service", "ServiceAccount")
_DRA = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")

# group -> version -> the kinds it serves (`kubectl api-resources` of a v1.35 cluster).
SERVED: dict[str, dict[str, frozenset[str]]] = {group: {v: frozenset(kinds) for v, kinds in versions.items()}
                                               for group, versions in {
    "": {"v1": _CORE},
    "admissionregistration.k8s.io": {"v1": ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                                            "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")},
    "apiextensions.k8s.io": {"v1": ("CustomResourceDefinition",)},
    "apiregistration.k8s.io": {"v1": ("APIService",)},
    "apps": {"v1": ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet")},
    "authentication.k8s.io": {"v1": ("SelfSubjectReview", "TokenRequest", "TokenReview")},
    "authorization.k8s.io": {"v1": ("LocalSubjectAccessReview", "SelfSubjectAccessReview",
                                    "SelfSubjectRulesReview", "SubjectAccessReview")},
    "autoscaling": {"v1": ("HorizontalPodAutoscaler", "Scale"), "v2": ("HorizontalPodAutoscaler",)},
    "batch": {"v1": ("CronJob", "Job")},
    "certificates.k8s.io": {"v1": ("CertificateSigningRequest",)},
    "coordination.k8s.io": {"v1": ("Lease",)},
    "discovery.k8s.io": {"v1": ("EndpointSlice",)},
    "events.k8s.io": {"v1": ("Event",)},
    "extensions": {},
    "flowcontrol.apiserver.k8s.io": {"v1": ("FlowSchema", "PriorityLevelConfiguration")},
    "networking.k8s.io": {"v1": ("Ingress", "IngressClass", "IPAddress", "NetworkPolicy", "ServiceCIDR")},
    "node.k8s.io": {"v1": ("RuntimeClass",)},
    "policy": {"v1": ("Eviction", "PodDisruptionBudget")},
    "rbac.authorization.k8s.io": {"v1": ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")},
    # v1 since v1.34; v1beta1 and v1beta2 only with --runtime-config. Exports of older clusters
    # that say so are read in v1 (kubesched.api.dra.convert).
    # v1alpha3 for DeviceTaintRule (DRADeviceTaintRules), as with --runtime-config
    # resource.k8s.io/v1alpha3=true: kubesched serves it for the gate to act on.
    "resource.k8s.io": {"v1": _DRA, "v1alpha3": ("DeviceTaintRule",)},
    "scheduling.k8s.io": {"v1": ("PriorityClass",)},
    "settings.k8s.io": {},
    "storage.k8s.io": {"v1": ("CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment",
                              "VolumeAttributesClass")},
}.items()}

_RBAC = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
_FLOWCONTROL = ("FlowSchema", "PriorityLevelConfiguration")
# The release that stopped serving each kind of an apiVersion (the deprecated API migration guide).
_REMOVED: dict[tuple[str, str], str] = {(api_version, kind): release for api_version, release, kinds in (
    ("extensions/v1beta1", "v1.16", ("DaemonSet", "Deployment", "NetworkPolicy", "PodSecurityPolicy", "ReplicaSet")),
    ("extensions/v1beta1", "v1.22", ("Ingress",)),
    ("apps/v1beta1", "v1.16", ("ControllerRevision", "Deployment", "StatefulSet")),
    ("apps/v1beta2", "v1.16", ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet")),
    ("settings.k8s.io/v1alpha1", "v1.20", ("PodPreset",)),
    ("batch/v2alpha1", "v1.21", ("CronJob",)),
    ("admissionregistration.k8s.io/v1beta1", "v1.22", ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")),
    ("apiextensions.k8s.io/v1beta1", "v1.22", ("CustomResourceDefinition",)),
    ("apiregistration.k8s.io/v1beta1", "v1.22", ("APIService",)),
    ("authentication.k8s.io/v1beta1", "v1.22", ("TokenReview",)),
    ("authorization.k8s.io/v1beta1", "v1.22", ("LocalSubjectAccessReview", "SelfSubjectAccessReview",
                                               "SelfSubjectRulesReview", "SubjectAccessReview")),
    ("certificates.k8s.io/v1beta1", "v1.22", ("CertificateSigningRequest",)),
    ("coordination.k8s.io/v1beta1", "v1.22", ("Lease",)),
    ("networking.k8s.io/v1beta1", "v1.22", ("Ingress", "IngressClass")),
    ("rbac.authorization.k8s.io/v1beta1", "v1.22", _RBAC),
    ("rbac.authorization.k8s.io/v1alpha1", "v1.22", _RBAC),
    ("scheduling.k8s.io/v1beta1", "v1.22", ("PriorityClass",)),
    ("scheduling.k8s.io/v1alpha1", "v1.22", ("PriorityClass",)),
    ("storage.k8s.io/v1beta1", "v1.22", ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment")),
    ("batch/v1beta1", "v1.25", ("CronJob",)),
    ("discovery.k8s.io/v1beta1", "v1.25", ("EndpointSlice",)),
    ("events.k8s.io/v1beta1", "v1.25", ("Event",)),
    ("autoscaling/v2beta1", "v1.25", ("HorizontalPodAutoscaler",)),
    ("policy/v1beta1", "v1.25", ("PodDisruptionBudget", "PodSecurityPolicy")),
    ("node.k8s.io/v1beta1", "v1.25", ("RuntimeClass",)),
    ("node.k8s.io/v1alpha1", "v1.25", ("RuntimeClass",)),
    ("autoscaling/v2beta2", "v1.26", ("HorizontalPodAutoscaler",)),
    ("flowcontrol.apiserver.k8s.io/v1beta1", "v1.26", _FLOWCONTROL),
    ("storage.k8s.io/v1beta1", "v1.27", ("CSIStorageCapacity",)),
    ("flowcontrol.apiserver.k8s.io/v1beta2", "v1.29", _FLOWCONTROL),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "v1.32", _FLOWCONTROL),
) for kind in kinds}


def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


# Groups of the components' own configuration files (read from disk, never served) and ours.
COMPONENT_GROUPS = frozenset({"kubescheduler.config.k8s.io", "kubelet.config.k8s.io", "descheduler", "kubesched.io"})
# Every kind a built-in group serves: a custom resource of the same kind is another resource.
BUILTIN_KINDS = frozenset(kind for versions in SERVED.values() for kinds in versions.values() for kind in kinds)


def is_builtin_group(api_version: str) -> bool:
    """Whether kube-apiserver itself serves (or served) the group of `api_version`."""
    return _split(api_version)[0] in SERVED


def is_custom_group(api_version: str) -> bool:
    """Whether `api_version` names a group a CustomResourceDefinition or an aggregated API server
    may serve: one with a dot in it (the CRD's rule), neither built in nor a component's."""
    group = _split(api_version)[0]
    return "." in group and group not in SERVED and group not in COMPONENT_GROUPS


def resource_kind(obj: dict[str, Any]) -> str:
    """The kind the store files `obj` under: its kind, qualified by its group for a custom
    resource (`Widget.a.example.com`), so that two definitions of one kind in different groups
    (or a Knative `Service`, a Volcano `Job` and the built-in kinds) keep apart, and no built-in
    controller takes a custom object for one of its own."""
    kind = obj["kind"]
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and "." in api_version and is_custom_group(api_version):
        return f"{kind}.{_split(api_version)[0]}"
    return kind


def shown_kind(obj: dict[str, Any]) -> str:
    """How summaries name an object's kind: as it says, qualified by its group only where a
    built-in kind has that name."""
    return resource_kind(obj) if obj["kind"] in BUILTIN_KINDS else obj["kind"]


def serves(api_version: str, kind: str) -> bool:
    group, version = _split(api_version)
    return kind in SERVED.get(group, {}).get(version, ())


def served_versions(kind: str, group: str | None = None) -> list[str]:
    """The apiVersions serving `kind` (in `group`, if given), as `kubectl explain` would name them."""
    return [f"{g}/{v}" if g else v for g, versions in SERVED.items() if group is None or g == group
            for v, kinds in versions.items() if kind in kinds]


def no_match(api_version: str, kind: str) -> str | None:
    """kubectl's refusal of `kind` in `api_version` when the API server does not serve it there and
    no CRD could (None when it does, or the group may be a custom one), with when it was removed
    and what to use instead: `no matches for kind "Ingress" in version "extensions/v1beta1"
    (removed in v1.22; expected "networking.k8s.io/v1")`."""
    group = _split(api_version)[0]
    if serves(api_version, kind) or not is_builtin_group(api_version) and (
            "." in group or group in COMPONENT_GROUPS):
        return None  # served, or a group a CRD or a component may have (kept as it is)
    message = f'no matches for kind "{kind}" in version "{api_version}"'
    # Where the kind is served now: in its own group, or where it moved (extensions' Ingress).
    instead = served_versions(kind, group) or served_versions(kind)
    notes = []
    if removed := _REMOVED.get((api_version, kind)):
        notes.append(f"removed in {removed}" + ("" if instead else " with no replacement"))
    if instead:
        notes.append("expected " + " or ".join(f'"{v}"' for v in instead))
    return f"{message} ({'; '.join(notes)})" if notes else message
