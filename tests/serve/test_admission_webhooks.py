"""Admission webhooks in `serve`, as an operator author tests them: a webhook server of the
test's own on 127.0.0.1 over HTTPS (a self-signed certificate given as `caBundle`), registered
with kubectl and the official client, and the requests that reach it (or do not)."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubesched.server.tls import self_signed
from tests.serve.harness import Served, wait_for


class Hook:
    """The webhook: each path answers its way, every review received is kept."""

    def __init__(self, tmp: Path) -> None:
        cert = self_signed("hook.default.svc", str(tmp))
        self.ca_bundle = base64.b64encode(cert.pem()).decode()
        self.reviews: list[dict[str, Any]] = []
        # What /callback asks of serve while it is being called: (allowed, message) for a request.
        self.callback: Callable[[dict[str, Any]], tuple[bool, str]] = lambda request: (True, "")
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.reviews.append({"path": self.path, **review})
                path = self.path.split("?")[0]
                if path == "/slow":
                    time.sleep(1.5)
                body = json.dumps(hook.answer(path, review["request"])).encode()
                with contextlib.suppress(OSError):  # the caller that gave up has gone
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = cert.context().wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        if path == "/callback":
            allowed, message = self.callback(request)
            response.update(allowed=allowed, status={"code": 403, "message": message})
        elif path == "/deny":
            response.update(allowed=False, status={"code": 403, "message": "pods named bad-* are not allowed"})
        elif path == "/label":
            patch = [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
            if not (request["object"]["metadata"].get("labels")):
                patch.insert(0, {"op": "add", "path": "/metadata/labels", "value": {}})
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
        elif path == "/warn":
            response["warnings"] = ["this pod is watched"]
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        return [r["path"].split("?")[0] for r in self.reviews]


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hook]:
    h = Hook(tmp_path_factory.mktemp("hook"))
    yield h
    h.server.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("webhooks")).start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module")
def api(cluster: Served) -> client.ApiClient:
    return config.new_client_from_config(cluster.kubeconfig)


@pytest.fixture
def served(cluster: Served, hook: Hook, api: client.ApiClient) -> Iterator[Served]:
    hook.reviews.clear()
    yield cluster
    admission = client.AdmissionregistrationV1Api(api)
    admission.delete_collection_validating_webhook_configuration()
    admission.delete_collection_mutating_webhook_configuration()
    client.CoreV1Api(api).delete_collection_namespaced_pod("default", grace_period_seconds=0)


def _configuration(kind: str, hook: Hook, *webhooks: dict[str, Any]) -> dict[str, Any]:
    hooks = []
    for w in webhooks:
        entry = {"name": w["name"], "sideEffects": "None", "admissionReviewVersions": ["v1"],
                 "clientConfig": {"url": hook.url(w["path"]), "caBundle": hook.ca_bundle},
                 "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                            "resources": ["pods"]}]}
        entry.update({k: v for k, v in w.items() if k not in ("name", "path")})
        hooks.append(entry)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": webhooks[0]["name"].split(".")[0]}, "webhooks": hooks}


def _yaml(kind: str, hook: Hook, *webhooks: dict[str, Any]) -> str:
    return yaml.safe_dump(_configuration(kind, hook, *webhooks))


def _register(api: client.ApiClient, kind: str, hook: Hook, *webhooks: dict[str, Any]) -> None:
    """Registered with the official client (kubectl's own output is what other steps check)."""
    admission = client.AdmissionregistrationV1Api(api)
    body = _configuration(kind, hook, *webhooks)
    if kind == "MutatingWebhookConfiguration":
        admission.create_mutating_webhook_configuration(body)
    else:
        admission.create_validating_webhook_configuration(body)


def _pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default", image: str = "nginx") -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                                         "labels": labels or {}},
                           "spec": {"containers": [{"name": "c", "image": image}]}})


def test_validating_webhook_denies_with_upstream_message(served: Served, hook: Hook, api: client.ApiClient) -> None:
    _register(api, "ValidatingWebhookConfiguration", hook, {"name": "deny.example.com", "path": "/deny"})
    out = served.kubectl("apply", "-f", "-", input=_pod("bad-one"), check=False)
    assert ('admission webhook "deny.example.com" denied the request: pods named bad-* are not allowed'
            in out), out
    assert "bad-one" not in served.kubectl("get", "pods", "-o", "name")
    request = hook.reviews[-1]["request"]
    assert hook.reviews[-1]["apiVersion"] == "admission.k8s.io/v1"
    assert request["operation"] == "CREATE" and request["name"] == "bad-one" and request["namespace"] == "default"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["userInfo"]["username"] == "kubernetes-admin"
    assert request["object"]["metadata"]["uid"] and request["oldObject"] is None
    assert request["options"]["kind"] == "CreateOptions" and request["dryRun"] is False
    with pytest.raises(ApiException) as e:
        client.CoreV1Api(api).create_namespaced_pod("default", yaml.safe_load(_pod("bad-two")))
    assert e.value.status == 403
    assert json.loads(e.value.body)["message"] == ('admission webhook "deny.example.com" denied the request: '
                                                   'pods named bad-* are not allowed')
    # The configurations themselves never go to webhooks: this one can always be removed.
    assert all(r["request"]["kind"]["kind"] == "Pod" for r in hook.reviews)


def test_mutating_webhook_patch_warnings_and_reinvocation(served: Served, hook: Hook, api: client.ApiClient) -> None:
    _register(api, "MutatingWebhookConfiguration", hook, {"name": "warn.example.com", "path": "/warn",
                                               "reinvocationPolicy": "IfNeeded"},
        {"name": "label.example.com", "path": "/label"})
    out = served.kubectl("apply", "-f", "-", input=_pod("web"), check=False)
    assert out.count("Warning: this pod is watched") == 1, out
    assert served.kubectl("get", "pod", "web", "-o", "jsonpath={.metadata.labels.mutated}") == "yes"
    # The IfNeeded webhook ran again after the second one's patch, and saw it.
    assert hook.paths() == ["/warn", "/label", "/warn"]
    assert hook.reviews[-1]["request"]["object"]["metadata"]["labels"]["mutated"] == "yes"
    pod = client.CoreV1Api(api).create_namespaced_pod("default", yaml.safe_load(_pod("api", {"app": "api"})))
    assert pod.metadata.labels == {"app": "api", "mutated": "yes"}


def test_controllers_pods_go_through_webhooks(served: Served, hook: Hook, api: client.ApiClient) -> None:
    _register(api, "MutatingWebhookConfiguration", hook, {"name": "label.example.com", "path": "/label"})
    _register(api, "ValidatingWebhookConfiguration", hook, {"name": "deny.example.com", "path": "/deny", "objectSelector": {
            "matchLabels": {"app": "refused"}}})
    served.kubectl("create", "deployment", "web", "--image=nginx")
    served.kubectl("create", "deployment", "refused", "--image=nginx")
    labels = wait_for(lambda: served.kubectl("get", "pods", "-l", "app=web", "-o",
                                             "jsonpath={.items[*].metadata.labels.mutated}"), what="web's pod")
    assert labels == "yes"
    creator = next(r["request"]["userInfo"] for r in hook.reviews if r["request"]["object"]["metadata"].get(
        "labels", {}).get("app") == "web")
    assert creator["username"] == "system:apiserver"
    events = wait_for(lambda: served.kubectl("get", "events", "--field-selector", "reason=FailedCreate", "-o",
                                             "jsonpath={.items[*].message}"), what="FailedCreate")
    assert 'admission webhook "deny.example.com" denied the request: pods named bad-* are not allowed' in events
    assert served.kubectl("get", "pods", "-l", "app=refused", "-o", "name") == ""
    served.kubectl("delete", "deployments", "--all")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_failure_policy_on_unreachable_webhook(served: Served, hook: Hook, api: client.ApiClient) -> None:
    port = _closed_port()
    _register(api, "ValidatingWebhookConfiguration", hook,
        {"name": "gone.example.com", "path": "/", "timeoutSeconds": 2, "failurePolicy": "Ignore",
         "clientConfig": {"url": f"https://127.0.0.1:{port}/check"}})
    served.kubectl("apply", "-f", "-", input=_pod("ignored"))
    served.kubectl("patch", "validatingwebhookconfiguration", "gone", "--type=json",
                   "-p", '[{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Fail"}]')
    out = served.kubectl("apply", "-f", "-", input=_pod("refused"), check=False)
    assert ('Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: '
            f'Post "https://127.0.0.1:{port}/check?timeout=2s": dial tcp 127.0.0.1:{port}: connect: '
            'connection refused') in out, out
    names = served.kubectl("get", "pods", "-o", "name")
    assert "pod/ignored" in names and "refused" not in names
    served.kubectl("delete", "validatingwebhookconfiguration", "gone")
    _register(api, "ValidatingWebhookConfiguration", hook, {"name": "slow.example.com", "path": "/slow", "timeoutSeconds": 1})
    out = served.kubectl("apply", "-f", "-", input=_pod("late"), check=False)
    assert (f'failed calling webhook "slow.example.com": failed to call webhook: Post '
            f'"https://127.0.0.1:{hook.port}/slow?timeout=1s": context deadline exceeded') in out, out


def test_selectors_and_match_conditions_skip(served: Served, hook: Hook, api: client.ApiClient) -> None:
    served.kubectl("create", "namespace", "guarded")
    served.kubectl("label", "namespace", "guarded", "guard=on")
    _register(api, "ValidatingWebhookConfiguration", hook,
        {"name": "ns.example.com", "path": "/deny", "namespaceSelector": {"matchLabels": {"guard": "on"}}},
        {"name": "obj.example.com", "path": "/deny", "objectSelector": {"matchLabels": {"deny": "yes"}}},
        {"name": "cel.example.com", "path": "/deny", "matchConditions": [
            {"name": "bad-names", "expression": "object.metadata.name.startsWith('bad')"}]})
    served.kubectl("apply", "-f", "-", input=_pod("fine"))
    assert hook.reviews == []
    assert 'admission webhook "ns.example.com" denied' in served.kubectl(
        "apply", "-f", "-", input=_pod("fine", namespace="guarded"), check=False)
    assert 'admission webhook "obj.example.com" denied' in served.kubectl(
        "apply", "-f", "-", input=_pod("labelled", {"deny": "yes"}), check=False)
    assert 'admission webhook "cel.example.com" denied' in served.kubectl(
        "apply", "-f", "-", input=_pod("bad-name"), check=False)
    assert sorted(hook.paths()) == ["/deny", "/deny", "/deny"]


def test_dry_run_and_side_effects(served: Served, hook: Hook, api: client.ApiClient) -> None:
    _register(api, "ValidatingWebhookConfiguration", hook, {"name": "allow.example.com", "path": "/allow"})
    served.kubectl("apply", "--dry-run=server", "-f", "-", input=_pod("dry"))
    assert hook.reviews[-1]["request"]["dryRun"] is True
    assert hook.reviews[-1]["request"]["options"]["dryRun"] == ["All"]
    assert "dry" not in served.kubectl("get", "pods", "-o", "name")
    # A webhook with side effects cannot be registered (it could not be called on a dry run), nor
    # one served over plain http.
    out = served.kubectl("apply", "-f", "-", check=False, input=_yaml(
        "ValidatingWebhookConfiguration", hook, {"name": "some.example.com", "path": "/allow", "sideEffects": "Some",
                                                 "clientConfig": {"url": f"http://127.0.0.1:{hook.port}/allow"}}))
    assert 'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"' in out, out
    assert ("webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
            "desired format: https://host[/path]") in out, out
    out = served.kubectl("apply", "-f", "-", check=False, input=_yaml(
        "ValidatingWebhookConfiguration", hook, {"name": "cel.example.com", "path": "/allow", "matchConditions": [
            {"name": "broken", "expression": "object.metadata.name.startsWith("}]}))
    assert 'webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name.startsWith(": ' \
        'compilation failed' in out, out


def test_webhook_behind_a_service(served: Served, hook: Hook, api: client.ApiClient) -> None:
    """A Service without selector and an EndpointSlice pointing at 127.0.0.1, the certificate
    issued for hook.default.svc."""
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.port}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "hook-1", "labels": {"kubernetes.io/service-name": "hook"}},
         "addressType": "IPv4", "ports": [{"name": "https", "port": hook.port, "protocol": "TCP"}],
         "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]}]))
    _register(api, "MutatingWebhookConfiguration", hook,
        {"name": "svc.example.com", "path": "/", "clientConfig": {
            "service": {"name": "hook", "namespace": "default", "path": "/label"}, "caBundle": hook.ca_bundle}})
    served.kubectl("apply", "-f", "-", input=_pod("via-service"))
    assert served.kubectl("get", "pod", "via-service", "-o", "jsonpath={.metadata.labels.mutated}") == "yes"
    assert hook.reviews[-1]["path"] == "/label?timeout=10s"


def test_status_subresource_and_delete(served: Served, hook: Hook, api: client.ApiClient) -> None:
    served.kubectl("apply", "-f", "-", input=_pod("kept"))
    rules = [{"operations": ["UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["pods/status"]},
             {"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]
    _register(api, "ValidatingWebhookConfiguration", hook, {"name": "deny.example.com", "path": "/deny", "rules": rules})
    core = client.CoreV1Api(api)
    core.patch_namespaced_pod("kept", "default", {"metadata": {"labels": {"seen": "yes"}}})
    assert hook.reviews == []
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_pod_status("kept", "default", {"status": {"conditions": [
            {"type": "Custom", "status": "True"}]}})
    assert "denied the request" in json.loads(e.value.body)["message"]
    request = hook.reviews[-1]["request"]
    assert (request["operation"], request["subResource"], request["requestSubResource"]) == ("UPDATE", "status",
                                                                                             "status")
    assert request["oldObject"]["metadata"]["labels"]["seen"] == "yes"
    out = served.kubectl("delete", "pod", "kept", check=False)
    assert 'admission webhook "deny.example.com" denied the request' in out, out
    request = hook.reviews[-1]["request"]
    assert (request["operation"], request["object"], request["options"]["kind"]) == ("DELETE", None, "DeleteOptions")
    assert request["oldObject"]["metadata"]["name"] == "kept"
    assert "pod/kept" in served.kubectl("get", "pods", "-o", "name")


def test_webhook_calls_back_into_serve(served: Served, hook: Hook, api: client.ApiClient) -> None:
    """An operator's validating webhook reads another object from serve while it is being called:
    serve answers that read meanwhile, and the write waits for the verdict."""
    core = client.CoreV1Api(config.new_client_from_config(served.kubeconfig))  # the webhook's own client
    core.create_namespaced_config_map("default", {"metadata": {"name": "allowed-images"}, "data": {"images": "nginx"}})

    def allowed_image(request: dict[str, Any]) -> tuple[bool, str]:
        allowed = core.read_namespaced_config_map("allowed-images", "default").data["images"].split(",")
        image = request["object"]["spec"]["containers"][0]["image"]
        return image in allowed, f"image {image} is not in allowed-images"

    hook.callback = allowed_image
    try:
        _register(api, "ValidatingWebhookConfiguration", hook,
                  {"name": "images.example.com", "path": "/callback", "timeoutSeconds": 5})
        started = time.monotonic()
        served.kubectl("apply", "-f", "-", input=_pod("allowed"))
        assert time.monotonic() - started < 4  # not the webhook's timeout
        out = served.kubectl("apply", "-f", "-", input=_pod("refused", image="busybox"), check=False)
        assert ('admission webhook "images.example.com" denied the request: image busybox is not in '
                'allowed-images') in out, out
        assert served.kubectl("get", "pods", "-o", "name").split() == ["pod/allowed"]
    finally:
        hook.callback = lambda request: (True, "")
        core.delete_namespaced_config_map("allowed-images", "default")


def test_object_changed_while_a_webhook_was_called(served: Served, hook: Hook, api: client.ApiClient) -> None:
    """The webhook annotates the pod being labelled while it is called: the label patch is made
    again to the pod as it now is, so neither change is lost (upstream's GuaranteedUpdate)."""
    served.kubectl("apply", "-f", "-", input=_pod("busy"))
    core = client.CoreV1Api(config.new_client_from_config(served.kubeconfig))

    def annotate_once(request: dict[str, Any]) -> tuple[bool, str]:
        if not (request["oldObject"]["metadata"].get("annotations") or {}).get("seen"):
            core.patch_namespaced_pod("busy", "default", {"metadata": {"annotations": {"seen": "yes"}}})
        return True, ""

    hook.callback = annotate_once
    try:
        _register(api, "ValidatingWebhookConfiguration", hook, {"name": "touch.example.com", "path": "/callback", "rules": [
            {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels) && "
                                 "'tier' in object.metadata.labels"}]})
        served.kubectl("label", "pod", "busy", "tier=web")
    finally:
        hook.callback = lambda request: (True, "")
    meta = json.loads(served.kubectl("get", "pod", "busy", "-o", "json"))["metadata"]
    assert meta["labels"]["tier"] == "web" and meta["annotations"]["seen"] == "yes"


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                   "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _subresource_rule(subresource: str) -> list[dict[str, Any]]:
    return [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": [f"pods/{subresource}"]}]


def test_bindings_go_through_webhooks(served: Served, hook: Hook, api: client.ApiClient) -> None:
    """A client's binding and the scheduler's own are CREATEs of pods/binding carrying the
    Binding; a refused one leaves the pod unbound, and the scheduler retries it."""
    core = client.CoreV1Api(api)
    core.create_node(NODE)
    try:
        _register(api, "ValidatingWebhookConfiguration", hook,
                  {"name": "bind.example.com", "path": "/deny", "rules": _subresource_rule("binding")})
        pod = yaml.safe_load(_pod("custom"))
        pod["spec"]["schedulerName"] = "my-scheduler"  # bound by the test, as a custom scheduler does
        core.create_namespaced_pod("default", pod)
        with pytest.raises(ApiException) as e:
            core.create_namespaced_pod_binding("custom", "default", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "custom"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}, _preload_content=False)
        assert e.value.status == 403
        assert 'admission webhook "bind.example.com" denied the request' in json.loads(e.value.body)["message"]
        request = hook.reviews[-1]["request"]
        assert request["kind"] == {"group": "", "version": "v1", "kind": "Binding"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
        assert (request["operation"], request["subResource"], request["name"]) == ("CREATE", "binding", "custom")
        assert request["object"]["target"]["name"] == "n1"
        assert not core.read_namespaced_pod("custom", "default").spec.node_name
        # The default scheduler's binding is judged too, with the scheduler's identity.
        served.kubectl("apply", "-f", "-", input=_pod("scheduled"))
        wait_for(lambda: any(r["request"]["name"] == "scheduled" for r in hook.reviews), what="the scheduler's binding")
        request = next(r["request"] for r in hook.reviews if r["request"]["name"] == "scheduled")
        assert request["userInfo"]["username"] == "system:kube-scheduler" and request["subResource"] == "binding"
        assert not core.read_namespaced_pod("scheduled", "default").spec.node_name
        client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("bind")
        wait_for(lambda: core.read_namespaced_pod("scheduled", "default").spec.node_name == "n1",
                 what="the binding retried")
    finally:
        core.delete_node("n1")


def test_evictions_go_through_webhooks(served: Served, hook: Hook, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    served.kubectl("apply", "-f", "-", input=_pod("evicted"))
    _register(api, "ValidatingWebhookConfiguration", hook,
              {"name": "evict.example.com", "path": "/deny", "rules": _subresource_rule("eviction")})
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "evicted", "namespace": "default"}}
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_eviction("evicted", "default", eviction)
    assert e.value.status == 403
    request = hook.reviews[-1]["request"]
    assert request["kind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert (request["resource"]["resource"], request["subResource"]) == ("pods", "eviction")
    assert request["userInfo"]["username"] == "kubernetes-admin"
    assert "pod/evicted" in served.kubectl("get", "pods", "-o", "name")
    client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("evict")
    core.create_namespaced_pod_eviction("evicted", "default", eviction)
    wait_for(lambda: "evicted" not in served.kubectl("get", "pods", "-o", "name"), what="the eviction")
