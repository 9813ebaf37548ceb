"""The EndpointSlice controller: keeps, for each Service with a selector, EndpointSlices listing
the addresses of its pods (pkg/controller/endpointslice, v1.35), which is what a client or an
operator reads to find a Service's backends.

Every pod the selector matches that has an IP and has not finished is an endpoint, terminating
ones included: `ready` when the pod is Ready and not terminating (always, with
`publishNotReadyAddresses`), `serving` when it is Ready, `terminating` once it is being deleted.
Ports are the Service's, each at the pod's targetPort (a named one looked up in its containers),
so pods that resolve a name differently get slices of their own. A Service without endpoints
keeps one empty slice, as upstream's placeholder. Slices are named `<service>-<random>`, owned by
the Service and labelled with its name and the controller's; each holds at most 100 endpoints.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.objects import Obj, is_pod_ready
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import WatchEvent

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"
HEADLESS = "service.kubernetes.io/headless"
MAX_ENDPOINTS = 100  # --max-endpoints-per-slice


def selects(selector: dict[str, str], pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def target_port(port: dict[str, Any], pod: Obj) -> int | None:
    """The pod's port for a Service port: a number as it is, a name from the containers' ports."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or ():
        for cport in container.get("ports") or ():
            if cport.get("name") == target and cport.get("protocol", "TCP") == port.get("protocol", "TCP"):
                return cport.get("containerPort")
    return None


def _ports(svc: Obj, pod: Obj) -> tuple[tuple[tuple[str, Any], ...], ...]:
    ports = []
    for port in (svc.get("spec") or {}).get("ports") or ():
        number = target_port(port, pod)
        if number is None:
            continue  # a name the pod does not have: that port is left out for this pod
        entry = {"name": port.get("name", ""), "port": number, "protocol": port.get("protocol", "TCP")}
        if port.get("appProtocol"):
            entry["appProtocol"] = port["appProtocol"]
        ports.append(tuple(entry.items()))
    return tuple(ports)


def _endpoint(svc: Obj, pod: Obj) -> Obj:
    meta = pod["metadata"]
    ready = is_pod_ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: Obj = {
        "addresses": [pod["status"]["podIP"]],
        "conditions": {"ready": publish or (ready and not terminating), "serving": publish or ready,
                       "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"],
                      "uid": meta.get("uid", "")},
    }
    if node := (pod.get("spec") or {}).get("nodeName"):
        endpoint["nodeName"] = node
    return endpoint


class EndpointSliceController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        for svc in self.api.store.list("Service"):
            self.queue.add((svc["metadata"]["namespace"], svc["metadata"]["name"]))
        self.api.store.watch(self._on_change, {"Service", "Pod", "EndpointSlice"})

    def _on_change(self, ev: WatchEvent) -> None:
        meta = ev.obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        if ev.kind == "Service":
            self.queue.add((namespace, meta["name"]))
        elif ev.kind == "EndpointSlice":
            labels = meta.get("labels") or {}
            if labels.get(MANAGED_BY) == CONTROLLER and labels.get(SERVICE_NAME):
                self.queue.add((namespace, labels[SERVICE_NAME]))
        else:
            for svc in self.api.store.list("Service", namespace):
                selector = (svc.get("spec") or {}).get("selector")
                if selector and any(selects(selector, p) for p in (ev.obj, ev.old) if p is not None):
                    self.queue.add((namespace, svc["metadata"]["name"]))

    def _desired(self, svc: Obj) -> list[tuple[tuple[Any, ...], list[Obj]]]:
        """(ports, endpoints) of each slice the Service should have, endpoints by pod name."""
        namespace, selector = svc["metadata"]["namespace"], svc["spec"]["selector"]
        groups: dict[tuple[Any, ...], list[Obj]] = {}
        for pod in sorted(self.api.store.list("Pod", namespace), key=lambda p: p["metadata"]["name"]):
            status = pod.get("status") or {}
            if not selects(selector, pod) or not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed"):
                continue
            groups.setdefault(_ports(svc, pod), []).append(_endpoint(svc, pod))
        slices = [(ports, endpoints[i:i + MAX_ENDPOINTS]) for ports, endpoints in groups.items()
                  for i in range(0, len(endpoints), MAX_ENDPOINTS)]
        return slices or [((), [])]  # the placeholder

    def _sync(self, key: tuple[str, str]) -> None:
        namespace, name = key
        svc = self.api.store.get("Service", namespace, name)
        existing = sorted((s for s in self.api.store.list("EndpointSlice", namespace)
                           if (s["metadata"].get("labels") or {}).get(SERVICE_NAME) == name
                           and s["metadata"]["labels"].get(MANAGED_BY) == CONTROLLER),
                          key=lambda s: s["metadata"]["name"])
        spec = (svc or {}).get("spec") or {}
        wanted = [] if svc is None or svc["metadata"].get("deletionTimestamp") or not spec.get("selector") \
            or spec.get("type") == "ExternalName" else self._desired(svc)
        with contextlib.suppress(APIError):  # a conflict or a vanished object: the next event resyncs
            for (ports, endpoints), current in zip(wanted, existing + [None] * len(wanted), strict=False):
                assert svc is not None  # something is wanted only for a Service
                body = self._slice(svc, ports, endpoints, current)
                if current is None:
                    self.api.create(body)
                elif any(body.get(k) != current.get(k) for k in ("endpoints", "ports", "metadata")):
                    self.api.update(body)
            for stale in existing[len(wanted):]:
                self.api.delete("EndpointSlice", namespace, stale["metadata"]["name"])

    @staticmethod
    def _slice(svc: Obj, ports: tuple[Any, ...], endpoints: list[Obj], current: Obj | None) -> Obj:
        meta = svc["metadata"]
        labels = {**(meta.get("labels") or {}), SERVICE_NAME: meta["name"], MANAGED_BY: CONTROLLER}
        if svc["spec"].get("clusterIP") == "None":
            labels[HEADLESS] = ""
        slice_meta: Obj = {**(current or {}).get("metadata", {}), "namespace": meta["namespace"], "labels": labels,
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta["name"],
                                                "uid": meta.get("uid", ""), "controller": True,
                                                "blockOwnerDeletion": True}]}
        if current is None:
            slice_meta["generateName"] = meta["name"] + "-"
        body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": slice_meta,
                "addressType": "IPv4", "endpoints": endpoints}
        if ports:  # the placeholder has none
            body["ports"] = [dict(p) for p in ports]
        return body
