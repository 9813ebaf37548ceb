"""Unknown fields are not silently ignored (issue 12): kubectl's field-validation warnings for the
built-in kinds, what kubesched ignores of a component configuration, and the API server's decoding
(wrong types refused, nulls read as unset) that comes with reading the client's schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.api import fieldschema
from kubesched.api.errors import InputError, Problem
from kubesched.api.loader import load_paths
from kubesched.commands.cli import main
from kubesched.input.validation import validate
from kubesched.sim.runner import load

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(text: str, name: str = "pods.yaml") -> tuple[list[str], list[str]]:
    """(problem lines, warning lines) of the documents in `text`, written to a real file."""
    Path(name).write_text(text)
    warnings: list[Problem] = []
    try:
        validate(load_paths([name]), warnings)
    except InputError as e:
        return str(e).splitlines(), [str(w) for w in warnings]
    return [], [str(w) for w in warnings]


def warnings_of(text: str, name: str = "pods.yaml") -> list[str]:
    problems, warnings = check(text, name)
    assert problems == []
    return warnings


def test_misspelt_fields_warn_as_kubectl_does() -> None:
    text = NODE + """---
apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec:
  nodeSelecter: {disk: ssd}
  containers:
  - name: c
    resource: {requests: {cpu: "1"}}
"""
    assert warnings_of(text) == ['pods.yaml doc 3: unknown field "spec.nodeSelecter"',
                                 'pods.yaml doc 3: unknown field "spec.containers[0].resource"']


def test_list_items_carry_their_index() -> None:
    text = """apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c}]}
- metadata: {name: b}
  spec: {containers: [{name: c}], tolerations: [{key: k, operator: Exists, efect: NoSchedule}]}
"""
    assert warnings_of(text) == ['pods.yaml doc 1: items[1]: unknown field "spec.tolerations[0].efect"']


def test_every_kind_is_checked_templates_and_status_included() -> None:
    text = """apiVersion: v1
kind: Namespace
metadata: {name: team, lables: {a: b}}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {taint: []}
status: {allocatable: {cpu: "1"}, condition: []}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicyy: Never
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec: {minAvailable: 1, selectr: {}}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rc}
handler: runc
overhead: {podfixed: {cpu: 10m}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, imagePullPolicyy: Always}]}
status: {readyReplica: 1}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotation: {}}
    spec: {containers: [{name: c}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy: {rollingUpdate: {maxUnavailabe: 1}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c}]}
"""
    assert warnings_of(text, "all.yaml") == [
        'all.yaml doc 1: unknown field "metadata.lables"',
        'all.yaml doc 2: unknown field "spec.taint"',
        'all.yaml doc 2: unknown field "status.condition"',
        'all.yaml doc 3: unknown field "preemptionPolicyy"',
        'all.yaml doc 4: unknown field "spec.selectr"',
        'all.yaml doc 5: unknown field "overhead.podfixed"',
        'all.yaml doc 6: unknown field "spec.template.spec.containers[0].imagePullPolicyy"',
        'all.yaml doc 6: unknown field "status.readyReplica"',
        'all.yaml doc 7: unknown field "spec.template.metadata.annotation"',
        'all.yaml doc 8: unknown field "spec.updateStrategy.rollingUpdate.maxUnavailabe"',
    ]


def test_an_export_warns_of_nothing() -> None:
    """What `kubectl get -o yaml` prints: managedFields, status, owners, free-form annotations."""
    text = """apiVersion: v1
kind: Pod
metadata:
  name: web-7d4b9c-x2x9z
  namespace: default
  uid: 0d0f6c9e-1111-2222-3333-444455556666
  resourceVersion: "12345"
  creationTimestamp: "2026-01-01T00:00:00Z"
  generateName: web-7d4b9c-
  labels: {app: web, pod-template-hash: 7d4b9c}
  annotations: {kubectl.kubernetes.io/restartedAt: "2026-01-01T00:00:00Z", sim.kubesched.io/usage-memory: 1Gi}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-7d4b9c, uid: abc, controller: true, blockOwnerDeletion: true}
  managedFields:
  - manager: kube-controller-manager
    operation: Update
    apiVersion: v1
    time: "2026-01-01T00:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
spec:
  nodeName: n1
  containers:
  - name: web
    image: nginx:1.27
    resources: {requests: {cpu: 100m, memory: 128Mi}}
    ports: [{containerPort: 80, protocol: TCP}]
    volumeMounts: [{name: kube-api-access, mountPath: /var/run/secrets, readOnly: true}]
  volumes:
  - name: kube-api-access
    projected: {sources: [{serviceAccountToken: {expirationSeconds: 3607, path: token}}]}
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}]
status:
  phase: Running
  qosClass: Burstable
  startTime: "2026-01-01T00:00:00Z"
  conditions: [{type: Ready, status: "True", lastProbeTime: null, lastTransitionTime: "2026-01-01T00:00:01Z"}]
  containerStatuses:
  - name: web
    ready: true
    restartCount: 0
    image: nginx:1.27
    imageID: docker.io/library/nginx@sha256:abc
    started: true
    state: {running: {startedAt: "2026-01-01T00:00:01Z"}}
"""
    assert warnings_of(text) == []


def test_scenario_events_are_checked_too() -> None:
    text = NODE + """---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  events:
  - {at: 1s, create: {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {nodeSelecter: {}, containers: [{name: c}]}}}
  - {at: 2s, patch: {kind: Node, name: n1, patch: {spec: {unschedulabel: true, taints: null}}}}
"""
    assert warnings_of(text, "s.yaml") == ['s.yaml doc 2: spec.events[0].create: unknown field "spec.nodeSelecter"',
                                           's.yaml doc 2: spec.events[1].patch.patch: unknown field "spec.unschedulabel"']


SCHEDULER_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: true}
clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf}
extenders: [{urlPrefix: "http://extender:8888", filterVerb: filter}]
profile: []
profiles:
- schedulerName: default-scheduler
  plugins:
    scor: {}
    multiPoint: {enabled: [{name: VolumeBinding}]}
  pluginConfig:
  - name: VolumeBinding
    args: {bindTimeoutSeconds: 600, bindTimeout: 60}
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resourcs: []}}
"""


def test_scheduler_configuration_says_what_kubesched_ignores() -> None:
    assert warnings_of(SCHEDULER_CONFIG, "kubesched.yaml") == [
        'kubesched.yaml doc 1: unknown field "profile"',
        'kubesched.yaml doc 1: unknown field "profiles[0].plugins.scor"',
        'kubesched.yaml doc 1: unknown field "profiles[0].pluginConfig[0].args.bindTimeout"',
        'kubesched.yaml doc 1: unknown field "profiles[0].pluginConfig[1].args.scoringStrategy.resourcs"',
        "kubesched.yaml doc 1: leaderElection: ignored: kubesched does not elect a leader",
        "kubesched.yaml doc 1: clientConnection: ignored: kubesched's scheduler talks to its in-process API server",
        "kubesched.yaml doc 1: extenders: ignored: kubesched does not call scheduler extenders",
    ]
    Path("kubesched.yaml").write_text(SCHEDULER_CONFIG + "---\n" + NODE)
    assert [str(w) for w in load(["kubesched.yaml"]).warnings][-1].endswith("does not call scheduler extenders")


def test_scheduler_configuration_types_are_those_kube_scheduler_decodes() -> None:
    text = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: [MostAllocated]}
  - name: NodeAffinity
    args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: x}]}}}
"""
    assert check(text, "k.yaml")[0] == [
        "k.yaml doc 1: profiles[0].pluginConfig[0].args.scoringStrategy: expected a mapping, got list",
        "k.yaml doc 1: profiles[0].pluginConfig[1].args.addedAffinity.requiredDuringSchedulingIgnoredDuring"
        "Execution.nodeSelectorTerms[0].matchExpressions: expected a list, got string",
    ]


def test_kubelet_configuration_says_what_kubesched_ignores() -> None:
    text = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard: {memory.available: 100Mi}
evictionHrad: {memory.available: 1Gi}
maxPods: 20
"""
    assert warnings_of(text, "kubelet.yaml") == [
        "kubelet.yaml doc 1: evictionHrad: ignored: not a KubeletConfiguration field; kubesched's kubelets "
        "read only the eviction settings",
        "kubelet.yaml doc 1: maxPods: ignored: a node's pod capacity comes from its Node object",
    ]


# /etc/kubernetes/kubelet/config.json of an EKS Amazon Linux 2023 node (nodeadm), as YAML.
EKS_KUBELET = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
authentication:
  anonymous: {enabled: false}
  webhook: {cacheTTL: 2m0s, enabled: true}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 5m0s, cacheUnauthorizedTTL: 30s}
cgroupDriver: systemd
cgroupRoot: /
clusterDNS: [172.20.0.10]
clusterDomain: cluster.local
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
evictionHard: {memory.available: 100Mi, nodefs.available: 10%, nodefs.inodesFree: 5%}
featureGates: {RotateKubeletServerCertificate: true}
hairpinMode: hairpin-veth
kubeReserved: {cpu: 70m, ephemeral-storage: 1Gi, memory: 442Mi}
kubeReservedCgroup: /runtime
logging: {verbosity: 2}
maxPods: 29
protectKernelDefaults: true
providerID: aws:///eu-west-1a/i-0123456789abcdef0
readOnlyPort: 0
serializeImagePulls: false
serverTLSBootstrap: true
shutdownGracePeriod: 2m30s
shutdownGracePeriodCriticalPods: 30s
systemReservedCgroup: /system
tlsCipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
"""


def test_a_real_node_kubelet_configuration_is_one_line_of_what_plays_no_part() -> None:
    found = warnings_of(EKS_KUBELET, "kubelet.yaml")
    assert found == [
        "kubelet.yaml doc 1: ignored, as they play no part in scheduling or eviction: address, authentication, "
        "authorization, cgroupDriver, cgroupRoot, clusterDNS, clusterDomain, containerRuntimeEndpoint, "
        "hairpinMode, kubeReservedCgroup, logging, protectKernelDefaults, providerID, readOnlyPort, "
        "serializeImagePulls, serverTLSBootstrap, shutdownGracePeriod, shutdownGracePeriodCriticalPods, "
        "systemReservedCgroup, tlsCipherSuites",
        "kubelet.yaml doc 1: featureGates: ignored: kubesched simulates the default feature gates",
        "kubelet.yaml doc 1: kubeReserved: ignored: a node's allocatable comes from its Node object",
        "kubelet.yaml doc 1: maxPods: ignored: a node's pod capacity comes from its Node object",
    ]


def test_descheduler_policy_unknown_fields_are_errors_as_at_its_top() -> None:
    text = """apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  plugin: {}
  pluginConfig: [{name: PodLifeTime, args: {maxPodLifeTimeSeconds: 60}, arg: {}}]
  plugins: {deschedule: {enabled: [PodLifeTime], enable: []}}
"""
    assert check(text, "policy.yaml")[0] == [
        'policy.yaml doc 1: in profile p: unknown field "plugin"',
        'policy.yaml doc 1: in profile p: unknown field "plugins.deschedule.enable"',
        'policy.yaml doc 1: in profile p: unknown field "pluginConfig[0].arg"',
    ]


def test_wrong_types_are_refused_as_the_api_server_decodes() -> None:
    text = """apiVersion: v1
kind: Node
metadata: {name: n1, uid: [a]}
spec: {taints: [{key: k, effect: NoSchedule, timeAdded: yesterday}]}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: 1e400}
  conditions: [{type: {Ready: "True"}, status: "True"}]
"""
    assert check(text, "n.yaml")[0] == [
        'n.yaml doc 1: status.allocatable.pods: Invalid value: "1e400": must be less than or equal to '
        "9223372036854775807",
        "n.yaml doc 1: metadata.uid: expected a string, got list",
        'n.yaml doc 1: spec.taints[0].timeAdded: Invalid value: "yesterday": must be an RFC 3339 time, '
        "e.g. 2026-01-01T00:00:00Z",
        "n.yaml doc 1: status.conditions[0].type: expected a string, got mapping",
    ]


def test_nulls_are_unset_as_the_api_server_decodes_them() -> None:
    text = NODE + """---
apiVersion: v1
kind: Pod
metadata: {name: a, labels: {app: null}, annotations: null, creationTimestamp: null}
spec:
  tolerations: null
  containers: [{name: c, resources: {requests: null}}, null]
status: null
"""
    Path("pods.yaml").write_text(text)
    objects = load_paths(["pods.yaml"])
    with pytest.raises(InputError) as e:
        validate(objects, [])
    assert str(e.value) == "pods.yaml doc 2: spec.containers[1].name: Required value"
    assert objects[1].obj == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"app": ""}},
                              "spec": {"containers": [{"name": "c", "resources": {}}, {}]}}


def test_nothing_to_simulate_is_refused_as_kubectl_does() -> None:
    Path("empty.yaml").write_text("---\n")
    result = CliRunner().invoke(main, ["simulate", "empty.yaml"])
    assert (result.exit_code, result.stderr, result.stdout) == (
        2, "empty.yaml: no objects in this file (kubectl: no objects passed)\n", "")


def test_strict_makes_warnings_errors() -> None:
    Path("pods.yaml").write_text(NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"
                                        "spec: {nodeSelecter: {}, containers: [{name: c, resource: {}}]}\n")
    ran = CliRunner().invoke(main, ["simulate", "pods.yaml"], env={"COLUMNS": "200"})
    assert ran.exit_code == 0
    assert ran.stderr.splitlines() == ['warning: pods.yaml doc 2: unknown field "spec.nodeSelecter"',
                                       'warning: pods.yaml doc 2: unknown field "spec.containers[0].resource"']
    assert "default/a" in ran.stdout
    strict = CliRunner().invoke(main, ["simulate", "pods.yaml", "--strict"], env={"COLUMNS": "200"})
    assert strict.exit_code == 2 and strict.stdout == ""
    assert strict.stderr.splitlines() == ['pods.yaml doc 2: unknown field "spec.nodeSelecter"',
                                          'pods.yaml doc 2: unknown field "spec.containers[0].resource"']


def test_field_table_is_the_installed_clients() -> None:
    """The fields kubesched knows are read from a table written from the client's models (importing
    them costs every run 0.3 s): a client upgrade that adds a field must regenerate it
    (`python -m kubesched.api.fieldschema`), or the new field would be warned about as unknown."""
    assert json.loads(fieldschema.TABLE.read_text()) == fieldschema.client_table()


def test_a_configuration_without_the_default_profile_warns_how_many_pods_wait() -> None:
    scenario = load([str(Path(__file__).parent.parent / "scenarios" / "config-no-default-profile.yaml")])
    assert [(w.doc, w.path, w.message) for w in scenario.warnings] == [
        (1, "profiles", 'no profile has schedulerName "default-scheduler": 1 pod and the pods of 1 workload '
                        "that ask for no scheduler will stay pending")]


def test_kinds_two_groups_share_are_checked_against_their_groups_model() -> None:
    text = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, cnt: 2}
---
apiVersion: v1
kind: Event
metadata: {name: e}
involvedObject: {kind: Pod, name: p}
reson: Scheduled
"""
    assert warnings_of(text) == ['pods.yaml doc 1: unknown field "spec.devices.requests[0].exactly.cnt"',
                                 'pods.yaml doc 2: unknown field "reson"']
