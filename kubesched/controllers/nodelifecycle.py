"""The node lifecycle controller: taints nodes by their conditions, so that the scheduler and the
taint eviction controller act on taints alone.

Follows pkg/controller/nodelifecycle (v1.35):

- NoSchedule taints mirror the conditions on every node change (doNoScheduleTaintingPass):
  Ready False -> node.kubernetes.io/not-ready, Ready Unknown -> node.kubernetes.io/unreachable,
  MemoryPressure / DiskPressure / PIDPressure / NetworkUnavailable True -> memory-pressure,
  disk-pressure, pid-pressure, network-unavailable, and spec.unschedulable -> unschedulable.
  A NoSchedule taint with one of these keys that nothing calls for is removed.
- A node whose Ready is False or Unknown gets the not-ready or unreachable NoExecute taint, which
  the taint eviction controller acts on. Nodes wait in a queue per zone that lets through
  --node-eviction-rate (0.1 nodes/s, burst 1); a node already carrying the opposite one swaps at
  once. Ready True again removes both.
- Zone states (handleDisruption, --unhealthy-zone-threshold 0.55, --large-cluster-size-threshold
  50, --secondary-node-eviction-rate 0.01): a zone with more than two not-Ready nodes making up
  55 % or more of it slows to 0.01 nodes/s if it has more than 50 nodes, else stops; a zone with
  no Ready node is fully disrupted. When every zone is, the controller assumes the fault is its
  own: it removes every not-ready/unreachable NoExecute taint and taints nothing until a node is
  Ready again. A single-node cluster whose node fails therefore evicts nothing, as upstream.
  Nodes labelled node.kubernetes.io/exclude-disruption do not count.
- When a node's Ready leaves True: a NodeNotReady event on it, and its pods' Ready condition set
  to False with a NodeNotReady warning each (MarkPodsNotReady).

Every taint it adds carries timeAdded.

Deliberate differences. Simulated kubelets always report, so there are no heartbeats or leases:
a node without a Ready condition counts as Ready, and a node stops reporting when something (a
scenario `patch`) sets its Ready condition to False or Unknown; nodeMonitorGracePeriod and
nodeStartupGracePeriod play no part. What upstream's 5 s monitor loop would notice is handled at
the instant of the change. The RegisteredNode/RemovingNode events are not recorded, and a node
seen for the first time keeps the NoExecute taints it came with (upstream strips and re-adds
them when the controller restarts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.nodetree import zone_key
from kubesched.api.objects import Obj, get_condition, set_condition
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import WatchEvent
from kubesched.store.podindex import PodIndexes, PodsByNode

SOURCE = "node-controller"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# Condition type -> {status: taint key} (nodeConditionToTaintKeyStatusMap).
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
# The NoSchedule taints this controller owns.
MANAGED_NO_SCHEDULE = frozenset({UNSCHEDULABLE, *(k for m in CONDITION_TAINTS.values() for k in m.values())})
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"

EVICTION_RATE = 0.1  # --node-eviction-rate, nodes per second per zone
SECONDARY_EVICTION_RATE = 0.01  # --secondary-node-eviction-rate
LARGE_CLUSTER_THRESHOLD = 50  # --large-cluster-size-threshold
UNHEALTHY_ZONE_THRESHOLD = 0.55  # --unhealthy-zone-threshold

INITIAL, NORMAL, PARTIAL, FULL = "Initial", "Normal", "PartialDisruption", "FullDisruption"

TaintRef = tuple[str, str]  # key, effect


def ready_status(node: Obj) -> str:
    """The Ready condition's status; "True" without one (a simulated kubelet always reports)."""
    cond = get_condition(node, "Ready")
    return "True" if cond is None else cond.get("status", "Unknown")


def has_taint(node: Obj, key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect for t in (node.get("spec") or {}).get("taints") or ())


@dataclass
class TokenBucket:
    """flowcontrol's token bucket limiter with burst 1; rate 0 never lets anything through."""

    qps: float
    tokens: float
    last: float

    def _refill(self, now: float) -> None:
        self.tokens = min(1.0, self.tokens + (now - self.last) * self.qps)
        self.last = now

    def try_accept(self, now: float) -> bool:
        self._refill(now)
        if self.tokens >= 1.0 - 1e-9:
            self.tokens -= 1.0
            return True
        return False

    def next_token(self) -> float | None:
        return None if self.qps <= 0 else self.last + (1.0 - self.tokens) / self.qps

    def swapped(self, qps: float, now: float) -> TokenBucket:
        """SwapLimiter: a new limiter, drained if the old one had no token left."""
        if qps == self.qps:
            return self
        if qps <= 0:
            return TokenBucket(0.0, 0.0, now)
        new = TokenBucket(qps, 1.0, now)
        if not self.try_accept(now):
            new.try_accept(now)
        return new


@dataclass
class ZoneTainter:
    """A zone's RateLimitedTimedQueue: nodes waiting for their NoExecute taint, in order. A node
    stays known after its turn, so it is not queued again until it is removed (recovered, or
    found without its taint)."""

    limiter: TokenBucket
    waiting: dict[str, None] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)
    retry: Timer | None = None

    def add(self, name: str) -> None:
        if name not in self.known:
            self.known.add(name)
            self.waiting[name] = None

    def remove(self, name: str) -> None:
        self.known.discard(name)
        self.waiting.pop(name, None)


@dataclass(frozen=True)
class NodeHealth:
    zone: str
    ready: str  # the Ready status last observed
    excluded: bool  # from zone disruption checks


class NodeLifecycleController:
    pods: PodsByNode  # the store's pods by node, from start()

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        self.api = api
        self.clock = clock
        self.indexes = indexes or PodIndexes(api.store)  # shared: see PodIndexes
        self._health: dict[str, NodeHealth] = {}
        self._tainters: dict[str, ZoneTainter] = {}  # zone -> its NoExecute tainting queue
        self._states: dict[str, str] = {}  # zone -> disruption state
        self._node_queue = WorkQueue(clock, self._sync_node)
        self._pass_queue = WorkQueue(clock, lambda _: self._monitor_pass())

    def start(self) -> None:
        self.pods = self.indexes.by_node()
        for node in self.api.store.list("Node"):
            self._node_queue.add(node["metadata"]["name"])
        self.api.store.watch(self._on_node, {"Node"})

    def _on_node(self, ev: WatchEvent) -> None:
        self._node_queue.add(ev.obj["metadata"]["name"])

    # ---- per node -----------------------------------------------------------------------------

    def _sync_node(self, name: str) -> None:
        node = self.api.store.get("Node", "", name)
        if node is None:
            if self._health.pop(name, None) is not None:
                self._pass_queue.add(None)
            return
        self._taint_by_conditions(node)
        node = self.api.get("Node", "", name)
        ready = ready_status(node)
        before = self._health.get(name)
        if before is not None and before.ready == "True" and ready != "True":
            self.api.record_event(node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady",
                                  source=SOURCE)
            self._mark_pods_not_ready(name)
        health = NodeHealth(zone_key(node), ready, EXCLUDE_DISRUPTION_LABEL in (node["metadata"].get("labels") or {}))
        if health.zone not in self._tainters:
            self._tainters[health.zone] = ZoneTainter(TokenBucket(EVICTION_RATE, 1.0, self.clock.now()))
        self._health[name] = health
        if ready == "True":
            self._mark_reachable(node)
        if health != before or ready != "True":
            self._pass_queue.add(None)

    def _taint_by_conditions(self, node: Obj) -> None:
        """doNoScheduleTaintingPass."""
        wanted = []
        for cond in (node.get("status") or {}).get("conditions") or ():
            key = CONDITION_TAINTS.get(cond.get("type", ""), {}).get(cond.get("status", ""))
            if key is not None:
                wanted.append(key)
        if (node.get("spec") or {}).get("unschedulable"):
            wanted.append(UNSCHEDULABLE)
        have = [t["key"] for t in (node.get("spec") or {}).get("taints") or ()
                if t.get("effect") == "NoSchedule" and t.get("key") in MANAGED_NO_SCHEDULE]
        add = [(k, "NoSchedule") for k in wanted if k not in have]
        remove = [(k, "NoSchedule") for k in have if k not in wanted]
        if add or remove:
            self._swap_taints(node["metadata"]["name"], add, remove)

    def _mark_pods_not_ready(self, name: str) -> None:
        """MarkPodsNotReady: each pod's Ready condition goes False, with a warning."""
        now = self.api.timestamp()
        for pod in self.pods.pods(name):
            cond = get_condition(pod, "Ready")
            if cond is None or cond.get("status") == "False":
                continue
            meta = pod["metadata"]
            new = {**cond, "status": "False", "lastTransitionTime": now}
            self.api.update_status("Pod", meta.get("namespace", "default"), meta["name"],
                                   lambda status, new=new: set_condition(status, new))
            self.api.record_event(pod, "Warning", "NodeNotReady", "Node is not ready", source=SOURCE)

    def _mark_reachable(self, node: Obj) -> None:
        """markNodeAsReachable: no NoExecute not-ready/unreachable taint, and out of the queue."""
        name = node["metadata"]["name"]
        remove = [(k, "NoExecute") for k in (UNREACHABLE, NOT_READY) if has_taint(node, k, "NoExecute")]
        if remove:
            self._swap_taints(name, [], remove)
        self._tainters[zone_key(node)].remove(name)

    # ---- the monitor pass: NoExecute taints and zone states ------------------------------------

    def _monitor_pass(self) -> None:
        for name, health in list(self._health.items()):
            if health.ready != "True":
                self._process_taint_based_eviction(name, health.ready)
        self._handle_disruption()
        for tainter in self._tainters.values():
            self._try_tainting(tainter)

    def _process_taint_based_eviction(self, name: str, ready: str) -> None:
        """A not-Ready node: swap at once if it has the opposite taint, else queue it."""
        node = self.api.store.get("Node", "", name)
        if node is None or ready not in ("False", "Unknown"):
            return
        taint, opposite = (NOT_READY, UNREACHABLE) if ready == "False" else (UNREACHABLE, NOT_READY)
        if has_taint(node, opposite, "NoExecute"):
            self._swap_taints(name, [(taint, "NoExecute")], [(opposite, "NoExecute")])
            return
        tainter = self._tainters[zone_key(node)]
        if not has_taint(node, taint, "NoExecute"):
            tainter.remove(name)
        tainter.add(name)

    def _try_tainting(self, tainter: ZoneTainter) -> None:
        """doNoExecuteTaintingPass for one zone: as many nodes as the limiter lets through; the
        rest wait for its next token."""
        if tainter.retry is not None:
            tainter.retry.cancel()
            tainter.retry = None
        while tainter.waiting:
            if not tainter.limiter.try_accept(self.clock.now()):
                at = tainter.limiter.next_token()
                if at is not None:
                    tainter.retry = self.clock.call_at(at, lambda: self._retry_tainting(tainter))
                return
            name = next(iter(tainter.waiting))
            del tainter.waiting[name]
            self._taint_not_ready(name)

    def _retry_tainting(self, tainter: ZoneTainter) -> None:
        tainter.retry = None  # it has run: cancelling it now would upset the clock's count
        self._try_tainting(tainter)

    def _taint_not_ready(self, name: str) -> None:
        node = self.api.store.get("Node", "", name)
        if node is None:
            return
        ready = ready_status(node)
        if ready == "False":
            self._swap_taints(name, [(NOT_READY, "NoExecute")], [(UNREACHABLE, "NoExecute")])
        elif ready == "Unknown":
            self._swap_taints(name, [(UNREACHABLE, "NoExecute")], [(NOT_READY, "NoExecute")])

    def _handle_disruption(self) -> None:
        """handleDisruption: each zone's state sets its tainting rate; when every zone is fully
        disrupted, nothing is tainted and the NoExecute taints already added are taken back."""
        counts: dict[str, list[int]] = {}  # zone -> [ready, not ready]
        for health in self._health.values():
            if not health.excluded:
                counts.setdefault(health.zone, [0, 0])[health.ready != "True"] += 1
        new_states = {zone: _zone_state(ready, not_ready) for zone, (ready, not_ready) in counts.items()}
        all_full = all(s == FULL for s in new_states.values())
        for zone in new_states:
            self._states.setdefault(zone, INITIAL)
        for zone in [z for z in self._states if z not in new_states]:
            del self._states[zone]
        all_were_full = all(s == FULL for s in self._states.values())
        if all_full and all_were_full:
            return
        if all_full:
            for name in list(self._health):
                node = self.api.store.get("Node", "", name)
                if node is not None:
                    self._mark_reachable(node)
            for zone in self._states:
                self._set_rate(zone, 0.0)
                self._states[zone] = FULL
            return
        for zone, state in self._states.items():
            new = new_states[zone]
            if state != new or all_were_full:
                self._set_rate(zone, _zone_rate(new, sum(counts[zone])))
                self._states[zone] = new

    def _set_rate(self, zone: str, qps: float) -> None:
        tainter = self._tainters[zone]
        tainter.limiter = tainter.limiter.swapped(qps, self.clock.now())

    # ---- writing taints -----------------------------------------------------------------------

    def _swap_taints(self, name: str, add: list[TaintRef], remove: list[TaintRef]) -> None:
        """SwapNodeControllerTaint: add (stamped with timeAdded; a same key and effect taint is
        replaced) and remove by key and effect, in one write."""
        node = self.api.get("Node", "", name)
        taints = list((node.get("spec") or {}).get("taints") or ())
        stamp = self.api.timestamp()
        for key, effect in add:
            new = {"key": key, "effect": effect, "timeAdded": stamp}
            i = next((i for i, t in enumerate(taints) if (t.get("key"), t.get("effect")) == (key, effect)), None)
            if i is None:
                taints.append(new)
            else:
                taints[i] = new
        kept = [t for t in taints if (t.get("key"), t.get("effect")) not in remove]
        if kept != ((node.get("spec") or {}).get("taints") or []):
            self.api.patch("Node", "", name, {"spec": {"taints": kept or None}})


def _zone_state(ready: int, not_ready: int) -> str:
    """ComputeZoneState."""
    if ready == 0 and not_ready > 0:
        return FULL
    if not_ready > 2 and not_ready / (ready + not_ready) >= UNHEALTHY_ZONE_THRESHOLD:
        return PARTIAL
    return NORMAL


def _zone_rate(state: str, size: int) -> float:
    """setLimiterInZone: a fully disrupted zone (while others are not) taints at the normal rate."""
    if state == PARTIAL:
        return SECONDARY_EVICTION_RATE if size > LARGE_CLUSTER_THRESHOLD else 0.0
    return EVICTION_RATE
