"""Every kind an export can hold: which ones kubesched runs, and which it only keeps.

`kubectl get all,... -o yaml`, `helm template` and app bundles mix the kinds the scheduling
system acts on with Services, ConfigMaps, Secrets, RBAC and custom resources. All of them load:
the kinds below with a component are simulated; any other kind, built in or custom, is stored
as it is (as the API server would store it) and named in the run's summary, so an export runs
unchanged. Only a malformed object is bad input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from kubesched.api.served import shown_kind

# Kinds something in kubesched reads or acts on.
SIMULATED = frozenset({
    "Namespace", "Node", "Pod", "PriorityClass", "PodDisruptionBudget", "RuntimeClass",
    "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "ReplicationController", "Job", "CronJob",
    "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "LimitRange",
    "ResourceQuota", "DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule",
})

# Built-in kinds without a namespace (kubectl api-resources --namespaced=false); any other kind,
# custom ones included, is namespaced unless its object gives no namespace.
CLUSTER_SCOPED = frozenset({
    "Node", "Namespace", "PriorityClass", "RuntimeClass", "PersistentVolume", "StorageClass", "CSINode",
    "CSIDriver", "VolumeAttachment", "VolumeAttributesClass", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition", "APIService", "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "IngressClass", "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration",
    "ComponentStatus", "DeviceClass", "ResourceSlice", "DeviceTaintRule", "IPAddress", "ServiceCIDR",
})


def model_name(api_version: str, kind: str) -> str:
    """The Kubernetes client's model class for a kind in a version: apps/v1 Deployment ->
    V1Deployment, batch/v1beta1 CronJob -> V1beta1CronJob."""
    version = api_version.rsplit("/", 1)[-1]
    return version[:1].upper() + version[1:] + kind


def stored_only_summary(objects: Iterable[dict[str, Any]]) -> str:
    """One line naming what was kept but not simulated: "3 Service, 2 ConfigMap, 1 Widget"."""
    counts = Counter(kind for kind in (shown_kind(o) for o in objects) if kind not in SIMULATED)
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
