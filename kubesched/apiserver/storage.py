"""The DefaultStorageClass admission plugin, and the storage kinds' defaults it goes with.

What the API server fills in on create decides what the scheduler and the PV controller see: a
class binds Immediately and deletes its volumes unless it says otherwise, a volume is retained, a
claim without a class gets the cluster's default class. A given status is kept, so a snapshot's
bound claims and volumes stay bound (upstream resets it on create; the controllers then restore it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.objects import Obj, parse_time
from kubesched.api.storage import ANN_BETA_DEFAULT_CLASS, ANN_BETA_STORAGE_CLASS, ANN_DEFAULT_CLASS

if TYPE_CHECKING:
    from kubesched.store.base import Store

STORAGE_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSIDriver"})


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


def default_storage_class(obj: Obj, store: Store) -> None:
    """DefaultStorageClass: a claim naming no class (neither field nor beta annotation) gets
    the cluster's default class. The storage kinds' scheme defaults are apiserver.defaults'."""
    spec = obj.get("spec") or {}
    annotations = obj["metadata"].get("annotations") or {}
    if obj["kind"] == "PersistentVolumeClaim" and spec.get("storageClassName") is None \
            and ANN_BETA_STORAGE_CLASS not in annotations:
        sc = default_class(store)
        if sc is not None:
            obj["spec"]["storageClassName"] = sc["metadata"]["name"]
