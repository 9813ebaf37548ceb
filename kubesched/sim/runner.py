"""Running a scenario: load and validate everything first, then simulate on the virtual clock."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from kubesched.api.duration import format_duration, parse_duration
from kubesched.api.errors import InputError, Problem
from kubesched.api.features import FeatureGateError, FeatureGates
from kubesched.api.loader import collect_paths, nothing_loaded
from kubesched.api.objects import LAST_TIME, Shared, format_time, namespaced, ref
from kubesched.api.served import shown_kind
from kubesched.api.validation.checker import subpath
from kubesched.apiserver.errors import APIError
from kubesched.cluster.cluster import Cluster
from kubesched.cluster.recorder import Recorder
from kubesched.descheduler.policy import load_policy
from kubesched.input.scenario import Scenario, TimedAction, build
from kubesched.input.validation import (
    check_config,
    component_problems,
    unserved_default_scheduler,
    unserved_gated_kinds,
    validate,
)
from kubesched.kubectl.drain import DrainOptions
from kubesched.runtime.clock import LATE
from kubesched.sim.expect import ExpectResult, check

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class SimResult:
    scenario: Scenario
    cluster: Cluster
    expects: list[ExpectResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(e.ok for e in self.expects)

    @property
    def recorder(self) -> Recorder:
        """What the run reports (a simulated cluster always has its recorder)."""
        assert self.cluster.recorder is not None
        return self.cluster.recorder


def load(paths: list[str], strict: bool = False, now: datetime | None = None,
         until: float | None = None, feature_gates: FeatureGates | None = None) -> Scenario:
    """Everything that can be wrong with the input is found here, before anything runs, and
    reported together: unreadable files do not hide problems in the readable ones. Warnings
    (unknown fields, settings kubesched ignores) are kept on the scenario; `strict` makes them
    problems. `feature_gates` (the command line's) are set over the Scenario's."""
    with collector_paused():  # parsing builds hundreds of thousands of containers, none of them garbage
        return _load(paths, strict, now, until, feature_gates)


def _load(paths: list[str], strict: bool, now: datetime | None, until: float | None,
          feature_gates: FeatureGates | None) -> Scenario:
    warnings: list[Problem] = []
    loaded, problems = collect_paths(paths, warnings)
    problems.extend(nothing_loaded(paths, loaded, problems, warnings))
    try:
        validate(loaded, warnings)
    except InputError as e:
        problems.extend(e.problems)
    problems.extend(component_problems(loaded, problems))
    if not problems:
        warnings.extend(unserved_default_scheduler(loaded))
    if strict:
        problems.extend(warnings)
    if problems:
        raise InputError(problems)
    scenario = build(loaded, now)
    scenario.warnings = [*warnings, *scenario.warnings]
    if until is not None:
        scenario.until = until
    _check_horizon(scenario, until is not None)
    if feature_gates is not None:
        try:
            scenario.feature_gates = scenario.feature_gates.overridden_by(feature_gates)
        except FeatureGateError as e:
            raise InputError([Problem("command line", None, "--feature-gates", str(e))]) from None
    if gated := unserved_gated_kinds(loaded, scenario.feature_gates):
        raise InputError(gated)
    return scenario


def _check_horizon(scenario: Scenario, from_command_line: bool) -> None:
    """An end time past the last time a timestamp can name (9999-12-31T23:59:59Z) cannot be reached:
    refused, naming the field, rather than found out mid-run."""
    last = (LAST_TIME - scenario.epoch).total_seconds()
    if scenario.until is None or scenario.until <= last:
        return
    origin = scenario.scenario_origin
    where = Problem("command line", None, "--until", "") if from_command_line or origin is None else \
        Problem(origin.source, origin.doc, subpath(origin.path_prefix, "spec.until"), "")
    message = (f"{format_duration(scenario.until)} after {format_time(scenario.epoch, 0)} (virtual time 0) is past "
               f"{format_time(LAST_TIME, 0)}, the last time a Kubernetes timestamp can name")
    raise InputError([Problem(where.source, where.doc, where.path, message)])


def _apply(cluster: Cluster, recorder: Recorder, action: TimedAction) -> None:
    body = action.body
    kind = body.get("kind", "Pod")
    ns = body.get("namespace", "default")
    target = ref({"kind": kind, "metadata": {"namespace": ns if namespaced(kind) else None, "name": body.get("name")}})
    try:
        if action.action == "create":
            cluster.create(body, validated=True)
        elif action.action == "delete":
            cluster.api.delete(kind, ns, body["name"], propagation_policy=body.get("propagationPolicy"))
        elif action.action == "patch":
            cluster.api.patch(kind, ns, body["name"], body.get("patch") or {})
        elif action.action == "evict":
            _evict(cluster, ns, body)
        elif action.action == "drain":
            cluster.drain(body["node"], DrainOptions.from_event(body, parse_duration))
        elif action.action == "usage":
            amounts = {k: str(v) for k, v in body.items() if k not in ("namespace", "name", "container")}
            cluster.kubelets.set_usage(ns, body["name"], amounts, body.get("container"))
    except APIError as e:
        recorder.reject(target, e.message, e.code)


def _evict(cluster: Cluster, ns: str, body: dict) -> None:
    """An `evict` event: the Eviction API's answer is a result (the recorder's evictions), not bad input."""
    eviction: dict = {"apiVersion": body.get("apiVersion", "policy/v1"), "kind": "Eviction",
                      "metadata": {"name": body["name"], "namespace": ns}}
    options = {k: v for k, v in (("gracePeriodSeconds", body.get("gracePeriodSeconds")),
                                  ("dryRun", ["All"] if body.get("dryRun") else None)) if v is not None}
    if options:
        eviction["deleteOptions"] = options
    with contextlib.suppress(APIError):
        cluster.api.evict(ns, body["name"], eviction, requester="scenario")


def build_cluster(scenario: Scenario, explain: set[str] | None = None, consume: bool = False) -> Cluster:
    """The cluster of `scenario` with its objects and timed events scheduled, not yet run.
    `consume`: the scenario runs once, so the API keeps its objects rather than copies of them,
    and the scenario keeps only their kinds (their first versions would otherwise outlive them)."""
    configs = [check_config(lo.obj, lo) for lo in scenario.scheduler_configs] or [check_config(None, None)]
    policy = load_policy(scenario.descheduler_policy) if scenario.descheduler_policy is not None else None
    recorder = Recorder()
    cluster = Cluster(seed=scenario.seed, scheduler_config=configs[0], other_scheduler_configs=configs[1:],
                      explain=explain, epoch=scenario.epoch, kubelet_config=scenario.kubelet_config,
                      descheduler_policy=policy, recorder=recorder, feature_gates=scenario.feature_gates)
    clock = cluster.clock
    kinds: dict[str, Shared] = {}
    for i, (at, obj) in enumerate(scenario.objects):
        if at <= 0:
            cluster.restore(obj, validated=True, owned=consume)
        else:
            clock.call_at(at, lambda obj=obj: cluster.create(obj, validated=True, owned=consume))
        if consume:  # the API's now; what the scenario may still be asked is the kind
            kind = shown_kind(obj)
            scenario.objects[i] = (at, kinds.get(kind) or kinds.setdefault(kind, Shared(kind=kind)))
    recorder.check_snapshot()
    for action in scenario.actions:
        clock.call_at(action.at, lambda a=action: _apply(cluster, recorder, a))
    return cluster


def simulate(scenario: Scenario, explain: set[str] | None = None, progress: Console | None = None,
             consume: bool = False) -> SimResult:
    """Run `scenario`; with `progress` (a terminal), show how far virtual time has got while it
    runs. `consume`: see build_cluster."""
    if progress is None:
        return _simulate(scenario, explain, None, consume)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=progress,
                  transient=True) as bar:
        task = bar.add_task("simulating", total=None)

        def show(now: float) -> None:
            bar.update(task, description=f"simulating: {format_duration(now)} of virtual time")

        return _simulate(scenario, explain, show, consume)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Loading and running allocate millions of small objects that live to the end of the run (the
    input, the cluster, the store's versions) and make almost no cyclic garbage: a day of a
    1,000-node cluster leaves about 2,000 objects to the cyclic collector. The collector would walk
    the others again and again for nothing, several percent of a large run, so it is paused
    meanwhile and resumed afterwards if it was on; reference counting frees the rest as usual.
    Nested uses pause once."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _simulate(scenario: Scenario, explain: set[str] | None, progress: Callable[[float], None] | None,
              consume: bool) -> SimResult:
    scored = {e["pod"] for e in scenario.expects if "score" in e}
    if scored:
        explain = (explain or set()) | scored  # score expectations need the decision records
    with collector_paused():
        cluster = build_cluster(scenario, explain, consume)
        result = SimResult(scenario, cluster)
        clock = cluster.clock
        final = []
        for e in scenario.expects:
            if e.get("at") is not None:
                clock.call_at(parse_duration(e["at"]), lambda e=e: result.expects.append(check(cluster, e)),
                              rank=LATE)
            else:
                final.append(e)
        result.recorder.stop_on_loop = scenario.until is None
        cluster.run(scenario.until, progress)
        checked = {id(r.expect) for r in result.expects}
        result.expects.extend(
            ExpectResult(e, False, f"not checked: the run ended at {cluster.now():g}s", cluster.now())
            for e in scenario.expects if e.get("at") is not None and id(e) not in checked)
        result.expects.extend(check(cluster, e) for e in final)
    return result
