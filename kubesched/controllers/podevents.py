"""Which controllers a pod's watch event wakes (the addPod/updatePod/deletePod handlers that the
ReplicaSet and DaemonSet controllers share in shape).

A pod with a controller reference wakes only that controller (and the previous one when the
reference changed, or when a terminating pod's labels changed); an orphan that appeared or whose
labels or ownership changed wakes every controller of the kind whose selector matches it, since
any of them may adopt it. A pod whose graceful termination starts counts as gone at once.
"""

from __future__ import annotations

from kubesched.api.objects import Obj, controller_of, is_pod_ready, is_terminating
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.store.base import ADDED, DELETED, Store, WatchEvent


def owners_to_sync(ev: WatchEvent, kind: str, store: Store) -> list[Obj]:
    if not store.holds(kind):
        return []  # every owner found below is one of the store's objects of `kind`
    pod, old = ev.obj, ev.old if ev.type != ADDED else None
    if ev.type == DELETED or is_terminating(pod):
        owners = [resolve(pod, kind, store)]
        if old is not None and ev.type != DELETED and _labels(old) != _labels(pod):
            owners.append(resolve(old, kind, store))
        return [o for o in owners if o is not None]
    ref, old_ref = controller_of(pod), controller_of(old) if old is not None else None
    owners = [resolve(old, kind, store)] if old is not None and old_ref is not None and old_ref != ref else []
    if ref is not None:
        owners.append(resolve(pod, kind, store))
    elif old is None or old_ref is not None or _labels(old) != _labels(pod):
        owners.extend(o for o in store.list(kind, pod["metadata"].get("namespace", "default"))
                      if selector_of(o).matches(_labels(pod)))
    return [o for o in owners if o is not None]


def became_ready(ev: WatchEvent) -> bool:
    return ev.old is not None and ev.type != DELETED and not is_pod_ready(ev.old) and is_pod_ready(ev.obj)


def resolve(pod: Obj, kind: str, store: Store) -> Obj | None:
    """resolveControllerRef: the controller of `kind` the pod's reference names, if it is that one."""
    ref = controller_of(pod)
    if ref is None or ref.get("kind") != kind:
        return None
    owner = store.get(kind, pod["metadata"].get("namespace", "default"), ref.get("name", ""))
    return owner if owner is not None and owner["metadata"].get("uid") == ref.get("uid") else None


def selector_of(obj: Obj) -> LabelSelector:
    """The object's spec.selector; an invalid one selects nothing. A ReplicationController's is a
    plain label map, which the API server defaults to the template's labels."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if obj.get("kind") == "ReplicationController":
        labels = selector or ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        selector = {"matchLabels": labels} if labels else None
    try:
        return LabelSelector.compile(selector)
    except SelectorError:
        return LabelSelector.NOTHING


def _labels(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}
