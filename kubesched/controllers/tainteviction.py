"""The taint eviction controller (the "taint manager"): removes pods from nodes whose NoExecute
taints they do not tolerate.

Follows pkg/controller/tainteviction (v1.35). It keeps each node's NoExecute taints and, when
they change or a pod lands on (or changes its tolerations on) a tainted node, decides the pod's
fate from the first toleration that matches each taint:

- a taint nothing tolerates: the pod is deleted at once;
- all tolerated: the smallest `tolerationSeconds` among those tolerations (zero or less: at once),
  counted from the moment the pod came under the taints (in a snapshot: from the taints'
  timeAdded or the pod's start, whichever is later); none set: it stays for good.

A scheduled eviction is kept as it is when the pod is looked at again (upstream compares its
creation time with a later `now`, so the older one always wins). It is cancelled, with a
"Cancelling deletion" event, when the node's NoExecute taints are gone, when the pod comes to
tolerate them forever, or when the pod itself is gone. Deleting a node only forgets its taints:
pending evictions stay until they fire or the pod goes (PodGC removes the orphans), as upstream.
When one fires: a "Marking for deletion" event, the DisruptionTarget condition
(DeletionByTaintManager), then an ordinary delete, so the pod gets its own grace period.

Deliberate difference: a pod that is already terminating is left alone. Upstream would repeat
the event and overwrite its DisruptionTarget reason, and its second delete would change nothing.
"""

from __future__ import annotations

import contextlib

from kubesched.api.objects import Obj, is_terminating, set_condition
from kubesched.api.taints import tolerates
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import MODIFIED, WatchEvent
from kubesched.store.podindex import PodIndexes, PodKey, PodsByNode, object_key

SOURCE = "taint-eviction-controller"
EVENT_REASON = "TaintManagerEviction"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"

def no_execute_taints(node: Obj | None) -> list[Obj]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]


def matching_tolerations(taints: list[Obj], tolerations: list[Obj]) -> list[Obj] | None:
    """GetMatchingTolerations: the first toleration matching each taint, or None when a taint has
    none."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def min_toleration_seconds(tolerations: list[Obj]) -> float | None:
    """getMinTolerationTime: seconds until eviction, None for never."""
    if not tolerations:
        return 0.0
    limits = [t["tolerationSeconds"] for t in tolerations if t.get("tolerationSeconds") is not None]
    if not limits:
        return None
    return float(max(min(limits), 0))


class TaintEvictionController:
    pods: PodsByNode  # the store's pods by node, from start()

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        self.api = api
        self.clock = clock
        self.indexes = indexes or PodIndexes(api.store)  # shared: see PodIndexes
        self._tainted: dict[str, list[Obj]] = {}  # node -> its NoExecute taints (taintedNodes)
        self._evictions: dict[PodKey, Timer] = {}  # pending timed evictions
        self._node_queue = WorkQueue(clock, self._sync_node)
        self._pod_queue = WorkQueue(clock, self._sync_pod)

    def start(self) -> None:
        store = self.api.store
        self.pods = self.indexes.by_node()
        for node in store.list("Node"):
            self._node_queue.add(node["metadata"]["name"])
        for pod in store.list("Pod"):
            self._pod_queue.add(object_key(pod))
        store.watch(self._on_node, {"Node"})
        store.watch(self._on_pod, {"Pod"})

    # ---- watch handlers ---------------------------------------------------------------------

    def _on_node(self, ev: WatchEvent) -> None:
        if ev.type == MODIFIED and no_execute_taints(ev.old) == no_execute_taints(ev.obj):
            return
        self._node_queue.add(ev.obj["metadata"]["name"])

    def _on_pod(self, ev: WatchEvent) -> None:
        if ev.type == MODIFIED and ev.old is not None:
            old, new = ev.old.get("spec") or {}, ev.obj.get("spec") or {}
            if (old.get("tolerations") or []) == (new.get("tolerations") or []) \
                    and old.get("nodeName") == new.get("nodeName"):
                return
        key = object_key(ev.obj)
        if key not in self._evictions and (not (ev.obj.get("spec") or {}).get("nodeName")
                                           or not self._tainted and not self._node_queue.waiting()):
            # Its sync would find no eviction to cancel and no tainted node: the pod has no node
            # (its binding will be an event of its own), or no node is tainted and only a node
            # sync, none of which can run before it, would taint one.
            return
        self._pod_queue.add(key)

    # ---- syncs --------------------------------------------------------------------------------

    def _sync_node(self, name: str) -> None:
        """handleNodeUpdate. A deleted node's pods keep their pending evictions."""
        node = self.api.store.get("Node", "", name)
        taints = no_execute_taints(node)
        if taints:
            self._tainted[name] = taints
        else:
            self._tainted.pop(name, None)
        if node is None:
            return
        pods = self.pods.pods(name)
        if not taints:
            for pod in pods:
                self._cancel(object_key(pod))
            return
        now = self.clock.now()
        for pod in pods:
            self._process(pod, taints, now)

    def _sync_pod(self, key: PodKey) -> None:
        """handlePodUpdate."""
        pod = self.api.store.get("Pod", *key)
        if pod is None:
            self._cancel(key)
            return
        taints = self._tainted.get(pod["spec"].get("nodeName") or "")
        if taints:
            self._process(pod, taints, self.clock.now())

    def _process(self, pod: Obj, taints: list[Obj], now: float) -> None:
        """processPodOnNode."""
        if is_terminating(pod):
            return
        key = object_key(pod)
        used = matching_tolerations(taints, pod["spec"].get("tolerations") or [])
        if used is None:
            self._cancel(key)
            self._evict(key)
            return
        seconds = min_toleration_seconds(used)
        if seconds is None:
            self._cancel(key)
            return
        if key in self._evictions:
            return
        since = self._tainted_since(pod, taints, now)
        if since + seconds <= now:
            self._evict(key)
            return
        self._evictions[key] = self.clock.call_at(since + seconds, lambda: self._fire(key))

    def _tainted_since(self, pod: Obj, taints: list[Obj], now: float) -> float:
        """When the pod's countdown started. Upstream starts it when the controller first sees
        the pod under the taints, which in a live cluster is when the taint was added or the pod
        arrived; a snapshot carries both times (the taint's timeAdded, the pod's startTime), so
        its countdown goes on from the real past instead of starting again at the export."""
        added = [self.api.seconds(t["timeAdded"]) for t in taints if t.get("timeAdded")]
        if len(added) < len(taints):
            return now  # a taint without timeAdded: added just now
        started = (pod.get("status") or {}).get("startTime")  # none yet: just bound, arriving now
        return min(max(min(added), self.api.seconds(started) if started else now), now)

    # ---- evictions ----------------------------------------------------------------------------

    def _fire(self, key: PodKey) -> None:
        del self._evictions[key]
        self._evict(key)

    def _cancel(self, key: PodKey) -> None:
        timer = self._evictions.pop(key, None)
        if timer is not None:
            timer.cancel()
            self._event(key, f"Cancelling deletion of Pod {key[0]}/{key[1]}")

    def _evict(self, key: PodKey) -> None:
        """deletePodHandler: the event, the DisruptionTarget condition, a graceful delete."""
        pod = self.api.store.get("Pod", *key)
        if pod is None or is_terminating(pod):
            return
        self._event(key, f"Marking for deletion Pod {key[0]}/{key[1]}")
        cond = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                "lastTransitionTime": self.api.timestamp(), "reason": DISRUPTION_REASON,
                "message": DISRUPTION_MESSAGE}
        with contextlib.suppress(NotFoundError):
            self.api.update_status("Pod", *key, lambda status: set_condition(status, cond))
            self.api.delete("Pod", *key)

    def _event(self, key: PodKey, message: str) -> None:
        # Upstream's reference names the pod without its UID.
        ref = {"kind": "Pod", "metadata": {"namespace": key[0], "name": key[1]}}
        self.api.record_event(ref, "Normal", EVENT_REASON, message, source=SOURCE)
