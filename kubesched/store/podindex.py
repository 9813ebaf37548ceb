"""The pods a workload controller looks at, indexed from the watch as an informer's indexer
would be, so a sync costs the workload's own pods (plus the namespace's orphans it might adopt)
rather than every pod in the namespace; and pods by node, for the node controllers."""

from __future__ import annotations

from kubesched.api.objects import Obj, controller_of, is_terminal, is_terminating
from kubesched.store.base import ADDED, DELETED, MODIFIED, Store, WatchEvent


class OwnerIndex:
    def __init__(self) -> None:
        self._by_owner: dict[str, dict[str, Obj]] = {}  # controller uid -> pod uid -> pod
        self._orphans: dict[str, dict[str, Obj]] = {}  # namespace -> pod uid -> pod

    def fill(self, store: Store) -> None:
        for pod in store.list("Pod"):
            self._add(pod)

    def update(self, ev: WatchEvent) -> None:
        old, pod = ev.old, ev.obj
        if same_owner_references(ev):  # a status write: the same bucket, found once
            bucket = self._bucket(pod)
            bucket.pop(old["metadata"].get("uid", ""), None)
            bucket[pod["metadata"].get("uid", "")] = pod
            return
        if old is not None and ev.type != ADDED:
            self._remove(old)
        if ev.type != DELETED:
            self._add(pod)

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


class PodIndexes:
    """The pod indexes of one store that its components share, as they would share an informer's
    indexers: built by the composition root and handed to each component that reads one. An index
    is filled and registers its watch when the first component asks for it (from its start()),
    before that component's own watch, so it is current whenever a component hears of a pod."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._by_owner: OwnerIndex | None = None
        self._by_node: PodsByNode | None = None

    def by_owner(self) -> OwnerIndex:
        """The store's pods by controller, which every pod-owning controller reads."""
        if self._by_owner is None:
            self._by_owner = OwnerIndex()
            self._by_owner.fill(self._store)
            self._store.watch(self._by_owner.update, {"Pod"})
        return self._by_owner

    def by_node(self) -> PodsByNode:
        """The store's pods by node, which the node controllers and the descheduler read."""
        if self._by_node is None:
            self._by_node = PodsByNode(self._store)
            self._by_node.start()
        return self._by_node


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


PodKey = tuple[str, str]  # namespace, name


def same_owner_references(ev: WatchEvent) -> bool:
    """An update that kept the very same ownerReferences (a status write shares them with the
    version before): whoever indexes objects by owner has nothing to relink."""
    return ev.type == MODIFIED and ev.old is not None \
        and ev.old["metadata"].get("ownerReferences") is ev.obj["metadata"].get("ownerReferences")


def object_key(obj: Obj) -> PodKey:
    """(namespace, name): how controllers key their work queues and indexes."""
    return obj["metadata"].get("namespace", "default"), obj["metadata"]["name"]


class PodsByNode:
    """Pods by spec.nodeName, kept from watch events (the informers' spec.nodeName index), so a
    node's pods are found without scanning every pod in the cluster. The controllers that read it
    share one per store (`PodIndexes.by_node`), as they share an informer's indexer."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._on_node: dict[str, dict[PodKey, None]] = {}
        self._node_of: dict[PodKey, str] = {}

    def start(self) -> None:
        for pod in self._store.list("Pod"):
            self._place(object_key(pod), pod["spec"].get("nodeName"))
        self._store.watch(self._on_pod, {"Pod"})

    def _on_pod(self, ev: WatchEvent) -> None:
        key = object_key(ev.obj)
        node = None if ev.type == DELETED else ev.obj["spec"].get("nodeName")
        if self._node_of.get(key) != node:  # most writes (status) leave a pod where it was
            self._place(key, node)

    def _place(self, key: PodKey, node: str | None) -> None:
        old = self._node_of.get(key)
        if old == node:
            return
        if old is not None:
            keys = self._on_node[old]
            del keys[key]
            if not keys:
                del self._on_node[old]
            del self._node_of[key]
        if node:
            self._on_node.setdefault(node, {})[key] = None
            self._node_of[key] = node

    def pods(self, node: str) -> list[Obj]:
        found = (self._store.get("Pod", ns, name) for ns, name in self._on_node.get(node, ()))
        return [p for p in found if p is not None]
