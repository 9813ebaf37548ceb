"""VolumeZone: a pod whose bound volumes are labelled with a zone or region fits only nodes there.

The labels read are the volume's own (topology.kubernetes.io/zone and /region and their beta
failure-domain forms; a value may list several zones joined by "__"), not its node affinity, which
VolumeBinding checks. A node without any zone or region label fits (a single-zone cluster); claims
still waiting for their first consumer are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.api.objects import Obj
from kubesched.api.storage import WAIT_FOR_FIRST_CONSUMER, claim_class
from kubesched.scheduler.framework import (
    ActionType,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.scheduler.types import SKIP, SUCCESS, Code, NodeInfo, PodInfo, Status

NAME = "VolumeZone"
STATE_KEY = "PreFilter" + NAME
REASON = "node(s) had no available volume zone"
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_LABEL = {BETA_ZONE: ZONE, BETA_REGION: REGION}


def volume_topologies(pv: Obj) -> list[tuple[str, frozenset[str]]]:
    """(label key, zones) for each topology label of the volume (LabelZonesToSet; an unparsable
    value, with an empty zone, is ignored)."""
    labels = pv["metadata"].get("labels") or {}
    out = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = labels[key].split("__")
            if all(z.strip() for z in zones):
                out.append((key, frozenset(z.strip() for z in zones)))
    return out


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), NAME)


class VolumeZone(PreFilterPlugin, FilterPlugin):
    name = NAME
    pods_via_requests = True  # the verdict depends on the node's labels only
    _conflict = _unresolvable(REASON)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        topologies: list[tuple[str, frozenset[str]]] = []
        for name in pod.claims:
            if not name:
                return None, _unresolvable("PersistentVolumeClaim had no name")
            pvc = self.handle.get_object("PersistentVolumeClaim", pod.namespace, name)
            if pvc is None:
                return None, _unresolvable(f'persistentvolumeclaim "{name}" not found')
            pv_name = (pvc.get("spec") or {}).get("volumeName")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return None, _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                sc = self.handle.get_object("StorageClass", "", class_name)
                if sc is None:
                    return None, _unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found')
                if sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return None, _unresolvable("PersistentVolume had no name")
            pv = self.handle.get_object("PersistentVolume", "", pv_name)
            if pv is None:
                return None, _unresolvable(f'persistentvolume "{pv_name}" not found')
            topologies.extend(volume_topologies(pv))
        if not topologies:
            return None, SKIP
        state[STATE_KEY] = topologies
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return SUCCESS
        for key, zones in state[STATE_KEY]:
            value = labels.get(key, labels.get(GA_LABEL.get(key, key)))
            if value is None or value not in zones:
                return self._conflict
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("StorageClass", ActionType.Add, self._class_added_hint),
                ClusterEvent("Node", ActionType.Add), ClusterEvent("Node", ActionType.UpdateNodeLabel),
                ClusterEvent("PersistentVolumeClaim", ActionType.Add, self._claim_hint),
                ClusterEvent("PersistentVolumeClaim", ActionType.Update, self._claim_hint),
                ClusterEvent("PersistentVolume", ActionType.Add, self._volume_hint),
                ClusterEvent("PersistentVolume", ActionType.Update, self._volume_hint)]

    @staticmethod
    def _class_added_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        return new.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

    @staticmethod
    def _claim_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        meta = new["metadata"]
        return meta.get("namespace") == pod.namespace and meta["name"] in pod.claims

    @staticmethod
    def _volume_hint(pod: PodInfo, old: Obj | None, new: Obj) -> bool:
        """A new volume, or one whose topology labels changed."""
        return old is None or volume_topologies(old) != volume_topologies(new)
