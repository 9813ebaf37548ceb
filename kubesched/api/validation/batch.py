"""batch/v1: Jobs and CronJobs (pkg/apis/batch/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.cron import Schedule, ScheduleError
from kubesched.api.validation.checker import Checker, _label_selector, _labels, subpath
from kubesched.api.validation.core import _nonnegative, _pod_template, _selector_matches

# Job fields kubesched reads but does not simulate.
JOB_IGNORED = ("podFailurePolicy", "successPolicy", "backoffLimitPerIndex", "maxFailedIndexes", "managedBy")


def _job_spec(c: Checker, value: Any, spec_path: str) -> None:
    """A JobSpec, in a Job or a CronJob's jobTemplate."""
    spec = c.typed(value, spec_path, dict)
    if spec is None:
        if value is None:
            c.required(spec_path)
        return
    _nonnegative(c, spec, ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"), spec_path)
    _nonnegative(c, spec, ("activeDeadlineSeconds",), spec_path, 64)
    if c.enum(spec, "completionMode", spec_path, ("NonIndexed", "Indexed")) == "Indexed" \
            and spec.get("completions") is None:
        c.required(subpath(spec_path, "completions"), "when completion mode is Indexed")
    c.enum(spec, "podReplacementPolicy", spec_path, ("TerminatingOrFailed", "Failed"))
    c.get(spec, "suspend", spec_path, bool)
    manual = c.get(spec, "manualSelector", spec_path, bool)
    for key in JOB_IGNORED:
        if spec.get(key) is not None:
            c.warn(subpath(spec_path, key), "ignored: kubesched does not simulate it")
    selector_path = subpath(spec_path, "selector")
    selector = None
    if spec.get("selector") is not None:
        selector = _label_selector(c, spec["selector"], selector_path)
    elif manual:
        c.required(selector_path)
    _pod_template(c, spec, spec_path, ("OnFailure", "Never"), _selector_matches(c, selector, spec_path))


def _cronjob(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        if obj.get("spec") is None:
            c.required(spec_path)
        return
    schedule = c.need(spec, "schedule", spec_path, str)
    zone = c.get(spec, "timeZone", spec_path, str)
    if schedule is not None:
        if zone is not None and "TZ" in schedule:
            c.invalid(subpath(spec_path, "schedule"), schedule,
                      "cannot use both timeZone field and TZ or CRON_TZ in schedule")
        else:
            try:
                Schedule(schedule, zone)
            except ScheduleError as e:
                where = "timeZone" if zone is not None and str(e).startswith("unknown time zone") else "schedule"
                c.invalid(subpath(spec_path, where), zone if where == "timeZone" else schedule, str(e))
    c.enum(spec, "concurrencyPolicy", spec_path, ("Allow", "Forbid", "Replace"))
    c.get(spec, "suspend", spec_path, bool)
    _nonnegative(c, spec, ("startingDeadlineSeconds",), spec_path, 64)
    _nonnegative(c, spec, ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"), spec_path)
    template_path = subpath(spec_path, "jobTemplate")
    template = c.get(spec, "jobTemplate", spec_path, dict)
    if template is None:
        if spec.get("jobTemplate") is None:
            c.required(template_path)
        return
    meta = c.get(template, "metadata", template_path, dict) or {}
    _labels(c, meta.get("labels"), subpath(template_path, "metadata.labels"))
    _job_spec(c, template.get("spec"), subpath(template_path, "spec"))
