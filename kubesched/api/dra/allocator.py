"""The structured allocator: which devices a node can give a pod's unallocated claims.

It makes the decisions of k8s.io/dynamic-resource-allocation/structured ("stable" variant) as
v1.35 runs it: the pools whose slices reach the node (a newer generation replaces older slices;
a pool missing slices is incomplete, one naming a device twice invalid), then an exhaustive
depth-first search that takes claims in order, each claim's requests in order and each request's
devices one at a time, trying the pools' devices in slice order and keeping the first complete
solution. A device is a candidate when nobody holds it (admin access only needs it not taken by
the same claim), the class's selectors and then the request's select it, and the claim's
`matchAttribute` constraints still hold with it. `firstAvailable` tries each subrequest in turn;
`All` takes every selectable device of complete, valid pools or fails. A claim gets at most
32 devices (AllocationResultsMaxSize), and the search backs off early when that cannot hold.

Problems with the input itself (a missing class, a selector that fails to run) are errors that
abort the attempt; "no devices" is simply no allocation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesched.api.dra import capacity as cc
from kubesched.api.dra.cel import CELError, compile_selector, device_view
from kubesched.api.dra.taints import prevents_allocation
from kubesched.api.quantity import parse_quantity
from kubesched.api.selectors import NodeSelector, SelectorError

Obj = dict[str, Any]
DeviceID = tuple[str, str, str]  # driver, pool, device
MAX_RESULTS = 32  # resourceapi.AllocationResultsMaxSize
MATCH_FIELDS_NAME = "metadata.name"


class AllocationError(Exception):
    """Allocation cannot go on for any node (a broken claim, class or selector)."""


class NodeAllocationError(AllocationError):
    """Allocation failed on this node only (ErrFailedAllocationOnNode): invalid pools."""


@dataclass(frozen=True)
class Features:
    """The structured-parameters features the allocator honours (structured.Features)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = False
    device_taints: bool = False
    consumable_capacity: bool = False
    # DRADeviceBindingConditions with DRAResourceClaimDeviceStatus (DeviceBindingAndStatus): only
    # then may a device with binding conditions be allocated; upstream then runs its
    # "incubating" allocator, whose decisions match the stable one's here.
    device_binding: bool = False


@dataclass
class Device:
    """One device of a slice, parsed once per slice version."""

    name: str
    obj: Obj
    signature: str  # what selectors can see: driver, attributes, capacity, whether it is shared
    driver: str
    _view: Any = None

    def view(self) -> Any:
        if self._view is None:
            basic = self.obj
            self._view = device_view(self.driver, basic.get("attributes"), basic.get("capacity"),
                                     basic.get("allowMultipleAllocations") is True)
        return self._view


@dataclass
class Slice:
    obj: Obj
    driver: str
    pool: str
    generation: int
    count: int
    devices: list[Device]


_slices: dict[tuple[str, str], Slice] = {}


def parse_slice(obj: Obj) -> Slice:
    """A ResourceSlice's devices with their selector signatures; cached per object version."""
    meta = obj["metadata"]
    key = (meta.get("uid") or meta["name"], str(meta.get("resourceVersion", "")))
    found = _slices.get(key)
    if found is not None and found.obj is obj:
        return found
    spec = obj.get("spec") or {}
    driver = spec.get("driver", "")
    pool = spec.get("pool") or {}
    devices = []
    for d in spec.get("devices") or ():
        sig = json.dumps([driver, d.get("attributes"), d.get("capacity")], sort_keys=True, separators=(",", ":"))
        if d.get("allowMultipleAllocations") is True:
            sig += "+shared"
        devices.append(Device(d.get("name", ""), d, sig, driver))
    found = Slice(obj, driver, pool.get("name", ""), int(pool.get("generation") or 0),
                  int(pool.get("resourceSliceCount") or 0), devices)
    _slices[key] = found
    return found


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[Slice]  # those with devices for the node
    incomplete: bool = False
    invalid: bool = False
    # Partitionable devices: the pool's counter sets (name -> counter -> amount), and its slices
    # whose devices are for other nodes, which consume the same counters.
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    elsewhere: list[Slice] = field(default_factory=list)


def _generation(obj: Obj) -> int:
    return int(((obj.get("spec") or {}).get("pool") or {}).get("generation") or 0)


def _amounts(counters: Obj | None) -> dict[str, Fraction]:
    return {name: parse_quantity(str((c or {}).get("value", "0"))) for name, c in (counters or {}).items()}


def _counters_problem(pool: Pool, slices: list[Slice]) -> str | None:
    """Why a pool's counter sets or its devices' consumption of them do not add up."""
    for s in slices:
        for counter_set in (s.obj.get("spec") or {}).get("sharedCounters") or ():
            name = counter_set.get("name", "")
            if name in pool.counter_sets:
                return f"duplicate counter set name {name}"
            pool.counter_sets[name] = _amounts(counter_set.get("counters"))
    for s in [*pool.slices, *pool.elsewhere]:
        for d in s.devices:
            for use in d.obj.get("consumesCounters") or ():
                counter_set = pool.counter_sets.get(use.get("counterSet", ""))
                if counter_set is None:
                    return f"counter set {use.get('counterSet', '')} not found"
                for counter in use.get("counters") or {}:
                    if counter not in counter_set:
                        return f"counter {counter} not found in counter set {use.get('counterSet', '')}"
    return None


def _node_matches(node: Obj, node_name: str, all_nodes: bool, selector: Obj | None) -> bool:
    if node_name:
        return node["metadata"]["name"] == node_name
    if all_nodes:
        return True
    if selector is not None:
        try:
            compiled = NodeSelector.compile(selector)
        except SelectorError as e:
            raise AllocationError(f"failed to parse node selector: {e}") from None
        return compiled.matches(node["metadata"].get("labels") or {}, node["metadata"]["name"])
    return False


def _reaches(node: Obj, spec: Obj) -> bool:
    """Whether a slice has devices for `node` (a slice of counter sets is every node's)."""
    node_name, all_nodes, selector = spec.get("nodeName") or "", bool(spec.get("allNodes")), spec.get("nodeSelector")
    if node_name or all_nodes or selector is not None:
        return _node_matches(node, node_name, all_nodes, selector)
    if spec.get("perDeviceNodeSelection"):
        return any(_node_matches(node, d.get("nodeName") or "", bool(d.get("allNodes")), d.get("nodeSelector"))
                   for d in spec.get("devices") or ())
    return False  # some future way of naming nodes: not ours to guess


def gather_pools(slices: Iterable[Obj], node: Obj, features: Features,
                 pool_slices: Callable[[str, str], Iterable[Obj]]) -> list[Pool]:
    """GatherPools: the pools with devices on `node`, newest generation only; `pool_slices`
    lists every slice of a pool, those for other nodes too, to tell a pool being updated (and,
    with partitionable devices, to count what other nodes' devices consume of shared counters)."""
    pools: dict[tuple[str, str], list[Slice]] = {}
    for obj in slices:
        spec = obj.get("spec") or {}
        if not features.partitionable_devices and (spec.get("perDeviceNodeSelection") is not None
                                                   or spec.get("sharedCounters")):
            continue
        if not spec.get("sharedCounters") and not _reaches(node, spec):
            continue
        s = parse_slice(obj)
        key = (s.driver, s.pool)
        have = pools.get(key)
        if have is None or s.generation > have[0].generation:
            pools[key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    out = []
    for (driver, name), found in pools.items():
        generation = found[0].generation
        every: list[Obj] | None = None
        if len(found) != found[0].count:
            # Slices of this generation that do not reach the node still count towards completeness.
            every = list(pool_slices(driver, name))
            if any(_generation(o) > generation for o in every):
                continue  # the driver is replacing this generation
            every = [o for o in every if _generation(o) == generation]
            if len(every) != found[0].count:
                out.append(Pool(driver, name, [], incomplete=True))
                continue
        counters = [s for s in found if (s.obj.get("spec") or {}).get("sharedCounters")]
        pool = Pool(driver, name, [s for s in found if s not in counters])
        names: set[str] = set()
        for s in pool.slices:
            for d in s.devices:
                pool.invalid = pool.invalid or d.name in names
                names.add(d.name)
        if features.partitionable_devices and not pool.invalid:
            if every is not None:
                mine = {s.obj["metadata"]["name"] for s in found}
                pool.elsewhere = [parse_slice(o) for o in every if o["metadata"]["name"] not in mine]
            pool.invalid = _counters_problem(pool, counters) is not None
        out.append(pool)
    return out


_matches: dict[tuple[str, str], bool] = {}


def selector_matches(expression: str, device: Device) -> bool:
    """A selector's verdict on a device; devices that look the same to selectors share it."""
    key = (expression, device.signature)
    found = _matches.get(key)
    if found is None:
        found = _matches[key] = compile_selector(expression).matches(device.view())
    return found


@dataclass
class Request:
    """A request or a subrequest, seen the same way (requestAccessor)."""

    name: str
    spec: Obj  # the ExactDeviceRequest or DeviceSubRequest
    parent: str = ""  # the request holding this subrequest
    admin: bool = False

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name

    @property
    def class_name(self) -> str:
        return self.spec.get("deviceClassName") or ""

    @property
    def mode(self) -> str:
        return self.spec.get("allocationMode") or "ExactCount"

    @property
    def selectors(self) -> list[Obj]:
        return list(self.spec.get("selectors") or ())


@dataclass
class RequestData:
    request: Request
    device_class: Obj | None
    num_devices: int = 0
    all_devices: list[tuple[Device, Pool]] = field(default_factory=list)
    has_subrequests: bool = False


class MatchAttribute:
    """All devices of the named requests share one value of an attribute."""

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.value: Any = None
        self.count = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or bool(sub) and f"{request}/{sub}" in self.requests

    def _lookup(self, device: Device) -> Any:
        attrs = device.obj.get("attributes") or {}
        if self.attribute in attrs:
            return attrs[self.attribute]
        domain, _, ident = self.attribute.partition("/")
        if domain != device.driver:
            return None
        return attrs.get(ident)

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self._applies(request, sub):
            return True
        value = self._lookup(device)
        if value is None:
            return False
        if self.count == 0:
            self.value, self.count = value, 1
            return True
        for kind in ("string", "int", "bool", "version"):
            if kind in value:
                if kind not in self.value or self.value[kind] != value[kind]:
                    return False
                self.count += 1
                return True
        return False

    def remove(self, request: str, sub: str, device: Device) -> None:
        if self._applies(request, sub):
            self.count -= 1


class DistinctAttribute(MatchAttribute):
    """No two devices of the named requests share a value of an attribute (consumable
    capacity's `distinctAttribute`: two shares of one device are then never given to one claim).
    As upstream, the values are kept per request, so a request's later device replaces its
    earlier one's value."""

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: dict[str, Obj] = {}

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self._applies(request, sub):
            return True
        value = self._lookup(device)
        if value is None:
            return False
        for seen in self.values.values():
            kind = next((k for k in ("string", "int", "bool", "version") if k in value), None)
            if kind is None:
                return False
            if kind in seen and seen[kind] == value[kind]:
                return False
        self.values[request] = value
        return True

    def remove(self, request: str, sub: str, device: Device) -> None:
        if self._applies(request, sub):
            self.values.pop(request, None)


def _claim_key(claim: Obj) -> str:
    return f"{claim['metadata'].get('namespace', '')}/{claim['metadata']['name']}"


class Allocator:
    """One scheduling attempt's allocator: the devices already in use, the classes and the
    slices, fixed for the attempt (NewAllocator); `allocate` runs per node."""

    def __init__(self, features: Features, allocated: Container[DeviceID], get_class: Callable[[str], Obj | None],
                 slices_for_node: Callable[[Obj], Iterable[Obj]],
                 pool_slices: Callable[[str, str], Iterable[Obj]],
                 consumed: Mapping[DeviceID, cc.Amounts] | None = None, shared: Container[DeviceID] = (),
                 gather: Callable[[Obj], list[Pool]] | None = None) -> None:
        """`allocated` are the devices held whole; with consumable capacity, `consumed` is what the
        shares of each shared device hold together and `shared` the devices with any share
        (upstream's AllocatedState). `gather`, if given, answers gather_pools for a node (from a
        cache kept while the slices stay as they are)."""
        self.features = features
        self.allocated = allocated
        self.get_class = get_class
        self.slices_for_node = slices_for_node
        self.pool_slices = pool_slices
        self.consumed: Mapping[DeviceID, cc.Amounts] = consumed or {}
        self.shared = shared
        self.gather = gather

    def allocate(self, node: Obj, claims: Sequence[Obj]) -> list[Obj] | None:
        """One allocation result per claim, or None when the node cannot satisfy them all."""
        return _Run(self, node, claims).run()


class _Run:
    def __init__(self, alloc: Allocator, node: Obj, claims: Sequence[Obj]) -> None:
        self.a = alloc
        self.node = node
        self.claims = list(claims)
        self.pools: list[Pool] = []
        self.data: dict[tuple[int, int, int], RequestData] = {}
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[MatchAttribute]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[tuple[Request, DeviceID, Slice, Device]]] = [[] for _ in claims]
        self.selectable: dict[tuple[DeviceID, tuple[int, int, int]], bool] = {}
        self.pool_by_key: dict[tuple[str, str], Pool] = {}
        self.counters_left: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        self.counters_taken: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        # Consumable capacity: what this attempt gives out of each shared device, and its shares.
        self.allocating_capacity: dict[DeviceID, cc.Amounts] = {}
        self.allocating_shares: dict[DeviceID, int] = {}
        self.shares: dict[tuple[int, int], cc.Consumption] = {}  # (claim, result index) -> consumption
        self.consumptions: dict[tuple[int, str], cc.Consumption | None] = {}  # by request and device signature

    def run(self) -> list[Obj] | None:
        self.pools = self.a.gather(self.node) if self.a.gather is not None else \
            gather_pools(self.a.slices_for_node(self.node), self.node, self.a.features, self.a.pool_slices)
        self.pool_by_key = {(p.driver, p.name): p for p in self.pools}
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, req in enumerate(((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()):
                subs = req.get("firstAvailable") or []
                if not self.a.features.consumable_capacity and (
                        (req.get("exactly") or {}).get("capacity") is not None
                        or any(sub.get("capacity") is not None for sub in subs)):
                    raise AllocationError(f"claim {_claim_key(claim)}, request {req.get('name')}: has capacity "
                                          "requests, but the DRAConsumableCapacity feature is disabled")
                if subs:
                    if not self.a.features.prioritized_list:
                        raise AllocationError(f"claim {_claim_key(claim)}, request {req.get('name')}: has subrequests, "
                                              "but the DRAPrioritizedList feature is disabled")
                    least = None
                    for si, sub in enumerate(subs):
                        rd = self._validate(ci, Request(sub.get("name", ""), sub, req.get("name", "")), (ci, ri, si))
                        rd.has_subrequests = True
                        self.data[(ci, ri, si)] = rd
                        least = rd.num_devices if least is None else min(least, rd.num_devices)
                    min_devices += least or 0
                else:
                    exact = req.get("exactly") or {}
                    request = Request(req.get("name", ""), exact, admin=bool(exact.get("adminAccess")))
                    if exact.get("adminAccess") is not None and not self.a.features.admin_access:
                        raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}: admin access is "
                                              "requested, but the feature is disabled")
                    rd = self._validate(ci, request, (ci, ri, 0))
                    self.data[(ci, ri, 0)] = rd
                    min_devices += rd.num_devices
            if min_devices > MAX_RESULTS:
                raise AllocationError(f"claim {_claim_key(claim)}: number of requested devices {min_devices} "
                                      f"exceeds the claim limit of {MAX_RESULTS}")
            constraints = []
            for i, c in enumerate(((claim.get("spec") or {}).get("devices") or {}).get("constraints") or ()):
                if c.get("matchAttribute") is not None:
                    constraints.append(MatchAttribute(c.get("requests") or (), c["matchAttribute"]))
                elif c.get("distinctAttribute") is not None:
                    constraints.append(DistinctAttribute(c.get("requests") or (), c["distinctAttribute"]))
                else:
                    raise AllocationError(f"claim {_claim_key(claim)}, constraint #{i}: empty constraint "
                                          "(unsupported constraint type?)")
            self.constraints.append(constraints)
        try:
            done = self._one(0, 0, 0, 0, False)
        except _MaxExceeded:
            done = False
        if not done:
            if any(p.invalid for p in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _validate(self, ci: int, request: Request, key: tuple[int, int, int]) -> RequestData:
        claim = self.claims[ci]
        for i, sel in enumerate(request.selectors):
            if (sel or {}).get("cel") is None:
                raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}, selector #{i}: "
                                      "CEL expression empty (unsupported selector type?)")
        if not request.class_name:
            raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}: missing device class name "
                                  "(unsupported request type?)")
        cls = self.a.get_class(request.class_name)
        if cls is None:
            raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}: could not retrieve device "
                                  f'class {request.class_name}: deviceclass.resource.k8s.io "{request.class_name}" '
                                  "not found")
        rd = RequestData(request, cls)
        if request.mode == "ExactCount":
            rd.num_devices = int(request.spec.get("count") or 1)
        elif request.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}: asks for all devices, "
                                          f"but resource pool {pool.driver}/{pool.name} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}: asks for all devices, "
                                          f"but resource pool {pool.driver}/{pool.name} is currently invalid")
                for s in pool.slices:
                    for d in s.devices:
                        if self._selectable(key, rd, s, d) and (
                                not self.a.features.consumable_capacity
                                or self._consumption(rd, (pool.driver, pool.name, d.name), d) is not None):
                            rd.all_devices.append((d, pool))
            rd.num_devices = len(rd.all_devices)
        else:
            raise AllocationError(f"claim {_claim_key(claim)}, request {request.name}: unsupported count mode "
                                  f"{request.mode}")
        return rd

    def _selectable(self, key: tuple[int, int, int], rd: RequestData, s: Slice, d: Device) -> bool:
        cache_key = ((s.driver, s.pool, d.name), key)
        found = self.selectable.get(cache_key)
        if found is not None:
            return found
        if not self.a.features.device_binding and d.obj.get("bindingConditions"):
            self.selectable[cache_key] = False  # binding conditions need their feature
            return False
        class_selectors = (rd.device_class or {}).get("spec", {}).get("selectors") or ()
        where_class = f"class {(rd.device_class or {}).get('metadata', {}).get('name', '')}"
        where_claim = f"claim {_claim_key(self.claims[key[0]])}"
        ok = all(self._sel(((sel or {}).get("cel") or {}).get("expression", ""), d, f"{where}: selector #{i}", s)
                 for selectors, where in ((class_selectors, where_class), (rd.request.selectors, where_claim))
                 for i, sel in enumerate(selectors))
        if ok and (s.obj.get("spec") or {}).get("perDeviceNodeSelection"):
            ok = _node_matches(self.node, d.obj.get("nodeName") or "", bool(d.obj.get("allNodes")), d.obj.get("nodeSelector"))
        self.selectable[cache_key] = ok
        return ok

    @staticmethod
    def _sel(expr: str, d: Device, where: str, s: Slice) -> bool:
        try:
            compile_selector(expr)
        except CELError as e:
            raise AllocationError(f"{where}: CEL compile error: {e}") from None
        try:
            return selector_matches(expr, d)
        except CELError as e:
            raise AllocationError(f"{where}: CEL runtime error: {e}") from None

    def _in_use(self, dev: DeviceID) -> bool:
        return dev in self.a.allocated or bool(self.allocating.get(dev))

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        """allocateOne: True once every claim has its devices; _MaxExceeded backs off."""
        if ci >= len(self.claims):
            return True
        requests = ((self.claims[ci].get("spec") or {}).get("devices") or {}).get("requests") or ()
        if ri >= len(requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False)
            except _MaxExceeded:
                return False
        rd = self.data[(ci, ri, si)]
        if not in_sub and rd.has_subrequests:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.data:
                try:
                    ok = self._one(ci, ri, sub, di, True)
                except _MaxExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self.selected_sub[(ci, ri)] = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxExceeded
            return False
        request = rd.request
        if request.mode == "All" and not rd.all_devices:
            return False
        if di >= rd.num_devices:
            return self._one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + rd.num_devices - di > MAX_RESULTS:
            raise _MaxExceeded
        if request.mode == "All":
            d, pool = rd.all_devices[di]
            s = next(s for s in pool.slices if d in s.devices)
            undo = self._take(ci, rd, (pool.driver, pool.name, d.name), s, d, must=True)
            if undo is None:
                return False
            try:
                done = self._one(ci, ri, si, di + 1, in_sub)
            except _MaxExceeded:
                undo()
                raise
            if not done:
                undo()
            return done
        key = (ci, ri, si)
        capacity = self.a.features.consumable_capacity
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for d in s.devices:
                    dev = (pool.driver, pool.name, d.name)
                    if request.admin:
                        if ci in self.allocating.get(dev, ()):
                            continue
                    elif self._in_use(dev):
                        continue
                    if not self._selectable(key, rd, s, d):
                        continue
                    if capacity and self._consumption(rd, dev, d) is None:
                        continue
                    undo = self._take(ci, rd, dev, s, d, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._one(ci, ri, si, di + 1, in_sub)
                    except _MaxExceeded:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _take(self, ci: int, rd: RequestData, dev: DeviceID, s: Slice, d: Device, must: bool
              ) -> Callable[[], None] | None:
        """allocateDevice: mark the device as going to claim `ci` if it is free and the claim's
        constraints accept it; returns how to undo that, or None."""
        request = rd.request
        shared = self.a.features.consumable_capacity and d.obj.get("allowMultipleAllocations") is True
        if request.admin:
            if not shared and ci in self.allocating.get(dev, ()):
                return None
        elif self._in_use(dev):
            return None
        uses = d.obj.get("consumesCounters") or []
        if uses and not self.a.features.partitionable_devices:
            return None
        # A shared device's counters are drawn once, by the share that starts using it.
        counted = bool(uses) and not (shared and self._capacity_in_use(dev))
        if counted and not self._consume(dev, uses, 1):
            return None
        if self.a.features.device_taints and d.obj.get("taints") and \
                prevents_allocation(d.obj["taints"], request.spec.get("tolerations") or []):
            return None  # upstream keeps the counters just taken until this node's search ends
        base, sub = (request.parent, request.name) if request.parent else (request.name, "")
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, d):
                for prior in constraints[:i]:
                    prior.remove(base, sub, d)
                if counted:
                    self._consume(dev, uses, -1)
                if must:
                    raise AllocationError(f"claim {_claim_key(self.claims[ci])}, request {request.name}: cannot add "
                                          f"device {'/'.join(dev)} because a claim constraint would not be satisfied")
                return None
        consumed = self._consumption(rd, dev, d) if self.a.features.consumable_capacity else None
        if self.a.features.consumable_capacity and consumed is None:
            for c in constraints:
                c.remove(base, sub, d)
            if counted:
                self._consume(dev, uses, -1)
            return None
        if not shared:
            self.allocating.setdefault(dev, set()).add(ci)
        self.results[ci].append((request, dev, s, d))
        mark = len(self.results[ci]) - 1
        if shared:
            assert consumed is not None
            self.shares[(ci, mark)] = consumed
            cc.add(self.allocating_capacity.setdefault(dev, {}), {n: a for n, (a, _) in consumed.items()})
            self.allocating_shares[dev] = self.allocating_shares.get(dev, 0) + 1

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub, d)
            if counted:
                self._consume(dev, uses, -1)
            if shared:
                taken = self.shares.pop((ci, mark))
                cc.add(self.allocating_capacity[dev], {n: a for n, (a, _) in taken.items()}, -1)
                self.allocating_shares[dev] -= 1
                if not self.allocating_shares[dev]:
                    del self.allocating_shares[dev], self.allocating_capacity[dev]
            else:
                self.allocating[dev].discard(ci)
            del self.results[ci][mark:]
        return undo

    def _consumption(self, rd: RequestData, dev: DeviceID, d: Device) -> cc.Consumption | None:
        """CmpRequestOverCapacity: what the request would consume of the device, if that fits
        beside the allocated shares and this attempt's (any device: one that is not shared must
        hold the amounts asked for)."""
        capacities = cc.device_capacity(d.signature, d.obj.get("capacity"))
        if capacities is None:
            return None
        key = (id(rd), d.signature)
        if key in self.consumptions:
            consumed = self.consumptions[key]
        else:
            spec = rd.request.spec
            consumed = self.consumptions[key] = cc.consumption(capacities, cc.requested(spec),
                                                               cc.requested_text(spec))
        if consumed is None or not cc.fits(capacities, consumed, self.a.consumed.get(dev),
                                           self.allocating_capacity.get(dev)):
            return None
        return consumed

    def _capacity_in_use(self, dev: DeviceID) -> bool:
        """deviceCapacityInUse: allocated shares, or shares given out by this attempt, use it."""
        return dev in self.a.consumed or dev in self.allocating_shares

    def _available(self, key: tuple[str, str]) -> dict[str, dict[str, Fraction]]:
        """A pool's counters less what its allocated devices (on any node) consume."""
        found = self.counters_left.get(key)
        if found is None:
            pool = self.pool_by_key[key]
            found = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in [*pool.slices, *pool.elsewhere]:
                for d in s.devices:
                    dev = (pool.driver, pool.name, d.name)
                    if dev in self.a.allocated or dev in self.a.shared or dev in self.a.consumed:
                        for use in d.obj.get("consumesCounters") or ():
                            left = found.get(use.get("counterSet", ""), {})
                            for counter, amount in _amounts(use.get("counters")).items():
                                if counter in left:
                                    left[counter] -= amount
            self.counters_left[key] = found
        return found

    def _consume(self, dev: DeviceID, uses: list[Obj], sign: int) -> bool:
        """Take (sign 1) or give back (-1) a device's counters; taking fails, and changes
        nothing, when some counter would go below zero."""
        key = (dev[0], dev[1])
        taken = self.counters_taken.setdefault(key, {})
        for use in uses:
            counters = taken.setdefault(use.get("counterSet", ""), {})
            for counter, amount in _amounts(use.get("counters")).items():
                counters[counter] = counters.get(counter, Fraction(0)) + sign * amount
        if sign < 0:
            return True
        available = self._available(key)
        if any(taken.get(name, {}).get(counter, 0) > left for name, counters in available.items()
               for counter, left in counters.items()):
            self._consume(dev, uses, -1)
            return False
        return True

    def _result(self, ci: int, claim: Obj) -> Obj:
        """The AllocationResult: devices, configuration (the classes' first, then the claim's)
        and the node selector."""
        devices = []
        for i, (request, (driver, pool, name), _s, d) in enumerate(self.results[ci]):
            entry: Obj = {"request": request.full_name, "driver": driver, "pool": pool, "device": name}
            if request.admin:
                entry["adminAccess"] = True
            tolerations = request.spec.get("tolerations")
            if tolerations:
                entry["tolerations"] = tolerations
            share = self.shares.get((ci, i))
            if share is not None:
                entry["shareID"] = cc.share_id(claim, i)
                if share:
                    entry["consumedCapacity"] = {n: text for n, (_, text) in share.items()}
            if self.a.features.device_binding:
                for key in ("bindingConditions", "bindingFailureConditions"):
                    if d.obj.get(key):
                        entry[key] = list(d.obj[key])
            devices.append(entry)
        spec_devices = (claim.get("spec") or {}).get("devices") or {}
        requests = spec_devices.get("requests") or []
        config: list[Obj] = []
        by_class: dict[str, tuple[int, int]] = {}
        for ri in range(len(requests)):
            rd = self.data[(ci, ri, self.selected_sub.get((ci, ri), 0))]
            cls = rd.device_class
            if cls is None:
                continue
            name = cls["metadata"]["name"]
            if name in by_class:
                start, end = by_class[name]
                for entry in config[start:end]:
                    entry["requests"].append(rd.request.full_name)
                continue
            start = len(config)
            for c in (cls.get("spec") or {}).get("config") or ():
                config.append({"source": "FromClass", "requests": [rd.request.full_name],
                               **{k: v for k, v in c.items() if k != "requests"}})
            by_class[name] = (start, len(config))
        for c in spec_devices.get("config") or ():
            names = c.get("requests") or []
            body = {k: v for k, v in c.items() if k != "requests"}
            if not names:
                config.append({"source": "FromClaim", **body})
                continue
            for ri, req in enumerate(requests):
                if req.get("name") in names:
                    config.append({"source": "FromClaim", "requests": list(names), **body})
                    continue
                sub = self.selected_sub.get((ci, ri))
                if sub is not None and req.get("firstAvailable") and \
                        f"{req.get('name')}/{req['firstAvailable'][sub].get('name')}" in names:
                    config.append({"source": "FromClaim", "requests": list(names), **body})
        for entry in config:
            if len(entry.get("requests") or ()) == len(requests):
                entry.pop("requests", None)
        out: Obj = {"devices": {"results": devices}}
        if config:
            out["devices"]["config"] = config
        selector = self._node_selector(ci)
        if selector is not None:
            out["nodeSelector"] = selector
        return out

    def _node_selector(self, ci: int) -> Obj | None:
        fields: list[Obj] = []
        expressions: list[Obj] = []
        for _request, _dev, s, d in self.results[ci]:
            spec = s.obj.get("spec") or {}
            if spec.get("perDeviceNodeSelection"):
                node_name, selector = d.obj.get("nodeName"), d.obj.get("nodeSelector")
            else:
                node_name, selector = spec.get("nodeName"), spec.get("nodeSelector")
            if node_name or (self.a.features.device_binding and d.obj.get("bindsToNode")):
                # A node-local device, or one that binds to the node it is allocated for.
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": MATCH_FIELDS_NAME, "operator": "In", "values": [self.node["metadata"]["name"]]}]}]}
            terms = (selector or {}).get("nodeSelectorTerms") or []
            if len(terms) == 1:
                for src, dst in ((terms[0].get("matchFields") or [], fields),
                                 (terms[0].get("matchExpressions") or [], expressions)):
                    for req in src:
                        if not any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
                                   and set(r.get("values") or ()) == set(req.get("values") or ()) for r in dst):
                            dst.append(req)
            elif len(terms) > 1:
                raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if not fields and not expressions:
            return None
        term: Obj = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


class _MaxExceeded(Exception):
    """errAllocationResultMaxSizeExceeded: this branch would give a claim more than 32 devices."""


def allocated_devices(claim: Obj) -> list[DeviceID]:
    """The devices a claim's allocation holds; admin access holds none (allocateddevices.go)."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        return []
    return [(r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
            for r in (allocation.get("devices") or {}).get("results") or () if not r.get("adminAccess")]


def allocated_shares(claim: Obj) -> list[tuple[DeviceID, cc.Amounts]]:
    """The shares of devices a claim's allocation holds (results with a shareID) and what each
    consumes; admin access holds none."""
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        return []
    return [((r.get("driver", ""), r.get("pool", ""), r.get("device", "")), cc.result_consumption(r))
            for r in (allocation.get("devices") or {}).get("results") or ()
            if r.get("shareID") is not None and not r.get("adminAccess")]
