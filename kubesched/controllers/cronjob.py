"""The CronJob controller: creates a Job at every scheduled time, on the virtual clock.

Follows pkg/controller/cronjob's ControllerV2 (v1.35). The schedule (cronschedule.py, in
spec.timeZone) is evaluated against the run's clock, whose epoch is the export's moment. At a
scheduled time the controller creates the Job `<cronjob>-<scheduled time in minutes since the Unix
epoch>` from spec.jobTemplate (its labels and annotations, plus
batch.kubernetes.io/cronjob-scheduled-timestamp), lists it in status.active and sets
status.lastScheduleTime; it wakes 100 ms after each scheduled time, as upstream does. Only the
most recent missed time is started, and not if it is more than startingDeadlineSeconds late
(MissSchedule). concurrencyPolicy Forbid skips a time while a Job is active (JobAlreadyActive),
Replace deletes the active Jobs first, Allow runs them side by side. A finished Job leaves
status.active (SawCompletedJob), a succeeded one sets lastSuccessfulTime, and beyond
successfulJobsHistoryLimit (3) and failedJobsHistoryLimit (1) the oldest finished Jobs are
deleted; their pods follow through the garbage collector. `suspend` stops new Jobs.

A CronJob's wake-ups are periodic, so they alone do not keep a run going (it would never end):
give the run an end time (`until`) to watch a schedule play out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubesched.api.cron import Schedule, ScheduleError, load_zone
from kubesched.api.objects import Obj, controller_of, deep_copy, format_time, is_terminating, parse_time
from kubesched.apiserver.errors import AlreadyExists, APIError, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.job import is_finished
from kubesched.controllers.podcontrol import controller_ref
from kubesched.controllers.ratelimit import FailureBackoff
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent
from kubesched.store.podindex import object_key

SOURCE = "cronjob-controller"
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1  # nextScheduleDelta: wake a little after the scheduled time
MANY_MISSED = 100
DEFAULT_SUCCESSFUL_HISTORY = 3
DEFAULT_FAILED_HISTORY = 1


def job_name(cronjob: Obj, scheduled: datetime) -> str:
    """getJobName: the scheduled time in minutes since the Unix epoch makes the name unique."""
    return f"{cronjob['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


_REMEMBERED = 1024  # parsed schedules, and activation times per schedule, kept at most


class RememberingSchedule(Schedule):
    """A schedule that remembers its activation times: every sync of a CronJob asks for the
    same few, and croniter is slow to step."""

    def __init__(self, text: str, time_zone: str | None = None) -> None:
        super().__init__(text, time_zone)
        self._next: dict[tuple[datetime, Any], datetime] = {}

    def next(self, after: datetime) -> datetime:
        key = (after, after.tzinfo)  # equal instants in other zones may give answers in other zones
        found = self._next.get(key)
        if found is None:
            if len(self._next) >= _REMEMBERED:
                self._next.clear()
            found = self._next[key] = super().next(after)
        return found


class CronJobController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.clock = clock
        self.queue = WorkQueue(clock, self._sync)
        self.backoff = FailureBackoff(clock, self.queue)
        self._wakeups: dict[tuple[str, str], Timer] = {}
        self._schedules: dict[tuple[str, str | None], RememberingSchedule | ScheduleError] = {}

    def start(self) -> None:
        for cj in self.api.store.list("CronJob"):
            self.queue.add(object_key(cj))
        self.api.store.watch(self._on_cronjob, {"CronJob"})
        self.api.store.watch(self._on_job, {"Job"})

    def _on_cronjob(self, ev: WatchEvent) -> None:
        key = object_key(ev.obj)
        if ev.type == DELETED:
            self.backoff.forget(key)
            timer = self._wakeups.pop(key, None)
            if timer is not None:
                timer.cancel()
            return
        self.queue.add(key)

    def _on_job(self, ev: WatchEvent) -> None:
        """addJob/updateJob/deleteJob: wake the CronJob that controls the Job."""
        for job in (ev.obj, ev.old) if ev.old is not None and controller_of(ev.old) != controller_of(ev.obj) \
                else (ev.obj,):
            ref = controller_of(job)
            if ref is None or ref.get("kind") != "CronJob":
                continue
            cj = self.api.store.get("CronJob", job["metadata"].get("namespace", "default"), ref.get("name", ""))
            if cj is not None and cj["metadata"].get("uid") == ref.get("uid"):
                self.queue.add(object_key(cj))

    def _schedule(self, text: str, zone: str | None) -> Schedule:
        """The parsed schedule, parsed once: a CronJob syncs on every change to its Jobs."""
        known = self._schedules.get((text, zone))
        if known is None:
            try:
                known = RememberingSchedule(text, zone)
            except ScheduleError as e:
                known = e
            if len(self._schedules) >= _REMEMBERED:
                self._schedules.clear()
            self._schedules[(text, zone)] = known
        if isinstance(known, ScheduleError):
            raise known
        return known

    def _wake_at(self, key: tuple[str, str], when: float) -> None:
        """AddAfter: the earliest wake-up asked for wins; a daemon timer, being periodic."""
        pending = self._wakeups.get(key)
        if pending is not None and not pending.cancelled and pending.when <= when:
            return
        if pending is not None:
            pending.cancel()

        def fire() -> None:
            self._wakeups.pop(key, None)
            self.queue.add(key)

        self._wakeups[key] = self.clock.call_at(when, fire, daemon=True, fixed=True)

    def now(self) -> datetime:
        return self.api.epoch + timedelta(seconds=self.clock.now())

    def seconds(self, when: datetime) -> float:
        return (when - self.api.epoch).total_seconds()

    # ---- sync -----------------------------------------------------------------------------------

    def _sync(self, key: tuple[str, str]) -> None:
        cj = self.api.store.get("CronJob", *key)
        if cj is None:
            return
        jobs = [j for j in self.api.store.list("Job", key[0])
                if (controller_of(j) or {}).get("name") == key[1]]
        cj = deep_copy(cj)
        status = cj.setdefault("status", {})
        before = deep_copy(status)
        self._cleanup_finished(cj, jobs)
        try:
            wake = self._sync_cronjob(cj, jobs)
        except APIError:
            self.backoff.retry(key)
            wake = None
        else:
            self.backoff.forget(key)
        if status != before:
            if not status.get("active"):
                status.pop("active", None)
            try:
                self.api.update_status("CronJob", *key, lambda st: (st.clear(), st.update(status)))
            except NotFoundError:
                return
        if wake is not None:
            self._wake_at(key, wake)

    def _sync_cronjob(self, cj: Obj, jobs: list[Obj]) -> float | None:
        """syncCronJob: reconcile status.active with the Jobs, then start the Job of the most
        recent unmet scheduled time. Returns when to wake next (virtual seconds), if ever."""
        status = cj["status"]
        children = {j["metadata"]["uid"] for j in jobs}
        for job in jobs:
            uid = job["metadata"]["uid"]
            listed = any(a.get("uid") == uid for a in status.get("active") or ())
            if not listed and not is_finished(job):
                self._event(cj, "Warning", "UnexpectedJob",
                            f"Saw a job that the controller did not create or forgot: {job['metadata']['name']}")
            elif listed and is_finished(job):
                self._remove_active(cj, uid)
                self._event(cj, "Normal", "SawCompletedJob",
                            f"Saw completed job: {job['metadata']['name']}, status: {_finished_type(job)}")
            elif _finished_type(job) == "Complete":
                done = (job.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if done and (last is None or parse_time(done) > parse_time(last)):
                    status["lastSuccessfulTime"] = done
        for ref in list(status.get("active") or ()):
            if ref.get("uid") not in children:
                self._event(cj, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
                self._remove_active(cj, ref.get("uid"))
        spec = cj["spec"]
        if is_terminating(cj):
            return None
        if spec.get("timeZone") is not None:
            try:
                load_zone(spec["timeZone"])
            except ScheduleError as e:
                self._event(cj, "Warning", "UnknownTimeZone", f'invalid timeZone: "{spec["timeZone"]}": {e}')
                return None
        if spec.get("suspend"):
            return None
        try:
            schedule = self._schedule(spec.get("schedule", ""), spec.get("timeZone"))
        except ScheduleError as e:
            self._event(cj, "Warning", "UnparseableSchedule", f'unparseable schedule: "{spec.get("schedule")}" : {e}')
            return None
        now = self.now()
        try:
            scheduled = self._next_schedule_time(cj, now, schedule)
        except ScheduleError as e:
            self._event(cj, "Warning", "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {e}")
            return None
        if scheduled is None:
            return self._next_wake(cj, now, schedule)
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=deadline) < now:
            self._event(cj, "Warning", "MissSchedule", "Missed scheduled time to start a job: "
                        + scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000"))
            return self._next_wake(cj, now, schedule)
        name = job_name(cj, scheduled)
        last = status.get("lastScheduleTime")
        if any(a.get("name") == name for a in status.get("active") or ()) or \
                (last is not None and parse_time(last) == scheduled):
            return self._next_wake(cj, now, schedule)
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status.get("active"):
            self._event(cj, "Normal", "JobAlreadyActive",
                        "Not starting job because prior execution is running and concurrency policy is Forbid")
            return self._next_wake(cj, now, schedule)
        if policy == "Replace":
            for ref in list(status.get("active") or ()):
                job = self.api.store.get("Job", cj["metadata"].get("namespace", "default"), ref.get("name", ""))
                if job is None:
                    self._event(cj, "Warning", "FailedGet", f'Get job: jobs.batch "{ref.get("name")}" not found')
                    raise APIError(f"job {ref.get('name')} not found")
                self._delete_job(cj, job)
        job = self._job_from_template(cj, scheduled, schedule)
        try:
            created = self.api.create(job)
        except AlreadyExists:
            created = self.api.store.get("Job", cj["metadata"].get("namespace", "default"), name)
            if created is None or (controller_of(created) or {}).get("uid") != cj["metadata"]["uid"] or \
                    any(a.get("uid") == created["metadata"]["uid"] for a in status.get("active") or ()):
                return None
        except APIError as e:
            self._event(cj, "Warning", "FailedCreate", f"Error creating job: {e.message}")
            raise
        else:
            self._event(cj, "Normal", "SuccessfulCreate", f"Created job {name}")
        meta = created["metadata"]
        status.setdefault("active", []).append({
            "apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "namespace": meta.get("namespace"),
            "uid": meta["uid"], "resourceVersion": meta.get("resourceVersion")})
        status["lastScheduleTime"] = _stamp(scheduled)
        return self._next_wake(cj, now, schedule)

    # ---- schedule arithmetic (utils.go) --------------------------------------------------------------

    def _most_recent(self, cj: Obj, now: datetime, schedule: Schedule,
                     with_deadline: bool) -> tuple[datetime, datetime | None, int]:
        """mostRecentScheduleTime: (earliest time considered, the latest scheduled time not after
        `now` or None, the approximate number of times missed)."""
        last = (cj.get("status") or {}).get("lastScheduleTime")
        earliest = parse_time(last) if last else parse_time(cj["metadata"]["creationTimestamp"])
        deadline = cj["spec"].get("startingDeadlineSeconds")
        if with_deadline and deadline is not None:
            earliest = max(earliest, now - timedelta(seconds=deadline))
        t1 = schedule.next(earliest)
        t2 = schedule.next(t1)
        if now < t1:
            return earliest, None, 0
        if now < t2:
            return earliest, t1, 0
        between = round((t2 - t1).total_seconds())
        if between < 1:
            raise ScheduleError("time difference between two schedules is less than 1 second")
        missed = int((now - t1).total_seconds()) // between + 1
        recent = None
        t = schedule.next(t1 + timedelta(seconds=(missed - 2) * between))
        while t <= now:
            recent = t
            t = schedule.next(t)
        return earliest, recent, missed

    def _next_schedule_time(self, cj: Obj, now: datetime, schedule: Schedule) -> datetime | None:
        """nextScheduleTime: the most recent unmet scheduled time, warning when over 100 were missed."""
        _, recent, missed = self._most_recent(cj, now, schedule, with_deadline=True)
        if recent is None or recent > now:
            return None
        if missed > MANY_MISSED:
            self._event(cj, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
                        ".spec.startingDeadlineSeconds or check clock skew")
        return recent

    def _next_wake(self, cj: Obj, now: datetime, schedule: Schedule) -> float:
        """nextScheduleTimeDuration, as virtual time: the next scheduled time plus 100 ms."""
        try:
            earliest, recent, missed = self._most_recent(cj, now, schedule, with_deadline=False)
        except ScheduleError:
            earliest, recent, missed = now, now, 0
        base = recent if recent is not None else (earliest if missed == 0 else now)
        return self.seconds(schedule.next(base)) + NEXT_SCHEDULE_DELTA

    # ---- Jobs -------------------------------------------------------------------------------------

    def _job_from_template(self, cj: Obj, scheduled: datetime, schedule: Schedule) -> Obj:
        """getJobFromTemplate2: the template's labels, annotations and spec, the scheduled time
        (in the CronJob's zone) as an annotation, controlled by the CronJob."""
        template = cj["spec"].get("jobTemplate") or {}
        meta = template.get("metadata") or {}
        annotations = dict(meta.get("annotations") or {})
        annotations[SCHEDULED_ANNOTATION] = _rfc3339(scheduled.astimezone(schedule.zone))
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": job_name(cj, scheduled), "namespace": cj["metadata"].get("namespace", "default"),
                             "labels": dict(meta.get("labels") or {}), "annotations": annotations,
                             "ownerReferences": [{**controller_ref(cj), "apiVersion": "batch/v1"}]},
                "spec": deep_copy(template.get("spec") or {})}

    def _cleanup_finished(self, cj: Obj, jobs: list[Obj]) -> None:
        """cleanupFinishedJobs: delete the oldest finished Jobs beyond the history limits."""
        spec = cj["spec"]
        for kind, limit in (("Complete", spec.get("successfulJobsHistoryLimit", DEFAULT_SUCCESSFUL_HISTORY)),
                            ("Failed", spec.get("failedJobsHistoryLimit", DEFAULT_FAILED_HISTORY))):
            finished = [j for j in jobs if _finished_type(j) == kind]
            if limit is None or len(finished) <= limit:
                continue
            finished.sort(key=_by_start_time)
            for job in finished[:len(finished) - limit]:
                self._delete_job(cj, job)

    def _delete_job(self, cj: Obj, job: Obj) -> None:
        """deleteJob: delete it (its pods follow in the background) and forget it as active."""
        name = job["metadata"]["name"]
        try:
            self.api.delete("Job", job["metadata"].get("namespace", "default"), name, propagation_policy="Background")
        except APIError as e:
            self._event(cj, "Warning", "FailedDelete", f"Deleted job: {e.message}")
            return
        self._remove_active(cj, job["metadata"]["uid"])
        self._event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name}")

    @staticmethod
    def _remove_active(cj: Obj, uid: str | None) -> None:
        status = cj["status"]
        status["active"] = [a for a in status.get("active") or () if a.get("uid") != uid]

    def _event(self, cj: Obj, etype: str, reason: str, message: str) -> None:
        self.api.record_event(cj, etype, reason, message, source=SOURCE)


def _finished_type(job: Obj) -> str | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return cond["type"]
    return None


def _by_start_time(job: Obj) -> tuple[bool, str, str]:
    """byJobStartTime: by status.startTime (Jobs without one last), then by name."""
    start = (job.get("status") or {}).get("startTime")
    return start is None, start or "", job["metadata"]["name"]


def _stamp(when: datetime) -> str:
    return format_time(datetime(1970, 1, 1, tzinfo=UTC), when.timestamp())


def _rfc3339(when: datetime) -> str:
    """Go's time.RFC3339: `Z` for a zero offset, else the offset as +hh:mm."""
    text = when.strftime("%Y-%m-%dT%H:%M:%S%z")
    return text[:-5] + "Z" if when.utcoffset() == timedelta(0) else text[:-2] + ":" + text[-2:]
