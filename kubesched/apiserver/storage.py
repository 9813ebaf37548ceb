"""Defaulting of the storage kinds and the DefaultStorageClass admission plugin.

What the API server fills in on create decides what the scheduler and the PV controller see: a
class binds Immediately and deletes its volumes unless it says otherwise, a volume is retained, a
claim without a class gets the cluster's default class. A given status is kept, so a snapshot's
bound claims and volumes stay bound (upstream resets it on create; the controllers then restore it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.objects import Obj, parse_time
from kubesched.api.storage import ANN_BETA_DEFAULT_CLASS, ANN_BETA_STORAGE_CLASS, ANN_DEFAULT_CLASS, IMMEDIATE

if TYPE_CHECKING:
    from kubesched.store.base import Store

STORAGE_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSIDriver"})
CSI_DRIVER_DEFAULTS = {"attachRequired": True, "podInfoOnMount": False, "requiresRepublish": False,
                       "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", "seLinuxMount": False}


def default_class(store: Store) -> Obj | None:
    """GetDefaultClass: of the classes annotated as default, the newest, then the first by name."""
    defaults = [sc for sc in store.list("StorageClass")
                if "true" in ((sc["metadata"].get("annotations") or {}).get(k) for k in (ANN_DEFAULT_CLASS,
                                                                                          ANN_BETA_DEFAULT_CLASS))]
    if not defaults:
        return None

    def newest_first(sc: Obj) -> tuple[float, str]:
        stamp = sc["metadata"].get("creationTimestamp")
        return (-parse_time(stamp).timestamp() if stamp else 0.0, sc["metadata"]["name"])

    return min(defaults, key=newest_first)


def default_storage(obj: Obj, store: Store) -> None:
    """SetDefaults for the storage kinds, then DefaultStorageClass for a claim naming no class."""
    kind = obj["kind"]
    if kind == "StorageClass":
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", IMMEDIATE)
    elif kind == "CSIDriver":
        spec = obj.setdefault("spec", {})
        for key, value in CSI_DRIVER_DEFAULTS.items():
            spec.setdefault(key, value)
        spec.setdefault("volumeLifecycleModes", ["Persistent"])
    elif kind in ("PersistentVolume", "PersistentVolumeClaim"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("volumeMode", "Filesystem")
        if kind == "PersistentVolume":
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        annotations = obj["metadata"].get("annotations") or {}
        if kind == "PersistentVolumeClaim" and spec.get("storageClassName") is None \
                and ANN_BETA_STORAGE_CLASS not in annotations:
            sc = default_class(store)
            if sc is not None:
                spec["storageClassName"] = sc["metadata"]["name"]
