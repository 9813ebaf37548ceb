"""kubectl's `create` generators against `kubesched serve`. kubectl v1.32 sends their objects as
protobuf and never retries in JSON, so each one must decode to the very object kubectl would have
sent as JSON: the object stored from the protobuf body is compared with the same object sent as
JSON (`kubectl create -f`), and the server's dry-run answer with kubectl's client-side object."""

from __future__ import annotations

import datetime
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.serve.harness import Served

PROTOBUF = "application/vnd.kubernetes.protobuf"

# (kind to get, name, the command); {cert}, {key}, {blob} are files the fixture writes
GENERATORS: list[tuple[str, str, list[str]]] = [
    ("namespace", "gen-ns", ["create", "namespace", "gen-ns"]),
    ("configmap", "cm", ["create", "configmap", "cm", "--from-literal=a=b", "--from-literal=empty=",
                         "--from-file=bin={blob}"]),
    ("secret", "generic", ["create", "secret", "generic", "generic", "--from-literal=password=hunter2",
                           "--from-file=blob={blob}"]),
    ("secret", "tls", ["create", "secret", "tls", "tls", "--cert={cert}", "--key={key}"]),
    ("secret", "registry", ["create", "secret", "docker-registry", "registry", "--docker-server=r.example",
                            "--docker-username=u", "--docker-password=p"]),
    ("serviceaccount", "sa", ["create", "serviceaccount", "sa"]),
    ("deployment", "web", ["create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=80"]),
    ("deployment", "idle", ["create", "deployment", "idle", "--image=nginx", "--replicas=0"]),
    ("job", "once", ["create", "job", "once", "--image=busybox", "--", "echo", "hi"]),
    ("cronjob", "tick", ["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *"]),
    ("service", "cip", ["create", "service", "clusterip", "cip", "--tcp=80:8080"]),
    ("service", "np", ["create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080"]),
    ("service", "lb", ["create", "service", "loadbalancer", "lb", "--tcp=443:8443"]),
    ("priorityclass", "high", ["create", "priorityclass", "high", "--value=1000", "--description=urgent",
                               "--preemption-policy=Never"]),
    ("priorityclass", "zero", ["create", "priorityclass", "zero", "--value=0"]),
    ("poddisruptionbudget", "half", ["create", "poddisruptionbudget", "half", "--selector=app=web",
                                     "--min-available=50%"]),
    ("poddisruptionbudget", "one", ["create", "poddisruptionbudget", "one", "--selector=app=web",
                                    "--max-unavailable=1"]),
    ("resourcequota", "q", ["create", "quota", "q", "--hard=cpu=2,memory=1Gi,pods=10", "--scopes=NotTerminating"]),
    ("role", "reader", ["create", "role", "reader", "--verb=get,list", "--resource=pods,deployments.apps"]),
    ("rolebinding", "readers", ["create", "rolebinding", "readers", "--role=reader", "--user=alice",
                                "--serviceaccount=default:sa"]),
    ("clusterrole", "node-reader", ["create", "clusterrole", "node-reader", "--verb=get", "--resource=nodes"]),
    ("clusterrole", "aggregate", ["create", "clusterrole", "aggregate",
                                  "--aggregation-rule=rbac.example.com/aggregate=true"]),
    ("clusterrolebinding", "node-readers", ["create", "clusterrolebinding", "node-readers",
                                            "--clusterrole=node-reader", "--group=devs"]),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served(tmp_path_factory.mktemp("kubectl-create")).start()
    try:
        yield served
    finally:
        served.kill()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A key pair kubectl accepts for `create secret tls`, and bytes that are not UTF-8."""
    d = tmp_path_factory.mktemp("files")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example.com")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    paths = {"cert": d / "tls.crt", "key": d / "tls.key", "blob": d / "blob.bin"}
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    paths["blob"].write_bytes(bytes(range(256)))
    return {k: str(v) for k, v in paths.items()}


def _normal(obj: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """The object less what differs between two creations of it (its uid, which a Job's labels
    repeat, resourceVersion, timestamps, a Service's allocated addresses and node ports) and what
    controllers add once it is stored (status, their annotations and managedFields entries),
    keeping annotations `like` has."""
    uid = obj["metadata"].get("uid")
    obj = json.loads(json.dumps(obj).replace(uid, "UID")) if uid else obj
    obj.pop("status", None)
    if obj.get("kind") == "Service":
        spec = obj.get("spec") or {}
        for key in ("clusterIP", "clusterIPs"):
            if spec.get(key) not in (None, "None", ["None"]):
                spec[key] = "ALLOCATED"
        for port in spec.get("ports") or ():
            if "nodePort" in port:
                port["nodePort"] = "ALLOCATED"
    meta = obj["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        meta.pop(key, None)
    wanted = like["metadata"].get("annotations", {})
    meta["annotations"] = {k: v for k, v in meta.get("annotations", {}).items() if k in wanted}
    meta["managedFields"] = [{k: v for k, v in e.items() if k != "time"} for e in meta.get("managedFields", ())
                             if e["manager"] == "kubectl-create"]
    return obj


def _contains(big: Any, small: Any) -> bool:
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and _contains(big[k], v) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(map(_contains, big, small))
    return big == small


@pytest.mark.parametrize("kind, name, command", GENERATORS, ids=[f"{g[0]}-{g[1]}" for g in GENERATORS])
def test_generator_objects_arrive_as_kubectl_built_them(server: Served, files: dict[str, str], kind: str,
                                                        name: str, command: list[str]) -> None:
    command = [c.format(**files) for c in command]

    def kubectl(*flags: str, input: str | None = None) -> dict[str, Any]:
        return json.loads(server.kubectl(command[0], *flags, *command[1:], input=input))

    client = kubectl("--dry-run=client", "-o", "json")
    # the server's dry run of the protobuf body has every field kubectl set, and the server's defaults
    expected = {k: v for k, v in client.items() if k != "status"}
    expected["metadata"] = {k: v for k, v in client["metadata"].items() if k != "creationTimestamp"}
    assert _contains(kubectl("--dry-run=server", "-o", "json"), expected)
    # stored from protobuf: the very object the same request stores from JSON
    as_json = json.loads(server.kubectl("create", "-f", "-", "--dry-run=server", "-o", "json",
                                        input=json.dumps(client)))
    server.kubectl(*command)
    stored = json.loads(server.kubectl("get", kind, name, "-o", "json"))
    assert _normal(stored, as_json) == _normal(as_json, as_json)


def _field(number: int, payload: bytes) -> bytes:
    assert number < 16 and len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _body(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw)


def _post(server: Served, path: str, body: bytes, content_type: str = PROTOBUF) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(server.url + path, data=body, method="POST",
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_protobuf_client_creates_and_reads_back(server: Served) -> None:
    config_map = _field(1, _field(1, b"pb-config")) + _field(2, _field(1, b"k") + _field(2, b"v"))
    code, created = _post(server, "/api/v1/namespaces/default/configmaps", _body("v1", "ConfigMap", config_map))
    assert code == 201, created
    assert created["data"] == {"k": "v"}
    stored = json.loads(server.kubectl("get", "configmap", "pb-config", "-o", "json"))
    assert stored["data"] == {"k": "v"} and stored["metadata"]["uid"] == created["metadata"]["uid"]


@pytest.mark.parametrize("body, content_type, code, message", [
    (_body("example.com/v1", "Widget", b""), PROTOBUF, 415, "the body of the request was in an unknown format"),
    (b"\xa1\x64kind\x69ConfigMap", "application/cbor", 415, "the body of the request was in an unknown format"),
    (b"k8s\x00\x0a\x05\x0a\x02v1", PROTOBUF, 400, "unexpected EOF"),
    (b'{"kind": "ConfigMap"}', PROTOBUF, 400, "provided data does not appear to be a protobuf message"),
], ids=["unknown-kind", "cbor", "truncated", "not-protobuf"])
def test_bodies_it_cannot_read_are_refused(server: Served, body: bytes, content_type: str, code: int,
                                           message: str) -> None:
    got, status = _post(server, "/api/v1/namespaces/default/configmaps", body, content_type)
    assert (got, status["code"]) == (code, code)
    assert message in status["message"]
    assert status["reason"] == ("UnsupportedMediaType" if code == 415 else "BadRequest")
