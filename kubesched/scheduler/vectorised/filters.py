"""The filter phase, vectorised: the walk over nodes that findNodesThatPassFilters makes, done in
chunks over the cache's arrays, and the record of which node failed with which Status.

It sits beside the framework rather than inside it so that framework.py reads as upstream's
interfaces and runtime; the equivalence with checking nodes one by one, in iteration order, is
the contract (tests/test_properties.py compares the two).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from kubesched.scheduler.nominator import AllNominated
from kubesched.scheduler.types import PODS, NodeInfo, PodInfo, Status

if TYPE_CHECKING:
    from kubesched.scheduler.cache import NodeTable
    from kubesched.scheduler.framework import CycleState, FilterPlugin, Handle, Profile


def reject_flagged(flags: np.ndarray, nodes: Sequence[NodeInfo], positions: np.ndarray,
                   rejects: Callable[[NodeInfo], bool]) -> np.ndarray:
    """Filter codes where only flagged nodes (say, those with any taint) need a per-node look."""
    codes = np.zeros(len(positions), dtype=np.int64)
    for k in np.flatnonzero(flags):
        if rejects(nodes[positions[k]]):
            codes[k] = 1
    return codes


class Picked(Sequence[NodeInfo]):
    """The feasible nodes: `nodes` at `positions`. Most cycles read only how many there are and
    the winner, so the list is made only when something walks or slices it."""

    __slots__ = ("_nodes", "_positions", "_start", "_array", "_list")

    def __init__(self, nodes: list[NodeInfo], positions: np.ndarray, start: int, array: np.ndarray | None) -> None:
        self._nodes, self._positions, self._start, self._array = nodes, positions, start, array
        self._list: list[NodeInfo] | None = None

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.as_list()[i]
        return self._nodes[int(self._positions[i])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.as_list())

    def as_list(self) -> list[NodeInfo]:
        if self._list is None:
            self._list = _pick(self._nodes, self._positions, self._start, self._array)
        return self._list


def _pick(nodes: list[NodeInfo], positions: np.ndarray, start: int, array: np.ndarray | None = None
          ) -> list[NodeInfo]:
    """`nodes` at `positions` (walk order from `start`). Usually they are one unbroken stretch of
    the walk (every node fits), which two slices copy far faster than indexing each; else
    `array`, `nodes` as an object array when there is one, gathers them."""
    count = len(positions)
    if count:
        n = len(nodes)
        first = int(positions[0])
        if (int(positions[-1]) - start) % n - (first - start) % n == count - 1:
            if first + count <= n:
                return nodes[first:first + count]
            return nodes[first:] + nodes[:first + count - n]
    if array is not None:
        return array.take(positions).tolist()
    return [nodes[i] for i in positions.tolist()]


@dataclass
class _Undecoded:
    """A vectorised filter's failure codes, decoded into Statuses only if something reads them: a
    pod that is placed never does, however many nodes failed on the way."""

    plugin: FilterPlugin
    state: CycleState
    codes: np.ndarray

    def __getitem__(self, which: np.ndarray | slice) -> _Undecoded:
        return _Undecoded(self.plugin, self.state, self.codes[which])


def _intern_codes(pl: FilterPlugin, state: CycleState, codes: np.ndarray, statuses: NodeStatuses) -> np.ndarray:
    """Per code, the index in `statuses` of the Status it decodes to; distinct codes are decoded
    and interned once each, in increasing order."""
    first = codes[0]
    if (codes == first).all():  # often a pod fails everywhere for one reason
        return np.full(len(codes), statuses.intern(pl.decode(state, int(first))), dtype=np.int64)
    ordered = np.sort(codes)
    distinct = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    lookup = np.array([statuses.intern(pl.decode(state, code)) for code in distinct.tolist()], dtype=np.int64)
    return lookup[np.searchsorted(distinct, codes)]


class NodeStatuses(Mapping[str, Status]):
    """Each filtered-out node's first failing Status, in the order they were found.

    A pod that fits nowhere fails on every node, nearly all alike (nodes failing alike share one
    Status): the verdicts are kept as node positions with indices into the distinct Statuses, so
    that counting reasons, finding the rejecting plugins and the nodes preemption might help cost
    per distinct Status, not per node. The name -> Status dict is built only when something asks
    for single nodes (decision records, a nominated node), and a vectorised filter's codes are
    decoded only when something reads the Statuses at all (a pod that fits nowhere)."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes  # what the positions index
        self._distinct: list[Status] = []
        self._index: dict[int, int] = {}  # id(status) -> its index in `distinct`
        self._positions: list[np.ndarray] = []
        self._which: list[np.ndarray | _Undecoded] = []
        self._undecoded = False
        self._count = 0
        self._extra: dict[str, Status] = {}  # added by name, after the rest
        self._dict: dict[str, Status] | None = None

    @property
    def distinct(self) -> list[Status]:
        self._decode()
        return self._distinct

    def intern(self, status: Status) -> int:
        i = self._index.get(id(status))
        if i is None:
            i = self._index[id(status)] = len(self._distinct)
            self._distinct.append(status)
        return i

    def add_many(self, positions: np.ndarray, which: np.ndarray | _Undecoded) -> None:
        """The nodes at `positions` failed with `distinct[which]`, or with what a filter's codes
        decode to."""
        if len(positions):
            self._positions.append(positions)
            self._which.append(which)
            self._undecoded = self._undecoded or isinstance(which, _Undecoded)
            self._count += len(positions)
            self._dict = None

    def _decode(self) -> list[np.ndarray]:
        """Decode and intern the codes not read yet, in the order they came; the decoded list."""
        if self._undecoded:
            self._undecoded = False
            self._which = [_intern_codes(w.plugin, w.state, w.codes, self) if isinstance(w, _Undecoded) else w
                           for w in self._which]
        return cast("list[np.ndarray]", self._which)

    def __setitem__(self, name: str, status: Status) -> None:
        self.intern(status)
        self._extra[name] = status
        self._dict = None

    def counts(self) -> list[tuple[Status, int]]:
        """Each distinct Status with how many nodes failed with it."""
        decoded = self._decode()
        per = np.bincount(np.concatenate(decoded), minlength=len(self.distinct)).tolist() if decoded \
            else [0] * len(self.distinct)
        for st in self._extra.values():
            per[self._index[id(st)]] += 1
        return [(st, n) for st, n in zip(self._distinct, per, strict=True) if n]

    def first(self) -> Status | None:
        """The Status of the first node filtered out."""
        if self._which:
            return self._distinct[int(self._decode()[0][0])]
        return next(iter(self._extra.values()), None)

    def which_at(self) -> np.ndarray:
        """Per position in `nodes`, the index of its Status in `distinct` (-1: not filtered out)."""
        out = np.full(len(self.nodes), -1, dtype=np.int64)
        for positions, which in zip(self._positions, self._decode(), strict=True):
            out[positions] = which
        if self._extra:
            at = {ni.name: i for i, ni in enumerate(self.nodes)}
            for name, st in self._extra.items():
                if name in at:
                    out[at[name]] = self._index[id(st)]
        return out

    def _as_dict(self) -> dict[str, Status]:
        if self._dict is None:
            nodes, distinct = self.nodes, self.distinct  # decoded
            self._dict = {nodes[i].name: distinct[k] for positions, which in zip(self._positions, self._decode(),
                                                                                    strict=True)
                          for i, k in zip(positions.tolist(), which.tolist(), strict=True)}
            self._dict.update(self._extra)
        return self._dict

    def __getitem__(self, name: str) -> Status:
        return self._as_dict()[name]

    def get(self, name: Any, default: Any = None) -> Any:
        if name is None or name in self._extra:
            return self._extra.get(name, default)
        return self._as_dict().get(name, default) if self._count else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return self._count + len(self._extra)


@dataclass(slots=True)
class FilterOutcome:
    """Result of the filter phase over the nodes processed in iteration order."""

    statuses: NodeStatuses  # failing node -> first failing status
    feasible: Sequence[NodeInfo]
    positions: np.ndarray  # of `feasible`, in the node list
    processed: int


def _filter_chain(filters: list[Any], state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                  chunk: np.ndarray, live: np.ndarray | None, node_slots: np.ndarray, table: Any,
                  statuses: NodeStatuses, failed: list[tuple[np.ndarray, np.ndarray | _Undecoded]]
                  ) -> np.ndarray | None:
    """Run the filters over the `live` offsets of `chunk` (None: all of it), whose slots are
    `node_slots`; return the offsets that pass every filter (None: all of the chunk). Failing
    offsets are appended to `failed` with their Statuses (indices in `statuses`, or codes yet
    to decode), in the order they failed."""
    positions = chunk if live is None else chunk[live]
    last = len(filters) - 1
    for at, pl in enumerate(filters):
        if not len(positions):
            break
        codes = pl.filter_many(state, pod, nodes, positions, node_slots, table)
        if codes is None:
            offsets, which = [], []
            for k, i in enumerate(positions.tolist()):
                st = pl.filter(state, pod, nodes[i])
                if not st.ok:
                    offsets.append(k)
                    which.append(statuses.intern(st if st.plugin else Status(st.code, st.reasons, pl.name)))
            if not offsets:
                continue
            bad = np.array(offsets, dtype=np.int64)
            lookup: np.ndarray | _Undecoded = np.array(which, dtype=np.int64)
            kept = np.ones(len(positions), dtype=bool)
            kept[bad] = False
        else:
            # A pod that never fits fails on most nodes: each distinct code is decoded once, if
            # the Statuses are read.
            bad = np.flatnonzero(codes)
            if not len(bad):
                continue
            lookup = _Undecoded(pl, state, codes[bad])
            kept = codes == 0
        failed.append((bad if live is None else live[bad], lookup))
        live = np.flatnonzero(kept) if live is None else live[kept]
        if at < last:  # the next filters see only the nodes that passed this one
            positions, node_slots = positions[kept], node_slots[kept]
    return live

def _with_nominated_requests(handle: Handle, table: NodeTable, nominated: dict[str, list[PodInfo]]) -> Any:
    """A view of `table` in which nominated pods' requests already count on their nodes."""
    req = table.req.copy()
    pods_col = table.columns[PODS]
    for name, pods in nominated.items():
        slot = handle.cache.nodes[name].slot
        for other in pods:
            req[slot, pods_col] += 1
            for res, amount in other.requests.items():
                col = table.columns.get(res)
                if col is not None:
                    req[slot, col] += amount
    return table.with_requested(req)

def _with_all_nominated(handle: Handle, table: NodeTable, excluded: PodInfo | None) -> tuple[Any, np.ndarray]:
    """`_with_nominated_requests` for every nominated pod but `excluded`, from the sums the
    nominator keeps; also which slots have any of those pods."""
    nominator, nodes = handle.nominator, handle.cache.nodes
    pods_col = table.columns[PODS]
    nominator.delta.refresh(nominator, table, nodes, pods_col)
    delta, count = nominator.delta.req, nominator.delta.count
    assert delta is not None and count is not None
    req = table.req + delta
    own = nominator.node_of(excluded.uid) if excluded is not None else None
    if excluded is None or own is None or own not in nodes:
        return table.with_requested(req), count > 0
    slot = nodes[own].slot
    req[slot, pods_col] -= 1
    for res, amount in nominator.nominated_pod(excluded.uid).requests.items():
        col = table.columns.get(res)
        if col is not None:
            req[slot, col] -= amount
    has = count > 0
    has[slot] = count[slot] > 1
    return table.with_requested(req), has

def find_feasible(profile: Profile, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                  table: NodeTable, start: int, want: int,
                  nominated: dict[str, list[PodInfo]] | None = None) -> FilterOutcome:
    """Walk `nodes` from `start` round-robin until `want` feasible nodes are found.

    As findNodesThatPassFilters does: the walk goes on after the `want`-th feasible node, and
    the next feasible one cancels it without being kept or counted, so the nodes that fail in
    between are in `statuses` (and move the next cycle's start index) too.

    Equivalent to checking nodes one by one in that order; done in vectorised chunks. Nodes
    with `nominated` pods are checked with them too, vectorised when every filter sees pods
    only through requests, else one by one.
    """
    statuses = NodeStatuses(nodes)
    handle = profile.handle
    n = len(nodes)
    filters = [pl for pl in profile.at("filter") if pl.name not in state.skip_filter]
    vectorised = all(pl.pods_via_requests for pl in filters)
    has_nominated: np.ndarray | None = None  # per slot, when the sums kept by the nominator apply
    adjusted = None
    if not nominated:
        nominated = None
    elif vectorised and isinstance(nominated, AllNominated) and nominated.owner is handle.nominator:
        adjusted, has_nominated = _with_all_nominated(handle, table, nominated.excluded)
        nominated = None
    else:
        nominated = {k: v for k, v in nominated.items() if k in handle.cache.nodes}
        nom_slots = np.fromiter((handle.cache.nodes[k].slot for k in nominated), dtype=np.int64)
        adjusted = _with_nominated_requests(handle, table, nominated) if nominated and vectorised else None
    # Filters every node passes (nothing to repel, room for the pod everywhere) are left out;
    # pods nominated to a node change the verdicts of those reading requests only.
    own = adjusted is None and not nominated  # the requests are the cache's, as they stand
    filters = [pl for pl in filters if not ((own or not pl.uses_requests) and pl.passes_all(state, pod, table))]
    if not filters and has_nominated is None and not nominated:
        # Every node passes: the walk keeps the next `want` and stops at the one after them.
        count = min(want, n)
        positions = np.arange(start, start + count)
        if start + count > n:
            positions %= n
        return FilterOutcome(statuses, Picked(nodes, positions, start, handle.cache.ordered_array(nodes)),
                             positions, count)
    found: list[np.ndarray] = []
    num_found = 0
    pos = 0
    cancelled = False
    grow = 1
    while pos < n and not cancelled:
        need = want - num_found  # 0 once enough are found: the walk looks for the one that cancels it
        size = min(n - pos, max(need + need // 4, 64) * grow)
        first = (start + pos) % n
        if first + size <= n:  # one unbroken stretch of `nodes`
            chunk = np.arange(first, first + size)
            chunk_slots = slots[first:first + size]
        else:
            chunk = (first + np.arange(size)) % n  # positions in `nodes`
            chunk_slots = slots.take(chunk)
        failed: list[tuple[np.ndarray, np.ndarray | _Undecoded]] = []  # (chunk offsets, their Statuses)
        if has_nominated is None and not nominated:
            ok = _filter_chain(filters, state, pod, nodes, chunk, None, chunk_slots, table,
                                    statuses, failed)
        else:
            alive = np.ones(size, dtype=bool)  # passed every filter so far
            check = np.ones(size, dtype=bool)  # still to run through the plain filters
            special = has_nominated[chunk_slots] if has_nominated is not None else np.isin(chunk_slots, nom_slots)
            if adjusted is not None:
                live = np.flatnonzero(special)
                passed = _filter_chain(filters, state, pod, nodes, chunk, live, chunk_slots[live], adjusted,
                                            statuses, failed)
                rejected = special.copy()
                rejected[live if passed is None else passed] = False
                alive &= ~rejected
                check &= ~rejected
            else:
                assert nominated is not None
                check &= ~special
                for j in np.flatnonzero(special).tolist():
                    node = nodes[int(chunk[j])]
                    st = profile.filter_with_nominated(state, pod, node, nominated[node.name])
                    if not st.ok:
                        failed.append((np.array([j]), np.array([statuses.intern(st)])))
                        alive[j] = False
            live = np.flatnonzero(check)
            passed = _filter_chain(filters, state, pod, nodes, chunk, live, chunk_slots[live], table,
                                        statuses, failed)
            if passed is not None:
                alive[live] = False
                alive[passed] = True
            ok = np.flatnonzero(alive)
        # A grown chunk stands for blocks of `block` nodes, each the chunk the walk would have
        # taken while it found nothing: it is kept up to the end of the block holding the first
        # feasible node, and its failures go in block by block, so that what is found, the
        # statuses and their order are those of the walk in single blocks.
        block = size if grow == 1 else max(need + need // 4, 64)
        if ok is None:
            ok = np.arange(size)
        if grow > 1 and len(ok):
            size = min(size, (int(ok[0]) // block + 1) * block)
            ok = ok[ok < size]
        cut = size
        count = len(ok)
        if count > need:
            cut = int(ok[need])
            cancelled = True
        if not count:
            # Nothing feasible (a preemptor, say): the next chunk takes twice as many blocks in
            # one pass; each node's verdict is its own, so only the number of passes changes.
            grow *= 2
        else:
            grow = 1
        found.append(chunk[ok[:need]])
        num_found += min(count, need)
        # Each failure's offsets are in increasing order: a block's are a slice of them.
        if len(failed) > 1 and cut > block:
            edges = list(range(0, cut, block)) + [cut]
            bounds = [np.searchsorted(offsets, edges).tolist() for offsets, _ in failed]
            for b in range(len(edges) - 1):
                for (offsets, which), bound in zip(failed, bounds, strict=True):
                    if bound[b + 1] > bound[b]:
                        statuses.add_many(chunk[offsets[bound[b]:bound[b + 1]]], which[bound[b]:bound[b + 1]])
        else:
            for offsets, which in failed:
                end = int(np.searchsorted(offsets, cut))
                statuses.add_many(chunk[offsets[:end]], which[:end])
        pos += cut
    if len(found) == 1:
        positions = found[0]
    else:
        positions = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return FilterOutcome(statuses, Picked(nodes, positions, start, handle.cache.ordered_array(nodes)),
                         positions, pos)


def distinct_statuses(statuses: Mapping[str, Status]) -> list[tuple[Status, int]]:
    """Each distinct Status with how many nodes failed with it (nodes failing alike share one)."""
    if isinstance(statuses, NodeStatuses):
        return statuses.counts()
    shared = Counter(map(id, statuses.values()))
    return [(st, shared[i]) for i, st in {id(st): st for st in statuses.values()}.items()]


def fit_error_message(num_nodes: int, statuses: Mapping[str, Status], absent: Status | None,
                      prefilter_msg: str | None, postfilter_msg: str | None) -> str:
    """FitError.Error(): reasons counted over nodes, "<count> <reason>" sorted as strings."""
    msg = f"0/{num_nodes} nodes are available:"
    if prefilter_msg:
        msg += f" {prefilter_msg}."
    else:
        counts: dict[str, int] = {}
        for status, nodes in distinct_statuses(statuses):
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + nodes
        if absent is not None and len(statuses) < num_nodes:
            for reason in absent.reasons:
                counts[reason] = counts.get(reason, 0) + num_nodes - len(statuses)
        parts = sorted(f"{c} {r}" for r, c in counts.items())
        if parts:
            msg += " " + ", ".join(parts) + "."
    if postfilter_msg:
        msg += " " + postfilter_msg
    return msg
