"""Scheduler cache: NodeInfos plus a compact column store of their totals.

Every node has a slot; the arrays below hold, per slot, what the hot filters and scorers need
(allocatable, requested, non-zero requested, flags), kept up to date incrementally as pods
and nodes change. Plugins read either the NodeInfo (one node) or the arrays (many at once);
both always agree because both are updated by the same two methods.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.nodetree import NodeTree
from kubesched.api.objects import Obj
from kubesched.scheduler.types import CPU, EPHEMERAL, MEMORY, PODS, NodeInfo, PodInfo

BASE_COLUMNS = (CPU, MEMORY, EPHEMERAL, PODS)
INT64_MAX = 2**63 - 1
DERIVED_KEPT = 64  # alloc_derived arrays kept at most (one per pod shape, say)


@dataclass(frozen=True)
class NodeFlag:
    """A per-node yes/no a plugin asks the table to keep (say, "has a NoSchedule taint"), so that
    its vectorised filter looks only at flagged nodes and skips the cycle when none is."""

    name: str
    of: Callable[[NodeInfo], bool]
    with_pods: bool = False  # depends on the node's pods (host ports in use): set with its usage


class NodeTable:
    """Per-slot arrays; columns grow when a new (extended) resource name appears."""

    def __init__(self, capacity: int = 64) -> None:
        self.columns: dict[str, int] = {name: i for i, name in enumerate(BASE_COLUMNS)}
        self.alloc = np.zeros((capacity, len(BASE_COLUMNS)), dtype=np.int64)
        self.req = np.zeros_like(self.alloc)
        self.nonzero = np.zeros((capacity, 2), dtype=np.int64)
        # The flags plugins registered (NodeFlag), per slot, and how many slots have each set: a
        # cycle learns that no node is cordoned or tainted without looking at any row.
        self.flags: dict[str, np.ndarray] = {}
        self.flag_defs: dict[str, NodeFlag] = {}
        self._pod_flags: list[NodeFlag] = []  # those of flag_defs set with a node's usage
        self.flagged: dict[str, int] = {}
        self.used = 0  # slots below this have been handed out
        self.freed: list[int] = []  # slots below `used` whose node was removed, the latest last
        self._own_alloc = self.alloc  # the table's own `alloc`; a view of some rows has another
        self._alloc_floor: tuple[np.ndarray, list[int]] | None = None  # (`alloc`, its floor)
        # The same numbers laid out a row per column ((columns, slots)), written with the rows:
        # filters and scorers gather a few resources for many slots, and numpy runs an (n, k)
        # block with small k as n short loops. {name: (the row-major array mirrored, its mirror)}
        self._mirrors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._mirror_all()
        self._derived: dict[Hashable, np.ndarray] = {}  # alloc_derived's, for the own `alloc`
        self._req_ceiling: list[int] | None = None  # see req_ceiling

    def add_flag(self, flag: NodeFlag) -> bool:
        """Keep `flag` from now on; False if it is kept already (the caller sets existing rows)."""
        if flag.name in self.flag_defs:
            return False
        self.flag_defs[flag.name] = flag
        if flag.with_pods:
            self._pod_flags.append(flag)
        self.flags[flag.name] = np.zeros(self.alloc.shape[0], dtype=bool)
        self.flagged[flag.name] = 0
        return True

    def set_flag(self, name: str, slot: int, value: bool) -> None:
        flags = self.flags[name]
        if flags.item(slot) != value:  # item(): a Python bool, not a numpy scalar to compare
            flags[slot] = value
            self.flagged[name] += 1 if value else -1

    def _mirror_all(self) -> None:
        """Mirror the own arrays afresh (a new dict: views copied from the table keep the old)."""
        self._mirrors = {name: (rows, np.ascontiguousarray(rows.T))
                         for name, rows in (("alloc", self.alloc), ("req", self.req), ("nonzero", self.nonzero))}
        self._derived = {}
        self._req_ceiling = None

    def by_column(self, name: str) -> np.ndarray:
        """`alloc`, `req` or `nonzero` as (columns, slots). A view whose arrays are not the table's
        own (preemption's and nomination's what-ifs) gets a fresh copy each call."""
        rows = getattr(self, name)
        mirrored, mirror = self._mirrors[name]
        return mirror if mirrored is rows else np.ascontiguousarray(rows.T)

    def with_requested(self, req: np.ndarray) -> NodeTable:
        """A copy of the table whose requested totals are `req` (a what-if: nominated pods counted
        on their nodes), mirrored once here rather than by every filter call that reads it."""
        view = copy.copy(self)
        view.req = req
        view._mirrors = {**self._mirrors, "req": (req, np.ascontiguousarray(req.T))}
        view._req_ceiling = None
        return view

    def alloc_derived(self, key: Hashable, make: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """`make(alloc by column)`: a per-slot array that depends on allocatable alone, kept (per
        `key`) until some node's allocatable changes."""
        if self.alloc is not self._own_alloc:
            return make(self.by_column("alloc"))
        known = self._derived.get(key)
        if known is None:
            if len(self._derived) >= DERIVED_KEPT:
                self._derived.clear()
            known = self._derived[key] = make(self.by_column("alloc"))
        return known

    def req_ceiling(self) -> list[int]:
        """Per column, at least the most any node has requested: raised as pods come, never lowered
        as they go, so that allocatable's floor minus it is room every node has for certain."""
        if self.req is not self._mirrors["req"][0]:  # a what-if view
            return self.req.max(axis=0).tolist() if len(self.req) else [0] * len(self.columns)
        if self._req_ceiling is None:
            self._req_ceiling = self._mirrors["req"][1].max(axis=1).tolist()
        return self._req_ceiling

    def new_slot(self) -> int:
        """A slot for a new node: the one freed last, else the next never used."""
        return self.freed.pop() if self.freed else self.used

    def alloc_floor(self) -> list[int]:
        """Per column, the least allocatable of any node in `alloc`: a pod asking for no more
        fits every node's allocatable, which then need not be looked at."""
        known = self._alloc_floor
        if known is None or known[0] is not self.alloc:
            rows = self.alloc  # a view of chosen rows (preemption's what-ifs) holds nodes' rows only
            if rows is self._own_alloc:
                rows = rows[:self.used]
                if self.freed:
                    rows = np.delete(rows, sorted(self.freed), axis=0)
            floor = rows.min(axis=0).tolist() if len(rows) else [0] * rows.shape[1]
            known = self._alloc_floor = (self.alloc, floor)
        return known[1]

    def column(self, name: str) -> int:
        col = self.columns.get(name)
        if col is None:
            col = self.columns[name] = len(self.columns)
            pad = np.zeros((self.alloc.shape[0], 1), dtype=np.int64)
            self.alloc = np.hstack([self.alloc, pad])
            self.req = np.hstack([self.req, pad])
            self._own_alloc = self.alloc
            self._alloc_floor = None
            self._mirror_all()
        return col

    def ensure(self, slot: int) -> None:
        size = self.alloc.shape[0]
        if slot < size:
            return
        new = max(size * 2, slot + 1)
        for attr in ("alloc", "req", "nonzero"):
            setattr(self, attr, _grown(getattr(self, attr), new))
        for name, flags in self.flags.items():
            self.flags[name] = _grown(flags, new)
        self._own_alloc = self.alloc
        self._mirror_all()

    def set_node(self, ni: NodeInfo) -> None:
        s = ni.slot
        self.ensure(s)
        self.used = max(self.used, s + 1)
        self._alloc_floor = None
        self._derived = {}
        row = [0] * len(self.columns)
        for name, amount in ni.allocatable.items():
            col = self.column(name)  # may grow the arrays, so look them up afterwards
            if col >= len(row):
                row += [0] * (col + 1 - len(row))
            row[col] = amount
        self.alloc[s] = row
        self._mirrors["alloc"][1][:, s] = row
        for flag in self.flag_defs.values():
            if not flag.with_pods:
                self.set_flag(flag.name, s, flag.of(ni))
        self.set_usage(ni)

    def set_usage(self, ni: NodeInfo) -> None:
        s = ni.slot
        # A node's pods may sum past int64 (Go wraps); column() may grow the arrays.
        columns = self.columns
        cells = [(columns[name] if name in columns else self.column(name), min(amount, INT64_MAX))
                 for name, amount in ni.requested.items()]
        row = [0] * len(columns)  # written to the array at once: an item at a time costs more
        for col, amount in cells:
            row[col] = amount
        row[columns[PODS]] = len(ni.pods)
        self.req[s] = row
        self._mirrors["req"][1][:, s] = row
        ceiling = self._req_ceiling
        if ceiling is not None:
            for col, amount in enumerate(row):
                if amount > ceiling[col]:
                    ceiling[col] = amount
        cpu, memory = min(ni.nonzero_cpu, INT64_MAX), min(ni.nonzero_memory, INT64_MAX)
        self.nonzero[s] = cpu, memory
        nonzero = self._mirrors["nonzero"][1]
        nonzero[0, s] = cpu
        nonzero[1, s] = memory
        for flag in self._pod_flags:
            self.set_flag(flag.name, s, flag.of(ni))

    def clear(self, slot: int) -> None:
        self.freed.append(slot)
        self._alloc_floor = None
        self._derived = {}
        for name in ("alloc", "req", "nonzero"):
            getattr(self, name)[slot] = 0
            self._mirrors[name][1][:, slot] = 0
        for name in self.flagged:
            self.set_flag(name, slot, False)


def _grown(old: np.ndarray, size: int) -> np.ndarray:
    grown = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
    grown[:len(old)] = old
    return grown


@dataclass
class ImageState:
    """One image across the cluster (cacheImpl.imageStates): the size the first node to report it
    gave, and the nodes that have it now."""

    size: int
    nodes: set[str] = field(default_factory=set)


class Cache:
    """Nodes and the pods assigned to them, as the scheduler believes them to be."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.table = NodeTable()
        self.tree = NodeTree()
        self._pod_node: dict[str, str] = {}  # uid -> node name
        self._orphans: dict[str, dict[str, PodInfo]] = {}  # pods on nodes not (yet) known
        self._order: list[NodeInfo] | None = None
        self._order_slots: np.ndarray | None = None
        self._order_array: tuple[list[NodeInfo], np.ndarray] | None = None  # _order as an object array
        self.image_states: dict[str, ImageState] = {}  # image name as nodes report it -> its state
        self._stale: set[str] = set()  # nodes changed since the last snapshot (their image summaries)
        self.generation = 0  # bumped on every change; lets plugins cache per-snapshot data
        # Told the name of every node whose labels or pods changed (added/removed nodes too), so
        # plugins can keep indexes up to date incrementally (InterPodAffinity).
        self.listeners: list[Callable[[str], None]] = []
        # "namespace/claim" -> how many of the cached pods use it (the snapshot's usedPVCSet).
        self.claim_users: dict[str, int] = {}
        # How many pods on known nodes have pod (anti-)affinity, and required anti-affinity: while
        # none do, InterPodAffinity has nothing to check a pod without terms of its own against.
        self.affinity_pods = 0
        self.anti_affinity_pods = 0

    def register_flag(self, flag: NodeFlag) -> None:
        """Have the table keep `flag` for every node, the ones known already included."""
        if self.table.add_flag(flag):
            for ni in self.nodes.values():
                self.table.set_flag(flag.name, ni.slot, flag.of(ni))

    # ---- nodes -------------------------------------------------------------------------------

    def add_node(self, node: Obj) -> NodeInfo:
        name = node["metadata"]["name"]
        if name in self.nodes:
            return self.update_node(node)
        ni = NodeInfo.of(node, self.table.new_slot())
        self.nodes[name] = ni
        self.tree.add(node)
        self._add_images(ni)
        for pod in self._orphans.pop(name, {}).values():
            ni.add_pod(pod)
            self._count_affinity(pod, 1)
        self.table.set_node(ni)
        self._order = None
        self.generation += 1
        self._touched(name)
        return ni

    def update_node(self, node: Obj) -> NodeInfo:
        name = node["metadata"]["name"]
        old = self.nodes[name]
        ni = NodeInfo.of(node, old.slot)
        ni.pods, ni.requested, ni.used_ports = old.pods, old.requested, old.used_ports
        ni.pods_with_affinity = old.pods_with_affinity
        ni.pods_with_required_anti_affinity = old.pods_with_required_anti_affinity
        ni.nonzero_cpu, ni.nonzero_memory = old.nonzero_cpu, old.nonzero_memory
        self._remove_images(old)
        self._add_images(ni)
        self.nodes[name] = ni
        # The tree follows a zone change at once, but like upstream's snapshot the iteration list
        # is rebuilt from it only when a node is added or removed.
        self.tree.update(old.obj, node)
        if self._order is not None:
            self._order = [self.nodes[n.name] for n in self._order]
        self.table.set_node(ni)
        self.generation += 1
        self._touched(name)
        return ni

    def remove_node(self, name: str) -> None:
        ni = self.nodes.pop(name, None)
        if ni is None:
            return
        self.tree.remove(name)
        self._remove_images(ni)
        if ni.pods:  # pods still bound to a deleted node wait for it (or their own deletion)
            self._orphans[name] = dict(ni.pods)
            self.affinity_pods -= len(ni.pods_with_affinity)
            self.anti_affinity_pods -= len(ni.pods_with_required_anti_affinity)
        self.table.clear(ni.slot)
        self._order = None
        self.generation += 1
        self._touched(name)

    def _touched(self, name: str) -> None:
        self._stale.add(name)
        for listener in self.listeners:
            listener(name)

    def _add_images(self, ni: NodeInfo) -> None:
        for image, size in ni.images.items():
            state = self.image_states.get(image)
            if state is None:
                state = self.image_states[image] = ImageState(size)
            state.nodes.add(ni.name)

    def _remove_images(self, ni: NodeInfo) -> None:
        for image in ni.images:
            state = self.image_states.get(image)
            if state is not None:
                state.nodes.discard(ni.name)
                if not state.nodes:
                    del self.image_states[image]

    def ordered(self) -> tuple[list[NodeInfo], np.ndarray]:
        """Nodes in scheduling iteration order, and their slots as an array: the snapshot a
        scheduling cycle works on.

        Like UpdateSnapshot, taking it refreshes the image summaries (size, number of nodes) of
        the nodes changed since the previous one only; a node left alone keeps the count it saw
        then, which ImageLocality scores with, as upstream does."""
        if self._stale:
            for name in self._stale:
                ni = self.nodes.get(name)
                if ni is not None and ni.images:
                    ni.image_states = {image: (self.image_states[image].size, len(self.image_states[image].nodes))
                                       for image in ni.images}
            self._stale.clear()
        if self._order is None:
            self._order = [self.nodes[n] for n in self.tree.ordered()]
            self._order_slots = np.fromiter((n.slot for n in self._order), dtype=np.int64,
                                            count=len(self._order))
        assert self._order_slots is not None
        return self._order, self._order_slots

    def ordered_array(self, nodes: list[NodeInfo]) -> np.ndarray | None:
        """`nodes` as an object array, if they are the current snapshot's (see `ordered`), so
        that many can be picked at once; None for any other list."""
        if nodes is not self._order:
            return None
        known = self._order_array
        if known is None or known[0] is not nodes:
            array = np.empty(len(nodes), dtype=object)
            array[:] = nodes
            known = self._order_array = (nodes, array)
        return known[1]

    # ---- pods --------------------------------------------------------------------------------

    def node_of(self, uid: str) -> str | None:
        return self._pod_node.get(uid)

    def pod_info(self, uid: str) -> PodInfo | None:
        node_name = self._pod_node.get(uid)
        if node_name is None:
            return None
        ni = self.nodes.get(node_name)
        return ni.pods.get(uid) if ni is not None else self._orphans.get(node_name, {}).get(uid)

    def add_pod(self, pod: PodInfo, node_name: str) -> None:
        """Account `pod` on `node_name` (bound, or assumed by this scheduler)."""
        if pod.uid in self._pod_node:
            self.remove_pod(pod.uid)
        self._pod_node[pod.uid] = node_name
        self._count_claims(pod, 1)
        ni = self.nodes.get(node_name)
        if ni is None:
            self._orphans.setdefault(node_name, {})[pod.uid] = pod
            return
        ni.add_pod(pod)
        self._count_affinity(pod, 1)
        self.table.set_usage(ni)
        self.generation += 1
        self._touched(node_name)

    def _count_affinity(self, pod: PodInfo, sign: int) -> None:
        if pod.has_pod_affinity:
            self.affinity_pods += sign
            if pod.has_required_anti_affinity:
                self.anti_affinity_pods += sign

    def _count_claims(self, pod: PodInfo, sign: int) -> None:
        for claim in pod.claims:
            key = f"{pod.namespace}/{claim}"
            count = self.claim_users.get(key, 0) + sign
            if count > 0:
                self.claim_users[key] = count
            else:
                self.claim_users.pop(key, None)

    def remove_pod(self, uid: str) -> PodInfo | None:
        node_name = self._pod_node.pop(uid, None)
        if node_name is None:
            return None
        ni = self.nodes.get(node_name)
        if ni is None:
            orphan = self._orphans.get(node_name, {}).pop(uid, None)
            if orphan is not None:
                self._count_claims(orphan, -1)
            return orphan
        pod = ni.pods.get(uid)
        if pod is not None:
            self._count_claims(pod, -1)
            order = list(ni.pods)
            ni.add_pod(pod, -1)
            self._count_affinity(pod, -1)
            hole = order.index(uid)
            if hole < len(order) - 1:
                # NodeInfo.RemovePod moves the node's last pod into the hole; the order of a node's
                # pods is the order preemption considers them in.
                order[hole] = order.pop()
                pods = {k: ni.pods[k] for k in order}
                ni.pods.clear()
                ni.pods.update(pods)
            self.table.set_usage(ni)
            self.generation += 1
            self._touched(node_name)
        return pod
