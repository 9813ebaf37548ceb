"""The `kubernetes` Service's endpoints, as kube-apiserver keeps them (v1.35's kubernetesservice
controller and its lease endpoint reconciler, pkg/controlplane/reconcilers): every 10 s the
server makes sure the Service sends port 443 to the port it serves on, that an Endpoints
`kubernetes` (label `endpointslice.kubernetes.io/skip-mirror: "true"`) lists its advertised
address and that an EndpointSlice `kubernetes` (label `kubernetes.io/service-name`, no
`managed-by`: the EndpointSlice controller leaves it alone) does too, Ready. A client that
resolves the Service to an address, as an in-cluster client or an operator's discovery does,
then reaches this server. Changed or deleted, they are put back on the next pass.

One server is one API server: its address is the only one listed (upstream lists every live
server's, each holding a lease).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from typing import Any

from kubesched.api.objects import Obj
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock

NAME, NAMESPACE = "kubernetes", "default"
INTERVAL = 10.0  # kube-apiserver's endpoint reconciler interval
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME = "kubernetes.io/service-name"
PORT_NAME = "https"


def advertised_address(host: str) -> str:
    """The address clients are told to use: the one listened on, or, listening on every address,
    the one the default route leaves by (as kube-apiserver picks its advertise address), else
    loopback. A host name is resolved."""
    try:
        ip = ipaddress.ip_address(host or "0.0.0.0")
    except ValueError:
        with contextlib.suppress(OSError):
            return str(socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0])
        return "127.0.0.1"
    if not ip.is_unspecified:
        return str(ip)
    v6 = ip.version == 6
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6 if v6 else socket.AF_INET,
                                                     socket.SOCK_DGRAM) as probe:
        probe.connect(("2001:db8::1" if v6 else "192.0.2.1", 9))  # a UDP connect sends nothing
        return str(probe.getsockname()[0])
    return "::1" if v6 else "127.0.0.1"


class KubernetesService:
    """Keeps the `kubernetes` Service's port and its Endpoints and EndpointSlice on `address`:`port`."""

    def __init__(self, api: APIServer, clock: Clock, address: str, port: int) -> None:
        self.api = api
        self.clock = clock
        self.address = address
        self.port = port
        self.address_type = "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4"

    def start(self) -> None:
        self._reconcile()

    def _reconcile(self) -> None:
        with contextlib.suppress(APIError):  # a conflict or a write refused: the next pass retries
            self._service()
            self._endpoints()
            self._slices()
        self.clock.call_at(self.clock.now() + INTERVAL, self._reconcile, daemon=True)

    def _service(self) -> None:
        svc = self.api.store.get("Service", NAMESPACE, NAME)
        if svc is None:
            return  # recreated where the server starts
        ports = [{"name": PORT_NAME, "port": 443, "protocol": "TCP", "targetPort": self.port}]
        if svc["spec"].get("ports") != ports:
            self.api.update({**svc, "spec": {**svc["spec"], "ports": ports}})

    def _endpoints(self) -> None:
        current = self.api.store.get("Endpoints", NAMESPACE, NAME)
        labels = {SKIP_MIRROR: "true"}
        subsets = [{"addresses": [{"ip": self.address}],
                    "ports": [{"name": PORT_NAME, "port": self.port, "protocol": "TCP"}]}]
        if current is None:
            self.api.create({"apiVersion": "v1", "kind": "Endpoints",
                             "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
                             "subsets": subsets})
        elif current.get("subsets") != subsets or current["metadata"].get("labels") != labels:
            self.api.update({**current, "metadata": {**current["metadata"], "labels": labels}, "subsets": subsets})

    def _slices(self) -> None:
        ours: Obj | None = None
        for s in self.api.store.list("EndpointSlice", NAMESPACE):
            if (s["metadata"].get("labels") or {}).get(SERVICE_NAME) != NAME:
                continue
            if s["metadata"]["name"] == NAME and s.get("addressType") == self.address_type:
                ours = s
            else:  # another family's, or a stray: as far as this server knows, it should not exist
                self.api.delete("EndpointSlice", NAMESPACE, s["metadata"]["name"])
        wanted: dict[str, Any] = {
            "addressType": self.address_type,
            "endpoints": [{"addresses": [self.address], "conditions": {"ready": True}}],
            "ports": [{"name": PORT_NAME, "port": self.port, "protocol": "TCP"}]}
        labels = {SERVICE_NAME: NAME}
        if ours is None:
            self.api.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                             "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels}, **wanted})
        elif any(ours.get(k) != v for k, v in wanted.items()) or ours["metadata"].get("labels") != labels:
            self.api.update({**ours, **wanted, "metadata": {**ours["metadata"], "labels": labels}})
