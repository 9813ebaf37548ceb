"""The disruption controller: keeps every PodDisruptionBudget's status true.

Follows pkg/controller/disruption (v1.35). For each budget it finds the pods its selector picks,
works out how many are expected (an integer minAvailable counts the pods themselves; a percentage
or maxUnavailable needs the scale of the pods' controllers — a Deployment's replicas for the
pods of its ReplicaSets, a bare ReplicaSet's own), how many must stay healthy (percentages round
up) and how many are healthy now (Ready, not terminating, not just approved for eviction). The
difference, never below zero, is `disruptionsAllowed`.

The pods' controllers are found as upstream's finders do: a ReplicationController, a
ReplicaSet's Deployment, a ReplicaSet without one, a StatefulSet, then any other workload with a
scale subresource (a ReplicaSet whose Deployment is gone); a Job, CronJob or DaemonSet has none,
and a percentage budget over their pods fails as upstream's does. A controller the input lacks
(an export without it) is counted as the controller would be, its replicas taken as the most
pods it was seen to have at once, when the pods' reference names a kind with a scale; otherwise
the budget fails as upstream's would ("found no controllers for pod") and the run's warnings say
that the export lacked the controller.

A pod counts as disrupted from the moment its graceful termination starts (the rescheduling
design proposal, "Disruption budget"): a terminating pod is never healthy. An eviction the API server approved is
recorded in status.disruptedPods; if the pod is still not being deleted two minutes later the
controller stops counting it as disrupted.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import Any

from kubesched.api.intstr import scaled_value
from kubesched.api.objects import Obj, controller_of, is_pod_ready, is_terminal, is_terminating, set_condition
from kubesched.api.pdb import disruption_allowed_condition, pdb_covers, pdb_selector
from kubesched.api.selectors import LabelSelector
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import ADDED, DELETED, WatchEvent
from kubesched.store.podindex import PodKey, object_key

DELETION_TIMEOUT = 120.0  # seconds an approved eviction may take to start deleting the pod
UNMANAGED_MESSAGE = (
    "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. As a result, "
    "the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account "
    'for these pods please set ".spec.minAvailable" field of the PDB to an integer value.')


# Workload kinds with a scale subresource, by the API groups the finders accept.
SCALABLE = {"ReplicationController": ("",), "ReplicaSet": ("apps", "extensions"),
            "Deployment": ("apps", "extensions"), "StatefulSet": ("apps",)}
# Controllers without one: getScaleController's error names their resource.
NOT_SCALABLE = {"Job": "jobs.batch", "CronJob": "cronjobs.batch", "DaemonSet": "daemonsets.apps", "Pod": "pods",
                "Node": "nodes"}


class ExpectedCountError(Exception):
    pass


class DisruptionController:
    def __init__(self, api: APIServer, clock: Clock, warn: Callable[[str], None] | None = None) -> None:
        self.api = api
        self.clock = clock
        self.warn = warn
        self._warned: set[tuple[str, str]] = set()  # (budget uid, controller uid) already reported
        self._deleted: set[str] = set()  # uids of scalable controllers deleted during the run
        self._absent_scale: dict[str, int] = {}  # uid of a controller not in the input -> most pods seen
        self.queue = WorkQueue(clock, self._sync)
        self._last_event: dict[tuple[str, str, str], str] = {}  # (ns, pdb, reason) -> last message
        # Selectors compiled once per budget spec: _on_pod asks for every pod event.
        self._selectors: dict[tuple[str, int], LabelSelector | None] = {}  # (uid, generation) -> selector
        # Kept from the watches, as the informers' indexers are, so neither a pod event nor a
        # sync scans the namespace: the budgets of each namespace (in the store's order), and
        # the pods each budget selects, with the creation order the store lists pods in.
        self._budgets: dict[str, dict[str, Obj]] = {}  # namespace -> name -> budget
        self._selected: dict[PodKey, tuple[LabelSelector | None, dict[PodKey, None]]] = {}
        self._created: dict[str, dict[str, int]] = {}  # namespace with budgets -> pod name -> order
        self._sequence = itertools.count()

    def start(self) -> None:
        for pdb in self.api.store.list("PodDisruptionBudget"):
            self._index_budget(pdb)
            self.queue.add(object_key(pdb))
        self.api.store.watch(self._on_pdb, {"PodDisruptionBudget"})
        self.api.store.watch(self._on_pod, {"Pod"}, while_held="PodDisruptionBudget")
        self.api.store.watch(self._on_scale, set(SCALABLE))

    def _on_pdb(self, ev: WatchEvent) -> None:
        if ev.type == "DELETED":
            self._selectors = {k: v for k, v in self._selectors.items() if k[0] != ev.obj["metadata"].get("uid")}
            ns, name = object_key(ev.obj)
            self._budgets.get(ns, {}).pop(name, None)
            self._selected.pop((ns, name), None)
        else:
            self._index_budget(ev.obj)
            self.queue.add(object_key(ev.obj))

    def _index_budget(self, pdb: Obj) -> None:
        """Remember the budget; a new selector (a new budget or spec) picks its pods anew."""
        key = object_key(pdb)
        if not self._budgets.get(key[0]):  # the namespace's first: its pods' order from here on
            self._created[key[0]] = {p["metadata"]["name"]: next(self._sequence)
                                     for p in self.api.store.list("Pod", key[0])}
        self._budgets.setdefault(key[0], {})[key[1]] = pdb
        selector = self._selector(pdb)
        known = self._selected.get(key)
        if known is None or known[0] is not selector:
            self._selected[key] = (selector, {object_key(p): None for p in self.api.store.list("Pod", key[0])
                                              if pdb_covers(pdb, p, selector)})

    def _on_pod(self, ev: WatchEvent) -> None:
        key = object_key(ev.obj)
        budgets = self._budgets.get(key[0])
        if not budgets:
            return
        if ev.type == ADDED:
            self._created[key[0]][key[1]] = next(self._sequence)
        elif ev.type == DELETED:
            self._created[key[0]].pop(key[1], None)
        for name, pdb in budgets.items():
            selected = self._selected[(key[0], name)][1]
            if ev.type != DELETED and pdb_covers(pdb, ev.obj, self._selector(pdb)):
                selected[key] = None
            else:
                selected.pop(key, None)
        for pod in (ev.obj, ev.old):
            if pod is None:
                continue
            for pdb in budgets.values():
                if pdb_covers(pdb, pod, self._selector(pdb)):
                    self.queue.add(object_key(pdb))

    def _selector(self, pdb: Obj) -> LabelSelector | None:
        key = (pdb["metadata"].get("uid", ""), pdb["metadata"].get("generation", 1))
        if key not in self._selectors:
            self._selectors[key] = pdb_selector(pdb)
        return self._selectors[key]

    def _on_scale(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            self._deleted.add(ev.obj["metadata"].get("uid", ""))
        elif ev.old is not None and (ev.old.get("spec") or {}).get("replicas") == (ev.obj.get("spec") or {}).get(
                "replicas"):
            return
        for pdb in self.api.store.list("PodDisruptionBudget", ev.obj["metadata"].get("namespace", "default")):
            self.queue.add(object_key(pdb))

    # ---- sync ------------------------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        pdb = self.api.store.get("PodDisruptionBudget", ns, name)
        if pdb is None:
            return
        # The pods it selects, in the order the store lists them.
        created = self._created[ns]
        keys = sorted(self._selected[key][1], key=lambda k: created[k[1]])
        pods = [p for k in keys if (p := self.api.store.get("Pod", *k)) is not None]
        if not pods:
            self._event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = self._expected(pdb, pods)
        except ExpectedCountError as e:
            self._event(pdb, "Warning", "CalculateExpectedPodCountFailed",
                        f"Failed to calculate the number of expected pods: {e}")
            self._fail_safe(pdb, str(e))
            return
        if unmanaged:
            self._event(pdb, "Normal", "UnmanagedPods",
                        UNMANAGED_MESSAGE.format(selector=_selector_text(pdb)))
        now = self.clock.now()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = sum(1 for p in pods if not is_terminating(p) and p["metadata"]["name"] not in disrupted
                      and is_pod_ready(p))
        self._update(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self.queue.add_after(key, recheck - now)

    def _expected(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        """getExpectedPodCount: (expectedCount, desiredHealthy, unmanaged pod names)."""
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self._expected_scale(pdb, pods)
            return expected, max(expected - scaled_value(spec["maxUnavailable"], expected, True), 0), unmanaged
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = self._expected_scale(pdb, pods)
            return expected, scaled_value(min_available, expected, True), unmanaged
        return 0, 0, []

    def _expected_scale(self, pdb: Obj, pods: list[Obj]) -> tuple[int, list[str]]:
        """getExpectedScale: the summed scale of the pods' controllers, each counted once; pods
        without one are unmanaged and counted nowhere."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            ns = pod["metadata"].get("namespace", "default")
            found = self._controller_scale(ref, ns)
            if found is None:
                found = self._absent_controller_scale(pdb, pod, ref)
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    def _controller_scale(self, ref: Obj, ns: str) -> tuple[str, int] | None:
        """The finders in upstream's order: (uid, replicas) of the workload that decides the pod's
        scale, None when none is found."""
        kind, group = ref.get("kind", ""), ref.get("apiVersion", "").rpartition("/")[0]
        if kind == "ReplicaSet" and group in SCALABLE[kind]:
            rs = self._get(ref, ns)
            parent = controller_of(rs) if rs is not None else None
            if rs is not None and (parent is None or parent.get("kind") != "Deployment"):
                return _scale(rs)
            deployment = self._get(parent, ns) if parent is not None else None
            if deployment is not None:
                return _scale(deployment)
        if kind in SCALABLE and group in SCALABLE[kind]:
            owner = self._get(ref, ns)  # getScaleController: its scale subresource
            return _scale(owner) if owner is not None else None
        if kind in NOT_SCALABLE:
            raise ExpectedCountError(f"{NOT_SCALABLE[kind]} does not implement the scale subresource")
        return None

    def _get(self, ref: Obj, ns: str) -> Obj | None:
        owner = self.api.store.get(ref.get("kind", ""), ns, ref.get("name", ""))
        return owner if owner is not None and owner["metadata"].get("uid") == ref.get("uid") else None

    def _absent_controller_scale(self, pdb: Obj, pod: Obj, ref: Obj) -> tuple[str, int]:
        """A controller the input lacks: counted as present when its reference names a workload
        with a scale, with as many replicas as the most pods it was seen to have at once;
        otherwise (or when it was deleted during the run) upstream's error."""
        uid = ref.get("uid", "")
        name = pod["metadata"]["name"]
        error = f'found no controllers for pod "{name}"'
        if uid in self._deleted:
            raise ExpectedCountError(error)
        ns = pod["metadata"].get("namespace", "default")
        if ref.get("kind") in SCALABLE:
            live = sum(1 for p in self.api.store.list("Pod", ns)
                       if (controller_of(p) or {}).get("uid") == uid and not is_terminal(p))
            self._absent_scale[uid] = max(self._absent_scale.get(uid, 0), live)
            return uid, self._absent_scale[uid]
        if self.warn is not None and (pdb["metadata"].get("uid", ""), uid) not in self._warned:
            self._warned.add((pdb["metadata"].get("uid", ""), uid))
            self.warn(f"PodDisruptionBudget/{ns}/{pdb['metadata']['name']}: the input lacks {ref.get('kind')}/{ns}/"
                      f"{ref.get('name')}, the controller of pod {ns}/{name}, and the disruption controller needs "
                      f"its scale to count the budget's expected pods ({error}): the budget allows no disruption")
        raise ExpectedCountError(error)

    def _disrupted_pods(self, pdb: Obj, pods: list[Obj], now: float) -> tuple[dict[str, str], float | None]:
        """buildDisruptedPodMap: approved evictions still waiting for their pod's deletion to
        start, and when the oldest of them expires."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: float | None = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if is_terminating(pod) or name not in recorded:
                continue
            expires = self.api.seconds(recorded[name]) + DELETION_TIMEOUT
            if expires < now:
                self._event(pdb, "Warning", "NotDeleted",
                            f"Pod was expected by PDB {pdb['metadata'].get('namespace')}/{pdb['metadata']['name']} "
                            "to be deleted but it wasn't")
                continue
            kept[name] = recorded[name]
            recheck = expires if recheck is None else min(recheck, expires)
        return kept, recheck

    def _update(self, pdb: Obj, healthy: int, desired: int, expected: int, disrupted: dict[str, str]) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        generation = pdb["metadata"].get("generation", 1)
        wanted = {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                  "disruptionsAllowed": allowed, "disruptedPods": disrupted, "observedGeneration": generation}
        status = pdb.get("status") or {}
        if all((status.get(k) or ({} if k == "disruptedPods" else 0)) == v for k, v in wanted.items()) \
                and status.get("conditions"):
            return
        now = self.api.timestamp()

        def write(st: Obj) -> None:
            st.update(wanted)
            if not disrupted:
                st.pop("disruptedPods", None)
            set_condition(st, disruption_allowed_condition(st, now))

        self._write(pdb, write)

    def _fail_safe(self, pdb: Obj, message: str) -> None:
        """On an error nothing may be disrupted until the next good sync."""
        now = self.api.timestamp()

        def write(st: Obj) -> bool:
            changed = st.get("disruptionsAllowed") != 0
            st["disruptionsAllowed"] = 0
            return set_condition(st, {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed",
                                      "message": message, "observedGeneration": st.get("observedGeneration"),
                                      "lastTransitionTime": now}) or changed

        self._write(pdb, write)

    def _write(self, pdb: Obj, mutate: Any) -> None:
        ns, name = object_key(pdb)
        with contextlib.suppress(NotFoundError):
            self.api.update_status("PodDisruptionBudget", ns, name, mutate)

    def _event(self, pdb: Obj, etype: str, reason: str, message: str) -> None:
        """Record an event on the budget; a repeat of the last one with that reason is folded
        into it, as the event recorder's aggregation does."""
        ns, name = object_key(pdb)
        if self._last_event.get((ns, name, reason)) == message:
            return
        self._last_event[(ns, name, reason)] = message
        self.api.record_event(pdb, etype, reason, message, source="controllermanager")


def _scale(owner: Obj) -> tuple[str, int]:
    replicas = (owner.get("spec") or {}).get("replicas")
    return owner["metadata"]["uid"], 1 if replicas is None else int(replicas)


def _selector_text(pdb: Obj) -> str:
    """The selector as labels.Selector.String() prints it (matchLabels only; enough for messages)."""
    selector = (pdb.get("spec") or {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or ():
        values = ",".join(sorted(e.get("values") or ()))
        op = e.get("operator")
        parts.append(f"{e.get('key')} {op.lower()} ({values})" if op in ("In", "NotIn")
                     else (e.get("key") if op == "Exists" else f"!{e.get('key')}"))
    return ",".join(sorted(parts))
