"""The disruption controller: keeps every PodDisruptionBudget's status true.

Follows pkg/controller/disruption (v1.35). For each budget it finds the pods its selector picks,
works out how many are expected (an integer minAvailable counts the pods themselves; a percentage
or maxUnavailable needs the scale of the pods' controllers — a Deployment's replicas for the
pods of its ReplicaSets, a bare ReplicaSet's own), how many must stay healthy (percentages round
up) and how many are healthy now (Ready, not terminating, not just approved for eviction). The
difference, never below zero, is `disruptionsAllowed`.

A pod counts as disrupted from the moment its graceful termination starts (seed 002,
"Disruption budget"): a terminating pod is never healthy. An eviction the API server approved is
recorded in status.disruptedPods; if the pod is still not being deleted two minutes later the
controller stops counting it as disrupted.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.intstr import scaled_value
from kubesched.api.objects import Obj, controller_of, is_pod_ready, is_terminating, set_condition
from kubesched.api.pdb import disruption_allowed_condition, pdb_covers, pdb_selector
from kubesched.api.selectors import LabelSelector
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.podindex import object_key
from kubesched.controllers.workqueue import WorkQueue
from kubesched.store.base import WatchEvent

DELETION_TIMEOUT = 120.0  # seconds an approved eviction may take to start deleting the pod
UNMANAGED_MESSAGE = (
    "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. As a result, "
    "the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account "
    'for these pods please set ".spec.minAvailable" field of the PDB to an integer value.')


class ExpectedCountError(Exception):
    pass


class DisruptionController:
    def __init__(self, api: APIServer, clock: Any) -> None:
        self.api = api
        self.clock = clock
        self.queue = WorkQueue(clock, self._sync)
        self._last_event: dict[tuple[str, str, str], str] = {}  # (ns, pdb, reason) -> last message
        # Selectors compiled once per budget spec: _on_pod asks for every pod event.
        self._selectors: dict[tuple[str, int], LabelSelector | None] = {}  # (uid, generation) -> selector

    def start(self) -> None:
        for pdb in self.api.store.list("PodDisruptionBudget"):
            self.queue.add(object_key(pdb))
        self.api.store.watch(self._on_pdb, {"PodDisruptionBudget"})
        self.api.store.watch(self._on_pod, {"Pod"})
        self.api.store.watch(self._on_scale, {"ReplicaSet", "Deployment"})

    def _on_pdb(self, ev: WatchEvent) -> None:
        if ev.type == "DELETED":
            self._selectors = {k: v for k, v in self._selectors.items() if k[0] != ev.obj["metadata"].get("uid")}
        else:
            self.queue.add(object_key(ev.obj))

    def _on_pod(self, ev: WatchEvent) -> None:
        for pod in (ev.obj, ev.old):
            if pod is None:
                continue
            ns = pod["metadata"].get("namespace", "default")
            for pdb in self.api.store.list("PodDisruptionBudget", ns):
                if pdb_covers(pdb, pod, self._selector(pdb)):
                    self.queue.add(object_key(pdb))

    def _selector(self, pdb: Obj) -> LabelSelector | None:
        key = (pdb["metadata"].get("uid", ""), pdb["metadata"].get("generation", 1))
        if key not in self._selectors:
            self._selectors[key] = pdb_selector(pdb)
        return self._selectors[key]

    def _on_scale(self, ev: WatchEvent) -> None:
        if ev.old is not None and (ev.old.get("spec") or {}).get("replicas") == (ev.obj.get("spec") or {}).get(
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
        selector = self._selector(pdb)
        pods = [p for p in self.api.store.list("Pod", ns) if pdb_covers(pdb, p, selector)]
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
            expected, unmanaged = self._expected_scale(pods)
            return expected, max(expected - scaled_value(spec["maxUnavailable"], expected, True), 0), unmanaged
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = self._expected_scale(pods)
            return expected, scaled_value(min_available, expected, True), unmanaged
        return 0, 0, []

    def _expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """The summed scale of the pods' controllers, each counted once; pods without one are
        unmanaged and counted nowhere."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = self._controller_scale(ref, pod["metadata"].get("namespace", "default"))
            if found is None:
                raise ExpectedCountError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    def _controller_scale(self, ref: Obj, ns: str) -> tuple[str, int] | None:
        """(uid, replicas) of the workload that decides the pod's scale: a ReplicaSet's
        Deployment when it has one, else the ReplicaSet (or other scalable controller) itself."""
        owner = self.api.store.get(ref.get("kind", ""), ns, ref.get("name", ""))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        parent = controller_of(owner)
        if ref.get("kind") == "ReplicaSet" and parent is not None and parent.get("kind") == "Deployment":
            return self._controller_scale(parent, ns)
        replicas = (owner.get("spec") or {}).get("replicas")
        if ref.get("kind") not in ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController"):
            return None
        return owner["metadata"]["uid"], 1 if replicas is None else int(replicas)

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
