"""Scheme defaulting: what kube-apiserver v1.35 fills in when it decodes a write.

Every create and update of a built-in kind is defaulted before validation (SetObjectDefaults_* of
core/v1, apps/v1 and batch/v1, generated from pkg/apis/*/v1/defaults.go and the types' declarative
`+default` markers), so what a client reads back is what a real cluster would show, and a
reconciler comparing its desired object with the stored one sees the same fields. Defaulting only
fills in what is missing, so an object defaulted once comes through again unchanged.

A pod template gets the PodSpec's defaults but not the Pod's own (requests copied from limits,
enableServiceLinks, host ports for host networking): upstream keeps those to Pods so that
templates written before a default existed do not change.

Malformed parts are left alone for validation to report: nothing here assumes a field has its
documented type. The gates defaults depend on (ImageVolume, MaxUnavailableStatefulSet) are read at
v1.35's defaults, which kubesched lets no one change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.api.objects import Obj
from kubesched.api.served import resource_kind
from kubesched.apiserver.limitranger import default_limit_range

MAX_INT32 = 2**31 - 1
DEFAULT_MODE = 0o644  # Secret, ConfigMap, DownwardAPI and Projected volumes
TOKEN_EXPIRATION_SECONDS = 3600
CONTAINER_GROUPS = ("initContainers", "containers", "ephemeralContainers")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_DEFAULTS = (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3))
HOST_PATH_UNSET = ""


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list field (none when it is not a list)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _child(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    """obj[key], created empty when missing; None when it holds something other than an object."""
    if obj.get(key) is None:
        obj[key] = {}
    return _dict(obj[key])


def _unset(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set a string or number field that holds Go's zero value ("", 0 or nil): not given."""
    if not obj.get(key):
        obj[key] = value


# ---- core/v1: pods and their templates ------------------------------------------------------

def pull_policy(image: Any) -> str:
    """The pull policy an image reference implies (SetDefaults_Container): Always for the
    `latest` tag, which is also what a reference with neither tag nor digest means, else
    IfNotPresent (also for a reference that does not parse)."""
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name = image.partition("@")[0]
    last = name.rpartition("/")[2]
    tag = last.partition(":")[2] if ":" in last else ("" if "@" in image else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def _http_get(action: Any) -> None:
    if (http := _dict(action)) is not None:
        _unset(http, "path", "/")
        _unset(http, "scheme", "HTTP")


def _field_ref(holder: Any) -> None:
    """SetDefaults_ObjectFieldSelector: a fieldRef reads the v1 form of the pod."""
    if (holder := _dict(holder)) is not None and (ref := _dict(holder.get("fieldRef"))) is not None:
        _unset(ref, "apiVersion", "v1")


def default_container(container: dict[str, Any]) -> None:
    """SetDefaults_Container and what is nested in it: ports, env, probes, lifecycle hooks."""
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = pull_policy(container.get("image"))
    _unset(container, "terminationMessagePath", "/dev/termination-log")
    _unset(container, "terminationMessagePolicy", "File")
    container.setdefault("resources", {})  # a struct, never omitted when serialised
    for port in _dicts(container.get("ports")):
        _unset(port, "protocol", "TCP")
    for env in _dicts(container.get("env")):
        _field_ref(env.get("valueFrom"))
    for name in PROBES:
        if (probe := _dict(container.get(name))) is not None:
            for key, value in PROBE_DEFAULTS:
                _unset(probe, key, value)
            _http_get(probe.get("httpGet"))
            if (grpc := _dict(probe.get("grpc"))) is not None and grpc.get("service") is None:
                grpc["service"] = ""
    for hook in ("postStart", "preStop"):
        if (handler := _dict((_dict(container.get("lifecycle")) or {}).get(hook))) is not None:
            _http_get(handler.get("httpGet"))


def default_volume(volume: dict[str, Any]) -> None:
    """SetDefaults_Volume and its sources' defaults: a volume naming no source is an emptyDir."""
    if all(key == "name" for key in volume):
        volume["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        if (source := _dict(volume.get(key))) is not None and source.get("defaultMode") is None:
            source["defaultMode"] = DEFAULT_MODE
    if (host_path := _dict(volume.get("hostPath"))) is not None and host_path.get("type") is None:
        host_path["type"] = HOST_PATH_UNSET
    for item in _dicts((_dict(volume.get("downwardAPI")) or {}).get("items")):
        _field_ref(item)
    for source in _dicts((_dict(volume.get("projected")) or {}).get("sources")):
        for item in _dicts((_dict(source.get("downwardAPI")) or {}).get("items")):
            _field_ref(item)
        if (token := _dict(source.get("serviceAccountToken"))) is not None \
                and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = TOKEN_EXPIRATION_SECONDS
    if (claim := _dict((_dict(volume.get("ephemeral")) or {}).get("volumeClaimTemplate"))) is not None \
            and (spec := _dict(claim.get("spec"))) is not None:
        _claim_spec(spec)
    image = _dict(volume.get("image"))
    if image is not None and not image.get("pullPolicy") and DEFAULT_FEATURE_GATES.enabled("ImageVolume"):
        image["pullPolicy"] = pull_policy(image.get("reference"))


def default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec with its volumes' and containers' defaults: what Pods and pod
    templates alike get."""
    _unset(spec, "dnsPolicy", "ClusterFirst")
    _unset(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    _unset(spec, "schedulerName", "default-scheduler")
    for volume in _dicts(spec.get("volumes")):
        default_volume(volume)
    for group in CONTAINER_GROUPS:
        for container in _dicts(spec.get(group)):
            default_container(container)


def default_pod(pod: Obj) -> None:
    """SetObjectDefaults_Pod: the PodSpec's defaults and the Pod's own: a container's requests
    default to its limits, service links are on, and with host networking a container port is
    also its host port. The phase starts Pending (PrepareForCreate)."""
    spec = _child(pod, "spec")
    if spec is None:
        return
    for group in ("initContainers", "containers"):
        for container in _dicts(spec.get(group)):
            resources = _dict(container.get("resources"))
            limits = _dict((resources or {}).get("limits"))
            if resources is not None and limits:
                requests = _child(resources, "requests")
                for name, limit in limits.items():
                    if requests is not None:
                        requests.setdefault(name, limit)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for group in ("initContainers", "containers"):
            for container in _dicts(spec.get(group)):
                for port in _dicts(container.get("ports")):
                    _unset(port, "hostPort", port.get("containerPort"))
    default_pod_spec(spec)
    status = _child(pod, "status")
    if status is not None:
        status.setdefault("phase", "Pending")


def default_template(template: Any) -> None:
    """A PodTemplateSpec inside a workload: the PodSpec's defaults only."""
    if (template := _dict(template)) is not None and (spec := _dict(template.get("spec"))) is not None:
        default_pod_spec(spec)


def _claim_spec(spec: dict[str, Any]) -> None:
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"


# ---- core/v1: the other kinds ---------------------------------------------------------------

def default_replication_controller(rc: Obj) -> None:
    """SetDefaults_ReplicationController: the selector, and the controller's own labels when it
    has none, come from the template's labels; one replica."""
    spec = _child(rc, "spec")
    if spec is None:
        return
    template = _dict(spec.get("template"))
    labels = _dict(((template or {}).get("metadata") or {}).get("labels"))
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = rc.setdefault("metadata", {})
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    default_template(template)


def default_service(service: Obj) -> None:
    """SetDefaults_Service, and the IP family fields the Service registry fills in on a
    single-stack IPv4 cluster (initIPFamilyFields): SingleStack, except a headless Service
    without a selector, which RequireDualStack describes."""
    spec = _child(service, "spec")
    if spec is None:
        return
    _unset(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = _dict(spec.get("sessionAffinityConfig")) or {}
        client_ip = _dict(config.get("clientIP")) or {}
        if client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {**config, "clientIP": {**client_ip, "timeoutSeconds": 10800}}
    _unset(spec, "type", "ClusterIP")
    kind = spec["type"]
    for port in _dicts(spec.get("ports")):
        _unset(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and spec.get("externalIPs")):
        _unset(spec, "externalTrafficPolicy", "Cluster")
    if kind in ("ClusterIP", "NodePort", "LoadBalancer") and spec.get("internalTrafficPolicy") is None:
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        status = _dict(service.get("status")) or {}
        for ingress in _dicts((_dict(status.get("loadBalancer")) or {}).get("ingress")):
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"
    if kind == "ExternalName":
        return
    if spec.get("ipFamilyPolicy") is None:
        selectorless_headless = spec.get("clusterIP") == "None" and not spec.get("selector")
        spec["ipFamilyPolicy"] = "RequireDualStack" if selectorless_headless else "SingleStack"
    if not spec.get("ipFamilies"):
        spec["ipFamilies"] = ["IPv4"]


def default_namespace(namespace: Obj) -> None:
    """SetDefaults_Namespace: a namespace is labelled with its own name; it starts Active."""
    meta = namespace.setdefault("metadata", {})
    if meta.get("name") and isinstance(meta.get("labels") or {}, dict):
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
    if (status := _child(namespace, "status")) is not None:
        _unset(status, "phase", "Active")


def default_secret(secret: Obj) -> None:
    _unset(secret, "type", "Opaque")


def default_endpoints(endpoints: Obj) -> None:
    for subset in _dicts(endpoints.get("subsets")):
        for port in _dicts(subset.get("ports")):
            _unset(port, "protocol", "TCP")


def default_pod_template(pod_template: Obj) -> None:
    default_template(pod_template.get("template"))


# ---- apps/v1 --------------------------------------------------------------------------------

def _replicas_and_history(spec: dict[str, Any], replicas: bool = True, history: bool = True) -> None:
    if replicas and spec.get("replicas") is None:
        spec["replicas"] = 1
    if history and spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10


def _rolling(strategy: dict[str, Any], **defaults: Any) -> None:
    """A RollingUpdate strategy's parameters, each where it is missing."""
    rolling = _child(strategy, "rollingUpdate")
    if rolling is not None:
        for key, value in defaults.items():
            if rolling.get(key) is None:
                rolling[key] = value


def default_deployment(deployment: Obj) -> None:
    """SetDefaults_Deployment: one replica, RollingUpdate by 25% surge and 25% unavailable, ten
    old ReplicaSets kept, progress expected within ten minutes."""
    spec = _child(deployment, "spec")
    if spec is None:
        return
    _replicas_and_history(spec)
    if (strategy := _child(spec, "strategy")) is not None:
        _unset(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            _rolling(strategy, maxUnavailable="25%", maxSurge="25%")
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    default_template(spec.get("template"))


def default_replica_set(replica_set: Obj) -> None:
    if (spec := _child(replica_set, "spec")) is not None:
        _replicas_and_history(spec, history=False)
        default_template(spec.get("template"))


def default_daemon_set(daemon_set: Obj) -> None:
    """SetDefaults_DaemonSet: RollingUpdate one node at a time without surge; ten revisions."""
    spec = _child(daemon_set, "spec")
    if spec is None:
        return
    if (strategy := _child(spec, "updateStrategy")) is not None:
        _unset(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            _rolling(strategy, maxUnavailable=1, maxSurge=0)
    _replicas_and_history(spec, replicas=False)
    default_template(spec.get("template"))


def default_stateful_set(stateful_set: Obj) -> None:
    """SetDefaults_StatefulSet: OrderedReady, RollingUpdate from partition 0 (at most one pod
    unavailable: MaxUnavailableStatefulSet is on in v1.35), claims retained, one replica, ten
    revisions; each claim template is defaulted as a claim is."""
    spec = _child(stateful_set, "spec")
    if spec is None:
        return
    _unset(spec, "podManagementPolicy", "OrderedReady")
    if (strategy := _child(spec, "updateStrategy")) is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            _child(strategy, "rollingUpdate")
        if strategy["type"] == "RollingUpdate" and _dict(strategy.get("rollingUpdate")) is not None:
            extra = {"maxUnavailable": 1} if DEFAULT_FEATURE_GATES.enabled("MaxUnavailableStatefulSet") else {}
            _rolling(strategy, partition=0, **extra)
    if (retention := _child(spec, "persistentVolumeClaimRetentionPolicy")) is not None:
        _unset(retention, "whenDeleted", "Retain")
        _unset(retention, "whenScaled", "Retain")
    _replicas_and_history(spec)
    default_template(spec.get("template"))
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        if (claim_spec := _child(claim, "spec")) is not None:
            _claim_spec(claim_spec)
        if (status := _child(claim, "status")) is not None:
            _unset(status, "phase", "Pending")


# ---- batch/v1 -------------------------------------------------------------------------------

def _pod_failure_policy(spec: dict[str, Any]) -> None:
    """An onPodConditions pattern matches a condition that is True unless it says otherwise."""
    for rule in _dicts((_dict(spec.get("podFailurePolicy")) or {}).get("rules")):
        for pattern in _dicts(rule.get("onPodConditions")):
            _unset(pattern, "status", "True")


def default_job(job: Obj) -> None:
    """SetDefaults_Job: one completion at parallelism one, six retries (or all of them with a
    per-index limit), NonIndexed, running, replacing pods once they terminate (once they fail
    under a pod failure policy); the Job takes its template's labels when it has none."""
    spec = _child(job, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template = _dict(spec.get("template"))
    labels = ((template or {}).get("metadata") or {}).get("labels")
    meta = job.setdefault("metadata", {})
    if labels and isinstance(labels, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)
    _unset(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    _pod_failure_policy(spec)
    default_template(template)


def default_cron_job(cron_job: Obj) -> None:
    """SetDefaults_CronJob: concurrent runs allowed, not suspended, three successful and one
    failed Job kept. The Job template gets its pod template's defaults; the Job's own come when
    the controller creates it."""
    spec = _child(cron_job, "spec")
    if spec is None:
        return
    _unset(spec, "concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    if (job_spec := _dict((_dict(spec.get("jobTemplate")) or {}).get("spec"))) is not None:
        _pod_failure_policy(job_spec)
        default_template(job_spec.get("template"))


# ---- storage ---------------------------------------------------------------------------------

CSI_DRIVER_DEFAULTS = {"attachRequired": True, "podInfoOnMount": False, "requiresRepublish": False,
                       "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", "seLinuxMount": False}


def default_storage_class(storage_class: Obj) -> None:
    _unset(storage_class, "reclaimPolicy", "Delete")
    _unset(storage_class, "volumeBindingMode", "Immediate")


def default_csi_driver(driver: Obj) -> None:
    if (spec := _child(driver, "spec")) is not None:
        for key, value in CSI_DRIVER_DEFAULTS.items():
            spec.setdefault(key, value)
        spec.setdefault("volumeLifecycleModes", ["Persistent"])


def default_persistent_volume(volume: Obj) -> None:
    if (spec := _child(volume, "spec")) is not None:
        _unset(spec, "persistentVolumeReclaimPolicy", "Retain")
        _claim_spec(spec)
        if (host_path := _dict(spec.get("hostPath"))) is not None and host_path.get("type") is None:
            host_path["type"] = HOST_PATH_UNSET
    if (status := _child(volume, "status")) is not None:
        _unset(status, "phase", "Pending")


def default_persistent_volume_claim(claim: Obj) -> None:
    if (spec := _child(claim, "spec")) is not None:
        _claim_spec(spec)
    if (status := _child(claim, "status")) is not None:
        _unset(status, "phase", "Pending")


# ---- networking, autoscaling, discovery, admissionregistration --------------------------------


def _network_policy_ports(rules: Any) -> None:
    for rule in _dicts(rules):
        for port in _dicts(rule.get("ports")):
            _unset(port, "protocol", "TCP")


def default_network_policy(policy: Obj) -> None:
    """Ports default to TCP; without policyTypes a policy is an Ingress one, and an Egress one too
    when it has egress rules."""
    if (spec := _child(policy, "spec")) is None:
        return
    _network_policy_ports(spec.get("ingress"))
    _network_policy_ports(spec.get("egress"))
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def default_ingress(ingress: Obj) -> None:
    if (status := _child(ingress, "status")) is not None and status.get("loadBalancer") is None:
        status["loadBalancer"] = {}  # a struct, so always in the JSON


def default_ingress_class(ingress_class: Obj) -> None:
    spec = _child(ingress_class, "spec")
    if spec is not None and (parameters := _dict(spec.get("parameters"))) is not None:
        _unset(parameters, "scope", "Cluster")


def _scaling_rules(rules: Any, window: int | None, policies: list[dict[str, Any]]) -> dict[str, Any]:
    """The given rules with the direction's defaults where they say nothing."""
    rules = dict(_dict(rules) or {})
    if rules.get("stabilizationWindowSeconds") is None and window is not None:
        rules["stabilizationWindowSeconds"] = window
    _unset(rules, "selectPolicy", "Max")
    if rules.get("policies") is None:
        rules["policies"] = policies
    return rules


def default_horizontal_pod_autoscaler(hpa: Obj) -> None:
    """minReplicas 1, a cpu target of 80% when no metric is given, and, once behavior is given at
    all, each direction's rules filled in (scale down keeps no window: the controller's flag has it)."""
    if (spec := _child(hpa, "spec")) is None:
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    if (behavior := _dict(spec.get("behavior"))) is not None:
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), 0, [
            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}])
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), None, [
            {"type": "Percent", "value": 100, "periodSeconds": 15}])
    if (status := _child(hpa, "status")) is not None:
        status.setdefault("desiredReplicas", 0)  # not omitempty


def default_endpoint_slice(slice_: Obj) -> None:
    for port in _dicts(slice_.get("ports")):
        _unset(port, "name", "")
        _unset(port, "protocol", "TCP")


def _match_resources(match: dict[str, Any]) -> None:
    _unset(match, "namespaceSelector", {})
    _unset(match, "objectSelector", {})
    _unset(match, "matchPolicy", "Equivalent")
    for rules in ("resourceRules", "excludeResourceRules"):
        for rule in _dicts(match.get(rules)):
            _unset(rule, "scope", "*")


def _webhook_configuration(config: Obj, mutating: bool) -> None:
    for hook in _dicts(config.get("webhooks")):
        _unset(hook, "failurePolicy", "Fail")
        _unset(hook, "matchPolicy", "Equivalent")
        _unset(hook, "namespaceSelector", {})
        _unset(hook, "objectSelector", {})
        _unset(hook, "timeoutSeconds", 10)
        if mutating:
            _unset(hook, "reinvocationPolicy", "Never")
        for rule in _dicts(hook.get("rules")):
            _unset(rule, "scope", "*")
        if (service := _dict((_dict(hook.get("clientConfig")) or {}).get("service"))) is not None:
            _unset(service, "port", 443)


def default_validating_admission_policy(policy: Obj) -> None:
    if (spec := _child(policy, "spec")) is None:
        return
    _unset(spec, "failurePolicy", "Fail")
    if (match := _dict(spec.get("matchConstraints"))) is not None:
        _match_resources(match)


def default_validating_admission_policy_binding(binding: Obj) -> None:
    if (spec := _child(binding, "spec")) is not None and (match := _dict(spec.get("matchResources"))) is not None:
        _match_resources(match)


DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "Pod": default_pod,
    "PodTemplate": default_pod_template,
    "ReplicationController": default_replication_controller,
    "Service": default_service,
    "Namespace": default_namespace,
    "Secret": default_secret,
    "Endpoints": default_endpoints,
    "LimitRange": default_limit_range,
    "PersistentVolume": default_persistent_volume,
    "PersistentVolumeClaim": default_persistent_volume_claim,
    "Deployment": default_deployment,
    "ReplicaSet": default_replica_set,
    "DaemonSet": default_daemon_set,
    "StatefulSet": default_stateful_set,
    "Job": default_job,
    "CronJob": default_cron_job,
    "StorageClass": default_storage_class,
    "CSIDriver": default_csi_driver,
    "NetworkPolicy": default_network_policy,
    "Ingress": default_ingress,
    "IngressClass": default_ingress_class,
    "HorizontalPodAutoscaler": default_horizontal_pod_autoscaler,
    "EndpointSlice": default_endpoint_slice,
    "ValidatingWebhookConfiguration": lambda config: _webhook_configuration(config, mutating=False),
    "MutatingWebhookConfiguration": lambda config: _webhook_configuration(config, mutating=True),
    "ValidatingAdmissionPolicy": default_validating_admission_policy,
    "ValidatingAdmissionPolicyBinding": default_validating_admission_policy_binding,
}


def set_defaults(obj: Obj) -> bool:
    """Default `obj` in place as its kind's scheme does; False when the kind has no defaults
    here (a custom resource sharing a built-in kind's name among them)."""
    defaulter = DEFAULTERS.get(resource_kind(obj))
    if defaulter is None:
        return False
    defaulter(obj)
    return True
