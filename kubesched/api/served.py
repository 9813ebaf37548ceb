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


def is_builtin_group(api_version: str) -> bool:
    """Whether kube-apiserver itself serves (or served) the group of `api_version`."""
    return _split(api_version)[0] in SERVED


def serves(api_version: str, kind: str) -> bool:
    group, version = _split(api_version)
    return kind in SERVED.get(group, {}).get(version, ())


def served_versions(kind: str, group: str | None = None) -> list[str]:
    """The apiVersions serving `kind` (in `group`, if given), as `kubectl explain` would name them."""
    return [f"{g}/{v}" if g else v for g, versions in SERVED.items() if group is None or g == group
            for v, kinds in versions.items() if kind in kinds]


def no_match(api_version: str, kind: str) -> str | None:
    """kubectl's refusal of `kind` in `api_version` when the API server does not serve it there and
    the group is built in (None when it does, or the group is a custom one), with what to use
    instead: `no matches for kind "Ingress" in version "extensions/v1beta1" (removed in v1.22;
    expected "networking.k8s.io/v1")`."""
    if not is_builtin_group(api_version) or serves(api_version, kind):
        return None
    message = f'no matches for kind "{kind}" in version "{api_version}"'
    group = _split(api_version)[0]
    instead = ([_MOVED[kind]] if _MOVED[kind] else []) if kind in _MOVED \
        else served_versions(kind, group) or served_versions(kind)
    notes = []
    if kind in _MOVED or instead:  # a kind Kubernetes has: say whether this version of it was removed
        removed = _REMOVED_KIND_IN.get((api_version, kind)) or _REMOVED_IN.get(api_version)
        notes = [f"removed in {removed}" + ("" if instead else " with no replacement")] if removed else []
    if instead:
        notes.append("expected " + " or ".join(f'"{v}"' for v in instead))
    return f"{message} ({'; '.join(notes)})" if notes else message
