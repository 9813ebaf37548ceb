"""The ReplicaSet controller: keeps `spec.replicas` (default 1) active pods matching the selector.

Follows pkg/controller/replicaset (v1.35). Active means neither terminating nor Succeeded/Failed,
so a replacement is created the moment a pod starts graceful termination (deleted, evicted,
preempted, drained) or fails (kubelet eviction), not when it is finally gone. Matching orphans
are adopted, pods another controller owns are left alone (refmanager.claim). Pods are created
from the template in slow-start batches, at most 500 per sync (burstReplicas), and a scale-down
deletes the lowest-ranked pods first (ranking.pods_to_delete). Status counts the active pods
(replicas, fullyLabeledReplicas, readyReplicas, availableReplicas after minReadySeconds), the
terminating ones (terminatingReplicas, on by default since v1.35) and a ReplicaFailure
condition while creating or deleting fails; a failed sync is retried with backoff.

Upstream also keeps "expectations" (it skips syncs until its informer has seen the pods it just
created or deleted) because its cache lags the API server; here every write is in the store
before the call returns, so each sync already sees what the previous one did. A pod change that
can only move the status (readiness) is synced once the virtual instant settles (settle.py), and
pods are looked up through an index by owner (podindex.py): both keep a rollout linear in its pods.
"""

from __future__ import annotations

from kubesched.api.objects import Obj, controller_of, deep_copy, get_condition, is_pod_ready, is_terminating
from kubesched.apiserver.errors import NotFoundError
from kubesched.controllers.podcontrol import (
    create_pod,
    delete_pod,
    is_pod_active,
    is_pod_available,
    is_pod_terminating,
    slow_start_batch,
)
from kubesched.controllers.podevents import selector_of
from kubesched.controllers.podowner import PodOwnerController
from kubesched.controllers.ranking import pods_to_delete
from kubesched.controllers.refmanager import claim
from kubesched.store.podindex import object_key

SOURCE = "replicaset-controller"
BURST_REPLICAS = 500  # pods created or deleted per sync at most


def replicas_of(obj: Obj) -> int:
    """spec.replicas, which the API server defaults to 1."""
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


class ReplicaSetController(PodOwnerController):
    kind = "ReplicaSet"
    source = SOURCE
    reports_terminating = True  # status.terminatingReplicas (ReplicaSets and Deployments only)

    # ---- sync (syncReplicaSet) ----------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        rs = self.api.store.get(self.kind, ns, name)
        if rs is None:
            return
        selector = selector_of(rs)
        owned = self.pods.owned(rs["metadata"]["uid"])
        active = claim(self.api, rs, selector, [p for p in owned + self.pods.orphans(ns) if is_pod_active(p)])
        error = None if is_terminating(rs) else self._manage_replicas(rs, active)
        terminating = [p for p in owned if is_pod_terminating(p) and selector.matches(_labels(p))]
        rs = self._update_status(rs, active, terminating, error)
        replicas = replicas_of(rs)
        status = rs.get("status") or {}
        min_ready = (rs.get("spec") or {}).get("minReadySeconds") or 0
        if error is None and min_ready > 0 and status.get("readyReplicas", 0) == replicas \
                and status.get("availableReplicas", 0) != replicas:
            self.queue.add_after(key, min_ready)
        if error is None:
            self.backoff.forget(key)
        else:
            self.backoff.retry(key)

    def _manage_replicas(self, rs: Obj, active: list[Obj]) -> str | None:
        """Create or delete pods to reach spec.replicas; returns the first failure's text."""
        diff = len(active) - replicas_of(rs)
        if diff < 0:
            template = rs["spec"].get("template") or {}
            return slow_start_batch(min(-diff, BURST_REPLICAS), lambda: create_pod(self.api, template, rs, self.source))
        if diff > 0:
            victims = pods_to_delete(active, self._related_pods(rs), min(diff, BURST_REPLICAS),
                                     self.clock.now(), self.api.seconds)
            errors = [e for e in (delete_pod(self.api, p, rs, self.source) for p in victims) if e is not None]
            return errors[0] if errors else None
        return None

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """getIndirectlyRelatedPods: the pods selected by every ReplicaSet sharing this one's
        controller (a Deployment's old and new ones); none for a ReplicaSet without a controller."""
        ref = controller_of(rs)
        if ref is None:
            return []
        ns = rs["metadata"].get("namespace", "default")
        pods = list(self.api.store.list("Pod", ns))
        related: dict[str, Obj] = {}
        for other in self.api.store.list(self.kind, ns):
            other_ref = controller_of(other)
            if other_ref is None or other_ref.get("uid") != ref.get("uid"):
                continue
            selector = selector_of(other)
            for pod in pods:
                if selector.matches(_labels(pod)):
                    related.setdefault(pod["metadata"].get("uid", ""), pod)
        return list(related.values())

    def _update_status(self, rs: Obj, active: list[Obj], terminating: list[Obj], error: str | None) -> Obj:
        """calculateStatus + updateReplicaSetStatus: written only when something changed."""
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = spec.get("minReadySeconds") or 0
        now = self.clock.now()
        ready = [p for p in active if is_pod_ready(p)]
        old = rs.get("status") or {}
        status: Obj = {"replicas": len(active)}
        counts = {
            "fullyLabeledReplicas": sum(1 for p in active if _has_labels(p, template_labels)),
            "readyReplicas": len(ready),
            "availableReplicas": sum(1 for p in ready if is_pod_available(p, min_ready, now, self.api.seconds)),
        }
        status.update((k, v) for k, v in counts.items() if v)  # omitempty
        if self.reports_terminating:
            status["terminatingReplicas"] = len(terminating)
        status["observedGeneration"] = rs["metadata"].get("generation", 1)
        conditions = [c for c in old.get("conditions") or () if c.get("type") != "ReplicaFailure"]
        failure = get_condition(rs, "ReplicaFailure")
        if error is not None:
            if failure is None:
                diff = len(active) - replicas_of(rs)
                reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
                failure = {"type": "ReplicaFailure", "status": "True", "lastTransitionTime": self.api.timestamp(),
                           "reason": reason, "message": error}
            conditions.append(failure)
        if conditions:
            status["conditions"] = conditions
        if status == old:
            return rs
        try:
            return self.api.update_status(self.kind, *object_key(rs), lambda st: _replace(st, status))
        except NotFoundError:
            return rs


class ReplicationControllerController(ReplicaSetController):
    """pkg/controller/replication: the ReplicaSet controller run on ReplicationControllers, whose
    selector is a label map (podevents.selector_of) and whose status has no terminatingReplicas."""

    kind = "ReplicationController"
    source = "replication-controller"
    reports_terminating = False


def _labels(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _has_labels(pod: Obj, wanted: dict[str, str]) -> bool:
    labels = _labels(pod)
    return all(labels.get(k) == v for k, v in wanted.items())


def _replace(status: Obj, new: Obj) -> None:
    status.clear()
    status.update(deep_copy(new))
