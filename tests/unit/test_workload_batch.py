"""The pure parts of the StatefulSet, Job, CronJob and garbage-collector work: cron schedules, pod
ordinals, completed-index intervals, Job defaulting, the API server's delete options, and the
warning a budget over pods with a missing controller leaves in the results."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubesched.api.cron import Schedule, ScheduleError
from kubesched.api.validation.objects import object_problems
from kubesched.apiserver.admission import generate_job_selector
from kubesched.apiserver.defaults import default_job
from kubesched.apiserver.server import APIServer
from kubesched.controllers.cronjob import _rfc3339, job_name
from kubesched.controllers.job import format_indexes, parse_indexes
from kubesched.controllers.statefulset import parent_and_ordinal
from kubesched.sim.runner import load, simulate
from kubesched.store.memory import MemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(hour: int, minute: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 1, day, hour, minute, tzinfo=UTC)


# ---- cron schedules ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "after", "first"), [
    ("*/15 * * * *", T0, at(0, 15)),
    ("*/15 * * * *", at(0, 15), at(0, 30)),  # strictly after
    ("@hourly", at(0, 0), at(1)),
    ("@daily", at(5), at(0, day=2)),
    ("0 9 * * MON", T0, datetime(2026, 1, 5, 9, tzinfo=UTC)),  # 2026-01-01 is a Thursday
    ("@every 1h30m", at(1, 10), at(2, 40)),
])
def test_schedule_next(text: str, after: datetime, first: datetime) -> None:
    assert Schedule(text).next(after) == first


def test_schedule_time_zone() -> None:
    """09:00 in Berlin is 08:00 UTC in winter; a TZ= prefix is the same as spec.timeZone."""
    assert Schedule("0 9 * * *", "Europe/Berlin").next(T0) == at(8)
    assert Schedule("TZ=Europe/Berlin 0 9 * * *").next(T0) == at(8)


@pytest.mark.parametrize(("text", "zone", "message"), [
    ("* * * *", None, "expected exactly 5 fields, found 4"),
    ("*/5 * * * * *", None, "expected exactly 5 fields, found 6"),
    ("0 0 L * *", None, "failed to parse schedule"),
    ("61 * * * *", None, "failed to parse schedule"),
    ("@fortnightly", None, "unrecognized descriptor"),
    ("@hourly", "Mars/Olympus", "unknown time zone Mars/Olympus"),
])
def test_schedule_refusals(text: str, zone: str | None, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        Schedule(text, zone)


def test_job_name_and_scheduled_timestamp() -> None:
    cronjob = {"metadata": {"name": "tick"}}
    assert job_name(cronjob, at(0, 15)) == "tick-29453775"  # minutes since the Unix epoch
    assert _rfc3339(at(1)) == "2026-01-01T01:00:00Z"
    berlin = at(1).astimezone(Schedule("@hourly", "Europe/Berlin").zone)
    assert _rfc3339(berlin) == "2026-01-01T02:00:00+01:00"


# ---- ordinals and indexes -----------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "parsed"), [
    ("web-0", ("web", 0)), ("my-db-12", ("my-db", 12)), ("web", ("", -1)), ("web-x", ("", -1)),
    ("web-2147483648", ("", -1)),  # beyond an int32
])
def test_parent_and_ordinal(name: str, parsed: tuple[str, int]) -> None:
    assert parent_and_ordinal(name) == parsed


def test_completed_indexes_round_trip() -> None:
    assert format_indexes({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert format_indexes(set()) == ""
    assert parse_indexes("0-2,5,7-8", 8) == {0, 1, 2, 5, 7}  # beyond completions is dropped


# ---- the API server ------------------------------------------------------------------------------------

def test_job_defaults_and_generated_selector() -> None:
    job = {"kind": "Job", "metadata": {"name": "pi", "uid": "u-1"},
           "spec": {"template": {"metadata": {"labels": {"app": "pi"}}, "spec": {}}}}
    default_job(job)
    generate_job_selector(job)
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert spec["template"]["metadata"]["labels"] == {
        "app": "pi", "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": "u-1",
        "batch.kubernetes.io/controller-uid": "u-1"}
    assert job["metadata"]["labels"] == {"app": "pi"}  # the template's, before the generated ones


def test_delete_options_keep_an_owner_until_its_finalizer_goes() -> None:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    kept = api.delete("ConfigMap", "default", "owner", propagation_policy="Foreground")
    assert kept is not None and kept["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert kept["metadata"]["deletionTimestamp"]
    api.patch("ConfigMap", "default", "owner", {"metadata": {"finalizers": None}})
    assert api.store.get("ConfigMap", "default", "owner") is None
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["x/y"]}})
    assert api.delete("ConfigMap", "default", "held") is not None  # an operator's: it stays until x/y goes
    api.create({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "plain", "finalizers": ["kubernetes.io/pvc-protection"]}})
    assert api.delete("ConfigMap", "default", "plain") is None  # Kubernetes' own, of a controller not run here


# ---- budgets over pods whose controller the export lacks ------------------------------------------------

def test_missing_controller_is_named_in_the_results() -> None:
    result = simulate(load(["tests/scenarios/pdb-controller-not-in-export.yaml"]))
    assert result.ok
    assert result.cluster.recorder.warnings == [
        "PodDisruptionBudget/default/batch: the input lacks Pipeline/default/batch, the controller of pod "
        "default/batch-0, and the disruption controller needs its scale to count the budget's expected pods "
        '(found no controllers for pod "batch-0"): the budget allows no disruption']


# ---- validation -------------------------------------------------------------------------------------

def test_workload_validation_messages() -> None:
    container = {"name": "c", "image": "i"}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"completionMode": "Indexed", "backoffLimit": -1, "template": {"spec": {"containers": [container]}}}}
    assert object_problems(job) == [
        "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
        "spec.completions: Required value: when completion mode is Indexed",
        'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "Never", "OnFailure"']
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": {"selector": {}, "podManagementPolicy": "Burst",
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [container]}}}}
    assert object_problems(sts) == [
        "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
        'spec.podManagementPolicy: Unsupported value: "Burst": supported values: "OrderedReady", "Parallel"']
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "*/5 * * *", "jobTemplate": {"spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [container]}}}}}}
    assert object_problems(cron) == [
        'spec.schedule: Invalid value: "*/5 * * *": expected exactly 5 fields, found 4: */5 * * *']
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r"},
          "spec": {"selector": {"app": "x"}, "template": {"metadata": {"labels": {"app": "y"}},
                                                          "spec": {"containers": [container]}}}}
    assert object_problems(rc) == [
        'spec.template.metadata.labels: Invalid value: {"app":"y"}: selector does not match template labels']
