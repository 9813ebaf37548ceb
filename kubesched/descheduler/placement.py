"""Where would a pod go? Our own scheduler's filters and scores, asked without binding anything.

The descheduler's nodeFit, the planner's "likely landing" and the opt-in ScoreImprovement rule
all ask the same question the scheduler answers for a replacement pod. Placement keeps its own
scheduler cache (fed by watches, like a scheduler's informers) and the profiles of the
configured schedulers, so the answer comes from the same plugins, weights and tie-breaks.

Within one descheduling pass every accepted eviction *reserves* its replacement on the node
the scheduler would pick. Where that is, is worked out without the evicted pod if it stops at once
(the default, see api.podlife: it is gone when its replacement is scheduled) and with it if it
takes time to shut down; for the rest of the pass it stays, as it does in the cluster until the
kubelet has stopped it. Later nodeFit checks in the same pass therefore never count on space an
earlier move already took (descheduler issue 1584). Reservations end with the pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kubesched.api.objects import Obj, deep_copy, is_terminal
from kubesched.api.podlife import shutdown_time
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig, build_profiles
from kubesched.scheduler.framework import CycleState, Handle, Profile
from kubesched.scheduler.scheduler import num_feasible_nodes_to_find, select_host
from kubesched.scheduler.types import Code, NodeInfo, PodInfo
from kubesched.scheduler.vectorised.filters import find_feasible
from kubesched.store.base import DELETED, WatchEvent

if TYPE_CHECKING:
    from kubesched.store.base import Store


@dataclass
class Verdict:
    """The scheduler's answer for a pod: feasible nodes with their total scores, best first."""

    scores: dict[str, int]
    best: str | None
    reason: str = ""  # why no node fits (the first failing plugin's message)


class Placement:
    def __init__(self, store: Store, configs: list[SchedulerConfig]) -> None:
        self.store = store
        self.cache = Cache()
        self.profiles: dict[str, Profile] = {}
        for cfg in configs or [SchedulerConfig()]:
            handle = Handle(self.cache, store, None)
            profiles = build_profiles(cfg, handle)
            handle.profiles = profiles
            for name, profile in profiles.items():
                self.profiles.setdefault(name, profile)
        self._reserved: list[str] = []
        self._last_fit = 0
        self._order: list[NodeInfo] | None = None  # the cache's order the selections were made from
        # id(node set) -> (the set, kept referenced so its id is not reused; its nodes and slots;
        # node name -> position among them)
        self._selections: dict[int, tuple[frozenset[str] | set[str] | None, list[NodeInfo], np.ndarray,
                                          dict[str, int]]] = {}
        # ((id(node set), excluded node), the selection without it)
        self._without: tuple[tuple[int, str | None], list[NodeInfo], np.ndarray] | None = None
        # pod uid -> (its resourceVersion, its replacement as the scheduler sees it, and what the
        # filters can read of it): every pass asks about the same pods again, and a replacement
        # depends on nothing but its pod.
        self._replacements: dict[str, tuple[str, PodInfo, str]] = {}
        # nodeFit's answers while the cache stands: (what the filters see, id(node set)) -> (the
        # set, kept referenced so its id is not reused; the feasible node found)
        self._fits: dict[tuple[str, int], tuple[frozenset[str] | set[str] | None, str]] = {}
        self._fits_generation = -1

    def start(self) -> None:
        for node in self.store.list("Node"):
            self.cache.add_node(node)
        for pod in self.store.list("Pod"):
            self._on_pod(WatchEvent("ADDED", "Pod", pod, None))
        self.store.watch(self._on_node, {"Node"})
        self.store.watch(self._on_pod, {"Pod"})

    def _on_node(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            self.cache.remove_node(ev.obj["metadata"]["name"])
        else:
            self.cache.add_node(ev.obj)

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        node = (pod.get("spec") or {}).get("nodeName")
        if ev.type == DELETED:
            self._replacements.pop(uid, None)
        if ev.type == DELETED or is_terminal(pod) or not node:
            self.cache.remove_pod(uid)
        else:
            self.cache.add_pod(PodInfo.of(pod), node)

    # ---- a pass's reservations -------------------------------------------------------------------

    def end_pass(self) -> None:
        for uid in self._reserved:
            self.cache.remove_pod(uid)
        self._reserved.clear()
        self._selections.clear()  # the next pass asks with node sets of its own
        self._without = None

    def move(self, pod: Obj) -> str | None:
        """Reserve the place the evicted `pod`'s replacement would take; returns that node."""
        meta = pod["metadata"]
        uid, node = meta.get("uid", ""), self.cache.node_of(meta.get("uid", ""))
        evicted = self.store.get("Pod", meta.get("namespace", "default"), meta["name"])
        gone = None
        if evicted is not None and evicted["metadata"].get("deletionTimestamp") and not shutdown_time(
                evicted, float(evicted["metadata"].get("deletionGracePeriodSeconds") or 0)):
            gone = self.cache.remove_pod(uid)  # stopped before its replacement is scheduled
        verdict = self.verdict(pod)
        if gone is not None and node is not None:
            self.cache.add_pod(gone, node)  # still there for the rest of the pass, until it has stopped
        if verdict.best is None:
            return None
        replacement = self._replacement(pod)
        replacement["metadata"]["uid"] = f"reserved-{pod['metadata'].get('uid', '')}"
        replacement["spec"]["nodeName"] = verdict.best
        info = PodInfo.of(replacement)
        self.cache.add_pod(info, verdict.best)
        self._reserved.append(info.uid)
        return verdict.best

    # ---- questions ----------------------------------------------------------------------------

    @staticmethod
    def _replacement(pod: Obj) -> Obj:
        """The pod as its controller would create it again: same spec, not yet bound or deleted."""
        copy = deep_copy(pod)
        copy["spec"].pop("nodeName", None)
        meta = copy["metadata"]
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(key, None)
        copy["status"] = {"phase": "Pending"}
        return copy

    def _replacement_info(self, pod: Obj) -> tuple[PodInfo, str]:
        """The replacement of `pod` as the scheduler sees it, and its signature: everything of it
        the filters can read (not its name, uid or node), equal for the pods of one controller."""
        meta = pod["metadata"]
        uid, version = meta.get("uid", ""), meta.get("resourceVersion")
        known = self._replacements.get(uid)
        if known is not None and version is not None and known[0] == version:
            return known[1], known[2]
        info = PodInfo.of(self._replacement(pod))
        spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
        signature = repr((meta.get("namespace"), meta.get("labels"), meta.get("annotations"),
                          meta.get("ownerReferences"), spec))
        if version is not None:
            self._replacements[uid] = (version, info, signature)
        return info, signature

    def _candidates(self, nodes: frozenset[str] | set[str] | None, exclude: str | None
                    ) -> tuple[list[NodeInfo], np.ndarray]:
        """The cache's nodes (in scheduling order) that are in `nodes`, minus `exclude`; each
        selection is remembered per node set while the cache's node order stands, as a pass asks
        about the same few sets (all nodes, the ready ones) many times over."""
        all_nodes, all_slots = self.cache.ordered()
        # The cache hands out a new order list whenever nodes change.
        if self._order is not all_nodes:
            self._order = all_nodes
            self._selections.clear()
            self._without = None
        selection = self._selections.get(id(nodes))
        if selection is None:
            keep = [i for i, n in enumerate(all_nodes) if nodes is None or n.name in nodes]
            selection = self._selections[id(nodes)] = (
                nodes, [all_nodes[i] for i in keep], all_slots[keep], {all_nodes[i].name: j for j, i in enumerate(keep)})
        _, base, slots, index = selection
        j = index.get(exclude) if exclude is not None else None
        if j is None:
            return base, slots
        # Strategies ask about a node's pods one after another: the last exclusion is kept.
        key = (id(nodes), exclude)
        if self._without is None or self._without[0] != key:
            self._without = (key, base[:j] + base[j + 1:], np.delete(slots, j))
        return self._without[1], self._without[2]

    def verdict(self, pod: Obj, nodes: frozenset[str] | set[str] | None = None, exclude: str | None = None,
                score: bool = True) -> Verdict:
        """Filter and score a replacement of `pod` over `nodes` (default: all) minus `exclude`.
        Without `score`, stop at the first feasible node (a yes/no question)."""
        name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        profile = self.profiles.get(name)
        if profile is None:
            return Verdict({}, None, f'no scheduler serves schedulerName "{name}"')
        info, _ = self._replacement_info(pod)
        candidates, slots = self._candidates(nodes, exclude)
        if not candidates:
            return Verdict({}, None, "no other node")
        state = CycleState()
        pre, status, _ = profile.run_pre_filter(state, info, candidates)
        if not status.ok:
            return Verdict({}, None, status.message())
        if pre.node_names is not None:
            keep = [i for i, n in enumerate(candidates) if n.name in pre.node_names]
            candidates, slots = [candidates[i] for i in keep], slots[keep]
        want = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, len(candidates)) if score else 1
        # A yes/no question may start anywhere: start where the last one found room.
        start = 0 if score else self._last_fit % len(candidates)
        outcome = find_feasible(profile, state, info, candidates, slots, self.cache.table, start, max(want, 1))
        if not score and outcome.feasible:
            self._last_fit = int(outcome.positions[0])
        if not outcome.feasible:
            first = outcome.statuses.first()
            return Verdict({}, None, first.message() if first is not None else "no node fits")
        if not score or not profile.at("score"):
            return Verdict({outcome.feasible[0].name: 0}, outcome.feasible[0].name)
        status = profile.run_pre_score(state, info, outcome.feasible)
        if not status.ok and status.code != Code.SKIP:
            return Verdict({}, None, status.message())
        totals, _ = profile.run_score(state, info, outcome.feasible, slots[outcome.positions], self.cache.table)
        best = outcome.feasible[select_host(totals)].name
        scores = {n.name: int(t) for n, t in zip(outcome.feasible, np.asarray(totals).tolist(), strict=True)}
        return Verdict(scores, best)

    def fits_elsewhere(self, pod: Obj, nodes: frozenset[str] | set[str] | None = None) -> bool:
        """PodFitsAnyOtherNode, judged by the scheduler's filters (and this pass's reservations).

        A pass asks it for every pod of every node, and the pods of one controller look alike to
        the filters: while the cache is unchanged, a feasible node found for one of them is
        feasible for any other that does not run there (the cluster the filters see is the same;
        only which node is excluded differs), so it is asked once per kind of pod."""
        if self._fits_generation != self.cache.generation:
            self._fits.clear()
            self._fits_generation = self.cache.generation
        exclude = pod["spec"].get("nodeName")
        key = (self._replacement_info(pod)[1], id(nodes))
        known = self._fits.get(key)
        if known is not None and known[0] is nodes and known[1] != exclude:
            return True
        best = self.verdict(pod, nodes, exclude=exclude, score=False).best
        if best is not None:
            self._fits[key] = (nodes, best)
        return best is not None

    def scores_with_current(self, pod: Obj, nodes: frozenset[str] | set[str] | None = None,
                            score: bool = True) -> Verdict:
        """Scores over `nodes` including the pod's own node, judged as if the pod were not
        running yet: one scoring run, so the numbers compare (scores are normalised per run).
        Without `score`: only whether it fits any of them (PodFitsAnyNode)."""
        uid, node = pod["metadata"].get("uid", ""), pod["spec"].get("nodeName")
        if nodes is not None and node and node not in nodes:
            nodes = nodes | {node}
        removed = self.cache.remove_pod(uid) if node and self.cache.node_of(uid) == node else None
        try:
            return self.verdict(pod, nodes, score=score)
        finally:
            if removed is not None:
                self.cache.add_pod(removed, node)
