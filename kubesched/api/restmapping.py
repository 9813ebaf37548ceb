"""The REST resources kubesched's API has: what `serve`'s discovery lists, what URLs route to,
what OpenAPI describes, and how the API names a resource in its messages.

Each entry is what `kubectl api-resources` prints for it on a v1.35 cluster: plural, singular,
short names, whether it is namespaced, its kind and group/version, and its subresources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS
    # The kind this resource stores its objects under when it is another API's view of them
    # (events.k8s.io/v1 Event shows core/v1 Events).
    stored_as: str | None = None
    stored: bool = True  # False: computed when asked (metrics), nothing in the store
    singular: str = field(default="")
    # DELETE answers with the object (graceful deletion shows its deletionTimestamp) rather than a
    # Status, as these resources' upstream registries do.
    delete_returns_object: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def store_kind(self) -> str:
        return self.stored_as or self.kind

    @property
    def qualified(self) -> str:
        """How kube-apiserver names the resource in errors: `pods`, `deployments.apps`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _r(kind: str, group: str, version: str, plural: str, **kw: object) -> Resource:
    return Resource(kind, group, version, plural, **kw)  # type: ignore[arg-type]


ALL = ("all",)
RESOURCES: tuple[Resource, ...] = (
    # core/v1
    _r("Binding", "", "v1", "bindings", verbs=("create",)),
    _r("ConfigMap", "", "v1", "configmaps", short_names=("cm",)),
    _r("Endpoints", "", "v1", "endpoints", short_names=("ep",)),
    _r("Event", "", "v1", "events", short_names=("ev",)),
    _r("LimitRange", "", "v1", "limitranges", short_names=("limits",)),
    _r("Namespace", "", "v1", "namespaces", namespaced=False, short_names=("ns",), subresources=("status",),
       verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _r("Node", "", "v1", "nodes", namespaced=False, short_names=("no",), subresources=("status",)),
    _r("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", short_names=("pvc",), subresources=("status",),
       delete_returns_object=True),
    _r("PersistentVolume", "", "v1", "persistentvolumes", namespaced=False, short_names=("pv",),
       subresources=("status",), delete_returns_object=True),
    _r("Pod", "", "v1", "pods", short_names=("po",), categories=ALL,
       subresources=("status", "binding", "eviction"), delete_returns_object=True),
    _r("PodTemplate", "", "v1", "podtemplates", delete_returns_object=True),
    _r("ReplicationController", "", "v1", "replicationcontrollers", short_names=("rc",), categories=ALL,
       subresources=("status", "scale")),
    _r("ResourceQuota", "", "v1", "resourcequotas", short_names=("quota",), subresources=("status",),
       delete_returns_object=True),
    _r("Secret", "", "v1", "secrets"),
    _r("ServiceAccount", "", "v1", "serviceaccounts", short_names=("sa",), subresources=("token",),
       delete_returns_object=True),
    _r("Service", "", "v1", "services", short_names=("svc",), categories=ALL, subresources=("status",),
       verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
       delete_returns_object=True),
    # apps/v1
    _r("ControllerRevision", "apps", "v1", "controllerrevisions"),
    _r("DaemonSet", "apps", "v1", "daemonsets", short_names=("ds",), categories=ALL, subresources=("status",)),
    _r("Deployment", "apps", "v1", "deployments", short_names=("deploy",), categories=ALL,
       subresources=("status", "scale")),
    _r("ReplicaSet", "apps", "v1", "replicasets", short_names=("rs",), categories=ALL,
       subresources=("status", "scale")),
    _r("StatefulSet", "apps", "v1", "statefulsets", short_names=("sts",), categories=ALL,
       subresources=("status", "scale")),
    # batch/v1
    _r("CronJob", "batch", "v1", "cronjobs", short_names=("cj",), categories=ALL, subresources=("status",)),
    _r("Job", "batch", "v1", "jobs", categories=ALL, subresources=("status",)),
    # policy/v1
    _r("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", short_names=("pdb",),
       subresources=("status",)),
    # scheduling.k8s.io/v1
    _r("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, short_names=("pc",)),
    # node.k8s.io/v1
    _r("RuntimeClass", "node.k8s.io", "v1", "runtimeclasses", namespaced=False),
    # storage.k8s.io/v1
    _r("CSIDriver", "storage.k8s.io", "v1", "csidrivers", namespaced=False, delete_returns_object=True),
    _r("CSINode", "storage.k8s.io", "v1", "csinodes", namespaced=False, delete_returns_object=True),
    _r("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities"),
    _r("StorageClass", "storage.k8s.io", "v1", "storageclasses", namespaced=False, short_names=("sc",),
       delete_returns_object=True),
    _r("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", namespaced=False,
       subresources=("status",), delete_returns_object=True),
    # apiextensions.k8s.io/v1: CustomResourceDefinitions, whose resources serve joins the API
    _r("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False,
       short_names=("crd", "crds"), categories=("api-extensions",), subresources=("status",)),
    # networking.k8s.io/v1: stored; nothing in kubesched acts on them (no ingress controller, no CNI)
    _r("IngressClass", "networking.k8s.io", "v1", "ingressclasses", namespaced=False),
    _r("Ingress", "networking.k8s.io", "v1", "ingresses", short_names=("ing",), subresources=("status",)),
    _r("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", short_names=("netpol",)),
    # autoscaling/v2, and v1: the same objects in the older shape, converted both ways
    _r("HorizontalPodAutoscaler", "autoscaling", "v2", "horizontalpodautoscalers", short_names=("hpa",),
       categories=ALL, subresources=("status",)),
    _r("HorizontalPodAutoscaler", "autoscaling", "v1", "horizontalpodautoscalers", short_names=("hpa",),
       categories=ALL, subresources=("status",), stored_as="HorizontalPodAutoscaler"),
    # discovery.k8s.io/v1
    _r("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices"),
    # admissionregistration.k8s.io/v1: enforced in serve (apiserver.admissionpolicy, server.webhooks)
    _r("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
       namespaced=False, categories=("api-extensions",)),
    _r("ValidatingAdmissionPolicy", "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
       namespaced=False, categories=("api-extensions",), subresources=("status",)),
    _r("ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io", "v1",
       "validatingadmissionpolicybindings", namespaced=False, categories=("api-extensions",)),
    _r("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       namespaced=False, categories=("api-extensions",)),
    # coordination.k8s.io/v1
    _r("Lease", "coordination.k8s.io", "v1", "leases"),
    # events.k8s.io/v1: the same Events as core/v1, in the newer shape
    _r("Event", "events.k8s.io", "v1", "events", short_names=("ev",), stored_as="Event"),
    # resource.k8s.io/v1: Dynamic Resource Allocation
    _r("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", namespaced=False),
    _r("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", subresources=("status",)),
    _r("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates"),
    _r("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", namespaced=False),
    _r("DeviceTaintRule", "resource.k8s.io", "v1alpha3", "devicetaintrules", namespaced=False,
       subresources=("status",)),
    # authentication.k8s.io/v1 and authorization.k8s.io/v1: answered, never stored (kubectl auth)
    _r("SelfSubjectReview", "authentication.k8s.io", "v1", "selfsubjectreviews", namespaced=False,
       verbs=("create",), stored=False),
    _r("TokenReview", "authentication.k8s.io", "v1", "tokenreviews", namespaced=False, verbs=("create",),
       stored=False),
    _r("LocalSubjectAccessReview", "authorization.k8s.io", "v1", "localsubjectaccessreviews", verbs=("create",),
       stored=False),
    _r("SelfSubjectAccessReview", "authorization.k8s.io", "v1", "selfsubjectaccessreviews", namespaced=False,
       verbs=("create",), stored=False),
    _r("SelfSubjectRulesReview", "authorization.k8s.io", "v1", "selfsubjectrulesreviews", namespaced=False,
       verbs=("create",), stored=False),
    _r("SubjectAccessReview", "authorization.k8s.io", "v1", "subjectaccessreviews", namespaced=False,
       verbs=("create",), stored=False),
    # rbac.authorization.k8s.io/v1: stored for the manifests operators and schedulers ship with
    _r("ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False),
    _r("ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False),
    _r("RoleBinding", "rbac.authorization.k8s.io", "v1", "rolebindings"),
    _r("Role", "rbac.authorization.k8s.io", "v1", "roles"),
    # metrics.k8s.io/v1beta1: what metrics-server serves from the kubelets (`kubectl top`), read
    # from the simulated kubelets' usage; nothing is stored
    _r("NodeMetrics", "metrics.k8s.io", "v1beta1", "nodes", namespaced=False, verbs=("get", "list"),
       stored=False),
    _r("PodMetrics", "metrics.k8s.io", "v1beta1", "pods", verbs=("get", "list"), stored=False),
)

# The groups in the order kube-apiserver lists them (`/apis`).
GROUPS: tuple[str, ...] = (
    "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "autoscaling", "batch",
    "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
    "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io",
    "resource.k8s.io", "metrics.k8s.io",
)
# Groups an aggregated API server serves upstream: they publish no OpenAPI of kube-apiserver's.
AGGREGATED_GROUPS = frozenset({"metrics.k8s.io"})


@cache
def _by_path() -> dict[tuple[str, str, str], Resource]:
    return {(r.group, r.version, r.plural): r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return _by_path().get((group, version, plural))


@cache
def _by_kind() -> dict[tuple[str, str], Resource]:
    return {(r.api_version, r.kind): r for r in RESOURCES}


def for_kind(api_version: str, kind: str) -> Resource | None:
    """The resource serving `kind` in `api_version` (`apps/v1`, `Deployment`)."""
    return _by_kind().get((api_version, kind))


# Resources kube-apiserver v1.35 installs only while a feature gate is on (their REST storage is
# gated), by the gate.
GATED: dict[tuple[str, str, str], str] = {("resource.k8s.io", "v1alpha3", "devicetaintrules"): "DRADeviceTaintRules"}


def gated_off(enabled: Callable[[str], bool]) -> frozenset[Resource]:
    """The resources a server with these gates does not serve: absent from discovery, 404 at their paths."""
    return frozenset(r for r in RESOURCES if (gate := GATED.get((r.group, r.version, r.plural))) and not enabled(gate))


def in_group_version(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES if r.group == group and r.version == version]


@cache
def _by_store_kind() -> dict[str, Resource]:
    return {r.kind: r for r in RESOURCES if r.stored and not r.stored_as}


def of_stored(kind: str) -> Resource | None:
    """The resource whose objects the store keeps under `kind` (its own, not another API's view)."""
    return _by_store_kind().get(kind)


def qualified_resource(kind: str) -> str:
    """`qualified` of the resource storing `kind`; a kind the API does not serve (a custom
    resource kept from an export) is named by its lower-cased plural."""
    resource = of_stored(kind)
    return resource.qualified if resource is not None else f"{kind.lower()}s"
