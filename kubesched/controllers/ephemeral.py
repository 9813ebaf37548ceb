"""The ephemeral volume controller (pkg/controller/volume/ephemeral): a pod's generic ephemeral
volume is a claim made from the volume's template, named `<pod>-<volume>` and owned by the pod, so
the garbage collector deletes it with the pod. A claim of that name the pod does not own is left
alone; the scheduler then reports that it was not created for the pod.
"""

from __future__ import annotations

from kubesched.api.objects import Obj, deep_copy, is_terminating
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent

SOURCE = "ephemeral_volume"


class EphemeralVolumeController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        for pod in self.api.store.list("Pod"):
            self._on_pod(WatchEvent("ADDED", "Pod", pod, None))
        self.api.store.watch(self._on_pod, {"Pod"})

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        volumes = (pod.get("spec") or {}).get("volumes")
        if volumes and ev.type != DELETED and not is_terminating(pod) and any(
                v.get("ephemeral") is not None for v in volumes):
            self.queue.add((pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]))

    def _sync(self, key: tuple[str, str]) -> None:
        pod = self.api.store.get("Pod", *key)
        if pod is None or is_terminating(pod):
            return
        for vol in (pod.get("spec") or {}).get("volumes") or ():
            if vol.get("ephemeral") is not None:
                self._claim(pod, vol)

    def _claim(self, pod: Obj, vol: Obj) -> None:
        meta = pod["metadata"]
        name = f"{meta['name']}-{vol.get('name', '')}"
        if self.api.store.get("PersistentVolumeClaim", meta.get("namespace", "default"), name) is not None:
            return
        template = deep_copy(vol["ephemeral"].get("volumeClaimTemplate") or {})
        claim_meta = {k: v for k, v in (template.get("metadata") or {}).items() if k in ("labels", "annotations")}
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {**claim_meta, "name": name, "namespace": meta.get("namespace", "default"),
                              "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                                   "uid": meta.get("uid"), "controller": True,
                                                   "blockOwnerDeletion": True}]},
                 "spec": template.get("spec") or {}}
        try:
            self.api.create(claim)
        except APIError as e:
            self.api.record_event(pod, "Warning", "FailedCreate", f"create PVC {name}: {e.message}", source=SOURCE)
