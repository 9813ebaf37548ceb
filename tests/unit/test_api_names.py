"""What kube-apiserver v1.35 takes and refuses, as the input is checked: object names by each
kind's rule, names unique per resource and namespace, kubectl's `no matches for kind` for what no
built-in group serves (removed betas included), and custom resources kept as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api.errors import InputError, Problem
from kubesched.api.loader import load_paths
from kubesched.api.names import dns_1035_label_errors, name_rule, path_segment_errors
from kubesched.api.served import no_match, resource_kind
from kubesched.input.validation import validate


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(text: str, warnings: list[Problem] | None = None) -> list[str]:
    Path("in.yaml").write_text(text)
    try:
        validate(load_paths(["in.yaml"]), warnings)
    except InputError as e:
        return str(e).splitlines()
    return []


def obj(api_version: str, kind: str, name: str, namespace: str | None = None, body: str = "") -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: {name!r}{ns}}}\n{body}---\n"


RBAC = "rbac.authorization.k8s.io/v1"
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character")
DNS_1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character")


# --- names --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"])
@pytest.mark.parametrize("name", ["system:monitoring", "system::leader-locking-kube-scheduler",
                                  "resource-metrics:system:auth-delegator", "prometheus-k8s", "Kubeadm:Get_Nodes"])
def test_rbac_objects_take_path_segment_names(kind: str, name: str) -> None:
    assert check(obj(RBAC, kind, name, "kube-system" if kind.startswith("Role") else None)) == []


@pytest.mark.parametrize(("name", "message"), [
    ("a/b", "may not contain '/'"), ("..", "may not be '..'"), (".", "may not be '.'"),
    ("100%", "may not contain '%'"),
])
def test_rbac_names_that_cannot_be_a_path_segment(name: str, message: str) -> None:
    assert check(obj(RBAC, "ClusterRole", name)) == [
        f'in.yaml doc 1: metadata.name: Invalid value: "{name}": {message}']
    assert path_segment_errors("a/%b") == ["may not contain '/'", "may not contain '%'"]


def test_services_take_dns_1035_labels() -> None:
    assert check(obj("v1", "Service", "prometheus-k8s", "monitoring")) == []
    assert check(obj("v1", "Service", "9-lives") + obj("v1", "Service", "web.shop") + obj("v1", "Service", "x" * 64)) == [
        f'in.yaml doc 1: metadata.name: Invalid value: "9-lives": {DNS_1035_MSG}',
        f'in.yaml doc 2: metadata.name: Invalid value: "web.shop": {DNS_1035_MSG}',
        f'in.yaml doc 3: metadata.name: Invalid value: "{"x" * 64}": must be no more than 63 characters',
    ]
    assert dns_1035_label_errors("a") == []


def test_most_kinds_take_subdomains_custom_resources_too() -> None:
    text = (obj("v1", "ConfigMap", "kube-root-ca.crt", "default") + obj("v1", "Secret", "sh.helm.release.v1.web.v3")
            + obj("monitoring.coreos.com/v1", "ServiceMonitor", "node-exporter", "monitoring")
            + obj("monitoring.coreos.com/v1", "PrometheusRule", "system:rules") + obj("v1", "ConfigMap", "a:b"))
    assert check(text) == [
        f'in.yaml doc 4: metadata.name: Invalid value: "system:rules": {SUBDOMAIN_MSG}',
        f'in.yaml doc 5: metadata.name: Invalid value: "a:b": {SUBDOMAIN_MSG}',
    ]


def test_events_of_the_core_api_keep_any_path_segment_name() -> None:
    """The core Event API validates no name (for old clients); events.k8s.io/v1 takes subdomains."""
    assert check(obj("v1", "Event", "web-7c9f8.1829f3a4b5c6d7e8", "shop") + obj("v1", "Event", "Odd_Name", "shop")) == []
    assert check(obj("events.k8s.io/v1", "Event", "Odd_Name", "shop")) == [
        f'in.yaml doc 1: metadata.name: Invalid value: "Odd_Name": {SUBDOMAIN_MSG}']


def test_a_crd_is_named_after_its_plural_and_group() -> None:
    spec = "spec: {group: monitoring.coreos.com, names: {plural: servicemonitors, kind: ServiceMonitor}}\n"
    ext = "apiextensions.k8s.io/v1"
    assert check(obj(ext, "CustomResourceDefinition", "servicemonitors.monitoring.coreos.com", body=spec)) == []
    assert check(obj(ext, "CustomResourceDefinition", "servicemonitor.monitoring.coreos.com", body=spec)) == [
        'in.yaml doc 1: metadata.name: Invalid value: "servicemonitor.monitoring.coreos.com": '
        'must be spec.names.plural+"."+spec.group']


def test_name_rule_of_namespaces_is_the_label() -> None:
    assert name_rule("", "Namespace", {})("kube.system") != []
    assert name_rule("", "Pod", {})("kube.system") == []


# --- uniqueness ---------------------------------------------------------------------------------------

def test_the_same_name_in_every_namespace_is_no_duplicate() -> None:
    text = "".join(obj("v1", "ConfigMap", "kube-root-ca.crt", ns) + obj("v1", "ServiceAccount", "default", ns)
                   + obj(RBAC, "Role", "prometheus-k8s", ns) + obj("coordination.k8s.io/v1", "Lease", "lock", ns)
                   for ns in ("default", "kube-system", "monitoring"))
    assert check(text) == []


def test_a_namespaced_object_of_any_kind_twice_in_one_namespace_is_a_duplicate() -> None:
    text = (obj("v1", "ConfigMap", "settings") + obj("v1", "ConfigMap", "settings", "default")
            + obj("networking.k8s.io/v1", "NetworkPolicy", "deny", "shop") + obj("networking.k8s.io/v1", "NetworkPolicy", "deny", "shop")
            + obj(RBAC, "ClusterRole", "system:monitoring") + obj(RBAC, "ClusterRole", "system:monitoring"))
    assert check(text) == [
        'in.yaml doc 2: metadata.name: duplicate ConfigMap "default/settings" (first defined in in.yaml doc 1)',
        'in.yaml doc 4: metadata.name: duplicate NetworkPolicy "shop/deny" (first defined in in.yaml doc 3)',
        'in.yaml doc 6: metadata.name: duplicate ClusterRole "system:monitoring" (first defined in in.yaml doc 5)',
    ]


def test_a_custom_resource_without_a_namespace_is_in_default() -> None:
    smon = "monitoring.coreos.com/v1"
    assert check(obj(smon, "ServiceMonitor", "web") + obj(smon, "ServiceMonitor", "web", "default")
                 + obj(smon, "ServiceMonitor", "web", "monitoring")) == [
        'in.yaml doc 2: metadata.name: duplicate ServiceMonitor "default/web" (first defined in in.yaml doc 1)']


def test_the_same_kind_in_another_group_is_another_resource() -> None:
    knative = "spec: {template: {spec: {containers: [{image: example.com/web}]}}}\n"
    text = (obj("v1", "Service", "web", "shop") + obj("serving.knative.dev/v1", "Service", "web", "shop", knative)
            + obj("batch.volcano.sh/v1alpha1", "Job", "train", "ml", "spec: {minAvailable: 2, tasks: []}\n")
            + obj("batch/v1", "Job", "train", "ml", "spec: {template: {spec: {restartPolicy: Never, "
                                                     "containers: [{name: c, image: busybox}]}}}\n"))
    warnings: list[Problem] = []
    assert check(text, warnings) == []
    assert warnings == []  # the Knative Service is not read as a core one (it has no spec.template)
    assert resource_kind({"apiVersion": "serving.knative.dev/v1", "kind": "Service"}) == "Service.serving.knative.dev"
    assert resource_kind({"apiVersion": "v1", "kind": "Service"}) == "Service"


def test_one_event_resource_served_by_two_groups() -> None:
    assert check(obj("v1", "Event", "e1", "shop") + obj("events.k8s.io/v1", "Event", "e1", "shop")) == [
        'in.yaml doc 2: metadata.name: duplicate Event "shop/e1" (first defined in in.yaml doc 1)']


# --- kinds and versions no built-in group serves ------------------------------------------------------

@pytest.mark.parametrize(("api_version", "kind", "note"), [
    ("v1", "Gizmo", ""),
    ("apps/v1", "Deploymnet", ""),
    ("apps/v1", "Service", ' (expected "v1")'),
    ("extensions/v1beta1", "Ingress", ' (removed in v1.22; expected "networking.k8s.io/v1")'),
    ("networking.k8s.io/v1beta1", "Ingress", ' (removed in v1.22; expected "networking.k8s.io/v1")'),
    ("extensions/v1beta1", "NetworkPolicy", ' (removed in v1.16; expected "networking.k8s.io/v1")'),
    ("policy/v1beta1", "PodSecurityPolicy", " (removed in v1.25 with no replacement)"),
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler",
     ' (removed in v1.25; expected "autoscaling/v1" or "autoscaling/v2")'),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler",
     ' (removed in v1.26; expected "autoscaling/v1" or "autoscaling/v2")'),
    ("rbac.authorization.k8s.io/v1beta1", "ClusterRole", ' (removed in v1.22; expected "rbac.authorization.k8s.io/v1")'),
    ("discovery.k8s.io/v1beta1", "EndpointSlice", ' (removed in v1.25; expected "discovery.k8s.io/v1")'),
    ("events.k8s.io/v1beta1", "Event", ' (removed in v1.25; expected "events.k8s.io/v1")'),
    ("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema",
     ' (removed in v1.26; expected "flowcontrol.apiserver.k8s.io/v1")'),
    ("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema",
     ' (removed in v1.29; expected "flowcontrol.apiserver.k8s.io/v1")'),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "PriorityLevelConfiguration",
     ' (removed in v1.32; expected "flowcontrol.apiserver.k8s.io/v1")'),
    ("admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration",
     ' (removed in v1.22; expected "admissionregistration.k8s.io/v1")'),
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition",
     ' (removed in v1.22; expected "apiextensions.k8s.io/v1")'),
    ("apiregistration.k8s.io/v1beta1", "APIService", ' (removed in v1.22; expected "apiregistration.k8s.io/v1")'),
    ("coordination.k8s.io/v1beta1", "Lease", ' (removed in v1.22; expected "coordination.k8s.io/v1")'),
    ("certificates.k8s.io/v1beta1", "CertificateSigningRequest",
     ' (removed in v1.22; expected "certificates.k8s.io/v1")'),
    ("storage.k8s.io/v1beta1", "CSIStorageCapacity", ' (removed in v1.27; expected "storage.k8s.io/v1")'),
    ("storage.k8s.io/v1beta1", "VolumeAttachment", ' (removed in v1.22; expected "storage.k8s.io/v1")'),
    ("settings.k8s.io/v1alpha1", "PodPreset", " (removed in v1.20 with no replacement)"),
    # A beta that is off by default was never removed: only where the kind is served is said.
    ("networking.k8s.io/v1beta1", "IPAddress", ' (expected "networking.k8s.io/v1")'),
    ("app/v1", "Widget", ""),  # no CRD can have a group without a dot
])
def test_what_no_built_in_group_serves_is_refused_as_kubectl_does(api_version: str, kind: str, note: str) -> None:
    assert check(obj(api_version, kind, "x", "default")) == [
        f'in.yaml doc 1: no matches for kind "{kind}" in version "{api_version}"{note}']


@pytest.mark.parametrize(("api_version", "kind"), [
    ("apps/v1beta1", "Deployment"), ("apps/v1beta2", "DaemonSet"), ("extensions/v1beta1", "ReplicaSet"),
    ("batch/v1beta1", "CronJob"), ("policy/v1beta1", "PodDisruptionBudget"), ("scheduling.k8s.io/v1beta1", "PriorityClass"),
    ("storage.k8s.io/v1beta1", "CSIDriver"), ("storage.k8s.io/v1beta1", "CSINode"), ("storage.k8s.io/v1beta1", "StorageClass"),
    ("node.k8s.io/v1beta1", "RuntimeClass"), ("kubescheduler.config.k8s.io/v1beta3", "KubeSchedulerConfiguration"),
    ("kubescheduler.config.k8s.io/v1beta2", "KubeSchedulerConfiguration"),
])
def test_removed_versions_of_the_simulated_kinds_are_refused(api_version: str, kind: str) -> None:
    [line] = check(obj(api_version, kind, "x"))[:1]
    assert line.startswith(f'in.yaml doc 1: apiVersion: no kind "{kind}" in version "{api_version}" (expected "'), line


@pytest.mark.parametrize(("api_version", "kind"), [
    ("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1alpha1", "AlertmanagerConfig"),
    ("cert-manager.io/v1", "Certificate"), ("metrics.k8s.io/v1beta1", "PodMetrics"),
    ("resource.k8s.io/v1", "ResourceClaim"), ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("kubelet.config.k8s.io/v1", "CredentialProviderConfig"),
])
def test_custom_resources_and_served_kinds_are_kept(api_version: str, kind: str) -> None:
    assert check(obj(api_version, kind, "x", "default")) == []
    assert no_match(api_version, kind) is None


# --- nodes ------------------------------------------------------------------------------------------

def test_a_node_without_allocatable_or_capacity_is_named_in_a_warning() -> None:
    warnings: list[Problem] = []
    text = (obj("v1", "Node", "bare") + obj("v1", "Node", "empty", body="status: {allocatable: {}}\n")
            + obj("v1", "Node", "sized", body="status: {capacity: {cpu: '4', memory: 8Gi}}\n"))
    assert check(text, warnings) == []
    assert [str(w) for w in warnings] == [
        f'in.yaml doc {doc}: status: Node "{name}" has neither allocatable nor capacity: it offers 0 cpu and '
        "0 memory to pods" for doc, name in ((1, "bare"), (2, "empty"))]
