"""The PVC and PV protection controllers (pkg/controller/volume/pvcprotection and pvprotection,
v1.35): a claim being deleted stays while a pod uses it, a volume being deleted while it is
bound, so no pod loses its storage under it.

Each keeps its finalizer on every object of its kind (admission adds it to new ones, the
controller to those made before), and removes it from one being deleted once nothing uses it: a
claim is used by a pod that is scheduled and names it as a volume (a generic ephemeral volume's
claim only while its own pod is not shut down: deleted with no grace period left); a volume is
used while its phase is Bound.

`serve` runs them (see kubesched.server.engine); `simulate` does not, so a run's claims and
volumes are deleted at once, as they always were there.
"""

from __future__ import annotations

import contextlib

from kubesched.api.objects import Obj, controller_of, is_terminating
from kubesched.apiserver.admission import STORAGE_PROTECTION
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import WatchEvent

PVC_PROTECTION = STORAGE_PROTECTION["PersistentVolumeClaim"]
PV_PROTECTION = STORAGE_PROTECTION["PersistentVolume"]


def _finalizers(obj: Obj) -> list[str]:
    return list(obj["metadata"].get("finalizers") or ())


def _set_finalizers(api: APIServer, obj: Obj, finalizers: list[str]) -> None:
    meta = obj["metadata"]
    api.patch(obj["kind"], meta.get("namespace", ""), meta["name"],
              {"metadata": {"finalizers": finalizers or None}})


def _sync_finalizer(api: APIServer, obj: Obj, finalizer: str, used: bool) -> None:
    """Add the finalizer to a live object that lacks it; remove it from one being deleted that
    nothing uses any more."""
    finalizers = _finalizers(obj)
    with contextlib.suppress(APIError):  # changed or gone meanwhile: its next event resyncs it
        if not is_terminating(obj) and finalizer not in finalizers:
            _set_finalizers(api, obj, [*finalizers, finalizer])
        elif is_terminating(obj) and finalizer in finalizers and not used:
            _set_finalizers(api, obj, [f for f in finalizers if f != finalizer])


def _shut_down(pod: Obj) -> bool:
    """podIsShutDown: the kubelet is done with it (or it was force-deleted): no grace left."""
    meta = pod["metadata"]
    return bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0


def claims_of(pod: Obj) -> list[tuple[str, bool]]:
    """The claims a pod's volumes name: (claim name, whether it is the pod's generic ephemeral one)."""
    name = pod["metadata"]["name"]
    found = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if (source := volume.get("persistentVolumeClaim")) is not None and source.get("claimName"):
            found.append((source["claimName"], False))
        elif volume.get("ephemeral") is not None:
            found.append((f"{name}-{volume.get('name', '')}", True))
    return found


def pod_uses_claim(pod: Obj, claim: Obj) -> bool:
    """podUsesPVC: only a scheduled pod counts (the kubelet starts nothing else)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    name = claim["metadata"]["name"]
    for claim_name, ephemeral in claims_of(pod):
        if claim_name != name:
            continue
        if not ephemeral:
            return True
        owner = controller_of(claim)
        if not _shut_down(pod) and owner is not None and owner.get("uid") == pod["metadata"].get("uid"):
            return True
    return False


class PVCProtectionController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        self.api.honour(PVC_PROTECTION)
        for claim in self.api.store.list("PersistentVolumeClaim"):
            self.queue.add((claim["metadata"]["namespace"], claim["metadata"]["name"]))
        self.api.store.watch(self._on_change, {"PersistentVolumeClaim", "Pod"})

    def _on_change(self, ev: WatchEvent) -> None:
        meta = ev.obj["metadata"]
        if ev.kind == "PersistentVolumeClaim":
            self.queue.add((meta["namespace"], meta["name"]))
            return
        # A pod that comes, goes, is scheduled or shuts down may hold or free its claims.
        for pod in (ev.obj, ev.old):
            for claim_name, _ in claims_of(pod) if pod is not None else ():
                self.queue.add((meta["namespace"], claim_name))

    def _sync(self, key: tuple[str, str]) -> None:
        namespace, name = key
        claim = self.api.store.get("PersistentVolumeClaim", namespace, name)
        if claim is None:
            return
        used = is_terminating(claim) and any(pod_uses_claim(pod, claim)
                                             for pod in self.api.store.list("Pod", namespace))
        _sync_finalizer(self.api, claim, PVC_PROTECTION, used)


class PVProtectionController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        self.api.honour(PV_PROTECTION)
        for volume in self.api.store.list("PersistentVolume"):
            self.queue.add(volume["metadata"]["name"])
        self.api.store.watch(self._on_change, {"PersistentVolume"})

    def _on_change(self, ev: WatchEvent) -> None:
        self.queue.add(ev.obj["metadata"]["name"])

    def _sync(self, name: str) -> None:
        volume = self.api.store.get("PersistentVolume", "", name)
        if volume is not None:
            _sync_finalizer(self.api, volume, PV_PROTECTION, (volume.get("status") or {}).get("phase") == "Bound")
