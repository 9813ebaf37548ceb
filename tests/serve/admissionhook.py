"""A webhook server of a test's own on 127.0.0.1 over HTTPS (a self-signed certificate given as
`caBundle`): each path answers as the test says, every AdmissionRequest received is kept."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kubesched.server.tls import self_signed
from tests.serve.harness import Served

Answer = Callable[[dict[str, Any]], dict[str, Any]]


class AdmissionHook:
    """Each path's answer is the test's `answers[path]` (allowed without it); every request kept."""

    def __init__(self, tmp: Path) -> None:
        cert = self_signed("hook.default.svc", str(tmp))
        self.ca_bundle = base64.b64encode(cert.pem()).decode()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.answers: dict[str, Answer] = {}
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["request"]
                path = self.path.split("?")[0].lstrip("/")
                hook.requests.append((path, request))
                response = {"uid": request["uid"], "allowed": True}
                if path in hook.answers:
                    response.update(hook.answers[path](request))
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                with contextlib.suppress(OSError):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = cert.context().wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def webhook(self, name: str, resources: list[str], operations: tuple[str, ...] = ("UPDATE",),
                **more: Any) -> dict[str, Any]:
        """A webhook `<name>.example.com` called at /<name> for these resources of every group."""
        return {"name": f"{name}.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": f"https://127.0.0.1:{self.server.server_address[1]}/{name}",
                                 "caBundle": self.ca_bundle},
                "rules": [{"operations": list(operations), "apiGroups": ["*"], "apiVersions": ["*"],
                           "resources": resources}], **more}

    def called(self) -> list[str]:
        return [path for path, _ in self.requests]


def patch(*ops: dict[str, Any]) -> dict[str, Any]:
    """A response patching the object with these JSON patch operations."""
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(list(ops)).encode()).decode()}


def deny(message: str) -> dict[str, Any]:
    return {"allowed": False, "status": {"code": 403, "message": message}}


def register(api: client.ApiClient, kind: str, *webhooks: dict[str, Any]) -> None:
    """A configuration of `kind` named after its first webhook, made with the official client."""
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": webhooks[0]["name"]}, "webhooks": list(webhooks)}
    admission = client.AdmissionregistrationV1Api(api)
    if kind == "MutatingWebhookConfiguration":
        admission.create_mutating_webhook_configuration(body)
    else:
        admission.create_validating_webhook_configuration(body)




# The fixtures of a test module that drives serve through this hook (it imports them): one hook
# and one serve per module, every webhook configuration removed after each test.

@pytest.fixture(scope="module", name="hook")
def hook_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdmissionHook]:
    h = AdmissionHook(tmp_path_factory.mktemp("hook"))
    yield h
    h.server.shutdown()


@pytest.fixture(scope="module", name="cluster")
def cluster_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("admission")).start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module", name="api")
def api_fixture(cluster: Served) -> client.ApiClient:
    return config.new_client_from_config(cluster.kubeconfig)


@pytest.fixture(name="served")
def served_fixture(cluster: Served, hook: AdmissionHook, api: client.ApiClient) -> Iterator[Served]:
    hook.requests.clear()
    hook.answers.clear()
    yield cluster
    admission = client.AdmissionregistrationV1Api(api)
    admission.delete_collection_validating_webhook_configuration()
    admission.delete_collection_mutating_webhook_configuration()
