"""The Deployment controller: runs a Deployment's pods through ReplicaSets it owns.

Follows pkg/controller/deployment (v1.35). A template change is rolled out by the Deployment's
strategy:
- RollingUpdate (the default): the new ReplicaSet grows while the total stays within
  spec.replicas + maxSurge, and the old ones shrink while the available pods (Ready for
  minReadySeconds, as the kubelet's probes report) stay at least spec.replicas - maxUnavailable;
  old pods that are not available go first (rolloutRolling, reconcileNewReplicaSet,
  reconcileOldReplicaSets).
- Recreate: the old ReplicaSets are scaled to 0, and only once none of their pods is left
  (terminating ones count) is the new ReplicaSet created or scaled up to spec.replicas.

Otherwise as upstream: the ReplicaSet for a template is `<deployment>-<pod-template-hash>`, with
the pod-template-hash label added to its selector, its template labels and so its pods
(podcontrol.compute_hash explains why the hash differs from a real cluster's); an old template's
ReplicaSet is reused when the template comes back (revision raised, revision-history kept).
A change of spec.replicas alone is a scaling event: the one active ReplicaSet is scaled. A paused
Deployment is only scaled. ScalingReplicaSet events use upstream's texts, annotations and the
Progressing condition (with progressDeadlineSeconds) and the Available condition follow
upstream, and old ReplicaSets beyond revisionHistoryLimit are deleted once empty.
"""

from __future__ import annotations

import contextlib

from kubesched.api.objects import Obj, controller_of, deep_copy, is_terminal, is_terminating
from kubesched.apiserver.errors import AlreadyExists, APIError, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers import deploymentutil as du
from kubesched.controllers.podcontrol import controller_ref
from kubesched.controllers.podevents import selector_of
from kubesched.controllers.ratelimit import FailureBackoff
from kubesched.controllers.refmanager import claim
from kubesched.controllers.replicaset import replicas_of
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent
from kubesched.store.podindex import object_key

SOURCE = "deployment-controller"


class DeploymentController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.clock = clock
        self.queue = WorkQueue(clock, self._sync)
        self.backoff = FailureBackoff(clock, self.queue)
        self._progress_checks: dict[tuple[str, str], Timer] = {}

    def start(self) -> None:
        for d in self.api.store.list("Deployment"):
            self.queue.add(object_key(d))
        self.api.store.watch(self._on_deployment, {"Deployment"})
        self.api.store.watch(self._on_replica_set, {"ReplicaSet"})
        self.api.store.watch(self._on_pod, {"Pod"}, while_held="Deployment")

    # ---- event handlers -----------------------------------------------------------------------------

    def _on_deployment(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            self.backoff.forget(object_key(ev.obj))
        else:
            self.queue.add(object_key(ev.obj))

    def _on_replica_set(self, ev: WatchEvent) -> None:
        """addReplicaSet/updateReplicaSet/deleteReplicaSet: wake the owner (the old one too when
        the owner changed), or for an orphan every Deployment that could adopt it."""
        rs, old = ev.obj, ev.old
        for obj in (rs, old) if old is not None and controller_of(old) != controller_of(rs) else (rs,):
            ref = controller_of(obj)
            if ref is not None:
                d = self._resolve(obj, ref)
                if d is not None:
                    self.queue.add(object_key(d))
            elif ev.type != DELETED:
                labels = obj["metadata"].get("labels") or {}
                for d in self.api.store.list("Deployment", obj["metadata"].get("namespace", "default")):
                    if selector_of(d).matches(labels):
                        self.queue.add(object_key(d))

    def _on_pod(self, ev: WatchEvent) -> None:
        """deletePod: a Recreate rollout waits for the old pods to be gone."""
        if ev.type != DELETED:
            return
        ref = controller_of(ev.obj)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.api.store.get("ReplicaSet", ev.obj["metadata"].get("namespace", "default"), ref.get("name", ""))
        d_ref = controller_of(rs) if rs is not None and rs["metadata"].get("uid") == ref.get("uid") else None
        d = self._resolve(rs, d_ref) if rs is not None and d_ref is not None else None
        if d is not None:
            self.queue.add(object_key(d))

    def _resolve(self, obj: Obj, ref: Obj) -> Obj | None:
        if ref.get("kind") != "Deployment":
            return None
        d = self.api.store.get("Deployment", obj["metadata"].get("namespace", "default"), ref.get("name", ""))
        return d if d is not None and d["metadata"].get("uid") == ref.get("uid") else None

    # ---- sync (syncDeployment) ----------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        d = self.api.store.get("Deployment", *key)
        if d is None:
            return
        d = deep_copy(d)
        ns = key[0]
        rss = claim(self.api, d, selector_of(d), list(self.api.store.list("ReplicaSet", ns)))
        try:
            if is_terminating(d):
                self._sync_status_only(d, rss)
            else:
                self._check_paused_conditions(d)
                if d["spec"].get("paused") or self._is_scaling_event(d, rss):
                    self._sync_scale(d, rss)
                elif (d["spec"].get("strategy") or {}).get("type") == "Recreate":
                    self._rollout_recreate(d, rss)
                else:
                    self._rollout_rolling(d, rss)
        except APIError:
            self.backoff.retry(key)
        else:
            self.backoff.forget(key)

    def _sync_status_only(self, d: Obj, rss: list[Obj]) -> None:
        new_rs, old_rss = self._all_replica_sets(d, rss, create=False)
        self._sync_deployment_status(d, [*old_rss, new_rs] if new_rs else old_rss, new_rs)

    def _sync_scale(self, d: Obj, rss: list[Obj]) -> None:
        """sync: scale the active ReplicaSet to spec.replicas (no rollout)."""
        new_rs, old_rss = self._all_replica_sets(d, rss, create=False)
        self._scale(d, new_rs, old_rss)
        if d["spec"].get("paused"):
            self._cleanup(d, old_rss)
        new_rs, old_rss = self._all_replica_sets(d, self._fresh(rss), create=False)
        self._sync_deployment_status(d, [*old_rss, new_rs] if new_rs else old_rss, new_rs)

    def _rollout_recreate(self, d: Obj, rss: list[Obj]) -> None:
        """rolloutRecreate: old ReplicaSets down to 0, wait for their pods, then the new one up."""
        new_rs, old_rss = self._all_replica_sets(d, rss, create=False)
        scaled_down = False
        for rs in old_rss:
            if replicas_of(rs) > 0:
                self._scale_and_record(rs, 0, d)
                scaled_down = True
        if scaled_down or self._old_pods_running(d, new_rs, self._fresh(old_rss)):
            new_rs, old_rss = self._all_replica_sets(d, self._fresh(rss), create=False)
            self._sync_rollout_status(d, [*old_rss, new_rs] if new_rs else old_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old_rss = self._all_replica_sets(d, rss, create=True)
        if new_rs is not None:
            self._scale_and_record(new_rs, replicas_of(d), d)
        new_rs, old_rss = self._all_replica_sets(d, self._fresh([*old_rss, *([new_rs] if new_rs else [])]),
                                                 create=False)
        if du.complete(d, d.get("status") or {}):
            self._cleanup(d, old_rss)
        self._sync_rollout_status(d, [*old_rss, new_rs] if new_rs else old_rss, new_rs)

    def _rollout_rolling(self, d: Obj, rss: list[Obj]) -> None:
        """rolloutRolling: scale the new ReplicaSet up if the surge allows, else the old ones down if
        availability allows; clean up once the rollout is complete."""
        new_rs, old_rss = self._all_replica_sets(d, rss, create=True)
        all_rss = [*old_rss, *([new_rs] if new_rs else [])]
        if new_rs is not None and self._reconcile_new_replica_set(d, all_rss, new_rs) \
                or self._reconcile_old_replica_sets(d, all_rss, [rs for rs in old_rss if replicas_of(rs) > 0], new_rs):
            new_rs, old_rss = self._all_replica_sets(d, self._fresh(all_rss), create=False)
            self._sync_rollout_status(d, [*old_rss, new_rs] if new_rs else old_rss, new_rs)
            return
        if du.complete(d, d.get("status") or {}):
            self._cleanup(d, old_rss)
        self._sync_rollout_status(d, all_rss, new_rs)

    def _reconcile_new_replica_set(self, d: Obj, all_rss: list[Obj], new_rs: Obj) -> bool:
        """reconcileNewReplicaSet: the new ReplicaSet up to spec.replicas, within maxSurge."""
        replicas = replicas_of(d)
        if replicas_of(new_rs) == replicas:
            return False
        if replicas_of(new_rs) > replicas:
            return self._scale_and_record(new_rs, replicas, d)
        return self._scale_and_record(new_rs, du.new_rs_new_replicas(d, all_rss, new_rs), d)

    def _reconcile_old_replica_sets(self, d: Obj, all_rss: list[Obj], old_rss: list[Obj], new_rs: Obj | None) -> bool:
        """reconcileOldReplicaSets: as many old pods down as keeps spec.replicas - maxUnavailable
        available, counting the new ReplicaSet's pods that are not available yet as missing."""
        if sum(replicas_of(rs) for rs in old_rss) == 0:
            return False
        min_available = replicas_of(d) - du.max_unavailable(d)
        new_unavailable = replicas_of(new_rs) - (new_rs.get("status") or {}).get("availableReplicas", 0) \
            if new_rs is not None else 0
        max_scaled_down = sum(replicas_of(rs) for rs in all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        # Unhealthy old replicas first: they would otherwise block the rollout.
        cleaned = 0
        old_rss = du.by_creation(old_rss)
        for i, rs in enumerate(old_rss):
            if cleaned >= max_scaled_down:
                break
            unavailable = replicas_of(rs) - (rs.get("status") or {}).get("availableReplicas", 0)
            if replicas_of(rs) == 0 or unavailable <= 0:
                continue
            count = min(max_scaled_down - cleaned, unavailable)
            self._scale_and_record(rs, replicas_of(rs) - count, d)
            cleaned += count
            old_rss[i] = self.api.get("ReplicaSet", *object_key(rs))
        return cleaned + self._scale_down_old(d, [*old_rss, *([new_rs] if new_rs else [])], old_rss) > 0

    def _scale_down_old(self, d: Obj, all_rss: list[Obj], old_rss: list[Obj]) -> int:
        """scaleDownOldReplicaSetsForRollingUpdate: oldest first, down to what keeps
        spec.replicas - maxUnavailable pods available."""
        min_available = replicas_of(d) - du.max_unavailable(d)
        available = sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in all_rss)
        if available <= min_available:
            return 0
        to_scale_down, scaled = available - min_available, 0
        for rs in du.by_creation(old_rss):
            if scaled >= to_scale_down:
                break
            if replicas_of(rs) == 0:
                continue
            count = min(replicas_of(rs), to_scale_down - scaled)
            self._scale_and_record(rs, replicas_of(rs) - count, d)
            scaled += count
        return scaled

    def _fresh(self, rss: list[Obj]) -> list[Obj]:
        """The ReplicaSets as stored now (after this sync's own writes), those still there."""
        found = (self.api.store.get("ReplicaSet", rs["metadata"].get("namespace", "default"), rs["metadata"]["name"])
                 for rs in rss)
        return [rs for rs in found if rs is not None]

    def _old_pods_running(self, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> bool:
        """oldPodsRunning: an old ReplicaSet still reports pods, or one of the Deployment's pods
        that an old ReplicaSet controls has not finished (terminating ones included)."""
        if any((rs.get("status") or {}).get("replicas", 0) > 0 for rs in old_rss):
            return True
        old_uids = {rs["metadata"]["uid"] for rs in old_rss} - ({new_rs["metadata"]["uid"]} if new_rs else set())
        selector = selector_of(d)
        for pod in self.api.store.list("Pod", d["metadata"].get("namespace", "default")):
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") in old_uids and not is_terminal(pod) \
                    and selector.matches(pod["metadata"].get("labels") or {}):
                return True
        return False

    def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        """isScalingEvent: an active ReplicaSet was sized for another spec.replicas."""
        new_rs, old_rss = self._all_replica_sets(d, rss, create=False)
        for rs in [*old_rss, *([new_rs] if new_rs else [])]:
            desired = du.desired_replicas_annotation(rs)
            if replicas_of(rs) > 0 and desired is not None and desired != replicas_of(d):
                return True
        return False

    def _scale(self, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> None:
        """scale: only the one active (or the newest) ReplicaSet; with several active, the old ones go
        to 0 once the new one is saturated (the proportional scaling of rolling updates is not done)."""
        target = du.find_active_or_latest(new_rs, old_rss)
        if target is not None:
            if replicas_of(target) != replicas_of(d):
                self._scale_and_record(target, replicas_of(d), d)
            return
        if new_rs is not None and self._saturated(d, new_rs):
            for rs in old_rss:
                if replicas_of(rs) > 0:
                    self._scale_and_record(rs, 0, d)

    @staticmethod
    def _saturated(d: Obj, rs: Obj) -> bool:
        replicas = replicas_of(d)
        return (replicas_of(rs) == replicas and du.desired_replicas_annotation(rs) == replicas
                and (rs.get("status") or {}).get("availableReplicas", 0) == replicas)

    # ---- ReplicaSets --------------------------------------------------------------------------------

    def _all_replica_sets(self, d: Obj, rss: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """getAllReplicaSetsAndSyncRevision: (the new ReplicaSet or None, the old ones)."""
        existing = du.find_new_rs(d, rss)
        old_rss = [rs for rs in rss if existing is None or rs["metadata"]["uid"] != existing["metadata"]["uid"]]
        new_rs = self._new_replica_set(d, existing, old_rss, create)
        return new_rs, old_rss

    def _new_replica_set(self, d: Obj, existing: Obj | None, old_rss: list[Obj], create: bool) -> Obj | None:
        """getNewReplicaSet: bring an existing new ReplicaSet's revision and annotations up to date,
        or create it (when asked) already sized for the rollout."""
        new_revision = max((du.revision(rs) for rs in old_rss), default=0) + 1
        now = self.api.timestamp()
        if existing is not None:
            rs = deep_copy(existing)
            annotations_changed = du.set_new_rs_annotations(d, rs, new_revision, exists=True)
            min_ready = d["spec"].get("minReadySeconds") or 0
            if annotations_changed or (rs["spec"].get("minReadySeconds") or 0) != min_ready:
                rs["spec"]["minReadySeconds"] = min_ready
                return self.api.update(rs)
            changed = self._set_revision(d, rs["metadata"]["annotations"].get(du.REVISION, ""))
            status = d.setdefault("status", {})
            if du.progress_deadline(d) is not None and du.get_condition(status, "Progressing") is None:
                du.set_condition(status, du.condition("Progressing", "True", du.FOUND_NEW_RS,
                                                      f'Found new replica set "{rs["metadata"]["name"]}"', now))
                changed = True
            if changed:
                self._write_deployment(d)
            return rs
        if not create:
            return None
        template, pod_hash = du.new_rs_template(d)
        replicas = replicas_of(d) if (d["spec"].get("strategy") or {}).get("type") == "Recreate" \
            else du.new_rs_new_replicas(d, old_rss, None)
        selector = deep_copy(d["spec"].get("selector") or {})
        selector.setdefault("matchLabels", {})[du.HASH_LABEL] = pod_hash
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{d['metadata']['name']}-{pod_hash}",
                           "namespace": d["metadata"].get("namespace", "default"),
                           "labels": dict(template["metadata"]["labels"]), "ownerReferences": [controller_ref(d)]},
              "spec": {"replicas": replicas, "minReadySeconds": d["spec"].get("minReadySeconds") or 0,
                       "selector": selector, "template": template}}
        du.set_new_rs_annotations(d, rs, new_revision, exists=False)
        try:
            created = self.api.create(rs)
        except AlreadyExists:
            # A hash collision with a ReplicaSet of another template: the next name differs.
            status = d.setdefault("status", {})
            status["collisionCount"] = status.get("collisionCount", 0) + 1
            self._write_deployment(d)
            raise
        except APIError as e:
            message = f'Failed to create new replica set "{rs["metadata"]["name"]}": {e.message}'
            if du.progress_deadline(d) is not None:
                du.set_condition(d.setdefault("status", {}),
                                 du.condition("Progressing", "False", "ReplicaSetCreateError", message, now))
                self._write_deployment(d)
            self.api.record_event(d, "Warning", "ReplicaSetCreateError", message, source=SOURCE)
            raise
        if replicas_of(created) > 0:
            self.api.record_event(d, "Normal", "ScalingReplicaSet",
                                  f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas_of(created)}",
                                  source=SOURCE)
        self._set_revision(d, str(new_revision))
        if du.progress_deadline(d) is not None:
            du.set_condition(d.setdefault("status", {}), du.condition(
                "Progressing", "True", du.NEW_RS_CREATED, f'Created new replica set "{created["metadata"]["name"]}"',
                now))
        self._write_deployment(d)
        return created

    def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> bool:
        """scaleReplicaSetAndRecordEvent: resize (and re-annotate) the ReplicaSet; event if resized.
        Returns whether it was resized."""
        old_scale = replicas_of(rs)
        if old_scale == new_scale:
            return False
        desired, max_replicas = replicas_of(d), replicas_of(d) + du.max_surge(d)
        updated = deep_copy(self.api.get("ReplicaSet", *object_key(rs)))
        updated["spec"]["replicas"] = new_scale
        du.set_replicas_annotations(updated, desired, max_replicas)
        self.api.update(updated)
        direction = "up" if old_scale < new_scale else "down"
        self.api.record_event(d, "Normal", "ScalingReplicaSet",
                              f"Scaled {direction} replica set {rs['metadata']['name']} from {old_scale} to {new_scale}",
                              source=SOURCE)
        return True

    def _cleanup(self, d: Obj, old_rss: list[Obj]) -> None:
        """cleanupDeployment: delete the oldest empty ReplicaSets beyond revisionHistoryLimit."""
        limit = du.revision_history_limit(d)
        alive = [rs for rs in old_rss if not is_terminating(rs)]
        if limit is None or len(alive) <= limit:
            return
        ordered = sorted(du.by_creation(alive), key=du.revision)
        for rs in ordered[:len(alive) - limit]:
            status = rs.get("status") or {}
            if status.get("replicas", 0) or replicas_of(rs) or \
                    rs["metadata"].get("generation", 1) > status.get("observedGeneration", 0):
                continue
            with contextlib.suppress(NotFoundError):
                self.api.delete("ReplicaSet", *object_key(rs))

    # ---- the Deployment's own object --------------------------------------------------------------

    def _set_revision(self, d: Obj, value: str) -> bool:
        """SetDeploymentRevision on the working copy; written by _write_deployment."""
        annotations = d["metadata"].setdefault("annotations", {})
        if annotations.get(du.REVISION) == value:
            return False
        annotations[du.REVISION] = value
        return True

    def _write_deployment(self, d: Obj) -> None:
        """Store the working copy's revision annotation and status (upstream sends both in one
        status update, whose strategy keeps annotations)."""
        ns, name = object_key(d)
        stored = self.api.get("Deployment", ns, name)
        revision = (d["metadata"].get("annotations") or {}).get(du.REVISION)
        if revision is not None and (stored["metadata"].get("annotations") or {}).get(du.REVISION) != revision:
            self.api.patch("Deployment", ns, name, {"metadata": {"annotations": {du.REVISION: revision}}})
        status = deep_copy(d.get("status") or {})
        if status != (stored.get("status") or {}):
            self.api.update_status("Deployment", ns, name, lambda st: (st.clear(), st.update(status)))

    def _check_paused_conditions(self, d: Obj) -> None:
        """checkPausedConditions: Progressing is Unknown while paused, and says so when resumed."""
        if du.progress_deadline(d) is None:
            return
        status = d.setdefault("status", {})
        cond = du.get_condition(status, "Progressing")
        if cond is not None and cond.get("reason") == du.TIMED_OUT:
            return
        paused_before = cond is not None and cond.get("reason") == du.PAUSED
        now = self.api.timestamp()
        if d["spec"].get("paused") and not paused_before:
            du.set_condition(status, du.condition("Progressing", "Unknown", du.PAUSED, "Deployment is paused", now))
        elif not d["spec"].get("paused") and paused_before:
            du.set_condition(status, du.condition("Progressing", "Unknown", du.RESUMED, "Deployment is resumed", now))
        else:
            return
        self._write_deployment(d)

    def _sync_deployment_status(self, d: Obj, all_rss: list[Obj], new_rs: Obj | None) -> None:
        d["status"] = du.calculate_status(d, all_rss, new_rs, self.api.timestamp())
        self._write_deployment(d)

    def _sync_rollout_status(self, d: Obj, all_rss: list[Obj], new_rs: Obj | None) -> None:
        """syncRolloutStatus: the status plus the Progressing condition, and a recheck when the
        progress deadline could pass."""
        now = self.api.timestamp()
        status = du.calculate_status(d, all_rss, new_rs, now)
        deadline = du.progress_deadline(d)
        if deadline is None:
            du.remove_condition(status, "Progressing")
        current = du.get_condition(d.get("status") or {}, "Progressing")
        name = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs else f'Deployment "{d["metadata"]["name"]}"'
        is_complete = status.get("replicas", 0) == status.get("updatedReplicas", 0) and current is not None \
            and current.get("reason") == du.NEW_RS_AVAILABLE
        if deadline is not None and not is_complete:
            if du.complete(d, status):
                du.set_condition(status, du.condition("Progressing", "True", du.NEW_RS_AVAILABLE,
                                                      f"{name} has successfully progressed.", now))
            elif du.progressing(d, status):
                cond = du.condition("Progressing", "True", du.RS_UPDATED, f"{name} is progressing.", now)
                if current is not None and current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                du.remove_condition(status, "Progressing")
                du.set_condition(status, cond)
            elif self._timed_out(d, current, deadline):
                du.set_condition(status, du.condition("Progressing", "False", du.TIMED_OUT,
                                                      f"{name} has timed out progressing.", now))
        failures = _replica_failures([new_rs] if new_rs else []) or _replica_failures(all_rss)
        if failures:
            du.set_condition(status, failures[0])
        else:
            du.remove_condition(status, "ReplicaFailure")
        if status != (d.get("status") or {}):
            d["status"] = status
            self._write_deployment(d)
        self._requeue_stuck(d, status, deadline)

    def _timed_out(self, d: Obj, cond: Obj | None, deadline: int) -> bool:
        """DeploymentTimedOut: no progress for progressDeadlineSeconds since the condition's update."""
        if cond is None or cond.get("reason") == du.NEW_RS_AVAILABLE:
            return False
        if cond.get("reason") == du.TIMED_OUT:
            return True
        return self.api.seconds(cond["lastUpdateTime"]) + deadline < self.clock.now()

    def _requeue_stuck(self, d: Obj, status: Obj, deadline: int | None) -> None:
        """requeueStuckDeployment: look again when the progress deadline passes; a check made
        needless by completion is dropped, so it does not keep a simulation going."""
        key = object_key(d)
        check = self._progress_checks.pop(key, None)
        if check is not None:
            check.cancel()
        cond = du.get_condition(status, "Progressing")
        if deadline is None or cond is None or du.complete(d, status) or cond.get("reason") == du.TIMED_OUT:
            return
        after = self.api.seconds(cond["lastUpdateTime"]) + deadline - self.clock.now()
        # Upstream adds a second against clock skew, and retries with backoff when less than a
        # second is left; on a virtual clock "a second after the deadline" covers both. A deployment
        # that completed once and lost a pod keeps NewReplicaSetAvailable, which never times out:
        # upstream re-checks it for ever, changing nothing, so here that is housekeeping (a daemon)
        # that neither keeps a run going nor stops the clock jumping over it.
        idle = after < 1 and cond.get("reason") == du.NEW_RS_AVAILABLE
        self._progress_checks[key] = self.clock.call_at(self.clock.now() + max(after, 0) + 1,
                                                        lambda: self.queue.add(key), daemon=idle)


def _replica_failures(rss: list[Obj]) -> list[Obj]:
    """getReplicaFailures: the ReplicaSets' ReplicaFailure conditions as Deployment conditions."""
    return [{"type": "ReplicaFailure", "status": c.get("status"), "lastUpdateTime": c.get("lastTransitionTime"),
             "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason", ""),
             "message": c.get("message", "")}
            for rs in rss for c in (rs.get("status") or {}).get("conditions") or ()
            if c.get("type") == "ReplicaFailure"]
