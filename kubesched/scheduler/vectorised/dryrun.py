"""Preemption's dry run over many nodes at once (the batched counterpart of the Evaluator's
node-by-node dry run in kubesched.scheduler.preemption, with the same candidates and statuses)."""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from kubesched.scheduler.candidates import START_KEY, Budget, Candidate, WhatIf
from kubesched.scheduler.types import PODS, SUCCESS, Code, NodeInfo, PodInfo, Status

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kubesched.scheduler.framework import CycleState, Handle, Profile

ROW_KEY = "preemption/requestsRow"  # PodInfo.extra: (table columns, requests as a table row)
_VICTIMS = operator.attrgetter("victims")


class TotalsWhatIf(WhatIf):
    """The same answers from running totals alone, valid when every active filter sees a node's
    pods only through their summed requests (`pods_via_requests`): nothing is copied, and the
    verdicts of filters that ignore pods altogether are taken once."""

    def __init__(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo,
                 nominated: Sequence[PodInfo], dynamic: list[Any], fixed: Status | None) -> None:
        """`dynamic`: the filters reading requested totals that run before `fixed`, the verdict of
        the first pod-independent filter that rejects the node (None if all pass)."""
        self.profile, self.pod, self.nominated = profile, pod, nominated
        self.node, self.state = node, state
        self.requested = dict(node.requested)
        self.num_pods = len(node.pods)
        self.extra: dict[str, int] = {}
        for other in nominated:
            for name, amount in other.requests.items():
                self.extra[name] = self.extra.get(name, 0) + amount
        self.dynamic, self.fixed = dynamic, fixed

    def remove(self, other: PodInfo) -> None:
        req = self.requested
        for name, amount in other.requests.items():
            req[name] = req.get(name, 0) - amount
        self.num_pods -= 1

    def add(self, other: PodInfo) -> None:
        req = self.requested
        for name, amount in other.requests.items():
            req[name] = req.get(name, 0) + amount
        self.num_pods += 1

    def _run(self, requested: dict[str, int], num_pods: int) -> Status:
        for pl in self.dynamic:
            st = pl.filter_requested(self.state, self.pod, self.node, requested, num_pods)
            if not st.ok:
                return st if st.plugin else Status(st.code, st.reasons, pl.name)
        return self.fixed or Status()

    def _with_nominated(self, requested: dict[str, int], num_pods: int) -> Status:
        if self.nominated:
            with_them = dict(requested)
            for name, amount in self.extra.items():
                with_them[name] = with_them.get(name, 0) + amount
            st = self._run(with_them, num_pods + len(self.nominated))
            if not st.ok:
                return st
        return self._run(requested, num_pods)

    def check(self) -> Status:
        return self._with_nominated(self.requested, self.num_pods)

    def hopeless(self) -> bool:
        """Whether the pod would not fit even with every pod gone (only nominated ones left)."""
        return not self._with_nominated({}, 0).ok


def _requests_row(pod: PodInfo, columns: dict[str, int]) -> np.ndarray:
    """The pod's requests as a row of the cache table (`columns`), the pods column counting it 1;
    kept with the pod while the table's columns stay the same. Every resource must have a column."""
    cached = pod.extra.get(ROW_KEY)
    if cached is not None and cached[0] == columns:
        return cached[1]
    row = np.zeros(len(columns), dtype=np.int64)
    row[columns[PODS]] = 1
    for res, amount in pod.requests.items():
        row[columns[res]] = amount
    pod.extra[ROW_KEY] = (dict(columns), row)
    return row


def totals_filters(profile: Profile, state: CycleState) -> list[Any] | None:
    """The active filters if what-ifs can run on totals (TotalsWhatIf), else None."""
    filters = [pl for pl in profile.at("filter") if pl.name not in state.skip_filter]
    return filters if all(pl.pods_via_requests for pl in filters) else None


EXACT_LIMIT = 2**62  # sums at or past this may not fit the cache table's int64 columns: judged one by one


class _BelowRows:
    """For one priority: per cache table slot, the summed requests of the node's pods below it
    (the table's columns; the pods column counts them)."""

    def __init__(self, priority: int, table: Any) -> None:
        self.priority = priority
        self.sums = np.zeros_like(table.req)
        self.columns = dict(table.columns)
        self.inexact = np.zeros(table.req.shape[0], dtype=bool)  # sums too large for the int64 columns
        self.written: dict[str, int] = {}  # node -> slot its row was written to
        self.dirty: set[str] = set()

    def matches(self, table: Any) -> bool:
        return self.sums.shape == table.req.shape and self.columns == table.columns

    def refresh(self, nodes: dict[str, NodeInfo]) -> None:
        dirty, self.dirty = self.dirty, set()
        for name in dirty:  # clear every moved row before writing any: slots are reused
            slot = self.written.pop(name, None)
            if slot is not None:
                self.sums[slot] = 0
                self.inexact[slot] = False
        pods_col = self.columns[PODS]
        for name in dirty:
            ni = nodes.get(name)
            if ni is None:
                continue
            self.written[name] = ni.slot
            totals: dict[str, int] = {}
            count = 0
            for p in ni.pods.values():
                if p.priority < self.priority:
                    count += 1
                    for res, amount in p.requests.items():
                        totals[res] = totals.get(res, 0) + amount
            row = self.sums[ni.slot]
            row[pods_col] = count
            big = any(amount >= EXACT_LIMIT for amount in ni.requested.values())
            for res, amount in totals.items():
                col = self.columns.get(res)
                if col is None or amount >= EXACT_LIMIT:
                    big = True
                else:
                    row[col] = amount
            self.inexact[ni.slot] = big


class ReprieveOrder(NamedTuple):
    """A node's potential victims in the order they are offered back, as the batched dry run
    needs them, with the candidates already made from it (by which of them go)."""

    order: list[PodInfo]
    violations: dict[str, list[str]]  # pod uid -> budgets it would violate
    keys: dict[str, tuple[int, float]] | None  # to re-sort the victims by; None: they stay in order
    rows: np.ndarray  # the pods' requests as table rows, in order
    made: dict[Any, Candidate]


class LowerPriorityIndex:
    """What preemption could free on each node: per cache slot, the requests of the pods below a
    priority, for the few preemptor priorities asked about lately. Rows are redone only for the
    nodes the cache reports changed, so an attempt costs nothing per unchanged node."""

    KEEP = 8  # priorities remembered

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self._rows: dict[int, _BelowRows] = {}  # least recently used first
        # priority -> node -> the reprieve order of the node's pods below it, kept by the Evaluator
        # until the node changes (or the table's columns do: see `orders_for`).
        self.orders: dict[int, dict[str, ReprieveOrder]] = {}
        # (priority, what the filters reading requests see of the preemptor) -> per cache slot,
        # the Candidate victim selection made on the node there (None: not kept), for nodes holding
        # no nominated pod that counts: preemptors alike ask unchanged nodes the same question.
        self.decided: dict[tuple[int, Hashable], np.ndarray] = {}
        self._orders_columns: dict[str, int] = {}
        cache.listeners.append(self._touched)

    def _touched(self, name: str) -> None:
        for rows in self._rows.values():
            rows.dirty.add(name)
        for kept in self.orders.values():
            kept.pop(name, None)
        if self.decided:
            ni = self.cache.nodes.get(name)
            if ni is None:  # removed: its slot may go to another node
                self.decided.clear()
            else:
                for decided in self.decided.values():
                    if ni.slot < len(decided):
                        decided[ni.slot] = None

    def _columns_checked(self) -> None:
        """Forget the orders and decisions when the table's columns change (their rows would not fit)."""
        columns = self.cache.table.columns
        if columns != self._orders_columns:
            self.orders.clear()
            self.decided.clear()
            self._orders_columns = dict(columns)

    def orders_for(self, priority: int) -> dict[str, ReprieveOrder]:
        """The orders kept for preemptors of `priority` (one of the KEEP asked about last), by
        node; their request rows are in the table's current columns."""
        self._columns_checked()
        found = self.orders.pop(priority, None)
        self.orders[priority] = found = {} if found is None else found
        _forget_oldest(self.orders, self.KEEP)
        return found

    def decided_for(self, priority: int, key: Hashable) -> np.ndarray:
        """The candidates kept for preemptors of `priority` whose request-reading filters' key is
        `key` (one of the KEEP asked about last), by cache slot."""
        self._columns_checked()
        size = self.cache.table.req.shape[0]
        found = self.decided.pop((priority, key), None)
        if found is None or len(found) < size:
            grown = np.full(size, None, dtype=object)
            if found is not None:
                grown[:len(found)] = found
            found = grown
        self.decided[(priority, key)] = found
        _forget_oldest(self.decided, self.KEEP)
        return found

    def below(self, priority: int) -> _BelowRows:
        table = self.cache.table
        rows = self._rows.pop(priority, None)
        if rows is None or not rows.matches(table):
            rows = _BelowRows(priority, table)
            rows.dirty = set(self.cache.nodes)
        self._rows[priority] = rows
        while len(self._rows) > self.KEEP:
            del self._rows[next(iter(self._rows))]
        rows.refresh(self.cache.nodes)
        return rows


def _forget_oldest(kept: dict[Any, Any], limit: int) -> None:
    """Drop the entries put in first (the least recently used) beyond `limit`."""
    while len(kept) > limit:
        del kept[next(iter(kept))]


class FixedVerdicts:
    """The pod-independent filters run once over all potential nodes, vectorised: per node (by
    position), the first filter that rejects it and that filter's status, decoded when asked for."""

    def __init__(self, state: CycleState, pod: PodInfo, filters: list[Any], nodes: list[NodeInfo],
                 slots: np.ndarray, table: Any) -> None:
        n, none = len(nodes), len(filters)
        self.state, self.filters = state, filters
        self.at = np.full(n, none, dtype=np.int64)  # position in `filters`; len(filters): none rejects
        self.codes = np.zeros(n, dtype=np.int64)  # the rejecting filter's code, when it has filter_many
        self.statuses: dict[int, Status] = {}  # node position -> status, for filters without filter_many
        self.index = np.full(table.req.shape[0], -1, dtype=np.int64)  # slot -> node position
        self.index[slots] = np.arange(n)
        for i, pl in enumerate(filters):
            # A filter every node of the table passes (nothing tainted or cordoned) rejects none here.
            if pl.uses_requests or pl.passes_all(state, pod, table):
                continue
            live = np.flatnonzero(self.at == none)
            if not len(live):
                continue
            codes = pl.filter_many(state, pod, nodes, live, slots[live], table)
            if codes is None:
                for j in live.tolist():
                    st = pl.filter(state, pod, nodes[j])
                    if not st.ok:
                        self.at[j] = i
                        self.statuses[j] = st if st.plugin else Status(st.code, st.reasons, pl.name)
                continue
            rejecting = codes[codes != 0]
            for code in (np.unique(rejecting).tolist() if len(rejecting) else ()):
                if not pl.decode(state, code).ok:
                    hit = live[codes == code]
                    self.at[hit] = i
                    self.codes[hit] = code

    def of(self, j: int) -> tuple[int, Status] | None:
        """Node j's first rejecting filter (position, status), None if none rejects it."""
        i = int(self.at[j])
        if i == len(self.filters):
            return None
        st = self.statuses.get(j)
        if st is None:
            pl = self.filters[i]
            st = pl.decode(self.state, int(self.codes[j]))
            st = st if st.plugin else Status(st.code, st.reasons, pl.name)
        return i, st

    def of_node(self, node: NodeInfo) -> tuple[int, Status] | None:
        j = int(self.index[node.slot]) if node.slot < len(self.index) else -1
        return None if j < 0 else self.of(j)


@dataclass
class Verdicts:
    """For some potential nodes (`positions`, in walk order), what the dry run can know from
    request totals alone, for all of them at once: whether each has lower-priority pods, whether
    the pod fits once they are all gone, whether it would not fit even with every pod gone
    (`hopeless`), and whether its sums are too large to judge that way (`inexact`: judged one by
    one). Arrays are by offset in `positions`; `statuses(ks)`: the verdicts of offsets ks with
    their lower-priority pods gone, made only when asked for."""

    positions: np.ndarray
    has_lower: np.ndarray
    fits: np.ndarray
    hopeless: np.ndarray
    inexact: np.ndarray
    statuses: Callable[[np.ndarray], list[Status]]
    slots: np.ndarray
    after: np.ndarray  # requested totals with the lower-priority pods gone
    nominated: np.ndarray  # the nominated pods' requests the pod must respect


def _rows_view(table: Any, slots: np.ndarray) -> Any:
    """A copy of the cache `table` holding, as its rows 0.., the rows of every per-slot array at
    `slots` (repeats allowed), but for the requested totals, which the caller sets: filters judge
    each row on its own, so what-ifs of the same nodes can be stacked and judged in one call
    instead of one call (and one table copy) each."""
    view = copy.copy(table)
    size = table.req.shape[0]
    for attr, value in vars(table).items():
        if attr != "req" and isinstance(value, np.ndarray) and value.shape[:1] == (size,):
            setattr(view, attr, value.take(slots, axis=0))
    view.flags = {name: flags.take(slots) for name, flags in table.flags.items()}
    return view


class BatchedDryRun:
    """The dry run for many nodes at once, when every active filter sees a node's pods only through
    their summed requests: the pod-independent filters' verdicts taken once per attempt, each
    node's fit with its lower-priority pods gone judged from table rows, and victim selection run
    side by side over the nodes. Its answers are the Evaluator's node-by-node ones
    (tests/test_preemption_vectorised.py compares them)."""

    def __init__(self, plugin: Any, handle: Handle) -> None:
        self.plugin = plugin
        self.handle = handle
        self.totals: list[Any] | None = None  # per attempt: see totals_filters
        self.dynamic_at: list[tuple[int, Any]] = []  # of those, the ones reading requests, with positions
        self.dynamic: list[Any] = []
        self.fixed: FixedVerdicts | None = None  # per attempt, on the totals path
        self._below: LowerPriorityIndex | None = None

    def start(self, profile: Profile, state: CycleState) -> None:
        """A new attempt: whether it can run on totals, and no verdicts taken yet."""
        self.totals = totals_filters(profile, state)
        self.fixed = None

    def what_if(self, profile: Profile, state: CycleState, pod: PodInfo, node: NodeInfo) -> WhatIf:
        """A what-if of `node` for `pod`, with the pods nominated there that it must respect."""
        nominated = self.handle.nominator.relevant_on(pod, node.name)
        if self.totals is None:
            return WhatIf(profile, state, pod, node, nominated)
        fixed = self.fixed.of_node(node) if self.fixed is not None else None
        if fixed is None:
            return TotalsWhatIf(profile, state, pod, node, nominated, self.dynamic, None)
        return TotalsWhatIf(profile, state, pod, node, nominated,
                            [pl for i, pl in self.dynamic_at if i < fixed[0]], fixed[1])

    def fix_verdicts(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray) -> None:
        assert self.totals is not None
        self.dynamic_at = [(i, pl) for i, pl in enumerate(self.totals) if pl.uses_requests]
        self.dynamic = [pl for _, pl in self.dynamic_at]
        self.fixed = FixedVerdicts(state, pod, self.totals, nodes, slots, self.handle.cache.table)

    def verdicts(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                 positions: np.ndarray, nominated_all: np.ndarray) -> Verdicts | None:
        """The totals path's Verdicts of `nodes[positions]` (their slots `slots[positions]`); None
        when a filter reading requests has no vectorised form. `nominated_all`: per table slot, the
        requests of the nominated pods `pod` must respect (Nominator.relevant_requests)."""
        fixed = self.fixed
        assert fixed is not None and self._below is not None
        table = self.handle.cache.table
        below = self._below.below(pod.priority)
        pods_col = table.columns[PODS]
        slots = slots.take(positions)
        # take() gathers rows several times faster than fancy indexing does.
        nominated = nominated_all.take(slots, axis=0)
        after = table.req.take(slots, axis=0) - below.sums.take(slots, axis=0)
        has_nom = nominated[:, pods_col] > 0
        n = len(positions)
        offsets = np.arange(n)

        # Four what-ifs per node, stacked: the node's lower-priority pods gone (after) or every pod
        # gone (empty), without and with the nominated pods. Rows alike get the same codes, so
        # with nominated pods is judged only where there are some (elsewhere their row is zeros).
        nom_at = np.flatnonzero(has_nom)
        at = np.concatenate([offsets, offsets, nom_at, nom_at])
        more = nominated.take(nom_at, axis=0)
        stacked = self._dynamic_codes(state, pod, nodes, positions.take(at), _rows_view(table, slots.take(at)),
                                      np.concatenate([after, np.zeros_like(after), after.take(nom_at, axis=0) + more,
                                                      more]))
        if stacked is None:
            return None
        alone, empty_alone = [c[:n] for c in stacked], [c[n:2 * n] for c in stacked]
        with_nominated, empty_with = [c[:n].copy() for c in stacked], [c[n:2 * n].copy() for c in stacked]
        for c, with_them, empty_with_them in zip(stacked, with_nominated, empty_with, strict=True):
            with_them[nom_at] = c[2 * n:2 * n + len(nom_at)]
            empty_with_them[nom_at] = c[2 * n + len(nom_at):]
        fixed_at = fixed.at.take(positions)

        def rejected(code_set: list[np.ndarray]) -> np.ndarray:
            bad = np.zeros(n, dtype=bool)
            for (i, _), c in zip(self.dynamic_at, code_set, strict=True):
                bad |= (c != 0) & (i < fixed_at)
            return bad

        passes_fixed = fixed_at == len(fixed.filters)
        fits = passes_fixed & ~(has_nom & rejected(with_nominated)) & ~rejected(alone)
        hopeless = ~passes_fixed | (has_nom & rejected(empty_with)) | rejected(empty_alone)

        has_lower = below.sums[slots, pods_col] > 0
        no_victims = self.plugin.no_victims()

        def statuses(ks: np.ndarray) -> list[Status]:
            """Offsets ks's verdicts with their lower-priority pods gone, as select_victims_on_node
            gives them: none to remove, else the first filter rejecting the node with the
            nominated pods, then without them, then the pod-independent one. Alike nodes share
            one Status object."""
            js = positions.take(ks)
            limit, nominated_there = fixed_at[ks], has_nom[ks]
            # What decides, lowest precedence first: -1 nothing, 0 no victims, 1 a one-by-one
            # fixed verdict, 10+i fixed filter i's code, 10+F+2d (+1 alone) dynamic filter d's code.
            source = np.where(limit < len(fixed.filters), 10 + limit, -1)
            code = fixed.codes[js].copy()
            source[np.isin(js, np.fromiter(fixed.statuses, dtype=np.int64, count=len(fixed.statuses)))] = 1
            base = 10 + len(fixed.filters)
            for code_sets, extra, mask in ((alone, 1, None), (with_nominated, 0, nominated_there)):
                for d in reversed(range(len(self.dynamic_at))):
                    c = code_sets[d][ks]
                    hit = (c != 0) & (self.dynamic_at[d][0] < limit)
                    if mask is not None:
                        hit &= mask
                    source[hit] = base + 2 * d + extra
                    code[hit] = c[hit]
            source[~has_lower[ks]] = 0
            # Distinct (source, code) pairs, by way of 1-D uniques (cheaper than rows).
            sources, source_at = np.unique(source, return_inverse=True)
            codes_seen, code_at = np.unique(code, return_inverse=True)
            kinds, which = np.unique(source_at.reshape(-1) * len(codes_seen) + code_at.reshape(-1),
                                     return_inverse=True)
            made = [self._status_of(state, int(sources[k // len(codes_seen)]), int(codes_seen[k % len(codes_seen)]),
                                    fixed, base, no_victims) for k in kinds.tolist()]
            out = [made[k] for k in which.reshape(-1).tolist()]
            for k in np.flatnonzero(source == 1).tolist():
                verdict = fixed.of(int(js[k]))
                assert verdict is not None
                out[k] = verdict[1]
            return out

        return Verdicts(positions, has_lower, fits, hopeless, below.inexact[slots], statuses, slots, after,
                        nominated)

    def _status_of(self, state: CycleState, source: int, code: int, fixed: FixedVerdicts, base: int,
                   no_victims: Status) -> Status:
        """The Status a `Verdicts.statuses` source and code stand for."""
        if source == 0:
            return no_victims
        if source < 10:
            return SUCCESS  # none, or (1) filled in per node
        pl = fixed.filters[source - 10] if source < base else self.dynamic_at[(source - base) // 2][1]
        st = pl.decode(state, code)
        return st if st.plugin else Status(st.code, st.reasons, pl.name)

    def _dynamic_codes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], positions: np.ndarray,
                       view: Any, rows: np.ndarray) -> list[np.ndarray] | None:
        """Per filter reading requests, its codes for `nodes[positions]` if their requested totals
        were `rows`; None if one has no vectorised form. `view`: `_rows_view` of the nodes' slots,
        so several what-ifs of one node (positions repeating) are judged in one call."""
        view.req = rows
        compact = np.arange(len(rows))
        out = []
        for _, pl in self.dynamic_at:
            c = pl.filter_many(state, pod, nodes, positions, compact, view)
            if c is None:
                return None
            out.append(np.asarray(c))
        return out

    def _select_victims_batch(self, state: CycleState, pod: PodInfo, potential: list[NodeInfo], v: Verdicts,
                              ks: list[int], budgets: list[Budget]
                              ) -> list[Candidate]:
        """The plugin's victim selection on the nodes at offsets `ks` of `v` (each fitting the pod
        once its lower-priority pods are gone, none inexact): each node's Candidate, with no
        victims where none are needed. A node that has not changed since a preemptor alike was
        judged there gets the same Candidate again, as long as it holds no nominated pod that
        counts (the preemptors' nominations differ) and its order is kept (see `orders_for`)."""
        assert self._below is not None
        key = tuple(k for pl in self.dynamic for k in (pl, pl.requests_key(state, pod)))
        if budgets or None in key:  # budgets change between attempts; a plugin without a key
            return self._simulate(state, pod, potential, v, ks, budgets)
        decided = self._below.decided_for(pod.priority, key)
        slots = v.slots.take(ks)
        got = decided.take(slots)
        # Nominations do not change a node in the cache: they are looked at on each attempt.
        alone = v.nominated[ks, self.handle.cache.table.columns[PODS]] == 0
        if not alone.all():
            got[~alone] = None
        out = got.tolist()
        missing = [i for i, c in enumerate(out) if c is None]
        if missing:
            kept = self._below.orders_for(pod.priority)
            made = self._simulate(state, pod, potential, v, [ks[i] for i in missing], budgets)
            for i, c in zip(missing, made, strict=True):
                out[i] = c
                if alone[i] and potential[int(v.positions[ks[i]])].name in kept:
                    decided[slots[i]] = c
        return cast(list[Candidate], out)

    def _simulate(self, state: CycleState, pod: PodInfo, potential: list[NodeInfo], v: Verdicts,
                  ks: list[int], budgets: list[Budget]) -> list[Candidate]:
        """`_select_victims_batch` run side by side: step k offers every node's k-th pod back, and
        each node keeps it if the pod still fits there."""
        plugin, table = self.plugin, self.handle.cache.table
        columns, pods_col = table.columns, table.columns[PODS]
        assert self._below is not None
        at = np.array(ks, dtype=np.int64)
        js = v.positions.take(at)
        nodes = list(map(potential.__getitem__, js.tolist()))
        # Without budgets, and with every start time known, a node's order is its own, and so are
        # the candidates made from it (criteria included: none reads the clock); then it is kept.
        kept = self._below.orders_for(pod.priority) if not budgets else {}
        orders: list[ReprieveOrder | None] = list(map(kept.get, [ni.name for ni in nodes]))
        for i in [i for i, o in enumerate(orders) if o is None]:
            ni = nodes[i]
            order, violations, keys = plugin.reprieve_order(plugin.lower_priority(pod, ni), budgets)
            made = ReprieveOrder(order, violations, keys, np.stack([_requests_row(p, columns) for p in order]), {})
            if not budgets and all(p.extra.get(START_KEY) is not None for p in order):
                kept[ni.name] = made
            orders[i] = made
        ready = cast(list[ReprieveOrder], orders)
        # offered[k, i]: node i's k-th pod's requests (zeros past its last), filled in one go.
        counts = np.array([len(o.order) for o in ready], dtype=np.int64)
        steps = int(counts.max())
        offered = np.zeros((steps, len(js), table.req.shape[1]), dtype=np.int64)
        starts = np.cumsum(counts) - counts
        total = int(counts.sum())
        offered[np.arange(total) - np.repeat(starts, counts), np.repeat(np.arange(len(js)), counts)] = \
            np.concatenate([o.rows for o in ready])
        rows, nominated, slots = v.after[at], v.nominated[at], v.slots[at]
        has_nom = nominated[:, pods_col] > 0
        positions = np.arange(len(js))
        # Each step judges every node without its nominated pods and, where there are some, with
        # them, in one call.
        nom_at = np.flatnonzero(has_nom)
        both = np.concatenate([positions, nom_at])
        view = _rows_view(table, slots.take(both))
        nominated_there = nominated.take(nom_at, axis=0)
        gone = np.ones((steps, len(js)), dtype=bool)
        for k in range(steps):
            trial = rows + offered[k]
            codes = self._dynamic_codes(state, pod, nodes, both, view,
                                        np.concatenate([trial, trial.take(nom_at, axis=0) + nominated_there]))
            assert codes is not None  # as for the Verdicts
            fits = np.ones(len(both), dtype=bool)
            for code in codes:
                fits &= code == 0
            fits[nom_at] &= fits[len(js):]
            keep = fits[: len(js)] & (offered[k, :, pods_col] > 0)
            np.copyto(rows, trial, where=keep[:, None])
            gone[k] = ~keep
        # Which of its pods each node lets go, as a bit set (a tuple when too many for one).
        if steps < 63:
            which: list[Any] = (((1 << np.arange(steps)) @ gone) & ((1 << counts) - 1)).tolist()
        else:
            which = [tuple(leave[:n]) for leave, n in zip(gone.T.tolist(), counts.tolist(), strict=True)]
        out = []
        for i, (o, key, ni) in enumerate(zip(ready, which, nodes, strict=True)):
            c = o.made.get(key)
            if c is None:
                victims = list(compress(o.order, gone[:, i].tolist()))
                if o.keys is not None:
                    plugin.sort_victims(victims, o.keys)
                c = o.made[key] = Candidate.of(ni.name, victims, o.violations)
            out.append(c)
        return out

    def dry_run(self, profile: Profile, state: CycleState, pod: PodInfo, potential: list[NodeInfo],
                slots: np.ndarray, offset: int, want: int, budgets: list[Budget], explain: bool
                ) -> tuple[list[Candidate], dict[str, Status]] | None:
        """The Evaluator's `dry_run` on totals; None when a filter reading requests has no
        vectorised form. Nodes are judged in stretches of the walk, as far as it goes: only those
        that can be candidates (and inexact ones) are looked at one by one, and the other nodes'
        statuses are made only when they are reported."""
        cache = self.handle.cache
        if self._below is None or self._below.cache is not cache:
            self._below = LowerPriorityIndex(cache)
            self.handle.nominator.delta.follow(cache)
        nominated = self.handle.nominator.relevant_requests(pod, cache.table, cache.nodes)
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        n = len(potential)
        order = (offset + np.arange(n)) % n
        # Per stretch judged: where it starts in the walk, its verdicts, which of its nodes are
        # hopeless and which visited, and the statuses of those visited that were not candidates.
        stretches: list[tuple[int, Verdicts, np.ndarray, np.ndarray, dict[int, Status]]] = []
        last = n - 1  # walk index of the last node reached
        start, done, grow, found = 0, False, 1, 0
        while start < n and not done:
            size = min(n - start, max(2 * (want - found), 64) * grow)
            grow *= 2  # few candidates in the last stretch: look further at once
            v = self.verdicts(state, pod, potential, slots, order[start:start + size], nominated)
            if v is None:
                assert not stretches  # whether filters are vectorised does not change within a walk
                return None
            hopeless = v.hopeless.copy()  # inexact nodes' entries are found out one by one
            visit = (v.has_lower & v.fits & ~hopeless) | v.inexact
            failed: dict[int, Status] = {}  # offset -> status, of nodes looked at
            stretches.append((start, v, hopeless, visit, failed))
            walk = np.flatnonzero(visit).tolist()
            any_inexact = bool(v.inexact.any())
            pos = 0
            while pos < len(walk) and not done:
                # Enough nodes side by side for the candidates still wanted (or a budget-clean one).
                chunk = walk[pos:pos + max(want - found, 16)]
                pos += len(chunk)
                side = [k for k in chunk if not v.inexact[k]] if any_inexact else chunk
                made = self._select_victims_batch(state, pod, potential, v, side, budgets) if side else []
                # Without budgets no candidate violates one: whether each has victims is read in C.
                if not any_inexact and (all(map(_VICTIMS, made)) if not budgets else
                                        all(c.victims and not c.num_pdb_violations for c in made)):
                    # The usual stretch: every node a clean candidate; taken as the walk would.
                    take = min(len(made), max(want - found, 1))
                    clean += made[:take]
                    found += take
                    if found >= want:
                        last, done = start + chunk[take - 1], True
                    continue
                batch = iter(made)
                status, ok = SUCCESS, True  # what the side-by-side selection gives
                for k in chunk:
                    if any_inexact and v.inexact[k]:
                        ni = potential[int(v.positions[k])]
                        node_now = self.what_if(profile, state, pod, ni)
                        hopeless[k] = node_now.hopeless()
                        if hopeless[k]:
                            continue
                        victims, violations, status = self.plugin.select_victims_on_node(profile, state, pod, ni,
                                                                                         budgets, node_now)
                        c, ok = Candidate.of(ni.name, victims, violations), status.ok
                    else:
                        c, status, ok = next(batch), SUCCESS, True
                    if ok and c.victims:
                        if c.num_pdb_violations:
                            violating.append(c)
                        else:
                            clean.append(c)
                        found += 1
                        if clean and found >= want:
                            last, done = start + k, True
                            break
                        continue
                    if ok:
                        name = potential[int(v.positions[k])].name
                        status = Status(Code.ERROR, (f'expected at least one victim pod on node "{name}"',))
                    failed[k] = status
            start += size
        statuses: dict[str, Status] = {}
        if not explain and (clean or violating):
            return clean + violating, statuses
        # The nodes reached, in walk order: first those not hopeless, then the hopeless ones.
        reached = [(v, hopeless[:last + 1 - at], visit[:last + 1 - at], failed)
                   for at, v, hopeless, visit, failed in stretches if at <= last]
        for v, hopeless, visit, failed in reached:
            looked = np.zeros(len(hopeless), dtype=bool)
            looked[list(failed)] = True
            first = np.flatnonzero((~hopeless & ~visit) | looked)
            for k, status in zip(first.tolist(), v.statuses(first), strict=True):
                statuses[potential[int(v.positions[k])].name] = failed.get(k, status)
        for v, hopeless, _, _ in reached:
            last_ones = np.flatnonzero(hopeless)
            for k, status in zip(last_ones.tolist(), v.statuses(last_ones), strict=True):
                ni = potential[int(v.positions[k])]
                statuses[ni.name] = (self.plugin.select_victims_on_node(profile, state, pod, ni, budgets)[2]
                                     if v.inexact[k] else status)
        return clean + violating, statuses
