"""The Endpoints controller: keeps, for each Service with a selector, the core/v1 Endpoints of the
same name listing its pods' addresses (pkg/controller/endpoint, v1.35), which older clients and
operators still read beside EndpointSlices.

A selected pod with an IP that has not finished is listed, a terminating one only with
`publishNotReadyAddresses`: under `addresses` when it is Ready (always, with
`publishNotReadyAddresses`), else under `notReadyAddresses`, with its `nodeName`, its `targetRef`
and, when its `subdomain` names the Service, its `hostname`. Addresses offering the same ports
share a subset (RepackSubsets); a headless Service without ports lists its addresses without any.
The Endpoints carry the Service's labels (plus `service.kubernetes.io/headless` for a headless
one), the `endpoints.kubernetes.io/last-change-trigger-time` annotation, and at most 1000
addresses (Ready ones first), marked `endpoints.kubernetes.io/over-capacity: truncated` beyond.
Deleting the Service deletes them; a Service without a selector is left to whoever writes its
Endpoints. Addresses are ordered by IP and uid, ports and subsets by name, port and protocol
(upstream orders the last two by a hash of their Go form).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from kubesched.api.objects import Obj, get_condition, is_pod_ready
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.endpointslice import HEADLESS, selects, target_port
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent

TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"  # leader election's lock, never a Service's
MAX_CAPACITY = 1000
NO_PORT = -1  # RepackSubsets' sentinel for addresses a headless Service lists without ports


def in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints: an address, not finished, and not being deleted unless asked."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed") or not (status.get("podIP") or status.get("podIPs")):
        return False
    return include_terminating or not (pod.get("metadata") or {}).get("deletionTimestamp")


def _address(svc: Obj, pod: Obj) -> Obj:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    status = pod["status"]
    ip = status.get("podIP") or status["podIPs"][0].get("ip", "")
    address: Obj = {"ip": ip, "nodeName": spec.get("nodeName", ""),
                    "targetRef": {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"],
                                  "uid": meta.get("uid", "")}}
    if spec.get("hostname") and spec.get("subdomain") == svc["metadata"]["name"]:  # ShouldSetHostname
        address["hostname"] = spec["hostname"]
    return address


def _port(port: dict[str, Any], number: int) -> Obj:
    entry: Obj = {"name": port.get("name", ""), "port": number, "protocol": port.get("protocol", "TCP")}
    if port.get("appProtocol"):
        entry["appProtocol"] = port["appProtocol"]
    return entry


def repack(entries: list[tuple[Obj, bool, Obj | None]]) -> list[Obj]:
    """RepackSubsets: (address, ready, port) entries folded into subsets, one per set of addresses
    offering the same ports; an address not ready on some port is not ready there."""
    by_port: dict[tuple[Any, ...], dict[tuple[str, str], bool]] = {}
    addresses: dict[tuple[str, str], Obj] = {}
    ports: dict[tuple[Any, ...], Obj | None] = {}
    for address, is_ready, port in entries:
        key = (address["ip"], address["targetRef"]["uid"])
        addresses.setdefault(key, address)
        pkey = tuple(sorted(port.items())) if port is not None else (NO_PORT,)
        ports[pkey] = port
        seen = by_port.setdefault(pkey, {})
        seen[key] = seen.get(key, True) and is_ready
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for pkey, members in by_port.items():
        groups.setdefault(tuple(sorted(members.items())), []).append(pkey)
    subsets = []
    for members_key, pkeys in groups.items():
        members = dict(members_key)
        subset: Obj = {}
        listed = [addresses[k] for k in sorted(members) if members[k]]
        not_ready = [addresses[k] for k in sorted(members) if not members[k]]
        if listed:
            subset["addresses"] = listed
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        subset_ports = [p for p in (ports[k] for k in pkeys) if p is not None]
        if subset_ports:
            subset["ports"] = sorted(subset_ports, key=_port_order)
        subsets.append(subset)
    return sorted(subsets, key=lambda s: [_port_order(p) for p in s.get("ports") or ()])


def _port_order(port: Obj) -> tuple[str, int, str]:
    return port.get("name", ""), port["port"], port.get("protocol", "")


def truncate(subsets: list[Obj]) -> bool:
    """truncateEndpoints: beyond MAX_CAPACITY addresses, keep Ready ones first, each subset its
    share (rounded up) of what is kept; true if anything was cut."""
    ready = sum(len(s.get("addresses") or ()) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or ()) for s in subsets)
    if ready + not_ready <= MAX_CAPACITY:
        return False
    cut_ready = ready > MAX_CAPACITY
    keep, total = (MAX_CAPACITY, ready) if cut_ready else (MAX_CAPACITY - ready, not_ready)
    room = keep
    for subset in subsets:
        field = "addresses" if cut_ready else "notReadyAddresses"
        listed = subset.get(field) or []
        share = min(math.ceil(len(listed) / total * keep), room)
        if listed:
            subset[field] = listed[:share]
        if cut_ready:
            subset.pop("notReadyAddresses", None)
        room -= len(subset.get(field) or ())
    return True


class EndpointsController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)
        # TriggerTimeTracker: per Service, its pods' Ready transition times and its own creation.
        self._triggers: dict[tuple[str, str], tuple[dict[str, float], float]] = {}

    def start(self) -> None:
        for svc in self.api.store.list("Service"):
            self.queue.add((svc["metadata"]["namespace"], svc["metadata"]["name"]))
        for ep in self.api.store.list("Endpoints"):  # checkLeftoverEndpoints: those of gone Services go
            if LEADER_ANNOTATION not in (ep["metadata"].get("annotations") or {}):
                self.queue.add((ep["metadata"]["namespace"], ep["metadata"]["name"]))
        self.api.store.watch(self._on_change, {"Service", "Pod", "Endpoints"})

    def _on_change(self, ev: WatchEvent) -> None:
        meta = ev.obj.get("metadata") or {}
        namespace = meta.get("namespace", "")
        if ev.kind == "Service" or (ev.kind == "Endpoints" and ev.type == DELETED):
            self.queue.add((namespace, meta["name"]))
        elif ev.kind == "Pod":
            for svc in self.api.store.list("Service", namespace):
                selector = (svc.get("spec") or {}).get("selector")
                if selector and any(selects(selector, p) for p in (ev.obj, ev.old) if p is not None):
                    self.queue.add((namespace, svc["metadata"]["name"]))

    def _sync(self, key: tuple[str, str]) -> None:
        namespace, name = key
        svc = self.api.store.get("Service", namespace, name)
        current = self.api.store.get("Endpoints", namespace, name)
        with contextlib.suppress(APIError):  # a conflict or a vanished object: the next event resyncs
            if svc is None:
                self._triggers.pop(key, None)
                if current is not None:
                    self.api.delete("Endpoints", namespace, name)
                return
            spec = svc.get("spec") or {}
            if spec.get("type") == "ExternalName" or spec.get("selector") is None:
                return
            pods = [p for p in self.api.store.list("Pod", namespace) if selects(spec["selector"], p)]
            trigger = self._trigger_time(key, svc, pods)
            subsets = self._subsets(svc, pods)
            labels = dict(svc["metadata"].get("labels") or {})
            if current is not None:
                had = dict(current["metadata"].get("labels") or {})
                had.pop(HEADLESS, None)
                if current.get("subsets", []) == subsets and had == labels and \
                        _capacity_marked_right(current):
                    return
            body = self._endpoints(svc, current, subsets, labels, trigger)
            if current is None:
                self.api.create(body)
            else:
                self.api.update(body)

    def _subsets(self, svc: Obj, pods: list[Obj]) -> list[Obj]:
        spec = svc["spec"]
        publish = bool(spec.get("publishNotReadyAddresses"))
        entries: list[tuple[Obj, bool, Obj | None]] = []
        for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
            if not in_endpoints(pod, publish):
                continue
            address, ready = _address(svc, pod), publish or is_pod_ready(pod)
            if not spec.get("ports"):
                if spec.get("clusterIP") == "None":  # a headless Service may have no ports
                    entries.append((address, ready, None))
                continue
            for port in spec["ports"]:
                number = target_port(port, pod)
                if number is not None:
                    entries.append((address, ready, _port(port, number)))
        return repack(entries)

    def _trigger_time(self, key: tuple[str, str], svc: Obj, pods: list[Obj]) -> str | None:
        """ComputeEndpointLastChangeTriggerTime: a new Service's creation; then the earliest of the
        changes since the last sync (a pod's Ready transition, the Service's creation)."""
        seconds = self.api.seconds
        known = self._triggers.get(key)
        before, created_before = known if known is not None else ({}, -math.inf)
        times: dict[str, float] = {}
        changed: list[tuple[float, str]] = []
        for pod in pods:
            ready = get_condition(pod, "Ready")
            if ready and ready.get("lastTransitionTime"):
                stamp = ready["lastTransitionTime"]
                times[pod["metadata"]["name"]] = seconds(stamp)
                if seconds(stamp) > before.get(pod["metadata"]["name"], -math.inf):
                    changed.append((seconds(stamp), stamp))
        created = svc["metadata"].get("creationTimestamp")
        created_at = seconds(created) if created else -math.inf
        if created and created_at > created_before:
            changed.append((created_at, created))
        self._triggers[key] = (times, created_at)
        if known is None:
            return created
        return min(changed)[1] if changed else None

    def _endpoints(self, svc: Obj, current: Obj | None, subsets: list[Obj], labels: dict[str, str],
                   trigger: str | None) -> Obj:
        meta = svc["metadata"]
        ep_meta: Obj = {**(current or {}).get("metadata", {"name": meta["name"], "namespace": meta["namespace"]})}
        annotations = dict(ep_meta.get("annotations") or {})
        if trigger:
            annotations[TRIGGER_TIME] = trigger
        else:
            annotations.pop(TRIGGER_TIME, None)
        if truncate(subsets):
            annotations[OVER_CAPACITY] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY, None)
        if svc["spec"].get("clusterIP") in (None, "", "None"):  # IsServiceIPSet
            labels[HEADLESS] = ""
        ep_meta["labels"], ep_meta["annotations"] = labels, annotations
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": ep_meta}
        if subsets:
            body["subsets"] = subsets
        return body


def _capacity_marked_right(endpoints: Obj) -> bool:
    """capacityAnnotationSetCorrectly: at most MAX_CAPACITY addresses and no over-capacity mark."""
    count = sum(len(s.get("addresses") or ()) + len(s.get("notReadyAddresses") or ())
                for s in endpoints.get("subsets") or ())
    return count <= MAX_CAPACITY and OVER_CAPACITY not in (endpoints["metadata"].get("annotations") or {})
