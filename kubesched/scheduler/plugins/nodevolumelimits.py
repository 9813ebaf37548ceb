"""NodeVolumeLimits (CSILimits): a node attaches at most so many volumes of each CSI driver.

The limit is the driver's `allocatable.count` in the node's CSINode (or the node's own
`attachable-volumes-csi-<driver>` allocatable). Volumes are counted once each however many pods
use them: a claim's bound volume by its CSI driver and handle (in-tree EBS, GCE PD, Azure disk and
Cinder volumes count for the driver they migrated to once the node has a CSINode), a claim not yet
bound by its class's provisioner; in-line in-tree disks count the same way. So does a CSI volume
a VolumeAttachment says is attached to the node (from an export: attaching is not simulated), as
when its pod is gone but the volume is not detached yet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from kubesched.api.objects import Obj
from kubesched.api.storage import CSI_DRIVER_OF_PROVISIONER, IN_TREE_DRIVERS, claim_class, pod_claims
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
ATTACHABLE_PREFIX = "attachable-volumes-"
RESOURCE_NAME_LIMIT = 63


def attach_limit_key(driver: str) -> str:
    """GetCSIAttachLimitKey: the resource name of a driver's attach limit (hashed when too long)."""
    if len(ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LIMIT:
        return ATTACH_LIMIT_PREFIX + driver[:23] + hashlib.sha1(driver.encode()).hexdigest()[:16]
    return ATTACH_LIMIT_PREFIX + driver


def _in_tree(source: Obj) -> tuple[str, str] | None:
    """(CSI driver, volume handle) an in-tree volume source migrates to, if it is one of them."""
    for key, (_, driver, id_field) in IN_TREE_DRIVERS.items():
        if source.get(key) is not None:
            return driver, str(source[key].get(id_field, ""))
    return None


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    name = NAME
    _exceeded = Status(Code.UNSCHEDULABLE, (REASON,), NAME)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        if pod_claims(pod.obj) or any(_in_tree(v) for v in (pod.obj.get("spec") or {}).get("volumes") or ()):
            return None, SUCCESS
        return None, SKIP

    def _volumes(self, pod: PodInfo, csi_node: Obj | None, new: bool) -> dict[str, str] | Status:
        """filterAttachableVolumes: "driver/handle" -> limit key for each attachable volume of `pod`;
        for the pod being scheduled, a claim that does not exist rejects the node."""
        out: dict[str, str] = {}
        for vol in (pod.obj.get("spec") or {}).get("volumes") or ():
            if vol.get("persistentVolumeClaim") is None and vol.get("ephemeral") is None:
                inline = _in_tree(vol) if csi_node is not None else None
                if inline is not None and inline[1]:
                    out[f"{inline[0]}/{inline[1]}"] = attach_limit_key(inline[0])
                continue
            claim = (vol["persistentVolumeClaim"].get("claimName") if vol.get("persistentVolumeClaim") is not None
                     else f"{pod.name}-{vol.get('name', '')}")
            pvc = self.handle.get_object("PersistentVolumeClaim", pod.namespace, claim)
            if pvc is None:
                if new:
                    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (
                        f'looking up PVC {pod.namespace}/{claim}: persistentvolumeclaim "{claim}" not found',), NAME)
                continue
            driver, handle = self._driver_info(csi_node, pvc)
            if driver and handle:
                out[f"{driver}/{handle}"] = attach_limit_key(driver)
        return out

    def _driver_info(self, csi_node: Obj | None, pvc: Obj) -> tuple[str, str]:
        """getCSIDriverInfo: the bound volume's driver and handle; for a claim without one, its
        class's provisioner and a handle of the claim's own."""
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        pv = self.handle.get_object("PersistentVolume", "", pv_name) if pv_name else None
        if pv is not None:
            spec = pv.get("spec") or {}
            if spec.get("csi") is not None:
                return spec["csi"].get("driver", ""), spec["csi"].get("volumeHandle", "")
            migrated = _in_tree(spec)
            return migrated if migrated is not None and csi_node is not None else ("", "")
        class_name = claim_class(pvc)
        sc = self.handle.get_object("StorageClass", "", class_name) if class_name else None
        if sc is None:
            return "", ""
        handle = f"claim-{pvc['metadata'].get('namespace')}/{pvc['metadata']['name']}"
        provisioner = sc.get("provisioner", "")
        if provisioner in CSI_DRIVER_OF_PROVISIONER:
            return (CSI_DRIVER_OF_PROVISIONER[provisioner], handle) if csi_node is not None else ("", "")
        return provisioner, handle

    def _attachments(self, node_name: str) -> dict[str, str]:
        """The node's VolumeAttachments of CSI volumes: still attached, say after their pod went."""
        out = {}
        for va in self.handle.list_objects("VolumeAttachment"):
            spec = va.get("spec") or {}
            pv_name = (spec.get("source") or {}).get("persistentVolumeName")
            if spec.get("nodeName") != node_name or not spec.get("attacher") or not pv_name:
                continue
            csi = ((self.handle.get_object("PersistentVolume", "", pv_name) or {}).get("spec") or {}).get("csi")
            if csi is not None:
                out[f"{spec['attacher']}/{csi.get('volumeHandle', '')}"] = attach_limit_key(spec["attacher"])
        return out

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        csi_node = self.handle.get_object("CSINode", "", node.name)
        new = self._volumes(pod, csi_node, True)
        if isinstance(new, Status):
            return new
        if not new:
            return SUCCESS
        limits = {k: v for k, v in node.allocatable.items() if k.startswith(ATTACHABLE_PREFIX)}
        for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or ():
            count = (driver.get("allocatable") or {}).get("count")
            if count is not None:
                limits[attach_limit_key(driver.get("name", ""))] = count
        if not limits:
            return SUCCESS
        attached: dict[str, str] = {}
        for existing in node.pods.values():
            volumes = self._volumes(existing, csi_node, False)
            assert not isinstance(volumes, Status)
            attached.update(volumes)
        for volume in attached:
            new.pop(volume, None)  # already attached for another pod
        attached.update((v, k) for v, k in self._attachments(node.name).items() if v not in attached)
        in_use: dict[str, int] = {}
        for key in attached.values():
            in_use[key] = in_use.get(key, 0) + 1
        adding: dict[str, int] = {}
        for key in new.values():
            adding[key] = adding.get(key, 0) + 1
        for key, count in adding.items():
            if key in limits and in_use.get(key, 0) + count > limits[key]:
                return self._exceeded
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("CSINode", ActionType.Add), ClusterEvent("AssignedPod", ActionType.Delete, self._pod_deleted_hint),
                ClusterEvent("PersistentVolumeClaim", ActionType.Add, self._claim_added_hint)]

    @staticmethod
    def _pod_deleted_hint(pod: PodInfo, old: PodInfo | None, new: object) -> bool:
        """Queue if the deleted pod had a claim or an in-line disk: it may have freed an attachment."""
        if old is None:
            return True
        return bool(pod_claims(old.obj)) or any(_in_tree(v) for v in (old.obj.get("spec") or {}).get("volumes") or ())

    @staticmethod
    def _claim_added_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        meta = new["metadata"]
        return meta.get("namespace") == pod.namespace and meta["name"] in {c for c, _ in pod_claims(pod.obj)}
