"""How `serve` reaches an admission webhook: the POST of an AdmissionReview over HTTPS to the
configuration's `clientConfig.url`, or to the Service it names.

A Service is reached through its EndpointSlices, as kube-apiserver does with
`--enable-aggregator-routing`: the first ready address of the slice port named as the Service
port `clientConfig.service.port` (443 by default) is called, with the TLS server name
`NAME.NAMESPACE.svc` that a webhook's certificate is issued for. serve's pods run nowhere, so the
slices the EndpointSlice controller keeps of them are never called (the Service has no endpoints
then, as when a webhook's pods are not ready). A webhook running on this machine is reached by
giving its Service no selector and an EndpointSlice of its own with address 127.0.0.1, as one
points a Service at anything outside a cluster.

The certificate is checked against `caBundle` (PEM, base64 in JSON), else against the system's
roots. Failures read as Go's HTTP client words them, since they end up in the
`failed calling webhook` message users match on.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubesched.api.objects import Obj
from kubesched.controllers.endpointslice import CONTROLLER, MANAGED_BY, SERVICE_NAME
from kubesched.store.base import Store


class CallError(Exception):
    """The webhook could not be called, or answered with something other than a review; the
    message is the reason upstream's `failed calling webhook "NAME": REASON` gives."""


@dataclass
class Target:
    """Where one call goes: the address to connect to, the name its certificate must carry,
    and the URL that names it in messages."""

    host: str
    port: int
    server_name: str
    path: str
    url: str


def target(client_config: Obj, store: Store, timeout: int) -> Target:
    """The address `clientConfig` names; raises CallError when it names none."""
    query = f"timeout={timeout}s"
    if url := client_config.get("url"):
        parts = urlsplit(str(url))
        if parts.scheme != "https" or not parts.hostname:
            raise CallError(f"failed to call webhook: 'https' is the only allowed URL scheme for {url}")
        path = (parts.path or "/") + f"?{query}"
        return Target(parts.hostname, parts.port or 443, parts.hostname, path, f"{url}?{query}")
    service = client_config.get("service") or {}
    name, namespace = str(service.get("name") or ""), str(service.get("namespace") or "")
    port = int(service.get("port") or 443)
    path = (service.get("path") or "/") + f"?{query}"
    svc_url = f"https://{name}.{namespace}.svc:{port}{path}"
    svc = store.get("Service", namespace, name)
    if svc is None:
        raise CallError(f'failed to call webhook: Post "{svc_url}": service "{name}" not found')
    ports = [p for p in (svc.get("spec") or {}).get("ports") or () if p.get("port") == port]
    if not ports:
        raise CallError(f'failed to call webhook: Post "{svc_url}": service "{name}" does not have a port {port}')
    port_name = ports[0].get("name") or ""
    for endpoint_slice in store.list("EndpointSlice", namespace):
        labels = endpoint_slice["metadata"].get("labels") or {}
        if labels.get(SERVICE_NAME) != name or labels.get(MANAGED_BY) == CONTROLLER:
            continue
        numbers = [p.get("port") for p in endpoint_slice.get("ports") or () if (p.get("name") or "") == port_name]
        if not numbers or numbers[0] is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or ():
            if (endpoint.get("conditions") or {}).get("ready") is not False and endpoint.get("addresses"):
                return Target(endpoint["addresses"][0], int(numbers[0]), f"{name}.{namespace}.svc", path, svc_url)
    raise CallError(f'failed to call webhook: Post "{svc_url}": no endpoints available for service "{name}"')


def _context(ca_bundle: Any) -> ssl.SSLContext:
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(str(ca_bundle), validate=True).decode()
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError):
        raise CallError("could not get REST client: unable to load root certificates: unable to parse bytes as "
                        "PEM block") from None


def _reason(e: OSError, to: Target) -> str:
    """An OSError as Go's net/http client reports it."""
    if isinstance(e, TimeoutError | socket.timeout):
        return "context deadline exceeded"
    if isinstance(e, ConnectionRefusedError):
        return f"dial tcp {to.host}:{to.port}: connect: connection refused"
    if isinstance(e, ssl.SSLCertVerificationError):
        if "mismatch" in (e.verify_message or ""):
            return f"tls: failed to verify certificate: x509: certificate is not valid for {to.server_name}"
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return str(e)


def post(to: Target, ca_bundle: Any, review: Obj, timeout: float) -> Obj:
    """POST `review` and return the review the webhook answers with."""
    context = _context(ca_bundle)
    body = json.dumps(review, separators=(",", ":")).encode()
    conn = http.client.HTTPConnection(to.host, to.port, timeout=timeout)
    try:
        raw = socket.create_connection((to.host, to.port), timeout=timeout)
        conn.sock = context.wrap_socket(raw, server_hostname=to.server_name)
        conn.request("POST", to.path, body, {"Content-Type": "application/json",
                                             "Accept": "application/json, */*"})
        response = conn.getresponse()
        data = response.read()
    except OSError as e:
        raise CallError(f'failed to call webhook: Post "{to.url}": {_reason(e, to)}') from None
    except http.client.HTTPException as e:
        raise CallError(f'failed to call webhook: Post "{to.url}": {e}') from None
    finally:
        conn.close()
    if not 200 <= response.status < 300:
        raise CallError(f"failed to call webhook: {_http_error(response.status, data)}")
    try:
        answer = json.loads(data)
    except ValueError as e:
        raise CallError(f"failed to call webhook: couldn't get version/kind; json parse error: {e}") from None
    if not isinstance(answer, dict):
        raise CallError("failed to call webhook: couldn't get version/kind; json parse error: the answer is not "
                        "an object")
    return answer


def _http_error(code: int, data: bytes) -> str:
    """A webhook's non-2xx answer, as client-go's REST client turns it into an error."""
    try:
        status = json.loads(data)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return str(status["message"])
    text = data.decode(errors="replace").strip()
    if not text:
        return f"the server responded with the status code {code} but did not return more information"
    return f'an error on the server ("{text}") has prevented the request from succeeding'
