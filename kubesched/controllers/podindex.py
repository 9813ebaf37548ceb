"""The pods a workload controller looks at, indexed from the watch as an informer's indexer
would be, so a sync costs the workload's own pods (plus the namespace's orphans it might adopt)
rather than every pod in the namespace."""

from __future__ import annotations

from kubesched.api.objects import Obj, controller_of, is_terminal, is_terminating
from kubesched.store.base import ADDED, DELETED, Store, WatchEvent


class OwnerIndex:
    def __init__(self) -> None:
        self._by_owner: dict[str, dict[str, Obj]] = {}  # controller uid -> pod uid -> pod
        self._orphans: dict[str, dict[str, Obj]] = {}  # namespace -> pod uid -> pod

    def fill(self, store: Store) -> None:
        for pod in store.list("Pod"):
            self._add(pod)

    def update(self, ev: WatchEvent) -> None:
        if ev.old is not None and ev.type != ADDED:
            self._remove(ev.old)
        if ev.type != DELETED:
            self._add(ev.obj)

    def owned(self, uid: str) -> list[Obj]:
        return list(self._by_owner.get(uid, {}).values())

    def orphans(self, namespace: str) -> list[Obj]:
        return list(self._orphans.get(namespace, {}).values())

    def _bucket(self, pod: Obj) -> dict[str, Obj]:
        ref = controller_of(pod)
        if ref is not None:
            return self._by_owner.setdefault(ref.get("uid", ""), {})
        return self._orphans.setdefault(pod["metadata"].get("namespace", "default"), {})

    def _add(self, pod: Obj) -> None:
        self._bucket(pod)[pod["metadata"].get("uid", "")] = pod

    def _remove(self, pod: Obj) -> None:
        self._bucket(pod).pop(pod["metadata"].get("uid", ""), None)


def changes_what_controllers_do(ev: WatchEvent) -> bool:
    """Whether a pod event can change which pods a controller counts or owns (a pod appearing or
    going, starting to terminate, finishing, or changing labels or owner), as opposed to only the
    readiness its status reports."""
    old, pod = ev.old, ev.obj
    if ev.type in (ADDED, DELETED) or old is None:
        return True
    return (is_terminating(old) != is_terminating(pod) or is_terminal(old) != is_terminal(pod)
            or (old["metadata"].get("labels") or {}) != (pod["metadata"].get("labels") or {})
            or controller_of(old) != controller_of(pod))
