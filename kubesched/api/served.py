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
    # v1 since v1.34; clusters that kept the betas on still serve them, and exports may say so.
    "resource.k8s.io": {"v1": _DRA, "v1beta1": _DRA, "v1beta2": _DRA},
    "scheduling.k8s.io": {"v1": ("PriorityClass",)},
    "settings.k8s.io": {},
    "storage.k8s.io": {"v1": ("CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment",
                              "VolumeAttributesClass")},
}.items()}

# The release that stopped serving an apiVersion (the deprecated API migration guide), for every
# kind of it unless the entry names one.
_REMOVED_IN: dict[str, str] = {
    "extensions/v1beta1": "v1.22", "apps/v1beta1": "v1.16", "apps/v1beta2": "v1.16",
    "admissionregistration.k8s.io/v1beta1": "v1.22", "apiextensions.k8s.io/v1beta1": "v1.22",
    "apiregistration.k8s.io/v1beta1": "v1.22", "authentication.k8s.io/v1beta1": "v1.22",
    "authorization.k8s.io/v1beta1": "v1.22", "certificates.k8s.io/v1beta1": "v1.22",
    "coordination.k8s.io/v1beta1": "v1.22", "networking.k8s.io/v1beta1": "v1.22",
    "rbac.authorization.k8s.io/v1beta1": "v1.22", "rbac.authorization.k8s.io/v1alpha1": "v1.22",
    "scheduling.k8s.io/v1beta1": "v1.22", "scheduling.k8s.io/v1alpha1": "v1.22",
    "storage.k8s.io/v1beta1": "v1.22",
    "batch/v1beta1": "v1.25", "batch/v2alpha1": "v1.21", "discovery.k8s.io/v1beta1": "v1.25",
    "events.k8s.io/v1beta1": "v1.25", "autoscaling/v2beta1": "v1.25", "policy/v1beta1": "v1.25",
    "node.k8s.io/v1beta1": "v1.25", "node.k8s.io/v1alpha1": "v1.25",
    "flowcontrol.apiserver.k8s.io/v1beta1": "v1.26", "autoscaling/v2beta2": "v1.26",
    "flowcontrol.apiserver.k8s.io/v1beta2": "v1.29", "flowcontrol.apiserver.k8s.io/v1beta3": "v1.32",
    "settings.k8s.io/v1alpha1": "v1.20",
}
# Kinds that left a version in another release than the rest of it.
_REMOVED_KIND_IN: dict[tuple[str, str], str] = {
    ("extensions/v1beta1", "DaemonSet"): "v1.16", ("extensions/v1beta1", "Deployment"): "v1.16",
    ("extensions/v1beta1", "ReplicaSet"): "v1.16", ("extensions/v1beta1", "NetworkPolicy"): "v1.16",
    ("extensions/v1beta1", "PodSecurityPolicy"): "v1.16", ("storage.k8s.io/v1beta1", "CSIStorageCapacity"): "v1.27",
}
# Kinds that moved to another group when their old version went.
_MOVED = {"PodSecurityPolicy": None, "Ingress": "networking.k8s.io/v1", "NetworkPolicy": "networking.k8s.io/v1"}


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
    """The kind the store files `obj` under: its kind, qualified by its group when a custom
    resource's kind is also a built-in one (a Knative `Service`, a Volcano `Job`), so that neither
    the built-in resource's objects nor its controllers take it for one of theirs."""
    kind = obj["kind"]
    if kind in BUILTIN_KINDS:
        api_version = obj.get("apiVersion")
        if isinstance(api_version, str) and "." in api_version and is_custom_group(api_version):
            return f"{kind}.{_split(api_version)[0]}"
    return kind


def serves(api_version: str, kind: str) -> bool:
    group, version = _split(api_version)
    return kind in SERVED.get(group, {}).get(version, ())


def served_versions(kind: str, group: str | None = None) -> list[str]:
    """The apiVersions serving `kind` (in `group`, if given), as `kubectl explain` would name them."""
    return [f"{g}/{v}" if g else v for g, versions in SERVED.items() if group is None or g == group
            for v, kinds in versions.items() if kind in kinds]


def no_match(api_version: str, kind: str) -> str | None:
    """kubectl's refusal of `kind` in `api_version` when the API server does not serve it there and
    no CRD could (None when it does, or the group may be a custom one), with what to use instead: `no matches for kind "Ingress" in version "extensions/v1beta1" (removed in v1.22;
    expected "networking.k8s.io/v1")`."""
    group = _split(api_version)[0]
    if serves(api_version, kind) or not is_builtin_group(api_version) and (
            "." in group or group in COMPONENT_GROUPS):
        return None  # served, or a group a CRD or a component may have (kept as it is)
    message = f'no matches for kind "{kind}" in version "{api_version}"'
    instead = ([_MOVED[kind]] if _MOVED[kind] else []) if kind in _MOVED \
        else served_versions(kind, group) or served_versions(kind)
    notes = []
    if kind in _MOVED or instead:  # a kind Kubernetes has: say whether this version of it was removed
        removed = _REMOVED_KIND_IN.get((api_version, kind)) or _REMOVED_IN.get(api_version)
        notes = [f"removed in {removed}" + ("" if instead else " with no replacement")] if removed else []
    if instead:
        notes.append("expected " + " or ".join(f'"{v}"' for v in instead))
    return f"{message} ({'; '.join(notes)})" if notes else message
