"""Checking a run's input: the Kubernetes objects (kubesched.api.validation), our Scenario kind
(its events and `expect` entries), and the component configurations, each by its component's own
checks (KubeSchedulerConfiguration, KubeletConfiguration, DeschedulerPolicy).

As in kubesched.api.validation, every problem is collected, one line each, naming file, document
and field path, and raised as one InputError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kubesched.api import features
from kubesched.api.errors import InputError, Problem
from kubesched.api.features import FeatureGates
from kubesched.api.loader import LoadedObject
from kubesched.api.objects import merge_patch, namespaced
from kubesched.api.restmapping import GATED, gated_off
from kubesched.api.validation.checker import (
    NONNEGATIVE_MSG,
    Checker,
    KindCheck,
    KindRule,
    check_resource_list,
    check_timestamp,
    subpath,
)
from kubesched.api.validation.objects import (
    API_VERSIONS,
    KINDS,
    OBJECT_KINDS,
    Definitions,
    check_object,
    object_key,
)
from kubesched.descheduler.policy import check_policy
from kubesched.input.annotations import SIM_USAGE_KEYS, SimulationChecker
from kubesched.input.expectations import EXPECT_UNSET, EXPECTATIONS
from kubesched.kubelet import config as kubelet_config
from kubesched.scheduler import config as scheduler_config
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.framework import ConfigError

EVENT_ACTIONS = ("create", "delete", "evict", "patch", "drain", "usage")

# A scenario's timeline as far as object identity goes: (at, event index, operation, payload) where the
# operation is "create" (payload: the object), "remove" (the object's key) or "patch" (key, patch).
_Timeline = list[tuple[float, int, str, Any]]


class _ScenarioChecker(SimulationChecker):
    """A Checker that also keeps the timeline of the Scenario it checks."""

    def __init__(self, lo: LoadedObject, problems: list[Problem], warnings: list[Problem] | None = None,
                 decoding: bool = False) -> None:
        super().__init__(lo, problems, warnings, decoding)
        self.timeline: _Timeline = []


# --- Scenario -----------------------------------------------------------------------------------------

def _object_ref(c: Checker, value: Any, path: str, kind_needed: bool) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of a delete/evict/patch target; evict targets are Pods."""
    ref = c.typed(value, path, dict)
    if ref is None:
        return None
    kind = "Pod"
    if kind_needed:
        kind = c.need(ref, "kind", path, str)
        if kind is not None and kind not in OBJECT_KINDS:
            c.unsupported(subpath(path, "kind"), kind, OBJECT_KINDS)
            kind = None
    name = c.need(ref, "name", path, str)
    namespace = c.get(ref, "namespace", path, str) or "default"
    if kind is None or name is None:
        return None
    return kind, namespace if namespaced(kind) else "", name


def _expect(c: Checker, entry: dict[str, Any], index: int) -> None:
    path = f"spec.expect[{index}]"
    subjects = [key for key in EXPECTATIONS if key in entry]
    names = ", ".join(EXPECTATIONS)
    if len(subjects) != 1:
        c.err(path, f"Required value: exactly one of {names}" if not subjects
              else f"Invalid value: exactly one of {names}, not {' and '.join(subjects)}")
        return
    subject = subjects[0]
    expectation = EXPECTATIONS[subject]
    for key in entry:
        if key not in (subject, "at", *expectation.fields):
            c.err(subpath(path, key), f'unknown field "{key}" for a {subject} expectation')
    _no_nulls(c, {k: v for k, v in entry.items() if k not in EXPECT_UNSET}, path)
    c.duration(entry, "at", path)
    expectation.validate(c, entry, path)


def _no_nulls(c: Checker, value: Any, path: str) -> None:
    """In our own Scenario kind a null is a mistake: nothing reads it as "unset", as the API server
    does for objects (`kubesched` would otherwise read `namespace: null` as no namespace at all)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        where = f"{path}[{key}]" if isinstance(key, int) else subpath(path, key)
        if item is None:
            c.err(where, "Invalid value: null: omit the field instead")
        else:
            _no_nulls(c, item, where)


def _event(c: _ScenarioChecker, event: dict[str, Any], index: int) -> None:
    path = f"spec.events[{index}]"
    at = 0.0 if "at" not in event else c.duration(event, "at", path, required=True)  # no `at`: at the start
    actions = [key for key in EVENT_ACTIONS if key in event]
    for key in event:
        if key not in ("at", *EVENT_ACTIONS):
            c.err(subpath(path, key), f'unknown field "{key}" (an event has `at` and one of {", ".join(EVENT_ACTIONS)})')
    if len(actions) != 1:
        c.err(path, f"Required value: one of {', '.join(EVENT_ACTIONS)}" if not actions
              else f"Invalid value: exactly one action per event, not {' and '.join(actions)}")
        return
    action = actions[0]
    action_path = subpath(path, action)
    payload = event[action]
    if payload is None:
        c.err(action_path, "expected a mapping, got null")
        return
    if action != "create" and isinstance(payload, dict):  # an object is decoded; a patch's nulls delete
        _no_nulls(c, {k: v for k, v in payload.items() if k != "patch"}, action_path)
    if action == "create":
        if c.typed(payload, action_path, dict) is not None \
                and check_object(c, payload, action_path, OBJECT_KINDS, INPUT_KINDS) \
                and at is not None and object_key(payload)[2]:
            c.timeline.append((at, index, "create", payload))
        return
    if action in ("delete", "evict", "patch"):
        ref = _object_ref(c, payload, action_path, kind_needed=action != "evict")
        if action == "evict" and isinstance(payload, dict):
            _evict_options(c, payload, action_path)
        if action == "delete" and isinstance(payload, dict):
            c.enum(payload, "propagationPolicy", action_path, ("Orphan", "Background", "Foreground"))
        if action == "patch" and isinstance(payload, dict):
            patch = c.need(payload, "patch", action_path, dict)
            if ref is not None and patch is not None:
                c.timeline.append((at or 0.0, index, "patch", (ref, patch)))
                # Only its unknown fields: its types are checked on the patched object (see _check_patch).
                unknown = [(f, m) for f, m in c.decode(ref[0], patch, patch=True) if m is None]
                c.decoded(unknown, subpath(action_path, "patch"), set())
        elif ref is not None and at is not None:
            c.timeline.append((at, index, "remove", ref))
        return
    if c.typed(payload, action_path, dict) is None:
        return
    if action == "drain":
        _drain_options(c, payload, action_path)
        return
    # usage: what a pod (or one of its containers) uses from now on.
    usage_keys = SIM_USAGE_KEYS
    c.need(payload, "name", action_path, str)
    c.get(payload, "namespace", action_path, str)
    c.get(payload, "container", action_path, str)
    amounts = {k: v for k, v in payload.items() if k not in ("name", "namespace", "container")}
    if not amounts:
        c.required(action_path, "at least one resource amount (e.g. memory: 1Gi)")
    for key in amounts:
        if key not in usage_keys:
            c.err(subpath(action_path, key), f'unknown field "{key}" (a usage event has namespace, name, '
                                         f"container and amounts of {', '.join(usage_keys)})")
    check_resource_list(c, {k: v for k, v in amounts.items() if k in usage_keys}, action_path)


def _evict_options(c: Checker, payload: dict[str, Any], path: str) -> None:
    for key in payload:
        if key not in ("namespace", "name", "apiVersion", "gracePeriodSeconds", "dryRun"):
            c.err(subpath(path, key), f'unknown field "{key}" (an eviction has namespace, name, apiVersion, '
                                  "gracePeriodSeconds, dryRun)")
    c.enum(payload, "apiVersion", path, ("policy/v1", "policy/v1beta1"))
    grace = c.get(payload, "gracePeriodSeconds", path, int)
    if grace is not None and grace < 0:
        c.invalid(subpath(path, "gracePeriodSeconds"), grace, NONNEGATIVE_MSG)
    c.get(payload, "dryRun", path, bool)


DRAIN_FLAGS = ("force", "ignoreDaemonsets", "deleteEmptydirData", "disableEviction")


def _drain_options(c: Checker, payload: dict[str, Any], path: str) -> None:
    """`kubectl drain` flags, camelCased."""
    for key in payload:
        if key not in ("node", "timeout", "gracePeriod", *DRAIN_FLAGS):
            c.err(subpath(path, key), f'unknown field "{key}" (a drain has node, timeout, gracePeriod, '
                                  f"{', '.join(DRAIN_FLAGS)})")
    c.need(payload, "node", path, str)
    c.duration(payload, "timeout", path)
    c.get(payload, "gracePeriod", path, int)
    for key in DRAIN_FLAGS:
        c.get(payload, key, path, bool)


def _scenario(c: Checker, obj: dict[str, Any], _path: str) -> None:
    """Check a Scenario's shape (always a top-level document, so paths start at its root).

    Its timeline is replayed afterwards by validate() to find duplicates and check patched objects.
    """
    assert isinstance(c, _ScenarioChecker)  # only validate() reads documents of this kind
    for key in obj:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            c.err(key, f'unknown field "{key}"')
    meta = c.present(obj, "metadata", "", dict)
    if meta is not None:
        c.get(meta, "name", "metadata", str)
    if obj.get("spec") is None:
        c.required("spec")
        return
    spec = c.get(obj, "spec", "", dict)
    if spec is None:
        return
    for key in spec:
        if key not in ("seed", "until", "startTime", "featureGates", "events", "expect"):
            c.err(subpath("spec", key), f'unknown field "{key}"')
    c.present(spec, "seed", "spec", int)
    check_timestamp(c, spec, "startTime", "spec")
    c.duration(spec, "until", "spec")
    _feature_gates(c, c.get(spec, "featureGates", "spec", dict))
    for key, check in (("events", _event), ("expect", _expect)):
        for i, entry in enumerate(c.get(spec, key, "spec", list) or []):
            if entry is None:
                c.err(f"spec.{key}[{i}]", "expected a mapping, got null")
            elif c.typed(entry, f"spec.{key}[{i}]", dict) is not None:
                check(c, entry, i)


def _feature_gates(c: Checker, gates: dict[Any, Any] | None) -> None:
    """spec.featureGates: kube-scheduler's --feature-gates as a map of name to boolean, refused as
    the flag is (each problem at the gate's path: one set by AllAlpha or AllBeta at theirs)."""
    if gates is None:
        return
    settings = {str(name): value for name, value in gates.items()
                if c.typed(value, f"spec.featureGates.{name}", bool) is not None}
    for problem in features.problems(settings):
        c.err(f"spec.featureGates.{problem.gate}", str(problem))


def _check_patch(c: Checker, target: dict[str, Any] | None, key: tuple[str, str, str], patch: dict[str, Any],
                 path: str) -> dict[str, Any]:
    """Report what a merge patch would make invalid; returns the patched object.

    The patch is applied to the target as the input defines it (or to a bare object of that kind
    when the target comes from elsewhere, e.g. a controller), and only problems in or above the
    fields the patch sets are reported, so a partial target does not produce spurious ones.
    """
    kind, namespace, name = key
    if target is None:
        meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
        target = {"apiVersion": API_VERSIONS[kind][0], "kind": kind, "metadata": meta}
    patched = merge_patch(target, patch)
    patched["kind"] = kind  # the API server patches the object at the URL, whatever the body says
    scratch: list[Problem] = []
    check_object(SimulationChecker(LoadedObject(patched, c.lo.source, c.lo.doc), scratch, decoding=True), patched, "",
                 OBJECT_KINDS)
    leaves = list(_leaf_paths(patch, ""))
    for problem in scratch:
        if any(_related(problem.path, leaf) for leaf in leaves):
            c.err(subpath(path, problem.path), problem.message)
    return patched


def _leaf_paths(patch: dict[str, Any], path: str) -> Iterator[str]:
    """Paths a merge patch sets: lists, scalars and nulls replace whatever was there."""
    for key, value in patch.items():
        if isinstance(value, dict) and value:
            yield from _leaf_paths(value, subpath(path, key))
        else:
            yield subpath(path, key)


def _related(problem_path: str, leaf: str) -> bool:
    """Whether a problem lies within a patched field, or on a field containing it (e.g. a label map)."""
    return (problem_path == leaf or problem_path.startswith((leaf + ".", leaf + "["))
            or leaf.startswith(problem_path + "."))


# --- component configurations -------------------------------------------------------------------------

Findings = tuple[list[tuple[str, str]], list[tuple[str, str]]]  # (problems, warnings): (field path, message)


def _configuration(check: Callable[[dict[str, Any]], Findings]) -> KindCheck:
    """The kind check of a component configuration: its component's own, reported in the document."""
    def run(c: Checker, obj: dict[str, Any], path: str) -> None:
        problems, warnings = check(obj)
        for where, message in problems:
            c.err(subpath(path, where) if where else path, message)
        for where, message in warnings:
            c.warn(subpath(path, where) if where else path, message)
    return run


# Every kind a run's input may hold: the Kubernetes objects, the configurations, the Scenario.
INPUT_KINDS: dict[str, KindRule] = {
    **KINDS,
    # v1beta3 left kube-scheduler in v1.29, as v1beta2 and v1beta1 had before it.
    "KubeSchedulerConfiguration": (("kubescheduler.config.k8s.io/v1",),
                                   _configuration(scheduler_config.check_configuration)),
    "KubeletConfiguration": (("kubelet.config.k8s.io/v1beta1",),
                             _configuration(kubelet_config.check_configuration)),
    "DeschedulerPolicy": (("descheduler/v1alpha2",), _configuration(lambda obj: (check_policy(obj), []))),
    "Scenario": (("kubesched.io/v1alpha1",), _scenario),
}


def check_config(obj: dict[str, Any] | None, origin: LoadedObject | None) -> SchedulerConfig:
    """The scheduler configuration (None: the default), with every profile built once so bad
    plugins fail at load; a ConfigError becomes the InputError of the document it came from."""
    try:
        return scheduler_config.load_config(obj)
    except ConfigError as e:
        where = origin.problem(e.path, e.message) if origin else Problem("configuration", None, e.path, e.message)
        raise InputError([where]) from None


# --- entry points -------------------------------------------------------------------------------------

def validate(objects: list[LoadedObject], warnings: list[Problem] | None = None) -> None:
    """Check every object of a run's input; raise InputError listing every problem found. What
    kube-apiserver would only warn about (unknown fields, and settings kubesched ignores) is
    appended to `warnings`. Objects of the built-in kinds are decoded in place as the API server
    decodes them (a null field is unset): see fieldschema.decode.

    Problems come in input order, except those found by replaying each Scenario's timeline after
    every plain object is known: duplicates created by events (an object deleted or evicted before
    it is created again is fine) and objects a patch event would make invalid.
    """
    problems: list[Problem] = []
    defined = Definitions()
    scenarios: list[_ScenarioChecker] = []
    allowed = tuple(INPUT_KINDS)
    for lo in objects:
        c = _ScenarioChecker(lo, problems, warnings, decoding=True)
        if check_object(c, lo.obj, "", allowed, INPUT_KINDS):
            # Each KubeSchedulerConfiguration is one more scheduler, so several are fine (their
            # schedulerNames must differ: see component_problems).
            if lo.obj["kind"] != "KubeSchedulerConfiguration":
                defined.define_document(c, lo)
            if c.timeline:
                scenarios.append(c)
    for c in scenarios:
        for _at_time, index, op, payload in sorted(c.timeline, key=lambda t: t[:2]):
            if op == "remove":
                defined.remove(payload)
            elif op == "create":
                path = f"spec.events[{index}].create"
                defined.define(c, payload, path, f"{c.lo.where} {path}")
            else:
                key, patch = payload
                defined.known[key] = _check_patch(c, defined.known.get(key), key, patch,
                                                  f"spec.events[{index}].patch.patch")
    if problems:
        raise InputError(problems)


def component_problems(objects: list[LoadedObject], found: list[Problem]) -> list[Problem]:
    """What the components find in the configurations nothing else was `found` wrong with: the
    kubelet's eviction settings, every scheduler's profiles (built once), and that no two
    KubeSchedulerConfigurations serve the same schedulerName."""
    problems: list[Problem] = []
    served: dict[str, LoadedObject] = {}
    for lo in objects:
        if any(p.source == lo.source and p.doc == lo.doc for p in (*found, *problems)):
            continue
        if lo.obj.get("kind") == "KubeletConfiguration":
            problems.extend(lo.problem(path, message) for path, message in kubelet_config.problems(lo.obj))
        if lo.obj.get("kind") == "KubeSchedulerConfiguration":
            try:
                config = check_config(lo.obj, lo)
            except InputError as e:
                problems.extend(e.problems)
                continue
            for i, profile in enumerate(config.profiles):
                name = profile.get("schedulerName", "default-scheduler")
                if name in served:
                    problems.append(lo.problem(f"profiles[{i}].schedulerName",
                                               f'Duplicate value: "{name}": already served by another scheduler'))
                served[name] = lo
    return problems


def unserved_gated_kinds(objects: list[LoadedObject], gates: FeatureGates) -> list[Problem]:
    """The objects, and the Scenario events creating them, of a kind the API server serves only
    while a feature gate is on (a DeviceTaintRule without DRADeviceTaintRules): with the gate off
    its resource is not installed, so kubectl refuses such an object as it refuses any kind the
    server does not serve, and the run does not start on a cluster it could not have."""
    off = {(r.api_version, r.kind): gate for r in gated_off(gates.enabled)
           if (gate := GATED.get((r.group, r.version, r.plural)))}
    if not off:
        return []

    def refusal(obj: Any) -> str | None:
        if not isinstance(obj, dict) or (gate := off.get((obj.get("apiVersion"), obj.get("kind")))) is None:
            return None
        return (f'no matches for kind "{obj["kind"]}" in version "{obj["apiVersion"]}" (served only with '
                f"the {gate} feature gate on)")

    problems = []
    for lo in objects:
        if (message := refusal(lo.obj)) is not None:
            problems.append(lo.problem("", message))
        elif lo.obj.get("kind") == "Scenario":
            for i, event in enumerate((lo.obj.get("spec") or {}).get("events") or ()):
                if isinstance(event, dict) and (message := refusal(event.get("create"))) is not None:
                    problems.append(lo.problem(f"spec.events[{i}].create", message))
    return problems


DEFAULT_SCHEDULER = "default-scheduler"
# Kinds whose pod template asks a scheduler for the pods they create (spec.template, or a CronJob's
# spec.jobTemplate.spec.template).
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob")


def unserved_default_scheduler(objects: list[LoadedObject]) -> list[Problem]:
    """A warning when the run's KubeSchedulerConfigurations have no `default-scheduler` profile:
    as upstream, the pods that ask for no scheduler (or for it by name) stay pending, which is
    easy to miss when a configuration meant to tune the default scheduler renamed its only profile."""
    configs = [lo for lo in objects if lo.obj.get("kind") == "KubeSchedulerConfiguration"]
    if not configs:
        return []
    for lo in configs:
        for profile in lo.obj.get("profiles") or [{}]:
            if (profile.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER:
                return []

    def asks_default(spec: Any) -> bool:
        return isinstance(spec, dict) and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER

    pods = sum(1 for lo in objects if lo.obj.get("kind") == "Pod" and asks_default(lo.obj.get("spec"))
               and not lo.obj["spec"].get("nodeName"))
    workloads = 0
    for lo in objects:
        if lo.obj.get("kind") in WORKLOAD_KINDS:
            spec = lo.obj.get("spec") or {}
            if lo.obj["kind"] == "CronJob":
                spec = (spec.get("jobTemplate") or {}).get("spec") or {}
            workloads += asks_default((spec.get("template") or {}).get("spec"))
    if not pods and not workloads:
        return []
    asking = " and ".join(part for part in (
        f"{pods} pod{'s' if pods != 1 else ''}" if pods else "",
        f"the pods of {workloads} workload{'s' if workloads != 1 else ''}" if workloads else "") if part)
    return [configs[0].problem("profiles", f'no profile has schedulerName "{DEFAULT_SCHEDULER}": {asking} '
                                           "that ask for no scheduler will stay pending")]
