"""The scheduler's shared view of Dynamic Resource Allocation (framework.SharedDRAManager).

It keeps, from the claim, slice and class informers: which devices allocated claims hold (counted
per device as claims come and go, so a scheduling attempt never scans every claim), the claims
whose allocation the scheduler has decided in Reserve but not yet written in PreBind (in-flight:
their devices are taken, and a pod sharing such a claim waits), and the slices indexed by the node
they name, so a node's pools are found without walking every slice in the cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from kubesched.api.dra.allocator import DeviceID, allocated_devices
from kubesched.store.base import DELETED, WatchEvent

Obj = dict[str, Any]
DRA_KINDS = {"ResourceClaim", "ResourceSlice", "DeviceClass"}


class AllocatedDevices:
    """The devices in use: held by an allocated claim or by an in-flight allocation."""

    def __init__(self, manager: DRAManager) -> None:
        self._m = manager

    def __contains__(self, device: object) -> bool:
        return device in self._m._held or device in self._m._in_flight_devices


class DRAManager:
    def __init__(self) -> None:
        self._claim_devices: dict[str, list[DeviceID]] = {}  # by claim uid
        self._held: Counter[DeviceID] = Counter()
        self._in_flight: dict[str, Obj] = {}  # claim uid -> the claim as Reserve allocated it
        self._in_flight_devices: Counter[DeviceID] = Counter()
        self._node_slices: dict[str, dict[str, Obj]] = {}  # node -> slice name -> slice
        self._other_slices: dict[str, Obj] = {}  # selectors, allNodes, per-device selection
        self._pool_slices: dict[tuple[str, str], dict[str, Obj]] = {}
        self.allocated = AllocatedDevices(self)

    # ---- informers -----------------------------------------------------------------------------

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "ResourceClaim":
            self._on_claim(ev.obj, ev.type == DELETED)
        elif ev.kind == "ResourceSlice":
            self._on_slice(ev.old if ev.type != DELETED else None, ev.obj, ev.type == DELETED)

    def _on_claim(self, claim: Obj, deleted: bool) -> None:
        uid = claim["metadata"].get("uid") or claim["metadata"]["name"]
        for dev in self._claim_devices.pop(uid, ()):
            self._held[dev] -= 1
            if not self._held[dev]:
                del self._held[dev]
        if not deleted:
            devices = allocated_devices(claim)
            if devices:
                self._claim_devices[uid] = devices
                self._held.update(devices)

    def _on_slice(self, old: Obj | None, obj: Obj, deleted: bool) -> None:
        self._forget_slice(old if old is not None else obj)
        if not deleted:
            name = obj["metadata"]["name"]
            spec = obj.get("spec") or {}
            node = spec.get("nodeName")
            if node:
                self._node_slices.setdefault(node, {})[name] = obj
            else:
                self._other_slices[name] = obj
            self._pool_slices.setdefault(_pool_key(obj), {})[name] = obj

    def _forget_slice(self, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        for index in (*self._node_slices.values(), self._other_slices):
            index.pop(name, None)
        self._pool_slices.get(_pool_key(obj), {}).pop(name, None)

    # ---- reads ---------------------------------------------------------------------------------

    def slices_for_node(self, node: Obj) -> Iterator[Obj]:
        """The slices that may have devices for `node` (by name, or by a selector to evaluate)."""
        yield from self._node_slices.get(node["metadata"]["name"], {}).values()
        yield from self._other_slices.values()

    def pool_slices(self, driver: str, pool: str) -> Iterator[Obj]:
        yield from self._pool_slices.get((driver, pool), {}).values()

    def devices_in_use(self) -> int:
        return len(self._held) + len(self._in_flight_devices)

    # ---- in-flight allocations -------------------------------------------------------------------

    def has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def signal_pending_allocation(self, uid: str, claim: Obj) -> None:
        self.remove_pending_allocation(uid)
        self._in_flight[uid] = claim
        self._in_flight_devices.update(allocated_devices(claim))

    def remove_pending_allocation(self, uid: str) -> bool:
        claim = self._in_flight.pop(uid, None)
        if claim is None:
            return False
        for dev in allocated_devices(claim):
            self._in_flight_devices[dev] -= 1
            if not self._in_flight_devices[dev]:
                del self._in_flight_devices[dev]
        return True


def _pool_key(obj: Obj) -> tuple[str, str]:
    spec = obj.get("spec") or {}
    return spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
