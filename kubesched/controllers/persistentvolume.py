"""The PV controller (pkg/controller/volume/persistentvolume), with the external provisioner a CSI
driver runs beside it.

Claims: an unbound claim is bound to the best available volume (of the fewest access modes that
cover the claim's, then the smallest that fits); a claim of a WaitForFirstConsumer class is left to
the scheduler (events `WaitForFirstConsumer` / `WaitForPodScheduled`) unless a volume was pre-bound
to it; a claim with no volume is provisioned by its class's provisioner, for WaitForFirstConsumer
claims once the scheduler has written `volume.kubernetes.io/selected-node`. Binding sets the
volume's claimRef and the claim's volumeName with `pv.kubernetes.io/bind-completed`, and both
phases to Bound. A claim without a class gets the default class (retroactively too).

Volumes: Available when unclaimed; when their claim is deleted, Released and then reclaimed by
their policy (Delete removes them, Recycle makes them Available again, Retain keeps them); a bound
claim whose volume disappears is Lost.

The provisioner (any provisioner but `kubernetes.io/no-provisioner`) creates `pvc-<claim uid>`:
the claim's size, access modes and volume mode, the class's reclaim policy, a CSI source of its
driver, and, for a claim sent to a node, node affinity to that node's topology (the class's
allowedTopologies keys, else the driver's topology keys from the node's CSINode, else its zone);
an Immediate class with allowedTopologies provisions in the first topology it allows. The
StorageClass annotation `sim.kubesched.io/provisioning-time` says how long that takes (default at
once; `never`: no provisioner is running).

As upstream, a new volume does not itself bind waiting claims nor a new class provision them: the
controller's 15 s resync does; the resync is scheduled only when such a change gave it work.
"""

from __future__ import annotations

import math

from kubesched.api.duration import parse_duration
from kubesched.api.objects import Obj, deep_copy
from kubesched.api.storage import (
    ANN_BETA_STORAGE_CLASS,
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    CSI_DRIVER_OF_PROVISIONER,
    NOT_SUPPORTED_PROVISIONER,
    ZONE_LABEL,
    access_modes,
    bind_volume_to_claim,
    bound_to_claim,
    claim_class,
    find_matching_volume,
    is_delay_binding,
    volume_mode,
)
from kubesched.apiserver.errors import APIError, ConflictError
from kubesched.apiserver.server import APIServer
from kubesched.apiserver.storage import default_class
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import ADDED, DELETED, WatchEvent

SOURCE = "persistentvolume-controller"
RESYNC_PERIOD = 15.0  # --pvclaimbinder-sync-period
PROVISIONING_TIME = "sim.kubesched.io/provisioning-time"

ClaimKey = tuple[str, str]


def _claim_key(pvc: Obj) -> ClaimKey:
    return pvc["metadata"].get("namespace", "default"), pvc["metadata"]["name"]


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _phase(obj: Obj) -> str | None:
    return (obj.get("status") or {}).get("phase")


class PersistentVolumeController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.clock = clock
        self.claims = WorkQueue(clock, self._sync_claim)
        self.volumes = WorkQueue(clock, self._sync_volume)
        self._provisioning: dict[str, Timer] = {}  # claim uid -> its provisioning under way
        self._events: dict[tuple[str, str], str] = {}  # (object uid, reason) -> the last message
        self._resync: Timer | None = None

    def start(self) -> None:
        store = self.api.store
        for pv in store.list("PersistentVolume"):
            self.volumes.add(pv["metadata"]["name"])
        for pvc in store.list("PersistentVolumeClaim"):
            self.claims.add(_claim_key(pvc))
        store.watch(self._on_claim, {"PersistentVolumeClaim"})
        store.watch(self._on_volume, {"PersistentVolume"})
        store.watch(self._on_class, {"StorageClass"})

    # ---- watches --------------------------------------------------------------------------------

    def _on_claim(self, ev: WatchEvent) -> None:
        pvc = ev.obj
        if ev.type != DELETED:
            self.claims.add(_claim_key(pvc))
            return
        timer = self._provisioning.pop(pvc["metadata"].get("uid", ""), None)
        if timer is not None:
            timer.cancel()
        for pv in self.api.store.list("PersistentVolume"):  # the volume bound or pre-bound to it
            if bound_to_claim(pv, pvc) or pv["metadata"]["name"] == (pvc.get("spec") or {}).get("volumeName"):
                self.volumes.add(pv["metadata"]["name"])

    def _on_volume(self, ev: WatchEvent) -> None:
        pv = ev.obj
        if ev.type != DELETED:
            self.volumes.add(pv["metadata"]["name"])
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if ref:
            self.claims.add((ref.get("namespace") or "default", ref.get("name", "")))

    def _on_class(self, ev: WatchEvent) -> None:
        if ev.type == ADDED:
            self._resync_soon()  # claims waiting for it (or for a default class) are retried then

    def _resync_soon(self) -> None:
        """At the next resync tick, sync every claim not bound yet (if there is one)."""
        if self._resync is not None or all(ANN_BIND_COMPLETED in _annotations(pvc)
                                           for pvc in self.api.store.list("PersistentVolumeClaim")):
            return
        at = (math.floor(self.clock.now() / RESYNC_PERIOD) + 1) * RESYNC_PERIOD
        self._resync = self.clock.call_at(at, self._resync_claims)

    def _resync_claims(self) -> None:
        self._resync = None
        for pvc in self.api.store.list("PersistentVolumeClaim"):
            if ANN_BIND_COMPLETED not in _annotations(pvc):
                self.claims.add(_claim_key(pvc))

    # ---- helpers ----------------------------------------------------------------------------------

    def _event(self, obj: Obj, etype: str, reason: str, message: str, source: str = SOURCE) -> None:
        """Record an event, unless it repeats the last of its reason about the object (an event
        recorder counts repeats on the one Event)."""
        key = (obj["metadata"].get("uid", ""), reason)
        if self._events.get(key) != message:
            self._events[key] = message
            self.api.record_event(obj, etype, reason, message, source=source)

    def _class(self, name: str) -> Obj | None:
        return self.api.store.get("StorageClass", "", name) if name else None

    def _set_claim_phase(self, pvc: Obj, phase: str, pv: Obj | None = None) -> Obj:
        """updateClaimStatus: the phase, and for a bound claim the volume's capacity and modes."""
        status = {"phase": phase}
        if pv is not None:
            status["accessModes"] = access_modes(pv)
            status["capacity"] = dict((pv.get("spec") or {}).get("capacity") or {})
        current = pvc.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return pvc
        return self.api.update_status("PersistentVolumeClaim", *_claim_key(pvc), lambda st: _replace(st, status))

    def _set_volume_phase(self, pv: Obj, phase: str) -> Obj:
        if _phase(pv) == phase:
            return pv
        pv = self.api.update_status("PersistentVolume", "", pv["metadata"]["name"],
                                    lambda st: st.update(phase=phase))
        if phase == "Available":
            self._resync_soon()  # a claim may want it
        return pv

    def _best_match(self, pvc: Obj, delay: bool) -> Obj | None:
        """findBestMatchForClaim: the volumes indexed by their access modes, searching the sets
        that cover the claim's modes, fewest modes first. Upstream orders sets of as many modes,
        and the volumes within a set, as a Go map iterates (differently each run); here sets of as
        many modes go by name and volumes by creation."""
        wanted = set(access_modes(pvc))
        groups: dict[tuple[str, ...], list[Obj]] = {}
        for pv in self.api.store.list("PersistentVolume"):
            modes = tuple(sorted(set(access_modes(pv))))
            if wanted <= set(modes):
                groups.setdefault(modes, []).append(pv)
        for modes in sorted(groups, key=lambda m: (len(m), m)):
            pv = find_matching_volume(pvc, groups[modes], None, set(), delay)
            if pv is not None:
                return pv
        return None

    # ---- claims (syncClaim) -----------------------------------------------------------------------

    def _sync_claim(self, key: ClaimKey) -> None:
        pvc = self.api.store.get("PersistentVolumeClaim", *key)
        if pvc is None:
            return
        try:
            if ANN_BIND_COMPLETED in _annotations(pvc):
                self._sync_bound_claim(pvc)
            else:
                self._sync_unbound_claim(pvc)
        except ConflictError:
            self.claims.add(key)  # changed under us: sync again with the new version

    def _sync_unbound_claim(self, pvc: Obj) -> None:
        volume_name = (pvc.get("spec") or {}).get("volumeName")
        if volume_name:
            # Pre-bound by its creator to a volume: bind when the volume is free or ours.
            pv = self.api.store.get("PersistentVolume", "", volume_name)
            if pv is not None and (not (pv.get("spec") or {}).get("claimRef") or bound_to_claim(pv, pvc)):
                self._bind(pv, pvc)
            else:
                self._set_claim_phase(pvc, "Pending")
            return
        delay = is_delay_binding(pvc, self._class)
        pv = self._best_match(pvc, delay)
        if pv is not None:
            self._bind(pv, pvc)
            return
        if self._assign_default_class(pvc):
            return
        if delay and ANN_SELECTED_NODE not in _annotations(pvc):
            self._wait_for_consumer(pvc)
        elif claim_class(pvc):
            self._provision(pvc)
            return
        else:
            self._event(pvc, "Normal", "FailedBinding",
                        "no persistent volumes available for this claim and no storage class is set")
        self._set_claim_phase(pvc, "Pending")

    def _assign_default_class(self, pvc: Obj) -> bool:
        """Retroactive default StorageClass assignment for a claim that names no class at all."""
        if (pvc.get("spec") or {}).get("storageClassName") is not None or ANN_BETA_STORAGE_CLASS in _annotations(pvc):
            return False
        sc = default_class(self.api.store)
        if sc is None:
            return False
        new = deep_copy(pvc)
        new["spec"]["storageClassName"] = sc["metadata"]["name"]
        self.api.update(new)
        return True

    def _wait_for_consumer(self, pvc: Obj) -> None:
        """emitEventForUnboundDelayBindingClaim: name the pending pods that use the claim, if any."""
        ns, name = _claim_key(pvc)
        pods = sorted(p["metadata"]["name"] for p in self.api.store.list("Pod", ns)
                      if not (p.get("spec") or {}).get("nodeName") and _uses_claim(p, name))
        if not pods:
            self._event(pvc, "Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
        elif len(pods) == 1:
            self._event(pvc, "Normal", "WaitForPodScheduled", f"waiting for pod {pods[0]} to be scheduled")
        else:
            self._event(pvc, "Normal", "WaitForPodScheduled", f"waiting for pods {','.join(pods)} to be scheduled")

    def _sync_bound_claim(self, pvc: Obj) -> None:
        volume_name = (pvc.get("spec") or {}).get("volumeName")
        pv = self.api.store.get("PersistentVolume", "", volume_name) if volume_name else None
        if pv is None:
            message = "Bound claim has lost its PersistentVolume. Data on the volume is lost!" if volume_name \
                else "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            if _phase(pvc) != "Lost":
                self._event(pvc, "Warning", "ClaimLost", message)
            self._set_claim_phase(pvc, "Lost")
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or ref.get("uid") == pvc["metadata"].get("uid"):
            self._bind(pv, pvc)  # finish a half-done binding, or confirm the statuses
            return
        if _phase(pvc) != "Lost":
            self._event(pvc, "Warning", "ClaimMisbound", "Two claims are bound to the same volume, this one is bound "
                                                         "incorrectly")
        self._set_claim_phase(pvc, "Lost")

    def _bind(self, pv: Obj, pvc: Obj) -> None:
        """bind: the volume to the claim, both Bound, the claim to the volume. Nothing is written
        that is already so."""
        new_pv = bind_volume_to_claim(pv, pvc)
        if new_pv != pv:
            pv = self.api.update(new_pv)
        pv = self._set_volume_phase(pv, "Bound")
        new_pvc = deep_copy(pvc)
        annotations = new_pvc["metadata"].setdefault("annotations", {})
        if (new_pvc["spec"].get("volumeName") or "") != pv["metadata"]["name"]:
            new_pvc["spec"]["volumeName"] = pv["metadata"]["name"]
            annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        annotations.setdefault(ANN_BIND_COMPLETED, "yes")
        if new_pvc != pvc:
            pvc = self.api.update(new_pvc)
        self._set_claim_phase(pvc, "Bound", pv)

    # ---- provisioning -----------------------------------------------------------------------------

    def _provision(self, pvc: Obj) -> None:
        """provisionClaim for an external provisioner: mark the claim as waiting for it, then let
        the provisioner (simulated here) create the volume."""
        class_name = claim_class(pvc)
        sc = self._class(class_name)
        if sc is None:
            self._event(pvc, "Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{class_name}" not found')
            self._set_claim_phase(pvc, "Pending")
            return
        provisioner = sc.get("provisioner", "")
        name = CSI_DRIVER_OF_PROVISIONER.get(provisioner, provisioner)
        annotations = _annotations(pvc)
        if annotations.get(ANN_STORAGE_PROVISIONER) != name or annotations.get(ANN_BETA_STORAGE_PROVISIONER) != name:
            new = deep_copy(pvc)
            new["metadata"].setdefault("annotations", {}).update({ANN_BETA_STORAGE_PROVISIONER: name,
                                                                   ANN_STORAGE_PROVISIONER: name})
            pvc = self.api.update(new)
        self._event(pvc, "Normal", "ExternalProvisioning",
                    f"Waiting for a volume to be created either by the external provisioner '{name}' or manually by "
                    "the system administrator. If volume creation is delayed, please verify that the provisioner is "
                    "running and correctly registered.")
        self._set_claim_phase(pvc, "Pending")
        uid = pvc["metadata"].get("uid", "")
        took = _annotations(sc).get(PROVISIONING_TIME, "0")
        if uid in self._provisioning or provisioner == NOT_SUPPORTED_PROVISIONER or took == "never":
            return  # under way already, or nobody to provision
        self._event(pvc, "Normal", "Provisioning",
                    f'External provisioner is provisioning volume for claim "{"/".join(_claim_key(pvc))}"', source=name)
        self._provisioning[uid] = self.clock.call_later(parse_duration(took),
                                                        lambda: self._provisioned(_claim_key(pvc), uid, sc))

    def _provisioned(self, key: ClaimKey, uid: str, sc: Obj) -> None:
        """The provisioner has created the volume: its PersistentVolume, pre-bound to the claim."""
        self._provisioning.pop(uid, None)
        pvc = self.api.store.get("PersistentVolumeClaim", *key)
        if pvc is None or pvc["metadata"].get("uid") != uid or (pvc.get("spec") or {}).get("volumeName"):
            return
        node_name = _annotations(pvc).get(ANN_SELECTED_NODE)
        if is_delay_binding(pvc, self._class) and not node_name:
            return  # the scheduler took the claim back
        provisioner = sc.get("provisioner", "")
        driver = CSI_DRIVER_OF_PROVISIONER.get(provisioner, provisioner)
        name = f"pvc-{uid}"
        spec: Obj = {
            "accessModes": access_modes(pvc),
            "capacity": {"storage": (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {})
                         .get("storage", "0")},
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": key[0], "name": key[1], "uid": uid,
                         "apiVersion": "v1", "resourceVersion": pvc["metadata"].get("resourceVersion")},
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": claim_class(pvc),
            "volumeMode": volume_mode(pvc),
            "csi": {"driver": driver, "volumeHandle": name},
        }
        if sc.get("mountOptions"):
            spec["mountOptions"] = list(sc["mountOptions"])
        topology = self._topology(sc, driver, node_name)
        if topology:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": k, "operator": "In", "values": [v]} for k, v in topology]}]}}
        pv = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: driver}}, "spec": spec}
        try:
            self.api.create(pv)
        except APIError as e:
            self._event(pvc, "Warning", "ProvisioningFailed", e.message, source=driver)
            return
        self._event(pvc, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {name}", source=driver)

    def _topology(self, sc: Obj, driver: str, node_name: str | None) -> list[tuple[str, str]]:
        """Where the new volume is reachable from: for a claim sent to a node, that node's values of
        the class's allowedTopologies keys (else of the driver's CSINode topology keys, else of the
        zone label); for an Immediate claim, the first topology the class allows (none: anywhere)."""
        allowed = [e for term in sc.get("allowedTopologies") or () for e in term.get("matchLabelExpressions") or ()]
        if not node_name:
            return [(e["key"], e["values"][0]) for e in
                    ((sc.get("allowedTopologies") or [{}])[0].get("matchLabelExpressions") or ()) if e.get("values")]
        node = self.api.store.get("Node", "", node_name)
        labels = (node or {}).get("metadata", {}).get("labels") or {}
        keys = list(dict.fromkeys(e.get("key", "") for e in allowed))
        if not keys:
            csi_node = self.api.store.get("CSINode", "", node_name)
            keys = next((list(d.get("topologyKeys") or ()) for d in ((csi_node or {}).get("spec") or {}).get("drivers")
                         or () if d.get("name") == driver), [])
        return [(k, labels[k]) for k in keys or [ZONE_LABEL] if k in labels]

    # ---- volumes (syncVolume) ---------------------------------------------------------------------

    def _sync_volume(self, name: str) -> None:
        pv = self.api.store.get("PersistentVolume", "", name)
        if pv is None:
            return
        try:
            self._sync_volume_object(pv)
        except ConflictError:
            self.volumes.add(name)

    def _sync_volume_object(self, pv: Obj) -> None:
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("uid"):
            # Unused, or reserved for a claim that has not bound to it yet (the claim's sync will).
            self._set_volume_phase(pv, "Available")
            if ref:
                self.claims.add((ref.get("namespace") or "default", ref.get("name", "")))
            return
        pvc = self.api.store.get("PersistentVolumeClaim", ref.get("namespace") or "default", ref.get("name", ""))
        if pvc is None or pvc["metadata"].get("uid") != ref.get("uid"):
            if _phase(pv) not in ("Released", "Failed"):
                pv = self._set_volume_phase(pv, "Released")
            self._reclaim(pv)
        elif not (pvc.get("spec") or {}).get("volumeName"):
            self.claims.add(_claim_key(pvc))  # the claim's sync finishes the binding
        elif pvc["spec"]["volumeName"] == pv["metadata"]["name"]:
            self._set_volume_phase(pv, "Bound")
        elif ANN_PROVISIONED_BY in _annotations(pv) and pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
            self.api.delete("PersistentVolume", "", pv["metadata"]["name"])  # made for a claim bound elsewhere
        else:
            self._unbind(pv)

    def _unbind(self, pv: Obj) -> None:
        """unbindVolume: drop a binding the controller made, or only the uid of one its creator made."""
        new = deep_copy(pv)
        annotations = new["metadata"].get("annotations") or {}
        if ANN_BOUND_BY_CONTROLLER in annotations:
            new["spec"].pop("claimRef", None)
            del annotations[ANN_BOUND_BY_CONTROLLER]
        else:
            new["spec"]["claimRef"].pop("uid", None)
        self._set_volume_phase(self.api.update(new), "Available")

    def _reclaim(self, pv: Obj) -> None:
        """reclaimVolume: Retain keeps the volume Released, Recycle scrubs it back to Available,
        Delete has its provisioner delete it (a volume no provisioner made stays Released)."""
        policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        if policy == "Delete" and ANN_PROVISIONED_BY in _annotations(pv):
            self.api.delete("PersistentVolume", "", pv["metadata"]["name"])
        elif policy == "Recycle":
            self._unbind(pv)


def _uses_claim(pod: Obj, claim: str) -> bool:
    for vol in (pod.get("spec") or {}).get("volumes") or ():
        if (vol.get("persistentVolumeClaim") or {}).get("claimName") == claim:
            return True
        if vol.get("ephemeral") is not None and f"{pod['metadata']['name']}-{vol.get('name', '')}" == claim:
            return True
    return False


def _replace(status: Obj, new: Obj) -> None:
    status.clear()
    status.update(deep_copy(new))
