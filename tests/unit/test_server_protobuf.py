"""Protobuf request bodies (what kubectl's `create` generators and protobuf clients send) decoded
into the JSON form of the object: bytes kubectl v1.32 really sent, objects encoded here from the
wire layout table, and hand-built bytes for the wire format's corners and malformed input."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from kubesched.api.restmapping import RESOURCES
from kubesched.apiserver.errors import BadRequest, UnsupportedMediaType
from kubesched.server import schema
from kubesched.server.protobuf import decode_body
from kubesched.server.protobuf_schema import KINDS, MESSAGES

# ---- a test-side encoder driven by the table --------------------------------------------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        if n < 0x80:
            return bytes(out + bytes([n]))
        out.append(n & 0x7F | 0x80)
        n >>= 7


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _delimited(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


def _special(type_: str, value: Any) -> bytes:
    if type_ in ("Time", "MicroTime"):
        if value is None:
            return b""
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        seconds = int(moment.timestamp() // 1)
        return _tag(1, 0) + _varint(seconds) + _tag(2, 0) + _varint(moment.microsecond * 1000)
    if type_ == "Quantity":
        return _delimited(1, value.encode())
    if type_ == "IntOrString":
        if isinstance(value, int):
            return _tag(1, 0) + _varint(0) + _tag(2, 0) + _varint(value) + _delimited(3, b"")
        return _tag(1, 0) + _varint(1) + _tag(2, 0) + _varint(0) + _delimited(3, value.encode())
    return b"" if value is None else _delimited(1, json.dumps(value).encode())  # RawExtension, FieldsV1


def _one(type_: str, value: Any) -> bytes:
    """The payload of one value: a varint for numbers, the bytes of strings and messages."""
    if type_ == "string":
        return value.encode()
    if type_ == "bytes":
        return base64.b64decode(value)
    if type_ in ("bool", "int32", "int64"):
        return _varint(int(value))
    if type_ in MESSAGES:
        return encode(value, type_)
    return _special(type_, value)


def encode(obj: dict[str, Any], message: str) -> bytes:
    """`obj` (a JSON object) as `message`, every field written the way gogo-protobuf writes it."""
    out = b""
    for number, name, type_, flags in MESSAGES[message]:
        if "i" in flags:
            out += _delimited(number, encode(obj, type_))
            continue
        if name not in obj:
            continue
        value = obj[name]
        numeric = type_ in ("bool", "int32", "int64")
        if "m" in flags:
            for k, v in value.items():
                out += _delimited(number, _delimited(1, k.encode()) + _delimited(2, _one(type_, v)))
        elif "r" in flags:
            for item in value:
                out += _tag(number, 0) + _one(type_, item) if numeric else _delimited(number, _one(type_, item))
        elif numeric:
            out += _tag(number, 0) + _one(type_, value)
        else:
            out += _delimited(number, _one(type_, value))
    return out


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _delimited(1, api_version.encode()) + _delimited(2, kind.encode())
    return b"k8s\x00" + _delimited(1, type_meta) + _delimited(2, raw) + _delimited(3, b"") + _delimited(4, b"")


def round_trip(obj: dict[str, Any]) -> dict[str, Any]:
    message = KINDS.get(f"{obj['apiVersion']}/{obj['kind']}") or KINDS[obj["kind"]]
    return decode_body(envelope(obj["apiVersion"], obj["kind"], encode(obj, message)))


# ---- what kubectl v1.32 sent --------------------------------------------------------------------------

KUBECTL_NAMESPACE = bytes.fromhex(  # kubectl create namespace ns1
    "6b3873000a0f0a02763112094e616d657370616365121b0a130a036e733112001a0022002a0032003800420012001a020a00"
    "1a002200")
KUBECTL_DEPLOYMENT = bytes.fromhex(  # kubectl create deployment d1 --image=nginx:1.27 --replicas=3 --port=80 -n ns1
    "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412bc010a200a02643112001a036e733122002a00320038"
    "0042005a090a03617070120264311289010803120b0a090a03617070120264311a700a1b0a0012001a0022002a0032003800"
    "42005a090a0361707012026431125112330a056e67696e78120a6e67696e783a312e32372a00320a0a001000185022002a00"
    "42006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a00"
    "280038001a0c0800100018002000280038001a002200")
KUBECTL_SECRET = bytes.fromhex(  # kubectl create secret generic s1 --from-literal=password=hunter2 -n ns1
    "6b3873000a0c0a027631120653656372657412340a150a02733112001a036e733122002a0032003800420012130a08706173"
    "73776f7264120768756e746572321a064f70617175651a002200")
KUBECTL_PRIORITY_CLASS = bytes.fromhex(  # kubectl create priorityclass pc0 --value=0
    "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c61737312310a130a0370"
    "633012001a0022002a003200380042001000180022002a14507265656d70744c6f7765725072696f726974791a002200")
KUBECTL_SERVICE = bytes.fromhex(  # kubectl create service clusterip svc1 --tcp=80:8080 -n ns1
    "6b3873000a0d0a027631120753657276696365126f0a240a047376633112001a036e733122002a003200380042005a0b0a03"
    "61707012047376633112430a1b0a0738302d38303830120354435018502207080010903f1a002800120b0a03617070120473"
    "7663311a002209436c757374657249503a00420052005a00600068001a020a001a002200")
KUBECTL_PDB = bytes.fromhex(  # kubectl create poddisruptionbudget pdb1 --selector=app=web --min-available=50% -n ns1
    "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e42756467657412400a170a04706462311200"
    "1a036e733122002a0032003800420012190a09080110001a03353025120c0a0a0a0361707012037765621a0a080018002000"
    "280030001a002200")


@pytest.mark.parametrize("body, expected", [
    (KUBECTL_NAMESPACE, {"kind": "Namespace", "apiVersion": "v1",
                         "metadata": {"name": "ns1", "creationTimestamp": None}, "spec": {}, "status": {}}),
    (KUBECTL_DEPLOYMENT, {
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "d1", "namespace": "ns1", "creationTimestamp": None, "labels": {"app": "d1"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d1"}},
                 "template": {"metadata": {"creationTimestamp": None, "labels": {"app": "d1"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                                       "ports": [{"containerPort": 80}], "resources": {}}]}},
                 "strategy": {}},
        "status": {}}),
    (KUBECTL_SECRET, {"kind": "Secret", "apiVersion": "v1",
                      "metadata": {"name": "s1", "namespace": "ns1", "creationTimestamp": None},
                      "data": {"password": base64.b64encode(b"hunter2").decode()}, "type": "Opaque"}),
    # value 0 is kept: the field is required (no omitempty), so the JSON body would have had it
    (KUBECTL_PRIORITY_CLASS, {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
                              "metadata": {"name": "pc0", "creationTimestamp": None}, "value": 0,
                              "preemptionPolicy": "PreemptLowerPriority"}),
    (KUBECTL_SERVICE, {
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "svc1", "namespace": "ns1", "creationTimestamp": None, "labels": {"app": "svc1"}},
        "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
                 "selector": {"app": "svc1"}, "type": "ClusterIP"},
        "status": {"loadBalancer": {}}}),
    (KUBECTL_PDB, {
        "kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
        "metadata": {"name": "pdb1", "namespace": "ns1", "creationTimestamp": None},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}),
], ids=["namespace", "deployment", "secret", "priorityclass", "service", "pdb"])
def test_kubectl_bodies_decode_to_what_kubectl_prints_as_json(body: bytes, expected: dict[str, Any]) -> None:
    got = decode_body(body)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # the same key order too: kind, apiVersion, struct order


# ---- objects encoded from the table ----------------------------------------------------------------------

DEPLOYMENT: dict[str, Any] = {
    "kind": "Deployment", "apiVersion": "apps/v1",
    "metadata": {"name": "web", "namespace": "prod", "creationTimestamp": None,
                 "labels": {"app": "web", "tier": ""}, "annotations": {"note": "caf\u00e9"},
                 "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1",
                                      "controller": True, "blockOwnerDeletion": False}],
                 "finalizers": ["example.com/keep"]},
    "spec": {
        "replicas": 0, "selector": {"matchLabels": {"app": "web"},
                                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
        "template": {
            "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
            "spec": {
                "volumes": [{"name": "cfg", "configMap": {"name": "web-cfg", "defaultMode": 420}},
                            {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
                "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"],
                                    "resources": {}, "restartPolicy": "Always"}],
                "containers": [{
                    "name": "app", "image": "nginx:1.27", "args": ["--port", "8080"],
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                              {"hostPort": 19090, "containerPort": 9090, "protocol": "UDP"}],
                    "env": [{"name": "MODE", "value": "prod"},
                            {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                        "fieldPath": "metadata.name"}}},
                            {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k",
                                                                           "optional": False}}}],
                    "resources": {"limits": {"cpu": "2", "memory": "1Gi"},
                                  "requests": {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "1"}},
                    "volumeMounts": [{"name": "cfg", "readOnly": True, "mountPath": "/etc/cfg"}],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                                      "initialDelaySeconds": 5, "periodSeconds": 10},
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1},
                    "imagePullPolicy": "IfNotPresent",
                    "securityContext": {"capabilities": {"drop": ["ALL"]}, "runAsUser": 1000,
                                        "runAsNonRoot": True, "allowPrivilegeEscalation": False},
                }],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 0,
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "automountServiceAccountToken": False,
                "securityContext": {"runAsGroup": -1, "supplementalGroups": [1, 2, 3000000000]},
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                                            "topologyKey": "kubernetes.io/hostname"}}]}},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule",
                                 "tolerationSeconds": 30}],
                "priorityClassName": "high", "priority": -5,
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule",
                                               "labelSelector": {"matchLabels": {"app": "web"}}}],
                "hostnameOverride": "web-host",
            },
        },
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
        "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
    },
    "status": {"observedGeneration": 4, "replicas": 2, "terminatingReplicas": 0,
               "conditions": [{"type": "Available", "status": "True",
                               "lastUpdateTime": "2026-01-01T00:00:00Z",
                               "lastTransitionTime": "1969-07-20T20:17:40Z", "reason": "MinimumReplicasAvailable"}]},
}


def test_deployment_with_containers_resources_ports_comes_back_whole() -> None:
    got = round_trip(DEPLOYMENT)
    assert got == DEPLOYMENT
    assert json.dumps(got) == json.dumps(DEPLOYMENT)  # key order: kind, apiVersion, then struct order
    # pointers keep their zero (replicas 0, terminatingReplicas 0); negative numbers survive
    assert got["spec"]["replicas"] == 0 and got["spec"]["template"]["spec"]["priority"] == -5


def test_secret_with_binary_data_and_configmap_binary_data_stay_base64() -> None:
    blob = bytes(range(256))
    secret = {"kind": "Secret", "apiVersion": "v1",
              "metadata": {"name": "tls", "namespace": "prod", "creationTimestamp": None},
              "immutable": False,
              "data": {"tls.key": base64.b64encode(blob).decode(), "empty": ""},
              "stringData": {"extra": "plain"}, "type": "kubernetes.io/tls"}
    assert round_trip(secret) == secret
    cm = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "creationTimestamp": None},
          "data": {"a": "b"}, "binaryData": {"bin": base64.b64encode(b"\x00\xff\xfe").decode()}}
    assert round_trip(cm) == cm


def test_namespace_and_cluster_scoped_kinds() -> None:
    ns = {"kind": "Namespace", "apiVersion": "v1",
          "metadata": {"name": "team-a", "creationTimestamp": None, "labels": {"team": "a"}},
          "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    assert round_trip(ns) == ns
    role = {"kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "reader", "creationTimestamp": None},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
                      {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}
    assert round_trip(role) == role  # the empty core group "" is an element, kept


def test_pod_volumes_events_and_raw_json_types() -> None:
    pod = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": "p", "namespace": "d", "creationTimestamp": "2026-03-04T05:06:07Z",
                        "deletionTimestamp": "2026-03-04T05:07:07Z", "deletionGracePeriodSeconds": 30,
                        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                           "time": "2026-03-04T05:06:07Z", "fieldsType": "FieldsV1",
                                           "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
           "spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}},
                                {"name": "proj", "projected": {"sources": [
                                    {"serviceAccountToken": {"expirationSeconds": 3600, "path": "token"}},
                                    {"configMap": {"name": "ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
                    "containers": [{"name": "c", "image": "i", "resources": {},
                                    "lifecycle": {"preStop": {"sleep": {"seconds": 5}}, "stopSignal": "SIGTERM"},
                                    "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30}}],
                    "schedulingGates": [{"name": "wait"}], "overhead": {"cpu": "250m"}},
           "status": {"observedGeneration": 2, "phase": "Running",
                      "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                      "lastTransitionTime": "2026-03-04T05:06:08Z"}],
                      "podIPs": [{"ip": "10.0.0.5"}], "startTime": "2026-03-04T05:06:09Z", "qosClass": "BestEffort"}}
    assert round_trip(pod) == pod
    event = {"kind": "Event", "apiVersion": "events.k8s.io/v1",
             "metadata": {"name": "e", "namespace": "d", "creationTimestamp": None},
             "eventTime": "2026-03-04T05:06:07.123456Z", "series": {"count": 2,
                                                                   "lastObservedTime": "2026-03-04T05:06:09.000001Z"},
             "reportingController": "kubesched", "reportingInstance": "kubesched-1", "action": "Binding",
             "reason": "Scheduled", "regarding": {"kind": "Pod", "namespace": "d", "name": "p"},
             "note": "bound", "type": "Normal", "deprecatedSource": {},  # a plain struct: always written
             "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}
    assert round_trip(event) == event
    revision = {"kind": "ControllerRevision", "apiVersion": "apps/v1",
                "metadata": {"name": "r", "creationTimestamp": None},
                "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": 3}
    assert round_trip(revision) == revision


def test_delete_options_and_eviction_bodies() -> None:
    options = {"kind": "DeleteOptions", "apiVersion": "apps/v1", "gracePeriodSeconds": 0,
               "preconditions": {"uid": "u-1"}, "propagationPolicy": "Foreground", "dryRun": ["All"]}
    assert round_trip(options) == options  # a DeleteOptions comes under any group's apiVersion
    eviction = {"kind": "Eviction", "apiVersion": "policy/v1", "metadata": {"name": "p", "namespace": "d",
                                                                           "creationTimestamp": None},
                "deleteOptions": {"gracePeriodSeconds": 10}}
    assert round_trip(eviction) == eviction


# ---- the wire format's corners, hand-built --------------------------------------------------------------

def _pod_spec(raw: bytes) -> dict[str, Any]:
    pod = _delimited(2, raw)  # Pod.spec
    return decode_body(envelope("v1", "Pod", pod))["spec"]


def test_repeated_numbers_packed_or_not_and_negative_int32() -> None:
    groups = [1, 2, 3000000000]
    packed = _delimited(4, b"".join(_varint(g) for g in groups))
    unpacked = b"".join(_tag(4, 0) + _varint(g) for g in groups)
    for encoding in (packed, unpacked):
        assert _pod_spec(_delimited(14, encoding))["securityContext"] == {"supplementalGroups": groups}
    # int32 -1 comes as a ten-byte varint; int64 fields read all 64 bits
    assert _pod_spec(_tag(25, 0) + _varint(-1))["priority"] == -1
    assert _pod_spec(_tag(4, 0) + _varint(-(2 ** 40)))["terminationGracePeriodSeconds"] == -(2 ** 40)


def test_zero_values_follow_go_json_omitempty() -> None:
    spec = _pod_spec(_tag(11, 0) + _varint(0)  # hostNetwork false: plain bool, left out
                     + _tag(21, 0) + _varint(0)  # automountServiceAccountToken false: a pointer, kept
                     + _delimited(3, b"")  # restartPolicy "": plain string, left out
                     + _tag(30, 0) + _varint(1))  # enableServiceLinks true
    assert spec == {"automountServiceAccountToken": False, "enableServiceLinks": True}
    # a required field is in the JSON even when zero or absent; a non-pointer struct always is
    got = decode_body(envelope("scheduling.k8s.io/v1", "PriorityClass", b""))
    assert got == {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
                   "metadata": {"creationTimestamp": None}, "value": 0}


def test_unknown_fields_are_skipped_and_repeated_messages_merge() -> None:
    unknown = _tag(999, 0) + _varint(7) + _delimited(998, b"junk") + _tag(997, 5) + b"\x00" * 4 + _tag(996, 1) + b"\x00" * 8
    meta = _delimited(1, b"a") + unknown
    body = envelope("v1", "ConfigMap", _delimited(1, meta) + _delimited(1, _delimited(3, b"ns")))
    assert decode_body(body)["metadata"] == {"name": "a", "namespace": "ns", "creationTimestamp": None}


def test_map_entries_with_missing_parts_and_repeated_keys() -> None:
    entry = _delimited(1, b"k")  # no value: the zero value
    data = _delimited(2, entry) + _delimited(2, _delimited(1, b"x") + _delimited(2, b"1")) \
        + _delimited(2, _delimited(1, b"x") + _delimited(2, b"2"))
    assert decode_body(envelope("v1", "ConfigMap", data))["data"] == {"k": "", "x": "2"}
    quota = _delimited(2, _delimited(1, _delimited(1, b"cpu")))  # ResourceQuota.spec.hard {cpu: <zero>}
    assert decode_body(envelope("v1", "ResourceQuota", quota))["spec"] == {"hard": {"cpu": "0"}}


def test_times_drop_or_keep_fractions_and_zero_is_null() -> None:
    stamp = _tag(1, 0) + _varint(1767225600) + _tag(2, 0) + _varint(999999999)
    meta = _delimited(8, stamp) + _delimited(9, b"")  # creationTimestamp; deletionTimestamp set to zero
    got = decode_body(envelope("v1", "Namespace", _delimited(1, meta)))["metadata"]
    assert got == {"creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": None}
    event = _delimited(10, stamp)  # core/v1 Event.eventTime, a MicroTime
    assert decode_body(envelope("v1", "Event", event))["eventTime"] == "2026-01-01T00:00:00.999999Z"
    early = _tag(1, 0) + _varint(int(datetime(1, 1, 1, tzinfo=UTC).timestamp()))
    got = decode_body(envelope("v1", "Namespace", _delimited(1, _delimited(8, early))))
    assert got["metadata"]["creationTimestamp"] == "0001-01-01T00:00:00Z"


# ---- malformed bodies ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, message", [
    (b"", "empty data"),
    (b'{"kind": "Pod"}', "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
    (b"k8s\x00", "empty body"),
    (b"k8s\x00\x0a\x05\x0a\x02v1", "unexpected EOF"),  # a length past the end
    (b"k8s\x00\x0a\x02\x0a\x80", "unexpected EOF"),  # a varint cut short
    (b"k8s\x00" + b"\x08" + b"\xff" * 10 + b"\x01", "integer overflow"),
    (b"k8s\x00\x0b", "illegal wireType 3"),
    (b"k8s\x00\x00", "illegal tag 0"),
    (envelope("", "Pod", b""), "Object 'apiVersion' is missing"),
    (envelope("v1", "", b""), "Object 'Kind' is missing"),
    (envelope("v1", "Pod", _delimited(1, _tag(1, 0) + _varint(5))), "wrong wireType = 0 for field name of meta.v1.ObjectMeta"),
    (envelope("apps/v1", "ControllerRevision", _delimited(2, _delimited(1, b"{not json"))), "not JSON"),
    (envelope("apps/v1", "Deployment", _delimited(2, _delimited(4, _delimited(2, _delimited(1, _tag(1, 0) + _varint(2)))))),
     "impossible IntOrString.Type 2"),
    (envelope("v1", "ResourceQuota", _delimited(2, _delimited(1, _delimited(1, b"cpu") + _delimited(2, _delimited(1, b""))))),
     "quantities must match the regular expression"),
])
def test_malformed_bodies_are_bad_requests(body: bytes, message: str) -> None:
    with pytest.raises(BadRequest) as e:
        decode_body(body)
    assert message in e.value.message
    assert e.value.code == 400


def test_a_kind_without_a_wire_layout_is_unsupported_media() -> None:
    with pytest.raises(UnsupportedMediaType) as e:
        decode_body(envelope("example.com/v1", "Widget", b""))
    assert e.value.code == 415


# ---- the table itself ---------------------------------------------------------------------------------

def _definition(message: str) -> str:
    package = "io.k8s.apimachinery.pkg.apis." if message.startswith("meta.") else "io.k8s.api."
    return package + message


def _json_names(message: str) -> list[str]:
    names: list[str] = []
    for _, name, type_, flags in MESSAGES[message]:
        names += _json_names(type_) if "i" in flags else [name]
    return names


def test_table_names_match_the_v1_35_openapi_definitions() -> None:
    definitions = schema.definitions()
    checked = 0
    for message in MESSAGES:
        definition = definitions.get(_definition(message))
        if definition is None:  # inline-only structs (VolumeSource, ProbeHandler, ...)
            continue
        props = set(definition.get("properties", {}))
        if message in KINDS.values():
            props -= {"apiVersion", "kind"}  # the envelope carries them
        assert set(_json_names(message)) == props, message
        checked += 1
    assert checked > 300


def test_every_field_type_is_known_and_numbers_are_unique() -> None:
    known = {"string", "bool", "int32", "int64", "bytes", "Time", "MicroTime", "Quantity", "IntOrString",
             "RawExtension", "FieldsV1", *MESSAGES}
    for message, fields in MESSAGES.items():
        assert len({f[0] for f in fields}) == len(fields), message
        for _, name, type_, _ in fields:
            assert type_ in known, (message, name)


def test_every_writable_resource_has_a_wire_layout() -> None:
    # kubectl sends protobuf only from its typed generators (`kubectl create deployment`, ...);
    # none makes a CustomResourceDefinition or an admission configuration, which clients write as
    # JSON (a protobuf body of one gets 415, as for a kind without a wire layout).
    for r in RESOURCES:
        if ("create" in r.verbs or "update" in r.verbs) and r.group not in (
                "apiextensions.k8s.io", "admissionregistration.k8s.io"):
            assert f"{r.api_version}/{r.kind}" in KINDS, r.kind
