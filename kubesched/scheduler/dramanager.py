"""The scheduler's shared view of Dynamic Resource Allocation (framework.SharedDRAManager).

It keeps, from the claim, slice and class informers: which devices allocated claims hold (counted
per device as claims come and go, so a scheduling attempt never scans every claim), the claims
whose allocation the scheduler has decided in Reserve but not yet written in PreBind (in-flight:
their devices are taken, and a pod sharing such a claim waits), and the slices indexed by the node
they name, so a node's pools are found without walking every slice in the cluster.

With consumable capacity a device may be shared: each allocation result with a `shareID` holds a
share of it, and what the shares consume is summed per device as claims come and go (in-flight
ones included), so the allocator sees a shared device as taken only as far as its capacity is
(upstream's AllocatedState with its AggregatedCapacity).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.dra import capacity as cc
from kubesched.api.dra import taintrules
from kubesched.api.dra.allocator import (
    DeviceID,
    Features,
    Pool,
    allocated_devices,
    allocated_shares,
    gather_pools,
)
from kubesched.api.dra.extended import CLAIM_ANNOTATION, device_class_mapping
from kubesched.store.base import DELETED, WatchEvent

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache

Obj = dict[str, Any]
DRA_KINDS = {"ResourceClaim", "ResourceSlice", "DeviceClass", "DeviceTaintRule"}


class AllocatedDevices:
    """The devices in use: held by an allocated claim or by an in-flight allocation."""

    def __init__(self, manager: DRAManager) -> None:
        self._m = manager

    def __contains__(self, device: object) -> bool:
        return device in self._m._held or device in self._m._in_flight_devices


class WholeDevices:
    """With consumable capacity: the devices held whole (not as a share), by an allocated claim
    or an in-flight allocation."""

    def __init__(self, manager: DRAManager) -> None:
        self._m = manager

    def __contains__(self, device: object) -> bool:
        m = self._m
        held = m._held.get(device, 0) + m._in_flight_devices.get(device, 0)  # type: ignore[call-overload]
        return held > m.shares.get(device, 0)  # type: ignore[call-overload]


class DRAManager:
    def __init__(self, cache: Cache | None = None) -> None:
        self._claim_devices: dict[str, list[DeviceID]] = {}  # by claim uid
        self._held: Counter[DeviceID] = Counter()
        self._in_flight: dict[str, Obj] = {}  # claim uid -> the claim as Reserve allocated it
        self._in_flight_devices: Counter[DeviceID] = Counter()
        self._node_slices: dict[str, dict[str, Obj]] = {}  # node -> slice name -> slice
        self._other_slices: dict[str, Obj] = {}  # selectors, allNodes, per-device selection
        self._slice_node: dict[str, str | None] = {}  # slice name -> the node it is filed under
        self._pools: dict[str, tuple[Obj, int, Features, list[Pool]]] = {}  # see pools
        self._pool_slices: dict[tuple[str, str], dict[str, Obj]] = {}
        self.allocated = AllocatedDevices(self)
        # Consumable capacity: shares held per device, and what they consume together.
        self._claim_shares: dict[str, list[tuple[DeviceID, cc.Amounts]]] = {}  # by claim uid
        self.shares: Counter[DeviceID] = Counter()
        self.consumed: dict[DeviceID, cc.Amounts] = {}
        self.whole = WholeDevices(self)
        # What an allocation on a node depends on besides the claims, for caching its outcome:
        # `epoch` moves with any slice or class, a pool's version with its devices in use.
        self.epoch = 0
        # Per cache slot, a number that changes whenever the node or the use of a pool its slices
        # name does (a freed slot's next node gets a new one): outcomes computed at one stamp hold.
        self.slot_stamp = np.zeros(64, dtype=np.int64)
        self._stamps = itertools.count(1)
        self._cache = cache
        self._pool_nodes: dict[tuple[str, str], set[str]] = {}  # pool -> the nodes its slices name
        self._other_pools: set[tuple[str, str]] = set()
        # DeviceTaintRules, applied to the slices the allocator reads when DRADeviceTaintRules is on
        # (the scheduler says so); each slice's ruled copy is kept while it and the rules stay.
        self.taint_rules = False
        self._rules: dict[str, Obj] = {}
        self._ruled: dict[str, tuple[Obj, int, Obj]] = {}  # slice name -> (slice, epoch, with rules)
        # Extended resources backed by DRA: the classes (for the name -> class mapping, built
        # again only after a class changed) and the claims made for pods' extended resources,
        # by the uid of the pod that owns them.
        self._classes: dict[str, Obj] = {}
        self._mapping: dict[str, str] | None = None
        self._extended_claims: dict[str, Obj] = {}
        if cache is not None:
            cache.listeners.append(self._bump)

    # ---- informers -----------------------------------------------------------------------------

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "ResourceClaim":
            self._on_claim(ev.obj, ev.type == DELETED)
            return
        self.epoch += 1  # a slice, a class or a taint rule
        if ev.kind == "DeviceTaintRule":
            name = ev.obj["metadata"]["name"]
            if ev.type == DELETED:
                self._rules.pop(name, None)
            else:
                self._rules[name] = ev.obj
        elif ev.kind == "ResourceSlice":
            self._on_slice(ev.old if ev.type != DELETED else None, ev.obj, ev.type == DELETED)
        elif ev.kind == "DeviceClass":
            if ev.type == DELETED:
                self._classes.pop(ev.obj["metadata"]["name"], None)
            else:
                self._classes[ev.obj["metadata"]["name"]] = ev.obj
            self._mapping = None

    def _on_claim(self, claim: Obj, deleted: bool) -> None:
        uid = claim["metadata"].get("uid") or claim["metadata"]["name"]
        if (claim["metadata"].get("annotations") or {}).get(CLAIM_ANNOTATION) == "true":
            self._index_extended_claim(claim, deleted)
        devices = [] if deleted else allocated_devices(claim)
        before = self._claim_devices.get(uid, [])
        shares = [] if deleted else allocated_shares(claim)
        if shares or uid in self._claim_shares:
            self._share(self._claim_shares.pop(uid, []), -1)
            if shares:
                self._claim_shares[uid] = shares
                self._share(shares, 1)
        if devices == before:
            return
        for dev in before:
            self._held[dev] -= 1
            if not self._held[dev]:
                del self._held[dev]
        self._claim_devices.pop(uid, None)
        if devices:
            self._claim_devices[uid] = devices
            self._held.update(devices)
        self._touch(before + devices)

    def _share(self, shares: list[tuple[DeviceID, cc.Amounts]], sign: int) -> None:
        """Count shares in (1) or out (-1) of the devices' totals."""
        for dev, amounts in shares:
            self.shares[dev] += sign
            if not self.shares[dev]:
                del self.shares[dev]
            if amounts:
                total = self.consumed.setdefault(dev, {})
                cc.add(total, amounts, sign)
                if not any(total.values()):
                    del self.consumed[dev]

    def _touch(self, devices: list[DeviceID]) -> None:
        for driver, pool, _ in devices:
            key = (driver, pool)
            for node in self._pool_nodes.get(key, ()):
                self._bump(node)
            if key in self._other_pools:
                self.epoch += 1  # any node may reach it

    def _bump(self, node: str) -> None:
        slot = self.slot_of(node)
        if slot is None:
            return
        if slot >= len(self.slot_stamp):
            self._bump_size(slot)
        self.slot_stamp[slot] = next(self._stamps)

    def slot_of(self, node: str) -> int | None:
        ni = self._cache.nodes.get(node) if self._cache is not None else None
        return ni.slot if ni is not None else None

    def _on_slice(self, old: Obj | None, obj: Obj, deleted: bool) -> None:
        self._forget_slice(old if old is not None else obj)
        if not deleted:
            name = obj["metadata"]["name"]
            spec = obj.get("spec") or {}
            node = spec.get("nodeName")
            pool = _pool_key(obj)
            self._slice_node[name] = node
            if node:
                self._node_slices.setdefault(node, {})[name] = obj
                self._pool_nodes.setdefault(pool, set()).add(node)
            else:
                self._other_slices[name] = obj
                self._other_pools.add(pool)
            self._pool_slices.setdefault(pool, {})[name] = obj

    def _forget_slice(self, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        node = self._slice_node.pop(name, None)
        index = self._node_slices.get(node, {}) if node else self._other_slices
        index.pop(name, None)
        self._pool_slices.get(_pool_key(obj), {}).pop(name, None)

    # ---- reads ---------------------------------------------------------------------------------

    def slices_for_node(self, node: Obj) -> Iterator[Obj]:
        """The slices that may have devices for `node` (by name, or by a selector to evaluate)."""
        for found in (self._node_slices.get(node["metadata"]["name"], {}), self._other_slices):
            yield from map(self._with_rules, found.values()) if self.taint_rules else found.values()

    def pools(self, node: Obj, features: Features) -> list[Pool]:
        """GatherPools for `node`, kept while the node object, the slices, the classes and the
        taint rules (the epoch) stay as they are: the pools a node offers do not change with the
        devices in use, so the pods after the first do not gather them again."""
        name = node["metadata"]["name"]
        kept = self._pools.get(name)
        if kept is not None and kept[0] is node and kept[1] == self.epoch and kept[2] is features:
            return kept[3]
        pools = gather_pools(self.slices_for_node(node), node, features, self.pool_slices)
        self._pools[name] = (node, self.epoch, features, pools)
        return pools

    def extended_resource_classes(self) -> dict[str, str]:
        """Extended resource name -> the DeviceClass that serves it (the DeviceClass mapping
        cache: rebuilt only after a class changed)."""
        if self._mapping is None:
            self._mapping = device_class_mapping(self._classes.values())
        return self._mapping

    def extended_claim(self, pod_uid: str) -> Obj | None:
        """A claim made for the pod's extended resources that exists in the API (annotated so,
        the pod its controller)."""
        return self._extended_claims.get(pod_uid)

    def _index_extended_claim(self, claim: Obj, deleted: bool) -> None:
        for owner in claim["metadata"].get("ownerReferences") or ():
            if owner.get("controller") and owner.get("kind") == "Pod":
                uid = owner.get("uid", "")
                if deleted:
                    if (self._extended_claims.get(uid) or {}).get("metadata", {}).get("uid") == \
                            claim["metadata"].get("uid"):
                        del self._extended_claims[uid]
                else:
                    self._extended_claims[uid] = claim

    def pool_slices(self, driver: str, pool: str) -> Iterator[Obj]:
        found = self._pool_slices.get((driver, pool), {}).values()
        yield from map(self._with_rules, found) if self.taint_rules else found

    def _with_rules(self, slice_: Obj) -> Obj:
        """ListWithDeviceTaintRules: the slice with the taints of the rules that select its devices."""
        if not self._rules:
            return slice_
        name = slice_["metadata"]["name"]
        kept = self._ruled.get(name)
        if kept is not None and kept[0] is slice_ and kept[1] == self.epoch:
            return kept[2]
        ruled = taintrules.with_rules(slice_, self._rules.values())
        self._ruled[name] = (slice_, self.epoch, ruled)
        return ruled

    def devices_in_use(self) -> int:
        return len(self._held) + len(self._in_flight_devices)

    def stamps(self, slots: np.ndarray, bound: int | None = None) -> np.ndarray:
        """The current stamps of `slots` (0 for a slot never stamped); `bound`, if given, is
        above every slot."""
        top = (int(slots.max()) + 1 if len(slots) else 0) if bound is None else bound
        if top > len(self.slot_stamp):
            self._bump_size(top - 1)
        return self.slot_stamp[slots]

    def _bump_size(self, slot: int) -> None:
        grown = np.zeros(max(2 * len(self.slot_stamp), slot + 1), dtype=np.int64)
        grown[:len(self.slot_stamp)] = self.slot_stamp
        self.slot_stamp = grown

    # ---- in-flight allocations -------------------------------------------------------------------

    def has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def signal_pending_allocation(self, uid: str, claim: Obj) -> None:
        self.remove_pending_allocation(uid)
        self._in_flight[uid] = claim
        self._in_flight_devices.update(allocated_devices(claim))
        self._share(allocated_shares(claim), 1)
        self._touch(allocated_devices(claim))

    def remove_pending_allocation(self, uid: str) -> bool:
        claim = self._in_flight.pop(uid, None)
        if claim is None:
            return False
        for dev in allocated_devices(claim):
            self._in_flight_devices[dev] -= 1
            if not self._in_flight_devices[dev]:
                del self._in_flight_devices[dev]
        self._share(allocated_shares(claim), -1)
        self._touch(allocated_devices(claim))
        return True


def _pool_key(obj: Obj) -> tuple[str, str]:
    spec = obj.get("spec") or {}
    return spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
