"""The Job controller: runs pods until `completions` of them succeed, or the Job fails.

Follows pkg/controller/job (v1.35, with JobPodReplacementPolicy, JobManagedBy and
JobSuccessPolicy on). At most `parallelism` pods are active (never more than the completions
still needed); NonIndexed pods are `<job>-<random>`, Indexed ones `<job>-<index>-<random>`
with the batch.kubernetes.io/job-completion-index annotation and label, hostname
`<job>-<index>` and the JOB_COMPLETION_INDEX variable, each index run until one of its pods
succeeds (status.completedIndexes). Pods carry the API server's batch.kubernetes.io/job-name and
controller-uid labels (apiserver.admission.default_job) and the batch.kubernetes.io/job-tracking
finalizer, which the controller removes once it has counted the pod as succeeded or failed.

A pod counts as failed when it fails, or — podReplacementPolicy TerminatingOrFailed, the default
— as soon as it starts terminating (drained, preempted, evicted), and its replacement may start
then. Replacements after failures wait the pod failure backoff: 10 s doubling per failure since
the last success, at most 10 minutes (MaxJobPodFailureBackOff; the Kubernetes docs still say six).
More than `backoffLimit` failures (for restartPolicy OnFailure, that many container restarts
of the active pods), or running longer than `activeDeadlineSeconds`, fails the Job: its active
pods are deleted, the FailureTarget condition (reason BackoffLimitExceeded or DeadlineExceeded) is
set at once, and Failed once no pod is terminating. Enough successes set SuccessCriteriaMet and
then Complete (reason CompletionsReached) with completionTime. `suspend` deletes the active pods
and sets Suspended; resuming starts the clock of activeDeadlineSeconds again. Pod events are
synced a second later (syncJobBatchPeriod), Job changes at once.

Where the API server waits for the tracking finalizer (`serve`, which says so with
`APIServer.honour`), a pod being deleted stays until it is counted, and the finalizer of a pod no
unfinished Job owns (its Job deleted or finished) is removed at once (syncOrphanPod). In
`simulate` it does not wait: a pod deleted while it still carries the finalizer is remembered
from its watch event and counted at the next sync; a pod that goes that way without having
succeeded counts as Failed, the phase upstream's kubelet gives it before it is removed.

Where this differs: no expectations are kept (see replicaset.py). podFailurePolicy,
successPolicy and backoffLimitPerIndex are not simulated.
"""

from __future__ import annotations

import contextlib

from kubesched.api.objects import Obj, controller_of, deep_copy, get_condition, is_pod_ready, is_terminating
from kubesched.apiserver.errors import APIError, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.podcontrol import create_pod, delete_pod, is_pod_active, slow_start_batch
from kubesched.controllers.podevents import owners_to_sync, selector_of
from kubesched.controllers.ranking import pods_to_delete
from kubesched.controllers.ratelimit import FailureBackoff
from kubesched.controllers.refmanager import claim
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import ADDED, DELETED, WatchEvent
from kubesched.store.podindex import OwnerIndex, PodIndexes, object_key

SOURCE = "job-controller"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # annotation and label
SYNC_BATCH_PERIOD = 1.0  # syncJobBatchPeriod: pod events are synced this much later
POD_FAILURE_BACKOFF = 10.0  # DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = 600.0  # MaxJobPodFailureBackOff
MAX_POD_CREATE_DELETE = 500  # MaxPodCreateDeletePerSync
BACKOFF_LIMIT_MESSAGE = "Job has reached the specified backoff limit"
DEADLINE_MESSAGE = "Job was active longer than specified deadline"
COMPLETIONS_MESSAGE = "Reached expected number of succeeded pods"


def is_finished(job: Obj) -> bool:
    """IsJobFinished: a Complete or Failed condition that is True."""
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


def _tracked(pod: Obj) -> bool:
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())


def completion_index(pod: Obj) -> int:
    """getCompletionIndex: the pod's index annotation, -1 when missing or not a number."""
    value = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX, "")
    return int(value) if value.isdigit() else -1


def parse_indexes(text: str, completions: int) -> set[int]:
    """status.completedIndexes ("1,3-5") as a set, ignoring what lies beyond `completions`."""
    found: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            found.update(i for i in range(int(low), int(high or low) + 1) if i < completions)
    return found


def format_indexes(indexes: set[int]) -> str:
    """orderedIntervals.String: ascending, runs of consecutive indexes as `first-last`."""
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(indexes):
        if run and i != run[-1] + 1:
            parts.append(_interval(run))
            run = []
        run.append(i)
    if run:
        parts.append(_interval(run))
    return ",".join(parts)


def _interval(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


class JobController:
    pods: OwnerIndex  # the store's pods by controller, from start()

    def __init__(self, api: APIServer, clock: Clock, indexes: PodIndexes | None = None) -> None:
        self.api = api
        self.clock = clock
        self.indexes = indexes or PodIndexes(api.store)  # shared: see PodIndexes
        self.queue = WorkQueue(clock, self._sync)
        self.backoff = FailureBackoff(clock, self.queue)
        self._batched: dict[tuple[str, str], Timer] = {}  # key -> the pending batched sync
        self._gone: dict[str, dict[str, Obj]] = {}  # job uid -> pod uid -> pod deleted uncounted
        self._pod_backoff: dict[tuple[str, str], tuple[int, float | None]] = {}  # failures, last failure
        self._deadlines: dict[tuple[str, str], float] = {}  # key -> when a sync checks its deadline
        # syncOrphanPod: pods whose tracking finalizer no running Job will remove (only where the
        # API server waits for it: otherwise nothing is held by it).
        self.orphans = WorkQueue(clock, self._sync_orphan)

    def start(self) -> None:
        self.pods = self.indexes.by_owner()
        for job in self.api.store.list("Job"):
            self.queue.add(object_key(job))
        self.api.store.watch(self._on_job, {"Job"})
        self.api.store.watch(self._on_pod, {"Pod"}, while_held="Job")

    # ---- event handlers -------------------------------------------------------------------------

    def _on_job(self, ev: WatchEvent) -> None:
        """addJob/updateJob/deleteJob: a new Job or a spec change is synced at once, a status
        change a second later."""
        key = object_key(ev.obj)
        if ev.type == DELETED:
            self.backoff.forget(key)
            self._pod_backoff.pop(key, None)
            self._deadlines.pop(key, None)
            self._gone.pop(ev.obj["metadata"].get("uid", ""), None)
            if TRACKING_FINALIZER in self.api.honoured:  # deleteJob: its pods are orphans now
                uid = ev.obj["metadata"].get("uid")
                for pod in self.api.store.list("Pod", key[0]):
                    if (controller_of(pod) or {}).get("uid") == uid and _tracked(pod):
                        self.orphans.add(object_key(pod))
            return
        old = ev.old
        if ev.type == ADDED or old is None or old["metadata"].get("generation") != ev.obj["metadata"].get("generation"):
            self.queue.add(key)
        else:
            self._add_batched(key, SYNC_BATCH_PERIOD)

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        ref = controller_of(pod)
        if ev.type == DELETED and ref is not None and ref.get("kind") == "Job" \
                and TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ()):
            gone = deep_copy(pod)
            status = gone.setdefault("status", {})
            if status.get("phase") != "Succeeded":
                status["phase"] = "Failed"
            self._gone.setdefault(ref.get("uid", ""), {})[pod["metadata"].get("uid", "")] = gone
        for job in owners_to_sync(ev, "Job", self.api.store):
            self._add_batched(object_key(job), SYNC_BATCH_PERIOD)
        if ev.type != DELETED and TRACKING_FINALIZER in self.api.honoured and _tracked(pod) and self._orphaned(pod):
            self.orphans.add(object_key(pod))

    def _orphaned(self, pod: Obj) -> bool:
        """Whether no Job that still runs owns the pod (a pod another kind controls is left alone)."""
        ref = controller_of(pod)
        if ref is None:
            return True
        if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
            return False
        job = self.api.store.get("Job", pod["metadata"].get("namespace", ""), ref.get("name", ""))
        return job is None or job["metadata"].get("uid") != ref.get("uid") or is_finished(job)

    def _sync_orphan(self, key: tuple[str, str]) -> None:
        """syncOrphanPod: drop the tracking finalizer of a pod still orphaned."""
        pod = self.api.store.get("Pod", *key)
        if pod is None or not _tracked(pod) or not self._orphaned(pod):
            return
        kept = [f for f in pod["metadata"]["finalizers"] if f != TRACKING_FINALIZER]
        with contextlib.suppress(APIError):  # gone meanwhile
            self.api.patch("Pod", *key, {"metadata": {"finalizers": kept or None}})

    def _add_batched(self, key: tuple[str, str], delay: float) -> None:
        """enqueueSyncJobBatched/WithDelay: one sync at the earliest time asked for."""
        when = self.clock.now() + max(delay, SYNC_BATCH_PERIOD)
        pending = self._batched.get(key)
        if pending is not None and not pending.cancelled and pending.when <= when:
            return
        if pending is not None:
            pending.cancel()

        def fire() -> None:
            self._batched.pop(key, None)
            self.queue.add(key)

        self._batched[key] = self.clock.call_at(when, fire)

    # ---- sync (syncJob) -------------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        job = self.api.store.get("Job", *key)
        if job is None:
            self._pod_backoff.pop(key, None)
            return
        if is_finished(job):
            self._pod_backoff.pop(key, None)
            return
        try:
            _JobSync(self, deep_copy(job)).run()
        except APIError:
            self.backoff.retry(key)
        else:
            self.backoff.forget(key)

    def check_deadline(self, key: tuple[str, str], when: float) -> None:
        """A sync when activeDeadlineSeconds runs out (once per deadline, however often asked)."""
        if self._deadlines.get(key) != when:
            self._deadlines[key] = when
            self.queue.add_after(key, when - self.clock.now())

    def pod_backoff_remaining(self, key: tuple[str, str], failures: int, last: float | None) -> float:
        """getRemainingTimeForFailuresCount: 10 s doubling per failure since the last success."""
        if failures == 0 or last is None:
            return 0.0
        delay = min(POD_FAILURE_BACKOFF * 2 ** (failures - 1), MAX_POD_FAILURE_BACKOFF)
        return max(delay - (self.clock.now() - last), 0.0)


class _JobSync:
    """One syncJob: count what finished, decide the Job's fate, manage its pods, write status."""

    def __init__(self, ctl: JobController, job: Obj) -> None:
        self.ctl, self.api, self.job = ctl, ctl.api, job
        self.key = object_key(job)
        self.spec = job["spec"]
        self.status = job.setdefault("status", {})
        self.old_status = deep_copy(self.status)
        self.uid = job["metadata"]["uid"]
        self.now = ctl.clock.now()
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.completions: int | None = self.spec.get("completions")

    def run(self) -> None:
        ns = self.key[0]
        live = claim(self.api, self.job, selector_of(self.job), self.ctl.pods.owned(self.uid) + self.ctl.pods.orphans(ns))
        gone = list(self.ctl._gone.get(self.uid, {}).values())
        pods = live + gone
        active = [p for p in live if is_pod_active(p)]
        self.terminating = sum(1 for p in live if is_terminating(p) and not _terminal(p))
        self.ready = sum(1 for p in active if is_pod_ready(p))
        tracked = [p for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or ())
                   and (not self.indexed or 0 <= completion_index(p) < (self.completions or 0))]
        new_succeeded = [p for p in tracked if (p.get("status") or {}).get("phase") == "Succeeded"]
        new_failed = [p for p in tracked if self._failed(p)]
        succeeded = self.status.get("succeeded", 0) + len(new_succeeded)
        failed = self.status.get("failed", 0) + len(new_failed)
        suspended = bool(self.spec.get("suspend"))
        if self.status.get("startTime") is None and not suspended:
            self.status["startTime"] = self.api.timestamp()
        backoff = self._new_backoff_record(new_succeeded, new_failed)
        finished = self._condition_true("SuccessCriteriaMet")
        if finished is None:
            target = self._condition_true("FailureTarget")
            if target is not None:
                finished = target
            elif failed > self.spec.get("backoffLimit", 6) or self._past_backoff_limit_on_failure(pods):
                finished = _condition("FailureTarget", "BackoffLimitExceeded", BACKOFF_LIMIT_MESSAGE, self.api)
            elif self._past_active_deadline():
                finished = _condition("FailureTarget", "DeadlineExceeded", DEADLINE_MESSAGE, self.api)
            elif self.spec.get("activeDeadlineSeconds") is not None and not suspended:
                self.ctl.check_deadline(self.key, self._deadline())
        succeeded_indexes: set[int] = set()
        if self.indexed:
            succeeded_indexes = parse_indexes(self.status.get("completedIndexes", ""), self.completions or 0) | {
                completion_index(p) for p in new_succeeded}
            succeeded = len(succeeded_indexes)
        error: str | None = None
        suspend_changed = False
        count_active = len(active)
        if finished is not None:
            deleted, deleted_ready, error = self._delete_pods(active, remove_finalizer=False)
            if deleted != len(active):
                finished = None
            count_active -= deleted
            self.terminating += deleted
            self.ready -= deleted_ready
        else:
            managed = not is_terminating(self.job)
            if managed:
                count_active, error = self._manage(active, succeeded, succeeded_indexes, backoff)
            done = count_active == 0 and (succeeded > 0 if self.completions is None else succeeded >= self.completions)
            if done:
                finished = _condition("SuccessCriteriaMet", "CompletionsReached", COMPLETIONS_MESSAGE, self.api)
            elif managed:
                suspend_changed = self._suspend_condition(suspended)
        self.status["active"] = count_active
        self.status["ready"] = self.ready
        self.status["terminating"] = self.terminating
        self._track(pods, finished, new_succeeded, succeeded_indexes, backoff, suspend_changed)
        if error is not None:
            raise APIError(error)

    # ---- counting -------------------------------------------------------------------------------

    def _failed(self, pod: Obj) -> bool:
        """isPodFailed: Failed, or (unless only failed pods are replaced) terminating unsucceeded."""
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Failed":
            return True
        if self._only_replace_failed():
            return False
        return is_terminating(pod) and phase != "Succeeded"

    def _only_replace_failed(self) -> bool:
        return self.spec.get("podReplacementPolicy") == "Failed" or self.spec.get("podFailurePolicy") is not None

    def _condition_true(self, ctype: str) -> Obj | None:
        cond = get_condition(self.job, ctype)
        return cond if cond is not None and cond.get("status") == "True" else None

    def _past_backoff_limit_on_failure(self, pods: list[Obj]) -> bool:
        """pastBackoffLimitOnFailure: under restartPolicy OnFailure, the container restarts of the
        Pending and Running pods reach backoffLimit."""
        if ((self.spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
            return False
        restarts = sum(c.get("restartCount", 0) for p in pods
                       if (p.get("status") or {}).get("phase") in ("Pending", "Running")
                       for key in ("initContainerStatuses", "containerStatuses")
                       for c in (p.get("status") or {}).get(key) or ())
        limit = self.spec.get("backoffLimit", 6)
        return restarts > 0 if limit == 0 else restarts >= limit

    def _deadline(self) -> float:
        return self.api.seconds(self.status["startTime"]) + self.spec["activeDeadlineSeconds"]

    def _past_active_deadline(self) -> bool:
        return self.spec.get("activeDeadlineSeconds") is not None and self.status.get("startTime") is not None \
            and not self.spec.get("suspend") and self.now >= self._deadline()

    def _new_backoff_record(self, succeeded: list[Obj], failed: list[Obj]) -> tuple[int, float | None]:
        """newBackoffRecord: failures since the last success, and when the last of them was."""
        failures, last = self.ctl._pod_backoff.get(self.key, (0, None))
        fail_times = sorted(_finished_time(p, self.api) for p in failed)
        if not succeeded:
            return (failures + len(fail_times), fail_times[-1]) if fail_times else (failures, last)
        last_success = max(_finished_time(p, self.api) for p in succeeded)
        after = [t for t in fail_times if t > last_success]
        return len(after), (after[-1] if after else None)

    # ---- pods (manageJob) -----------------------------------------------------------------------

    def _manage(self, active: list[Obj], succeeded: int, succeeded_indexes: set[int],
                backoff: tuple[int, float | None]) -> tuple[int, str | None]:
        """manageJob: delete extra pods, or create missing ones once the failure backoff is over.
        Returns the active count and the first failure's text."""
        count = len(active)
        if self.spec.get("suspend"):
            deleted, deleted_ready, error = self._delete_pods(active, remove_finalizer=True)
            self.terminating += deleted
            self.ready -= deleted_ready
            return count - deleted, error
        parallelism = self.spec.get("parallelism", 1)
        if self.completions is None:
            want = count if succeeded > 0 else parallelism
        else:
            want = max(min(self.completions - succeeded, parallelism), 0)
        extra = self._extra_pods(active, max(count - want, 0))[:MAX_POD_CREATE_DELETE]
        if extra:
            deleted, deleted_ready, error = self._delete_pods(extra, remove_finalizer=True)
            self.terminating += deleted
            self.ready -= deleted_ready
            return count - deleted, error
        waiting = self.terminating if self._only_replace_failed() else 0
        diff = min(want - waiting - count, MAX_POD_CREATE_DELETE)
        if diff <= 0:
            return count, None
        remaining = self.ctl.pod_backoff_remaining(self.key, *backoff)
        if remaining > 0:
            self.ctl._add_batched(self.key, remaining)
            return 0, None  # upstream reports no active pods while it waits
        indexes: list[int | None] = [None] * diff
        if self.indexed:
            taken = succeeded_indexes | {completion_index(p) for p in active}
            indexes = [i for i in range(self.completions or 0) if i not in taken][:diff]
        template = deep_copy(self.spec.get("template") or {})
        meta = template.setdefault("metadata", {})
        meta["finalizers"] = [*(f for f in meta.get("finalizers") or () if f != TRACKING_FINALIZER), TRACKING_FINALIZER]
        queue = iter(indexes)
        created = 0

        def create_one() -> str | None:
            nonlocal created
            index = next(queue)
            pod_template, generate_name = template, None
            if index is not None:
                pod_template, generate_name = _indexed(template, self.job["metadata"]["name"], index)
            error = create_pod(self.api, pod_template, self.job, SOURCE, generate_name)
            created += error is None
            return error

        error = slow_start_batch(len(indexes), create_one)
        return count + created, error

    def _extra_pods(self, active: list[Obj], at_least: int) -> list[Obj]:
        """activePodsForRemoval: for Indexed Jobs the pods of an index beyond completions, or a
        second one of an index, first; then the lowest-ranked (controller.ActivePods)."""
        remove: list[Obj] = []
        left = active
        if self.indexed:
            seen: set[int] = set()
            left = []
            for pod in sorted(active, key=completion_index):
                index = completion_index(pod)
                if not 0 <= index < (self.completions or 0) or index in seen:
                    remove.append(pod)
                else:
                    seen.add(index)
                    left.append(pod)
        if len(remove) < at_least:
            remove += pods_to_delete(left, [], at_least - len(remove), self.now, self.api.seconds)
        return remove

    def _delete_pods(self, pods: list[Obj], remove_finalizer: bool) -> tuple[int, int, str | None]:
        """deleteJobPods / deleteActivePods: (deleted, of them ready, first failure's text)."""
        deleted = deleted_ready = 0
        error = None
        for pod in pods:
            if remove_finalizer:
                self._remove_finalizer(pod)
            failure = delete_pod(self.api, pod, self.job, SOURCE)
            if failure is None:
                deleted += 1
                deleted_ready += is_pod_ready(pod)
            error = error or failure
        return deleted, deleted_ready, error

    def _remove_finalizer(self, pod: Obj) -> None:
        gone = self.ctl._gone.get(self.uid, {})
        if gone.pop(pod["metadata"].get("uid", ""), None) is not None:
            return
        finalizers = pod["metadata"].get("finalizers") or []
        if TRACKING_FINALIZER not in finalizers:
            return
        kept = [f for f in finalizers if f != TRACKING_FINALIZER]
        try:
            self.api.patch("Pod", *object_key(pod), {"metadata": {"finalizers": kept or None}})
        except NotFoundError:
            return

    def _suspend_condition(self, suspended: bool) -> bool:
        """The Suspended condition and its events; resuming restarts the deadline's clock."""
        cond = get_condition(self.job, "Suspended")
        if suspended:
            wanted = ("True", "JobSuspended", "Job suspended", "Suspended")
        elif cond is not None:
            wanted = ("False", "JobResumed", "Job resumed", "Resumed")
        else:
            return False
        status, reason, message, event = wanted
        if cond is not None and (cond.get("status"), cond.get("reason"), cond.get("message")) == wanted[:3]:
            return False
        conditions = [c for c in self.status.get("conditions") or () if c.get("type") != "Suspended"]
        conditions.append({**_condition("Suspended", reason, message, self.api), "status": status})
        self.status["conditions"] = conditions
        self.api.record_event(self.job, "Normal", event, message, source=SOURCE)
        if not suspended:
            self.status["startTime"] = self.api.timestamp()
        return True

    # ---- status (trackJobStatusAndRemoveFinalizers) ------------------------------------------------

    def _track(self, pods: list[Obj], finished: Obj | None, new_succeeded: list[Obj], succeeded_indexes: set[int],
               backoff: tuple[int, float | None], changed: bool) -> None:
        """Count the finished pods and drop their finalizers, then set the terminal condition once
        nothing is left terminating. Upstream lists the counted pods' uids in
        status.uncountedTerminatedPods between two writes; its API calls can fail half-way, these
        cannot, so one write does."""
        counted_succeeded = counted_failed = 0
        finishing_failed = finished is not None and finished["type"] != "SuccessCriteriaMet"
        for pod in pods:
            if TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or ()):
                continue
            failed = self._failed(pod)
            phase = (pod.get("status") or {}).get("phase")
            if not (is_terminating(self.job) or finished is not None or phase == "Succeeded" or failed):
                continue
            index = completion_index(pod)
            valid = not self.indexed or 0 <= index < (self.completions or 0)
            if phase == "Succeeded":
                counted_succeeded += valid and not self.indexed
            elif (failed or finishing_failed) and valid:
                counted_failed += 1
            self._remove_finalizer(pod)
        status = self.status
        status["succeeded"] = status.get("succeeded", 0) + counted_succeeded
        if self.indexed:
            status["succeeded"] = len(succeeded_indexes)
            status["completedIndexes"] = format_indexes(succeeded_indexes)
        status["failed"] = status.get("failed", 0) + counted_failed
        status["uncountedTerminatedPods"] = {}
        conditions = status.setdefault("conditions", [])
        final = None
        if finished is not None:
            if get_condition(self.job, finished["type"]) is None:
                conditions.append(finished)
            final = {**finished, "type": "Failed" if finished["type"] == "FailureTarget" else "Complete"}
        if final is not None and self.terminating == 0:
            conditions.append({**final, "lastProbeTime": self.api.timestamp(),
                               "lastTransitionTime": self.api.timestamp()})
            if final["type"] == "Complete":
                status["completionTime"] = self.api.timestamp()
        else:
            final = None
        if not conditions:
            del status["conditions"]
        for key in ("succeeded", "failed", "active"):
            if not status.get(key):
                status.pop(key, None)  # omitempty; ready and terminating are always written
        if status == self.old_status and not changed:
            return
        if counted_succeeded or counted_failed or new_succeeded:
            self.ctl._pod_backoff[self.key] = backoff
        try:
            self.api.update_status("Job", *self.key, lambda st: (st.clear(), st.update(deep_copy(status))))
        except NotFoundError:
            return
        if final is None:
            return
        if final["type"] == "Complete":
            if self.completions is not None and status.get("succeeded", 0) > self.completions:
                self.api.record_event(self.job, "Warning", "TooManySucceededPods",
                                      "Too many succeeded pods running after completion count reached", source=SOURCE)
            self.api.record_event(self.job, "Normal", "Completed", "Job completed", source=SOURCE)
        else:
            self.api.record_event(self.job, "Warning", final.get("reason", ""), final.get("message", ""), source=SOURCE)


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _condition(ctype: str, reason: str, message: str, api: APIServer) -> Obj:
    now = api.timestamp()
    return {"type": ctype, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def _finished_time(pod: Obj, api: APIServer) -> float:
    """getFinishedTime: the containers' last finish, else when Ready turned False, else the
    deletion time less the grace period, else the creation time."""
    status = pod.get("status") or {}
    finishes = [((c.get("state") or {}).get("terminated") or {}).get("finishedAt")
                for c in status.get("containerStatuses") or ()]
    if finishes and all(finishes):
        return max(api.seconds(t) for t in finishes)
    ready = get_condition(pod, "Ready")
    if ready is not None and ready.get("status") == "False" and ready.get("lastTransitionTime"):
        return api.seconds(ready["lastTransitionTime"])
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        return api.seconds(meta["deletionTimestamp"]) - (meta.get("deletionGracePeriodSeconds") or 0)
    return api.seconds(meta["creationTimestamp"]) if meta.get("creationTimestamp") else 0.0


def _indexed(template: Obj, job_name: str, index: int) -> tuple[Obj, str]:
    """An Indexed Job's pod: its index as annotation, label, hostname and JOB_COMPLETION_INDEX
    (read from the annotation), named `<job>-<index>-<random>`."""
    pod_template = deep_copy(template)
    meta = pod_template["metadata"]
    meta.setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
    meta.setdefault("labels", {})[COMPLETION_INDEX] = str(index)
    spec = pod_template.setdefault("spec", {})
    spec["hostname"] = f"{job_name}-{index}"
    env = {"name": "JOB_COMPLETION_INDEX",
           "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in c.get("env") or ()):
                c["env"] = [*(c.get("env") or ()), env]
    return pod_template, f"{job_name}-{index}-"
