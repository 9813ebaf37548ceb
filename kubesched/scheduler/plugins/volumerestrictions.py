"""VolumeRestrictions: a disk a node's pods already use read-write cannot be mounted again, and a
ReadWriteOncePod claim serves one pod in the whole cluster.

In-line GCE PDs conflict unless every mount is read-only, AWS EBS volumes always, iSCSI and RBD
disks unless read-only; those are checked against the node's pods. A ReadWriteOncePod claim
already used by a scheduled pod rejects every node (Unschedulable, so preemption may free it:
the PreFilter extensions count the claim's users as pods are taken off a node or put back).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kubesched.api.objects import Obj
from kubesched.api.storage import READ_WRITE_ONCE_POD, access_modes
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

NAME = "VolumeRestrictions"
STATE_KEY = "PreFilter" + NAME
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass
class RWOPState:
    """The pod's ReadWriteOncePod claims and how many scheduled pods use them (CycleState)."""

    claims: frozenset[str]
    conflicts: int

    def clone(self) -> RWOPState:
        return replace(self)

    def update(self, pod: PodInfo, sign: int) -> None:
        self.conflicts += sign * sum(1 for claim in pod.claims if claim in self.claims)


def _volumes(pod: PodInfo) -> list[Obj]:
    return (pod.obj.get("spec") or {}).get("volumes") or []


def _disk_conflict(vol: Obj, other: Obj) -> bool:
    """isVolumeConflict for one volume of each pod."""
    gce, other_gce = vol.get("gcePersistentDisk"), other.get("gcePersistentDisk")
    if gce is not None and other_gce is not None and gce.get("pdName") == other_gce.get("pdName") \
            and not (gce.get("readOnly") and other_gce.get("readOnly")):
        return True
    ebs, other_ebs = vol.get("awsElasticBlockStore"), other.get("awsElasticBlockStore")
    if ebs is not None and other_ebs is not None and ebs.get("volumeID") == other_ebs.get("volumeID"):
        return True
    iscsi, other_iscsi = vol.get("iscsi"), other.get("iscsi")
    if iscsi is not None and other_iscsi is not None and iscsi.get("iqn") == other_iscsi.get("iqn") \
            and not (iscsi.get("readOnly") and other_iscsi.get("readOnly")):
        return True
    rbd, other_rbd = vol.get("rbd"), other.get("rbd")
    return rbd is not None and other_rbd is not None \
        and bool(set(rbd.get("monitors") or ()) & set(other_rbd.get("monitors") or ())) \
        and rbd.get("pool", "rbd") == other_rbd.get("pool", "rbd") and rbd.get("image") == other_rbd.get("image") \
        and not (rbd.get("readOnly") and other_rbd.get("readOnly"))


def disk_conflicts(pod: PodInfo, others: Iterable[PodInfo]) -> bool:
    """satisfyVolumeConflicts, negated: one of the pod's disks is in use by one of `others`."""
    disks = [v for v in _volumes(pod) if any(v.get(k) is not None for k in DISK_SOURCES)]
    return bool(disks) and any(_disk_conflict(vol, other) for existing in others for other in _volumes(existing)
                               for vol in disks)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin):
    name = NAME
    _disk = Status(Code.UNSCHEDULABLE, (DISK_CONFLICT,), NAME)
    _rwop = Status(Code.UNSCHEDULABLE, (RWOP_CONFLICT,), NAME)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        volumes = _volumes(pod)
        if not volumes:
            return None, SKIP
        claims = set()
        for name in pod.claims:
            pvc = self.handle.get_object("PersistentVolumeClaim", pod.namespace, name)
            if pvc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    (f'persistentvolumeclaim "{name}" not found',), NAME)
            if READ_WRITE_ONCE_POD in access_modes(pvc):
                claims.add(name)
        used = self.handle.cache.claim_users
        conflicts = sum(1 for name in claims if used.get(f"{pod.namespace}/{name}"))
        if conflicts == 0 and not any(v.get(k) is not None for v in volumes for k in DISK_SOURCES):
            return None, SKIP
        state[STATE_KEY] = RWOPState(frozenset(claims), conflicts)
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status:
        state[STATE_KEY].update(pod_to_add, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status:
        state[STATE_KEY].update(pod_to_remove, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if disk_conflicts(pod, node.pods.values()):
            return self._disk
        return self._rwop if state[STATE_KEY].conflicts > 0 else SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("AssignedPod", ActionType.Delete, self._pod_deleted_hint), ClusterEvent("Node", ActionType.Add),
                ClusterEvent("PersistentVolumeClaim", ActionType.Add, self._claim_added_hint)]

    @staticmethod
    def _pod_deleted_hint(pod: PodInfo, old: PodInfo | None, new: object) -> bool:
        """Queue if the deleted pod (same namespace) held one of the pod's disks or claims."""
        if old is None:
            return True
        if old.namespace != pod.namespace:
            return False
        return disk_conflicts(pod, (old,)) or bool(set(pod.claims) & set(old.claims))

    @staticmethod
    def _claim_added_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        meta = new["metadata"]
        return meta.get("namespace") == pod.namespace and meta["name"] in pod.claims
