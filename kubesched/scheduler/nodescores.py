"""Node-local scores, kept from one scheduling cycle to the next.

Some Score plugins (NodeResourcesFit, NodeResourcesBalancedAllocation) give a node a score that
depends on nothing but a few of the pod's requests and that node's own allocatable and pods, and
leave it as it is at NormalizeScore. For pods asking alike (the replicas of a workload), a
node's weighted sum of those scores is then the same in every cycle until the node changes.
The sums are kept per cache slot and per such request key; a cycle rescores only the nodes the
cache reports changed since (usually the one the previous pod went to) and gathers the
feasible nodes' sums at once, which is far cheaper than scoring them all again. Scores are the
plugins' own, so the totals are the same as scoring every node in every cycle.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.scheduler.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache, NodeTable

KEYS_KEPT = 32  # request keys whose sums are kept at once (least recently used dropped first)
# score() and score_many() agree as long as the int64 arithmetic of the latter cannot overflow:
# a node with a larger amount, or a negative one, is rescored through score_many.
ORDINARY = 2**46
# Past this many nodes touched since a key's last cycle, one vectorised pass over the nodes asked
# for costs less than rescoring the touched ones one by one.
SCALAR_CATCH_UP = 16


@dataclass
class _Sums:
    sums: np.ndarray  # per slot, the weighted sum of the plugins' scores
    valid: np.ndarray  # per slot, whether `sums` is current there (only ever a node's slot)
    seen: int  # how far into the log of touched nodes `sums` has been brought
    count: int = 0  # slots valid: when every node's is, a cycle need not look for missing ones


def ordinary(ni: NodeInfo) -> bool:
    """Whether every amount of `ni` is small enough for score() to equal score_many()."""
    amounts = (ni.nonzero_cpu, ni.nonzero_memory, *ni.allocatable.values(), *ni.requested.values())
    return min(amounts) >= 0 and max(amounts) < ORDINARY


class NodeLocalScores:
    """The kept sums of one profile's node-local Score plugins over one cache."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._kept: OrderedDict[Hashable, _Sums] = OrderedDict()
        # The names of the nodes the cache changed, in order, and how many older ones were dropped.
        self._touched: list[str] = []
        self._dropped = 0
        cache.listeners.append(self._touch)

    def _touch(self, name: str) -> None:
        if len(self._touched) > max(len(self.cache.nodes), 4096):  # bounded: kept sums start afresh
            self._dropped += len(self._touched)
            self._touched.clear()
        self._touched.append(name)

    def totals(self, plugins: list[tuple[Any, int]], key: Hashable, state: Any, pod: PodInfo,
               nodes: Sequence[NodeInfo], slots: np.ndarray, table: NodeTable) -> np.ndarray:
        """Σ weight × score of `plugins` ((plugin, weight) pairs, all node-local for the pod's
        `key`) on `nodes`, whose slots are `slots`."""
        size = table.req.shape[0]
        kept = self._kept.get(key)
        logged = self._dropped + len(self._touched)
        if kept is None or len(kept.sums) != size or kept.seen < self._dropped:
            kept = _Sums(np.zeros(size, dtype=np.int64), np.zeros(size, dtype=bool), logged)
            self._kept[key] = kept
            if len(self._kept) > KEYS_KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
            if kept.seen < logged:
                self._catch_up(kept, plugins, state, pod)
                kept.seen = logged
        if kept.count < len(self.cache.nodes):
            missing = np.flatnonzero(~kept.valid.take(slots))
            if len(missing):
                picked = slots.take(missing)
                asked = nodes if len(missing) == len(slots) else [nodes[k] for k in missing.tolist()]
                kept.sums[picked] = self._score(plugins, state, pod, asked, picked, table)
                kept.valid[picked] = True
                kept.count += len(picked)
        return kept.sums.take(slots)

    def _catch_up(self, kept: _Sums, plugins: list[tuple[Any, int]], state: Any, pod: PodInfo) -> None:
        """Rescore the nodes touched since `kept` was last brought up to date, one by one; when
        there are many (pods of other shapes went meanwhile) or a node was removed (its slot is
        not known), forget them all, for totals() to score the nodes asked for at once."""
        nodes, sums, valid = self.cache.nodes, kept.sums, kept.valid
        since = kept.seen - self._dropped
        touched = set(self._touched[since:]) if len(self._touched) - since <= 4 * SCALAR_CATCH_UP else set()
        if not touched or len(touched) > SCALAR_CATCH_UP or not touched <= nodes.keys():
            valid[:] = False
            kept.count = 0
            return
        for name in touched:
            ni = nodes[name]
            slot = ni.slot
            was = valid.item(slot)
            if ordinary(ni):
                total = 0
                for pl, weight in plugins:
                    total += weight * pl.score(state, pod, ni)
                sums[slot] = total
                if not was:
                    valid[slot] = True
                    kept.count += 1
            elif was:
                valid[slot] = False
                kept.count -= 1

    @staticmethod
    def _score(plugins: list[tuple[Any, int]], state: Any, pod: PodInfo, nodes: Sequence[NodeInfo],
               slots: np.ndarray, table: NodeTable) -> np.ndarray:
        total = np.zeros(len(nodes), dtype=np.int64)
        for pl, weight in plugins:
            raw = pl.score_many(state, pod, nodes, slots, table)
            if raw is None:
                raw = np.fromiter((pl.score(state, pod, ni) for ni in nodes), dtype=np.int64, count=len(nodes))
            total += raw if weight == 1 else raw * weight
        return total
