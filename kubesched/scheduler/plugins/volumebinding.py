"""VolumeBinding: claims decide where a pod may go, and the pod's node decides how claims bind.

PreFilter sorts the pod's claims into bound ones, unbound ones waiting for their first consumer
(WaitForFirstConsumer), and unbound Immediate ones, which the PV controller should have bound
already: the pod waits for them, UnschedulableAndUnresolvable. Filter then asks of each node that
every bound claim's volume admits it (its node affinity) and that every waiting claim gets either
an available volume there (the smallest that fits, as the PV controller would pick) or a volume
its class can provision there (allowedTopologies); a claim the scheduler already sent to a node
for provisioning only fits that node. Reserve assumes the chosen bindings in an in-memory cache so
the next pods do not pick the same volumes; PreBind writes them (a volume's claimRef, a claim's
`volume.kubernetes.io/selected-node`) and then waits, checking once a second, until the PV
controller and the provisioner have bound every claim, giving up after `bindTimeoutSeconds`.

Scoring by storage capacity is behind the StorageCapacityScoring gate, off in v1.35: PreScore
always skips, and the `shape` argument is refused as upstream refuses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.objects import Obj, deep_copy
from kubesched.api.storage import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    bind_volume_to_claim,
    claim_class,
    find_matching_volume,
    is_delay_binding,
    is_fully_bound,
    node_affinity_matches,
    pod_claims,
    storage_request,
    topology_matches,
    volume_class,
)
from kubesched.apiserver.errors import APIError
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    ConfigError,
    CycleState,
    FilterPlugin,
    Handle,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

NAME = "VolumeBinding"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"  # ErrReasonNodeConflict since v1.33
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT = 600
NO_STATE = Status(Code.ERROR, (f'reading "{NAME}" from cycleState: not found',), NAME)  # PreFilter did not run
POLL_INTERVAL = 1.0  # BindPodVolumes checks the claims once a second, the first time after a second


def _validate_args(args: dict[str, Any]) -> int:
    """ValidateVolumeBindingArgs with StorageCapacityScoring off; returns bindTimeoutSeconds."""
    base = f"pluginConfig[{NAME}].args"
    timeout = args.get("bindTimeoutSeconds")
    timeout = DEFAULT_BIND_TIMEOUT if timeout is None else timeout
    if timeout < 0:
        raise ConfigError(f"{base}.bindTimeoutSeconds",
                          f"Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a negative value")
    if args.get("shape") is not None:
        raise ConfigError(f"{base}.shape", f"Invalid value: {json.dumps(args['shape'], separators=(',', ':'))}: "
                                           "unexpected field `shape`, remove it or turn on the feature gate "
                                           "StorageCapacityScoring")
    return int(timeout)


@dataclass
class PodVolumes:
    """What binding the pod on one node takes: volumes to bind to claims, claims to provision."""

    static: list[tuple[Obj, Obj]] = field(default_factory=list)  # (volume, claim)
    dynamic: list[Obj] = field(default_factory=list)


@dataclass
class VolumeState:
    """The pod's claims as PreFilter sorted them, and each feasible node's PodVolumes (CycleState;
    shared by clones, as upstream's is)."""

    bound: list[Obj] = field(default_factory=list)
    waiting: list[Obj] = field(default_factory=list)  # unbound, WaitForFirstConsumer
    volumes: dict[str, list[Obj]] = field(default_factory=dict)  # class -> its volumes, for `waiting`
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False

    def clone(self) -> VolumeState:
        return self


class AssumeCache:
    """Volumes and claims as the scheduler assumes them to be once it has chosen a binding, until
    the API shows a newer version of the object (or the assumption is reverted)."""

    def __init__(self, handle: Handle, kind: str) -> None:
        self.handle = handle
        self.kind = kind
        self._assumed: dict[tuple[str, str], tuple[Obj, str]] = {}  # key -> (object, version it was based on)

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str]:
        return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]

    def _latest(self, stored: Obj) -> Obj:
        key = self._key(stored)
        assumed = self._assumed.get(key)
        if assumed is None:
            return stored
        if assumed[1] != stored["metadata"].get("resourceVersion"):
            del self._assumed[key]  # the API has moved on
            return stored
        return assumed[0]

    def get(self, namespace: str, name: str) -> Obj | None:
        stored = self.handle.get_object(self.kind, namespace, name)
        return None if stored is None else self._latest(stored)

    def list(self) -> list[Obj]:
        return [self._latest(obj) for obj in self.handle.list_objects(self.kind)]

    def assume(self, obj: Obj) -> None:
        self._assumed[self._key(obj)] = (obj, obj["metadata"].get("resourceVersion", ""))

    def restore(self, objs: Iterable[Obj]) -> None:
        for obj in objs:
            self._assumed.pop(self._key(obj), None)


class BindingError(Exception):
    """checkBindings found that binding cannot complete; the message says why."""


class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin):
    name = NAME
    pods_via_requests = True  # the verdict depends on the node's labels and the volumes, not its pods

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        self.bind_timeout = _validate_args(self.args)
        self.pvs = AssumeCache(handle, "PersistentVolume")
        self.pvcs = AssumeCache(handle, "PersistentVolumeClaim")

    # ---- PreFilter -----------------------------------------------------------------------------

    def _claim_problem(self, pod: PodInfo) -> str | None:
        """podHasPVCs: why a claim of the pod is unusable (missing, lost, being deleted, or an
        ephemeral volume's claim not made for this pod)."""
        for name, ephemeral in pod_claims(pod.obj):
            pvc = self.handle.get_object("PersistentVolumeClaim", pod.namespace, name)
            if pvc is None:
                return (f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                        if ephemeral else f'persistentvolumeclaim "{name}" not found')
            if (pvc.get("status") or {}).get("phase") == "Lost":
                return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume ' \
                       f'"{(pvc.get("spec") or {}).get("volumeName", "")}"'
            if pvc["metadata"].get("deletionTimestamp"):
                return f'persistentvolumeclaim "{name}" is being deleted'
            if ephemeral and not any(o.get("controller") and o.get("uid") == pod.uid
                                     for o in pvc["metadata"].get("ownerReferences") or ()):
                return f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} " \
                       "(pod is not owner)"
        return None

    def _get_class(self, name: str) -> Obj | None:
        return self.handle.get_object("StorageClass", "", name)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        claims = pod_claims(pod.obj)
        if not claims:
            state[NAME] = VolumeState()
            return None, SKIP
        problem = self._claim_problem(pod)
        if problem is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (problem,), NAME)
        vs = VolumeState()
        immediate = False
        for name, _ in claims:
            pvc = self.pvcs.get(pod.namespace, name)
            assert pvc is not None
            if is_fully_bound(pvc):
                vs.bound.append(pvc)
            elif is_delay_binding(pvc, self._get_class) and not (pvc.get("spec") or {}).get("volumeName"):
                vs.waiting.append(pvc)
            else:
                immediate = True  # an unbound Immediate claim, or one pre-bound to a volume
        if immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNBOUND_IMMEDIATE,), NAME)
        if vs.waiting:
            classes = {claim_class(pvc) for pvc in vs.waiting}
            for pv in self.pvs.list():
                if volume_class(pv) in classes:
                    vs.volumes.setdefault(volume_class(pv), []).append(pv)
        state[NAME] = vs
        return None, SUCCESS

    # ---- Filter --------------------------------------------------------------------------------

    def _bound_ok(self, vs: VolumeState, labels: dict[str, str]) -> tuple[bool, bool]:
        """checkBoundClaims: (every bound volume admits the node, every bound volume exists)."""
        for pvc in vs.bound:
            pv = self.pvs.get("", pvc["spec"]["volumeName"])
            if pv is None:
                return True, False
            if not node_affinity_matches(pv, labels):
                return False, True
        return True, True

    def _provisionable(self, claims: list[Obj], labels: dict[str, str]) -> bool:
        """checkVolumeProvisions: every claim's class has a provisioner whose allowedTopologies
        admit the node (storage capacity is not simulated: there is always enough)."""
        for pvc in claims:
            sc = self._get_class(claim_class(pvc)) or {}
            provisioner = sc.get("provisioner") or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False
            if not topology_matches(sc.get("allowedTopologies"), labels):
                return False
        return True

    def find_pod_volumes(self, vs: VolumeState, node: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: what binding the pod on `node` takes, or the reasons it cannot."""
        found = PodVolumes()
        bound_ok, bound_exist = self._bound_ok(vs, node.labels) if vs.bound else (True, True)
        unbound_ok = True
        if vs.waiting:
            to_match, to_provision = [], []
            for pvc in vs.waiting:
                annotations = pvc["metadata"].get("annotations") or {}
                if ANN_SELECTED_NODE not in annotations:
                    to_match.append(pvc)
                elif annotations[ANN_SELECTED_NODE] == node.name:
                    to_provision.append(pvc)
                else:
                    unbound_ok = False  # sent elsewhere for provisioning
                    break
            else:
                chosen: set[str] = set()
                for pvc in sorted(to_match, key=storage_request):
                    pv = find_matching_volume(pvc, vs.volumes.get(claim_class(pvc), ()), node.labels, chosen, True)
                    if pv is None:
                        unbound_ok = False
                        to_provision.append(pvc)
                    else:
                        chosen.add(pv["metadata"]["name"])
                        found.static.append((pv, pvc))
                if to_provision:
                    unbound_ok = self._provisionable(to_provision, node.labels)
                    found.dynamic = to_provision if unbound_ok else []
        reasons = [reason for reason, ok in ((NODE_CONFLICT, bound_ok), (BIND_CONFLICT, unbound_ok),
                                             (PV_NOT_EXIST, bound_exist)) if not ok]
        return found, reasons

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        vs: VolumeState = state[NAME]
        found, reasons = self.find_pod_volumes(vs, node)
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons), NAME)
        vs.by_node[node.name] = found
        return SUCCESS

    # ---- Score (StorageCapacityScoring is off) ------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0

    # ---- Reserve / PreBind ---------------------------------------------------------------------

    def _all_bound(self, pod: PodInfo) -> bool:
        for name, _ in pod_claims(pod.obj):
            pvc = self.pvcs.get(pod.namespace, name)
            if pvc is None or not is_fully_bound(pvc):
                return False
        return True

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """AssumePodVolumes: the chosen volumes are taken and the claims to provision sent to the node."""
        vs = state.get(NAME)
        if vs is None:
            return NO_STATE
        found = vs.by_node.get(node_name)
        if found is None or self._all_bound(pod):
            vs.all_bound = True
            return SUCCESS
        static = []
        for pv, pvc in found.static:
            new = bind_volume_to_claim(pv, pvc)
            if new != pv:
                self.pvs.assume(new)
            static.append((new, pvc))
        dynamic = []
        for pvc in found.dynamic:
            new = deep_copy(pvc)
            new["metadata"].setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
            self.pvcs.assume(new)
            dynamic.append(new)
        found.static, found.dynamic = static, dynamic
        vs.all_bound = False
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        vs: VolumeState | None = state.get(NAME)
        found = vs.by_node.get(node_name) if vs is not None else None
        if found is not None:
            self.pvs.restore(pv for pv, _ in found.static)
            self.pvcs.restore(found.dynamic)

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        vs = state.get(NAME)
        if vs is None:
            return NO_STATE
        if vs.all_bound:
            return SKIP
        if node_name not in vs.by_node:
            return Status(Code.ERROR, (f'no pod volumes found for node "{node_name}"',), NAME)
        return SUCCESS

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """BindPodVolumes: the API updates, then a check every second until every claim is bound
        (the scheduler is told through the handle; meanwhile this returns WAIT)."""
        vs = state.get(NAME)
        if vs is None:
            return NO_STATE
        if vs.all_bound:
            return SUCCESS
        found = vs.by_node.get(node_name)
        if found is None:
            return Status(Code.ERROR, (f'no pod volumes found for node "{node_name}"',), NAME)
        api = self.handle.api
        assert api is not None
        volumes_written = claims_written = 0
        try:
            for pv, pvc in found.static:
                found.static[volumes_written] = (api.update(pv), pvc)
                volumes_written += 1
            for pvc in found.dynamic:
                found.dynamic[claims_written] = api.update(pvc)
                claims_written += 1
        except APIError as e:
            # Assumptions not written are dropped; what was written stays, as upstream leaves it.
            self.pvs.restore(pv for pv, _ in found.static[volumes_written:])
            self.pvcs.restore(found.dynamic[claims_written:])
            return Status(Code.ERROR, (e.message,), NAME)
        deadline = self.handle.now() + self.bind_timeout
        self._poll(pod, node_name, found, self.handle.now(), deadline)
        return Status(Code.WAIT, (), NAME)

    def _poll(self, pod: PodInfo, node_name: str, found: PodVolumes, last: float, deadline: float) -> None:
        """wait.PollUntilContextTimeout without an immediate first check: a check at each whole
        interval strictly before the deadline, then "context deadline exceeded"."""
        due = last + POLL_INTERVAL

        def tick() -> None:
            if self.handle.now() >= deadline:
                self._done(pod, "context deadline exceeded")
                return
            try:
                bound = self._check_bindings(pod, node_name, found)
            except BindingError as e:
                self._done(pod, str(e))
                return
            if bound:
                self.handle.resume_pre_bind(pod.uid, SUCCESS)
            else:
                self._poll(pod, node_name, found, due, deadline)

        self.handle.call_later(min(due, deadline) - self.handle.now(), tick)

    def _done(self, pod: PodInfo, error: str) -> None:
        self.handle.resume_pre_bind(pod.uid, Status(Code.ERROR, (f"binding volumes: {error}",), NAME))

    def _check_bindings(self, pod: PodInfo, node_name: str, found: PodVolumes) -> bool:
        """checkBindings against the API's objects: True once every claim is fully bound; raises
        when binding cannot complete (the pod is gone, a volume lost its claimRef or does not
        admit the node, the provisioner gave the claim back)."""
        get = self.handle.get_object
        current = get("Pod", pod.namespace, pod.name)
        if current is None or current["metadata"].get("uid") != pod.uid:
            raise BindingError(f'pod does not exist any more: pod "{pod.name}" not found')
        node = get("Node", "", node_name)
        if node is None:
            raise BindingError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = node["metadata"].get("labels") or {}
        for pv, pvc in found.static:
            latest_pv = get("PersistentVolume", "", pv["metadata"]["name"])
            latest_pvc = get("PersistentVolumeClaim", pod.namespace, pvc["metadata"]["name"])
            if latest_pv is None or latest_pvc is None:
                missing = f'persistentvolume "{pv["metadata"]["name"]}"' if latest_pv is None \
                    else f'persistentvolumeclaim "{pvc["metadata"]["name"]}"'
                raise BindingError(f"failed to check binding: {missing} not found")
            self._check_affinity(latest_pv, node_name, labels)
            if not ((latest_pv.get("spec") or {}).get("claimRef") or {}).get("uid"):
                raise BindingError(f'ClaimRef got reset for pv "{latest_pv["metadata"]["name"]}"')
            if not is_fully_bound(latest_pvc):
                return False
        for pvc in found.dynamic:
            name = pvc["metadata"]["name"]
            latest = get("PersistentVolumeClaim", pod.namespace, name)
            if latest is None:
                raise BindingError(f'failed to check provisioning pvc: persistentvolumeclaim "{name}" not found')
            annotations = latest["metadata"].get("annotations")
            if not annotations:
                raise BindingError(f'selectedNode annotation reset for PVC "{name}"')
            if annotations.get(ANN_SELECTED_NODE) != node_name:
                raise BindingError(f'provisioning failed for PVC "{name}"')
            volume_name = (latest.get("spec") or {}).get("volumeName")
            if volume_name:
                pv = get("PersistentVolume", "", volume_name)
                if pv is None:
                    return False  # not seen yet, or deleted: the claim will be unbound
                self._check_affinity(pv, node_name, labels)
            if not is_fully_bound(latest):
                return False
        return True

    @staticmethod
    def _check_affinity(pv: Obj, node_name: str, labels: dict[str, str]) -> None:
        if not node_affinity_matches(pv, labels):
            raise BindingError(f'pv "{pv["metadata"]["name"]}" node affinity doesn\'t match node "{node_name}": '
                               "no matching NodeSelectorTerms")

    # ---- queueing ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("StorageClass", ActionType.Add, self._class_hint),
                ClusterEvent("StorageClass", ActionType.Update, self._class_hint),
                ClusterEvent("PersistentVolumeClaim", ActionType.Add, self._claim_hint),
                ClusterEvent("PersistentVolumeClaim", ActionType.Update, self._claim_hint),
                ClusterEvent("PersistentVolume", ActionType.Add), ClusterEvent("PersistentVolume", ActionType.Update),
                ClusterEvent("Node", ActionType.Add), ClusterEvent("Node", ActionType.UpdateNodeLabel),
                ClusterEvent("CSINode", ActionType.Add, self._csinode_hint), ClusterEvent("CSINode", ActionType.Update, self._csinode_hint),
                ClusterEvent("CSIDriver", ActionType.Update, self._csidriver_hint)]

    @staticmethod
    def _class_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        """A new class, or a change to a class's allowedTopologies."""
        return old is None or old.get("allowedTopologies") != new.get("allowedTopologies")

    @staticmethod
    def _claim_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        meta = new["metadata"]
        return meta.get("namespace") == pod.namespace and meta["name"] in {c for c, _ in pod_claims(pod.obj)}

    @staticmethod
    def _csinode_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        """A new CSINode, or a change to the in-tree plugins it has migrated."""
        key = "storage.alpha.kubernetes.io/migrated-plugins"
        return old is None or (old["metadata"].get("annotations") or {}).get(key) != \
            (new["metadata"].get("annotations") or {}).get(key)

    @staticmethod
    def _csidriver_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        """A driver of the pod's in-line CSI volumes that stopped tracking storage capacity."""
        name = new["metadata"]["name"]
        uses = any((v.get("csi") or {}).get("driver") == name for v in (pod.obj.get("spec") or {}).get("volumes") or ())
        return uses and bool(((old or {}).get("spec") or {}).get("storageCapacity")) and \
            not (new.get("spec") or {}).get("storageCapacity")
