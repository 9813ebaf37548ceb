"""The StatefulSet controller: pods with a stable identity, `<set>-<ordinal>`, and their own claims.

Follows pkg/controller/statefulset (v1.35). The pods of ordinals start .. start+replicas-1
(spec.ordinals.start, default 0) are kept, each named `<set>-<ordinal>` and labelled
statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and controller-revision-hash,
with hostname `<set>-<ordinal>` and subdomain spec.serviceName. Before a pod is created, every
claim of spec.volumeClaimTemplates it mounts, `<template>-<set>-<ordinal>`, is created if missing;
claims stay after their pod (persistentVolumeClaimRetentionPolicy Retain/Retain, the default), and
are given to the set or the scaled-down pod to garbage-collect under a Delete policy.

OrderedReady (the default podManagementPolicy) creates one pod at a time in ordinal order, each
once its predecessors are Running, Ready and available; scales down one pod at a time from the
highest ordinal, once every other pod is healthy; and waits for a terminating pod to be gone.
Parallel does all of it at once. A Failed or Succeeded pod is deleted, and its replacement, with
the same name, created once it is gone. A template change is rolled out as RollingUpdate does
(highest ordinal first, above `partition`, at most maxUnavailable — beta and on in v1.35 — pods
unavailable); OnDelete leaves the pods to be deleted by hand. Status: replicas, readyReplicas,
availableReplicas, currentReplicas, updatedReplicas, the revisions and observedGeneration.

Revisions are `<set>-<hash of the template>` (podcontrol.compute_hash), or for the template an
export came with, the revision its status names (its pods carry it) or, without a status, the one
its pods made from that template carry (the cluster's hash, which compute_hash cannot give), and
no ControllerRevision objects are kept: a pod created below a partition gets the current
revision's template only when this run saw it; otherwise (a snapshot mid-rollout) it gets the
update revision's.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

from kubesched.api.intstr import scaled_value
from kubesched.api.objects import Obj, deep_copy, is_pod_ready, is_terminal, is_terminating
from kubesched.apiserver.errors import AlreadyExists, APIError, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.podcontrol import (
    compute_hash,
    controller_ref,
    is_pod_available,
    pod_from_template,
    pods_revision,
)
from kubesched.controllers.podevents import selector_of
from kubesched.controllers.podowner import PodOwnerController
from kubesched.controllers.refmanager import claim
from kubesched.controllers.replicaset import replicas_of
from kubesched.runtime.clock import Clock
from kubesched.store.podindex import PodIndexes, object_key

SOURCE = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
_MEMBER = re.compile(r"(.*)-([0-9]+)$")


def parent_and_ordinal(name: str) -> tuple[str, int]:
    """getParentNameAndOrdinal: `web-2` -> ("web", 2); ("", -1) for a name without an ordinal
    (or one that does not fit an int32)."""
    match = _MEMBER.fullmatch(name)
    if match is None or int(match.group(2)) >= 2**31:
        return "", -1
    return match.group(1), int(match.group(2))


def claim_name(template: Obj, set_name: str, ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name', '')}-{set_name}-{ordinal}"


class StatefulSetController(PodOwnerController):
    kind = "StatefulSet"

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        super().__init__(api, clock, indexes)
        self._templates: dict[str, Obj] = {}  # revision name -> its pod template, as seen in this run
        self._first_seen: dict[str, tuple[Obj, str | None]] = {}  # set uid -> first template, its revision

    # ---- sync (syncStatefulSet, UpdateStatefulSet) -----------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        sts = self.api.store.get("StatefulSet", *key)
        if sts is None:
            return
        ns, name = key
        members = [p for p in self.pods.owned(sts["metadata"]["uid"]) + self.pods.orphans(ns)
                   if parent_and_ordinal(p["metadata"]["name"])[0] == name]
        pods = claim(self.api, sts, selector_of(sts), members)
        template = sts["spec"].get("template") or {}
        update_revision = self._revision(sts, template, pods)
        self._templates[update_revision] = template
        current_revision = (sts.get("status") or {}).get("currentRevision") or update_revision
        try:
            if not is_terminating(sts):
                _SetSync(self, sts, pods, current_revision, update_revision).run()
        except APIError:
            self.backoff.retry(key)
        else:
            self.backoff.forget(key)
        self._update_status(sts, pods, current_revision, update_revision)
        min_ready = sts["spec"].get("minReadySeconds") or 0
        if min_ready > 0 and any(is_pod_ready(p) and not self._available(p, min_ready) for p in pods):
            self.queue.add_after(key, min_ready)

    def _revision(self, sts: Obj, template: Obj, pods: list[Obj]) -> str:
        """The update revision's name: the one the input gives while the template is the one
        first seen (an export names the real cluster's revision in the set's status, and its pods
        carry it; without the status, the revision of the pods made from the template), else
        `<set>-<hash of the template>`."""
        uid = sts["metadata"]["uid"]
        if uid not in self._first_seen:
            given = (sts.get("status") or {}).get("updateRevision") or pods_revision(template, pods, REVISION_LABEL)
            self._first_seen[uid] = (template, given)
        first_template, first_revision = self._first_seen[uid]
        if first_revision and template == first_template:
            return first_revision
        return f"{sts['metadata']['name']}-{compute_hash(template)}"

    def _available(self, pod: Obj, min_ready: int) -> bool:
        return (pod.get("status") or {}).get("phase") == "Running" and \
            is_pod_available(pod, min_ready, self.clock.now(), self.api.seconds)

    def _update_status(self, sts: Obj, pods: list[Obj], current: str, update: str) -> None:
        """updateStatus + completeRollingUpdate, from the pods this sync started with (what it just
        created or deleted shows in the next sync, which their watch events bring)."""
        min_ready = sts["spec"].get("minReadySeconds") or 0
        counted = [p for p in pods if parent_and_ordinal(p["metadata"]["name"])[1] >= 0]
        running_ready = [p for p in counted
                         if (p.get("status") or {}).get("phase") == "Running" and is_pod_ready(p)]
        live = [p for p in counted if not is_terminating(p)]
        revision = [(p["metadata"].get("labels") or {}).get(REVISION_LABEL) for p in live]
        status: Obj = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(counted),
            "readyReplicas": len(running_ready),
            "currentReplicas": revision.count(current),
            "updatedReplicas": revision.count(update),
            "currentRevision": current,
            "updateRevision": update,
            "collisionCount": 0,
            "availableReplicas": sum(1 for p in running_ready if self._available(p, min_ready)),
        }
        replicas = replicas_of(sts)
        if _strategy(sts).get("type", "RollingUpdate") == "RollingUpdate" and \
                status["updatedReplicas"] == status["readyReplicas"] == status["replicas"] == replicas:
            status["currentReplicas"], status["currentRevision"] = status["updatedReplicas"], update
        old = sts.get("status") or {}
        if all(old.get(k) == v for k, v in status.items()):
            return
        with contextlib.suppress(NotFoundError):
            self.api.update_status("StatefulSet", *object_key(sts), lambda st: st.update(status))


class _SetSync:
    """One pass of updateStatefulSet over a set's pods: replicas in ordinal order, then the
    condemned (ordinals beyond the range) from the highest down, then the rolling update. A step
    that must wait in OrderedReady mode ends the pass; the watch events of what it waits for bring
    the next one."""

    def __init__(self, ctl: StatefulSetController, sts: Obj, pods: list[Obj], current: str, update: str) -> None:
        self.ctl, self.api, self.sts = ctl, ctl.api, sts
        self.name = sts["metadata"]["name"]
        self.ns = sts["metadata"].get("namespace", "default")
        self.current, self.update = current, update
        self.monotonic = (sts["spec"].get("podManagementPolicy") or "OrderedReady") != "Parallel"
        self.min_ready = sts["spec"].get("minReadySeconds") or 0
        self.start = ((sts["spec"].get("ordinals") or {}).get("start")) or 0
        count = replicas_of(sts)
        self.replicas: list[Obj | None] = [None] * count
        self.condemned: list[Obj] = []
        for pod in pods:
            ordinal = parent_and_ordinal(pod["metadata"]["name"])[1]
            if self.start <= ordinal < self.start + count:
                self.replicas[ordinal - self.start] = pod
            elif ordinal >= 0:
                self.condemned.append(pod)
        self.condemned.sort(key=lambda p: -parent_and_ordinal(p["metadata"]["name"])[1])

    def run(self) -> None:
        if self._for_all(len(self.replicas), self._process_replica):
            return
        if self._for_all(len(self.condemned), self._process_condemned):
            return
        if _strategy(self.sts).get("type", "RollingUpdate") == "RollingUpdate":
            self._rolling_update()

    def _for_all(self, count: int, step: Callable[[int], bool]) -> bool:
        """runForAll: in order, stopping at the first step that must wait (OrderedReady); or every
        step regardless (Parallel). True when the pass must end here."""
        return any(step(i) and self.monotonic for i in range(count))

    def _unavailable(self, pod: Obj | None) -> bool:
        return pod is None or is_terminating(pod) or (pod.get("status") or {}).get("phase") != "Running" \
            or not is_pod_ready(pod) or not self.ctl._available(pod, self.min_ready)

    # ---- the replicas (processReplica) ------------------------------------------------------------

    def _process_replica(self, i: int) -> bool:
        pod = self.replicas[i]
        if pod is not None and is_terminal(pod):
            if not is_terminating(pod):
                self._delete(pod)
            return True  # its replacement follows once it is gone
        if pod is None:
            self._create(self.start + i)
            return True
        if (pod.get("status") or {}).get("phase") == "Pending":
            self._create_claims(pod["metadata"]["name"], self.start + i)
        if self._unavailable(pod):
            return True
        self._fix_identity(pod, self.start + i)
        return False

    def _create(self, ordinal: int) -> None:
        """CreateStatefulPod: the pod's claims first, then the pod at its revision
        (newVersionedStatefulSetPod)."""
        partition = (_strategy(self.sts).get("rollingUpdate") or {}).get("partition") or 0
        revision = self.current if ordinal < self.start + partition and self.current in self.ctl._templates \
            else self.update
        pod = pod_from_template(self.ctl._templates[revision], self.sts)
        name = f"{self.name}-{ordinal}"
        meta = pod["metadata"]
        del meta["generateName"]
        meta["name"] = name
        meta["labels"].update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision})
        pod["spec"]["hostname"] = name
        if self.sts["spec"].get("serviceName"):
            pod["spec"]["subdomain"] = self.sts["spec"]["serviceName"]
        _mount_claims(pod, self.sts, ordinal)
        try:
            self._create_claims(name, ordinal)
            self.api.create(pod)
        except AlreadyExists:
            raise  # an old pod of that name is still there: retried, without an event
        except APIError as e:
            self._event("Warning", "FailedCreate", f"create Pod {name} in StatefulSet {self.name} failed error: "
                        f"{e.message}")
            raise
        self._event("Normal", "SuccessfulCreate", f"create Pod {name} in StatefulSet {self.name} successful")

    def _create_claims(self, pod_name: str, ordinal: int) -> None:
        """createPersistentVolumeClaims: each missing claim of the pod, labelled with the set's
        matchLabels; a claim being deleted is an error until it is gone."""
        match_labels = (self.sts["spec"].get("selector") or {}).get("matchLabels") or {}
        for template in self.sts["spec"].get("volumeClaimTemplates") or ():
            name = claim_name(template, self.name, ordinal)
            existing = self.api.store.get("PersistentVolumeClaim", self.ns, name)
            if existing is not None:
                if is_terminating(existing):
                    raise APIError(f"pvc {name} is being deleted")
                continue
            pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {**deep_copy(template.get("metadata") or {}), "name": name, "namespace": self.ns},
                   "spec": deep_copy(template.get("spec") or {})}
            pvc["metadata"]["labels"] = {**(pvc["metadata"].get("labels") or {}), **match_labels}
            if _retention(self.sts)["whenDeleted"] == "Delete":
                pvc["metadata"]["ownerReferences"] = [controller_ref(self.sts)]
            try:
                self.api.create(pvc)
            except AlreadyExists:
                continue
            except APIError as e:
                self._event("Warning", "FailedCreate", f"create Claim {name} for Pod {pod_name} in StatefulSet "
                            f"{self.name} failed error: failed to create PVC {name}: {e.message}")
                raise
            self._event("Normal", "SuccessfulCreate",
                        f"create Claim {name} Pod {pod_name} in StatefulSet {self.name} success")

    def _fix_identity(self, pod: Obj, ordinal: int) -> None:
        """UpdateStatefulPod, for the identity labels a pod taken over from elsewhere may lack."""
        name = pod["metadata"]["name"]
        labels = pod["metadata"].get("labels") or {}
        wanted = {POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)}
        if all(labels.get(k) == v for k, v in wanted.items()):
            return
        self.api.patch("Pod", self.ns, name, {"metadata": {"labels": wanted}})
        self._event("Normal", "SuccessfulUpdate", f"update Pod {name} in StatefulSet {self.name} successful")

    # ---- scale-down (processCondemned) ----------------------------------------------------------

    def _process_condemned(self, i: int) -> bool:
        pod = self.condemned[i]
        if is_terminating(pod):
            return True
        first_unhealthy = next((p for p in [*self.replicas, *reversed(self.condemned)] if self._unavailable(p)),
                               None)
        if self.monotonic and self._unavailable(pod) and pod is not first_unhealthy:
            return True
        self._release_claims(pod)
        self._delete(pod)
        return True

    def _release_claims(self, pod: Obj) -> None:
        """Under whenScaled: Delete a scaled-down pod's claims are owned by the pod, so the
        garbage collector deletes them after it (updateClaimOwnerRefForSetAndPod)."""
        if _retention(self.sts)["whenScaled"] != "Delete":
            return
        ordinal = parent_and_ordinal(pod["metadata"]["name"])[1]
        set_uid = self.sts["metadata"]["uid"]
        for template in self.sts["spec"].get("volumeClaimTemplates") or ():
            pvc = self.api.store.get("PersistentVolumeClaim", self.ns, claim_name(template, self.name, ordinal))
            if pvc is None:
                continue
            refs = [r for r in pvc["metadata"].get("ownerReferences") or ()
                    if r.get("uid") not in (set_uid, pod["metadata"].get("uid"))]
            refs.append(controller_ref(pod))
            self.api.patch("PersistentVolumeClaim", self.ns, pvc["metadata"]["name"],
                           {"metadata": {"ownerReferences": refs}})

    # ---- rolling update (updateStatefulSetAfterInvariantEstablished) ----------------------------

    def _rolling_update(self) -> None:
        rolling = _strategy(self.sts).get("rollingUpdate") or {}
        partition = rolling.get("partition") or 0
        max_unavailable = max(scaled_value(rolling.get("maxUnavailable", 1), len(self.replicas), False), 1)
        unavailable = sum(1 for p in self.replicas if self._unavailable(p))
        budget = max_unavailable - unavailable
        for target in range(len(self.replicas) - 1, partition - 1, -1):
            pod = self.replicas[target]
            if budget <= 0:
                return
            if pod is not None and not is_terminating(pod) and \
                    (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != self.update:
                self._delete(pod)
                budget -= 1

    # ---- API calls --------------------------------------------------------------------------------

    def _delete(self, pod: Obj) -> None:
        """DeleteStatefulPod: a graceful delete; the claims stay."""
        name = pod["metadata"]["name"]
        try:
            self.api.delete("Pod", self.ns, name)
        except NotFoundError:
            return
        except APIError as e:
            self._event("Warning", "FailedDelete", f"delete Pod {name} in StatefulSet {self.name} failed error: "
                        f"{e.message}")
            raise
        self._event("Normal", "SuccessfulDelete", f"delete Pod {name} in StatefulSet {self.name} successful")

    def _event(self, etype: str, reason: str, message: str) -> None:
        self.api.record_event(self.sts, etype, reason, message, source=SOURCE)


def _strategy(sts: Obj) -> Obj:
    return sts["spec"].get("updateStrategy") or {}


def _retention(sts: Obj) -> dict[str, str]:
    """persistentVolumeClaimRetentionPolicy, Retain/Retain unless said otherwise."""
    policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
    return {"whenDeleted": policy.get("whenDeleted") or "Retain", "whenScaled": policy.get("whenScaled") or "Retain"}


def _mount_claims(pod: Obj, sts: Obj, ordinal: int) -> None:
    """updateStorage: each claim template becomes a volume of that name using the pod's claim,
    replacing a template volume of the same name."""
    templates = sts["spec"].get("volumeClaimTemplates") or ()
    names = {(t.get("metadata") or {}).get("name") for t in templates}
    volumes = [{"name": (t.get("metadata") or {}).get("name"),
                "persistentVolumeClaim": {"claimName": claim_name(t, sts["metadata"]["name"], ordinal)}}
               for t in templates]
    volumes += [v for v in pod["spec"].get("volumes") or () if v.get("name") not in names]
    if volumes:
        pod["spec"]["volumes"] = volumes
