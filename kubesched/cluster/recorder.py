"""What a run reports, learnt by watching the API as any client could: every pod that ever existed
with its fate, the Events the components recorded, every removal of a running pod (its cause,
detail and replacement; removals repeated round a controller's replacements stop the run), the
objects the API refused and what the run noticed was off in its input.

The cause of a removal is the pod's DisruptionTarget condition (or the reason it failed with),
told apart by the Eviction requests the API server reported: who asked for the eviction that
started it. Its detail comes from the objects too: the remover's condition message, the pod's
status message, or the scheduler's `Preempted` Event (the preemptor). What no object records the
components report to the recorder as their Observer (kubesched.runtime.observer): preemptions with
their candidates and criterion, Eviction requests and answers, drains, descheduler passes, and the
kubelet's signal and threshold behind a node-pressure eviction (the pod's message names the
starved resource, not the signal, nor whether the threshold was hard or soft).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api.dra.allocator import DeviceID, allocated_devices
from kubesched.api.duration import format_duration
from kubesched.api.kinds import SIMULATED
from kubesched.api.objects import Obj, controller_of, get_condition, is_terminating, namespaced
from kubesched.api.quantity import format_amount
from kubesched.api.resources import pod_requests
from kubesched.api.served import resource_kind
from kubesched.controllers.statefulset import parent_and_ordinal
from kubesched.descheduler.framework import REQUESTER as DESCHEDULER_REQUESTER
from kubesched.scheduler.types import node_allocatable
from kubesched.store.base import ADDED, DELETED, WatchEvent

if TYPE_CHECKING:
    from kubesched.apiserver.server import APIServer
    from kubesched.descheduler.descheduler import PassRecord
    from kubesched.kubectl.drain import Drain
    from kubesched.runtime.clock import VirtualClock

LOOP_REPEATS = 10  # a removal repeated this many times through replacements is a loop

# DisruptionTarget condition reasons -> the removal reason results report.
REMOVAL_REASONS = {
    "PreemptionByScheduler": "Preempted",
    "EvictionByEvictionAPI": "EvictionAPI",
    "TerminationByKubelet": "Evicted",
    "DeletionByTaintManager": "TaintManagerEviction",
    "DeletionByDeviceTaintManager": "DeviceTaintManagerEviction",
    "DeletionByPodGC": "NodeLost",
}
# The scheduler's Event on each victim of a preemption.
_PREEMPTED = re.compile(r"Preempted by pod (?P<uid>\S+) on node \S+")

# The kubelet's record of a node-pressure eviction: signal, threshold, what was available, whether
# the threshold was hard, or (over a storage limit) the signal and the message.
PressureEviction = Mapping[str, Any]


@dataclass(slots=True)  # one per pod and per event of a run: slots keep them small
class PodHistory:
    """The last known state of a pod, kept after it is deleted."""

    obj: Obj
    deleted: bool = False
    deleted_at: float | None = None
    reason: str | None = None
    # Its life on the virtual clock, for timelines and pending-time statistics: when the API
    # created it, when it was bound (to `node`), and when it stopped holding the node's resources
    # (terminal, or deleted).
    created_at: float = 0.0
    bound_at: float | None = None
    node: str | None = None
    ended_at: float | None = None


@dataclass
class Disruption:
    """A running (or bound) pod's removal: when it began, why, and what replaced it."""

    time: float
    pod: str  # namespace/name
    uid: str
    node: str | None
    # Preempted, Evicted, TaintManagerEviction, DeviceTaintManagerEviction, EvictionAPI, Drained,
    # Descheduled, Deleted, or a failure reason
    cause: str
    detail: str
    owner_uid: str | None = None
    replacement: str | None = None
    scaled_down: bool = False
    repeats: int = 1  # how many removals in a row, this one included, each of the previous one's replacement
    # Why nothing will replace it although a controller owns it: "ReplicaSet/web-1 is not in the cluster".
    unowned: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"time": self.time, "pod": self.pod, "node": self.node, "cause": self.cause,
               "detail": self.detail, "replacement": self.replacement}
        if self.unowned:
            out["notReplaced"] = self.unowned
        return out


@dataclass
class Rejection:
    time: float
    object: str
    message: str
    code: int = 403


@dataclass(slots=True)
class ClusterEvent:
    time: float
    type: str
    reason: str
    object: str
    message: str


class Recorder:
    """Keeps what a run reports, an Observer of the run's components. `start` it on the API before
    any component watches, so that a removal is recorded before a controller's replacement for it
    is created."""

    def __init__(self, stop_on_loop: bool = True) -> None:
        self.pods: dict[str, PodHistory] = {}  # by uid, in creation order
        self.events: list[ClusterEvent] = []
        self.rejected: list[Rejection] = []
        self.disruptions: list[Disruption] = []
        self.warnings: list[str] = []  # what the run noticed was off (a loop, a snapshot pod)
        # Stop a run that goes round in circles (set when no end time was asked for).
        self.stop_on_loop = stop_on_loop
        self._replacing: dict[str, Disruption] = {}  # replacement pod uid -> the removal it replaced
        # Preemptions whose preemptor is named by the scheduler's Event, recorded just after the
        # victim's deletion began: victim uid -> (removal, its pod's controller).
        self._awaiting: dict[str, tuple[Disruption, Obj | None]] = {}
        self._first_eviction: dict[str, str] = {}  # pod uid -> requester of its first accepted eviction
        # What the components reported (see the Observer methods below).
        self.preemptions: list[Mapping[str, Any]] = []
        self.evictions: list[Mapping[str, Any]] = []  # every Eviction request with its answer, in order
        self.drains: list[Drain] = []
        self.pressure_evictions: dict[str, PressureEviction] = {}  # by pod uid
        self.passes: list[PassRecord] = []  # the descheduler's
        # The nodes' allocatable over the run, as changes: resource -> [(virtual time, +/- amount)]
        # (a node adds its allocatable when it joins, takes it away when it is deleted).
        self.allocatable_changes: dict[str, list[tuple[float, int]]] = {}
        # DRA devices per driver over the run, as changes: driver -> [(virtual time, +/- published,
        # +/- allocated)]. A device shared by several claims counts once, while any holds it.
        self.device_changes: dict[str, list[tuple[float, int, int]]] = {}
        self._holders: Counter[DeviceID] = Counter()

    def start(self, api: APIServer, clock: VirtualClock) -> None:
        """Watch `api`."""
        self.api = api
        self.clock = clock
        api.store.watch(self._track_pod, {"Pod"})
        api.store.watch(self._track_event, {"Event"})
        api.store.watch(self._track_node, {"Node"})
        api.store.watch(self._track_slice, {"ResourceSlice"})
        api.store.watch(self._track_claim, {"ResourceClaim"})

    # ---- what the components report (Observer) ----------------------------------------------------

    def preempted(self, record: Mapping[str, Any]) -> None:
        self.preemptions.append(record)

    def eviction(self, record: Mapping[str, Any]) -> None:
        if record["code"] == 200 and record.get("uid"):
            self._first_eviction.setdefault(record["uid"], record["requester"])
        self.evictions.append(record)

    def pressure_evicted(self, uid: str, record: Mapping[str, Any]) -> None:
        self.pressure_evictions[uid] = record

    def drain_started(self, drain: Drain) -> None:
        self.drains.append(drain)

    def descheduler_pass(self, record: PassRecord) -> None:
        self.passes.append(record)

    # ---- what the run's driver reports ------------------------------------------------------------

    def reject(self, obj: str, message: str, code: int) -> None:
        """The API refused a request about `obj` ("Kind/namespace/name"): a result, not bad input."""
        self.rejected.append(Rejection(self.clock.now(), obj, message, code))

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def check_snapshot(self) -> None:
        """Warn about nodes whose snapshot pods ask for more than the node has: they run (they
        did in the cluster exported), but the export is inconsistent (an edited file, a node
        resized since) and kubesched's answers for those nodes are only as good as it."""
        store = self.api.store
        used: dict[str, dict[str, int]] = {}
        for pod in store.list("Pod"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") == "Running":  # not those the kubelet admits yet
                totals = used.setdefault(node, {"pods": 0})
                totals["pods"] += 1
                for name, amount in pod_requests(pod["spec"]).items():
                    totals[name] = totals.get(name, 0) + amount
        for name, totals in used.items():
            node = store.get("Node", "", name)
            if node is None:
                continue
            alloc = node_allocatable(node)
            over = [f"{r} {format_amount(r, v)} > {format_amount(r, alloc.get(r, 0))}"
                    for r, v in sorted(totals.items()) if v > alloc.get(r, 0)]
            if over:
                self.warn(f"Node/{name}: its pods in the input request more than it has "
                          f"({', '.join(over)} allocatable); they are kept running as they are")

    def pod(self, namespace: str, name: str) -> PodHistory | None:
        """The latest pod with that name (a replacement with the same name wins over its predecessor)."""
        found = None
        for h in self.pods.values():
            meta = h.obj["metadata"]
            if meta.get("namespace") == namespace and meta["name"] == name:
                found = h
        return found

    # ---- pods -------------------------------------------------------------------------------------

    def _track_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        now = self.clock.now()
        if ev.type == ADDED or uid not in self.pods:
            self.pods[uid] = PodHistory(pod, created_at=now)
            owner = controller_of(pod)
            if ev.type == ADDED and owner is not None:
                self._note_replacement(pod, owner.get("uid"))
        history = self.pods[uid]
        history.obj = pod
        if history.bound_at is None and (node := pod["spec"].get("nodeName")):
            history.bound_at, history.node = now, node
        if history.ended_at is None and (ev.type == DELETED or (pod.get("status") or {}).get("phase")
                                         in ("Succeeded", "Failed")):
            history.ended_at = now
        if ev.type == DELETED:
            history.deleted = True
            history.deleted_at = now
            history.reason = self._removal_cause(pod)
        self._track_disruption(ev)

    def _removal_cause(self, pod: Obj) -> str:
        cond = get_condition(pod, "DisruptionTarget")
        cause = REMOVAL_REASONS.get(cond.get("reason", ""), "Deleted") if cond else "Deleted"
        if cause == "EvictionAPI":
            requester = self._evicted_by(pod["metadata"].get("uid", ""))
            if requester.startswith("drain/"):
                return "Drained"
            if requester == DESCHEDULER_REQUESTER:
                return "Descheduled"
        return cause

    def _evicted_by(self, uid: str) -> str:
        """Who asked for the first accepted eviction of the pod (it started the termination; later
        ones found it terminating)."""
        return self._first_eviction.get(uid, "")

    def _track_disruption(self, ev: WatchEvent) -> None:
        """Record a pod's removal once, when it begins: graceful termination starting, the pod
        failing on its node (kubelet eviction, admission, pod GC), or a deletion with no grace."""
        pod, old = ev.obj, ev.old
        if not pod.get("spec", {}).get("nodeName") or ev.type == ADDED or old is None:
            return  # a pod that never had a node is not disrupted by going away
        if is_terminating(old) or old.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return  # recorded already, or it had finished
        status = pod.get("status") or {}
        if ev.type == DELETED or is_terminating(pod):
            cause = self._removal_cause(pod)
        elif status.get("phase") == "Failed":
            # Marked by a controller (pod GC): its reason; failed by the kubelet: the kubelet's.
            target = (get_condition(pod, "DisruptionTarget") or {}).get("reason")
            cause = self._removal_cause(pod) if target in REMOVAL_REASONS and target != "TerminationByKubelet" \
                else status.get("reason") or "Failed"
        else:
            return
        key = f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
        owner = controller_of(pod)
        d = Disruption(
            self.clock.now(), key, pod["metadata"].get("uid", ""), pod["spec"]["nodeName"], cause,
            self._removal_detail(pod, cause), owner.get("uid") if owner else None,
            # removed by its own controller's scale-down: no replacement is coming
            scaled_down=owner is not None and cause == "Deleted" and self._scaled_down(pod, owner),
            unowned=self._absent_controller(key, owner) if owner is not None else None)
        before = self._replacing.pop(d.uid, None)
        if before is not None and (before.node, before.cause) == (d.node, d.cause):
            d.repeats = before.repeats + 1
        self.disruptions.append(d)
        if cause == "Preempted":
            self._awaiting[d.uid] = (d, owner)  # the loop check waits for the detail
        else:
            self._check_loop(d, owner)

    def _check_loop(self, d: Disruption, owner: Obj | None) -> None:
        if owner is not None and d.repeats >= LOOP_REPEATS and self.stop_on_loop:
            self._stop_loop(d, owner)

    def _stop_loop(self, d: Disruption, owner: Obj) -> None:
        """The same pods are removed and recreated over and over: nothing new will happen."""
        ns = d.pod.split("/", 1)[0]
        why = f"{d.cause}: {d.detail}" if d.detail else d.cause
        self.warn(
            f"stopped at {format_duration(self.clock.now())} of virtual time: {owner.get('kind')}/{ns}/"
            f"{owner.get('name')} is going round in circles - its pod on {d.node} was removed ({why}), replaced, "
            f"and the replacement removed the same way, {d.repeats} times in a row; pass --until to run regardless")
        self.clock.stop()

    def _absent_controller(self, key: str, owner: Obj) -> str | None:
        """Why a pod's controller will not replace it: the export lacked the controller, or it is
        of a kind nothing in kubesched runs (an operator's custom resource)."""
        kind, name = owner.get("kind", ""), owner.get("name", "")
        stored = resource_kind({"apiVersion": owner.get("apiVersion"), "kind": kind})
        if self.api.store.get(stored, "" if not namespaced(kind) else key.split("/", 1)[0], name) is None:
            return f"{kind}/{name} is not in the cluster"
        return None if kind in SIMULATED else f"{kind}/{name} is not simulated"

    def _scaled_down(self, pod: Obj, owner: Obj) -> bool:
        """Whether a deleted pod's ReplicaSet (or ReplicationController) still has all the replicas
        it wants without it, or a StatefulSet's has an ordinal beyond them."""
        store = self.api.store
        ns = pod["metadata"].get("namespace", "default")
        kind = owner.get("kind", "")
        rs = store.get(kind, ns, owner.get("name", "")) \
            if kind in ("ReplicaSet", "ReplicationController", "StatefulSet") else None
        if rs is None or (rs.get("spec") or {}).get("replicas") is None:
            return False
        if kind == "StatefulSet":
            start = ((rs["spec"].get("ordinals") or {}).get("start")) or 0
            return parent_and_ordinal(pod["metadata"]["name"])[1] >= start + rs["spec"]["replicas"]
        active = sum(1 for p in store.list("Pod", ns)
                     if not is_terminating(p) and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                     and (controller_of(p) or {}).get("uid") == owner.get("uid"))
        return active >= rs["spec"]["replicas"]

    def _removal_detail(self, pod: Obj, cause: str) -> str:
        """What the results say besides the cause, as far as the pod tells: the kubelet's signal,
        the remover's condition message, or the kubelet's own status message. A preemption's
        detail follows in the scheduler's Event (see _track_event)."""
        pressure = self.pressure_evictions.get(pod["metadata"].get("uid", "")) if cause == "Evicted" else None
        if pressure is not None and "threshold" in pressure:
            kind = "hard" if pressure["hard"] else "soft"
            return f"{pressure['signal']} {pressure['available']} < {pressure['threshold']} ({kind} threshold)"
        if pressure is not None:
            return f"{pressure['signal']}: {pressure['message']}"
        if cause in REMOVAL_REASONS.values() or cause == "Drained":
            return (get_condition(pod, "DisruptionTarget") or {}).get("message", "")
        return (pod.get("status") or {}).get("message") or ""

    def _note_replacement(self, pod: Obj, owner_uid: str | None) -> None:
        """The new pod replaces its owner's earliest removal still unreplaced; a pod recreated
        under the same name (a StatefulSet's) replaces its own predecessor first."""
        meta = pod["metadata"]
        key = f"{meta.get('namespace', 'default')}/{meta['name']}"
        waiting = [d for d in self.disruptions
                   if d.owner_uid == owner_uid and d.replacement is None and not d.scaled_down]
        d = next((d for d in waiting if d.pod == key), waiting[0] if waiting else None)
        if d is not None:
            d.replacement = key
            self._replacing[meta.get("uid", "")] = d

    # ---- Events -----------------------------------------------------------------------------------

    def _track_node(self, ev: WatchEvent) -> None:
        old = node_allocatable(ev.old) if ev.old is not None else {}
        new = node_allocatable(ev.obj) if ev.type != DELETED else {}
        if old == new:
            return
        now = self.clock.now()
        for name in old.keys() | new.keys():
            delta = new.get(name, 0) - old.get(name, 0)
            if delta:
                self.allocatable_changes.setdefault(name, []).append((now, delta))

    def _track_slice(self, ev: WatchEvent) -> None:
        def published(obj: Obj | None) -> Counter[str]:
            spec = (obj or {}).get("spec") or {}
            return Counter({spec.get("driver", ""): len(spec.get("devices") or ())})
        delta = published(None if ev.type == DELETED else ev.obj)
        delta.subtract(published(ev.old))
        now = self.clock.now()
        for driver, n in delta.items():
            if n:
                self.device_changes.setdefault(driver, []).append((now, n, 0))

    def _track_claim(self, ev: WatchEvent) -> None:
        old = allocated_devices(ev.old) if ev.old is not None else []
        new = allocated_devices(ev.obj) if ev.type != DELETED else []
        if old == new:
            return
        delta: Counter[str] = Counter()
        for dev in old:
            self._holders[dev] -= 1
            if not self._holders[dev]:
                del self._holders[dev]
                delta[dev[0]] -= 1
        for dev in new:
            self._holders[dev] += 1
            if self._holders[dev] == 1:
                delta[dev[0]] += 1
        now = self.clock.now()
        for driver, n in delta.items():
            if n:
                self.device_changes.setdefault(driver, []).append((now, 0, n))

    def _track_event(self, ev: WatchEvent) -> None:
        """Keep every Event; the scheduler's `Preempted` one names the preemptor of a victim whose
        removal began just before."""
        if ev.type != ADDED:
            return
        e = ev.obj
        inv = e["involvedObject"]
        name = f"{inv['kind']}/{inv['namespace']}/{inv['name']}" if inv.get("namespace") else \
            f"{inv['kind']}/{inv['name']}"
        self.events.append(ClusterEvent(self.clock.now(), e["type"], e["reason"], name, e["message"]))
        found = _PREEMPTED.fullmatch(e["message"]) if e["reason"] == "Preempted" and inv["kind"] == "Pod" else None
        waiting = self._awaiting.pop(inv.get("uid") or "", None) if found is not None else None
        if waiting is None or found is None:
            return
        d, owner = waiting
        preemptor = self.pods.get(found["uid"])
        if preemptor is not None:
            meta = preemptor.obj["metadata"]
            priority = (preemptor.obj.get("spec") or {}).get("priority") or 0
            d.detail = f"by {meta.get('namespace', 'default')}/{meta['name']} (priority {priority})"
        self._check_loop(d, owner)
