"""The DaemonSet controller: one pod on every node that should run the DaemonSet.

Follows pkg/controller/daemon (v1.35). A node should run it when it matches the template's
nodeName, nodeSelector and required node affinity and every NoSchedule/NoExecute taint is
tolerated, counting the default tolerations every daemon pod gets (not-ready and unreachable
NoExecute with no tolerationSeconds; disk-, memory-, pid-pressure and unschedulable NoSchedule;
network-unavailable for hostNetwork pods). A pod already there stays while its NoExecute taints are
tolerated. Pods are placed by the default scheduler: their required node affinity becomes
`matchFields metadata.name In [node]`. A node that appears or starts to qualify gets a pod; one
that stops qualifying loses it; a failed pod is deleted (with a per-node backoff from 1 s doubling
to 15 min, and a FailedDaemonPod event) and a new one follows once it is gone; extra pods on a node
are deleted, the oldest kept. Pods are labelled with controller-revision-hash (the template's hash:
podcontrol.compute_hash, or for the template the input came with the hash its pods carry) and
pod-template-generation (when the API server recorded it).

A template change is rolled out by the update strategy. RollingUpdate (the default) deletes old
pods, each replaced by the manage loop with the new template, as long as no more than
maxUnavailable nodes (default 1; a percentage of the desired nodes, rounded up) lack an available
pod (Ready for minReadySeconds, as the kubelet's probes report); an old pod that is not available
goes at once (rollingUpdate). OnDelete leaves old pods until they are deleted by hand.

Deliberate differences: maxSurge is not modelled (a surge rollout replaces pods one node at a time,
as maxUnavailable 1 would, never running two daemon pods on a node); no ControllerRevision objects
are kept; a deleted node also wakes the DaemonSets at once so the
pending pods pinned to it go (upstream waits for its next sync); pods bound to a deleted node are
left to pod garbage collection, as upstream does. As for ReplicaSets, readiness changes are synced
once the instant settles and there are no expectations (see replicaset.py).
"""

from __future__ import annotations

from kubesched.api.intstr import scaled_value
from kubesched.api.objects import Obj, deep_copy, is_pod_ready, is_terminal, is_terminating
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.daemonsetutil import (
    GENERATION_LABEL,
    HASH_LABEL,
    TEMPLATE_GENERATION,
    NodeFit,
    for_node,
    pod_template,
    revision_hash,
    target_node,
)
from kubesched.controllers.podcontrol import (
    create_pod,
    delete_pod,
    is_pod_available,
    pods_revision,
    slow_start_batch,
)
from kubesched.controllers.podevents import selector_of
from kubesched.controllers.podowner import PodOwnerController
from kubesched.controllers.refmanager import claim
from kubesched.runtime.clock import Clock
from kubesched.store.base import ADDED, DELETED, WatchEvent
from kubesched.store.podindex import PodIndexes, object_key

SOURCE = "daemonset-controller"
BURST_REPLICAS = 250  # pods created or deleted per sync at most
FAILED_POD_BACKOFF = (1.0, 900.0)  # failedPodsBackoff: initial and maximum delay, seconds


class DaemonSetController(PodOwnerController):
    kind = "DaemonSet"

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        super().__init__(api, clock, indexes)
        self._failed_pods: dict[str, tuple[float, float]] = {}  # backoff key -> (delay, last update)
        self._first_seen: dict[str, tuple[Obj, str | None]] = {}  # DaemonSet uid -> first template, its pods' hash

    def start(self) -> None:
        super().start()
        self.api.store.watch(self._on_node, {"Node"})

    # ---- event handlers -------------------------------------------------------------------------------

    def _on_node(self, ev: WatchEvent) -> None:
        """addNode / updateNode (only label or taint changes matter), and node deletion."""
        node, old = ev.obj, ev.old
        if ev.type == ADDED:
            wanted = [ds for ds in self.api.store.list("DaemonSet") if NodeFit(ds).should_run(node)[0]]
        elif ev.type == DELETED:
            wanted = list(self.api.store.list("DaemonSet"))
        elif old is None or (_labels(old) == _labels(node) and _taints(old) == _taints(node)):
            return
        else:
            wanted = [ds for ds in self.api.store.list("DaemonSet")
                      if NodeFit(ds).should_run(old) != NodeFit(ds).should_run(node)]
        for ds in wanted:
            self.queue.add(object_key(ds))

    # ---- sync (syncDaemonSet) -------------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        ds = self.api.store.get("DaemonSet", *key)
        if ds is None:
            return
        nodes = list(self.api.store.list("Node"))
        selector = selector_of(ds)
        uid = ds["metadata"]["uid"]
        pods = claim(self.api, ds, selector, self.pods.owned(uid) + self.pods.orphans(key[0]))
        revision = self._revision(ds, pods)
        error = None
        if not is_terminating(ds):
            error = self._manage(ds, nodes, pods, revision)
        fresh = [p for p in self.pods.owned(uid) if selector.matches(p["metadata"].get("labels") or {})]
        if error is None and not is_terminating(ds) and \
                (ds["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
            error = self._rolling_update(ds, nodes, fresh, revision)
            fresh = [p for p in self.pods.owned(uid) if selector.matches(p["metadata"].get("labels") or {})]
        self._update_status(ds, nodes, fresh, revision, observe=not is_terminating(ds))
        if error is None:
            self.backoff.forget(key)
        else:
            self.backoff.retry(key)

    def _revision(self, ds: Obj, pods: list[Obj]) -> str:
        """The current revision's hash: for the template the input came with, the one its pods
        made from it carry (the cluster's, which compute_hash does not reproduce), so a snapshot's
        pods count as updated and new ones carry the same label; else the template's hash."""
        template = ds["spec"]["template"]
        uid = ds["metadata"]["uid"]
        if uid not in self._first_seen:
            self._first_seen[uid] = (template, pods_revision(_unpinned(template), pods, HASH_LABEL))
        first_template, first_revision = self._first_seen[uid]
        return first_revision if first_revision and template == first_template else revision_hash(ds)

    def _manage(self, ds: Obj, nodes: list[Obj], pods: list[Obj], revision: str) -> str | None:
        """manage + syncNodes: create the missing daemon pods, then delete the unwanted ones."""
        by_node = _pods_by_node(pods)
        fit = NodeFit(ds)
        needing: list[str] = []
        unwanted: list[Obj] = []
        for node in nodes:
            name = node["metadata"]["name"]
            should_run, keep = fit.should_run(node)
            daemon_pods = by_node.get(name, [])
            if should_run and not daemon_pods:
                needing.append(name)
            elif keep:
                unwanted += self._surplus(ds, name, daemon_pods)
            elif daemon_pods:
                unwanted += [p for p in daemon_pods if not is_terminating(p)]
        # getUnscheduledPodsWithoutNode: pending pods pinned to a node that no longer exists.
        existing = {n["metadata"]["name"] for n in nodes}
        unwanted += [p for name, ps in by_node.items() if name not in existing for p in ps if not p["spec"].get("nodeName")]
        template = pod_template(ds, revision)
        targets = iter(needing[:BURST_REPLICAS])
        error = slow_start_batch(min(len(needing), BURST_REPLICAS),
                                 lambda: create_pod(self.api, for_node(template, next(targets)), ds, SOURCE))
        for pod in unwanted[:BURST_REPLICAS]:
            error = delete_pod(self.api, pod, ds, SOURCE) or error
        return error

    def _rolling_update(self, ds: Obj, nodes: list[Obj], pods: list[Obj], revision: str) -> str | None:
        """rollingUpdate without surge: old pods that are not available go at once; available old
        ones go while fewer than maxUnavailable nodes lack an available pod (nodes by name, where
        upstream walks a map)."""
        fit = NodeFit(ds)
        desired = sum(1 for node in nodes if fit.should_run(node)[0])
        rolling = (ds["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
        max_unavailable = scaled_value(rolling.get("maxUnavailable", 1), desired, True)
        if desired > 0 and max_unavailable == 0:
            max_unavailable = 1  # maxSurge is not modelled: one node at a time
        min_ready = ds["spec"].get("minReadySeconds") or 0
        generation = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)
        now = self.clock.now()
        unavailable = 0
        replace: list[Obj] = []
        candidates: list[Obj] = []
        for _, on_node in sorted(_pods_by_node(pods).items()):
            live = [p for p in on_node if not is_terminating(p)]
            new = [p for p in live if _is_updated(p, revision, generation)]
            old = [p for p in live if not _is_updated(p, revision, generation)]
            if len(new) > 1 or len(old) > 1 or len(new) == len(old):
                unavailable += 1  # the manage loop settles this node first
            elif new:
                unavailable += not is_pod_available(new[0], min_ready, now, self.api.seconds)
            elif not is_pod_available(old[0], min_ready, now, self.api.seconds):
                replace.append(old[0])
            elif unavailable < max_unavailable:
                candidates.append(old[0])
        room = min(max(max_unavailable - unavailable, 0), len(candidates))
        error = None
        for pod in [*replace, *candidates[:room]]:
            error = delete_pod(self.api, pod, ds, SOURCE) or error
        return error

    def _surplus(self, ds: Obj, node: str, daemon_pods: list[Obj]) -> list[Obj]:
        """The pods to delete from a node that keeps running the DaemonSet (podsShouldBeOnNode):
        failed ones (rate-limited per node), succeeded ones, and all running ones but the oldest."""
        surplus: list[Obj] = []
        running: list[Obj] = []
        for pod in daemon_pods:
            if is_terminating(pod):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                if self._failed_pod_backoff(ds, node):
                    continue
                meta = pod["metadata"]
                self.api.record_event(ds, "Warning", "FailedDaemonPod",
                                      f"Found failed daemon pod {meta.get('namespace')}/{meta['name']} on node {node}, "
                                      "will try to kill it", source=SOURCE)
                surplus.append(pod)
            elif phase == "Succeeded":
                surplus.append(pod)
            else:
                running.append(pod)
        return surplus + sorted(running, key=self._age_order)[1:]

    def _failed_pod_backoff(self, ds: Obj, node: str) -> bool:
        """failedPodsBackoff (flowcontrol.Backoff): True while a failed pod on this node must wait,
        with the DaemonSet requeued for then; otherwise the delay steps up and the pod may go."""
        key = f"{ds['metadata']['uid']}/{(ds.get('status') or {}).get('observedGeneration', 0)}/{node}"
        initial, maximum = FAILED_POD_BACKOFF
        now = self.clock.now()
        delay, last = self._failed_pods.get(key, (0.0, 0.0))
        expired = key not in self._failed_pods or now - last > 2 * maximum
        if not expired and now - last < delay:
            self.queue.add_after(object_key(ds), delay)
            return True
        self._failed_pods[key] = (initial if expired else min(2 * delay, maximum), now)
        return False

    def _age_order(self, pod: Obj) -> tuple[bool, float, str]:
        """podByCreationTimestampAndPhase: scheduled pods first, then oldest, then by name."""
        stamp = pod["metadata"].get("creationTimestamp")
        return not pod["spec"].get("nodeName"), self.api.seconds(stamp) if stamp else 0.0, pod["metadata"]["name"]

    def _update_status(self, ds: Obj, nodes: list[Obj], pods: list[Obj], revision: str, observe: bool) -> None:
        """updateDaemonSetStatus: counted over the nodes, each node's oldest daemon pod speaking for it."""
        by_node = _pods_by_node(pods)
        fit = NodeFit(ds)
        min_ready = ds["spec"].get("minReadySeconds") or 0
        generation = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)
        now = self.clock.now()
        desired = current = misscheduled = ready = available = updated = 0
        for node in nodes:
            daemon_pods = by_node.get(node["metadata"]["name"], [])
            if not fit.should_run(node)[0]:
                misscheduled += bool(daemon_pods)
                continue
            desired += 1
            if not daemon_pods:
                continue
            current += 1
            pod = min(daemon_pods, key=self._age_order)
            if is_pod_ready(pod):
                ready += 1
                available += is_pod_available(pod, min_ready, now, self.api.seconds)
            updated += _is_updated(pod, revision, generation)
        status = deep_copy(ds.get("status") or {})
        counts = {"desiredNumberScheduled": desired, "currentNumberScheduled": current,
                  "numberMisscheduled": misscheduled, "numberReady": ready}
        optional = {"updatedNumberScheduled": updated, "numberAvailable": available,
                    "numberUnavailable": desired - available}
        generation_seen = status.get("observedGeneration", 0) >= ds["metadata"].get("generation", 1)
        if generation_seen and all(status.get(k, 0) == v for k, v in {**counts, **optional}.items()):
            return
        status.update(counts)
        for k, v in optional.items():
            if v:
                status[k] = v
            else:
                status.pop(k, None)  # omitempty
        if observe:
            status["observedGeneration"] = ds["metadata"].get("generation", 1)
        try:
            self.api.update_status("DaemonSet", *object_key(ds), lambda st: (st.clear(), st.update(status)))
        except NotFoundError:
            return
        if min_ready > 0 and ready != available:
            self.queue.add_after(object_key(ds), min_ready)


def _is_updated(pod: Obj, revision: str, generation: str | None) -> bool:
    """IsPodUpdated: the pod has the template's hash, or its template generation."""
    labels = pod["metadata"].get("labels") or {}
    return labels.get(HASH_LABEL) == revision or (generation is not None and labels.get(GENERATION_LABEL) == generation)


def _pods_by_node(pods: list[Obj]) -> dict[str, list[Obj]]:
    """getNodesToDaemonPods: pods by the node they run on or are pinned to; finished pods that
    are being deleted no longer count."""
    by_node: dict[str, list[Obj]] = {}
    for pod in pods:
        if is_terminal(pod) and is_terminating(pod):
            continue
        node = target_node(pod)
        if node is not None:
            by_node.setdefault(node, []).append(pod)
    return by_node


def _unpinned(template: Obj) -> Obj:
    """The template as its pods show it: their required node affinity is the pin to their node
    (daemonsetutil.for_node), not the template's."""
    node_affinity = ((template.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    if not node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"):
        return template
    unpinned = deep_copy(template)
    del unpinned["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return unpinned


def _labels(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def _taints(node: Obj) -> list[Obj]:
    return (node.get("spec") or {}).get("taints") or []
