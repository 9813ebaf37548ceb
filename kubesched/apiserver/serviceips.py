"""Service cluster IPs and node ports, allocated as kube-apiserver's Service registry does.

A Service of type ClusterIP, NodePort or LoadBalancer gets a virtual IP from the service CIDR
(`--service-cluster-ip-range`, 10.96.0.0/12 by default) unless it asks for one or is headless
(`None`); a NodePort or LoadBalancer Service gets a node port from 30000-32767 for each port
without one. What is taken is read from the stored Services rather than kept in a bitmap beside
them, so a deleted Service frees its IP and ports and a restarted server forgets nothing.

Dynamic picks come from the upper band of each range first (ServiceIPStaticSubrange and its
node port counterpart), leaving the lower band to Services that name their own.
"""

from __future__ import annotations

import ipaddress
import random
from typing import Any

from kubesched.apiserver.errors import Invalid
from kubesched.store.base import Store

Obj = dict[str, Any]

SERVICE_CIDR = "10.96.0.0/12"
NODE_PORTS = (30000, 32767)
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address: the `kubernetes` Service's


def _static_band(size: int, divisor: int, cap: int) -> int:
    """How much of a range's bottom is kept for requested values: size/divisor, within 16..cap."""
    return min(max(16, size // divisor), cap)


def _needs_ip(spec: Obj) -> bool:
    return spec.get("type", "ClusterIP") in ("ClusterIP", "NodePort", "LoadBalancer")


def _needs_node_ports(spec: Obj) -> bool:
    kind = spec.get("type")
    return kind == "NodePort" or kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True)


class ServiceIPs:
    def __init__(self, store: Store, cidr: str = SERVICE_CIDR, node_ports: tuple[int, int] = NODE_PORTS) -> None:
        self.store = store
        self.network = ipaddress.IPv4Network(cidr)
        self.node_ports = node_ports
        self._rng = random.Random()  # noqa: S311 - an address, not a secret

    def _taken(self, skip: Obj | None) -> tuple[set[str], set[int]]:
        ips: set[str] = set()
        ports: set[int] = set()
        skip_meta = (skip or {}).get("metadata") or {}
        for svc in self.store.list("Service"):
            meta = svc["metadata"]
            if (meta.get("namespace"), meta.get("name")) == (skip_meta.get("namespace"), skip_meta.get("name")):
                continue
            spec = svc.get("spec") or {}
            ips.update(spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []))
            ports.update(p["nodePort"] for p in spec.get("ports") or () if isinstance(p, dict) and p.get("nodePort"))
        return ips, ports

    def _pick(self, low: int, high: int, band: int, taken: set[int]) -> int | None:
        """A free value of [low, high]: from a random start in the upper band, then the lower band."""
        for start, end in ((low + band, high), (low, low + band - 1)):
            if start > end:
                continue
            first = self._rng.randint(start, end)
            for value in (*range(first, end + 1), *range(start, first)):
                if value not in taken:
                    return value
        return None

    def allocate(self, svc: Obj, current: Obj | None = None) -> None:
        """Fill in `svc`'s cluster IPs and node ports (an update keeps those `current` has), or
        refuse the Service with the registry's message for a requested one that is taken or out of
        range."""
        spec = svc.get("spec")
        if not isinstance(spec, dict):
            return
        old = (current or {}).get("spec") or {}
        meta = svc.get("metadata") or {}
        problems: list[str] = []
        ips, ports = self._taken(svc)
        if _needs_ip(spec):
            if not spec.get("clusterIP") and not spec.get("clusterIPs") and _needs_ip(old) and old.get("clusterIP"):
                spec["clusterIP"], spec["clusterIPs"] = old["clusterIP"], list(old.get("clusterIPs") or [old["clusterIP"]])
            requested = spec.get("clusterIP") or (spec.get("clusterIPs") or [""])[0]
            was = old.get("clusterIP") if _needs_ip(old) else None
            if was and requested and requested != was:  # ValidateServiceUpdate
                problems.append(f'spec.clusterIPs[0]: Invalid value: []string{{"{requested}"}}: may not change once set')
            elif requested == "None":
                spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
            elif requested:
                if requested != was and (problem := self._check_ip(requested, ips)):
                    problems.append(f'spec.clusterIPs: Invalid value: []string{{"{requested}"}}: '
                                    f"failed to allocate IP {requested}: {problem}")
                spec["clusterIP"], spec["clusterIPs"] = requested, [requested]
            else:
                free = self._free_ip(ips)
                if free is None:
                    problems.append("spec.clusterIPs: Internal error: failed to allocate a serviceIP: range is full")
                else:
                    spec["clusterIP"], spec["clusterIPs"] = free, [free]
        if _needs_node_ports(spec):
            problems += self._node_ports(spec, old, ports)
        if problems:
            raise Invalid.of("Service", "", meta.get("name", ""), problems)

    def _check_ip(self, text: str, taken: set[str]) -> str | None:
        try:
            ip = ipaddress.IPv4Address(text)
        except ValueError:
            return None  # validation reports a malformed address
        if ip not in self.network or ip in (self.network.network_address, self.network.broadcast_address):
            return (f"the provided IP ({text}) is not in the valid range. The range of valid IPs is "
                    f"{self.network}")
        return "provided IP is already allocated" if text in taken else None

    def _free_ip(self, taken: set[str]) -> str | None:
        size = self.network.num_addresses - 2  # neither the network's nor the broadcast address
        band = _static_band(size, 16, 256)
        base = int(self.network.network_address) + 1
        used = {int(ipaddress.IPv4Address(ip)) - base for ip in taken if _in(ip, self.network)}
        offset = self._pick(0, size - 1, band, used)
        return None if offset is None else str(ipaddress.IPv4Address(base + offset))

    def _node_ports(self, spec: Obj, old: Obj, taken: set[int]) -> list[str]:
        low, high = self.node_ports
        band = _static_band(high - low + 1, 32, 128)
        kept = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                for p in old.get("ports") or () if isinstance(p, dict) and p.get("nodePort")}
        problems = []
        mine: set[int] = set()
        for i, port in enumerate(spec.get("ports") or ()):
            if not isinstance(port, dict):
                continue
            requested = port.get("nodePort") or kept.get((port.get("port"), port.get("protocol", "TCP")))
            if requested:
                if not isinstance(requested, int):
                    continue  # validation reports it
                if not low <= requested <= high:
                    problems.append(f"spec.ports[{i}].nodePort: Invalid value: {requested}: provided port is not in "
                                    f"the valid range. The range of valid ports is {low}-{high}")
                elif requested in taken | mine:
                    problems.append(f"spec.ports[{i}].nodePort: Invalid value: {requested}: provided port is "
                                    "already allocated")
                port["nodePort"] = requested
                mine.add(requested)
                continue
            free = self._pick(low, high, band, taken | mine)
            if free is None:
                problems.append(f"spec.ports[{i}].nodePort: Internal error: failed to allocate a nodePort: range is full")
            else:
                port["nodePort"] = free
                mine.add(free)
        return problems


def _in(text: str, network: ipaddress.IPv4Network) -> bool:
    try:
        return ipaddress.IPv4Address(text) in network
    except ValueError:
        return False


def kubernetes_service() -> Obj:
    """The `kubernetes` Service in `default` that kube-apiserver keeps, on the range's first IP."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP, "clusterIPs": [KUBERNETES_SERVICE_IP],
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                     "sessionAffinity": "None"}}
