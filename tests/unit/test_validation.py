"""Validation: the API server's checks and wording, one line per problem, all problems at once."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.duration import DurationError, format_duration, parse_duration
from kubesched.api.errors import InputError
from kubesched.api.loader import LoadedObject, load_paths
from kubesched.api.validation.objects import OBJECT_KINDS
from kubesched.input.expectations import EXPECT_SUBJECTS
from kubesched.input.validation import validate


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(text: str, name: str = "in.yaml") -> list[str]:
    """Validate the documents in `text` (written to a real file); return the problem lines."""
    Path(name).write_text(text)
    try:
        validate(load_paths([name]))
    except InputError as e:
        return str(e).splitlines()
    return []


def pod(spec: str, meta: str = "{name: a}") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {meta}\nspec: {spec}\n"


def node(body: str, name: str = "n1") -> str:
    return f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n{body}\n"


C = "containers: [{name: c}]"
# The kinds events and expectations may name, and the expectation subjects, as messages list them.
KINDS = ", ".join(f'"{kind}"' for kind in sorted(OBJECT_KINDS))
SUBJECTS = ", ".join(EXPECT_SUBJECTS)


# --- durations ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "seconds"), [
    ("300ms", 0.3), ("1.5h", 5400), ("2h45m", 9900), ("10s", 10), ("1m30s", 90), ("0", 0), ("-1s", -1),
    (".5s", 0.5), ("1us", 1e-6), ("1µs", 1e-6), ("100ns", 1e-7), (30, 30), (2.5, 2.5), ("+2m", 120),
])
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("value", "message"), [
    ("", '"" is not a duration'), ("30", '"30" is not a duration'), ("1d", '"1d" is not a duration'),
    ("1h-5m", '"1h-5m" is not a duration'), (True, '"true" is not a duration'), (None, '"null" is not a duration'),
    ([1], '"[1]" is not a duration'), (math.inf, '"inf" is not a duration'), ("9999999999h", '"9999999999h" is not a duration'),
])
def test_parse_duration_rejects(value: object, message: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration(value)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("seconds", "text"), [
    (90, "1m30s"), (45, "45s"), (7200, "2h"), (0.5, "0.5s"), (0, "0s"), (3661, "1h1m1s"), (0.1 + 0.2, "0.3s"),
    (-90, "-1m30s"), (86400, "24h"),
])
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


# --- valid input ---------------------------------------------------------------------------------------

VALID = """\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: a}}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}, {key: dedicated, effect: NoExecute}]
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: 3800m, memory: 7Gi, pods: 110}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: team-a, labels: {app: web}}
spec:
  priority: 10
  priorityClassName: high
  preemptionPolicy: Never
  terminationGracePeriodSeconds: 30
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
    ports: [{containerPort: 80, hostPort: 8080, protocol: TCP}]
  - {name: d, ports: [{containerPort: 80, hostPort: 8080, protocol: UDP}]}
  initContainers: [{name: init, image: busybox, restartPolicy: Always}]
  overhead: {cpu: 100m}
  nodeSelector: {disk: ssd}
  schedulingGates: [{name: example.com/gate}]
  tolerations:
  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
  - {operator: Exists}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: In, values: [ssd]}]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 10, preference: {matchExpressions: [{key: rank, operator: Gt, values: ["1"]}]}}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname, namespaces: [team-a]}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm: {labelSelector: {matchExpressions: [{key: app, operator: Exists}]}, topologyKey: zone}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 2,
     labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash], nodeTaintsPolicy: Honor}
  - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}
status: {phase: Pending, nominatedNodeName: n1}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: false
preemptionPolicy: PreemptLowerPriority
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec: {minAvailable: "50%", selector: {matchLabels: {app: web}}, unhealthyPodEvictionPolicy: AlwaysAllow}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb-max}
spec: {maxUnavailable: 1}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m, memory: 120Mi}}
scheduling: {nodeSelector: {runtime: kata}, tolerations: [{key: kata, operator: Exists}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs}
spec:
  replicas: 0
  selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}
  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  updateStrategy: {type: OnDelete}
  template:
    metadata: {labels: {app: ds}}
    spec: {containers: [{name: c, image: x}], restartPolicy: Always}
---
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins: {score: {enabled: [{name: NodeResourcesFit, weight: 2}]}}
  pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}]
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard: {memory.available: 100Mi}
---
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig: [{name: DefaultEvictor, args: {}}]
  plugins: {balance: {enabled: [RemoveDuplicates]}}
---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: example}
spec:
  seed: 1
  until: 10m
  events:
  - {at: 0s, create: {apiVersion: v1, kind: Pod, metadata: {name: b}, spec: {containers: [{name: c}]}}}
  - {at: 30s, delete: {kind: Pod, namespace: team-a, name: a}}
  - {at: 31s, create: {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: team-a}, spec: {containers: [{name: c}]}}}
  - {at: 40s, evict: {name: b}}
  - {at: 41s, create: {apiVersion: v1, kind: Pod, metadata: {name: b}, spec: {containers: [{name: c}]}}}
  - {at: 50s, patch: {kind: Node, name: n1, patch: {spec: {unschedulable: true}}}}
  - {at: 60s, drain: {node: n1}}
  - {at: 70s, usage: {namespace: default, name: b, memory: 1Gi}}
  - {at: 80, delete: {kind: Node, name: n1}}
  expect:
  - {pod: default/c, nodeName: node1}
  - {pod: default/c, nodeName: null, at: 5s}
  - {pod: default/a, deleted: true}
  - {pod: default/d, phase: Pending}
  - {pod: default/d, nominatedNodeName: n2, priority: 5}
  - {pod: default/e, reason: Preempted}
  - {pod: default/d, event: {reason: FailedScheduling, message: "0/3 nodes are available: ..."}}
  - {pod: default/d, event: {messageContains: "Insufficient cpu"}}
  - {node: n1, requested: {cpu: "2"}, allocatable: {memory: 1Gi}, unschedulable: true,
     taints: [{key: a, effect: NoSchedule}]}
  - {rejected: Pod/default/e, messageContains: "no PriorityClass"}
  - {rejected: PriorityClass/high, message: "exact"}
  - {pod: default/d, score: {node: n1, plugin: NodeResourcesFit, raw: 60, normalized: 1, total: 200}}
"""


def test_valid_objects_of_every_kind() -> None:
    assert check(VALID) == []


def test_valid_list_directory_and_json(tmp_path: Path) -> None:
    Path("d/sub").mkdir(parents=True)
    Path("d/sub/list.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
        "- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}\n")
    Path("d/pod.json").write_text('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},'
                                  ' "spec": {"containers": [{"name": "c"}]}}')
    validate(load_paths(["d"]))


# --- kinds and apiVersions ----------------------------------------------------------------------------

def test_kinds_kubesched_does_not_simulate_load_as_they_are() -> None:
    """A Service, a ConfigMap or a custom resource is stored, not refused: an export runs unchanged.
    Its metadata is checked as the API server checks it, and its fields when the client knows them."""
    assert check("apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: x}\nspec: {anything: 1}\n") == []
    assert check("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\ndata: {a: b}\n") == [
        "in.yaml doc 1: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist "
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character"]
    assert check("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: 80}\n") == [
        "in.yaml doc 1: spec.ports: expected a list, got integer"]


def test_missing_kind_and_api_version() -> None:
    assert check("metadata: {name: x}\n") == [
        "in.yaml doc 1: kind: Required value",
        "in.yaml doc 1: apiVersion: Required value",
    ]
    assert check("kind: 5\napiVersion: v1\n") == ["in.yaml doc 1: kind: expected a string, got integer"]


@pytest.mark.parametrize(("kind", "wrong", "expected"), [
    ("Deployment", "v1", '"apps/v1"'),
    ("Pod", "apps/v1", '"v1"'),
    ("PriorityClass", "scheduling.k8s.io/v1beta1", '"scheduling.k8s.io/v1"'),
    ("PodDisruptionBudget", "v1", '"policy/v1"'),
    ("PodDisruptionBudget", "policy/v1beta1", '"policy/v1"'),
    ("RuntimeClass", "v1", '"node.k8s.io/v1"'),
    ("KubeSchedulerConfiguration", "v1", '"kubescheduler.config.k8s.io/v1"'),
    ("KubeSchedulerConfiguration", "kubescheduler.config.k8s.io/v1beta3", '"kubescheduler.config.k8s.io/v1"'),
    ("KubeletConfiguration", "v1", '"kubelet.config.k8s.io/v1beta1"'),
    ("DeschedulerPolicy", "v1", '"descheduler/v1alpha2"'),
    ("Scenario", "v1", '"kubesched.io/v1alpha1"'),
])
def test_wrong_api_version(kind: str, wrong: str, expected: str) -> None:
    lines = check(f"apiVersion: {wrong}\nkind: {kind}\nmetadata: {{name: x}}\n")
    assert lines[0] == f'in.yaml doc 1: apiVersion: no kind "{kind}" in version "{wrong}" (expected {expected})'


# --- metadata -----------------------------------------------------------------------------------------

def test_metadata_name_required() -> None:
    assert check("apiVersion: v1\nkind: Node\n") == ["in.yaml doc 1: metadata.name: Required value"]
    assert check("apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n") == [
        "in.yaml doc 1: metadata.name: Required value"]
    assert check("apiVersion: v1\nkind: Node\nmetadata: [x]\n") == [
        "in.yaml doc 1: metadata: expected a mapping, got list"]


def test_bad_names_and_labels() -> None:
    assert check(pod(f"{{{C}}}", '{name: Bad_Name, namespace: Team, labels: {"-bad": ok, good: "no spaces", num: 1}}')) == [
        'in.yaml doc 1: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        'in.yaml doc 1: metadata.namespace: Invalid value: "Team": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        "in.yaml doc 1: metadata.labels.num: expected a string, got integer",
        'in.yaml doc 1: metadata.labels: Invalid value: "-bad": name part must consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character",
        'in.yaml doc 1: metadata.labels: Invalid value: "no spaces": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    ]


def test_namespace_names_are_dns_labels() -> None:
    assert check("apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n") == [
        'in.yaml doc 1: metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
    ]


def test_long_names_and_label_keys() -> None:
    long = "a" * 254
    lines = check(node("", name=long) + "---\n" + node("", name="ok").replace(
        "{name: ok}", "{name: ok, labels: {" + "b" * 64 + ": x, a/b/c: v, /x: z}}"))
    assert lines == [
        f'in.yaml doc 1: metadata.name: Invalid value: "{long}": must be no more than 253 characters',
        'in.yaml doc 2: metadata.labels: Invalid value: "' + "b" * 64 + '": name part must be no more than 63 characters',
        'in.yaml doc 2: metadata.labels: Invalid value: "a/b/c": a qualified name must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS "
        "subdomain prefix and '/'",
        'in.yaml doc 2: metadata.labels: Invalid value: "/x": prefix part must be non-empty',
    ]


# --- pods ---------------------------------------------------------------------------------------------

def test_containers_required_and_typed() -> None:
    assert check(pod("{}")) == ["in.yaml doc 1: spec.containers: Required value"]
    assert check(pod("{containers: []}")) == ["in.yaml doc 1: spec.containers: Required value"]
    assert check(pod("{containers: nginx}")) == ["in.yaml doc 1: spec.containers: expected a list, got string"]
    assert check("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n") == ["in.yaml doc 1: spec: Required value"]
    assert check(pod("[1]")) == ["in.yaml doc 1: spec: expected a mapping, got list"]


def test_container_names() -> None:
    assert check(pod("{containers: [{name: c}, {name: c}, {image: x}, {name: Big}, 7], initContainers: [{name: c}]}")) == [
        'in.yaml doc 1: spec.containers[1].name: Duplicate value: "c"',
        "in.yaml doc 1: spec.containers[2].name: Required value",
        'in.yaml doc 1: spec.containers[3].name: Invalid value: "Big": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        "in.yaml doc 1: spec.containers[4]: expected a mapping, got integer",
        'in.yaml doc 1: spec.initContainers[0].name: Duplicate value: "c"',
    ]


def test_bad_quantities() -> None:
    spec = ("{containers: [{name: c, resources: {requests: {cpu: 1.5x, memory: -1Gi, cpus: 1, "
            "example.com/dongle: true}, limits: {memory: [1]}}}], overhead: {cpu: lots}}")
    assert check(pod(spec)) == [
        'in.yaml doc 1: spec.containers[0].resources.requests.cpu: "1.5x" is not a quantity',
        'in.yaml doc 1: spec.containers[0].resources.requests.memory: Invalid value: "-1Gi": '
        "must be greater than or equal to 0",
        'in.yaml doc 1: spec.containers[0].resources.requests.cpus: Invalid value: "cpus": '
        "must be a standard resource for containers",
        'in.yaml doc 1: spec.containers[0].resources.requests.example.com/dongle: "true" is not a quantity',
        'in.yaml doc 1: spec.containers[0].resources.limits.memory: "[1]" is not a quantity',
        'in.yaml doc 1: spec.overhead.cpu: "lots" is not a quantity',
    ]


def test_request_above_limit() -> None:
    spec = "{containers: [{name: c, resources: {requests: {cpu: 2, memory: 1Gi}, limits: {cpu: '1', memory: 2Gi}}}]}"
    assert check(pod(spec)) == [
        'in.yaml doc 1: spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to '
        "cpu limit of 1"
    ]


def test_pod_scalar_fields() -> None:
    spec = (f"{{{C}, priority: high, preemptionPolicy: Sometimes, terminationGracePeriodSeconds: -1, "
            "restartPolicy: Sometimes, hostNetwork: 1, priorityClassName: Hi, nodeName: n_1, "
            "schedulerName: [x], priority2: 1}")
    assert check(pod(spec)) == [
        "in.yaml doc 1: spec.priority: expected an integer, got string",
        'in.yaml doc 1: spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", '
        '"PreemptLowerPriority"',
        'in.yaml doc 1: spec.priorityClassName: Invalid value: "Hi": a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        'in.yaml doc 1: spec.nodeName: Invalid value: "n_1": a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        "in.yaml doc 1: spec.schedulerName: expected a string, got list",
        "in.yaml doc 1: spec.hostNetwork: expected a boolean, got integer",
        'in.yaml doc 1: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", '
        '"OnFailure"',
        "in.yaml doc 1: spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_priority_must_fit_int32() -> None:
    assert check(pod(f"{{{C}, priority: 3000000000, overhead: {{cpu: 1.0}}}}")) == [
        "in.yaml doc 1: spec.priority: expected a 32-bit integer, got 3000000000"]
    assert check(pod(f"{{{C}, priority: 1.5}}")) == ["in.yaml doc 1: spec.priority: expected an integer, got number"]
    assert check(pod(f"{{{C}, priority: 1.0}}")) == []  # kubectl sends 1.0 as JSON's 1


def test_ports() -> None:
    spec = ("{containers: [{name: c, ports: [{containerPort: 0}, {containerPort: 70000, hostPort: -1, protocol: HTTP}, "
            "{hostPort: 80}, {containerPort: 1, hostPort: 80}, {containerPort: 2, hostPort: 80, protocol: UDP}]}, "
            "{name: d, ports: [{containerPort: 3, hostPort: 80}, x]}]}")
    assert check(pod(spec)) == [
        "in.yaml doc 1: spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, "
        "inclusive",
        "in.yaml doc 1: spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, "
        "inclusive",
        "in.yaml doc 1: spec.containers[0].ports[1].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
        'in.yaml doc 1: spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", '
        '"TCP", "UDP"',
        "in.yaml doc 1: spec.containers[0].ports[2].containerPort: Required value",
        'in.yaml doc 1: spec.containers[0].ports[3].hostPort: Duplicate value: "TCP//80"',
        'in.yaml doc 1: spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"',
        "in.yaml doc 1: spec.containers[1].ports[1]: expected a mapping, got string",
    ]


def test_tolerations() -> None:
    spec = (f"{{{C}, tolerations: [{{operator: Equal, value: x}}, {{key: a, operator: Exists, value: x}}, "
            "{key: a, operator: Foo}, {key: a, effect: NoRun}, {key: a, effect: NoSchedule, tolerationSeconds: 5}, "
            "{key: a, value: 'b c'}, {key: 'a b'}, {key: a, tolerationSeconds: x}]}")
    assert check(pod(spec)) == [
        'in.yaml doc 1: spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is '
        'empty, which means "match all values and all keys"',
        "in.yaml doc 1: spec.tolerations[1].value: Invalid value: \"x\": value must be empty when `operator` is "
        "'Exists'",
        'in.yaml doc 1: spec.tolerations[2].operator: Unsupported value: "Foo": supported values: "Equal", "Exists"',
        'in.yaml doc 1: spec.tolerations[3].effect: Unsupported value: "NoRun": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
        "in.yaml doc 1: spec.tolerations[4].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
        'in.yaml doc 1: spec.tolerations[5].value: Invalid value: "b c": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        'in.yaml doc 1: spec.tolerations[6].key: Invalid value: "a b": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        "in.yaml doc 1: spec.tolerations[7].tolerationSeconds: expected an integer, got string",
    ]


def test_node_selector() -> None:
    assert check(pod(f"{{{C}, nodeSelector: disk=ssd}}")) == [
        "in.yaml doc 1: spec.nodeSelector: expected a mapping, got string"]
    assert check(pod(f"{{{C}, nodeSelector: {{disk: [ssd]}}}}")) == [
        "in.yaml doc 1: spec.nodeSelector.disk: expected a string, got list"]


def test_node_affinity() -> None:
    spec = (f"{{{C}, affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: "
            "{nodeSelectorTerms: []}, preferredDuringSchedulingIgnoredDuringExecution: ["
            "{weight: 0, preference: {matchExpressions: [{key: a, operator: Foo}]}}, {weight: 1}, "
            "{weight: 5, preference: {matchFields: [{key: metadata.name, operator: In, values: [a, b]}]}}]}}}")
    assert check(pod(spec)) == [
        "in.yaml doc 1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
        "Required value: must have at least one node selector term",
        "in.yaml doc 1: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
        "Invalid value: 0: must be in the range 1-100",
        "in.yaml doc 1: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference."
        'matchExpressions[0].operator: Unsupported value: "Foo": supported values: "In", "NotIn", "Exists", '
        '"DoesNotExist", "Gt", "Lt"',
        "in.yaml doc 1: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].preference: "
        "Required value",
        "in.yaml doc 1: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[2].preference."
        "matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node "
        "field selector",
    ]
    required = ("{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Gt, values: [x]}]}, "
                "{matchExpressions: {key: a}}]}")
    assert check(pod(f"{{{C}, affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: "
                     f"{required}}}}}}}")) == [
        "in.yaml doc 1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1]"
        ".matchExpressions: expected a list, got mapping",
    ]


def test_pod_affinity() -> None:
    spec = (f"{{{C}, affinity: {{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: ["
            "{labelSelector: {matchExpressions: [{key: app, operator: Equals, values: [x]}]}}, "
            "{labelSelector: {matchLabels: [a]}, topologyKey: ''}, {topologyKey: zone, matchLabelKeys: [app]}], "
            "preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101}]}, "
            "podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, "
            "namespaces: [Bad]}]}}}")
    assert check(pod(spec)) == [
        "in.yaml doc 1: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
        'matchExpressions[0].operator: "Equals" is not a valid label selector operator',
        "in.yaml doc 1: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
        "Required value: can not be empty",
        "in.yaml doc 1: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector."
        "matchLabels: expected a mapping, got list",
        "in.yaml doc 1: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey: "
        "Required value: can not be empty",
        "in.yaml doc 1: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[2].matchLabelKeys: "
        "Forbidden: must not be specified when labelSelector is not set",
        "in.yaml doc 1: spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
        "Invalid value: 101: must be in the range 1-100",
        "in.yaml doc 1: spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm: "
        "Required value",
        "in.yaml doc 1: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]: "
        'Invalid value: "Bad": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '
        "'-', and must start and end with an alphanumeric character",
    ]


def test_topology_spread_constraints() -> None:
    spec = (f"{{{C}, topologySpreadConstraints: [{{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}}, "
            "{maxSkew: -1, whenUnsatisfiable: Maybe, minDomains: 0}, "
            "{topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2, nodeAffinityPolicy: Always, "
            "matchLabelKeys: [a]}, {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, "
            "{maxSkew: 1, topologyKey: zone}, {maxSkew: '1', topologyKey: z, whenUnsatisfiable: DoNotSchedule, "
            "labelSelector: {matchExpressions: [{key: a, operator: In}]}}]}")
    assert check(pod(spec)) == [
        "in.yaml doc 1: spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        "in.yaml doc 1: spec.topologySpreadConstraints[1].maxSkew: Invalid value: -1: must be greater than zero",
        "in.yaml doc 1: spec.topologySpreadConstraints[1].topologyKey: Required value: can not be empty",
        'in.yaml doc 1: spec.topologySpreadConstraints[1].whenUnsatisfiable: Unsupported value: "Maybe": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
        "in.yaml doc 1: spec.topologySpreadConstraints[1].minDomains: Invalid value: 0: must be greater than zero",
        "in.yaml doc 1: spec.topologySpreadConstraints[1].minDomains: Invalid value: 0: can only use minDomains if "
        "whenUnsatisfiable=DoNotSchedule, not Maybe",
        "in.yaml doc 1: spec.topologySpreadConstraints[2].maxSkew: Invalid value: 0: must be greater than zero",
        "in.yaml doc 1: spec.topologySpreadConstraints[2].minDomains: Invalid value: 2: can only use minDomains if "
        "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        'in.yaml doc 1: spec.topologySpreadConstraints[2].nodeAffinityPolicy: Unsupported value: "Always": '
        'supported values: "Honor", "Ignore"',
        "in.yaml doc 1: spec.topologySpreadConstraints[2].matchLabelKeys: Forbidden: must not be specified when "
        "labelSelector is not set",
        "in.yaml doc 1: spec.topologySpreadConstraints[3].{topologyKey, whenUnsatisfiable}: Duplicate value: "
        '"{zone, DoNotSchedule}"',
        'in.yaml doc 1: spec.topologySpreadConstraints[4].whenUnsatisfiable: Unsupported value: "": supported values: '
        '"DoNotSchedule", "ScheduleAnyway"',
        "in.yaml doc 1: spec.topologySpreadConstraints[5].maxSkew: expected an integer, got string",
        "in.yaml doc 1: spec.topologySpreadConstraints[5].labelSelector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn'",
    ]


def test_scheduling_gates() -> None:
    spec = f"{{{C}, nodeName: n1, schedulingGates: [{{name: a}}, {{name: a}}, {{}}]}}"
    assert check(pod(spec)) == [
        'in.yaml doc 1: spec.schedulingGates[1]: Duplicate value: "a"',
        "in.yaml doc 1: spec.schedulingGates[2].name: Required value",
        "in.yaml doc 1: spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
    ]


def test_pod_status() -> None:
    assert check(pod(f"{{{C}}}") + "status: {phase: Sleeping}\n") == [
        'in.yaml doc 1: status.phase: Unsupported value: "Sleeping": supported values: "Failed", "Pending", '
        '"Running", "Succeeded", "Unknown"'
    ]


# --- nodes, priority classes, PDBs, runtime classes --------------------------------------------------

def test_node() -> None:
    body = ("spec:\n  unschedulable: 'yes'\n  taints: [{effect: NoSchedule}, {key: k, effect: NoRun}, {key: k}, "
            "{key: d, effect: NoSchedule}, {key: d, effect: NoSchedule}, {key: d, value: 'x y', effect: NoExecute}]\n"
            "status: {capacity: {cpu: lots}, allocatable: {memory: -1}}")
    assert check(node(body)) == [
        "in.yaml doc 1: spec.unschedulable: expected a boolean, got string",
        "in.yaml doc 1: spec.taints[0].key: Required value",
        'in.yaml doc 1: spec.taints[1].effect: Unsupported value: "NoRun": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
        "in.yaml doc 1: spec.taints[2].effect: Required value",
        'in.yaml doc 1: spec.taints[4]: Duplicate value: "d:NoSchedule": taints must be unique by key and effect pair',
        'in.yaml doc 1: spec.taints[5].value: Invalid value: "x y": a valid label must be an empty string or consist '
        "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        'in.yaml doc 1: status.capacity.cpu: "lots" is not a quantity',
        'in.yaml doc 1: status.allocatable.memory: Invalid value: "-1": must be greater than or equal to 0',
    ]
    assert check(node("spec: {taints: NoSchedule}")) == ["in.yaml doc 1: spec.taints: expected a list, got string"]


def test_priority_class() -> None:
    text = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\n"
    assert check(text + "globalDefault: 'true'\npreemptionPolicy: x\n") == [
        "in.yaml doc 1: value: Required value",
        "in.yaml doc 1: globalDefault: expected a boolean, got string",
        'in.yaml doc 1: preemptionPolicy: Unsupported value: "x": supported values: "Never", "PreemptLowerPriority"',
    ]
    assert check(text + "value: 1.5\n") == ["in.yaml doc 1: value: expected an integer, got number"]
    assert check(text + "value: 2147483648\n") == ["in.yaml doc 1: value: expected a 32-bit integer, got 2147483648"]
    # Ceilings and reserved names are admission's business, not validation's.
    assert check(text.replace("name: p", "name: system-x") + "value: 2000000001\n") == []


def test_pdb() -> None:
    text = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb}\nspec: "
    assert check(text + "{minAvailable: 1, maxUnavailable: '150%', selector: {matchExpressions: "
                 "[{key: a, operator: In}]}, unhealthyPodEvictionPolicy: x}\n") == [
        "in.yaml doc 1: spec: minAvailable and maxUnavailable cannot be both set",
        'in.yaml doc 1: spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%',
        "in.yaml doc 1: spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` "
        "is 'In' or 'NotIn'",
        'in.yaml doc 1: spec.unhealthyPodEvictionPolicy: Unsupported value: "x": supported values: "AlwaysAllow", '
        '"IfHealthyBudget"',
    ]
    assert check(text + "{minAvailable: '5'}\n") == [
        'in.yaml doc 1: spec.minAvailable: Invalid value: "5": a valid percent string must be a numeric string '
        "followed by an ending '%' (e.g. '1%',  or '93%')"
    ]
    assert check(text + "{maxUnavailable: -1}\n") == [
        "in.yaml doc 1: spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
    assert check(text + "{maxUnavailable: true}\n") == [
        "in.yaml doc 1: spec.maxUnavailable: expected an integer or a percent string, got boolean"]
    # As on the API server, neither being set is allowed (the budget then permits every disruption).
    assert check(text + "{selector: {matchLabels: {app: a}}}\n") == []


def test_runtime_class() -> None:
    text = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: r}\n"
    assert check(text + "overhead: {podFixed: {cpu: x, gpus: 1}}\nscheduling: {tolerations: [{key: a, effect: Nope}]}\n") == [
        "in.yaml doc 1: handler: Required value",
        'in.yaml doc 1: overhead.podFixed.cpu: "x" is not a quantity',
        'in.yaml doc 1: overhead.podFixed.gpus: Invalid value: "gpus": must be a standard resource for containers',
        'in.yaml doc 1: scheduling.tolerations[0].effect: Unsupported value: "Nope": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
    ]
    assert check(text + "handler: Kata_1\n") == [
        'in.yaml doc 1: handler: Invalid value: "Kata_1": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character"
    ]


# --- workloads ----------------------------------------------------------------------------------------

def test_replica_set() -> None:
    text = ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  replicas: -1\n"
            "  selector: {matchLabels: {app: a}}\n  template: {metadata: {labels: {app: b}}, spec: "
            "{restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: x}}}]}}\n")
    assert check(text) == [
        "in.yaml doc 1: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'in.yaml doc 1: spec.template.metadata.labels: Invalid value: {"app":"b"}: `selector` does not match '
        "template `labels`",
        'in.yaml doc 1: spec.template.spec.containers[0].resources.requests.cpu: "x" is not a quantity',
        'in.yaml doc 1: spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]


def test_deployment_and_daemon_set() -> None:
    text = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {}, strategy: "
            "{type: Blue, rollingUpdate: {maxSurge: x}}}\n---\n"
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec: {selector: {}, template: {spec: {}}}\n"
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: e}\n")
    assert check(text) == [
        "in.yaml doc 1: spec.selector: Required value",
        "in.yaml doc 1: spec.template.spec: Required value",
        'in.yaml doc 1: spec.strategy.type: Unsupported value: "Blue": supported values: "Recreate", "RollingUpdate"',
        'in.yaml doc 1: spec.strategy.rollingUpdate.maxSurge: Invalid value: "x": a valid percent string must be a '
        "numeric string followed by an ending '%' (e.g. '1%',  or '93%')",
        "in.yaml doc 2: spec.selector: Invalid value: {}: empty selector is invalid for daemonset",
        "in.yaml doc 2: spec.template.spec.containers: Required value",
        "in.yaml doc 3: spec: Required value",
    ]


# --- component configurations -------------------------------------------------------------------------

def test_configuration_shapes() -> None:
    text = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- {plugins: {score: {enabled: {name: x}}}, pluginConfig: {name: x}}\n---\n"
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: [x]\nmaxPods: many\n"
            "---\napiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: [{plugins: {balance: "
            "{enabled: RemoveDuplicates}}}]\n")
    assert check(text) == [
        "in.yaml doc 1: profiles[0].plugins.score.enabled: expected a list, got mapping",
        "in.yaml doc 1: profiles[0].pluginConfig: expected a list, got mapping",
        "in.yaml doc 2: evictionHard: expected a mapping, got list",
        "in.yaml doc 2: maxPods: expected an integer, got string",
        "in.yaml doc 3: profiles[0].plugins.balance.enabled: expected a list, got string",
    ]


# --- duplicates ---------------------------------------------------------------------------------------

def test_duplicate_objects() -> None:
    text = (pod(f"{{{C}}}", "{name: a, namespace: default}") + "---\n" + pod(f"{{{C}}}") + "---\n"
            + pod(f"{{{C}}}", "{name: a, namespace: other}") + "---\n" + node("") + "---\n" + node(""))
    assert check(text) == [
        'in.yaml doc 2: metadata.name: duplicate Pod "default/a" (first defined in in.yaml doc 1)',
        'in.yaml doc 5: metadata.name: duplicate Node "n1" (first defined in in.yaml doc 4)',
    ]


def test_duplicates_across_files_and_lists() -> None:
    Path("d").mkdir()
    Path("d/a.yaml").write_text(node(""))
    Path("d/b.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n- " + node("").replace("\n", "\n  ").rstrip()
                                + "\n")
    with pytest.raises(InputError) as info:
        validate(load_paths(["d"]))
    assert str(info.value) == 'd/b.yaml doc 1: items[0].metadata.name: duplicate Node "n1" (first defined in d/a.yaml doc 1)'


def test_duplicate_configuration() -> None:
    text = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
    assert check(text + "---\n" + text) == [
        "in.yaml doc 2: kind: duplicate KubeletConfiguration (first defined in in.yaml doc 1)"]


def test_duplicates_created_by_scenario_events() -> None:
    def scenario(events: str) -> str:
        return f"apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nspec:\n  events:\n{events}"

    created = "{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}"
    text = pod(f"{{{C}}}") + "---\n" + scenario(f"  - {{at: 10s, create: {created}}}\n")
    assert check(text) == [
        "in.yaml doc 2: spec.events[0].create.metadata.name: duplicate Pod \"default/a\" (first defined in in.yaml doc 1)"
    ]
    # Re-created after a delete or an eviction: fine. Events are replayed in time order, not list order.
    ok = scenario(f"  - {{at: 20s, create: {created}}}\n  - {{at: 10s, evict: {{name: a}}}}\n"
                  f"  - {{at: 30s, delete: {{kind: Pod, name: a}}}}\n  - {{at: 30s, create: {created}}}\n")
    assert check(pod(f"{{{C}}}") + "---\n" + ok) == []
    twice = scenario(f"  - {{at: 1s, create: {created}}}\n  - {{at: 2s, create: {created}}}\n")
    assert check(twice) == [
        'in.yaml doc 1: spec.events[1].create.metadata.name: duplicate Pod "default/a" (first defined in in.yaml doc 1 '
        "spec.events[0].create)"
    ]


# --- scenarios ----------------------------------------------------------------------------------------

SCENARIO = "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"


def test_scenario_spec() -> None:
    assert check(SCENARIO) == ["in.yaml doc 1: spec: Required value"]
    assert check(SCENARIO + "spec: {seed: x, until: forever, typo: 1, events: {}, expect: 1}\n") == [
        'in.yaml doc 1: spec.typo: unknown field "typo"',
        "in.yaml doc 1: spec.seed: expected an integer, got string",
        'in.yaml doc 1: spec.until: "forever" is not a duration',
        "in.yaml doc 1: spec.events: expected a list, got mapping",
        "in.yaml doc 1: spec.expect: expected a list, got integer",
    ]


def test_scenario_events() -> None:
    events = """\
  - {at: -1s, create: {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, resources: {requests: {cpu: 1.5x}}}]}}}
  - {create: {apiVersion: kubesched.io/v1alpha1, kind: Scenario}}
  - {at: 1s}
  - {at: 1s, delete: {name: a}, evict: {name: a}}
  - {at: 1s, delete: {kind: Foo, name: a}, foo: 1}
  - {at: 1s, patch: {kind: Node, name: n1}}
  - {at: 1s, drain: {}}
  - {at: 1s, usage: {name: a}}
  - {at: 1s, usage: {name: a, memory: lots}}
  - {at: 1s, evict: {namespace: default}}
  - {at: 1s, create: [x]}
  - {at: 1s, delete: {kind: Pod}}
  - 5
"""
    assert check(SCENARIO + "spec:\n  events:\n" + events) == [
        'in.yaml doc 1: spec.events[0].at: Invalid value: "-1s": must be greater than or equal to 0',
        'in.yaml doc 1: spec.events[0].create.spec.containers[0].resources.requests.cpu: "1.5x" is not a quantity',
        'in.yaml doc 1: spec.events[1].create.kind: Unsupported value: "Scenario": supported values: ' + KINDS,
        "in.yaml doc 1: spec.events[2]: Required value: one of create, delete, evict, patch, drain, usage",
        "in.yaml doc 1: spec.events[3]: Invalid value: exactly one action per event, not delete and evict",
        'in.yaml doc 1: spec.events[4].foo: unknown field "foo" (an event has `at` and one of create, delete, evict, '
        "patch, drain, usage)",
        'in.yaml doc 1: spec.events[4].delete.kind: Unsupported value: "Foo": supported values: ' + KINDS,
        "in.yaml doc 1: spec.events[5].patch.patch: Required value",
        "in.yaml doc 1: spec.events[6].drain.node: Required value",
        "in.yaml doc 1: spec.events[7].usage: Required value: at least one resource amount (e.g. memory: 1Gi)",
        'in.yaml doc 1: spec.events[8].usage.memory: "lots" is not a quantity',
        "in.yaml doc 1: spec.events[9].evict.name: Required value",
        "in.yaml doc 1: spec.events[10].create: expected a mapping, got list",
        "in.yaml doc 1: spec.events[11].delete.name: Required value",
        "in.yaml doc 1: spec.events[12]: expected a mapping, got integer",
    ]


def test_scenario_create_of_a_kind_kubesched_only_stores() -> None:
    events = "  - {at: 0s, create: {apiVersion: v1, kind: Service, metadata: {name: s}}}\n"
    assert check(SCENARIO + "spec:\n  events:\n" + events) == []


def test_scenario_expectations() -> None:
    expect = """\
  - {pod: a, nodeName: 5}
  - {pod: default/a}
  - {pod: default/a, node: n1}
  - {node: n1, phase: Running}
  - {rejected: Foo/a, message: x, messageContains: z}
  - {rejected: a}
  - {pod: default/a, event: {foo: 1}, at: soon}
  - {pod: default/a, event: {}}
  - {pod: default/a, phase: Done, deleted: 'no', priority: x}
  - {node: n1, requested: {cpu: x}, taints: [{key: a, effect: Never}], unschedulable: 1}
  - {at: 1s}
  - {pod: default/a, event: {message: a, messageContains: b}}
"""
    assert check(SCENARIO + "spec:\n  expect:\n" + expect) == [
        'in.yaml doc 1: spec.expect[0].pod: Invalid value: "a": must be "namespace/name"',
        "in.yaml doc 1: spec.expect[0].nodeName: expected a string, got integer",
        "in.yaml doc 1: spec.expect[1]: Required value: at least one of nodeName, phase, deleted, reason, "
        "nominatedNodeName, priority, event, score, message, messageContains, conditions, restartCount, replaced, containers",
        f"in.yaml doc 1: spec.expect[2]: Invalid value: exactly one of {SUBJECTS}, not pod and node",
        'in.yaml doc 1: spec.expect[3].phase: unknown field "phase" for a node expectation',
        "in.yaml doc 1: spec.expect[3]: Required value: at least one of requested, allocatable, unschedulable, taints, "
        "conditions",
        "in.yaml doc 1: spec.expect[4]: Invalid value: specify message or messageContains, not both",
        'in.yaml doc 1: spec.expect[5].rejected: Invalid value: "a": must be "Kind/namespace/name" or "Kind/name"',
        'in.yaml doc 1: spec.expect[6].at: "soon" is not a duration',
        'in.yaml doc 1: spec.expect[6].event.foo: unknown field "foo" for an event expectation',
        "in.yaml doc 1: spec.expect[7].event: Required value: at least one of reason, message, messageContains, "
        "count",
        'in.yaml doc 1: spec.expect[8].phase: Unsupported value: "Done": supported values: "Failed", "Pending", '
        '"Running", "Succeeded", "Unknown"',
        "in.yaml doc 1: spec.expect[8].deleted: expected a boolean, got string",
        "in.yaml doc 1: spec.expect[8].priority: expected an integer, got string",
        'in.yaml doc 1: spec.expect[9].requested.cpu: "x" is not a quantity',
        "in.yaml doc 1: spec.expect[9].unschedulable: expected a boolean, got integer",
        'in.yaml doc 1: spec.expect[9].taints[0].effect: Unsupported value: "Never": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
        f"in.yaml doc 1: spec.expect[10]: Required value: exactly one of {SUBJECTS}",
        "in.yaml doc 1: spec.expect[11].event: Invalid value: specify message or messageContains, not both",
    ]


# --- all at once --------------------------------------------------------------------------------------

def test_problems_from_every_document_are_reported_together() -> None:
    text = (pod("{containers: x}") + "---\n" + node("spec: {taints: [{key: a, effect: NoRun}]}") + "---\n"
            + "apiVersion: example.com/v1\nkind: Foo\n")
    assert check(text) == [
        "in.yaml doc 1: spec.containers: expected a list, got string",
        'in.yaml doc 2: spec.taints[0].effect: Unsupported value: "NoRun": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
        "in.yaml doc 3: metadata.name: Required value",
    ]


# --- robustness: garbage anywhere gives InputError, never a crash ---------------------------------------

ROBUST_OBJECTS = [d for d in yaml.safe_load_all(VALID) if d]

GARBAGE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["", "-1", "1.5x", "NoRun", "In", "Exists", "a/b/c", "100%", "-5%", "1e400", "0x10", "1Gi"]),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.dictionaries(st.text(max_size=3),
                                                                                     st.integers())), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.text(max_size=3), st.integers(), st.lists(
        st.text(max_size=2), max_size=2)), max_size=3),
)


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every position in a JSON tree (leaves and subtrees), as key/index tuples."""
    found = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*path, i))
    return found


def _replace(obj: Any, path: tuple, new: Any) -> None:
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = new


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_mutations_never_crash(data: st.DataObject) -> None:
    """Garbage in any field of any object (alone, or among the others) is reported, never a crash."""
    objs = copy.deepcopy(ROBUST_OBJECTS)
    target = data.draw(st.sampled_from(objs))
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(target)
        if not paths:
            break
        _replace(target, data.draw(st.sampled_from(paths)), data.draw(GARBAGE))
    batch = objs if data.draw(st.booleans()) else [target]
    try:
        validate([LoadedObject(obj, "fuzz.yaml", i + 1) for i, obj in enumerate(batch)])
    except InputError as e:
        assert e.problems
        assert all(str(p).startswith("fuzz.yaml doc ") and len(str(p).splitlines()) == 1 for p in e.problems)


def test_score_expectations() -> None:
    expect = "  - {pod: default/a, score: {plugin: X, raw: high, weight: 1}}\n  - {pod: default/a, score: 5}\n"
    assert check(SCENARIO + "spec:\n  expect:\n" + expect) == [
        'in.yaml doc 1: spec.expect[0].score.weight: unknown field "weight" for a score expectation',
        "in.yaml doc 1: spec.expect[0].score.node: Required value: the node whose score is checked",
        "in.yaml doc 1: spec.expect[0].score.raw: expected an integer, got string",
        "in.yaml doc 1: spec.expect[1].score: expected a mapping, got integer",
    ]


def test_event_time_defaults_to_the_start() -> None:
    created = "{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}"
    assert check(SCENARIO + f"spec:\n  events:\n  - {{create: {created}}}\n  - {{at: 0s, create: {created}}}\n") == [
        'in.yaml doc 1: spec.events[1].create.metadata.name: duplicate Pod "default/a" (first defined in in.yaml doc 1 '
        "spec.events[0].create)"
    ]


def test_times() -> None:
    text = (pod(f"{{{C}}}", "{name: a, creationTimestamp: yesterday}") + "---\n"
            + pod(f"{{{C}}}", "{name: b, creationTimestamp: '2024-01-01T00:00:00'}") + "---\n"
            + pod(f"{{{C}}}", "{name: c, creationTimestamp: 2024-01-01T00:00:00Z}") + "---\n"
            + SCENARIO + "spec: {startTime: 2026-01-01}\n---\n"
            + SCENARIO.replace("name: s", "name: t") + "spec: {startTime: '2026-01-01T10:00:00+02:00'}\n")
    assert check(text) == [
        'in.yaml doc 1: metadata.creationTimestamp: Invalid value: "yesterday": must be an RFC 3339 time, e.g. '
        "2026-01-01T00:00:00Z",
        'in.yaml doc 2: metadata.creationTimestamp: Invalid value: "2024-01-01T00:00:00": must be an RFC 3339 time, '
        "e.g. 2026-01-01T00:00:00Z",
        'in.yaml doc 4: spec.startTime: Invalid value: "2026-01-01": must be an RFC 3339 time, e.g. '
        "2026-01-01T00:00:00Z",
    ]


def test_simulation_annotations_are_durations() -> None:
    meta = "{name: a, annotations: {sim.kubesched.io/duration: forever, sim.kubesched.io/shutdown: -5s, other: x}}"
    template = ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {selector: {matchLabels: {a: b}}, "
                "template: {metadata: {labels: {a: b}, annotations: {sim.kubesched.io/duration: 1 hour}}, "
                f"spec: {{{C}}}}}}}\n")
    assert check(pod(f"{{{C}}}", meta) + "---\n" + template + "---\n" + node("", "n1").replace(
        "{name: n1}", "{name: n1, annotations: {sim.kubesched.io/duration: x}}")) == [
        'in.yaml doc 1: metadata.annotations.sim.kubesched.io/duration: "forever" is not a duration',
        'in.yaml doc 1: metadata.annotations.sim.kubesched.io/shutdown: Invalid value: "-5s": must be greater than or '
        "equal to 0",
        'in.yaml doc 2: spec.template.metadata.annotations.sim.kubesched.io/duration: "1 hour" is not a duration',
    ]


def test_node_images() -> None:
    body = "status: {images: [{names: [a, 5], sizeBytes: 10Mi}, x]}"
    assert check(node(body)) == [
        "in.yaml doc 1: status.images[0].names[1]: expected a string, got integer",
        "in.yaml doc 1: status.images[0].sizeBytes: expected an integer, got string",
        "in.yaml doc 1: status.images[1]: expected a mapping, got string",
    ]


def test_patch_events_are_checked_against_the_patched_object() -> None:
    events = """\
  - {at: 1s, patch: {kind: Node, name: n1, patch: {spec: {taints: [{key: a, effect: NoRun}], unschedulable: 'yes'}}}}
  - {at: 2s, patch: {kind: Node, name: n1, patch: {metadata: {labels: {zone: 'a b'}}}}}
  - {at: 3s, patch: {kind: Deployment, name: web, patch: {spec: {replicas: -2}}}}
  - {at: 4s, patch: {kind: Deployment, name: web, patch: {spec: {template: {metadata: {labels: {app: other}}}}}}}
  - {at: 5s, patch: {kind: Pod, name: unknown, patch: {metadata: {labels: {ok: fine}}}}}
  - {at: 6s, patch: {kind: Pod, name: unknown, patch: {spec: {tolerations: [{key: a, operator: Exists, value: b}]}}}}
  - {at: 7s, patch: {kind: Node, name: n1, patch: {spec: {taints: null}}}}
"""
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {selector: {matchLabels: "
                  f"{{app: web}}}}, template: {{metadata: {{labels: {{app: web}}}}, spec: {{{C}}}}}}}\n")
    assert check(node("") + "---\n" + deployment + "---\n" + SCENARIO + "spec:\n  events:\n" + events) == [
        'in.yaml doc 3: spec.events[0].patch.patch.spec.unschedulable: expected a boolean, got string',
        'in.yaml doc 3: spec.events[0].patch.patch.spec.taints[0].effect: Unsupported value: "NoRun": supported '
        'values: "NoExecute", "NoSchedule", "PreferNoSchedule"',
        'in.yaml doc 3: spec.events[1].patch.patch.metadata.labels: Invalid value: "a b": a valid label must be an '
        "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character",
        "in.yaml doc 3: spec.events[2].patch.patch.spec.replicas: Invalid value: -2: must be greater than or equal to 0",
        'in.yaml doc 3: spec.events[3].patch.patch.spec.template.metadata.labels: Invalid value: {"app":"other"}: '
        "`selector` does not match template `labels`",
        'in.yaml doc 3: spec.events[5].patch.patch.spec.tolerations[0].value: Invalid value: "b": value must be empty '
        "when `operator` is 'Exists'",
    ]
