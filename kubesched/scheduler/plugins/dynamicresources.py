"""DynamicResources: pods that ask for devices through ResourceClaims (resource.k8s.io/v1).

As v1.35's plugin does: PreEnqueue holds a pod back until every claim it names exists (a claim
from a template exists once the resource-claim controller has made it and written its name in
the pod's status). PreFilter reads the claims: an allocated one restricts the pod to the nodes its
allocation's node selector admits, an unallocated one is handed to the structured allocator,
which Filter runs per node ("cannot allocate all claims" when the node's devices cannot satisfy
them). Every rejection of this plugin is UnschedulableAndUnresolvable, so preemption never tries
to free devices for a pod. Reserve marks the chosen devices in flight, so the next pods see them
taken; PreBind writes each claim's `status.allocation` (with the delete-protection finalizer) and
adds the pod to `status.reservedFor`. PostFilter deallocates an allocated claim that kept the pod
off every node when nobody else uses it.

A pod without claims meets only PreFilter (which records that there is nothing to do, and skips
the rest of the cycle) and PostFilter, whose "no new claims to deallocate" comes before
DefaultPreemption's part of every FailedScheduling message. When a PreFilter plugin ahead of it
rejected the pod its PreFilter never ran, so its PostFilter finds no state and fails with the
cycle state's "not found", which ends the PostFilter phase (no preemption is tried).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.dra import binding
from kubesched.api.dra.allocator import AllocationError, Allocator, Features, NodeAllocationError
from kubesched.api.dra.capacity import stamp_share_ids
from kubesched.api.dra.claims import (
    FINALIZER,
    ClaimNameError,
    allocation,
    can_be_reserved,
    claim_key,
    claim_name,
    is_for_pod,
    is_reserved_for,
    pod_claims,
    reserved_for,
)
from kubesched.api.dra.diagnosis import diagnose
from kubesched.api.duration import DurationError, go_duration, parse_duration
from kubesched.api.jsonbytes import canonical
from kubesched.api.objects import Obj, deep_copy
from kubesched.api.selectors import NodeSelector, SelectorError
from kubesched.apiserver.errors import APIError
from kubesched.scheduler import draextended
from kubesched.scheduler.draextended import ExtendedClaim
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    ConfigError,
    CycleState,
    FilterPlugin,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    default_normalize,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

if TYPE_CHECKING:
    from kubesched.scheduler.cache import NodeTable

NAME = "DynamicResources"
STATE_KEY = "DynamicResources"
NOT_FOUND = "not found"  # framework.ErrNotFound, reading a key PreFilter never wrote
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
FIRST_AVAILABLE_MAX = 8  # FirstAvailableDeviceRequestMaxSize
TABLES_KEPT = 1_000  # kinds of request whose outcomes are kept per node


class ClaimsError(Exception):
    """A claim of the pod is missing, being deleted or not the pod's (foreachPodResourceClaim)."""


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), NAME)


_CANNOT = _unresolvable(CANNOT_ALLOCATE)


def _error(message: str) -> Status:
    return Status(Code.ERROR, (message,), NAME)


class Outcomes:
    """One kind of request's allocation outcomes, per node slot, with the stamp each was computed
    at: code 0 an allocation (in `results`), 1 "cannot allocate all claims", 2 and up a status
    of `statuses`. A slot whose stamp moved is computed again."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.stamp = np.full(64, -1, dtype=np.int64)
        self.code = np.zeros(64, dtype=np.int64)
        self.results: dict[int, list[Obj]] = {}
        self.statuses: list[Status] = []

    def ensure(self, slot: int) -> None:
        if slot >= len(self.stamp):
            size = max(2 * len(self.stamp), slot + 1)
            self.stamp = np.concatenate([self.stamp, np.full(size - len(self.stamp), -1, dtype=np.int64)])
            self.code = np.concatenate([self.code, np.zeros(size - len(self.code), dtype=np.int64)])

    def get(self, slot: int) -> list[Obj] | Status:
        code = int(self.code[slot])
        if code == 0:
            return self.results[slot]
        return _CANNOT if code == 1 else self.statuses[code - 2]

    def store(self, slot: int, stamp: int, outcome: list[Obj] | Status) -> None:
        self.stamp[slot] = stamp
        if isinstance(outcome, list):
            self.code[slot] = 0
            self.results[slot] = outcome
        elif outcome is _CANNOT:
            self.code[slot] = 1
        else:
            self.statuses.append(outcome)
            self.code[slot] = 1 + len(self.statuses)


@dataclass
class DRAState:
    """What PreFilter found for the pod's claims, shared by the attempt's clones as upstream's is."""

    claims: list[Obj] = field(default_factory=list)  # one per pod claim that has a claim
    # The allocated claims whose allocation admits only some nodes: (index, its node selector).
    restricted: list[tuple[int, NodeSelector]] = field(default_factory=list)
    # Allocated claims whose binding failed or timed out (binding conditions): no node will do.
    given_up: list[int] = field(default_factory=list)
    allocator: Allocator | None = None
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[int, Obj] = field(default_factory=dict)  # set by Reserve, written by PreBind
    fingerprint: bytes = b""  # of the claims to allocate: pods asking alike share allocation outcomes
    pending: list[int] = field(default_factory=list)  # the claims to allocate, as PreFilter found them
    outcomes: Outcomes | None = None  # the allocation outcomes of this pod's kind of request
    extended: ExtendedClaim | None = None  # the claim for extended resources backed by DRA

    def allocations_for(self, node: NodeInfo) -> list[Obj] | None:
        """The allocation Filter found for `node` (None: it found none)."""
        if self.extended is not None:
            found = self.extended.per_node.get(node.name)
            return found[0] if found is not None else None
        if self.outcomes is None or node.slot >= len(self.outcomes.code) or self.outcomes.code[node.slot]:
            return None
        return self.outcomes.results.get(node.slot)

    def clone(self) -> DRAState:
        return self

    def first_available(self) -> bool:
        """Whether a claim to allocate has a prioritized list, the only thing Score tells apart."""
        return any(r.get("firstAvailable") for i in self.pending
                   for r in ((self.claims[i].get("spec") or {}).get("devices") or {}).get("requests") or ())



def _binding_timeout(args: dict[str, Any], gates: Any) -> float:
    """ValidateDynamicResourcesArgs, whose refusals name the gates a field needs, and the binding
    timeout the args set (DynamicResourcesBindingTimeoutDefault when they do not). A simulated
    Filter takes no time, so `filterTimeout` is checked but never reached."""
    base = f"pluginConfig[{NAME}].args"
    seconds = {}
    for key in ("filterTimeout", "bindingTimeout"):
        if args.get(key) is not None:
            try:
                seconds[key] = parse_duration(args[key])
            except DurationError as e:
                raise ConfigError(f"{base}.{key}", str(e)) from None
    if "filterTimeout" in seconds:
        if not gates.enabled("DRASchedulerFilterTimeout"):
            raise ConfigError(f"{base}.filterTimeout", "Forbidden: DRASchedulingFilterTimeout feature gate is disabled")
        if seconds["filterTimeout"] < 0:
            raise ConfigError(f"{base}.filterTimeout",
                              f"Invalid value: {go_duration(seconds['filterTimeout'])}: must be zero or positive")
    if "bindingTimeout" in seconds:
        if not (gates.enabled("DRADeviceBindingConditions") and gates.enabled("DRAResourceClaimDeviceStatus")):
            raise ConfigError(f"{base}.bindingTimeout", "Forbidden: DRADeviceBindingConditions or "
                                                        "DRAResourceClaimDeviceStatus feature gate is disabled")
        if seconds["bindingTimeout"] < 1:
            raise ConfigError(f"{base}.bindingTimeout",
                              f"Invalid value: {go_duration(seconds['bindingTimeout'])}: must be at least 1 second")
    return seconds.get("bindingTimeout", binding.BINDING_TIMEOUT)

class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, PreScorePlugin,
                       ScorePlugin, ReservePlugin, PreBindPlugin):
    name = NAME
    pods_via_requests = True  # the verdict depends on the claims and the node, never on its pods
    _nothing = Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",), NAME)
    _no_state = Status(Code.ERROR, (NOT_FOUND,), NAME)

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        gates = handle.features
        self.features = Features(admin_access=gates.enabled("DRAAdminAccess"),
                                 prioritized_list=gates.enabled("DRAPrioritizedList"),
                                 partitionable_devices=gates.enabled("DRAPartitionableDevices"),
                                 consumable_capacity=gates.enabled("DRAConsumableCapacity"),
                                 device_taints=gates.enabled("DRADeviceTaints"),
                                 device_binding=gates.enabled("DRADeviceBindingConditions")
                                 and gates.enabled("DRAResourceClaimDeviceStatus"))
        self.extended_resources = gates.enabled("DRAExtendedResource")
        self._tables: dict[bytes, Outcomes] = {}  # allocation outcomes, by the requests' fingerprint
        self.binding_timeout = _binding_timeout(self.args or {}, gates)

    # ---- the pod's claims ----------------------------------------------------------------------

    def _pod_claims(self, pod: Obj) -> list[tuple[str, Obj]]:
        """Each pod claim's name and claim; ClaimsError says why the pod cannot go on."""
        out = []
        namespace = pod["metadata"].get("namespace", "default")
        for pod_claim in pod_claims(pod):
            try:
                name, check_owner = claim_name(pod, pod_claim)
            except ClaimNameError as e:
                raise ClaimsError(str(e)) from None
            if name is None:
                continue
            claim = self.handle.get_object("ResourceClaim", namespace, name)
            if claim is None:
                raise ClaimsError(f'could not find ResourceClaim "{namespace}/{name}"')
            if claim["metadata"].get("deletionTimestamp"):
                raise ClaimsError(f'resourceclaim "{name}" is being deleted')
            if check_owner:
                problem = is_for_pod(pod, claim)
                if problem is not None:
                    raise ClaimsError(problem)
            out.append((pod_claim.get("name", ""), claim))
        return out

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod_claims(pod.obj):
            return SUCCESS
        try:
            self._pod_claims(pod.obj)
        except ClaimsError as e:
            return _unresolvable(str(e))
        return SUCCESS

    # ---- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        extended = self._extended(pod) if self.extended_resources and pod.requests else None
        if not pod_claims(pod.obj) and extended is None:
            state[STATE_KEY] = DRAState()
            return None, SKIP
        s = DRAState()
        state[STATE_KEY] = s
        try:
            found = self._pod_claims(pod.obj)
        except ClaimsError as e:
            return None, _unresolvable(str(e))
        if not found and extended is None:
            return None, SKIP
        dra = self.handle.dra
        claims: list[Obj] = []
        restricted: list[tuple[int, NodeSelector]] = []
        for _, claim in found:
            if allocation(claim) is not None:
                if not can_be_reserved(claim) and not is_reserved_for(pod.uid, claim):
                    return None, _unresolvable("resourceclaim in use")
                node_selector = allocation(claim).get("nodeSelector")  # type: ignore[union-attr]
                if node_selector is not None:
                    try:
                        restricted.append((len(claims), NodeSelector.compile(node_selector)))
                    except SelectorError as e:
                        return None, _error(str(e))
                if self.features.device_binding and self._binding_given_up(claim):
                    s.given_up.append(len(claims))
            else:
                if dra.has_pending_allocation(claim["metadata"].get("uid", "")):
                    return None, _unresolvable(f"resource claim {claim_key(claim)} is in the process of being allocated")
                problem = self._check_requests(claim)
                if problem is not None:
                    return None, problem
            claims.append(claim)
        if extended is not None:
            claim = extended.claim
            if allocation(claim) is not None:
                if not can_be_reserved(claim) and not is_reserved_for(pod.uid, claim):
                    return None, _unresolvable("resourceclaim in use")
            elif dra.has_pending_allocation(extended.uid):
                return None, _unresolvable(f"resource claim {claim_key(claim)} is in the process of being allocated")
        # Only now: PostFilter reads a failed PreFilter as no claims.
        s.claims, s.restricted, s.extended = claims, restricted, extended
        s.pending = [i for i, c in enumerate(claims) if allocation(c) is None]
        if s.pending or (extended is not None and allocation(extended.claim) is None):
            gather = functools.partial(dra.pools, features=self.features)
            if self.features.consumable_capacity:  # GatherAllocatedState: shares apart from whole devices
                s.allocator = Allocator(self.features, dra.whole, self._get_class, dra.slices_for_node,
                                        dra.pool_slices, dra.consumed, dra.shares, gather=gather)
            else:
                s.allocator = Allocator(self.features, dra.allocated, self._get_class, dra.slices_for_node,
                                        dra.pool_slices, gather=gather)
        if s.pending and extended is None:
            s.fingerprint = canonical([(claims[i].get("spec") or {}) for i in s.pending])
            s.outcomes = self._table(s.fingerprint)
        return None, SUCCESS

    def _binding_given_up(self, claim: Obj) -> bool:
        """Filter's check of an allocated claim with binding conditions: a failure condition is
        True, or the conditions did not all turn True within the binding timeout."""
        try:
            ready = binding.ready_for_binding(claim)
        except binding.BindingFailed:
            return True
        api = self.handle.api
        return not ready and api is not None and binding.timed_out(claim, self.handle.now(), self.binding_timeout,
                                                                   api.seconds)

    def _extended(self, pod: PodInfo) -> ExtendedClaim | None:
        dra = self.handle.dra
        return draextended.find(pod, dra.extended_resource_classes(), dra.extended_claim(pod.uid))

    def _get_class(self, name: str) -> Obj | None:
        return self.handle.get_object("DeviceClass", "", name)

    def _check_requests(self, claim: Obj) -> Status | None:
        """Every request names a class that exists (else the pod waits for one to appear)."""
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            name = request.get("name", "")
            if request.get("exactly") is not None:
                checks = [(request["exactly"].get("deviceClassName") or "", name)]
            elif request.get("firstAvailable"):
                if not self.features.prioritized_list:
                    return _unresolvable(f"resource claim {claim_key(claim)}, request {name}: has subrequests, "
                                         "but the DRAPrioritizedList feature is disabled")
                checks = [(sub.get("deviceClassName") or "", f"{name}/{sub.get('name', '')}")
                          for sub in request["firstAvailable"]]
            else:
                return _unresolvable(f"resource claim {claim_key(claim)}, request {name}: unknown request type")
            for class_name, request_name in checks:
                if not class_name:
                    return _error(f"request {request_name}: unsupported request type")
                if self._get_class(class_name) is None:
                    return _unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def _table(self, fingerprint: bytes) -> Outcomes:
        """The outcomes of one kind of request: each node's allocation is remembered while its
        devices, the slices and the classes stay as they are (a node's stamp and the DRA
        manager's epoch), so the next pod asking the same searches only the nodes that changed."""
        epoch = self.handle.dra.epoch
        outcomes = self._tables.get(fingerprint)
        if outcomes is None or outcomes.epoch != epoch:
            if len(self._tables) >= TABLES_KEPT:
                self._tables.clear()
            outcomes = self._tables[fingerprint] = Outcomes(epoch)
        return outcomes

    @staticmethod
    def _search(s: DRAState, node: NodeInfo) -> list[Obj] | Status:
        assert s.allocator is not None
        try:
            allocations = s.allocator.allocate(node.obj, [s.claims[i] for i in s.pending])
        except NodeAllocationError as e:
            return _unresolvable(str(e))  # other nodes may still do
        except AllocationError as e:
            return _error(str(e))
        return _CANNOT if allocations is None else allocations

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        s: DRAState = state[STATE_KEY]
        if s.extended is not None:
            return self._filter_extended(s, pod, node)
        if s.outcomes is not None:
            stamp = int(self.handle.dra.stamps(np.array([node.slot]))[0])
            s.outcomes.ensure(node.slot)
            if s.outcomes.stamp[node.slot] != stamp:
                s.outcomes.store(node.slot, stamp, self._search(s, node))
            outcome = s.outcomes.get(node.slot)
            if isinstance(outcome, Status):
                return outcome
        unavailable = [i for i, selector in s.restricted if not selector.matches(node.labels, node.name)]
        unavailable += s.given_up
        if unavailable:
            s.unavailable.update(unavailable)
            return _unresolvable(NOT_AVAILABLE)
        return SUCCESS

    def _filter_extended(self, s: DRAState, pod: PodInfo, node: NodeInfo) -> Status:
        """Filter for a pod with extended resources backed by DRA: the node's own variant of the
        extended-resource claim is allocated with the pod's claims (never remembered across pods)."""
        x = s.extended
        assert x is not None
        claim, reason = draextended.node_claim(x, pod, node)
        if reason is not None:
            return _unresolvable(reason)
        if claim is None and not s.claims:
            return SUCCESS  # the node's device plugin serves the pod's extended resources
        unavailable = [i for i, selector in s.restricted if not selector.matches(node.labels, node.name)]
        if s.allocator is not None and (s.pending or claim is not None):
            to_allocate = [s.claims[i] for i in s.pending] + ([claim] if claim is not None else [])
            try:
                found = s.allocator.allocate(node.obj, to_allocate)
            except NodeAllocationError as e:
                return _unresolvable(str(e))
            except AllocationError as e:
                return _error(str(e))
            if found is None:
                return _CANNOT
            if not unavailable:
                own = found[len(s.pending):]
                x.per_node[node.name] = (found[:len(s.pending)], claim, own[0] if own else None)
        if unavailable:
            s.unavailable.update(unavailable)
            return _unresolvable(NOT_AVAILABLE)
        return SUCCESS

    def filter_many(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], positions: np.ndarray,
                    slots: np.ndarray, table: NodeTable) -> np.ndarray | None:
        """Filter for many nodes at once when no allocated claim restricts the nodes: each node's
        remembered outcome, the stale ones searched again."""
        s: DRAState = state[STATE_KEY]
        outcomes = s.outcomes
        if outcomes is None or s.restricted or s.given_up:
            return None
        if table.used:  # every slot is below it: no need to look for the largest
            outcomes.ensure(table.used - 1)
        current = self.handle.dra.stamps(slots, table.used)
        for k in np.flatnonzero(outcomes.stamp[slots] != current).tolist():
            node = nodes[int(positions[k])]
            outcomes.store(node.slot, int(current[k]), self._search(s, node))
        return outcomes.code[slots]

    def explain(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> str | None:
        s: DRAState | None = state.get(STATE_KEY)
        if s is None or s.allocator is None or status.reasons != (CANNOT_ALLOCATE,):
            return None
        return diagnose(s.allocator, node.obj, [s.claims[i] for i in s.pending])

    def decode(self, state: CycleState, code: int) -> Status:
        if code == 1:
            return _CANNOT
        outcomes = state[STATE_KEY].outcomes
        return outcomes.statuses[code - 2]

    # ---- PostFilter ------------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        if STATE_KEY not in state:
            return None, self._no_state
        s: DRAState = state[STATE_KEY]
        if not s.claims and s.extended is None:
            return None, self._nothing
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            users = reserved_for(claim)
            if not users or (len(users) == 1 and users[0].get("uid") == pod.uid):
                meta = claim["metadata"]
                api = self.handle.api
                assert api is not None
                try:
                    api.update_status("ResourceClaim", meta.get("namespace", ""), meta["name"], _deallocate)
                except APIError as e:
                    return None, _error(e.message)
                return None, Status(Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",), NAME)
        if s.extended is not None and not s.extended.in_memory:
            # An earlier attempt's extended-resource claim: deleted so the next attempt starts anew.
            api = self.handle.api
            assert api is not None
            try:
                draextended.delete(api, s.extended.claim)
            except APIError as e:
                return None, _error(e.message)
            return None, Status(Code.UNSCHEDULABLE, ("deletion of ResourceClaim completed",), NAME)
        return None, Status(Code.UNSCHEDULABLE, ("still not schedulable",), NAME)

    # ---- PreScore / Score ------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """Nothing to score without a prioritized list among the claims to allocate: every node
        would score 0 (upstream scores them all anyway; skipping changes no decision)."""
        s: DRAState | None = state.get(STATE_KEY)
        return SUCCESS if s is not None and s.allocator is not None and s.first_available() else SKIP

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Prioritized lists: a node that can give a claim an earlier `firstAvailable` choice
        scores higher, 8 - its position for each request (FirstAvailableDeviceRequestMaxSize)."""
        s: DRAState = state[STATE_KEY]
        results = s.allocations_for(node)
        if results is None:
            return 0
        total = 0
        for index, result in zip(s.pending, results, strict=True):
            chosen = {r.get("request") for r in (result.get("devices") or {}).get("results") or ()}
            for request in ((s.claims[index].get("spec") or {}).get("devices") or {}).get("requests") or ():
                for position, sub in enumerate(request.get("firstAvailable") or ()):
                    if f"{request.get('name')}/{sub.get('name')}" in chosen:
                        total += FIRST_AVAILABLE_MAX - position
        return total

    def normalize(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=False)

    # ---- Reserve / Unreserve -------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s: DRAState | None = state.get(STATE_KEY)
        if s is None:
            return _error(NOT_FOUND)
        pending = s.pending
        if s.extended is not None and s.allocator is not None:
            found = s.extended.per_node.get(node_name)
            if found is not None and found[1] is not None:
                x = s.extended
                x.node_claim, x.allocation = found[1], deep_copy(found[2])
                claim = deep_copy(found[1])
                claim["metadata"].setdefault("finalizers", []).append(FINALIZER)
                claim.setdefault("status", {})["allocation"] = x.allocation
                self.handle.dra.signal_pending_allocation(x.uid, claim)
        if not pending or s.allocator is None:
            return SUCCESS
        node = self.handle.cache.nodes.get(node_name)
        allocations = s.allocations_for(node) if node is not None else None
        if allocations is None:
            return _error("claim allocation not found for node")
        if len(allocations) != len(pending):
            return _error(f"internal error, have {len(allocations)} allocations, {len(pending)} claims to allocate")
        for index, result in zip(pending, allocations, strict=True):
            stored = s.claims[index]
            finalizers = stored["metadata"].get("finalizers") or []
            result = deep_copy(result)  # the remembered outcome stays as the allocator left it
            if self.features.consumable_capacity:
                stamp_share_ids(stored, result)
            # The claim as it will be once bound; only the parts that change are copied.
            claim = {**stored, "metadata": {**stored["metadata"], "finalizers": (
                finalizers if FINALIZER in finalizers else [*finalizers, FINALIZER])},
                "status": {**(stored.get("status") or {}), "allocation": result}}
            s.allocations[index] = result
            self.handle.dra.signal_pending_allocation(claim["metadata"].get("uid", ""), claim)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: DRAState | None = state.get(STATE_KEY)
        if s is None:
            return
        api = self.handle.api
        for claim in s.claims:
            self.handle.dra.remove_pending_allocation(claim["metadata"].get("uid", ""))
            if allocation(claim) is not None and is_reserved_for(pod.uid, claim) and api is not None:
                meta = claim["metadata"]
                with contextlib.suppress(APIError):  # retried when the pod is scheduled again, as upstream leaves it
                    api.update_status("ResourceClaim", meta.get("namespace", ""), meta["name"],
                                      lambda status: _unreserve(status, pod.uid))
        x = s.extended
        if x is not None:
            self.handle.dra.remove_pending_allocation(x.uid)
            if not x.in_memory and api is not None:
                with contextlib.suppress(APIError):  # logged and left to the next attempt upstream
                    draextended.delete(api, x.claim)

    # ---- PreBind ---------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s: DRAState | None = state.get(STATE_KEY)
        if s is None:
            return _error(NOT_FOUND)
        return SKIP if not s.claims and s.extended is None else SUCCESS

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s: DRAState | None = state.get(STATE_KEY)
        if s is None:
            return _error(NOT_FOUND)
        for index, claim in enumerate(s.claims):
            if is_reserved_for(pod.uid, claim):
                continue
            try:
                s.claims[index] = self._bind_claim(s, index, pod)
            except (APIError, _BindError) as e:
                return _error(e.message if isinstance(e, APIError) else str(e))
        x = s.extended
        if x is not None and not is_reserved_for(pod.uid, x.claim):
            api = self.handle.api
            assert api is not None
            try:
                draextended.bind(api, x, pod)
            except APIError as e:
                return _error(e.message)
            except RuntimeError as e:
                return _error(str(e))
            finally:
                if x.allocation is not None:
                    self.handle.dra.remove_pending_allocation(x.uid)
        if not self.features.device_binding or not binding.has_binding_conditions(s.claims):
            return SUCCESS
        api = self.handle.api
        assert api is not None
        api.record_event(pod.obj, "Normal", "BindingConditionsPending",
                         f"waiting for binding conditions for device on node {node_name}", source=pod.scheduler_name)
        self._wait_for_binding(s, pod, self.handle.now(), self.handle.now() + self.binding_timeout)
        return Status(Code.WAIT, (), NAME)

    def _wait_for_binding(self, s: DRAState, pod: PodInfo, due: float, deadline: float) -> None:
        """wait.PollUntilContextTimeout with an immediate first check: the claims are read at once
        and every 5s before the deadline; then "device binding timeout"."""
        def check() -> None:
            if self.handle.now() >= deadline:
                self.handle.resume_pre_bind(pod.uid, _error("device binding timeout"))
                return
            try:
                ready = self._pod_ready_for_binding(s)
            except binding.BindingFailed as e:
                self.handle.resume_pre_bind(pod.uid, _error(str(e)))
                return
            if ready:
                self.handle.resume_pre_bind(pod.uid, SUCCESS)
            else:
                self._wait_for_binding(s, pod, due + binding.POLL_INTERVAL, deadline)

        self.handle.call_later(max(0.0, min(due, deadline) - self.handle.now()), check)

    def _pod_ready_for_binding(self, s: DRAState) -> bool:
        """isPodReadyForBinding, on the claims as they are now."""
        api = self.handle.api
        assert api is not None
        for index, claim in enumerate(s.claims):
            meta = claim["metadata"]
            current = self.handle.get_object("ResourceClaim", meta.get("namespace", ""), meta["name"])
            if current is None:
                raise binding.BindingFailed(f'resourceclaim.resource.k8s.io "{meta["name"]}" not found')
            s.claims[index] = current
            if not binding.ready_for_binding(current):
                if binding.timed_out(current, self.handle.now(), self.binding_timeout, api.seconds):
                    raise binding.BindingFailed(f"claim {meta['name']} binding timeout")
                return False
        return True

    def _bind_claim(self, s: DRAState, index: int, pod: PodInfo) -> Obj:
        """Writes the allocation Reserve chose (if any) and the pod's reservation."""
        api = self.handle.api
        assert api is not None
        claim = s.claims[index]
        meta = claim["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        result = s.allocations.get(index)
        try:
            latest = api.get("ResourceClaim", namespace, name)
            if latest["metadata"].get("deletionTimestamp"):
                raise _BindError(f"claim {claim_key(claim)} got deleted in the meantime")
            if result is not None:
                if allocation(latest) is not None:
                    raise _BindError(f"claim {claim_key(claim)} got allocated elsewhere in the meantime")
                if FINALIZER not in (latest["metadata"].get("finalizers") or ()):
                    stored = latest["metadata"]
                    latest = api.update({**latest, "metadata": {
                        **stored, "finalizers": [*(stored.get("finalizers") or ()), FINALIZER]}})
            reference = {"resource": "pods", "name": pod.name, "uid": pod.uid}

            def write(status: Obj) -> None:
                if result is not None:
                    status["allocation"] = result
                status["reservedFor"] = [*(status.get("reservedFor") or ()), reference]
                if self.features.device_binding and status.get("allocation") \
                        and not status["allocation"].get("allocationTimestamp"):
                    status["allocation"] = {**status["allocation"], "allocationTimestamp": api.timestamp()}
            return api.update_status("ResourceClaim", namespace, name, write)
        finally:
            if result is not None:
                self.handle.dra.remove_pending_allocation(meta.get("uid", ""))

    # ---- queueing --------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeAllocatable),
                ClusterEvent("ResourceClaim", ActionType.Add | ActionType.Update, self._claim_hint),
                ClusterEvent("Pod", ActionType.UpdatePodGeneratedResourceClaim, self._pod_hint),
                ClusterEvent("DeviceClass", ActionType.Add | ActionType.Update),
                ClusterEvent("ResourceSlice", ActionType.Add | ActionType.Update)]

    def _claim_hint(self, pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        """isSchedulableAfterClaimChange: a deallocation frees devices for anyone; otherwise only
        a claim of the pod that appeared or whose status changed matters."""
        try:
            mine = self._pod_claims(pod.obj)
        except ClaimsError:
            return False
        if old is not None and allocation(old) is not None and allocation(new) is None:
            return True
        uid = new["metadata"].get("uid")
        if not any(c["metadata"].get("uid") == uid for _, c in mine):
            return False
        return old is None or (old.get("status") or {}) != (new.get("status") or {})

    def _pod_hint(self, pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        if new["metadata"].get("uid") != pod.uid:
            return False
        try:
            self._pod_claims(new)
        except ClaimsError:
            return False
        return True


class _BindError(Exception):
    pass


def _deallocate(status: Obj) -> None:
    for key in ("reservedFor", "allocation", "devices"):
        status.pop(key, None)


def _unreserve(status: Obj, uid: str) -> bool:
    users = status.get("reservedFor") or []
    kept = [r for r in users if r.get("uid") != uid]
    if len(kept) == len(users):
        return False
    if kept:
        status["reservedFor"] = kept
    else:
        status.pop("reservedFor", None)
    return True
