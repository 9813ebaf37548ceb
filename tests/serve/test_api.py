"""`serve`'s API beyond the everyday verbs: safety, patches and apply, subresources, the clock,
seeding from a snapshot, and the answers a malformed request gets."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.serve.harness import KUBESCHED, Served, wait_for

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                   "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "app", "image": "nginx",
                                                             "resources": {"requests": {"cpu": "1"}}}]}}}}


def _request(served: Served, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict]:
    if served.url.startswith("https"):
        ca = base64.b64decode(yaml.safe_load(Path(served.kubeconfig).read_text())["clusters"][0]["cluster"][
            "certificate-authority-data"]).decode()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", served.port, timeout=30, context=ssl.create_default_context(cadata=ca))
    else:
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request(method, path, body, headers or {"Content-Type": "application/json"})
    answer = conn.getresponse()
    data = answer.read()
    return answer.status, json.loads(data) if data.strip().startswith(b"{") else {"raw": data}


def test_token_and_body_limits(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--token", "s3cret", "--max-body", "2048"]).start()
    try:
        assert served.url.startswith("https://")  # clients send tokens over TLS only
        code, answer = _request(served, "GET", "/api/v1/namespaces")
        assert code == 403 and answer["reason"] == "Forbidden"  # anonymous: authenticated by nobody
        code, _ = _request(served, "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer wrong"})
        assert code == 401
        # The kubeconfig it wrote carries the token: kubectl just works.
        assert "default" in served.kubectl("get", "namespaces")
        auth = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
        big = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                          "data": {"x": "y" * 4096}}).encode()
        code, answer = _request(served, "POST", "/api/v1/namespaces/default/configmaps", big, auth)
        assert code == 413 and answer["reason"] == "RequestEntityTooLarge"
        assert answer["message"] == "Request entity too large: limit is 2048"
        assert "default" in served.kubectl("get", "namespaces")  # still serving
    finally:
        served.kill()


@pytest.mark.parametrize(("body", "ctype", "code", "reason", "message"), [
    (b"{not json", "application/json", 400, "BadRequest", "json parse error"),
    (b"[1, 2]", "application/json", 400, "BadRequest", "expected an object"),
    (b'{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}', "application/json", 400,
     "BadRequest", "does not match the expected API version"),
    (b'{"metadata": {"name": "Bad_Name"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}',
     "application/json", 422, "Invalid", 'Pod "Bad_Name" is invalid'),
    (b'{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i", "bogus": 1}]}}',
     "application/json", 201, None, None),
])
def test_malformed_requests_get_a_status(served: Served, body: bytes, ctype: str, code: int, reason: str | None,
                                         message: str | None) -> None:
    status, answer = _request(served, "POST", "/api/v1/namespaces/default/pods", body, {"Content-Type": ctype})
    assert status == code, answer
    if reason:
        assert answer["kind"] == "Status" and answer["reason"] == reason and answer["code"] == code
        assert message in answer["message"]
    if code == 400:  # apimachinery's NewBadRequest: a message, no details naming the object
        assert "details" not in answer


def test_a_create_without_a_name_is_invalid_whatever_the_kind(served: Served) -> None:
    """kube-apiserver's ValidateObjectMeta: a 422 naming the field, for kinds kubesched does not model too."""
    body = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}'
    status, answer = _request(served, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert status == 422, answer
    assert answer["message"] == 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    assert answer["details"] == {"kind": "ConfigMap", "causes": [{
        "reason": "FieldValueRequired", "message": "Required value: name or generateName is required",
        "field": "metadata.name"}]}


def test_an_unknown_dry_run_value_is_refused_and_writes_nothing(served: Served) -> None:
    """ValidateCreateOptions (and its kin for update, patch and delete) run before the write."""
    api = client.CoreV1Api(config.new_client_from_config(served.kubeconfig))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_config_map("default", body, dry_run="Bogus")
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: '
        'supported values: "All"')
    assert not api.list_namespaced_config_map("default").items
    api.create_namespaced_config_map("default", body)
    with pytest.raises(ApiException) as refused:
        api.delete_namespaced_config_map("cm", "default", dry_run="Everything")
    assert refused.value.status == 422 and "DeleteOptions.meta.k8s.io" in json.loads(refused.value.body)["message"]
    assert api.read_namespaced_config_map("cm", "default").data == {"a": "1"}


def test_field_validation_drops_unknown_fields_and_strict_refuses_them(served: Served) -> None:
    """As a built-in kind's Go struct decodes a request: an unknown field, top-level or nested, is
    never stored (Warn, the default, says so; Ignore does not; Strict refuses the write)."""
    body = b'{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i", "bogus": 1}]}}'
    status, answer = _request(served, "POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", body)
    assert status == 400 and answer["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field '
        '"spec.containers[0].bogus"')
    status, pod = _request(served, "POST", "/api/v1/namespaces/default/pods", body)
    assert status == 201 and "bogus" not in pod["spec"]["containers"][0]
    assert "bogus" not in json.dumps(pod["metadata"]["managedFields"])

    cms = "/api/v1/namespaces/default/configmaps"
    status, cm = _request(served, "POST", cms, b'{"metadata": {"name": "cm"}, "x": 1, "data": {"k": "v"}}')
    assert status == 201 and "x" not in cm and cm["data"] == {"k": "v"}
    out = served.kubectl("patch", "configmap", "cm", "--type", "merge", "-p", '{"y": 1, "data": {"k": "w"}}',
                         check=False)
    assert 'Warning: unknown field "y"' in out and 'unknown field "x"' not in out
    for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        status, answer = _request(served, "PATCH", f"{cms}/cm?fieldValidation=Strict", b'{"z": 1}',
                                  {"Content-Type": ctype})
        assert status == 400 and answer["message"] == 'strict decoding error: unknown field "z"'
    status, cm = _request(served, "PUT", f"{cms}/cm?fieldValidation=Ignore", b'{"metadata": {"name": "cm"}, "w": 1}')
    assert status == 200 and "w" not in cm
    stored = json.loads(served.kubectl("get", "configmap", "cm", "-o", "json"))
    assert not {"w", "x", "y", "z"} & set(stored)
    status, answer = _request(served, "GET", "/api/v1/nosuchthings")
    assert status == 404 and answer["reason"] == "NotFound"
    status, answer = _request(served, "PATCH", "/api/v1/namespaces/default/pods/p", b"{}",
                              {"Content-Type": "text/plain"})
    assert status == 415 and answer["reason"] == "UnsupportedMediaType"


def test_patches_apply_and_subresources(served: Served) -> None:
    served.kubectl("create", "-f", "-", input=yaml.safe_dump(NODE))
    served.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(DEPLOYMENT))
    deploy = json.loads(served.kubectl("get", "deployment", "web", "-o", "json", "--show-managed-fields"))
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in deploy["metadata"]["managedFields"])
    # Another manager changing the applied field conflicts, unless forced.
    out = served.kubectl("apply", "--server-side", "--field-manager", "other", "-f", "-", check=False,
                         input=yaml.safe_dump({**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 3}}))
    assert 'conflict with "kubectl"' in out and ".spec.replicas" in out
    served.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager", "other", "-f", "-",
                   input=yaml.safe_dump({**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 3}}))
    assert served.kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "3"

    served.kubectl("patch", "deployment", "web", "--type", "json", "-p",
                   '[{"op": "replace", "path": "/spec/replicas", "value": 1}]')
    served.kubectl("patch", "deployment", "web", "--type", "merge", "-p", '{"metadata": {"labels": {"tier": "f"}}}')
    served.kubectl("patch", "deployment", "web", "-p",
                   '{"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}')
    deploy = json.loads(served.kubectl("get", "deployment", "web", "-o", "json"))
    assert deploy["spec"]["replicas"] == 1 and deploy["metadata"]["labels"] == {"tier": "f"}
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:2" and container["resources"]["requests"]["cpu"] == "1"  # merged by name

    api = config.new_client_from_config(config_file=served.kubeconfig)
    apps = client.AppsV1Api(api)
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 1 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 4}})
    wait_for(lambda: apps.read_namespaced_deployment("web", "default").status.ready_replicas == 4,
             what="4 ready replicas")
    # The main resource cannot change the status; the status subresource cannot change the spec.
    apps.patch_namespaced_deployment("web", "default", {"status": {"replicas": 99}})
    assert apps.read_namespaced_deployment("web", "default").status.replicas == 4
    core = client.CoreV1Api(api)
    core.patch_namespaced_pod_status(core.list_namespaced_pod("default").items[0].metadata.name, "default",
                                     {"status": {"conditions": [{"type": "Custom", "status": "True"}]}})
    # deletecollection with a selector, and events in both API groups.
    core.delete_collection_namespaced_pod("default", label_selector="app=web", grace_period_seconds=0)
    events = client.EventsV1Api(api).list_namespaced_event("default")
    assert any(e.reason == "Scheduled" and e.regarding.kind == "Pod" and e.note.startswith("Successfully assigned")
               for e in events.items)
    core_events = core.list_namespaced_event("default", field_selector="reason=Scheduled")
    assert core_events.items and all(e.reason == "Scheduled" for e in core_events.items)
    api.close()


def test_watch_initial_events_end_with_a_bookmark(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request("GET", "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true"
                        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1")
    lines = [json.loads(line) for line in conn.getresponse().read().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in lines[:-1]] == [("ADDED", "a")] * \
        (len(lines) - 1) and len(lines) >= 2
    assert lines[-1]["type"] == "BOOKMARK"
    assert lines[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_seeded_from_a_snapshot_and_clock(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text(yaml.safe_dump_all([NODE, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "batch", "namespace": "default",
                                                        "annotations": {"sim.kubesched.io/duration": "10m"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}]))
    served = Served(tmp_path, [str(snapshot), "--speed", "0"]).start()
    try:
        wait_for(lambda: served.kubectl("get", "pod", "batch", "-o", "jsonpath={.status.phase}") == "Running",
                 what="the snapshot's pod running")
        out = subprocess.run([*KUBESCHED, "advance", "5m", "--kubeconfig", served.kubeconfig], capture_output=True,
                             text=True, check=True).stdout
        assert "(300s of virtual time)" in out
        served.restart()  # time resumes where it stopped; the pod's end is still due at 10m
        assert served.kubectl("get", "pod", "batch", "-o", "jsonpath={.status.phase}") == "Running"
        subprocess.run([*KUBESCHED, "advance", "6m", "--kubeconfig", served.kubeconfig], check=True,
                       capture_output=True)
        assert served.kubectl("get", "pod", "batch", "-o", "jsonpath={.status.phase}") == "Succeeded"
    finally:
        served.kill()


def test_a_bad_data_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    run = subprocess.run([*KUBESCHED, "serve", "--data", str(bad), "--port", "0"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and str(bad) in run.stderr and "Traceback" not in run.stderr


def test_namespace_deletion_empties_it(served: Served) -> None:
    served.kubectl("create", "-f", "-", input=yaml.safe_dump(NODE))
    served.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
    served.kubectl("-n", "team", "apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n")
    served.kubectl("-n", "team", "run", "app", "--image=nginx")
    out = served.kubectl("delete", "namespace", "team")
    assert 'namespace "team" deleted' in out
    assert "team" not in served.kubectl("get", "namespaces")
    with pytest.raises(AssertionError, match='namespaces "team" not found'):
        served.kubectl("-n", "team", "run", "again", "--image=nginx")
    with pytest.raises(ApiException):
        client.CoreV1Api(config.new_client_from_config(config_file=served.kubeconfig)).read_namespace("team")


def test_events_expire_after_an_hour(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--speed", "0"]).start()
    try:
        served.kubectl("create", "-f", "-", input=yaml.safe_dump(NODE))
        served.kubectl("run", "p", "--image=nginx")
        wait_for(lambda: "Scheduled" in served.kubectl("get", "events"), what="the Scheduled event")
        subprocess.run([*KUBESCHED, "advance", "59m", "--kubeconfig", served.kubeconfig], check=True)
        assert "Scheduled" in served.kubectl("get", "events")
        subprocess.run([*KUBESCHED, "advance", "2m", "--kubeconfig", served.kubeconfig], check=True)
        assert "Scheduled" not in served.kubectl("get", "events")
    finally:
        served.kill()


def test_an_operators_finalizer_holds_the_object_until_removed(served: Served) -> None:
    """Graceful deletion as kube-apiserver does it: the object stays, with its deletionTimestamp,
    until its finalizers are gone; Kubernetes' own finalizers of controllers kubesched does not run
    (the service controller's load-balancer cleanup, ...) do not hold it."""
    api = client.CoreV1Api(config.new_client_from_config(served.kubeconfig))
    api.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["example.com/cleanup"]}})
    api.delete_namespaced_config_map("held", "default")
    held = api.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None and held.metadata.deletion_grace_period_seconds == 0
    assert held.metadata.finalizers == ["example.com/cleanup"]
    with pytest.raises(ApiException) as refused:
        api.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": ["example.com/cleanup",
                                                                                         "example.com/more"]}})
    assert refused.value.status == 422
    assert 'found new finalizers []string{"example.com/more"}' in json.loads(refused.value.body)["message"]
    api.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        api.read_namespaced_config_map("held", "default")
    assert gone.value.status == 404
    api.create_namespaced_config_map("default", {"metadata": {"name": "sys", "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]}})
    api.delete_namespaced_config_map("sys", "default")
    assert not [c for c in api.list_namespaced_config_map("default").items if c.metadata.name == "sys"]
