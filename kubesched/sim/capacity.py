"""How many more copies of a pod shape fit on a cluster: cluster-capacity's question, answered by
the simulation engine itself, so the answer is the scheduler's and the kubelets', not arithmetic.

Copies are created one at a time through the API, each named `<shape>-N` (N from 0, one counter
per shape) as cluster-capacity names them, one virtual second after the cluster has come to rest
from the one before: the answer is exactly what `simulate` gives when the same copies are added
one by one at those times (each copy's time is in the JSON, for such a replay). Several
shapes take turns (round-robin: web-0, batch-0, web-1, batch-1, ...), the order of
cluster-capacity's multi-podspec mode (kubernetes-sigs/cluster-capacity#76). That mode ends the
whole analysis at the first copy that does not fit; here only that copy's shape ends, with its
reason, and the other shapes go on, so each shape gets its own answer.

A copy that does not fit is deleted once its FailedScheduling reason is read, as
cluster-capacity's last copy never stays either. Without preemption the copies must not preempt,
yet admission forbids a pod's preemptionPolicy to differ from its PriorityClass's: so they get a
companion class (`kubesched-capacity-<class>`) with the same value and `preemptionPolicy: Never`.
With preemption, a second round follows once no shape fits any more: copies with their own
priorityClassName, preempting as the scheduler does, until each shape's next copy fails even so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.api.errors import InputError, Problem
from kubesched.api.loader import collect_paths
from kubesched.api.objects import Obj, deep_copy, get_condition, is_terminating
from kubesched.api.quantity import format_amount
from kubesched.api.resources import pod_requests
from kubesched.apiserver.errors import APIError
from kubesched.cluster.cluster import Cluster
from kubesched.input.scenario import Scenario
from kubesched.input.validation import validate
from kubesched.sim import fiterror
from kubesched.sim.runner import SimResult, build_cluster

ORDER = "round-robin"
COMPANION_PREFIX = "kubesched-capacity-"
NO_CLASS = "no-class"  # the companion of pods without a PriorityClass (and no global default)
DURATION = "sim.kubesched.io/duration"
# Virtual seconds from one copy's quiescence to the next copy, as a replay's events are apart: the
# copies' start times differ, as those of pods added one by one do (preemption prefers the newest victims).
STEP = 1.0
# Workloads whose pod template can serve as a shape, besides a Pod.
TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController", "Job")
# What the API server or the kubelet set on a pod: a shape taken from `kubectl get pod -o yaml` drops it.
SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
               "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")
_LOOP_STOP = "stopped at "  # how the recorder's warning begins when it stops a run going round in circles


@dataclass
class Shape:
    """One --pod: the pod every copy is made from."""

    name: str
    namespace: str
    source: str
    template: Obj

    @property
    def priority_class(self) -> str | None:
        return self.template["spec"].get("priorityClassName")

    def requests(self) -> dict[str, str]:
        amounts = pod_requests(self.template["spec"])
        return {name: format_amount(name, amount) for name, amount in sorted(amounts.items())}


@dataclass
class Stop:
    """Why a shape's next copy was not placed (cluster-capacity's "termination reason")."""

    # Unschedulable (or another PodScheduled reason), Failed (its kubelet refused it), Refused (by the
    # API), Removed, NotScheduled (no scheduler tried it), LimitReached, Stopped (a run in circles)
    type: str
    message: str
    copy: str | None = None  # the copy that did not fit
    victims: list[dict[str, Any]] = field(default_factory=list)  # preempted for it, though it did not land
    created_at: float | None = None  # virtual seconds
    deleted_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        reasons, preemption = group_reasons(self.message) if self.type == "Unschedulable" else ({}, None)
        out: dict[str, Any] = {"type": self.type, "copy": self.copy, "message": self.message}
        if self.created_at is not None:
            out["createdAt"], out["deletedAt"] = self.created_at, self.deleted_at
        if reasons:
            out["reasons"] = reasons
        if preemption is not None:
            out["preemption"] = preemption
        if self.victims:
            out["victims"] = self.victims
        return out


@dataclass
class Copy:
    name: str
    uid: str
    node: str
    preempting: bool  # created in the preemption round
    created_at: float  # virtual seconds
    victims: list[dict[str, Any]] = field(default_factory=list)  # pods it preempted
    knock_on: list[dict[str, Any]] = field(default_factory=list)  # other removals while it was placed
    fate: str | None = None  # why it no longer runs at the end (a later copy preempted it, ...)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "node": self.node, "byPreemption": self.preempting,
                               "createdAt": self.created_at}
        if self.preempting:
            out["victims"] = self.victims
        if self.knock_on:
            out["knockOn"] = self.knock_on
        if self.fate:
            out["removed"] = self.fate
        return out


@dataclass
class ShapeResult:
    shape: Shape
    base: str = ""  # copies are <base>-N: the shape's name, or <name>-copy if the snapshot has <name>-N pods
    companion: str | None = None  # the class of the copies that must not preempt
    copies: list[Copy] = field(default_factory=list)
    stop: Stop | None = None  # the next copy without preemption
    stop_preempting: Stop | None = None  # the next copy with preemption (--preempt)

    @property
    def fit(self) -> int:
        return sum(1 for c in self.copies if not c.preempting)

    @property
    def fit_preempting(self) -> int:
        return sum(1 for c in self.copies if c.preempting)

    def victims(self) -> list[dict[str, Any]]:
        last = self.stop_preempting.victims if self.stop_preempting else []
        return [v for c in self.copies for v in c.victims] + last


@dataclass
class CapacityResult:
    shapes: list[ShapeResult]
    preempt: bool
    max_copies: int | None
    sim: SimResult  # the final state, every copy placed (for --report)
    warnings: list[str] = field(default_factory=list)


# ---- input --------------------------------------------------------------------------------------


def load_shapes(paths: Iterable[str], strict: bool = False,
                warnings: list[Problem] | None = None) -> list[Shape]:
    """Each --pod file holds one Pod (or one workload, whose pod template is the shape). Problems
    are collected over all files and raised together, as for the snapshot; what would only be
    warned about (unknown fields) is appended to `warnings`, or with `strict` a problem too."""
    problems: list[Problem] = []
    shapes: list[Shape] = []
    for path in paths:
        loaded, found = collect_paths([path])
        problems.extend(found)
        if found:
            continue
        warned: list[Problem] = []
        try:
            validate(loaded, warned)
        except InputError as e:
            problems.extend(e.problems)
            continue
        if strict and warned:
            problems.extend(warned)
            continue
        if warnings is not None:
            warnings.extend(warned)
        if len(loaded) != 1:
            kinds = ", ".join(lo.obj.get("kind", "?") for lo in loaded) or "nothing"
            problems.append(Problem(path, None, "", f"expected one Pod (or one {'/'.join(TEMPLATE_KINDS)}), "
                                                    f"found {len(loaded)} objects: {kinds}"))
            continue
        shape = _shape(loaded[0].obj, path, problems)
        if shape is not None:
            shapes.append(shape)
    seen: set[tuple[str, str]] = set()
    for s in shapes:
        if (s.namespace, s.name) in seen:
            problems.append(Problem(s.source, None, "metadata.name", f"another --pod is also named "
                                    f"{s.namespace}/{s.name}: copies are named after it"))
        seen.add((s.namespace, s.name))
    if problems:
        raise InputError(problems)
    return shapes


def _shape(obj: Obj, path: str, problems: list[Problem]) -> Shape | None:
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    if kind == "Pod":
        pod_meta, spec = dict(meta), obj.get("spec") or {}
    elif kind in TEMPLATE_KINDS:
        template = (obj.get("spec") or {}).get("template") or {}
        pod_meta = {**(template.get("metadata") or {}), "namespace": meta.get("namespace"),
                    "name": meta.get("name") or meta.get("generateName", "").rstrip("-")}
        spec = template.get("spec") or {}
    else:
        problems.append(Problem(path, 1, "kind", f"expected a Pod (or one of {', '.join(TEMPLATE_KINDS)}), "
                                                 f"found {kind}"))
        return None
    name = pod_meta.get("name") or (pod_meta.get("generateName") or "").rstrip("-")
    if not name:
        problems.append(Problem(path, 1, "metadata.name", "the copies are named after the pod: it needs one"))
        return None
    for key in (*SERVER_META, "generateName"):
        pod_meta.pop(key, None)
    pod_meta["name"], pod_meta["namespace"] = name, pod_meta.get("namespace") or "default"
    annotations = {k: v for k, v in (pod_meta.get("annotations") or {}).items() if k != DURATION}
    if annotations:
        pod_meta["annotations"] = annotations
    else:
        pod_meta.pop("annotations", None)
    # Admission computes priority and preemptionPolicy from the class; the scheduler picks the node.
    spec = {k: v for k, v in deep_copy(spec).items() if k not in ("nodeName", "priority", "preemptionPolicy")}
    template = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
    return Shape(name, pod_meta["namespace"], path, template)


def prepare(scenario: Scenario) -> list[str]:
    """Make the snapshot a still picture: its pods keep running (a simulated duration is dropped)
    and the Scenario's timed events, expectations and descheduler are not part of it. Returns what
    was left out, as warnings."""
    dropped: list[str] = []
    ended = 0
    for _at, obj in scenario.objects:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if obj.get("kind") == "Pod" and DURATION in annotations:
            obj["metadata"]["annotations"] = {k: v for k, v in annotations.items() if k != DURATION}
            ended += 1
    if ended:
        dropped.append(f"{ended} pod(s) with a {DURATION} annotation keep running: capacity answers for the "
                       "cluster as it is")
    if scenario.actions or scenario.expects:
        dropped.append(f"the Scenario's {len(scenario.actions)} event(s) and {len(scenario.expects)} "
                       "expectation(s) are not used: capacity answers for the cluster as it is")
    if scenario.descheduler_policy is not None:
        dropped.append("the DeschedulerPolicy is not run: capacity answers for the cluster as it is")
    scenario.actions, scenario.expects, scenario.descheduler_policy = [], [], None
    scenario.until = None
    return dropped


def check_classes(cluster: Cluster, shapes: list[Shape]) -> None:
    """A shape naming a PriorityClass the snapshot lacks is bad input, not a capacity of zero."""
    problems = [Problem(s.source, None, "spec.priorityClassName", f"no PriorityClass {s.priority_class!r} in "
                                                                    "the snapshot")
                for s in shapes
                if s.priority_class and cluster.store.get("PriorityClass", "", s.priority_class) is None]
    if problems:
        raise InputError(problems)


# ---- the run ------------------------------------------------------------------------------------


def run_capacity(scenario: Scenario, shapes: list[Shape], preempt: bool = False,
                 max_copies: int | None = None) -> CapacityResult:
    """Settle the snapshot, then add copies round-robin until every shape has stopped; with
    `preempt`, a second round of copies that may preempt. Raises InputError for a shape that
    cannot be copied at all (an unknown PriorityClass, or a class no companion can mirror)."""
    warnings = prepare(scenario)
    cluster = build_cluster(scenario)
    recorder = cluster.recorder
    assert recorder is not None
    recorder.stop_on_loop = True
    cluster.run()
    check_classes(cluster, shapes)
    results = [ShapeResult(s, _base(cluster, s)) for s in shapes]
    _companions(cluster, results)
    run = _Run(cluster, max_copies)
    run.round(results, preempting=False)
    if preempt:
        blocked = [r for r in results if r.stop is not None and r.stop.type == "Unschedulable"]
        run.round(blocked, preempting=True)
    _fates(cluster, results)
    return CapacityResult(results, preempt, max_copies, SimResult(scenario, cluster),
                          warnings + [str(w) for w in scenario.warnings] + recorder.warnings)


def _base(cluster: Cluster, shape: Shape) -> str:
    """The copies' name prefix: the shape's name, unless the snapshot has pods named like copies
    of it (the shape was taken from a StatefulSet's web-0): then <name>-copy."""
    numbered = re.compile(re.escape(shape.name) + r"-\d+")
    clash = any(numbered.fullmatch(p["metadata"]["name"]) for p in cluster.store.list("Pod", shape.namespace))
    return f"{shape.name}-copy" if clash else shape.name


def _companions(cluster: Cluster, results: list[ShapeResult]) -> None:
    """Create, for each class the shapes use, its twin that does not preempt (see the module
    docstring); a class that already does not preempt is its own."""
    problems: list[Problem] = []
    store = cluster.store
    default = next((pc for pc in store.list("PriorityClass") if pc.get("globalDefault")), None)
    for r in results:
        name = r.shape.priority_class or (default["metadata"]["name"] if default else None)
        pc = store.get("PriorityClass", "", name) if name else None
        if pc is not None and pc.get("preemptionPolicy") == "Never":
            r.companion = name
            continue
        r.companion = COMPANION_PREFIX + (name or NO_CLASS)
        if store.get("PriorityClass", "", r.companion) is not None:
            continue
        twin = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": r.companion}, "value": pc.get("value", 0) if pc else 0,
                "globalDefault": False, "preemptionPolicy": "Never",
                "description": f"kubesched capacity: {name or 'no class'} without preemption"}
        try:
            cluster.api.create(twin)
        except APIError as e:
            problems.append(Problem(r.shape.source, None, "spec.priorityClassName",
                                    f"copies that must not preempt need a PriorityClass like {name} with "
                                    f"preemptionPolicy Never, which the API refuses ({e.message}); "
                                    "use --preempt"))
    if problems:
        raise InputError(problems)


class _Run:
    """Adds copies one at a time and reads what became of each."""

    def __init__(self, cluster: Cluster, max_copies: int | None) -> None:
        self.cluster = cluster
        self.max_copies = max_copies
        recorder = cluster.recorder
        assert recorder is not None
        self.recorder = recorder
        # Once the recorder stops the clock (a run going round in circles), nothing more can be added.
        self.stopped = self._loop_stop(0)

    def _loop_stop(self, since: int) -> str | None:
        return next((w for w in self.recorder.warnings[since:] if w.startswith(_LOOP_STOP)), None)

    def round(self, results: list[ShapeResult], preempting: bool) -> None:
        active = list(results)
        while active:
            for r in list(active):
                stop = self.step(r, preempting)
                if stop is not None:
                    if preempting:
                        r.stop_preempting = stop
                    else:
                        r.stop = stop
                    active.remove(r)

    def step(self, r: ShapeResult, preempting: bool) -> Stop | None:
        """Create the shape's next copy, run to quiescence; None when it landed, else why not."""
        if self.max_copies is not None and len(r.copies) >= self.max_copies:
            return Stop("LimitReached", f"Maximum number of copies simulated: {self.max_copies}")
        if self.stopped is not None:
            return Stop("Stopped", self.stopped)
        cluster, recorder = self.cluster, self.recorder
        shape = r.shape
        name = f"{r.base}-{len(r.copies)}"
        pod = deep_copy(shape.template)
        pod["metadata"]["name"] = name
        if not preempting:
            pod["spec"]["priorityClassName"] = r.companion
        cluster.run(cluster.now() + STEP)
        created = cluster.now()
        marks = (len(recorder.preemptions), len(recorder.disruptions), len(recorder.warnings))
        try:
            uid = cluster.api.create(pod)["metadata"]["uid"]
        except APIError as e:
            return Stop("Refused", f"{e.code} {e.message}", name, created_at=created, deleted_at=created)
        cluster.run()
        preempted = recorder.preemptions[marks[0]:]
        key = f"{shape.namespace}/{name}"
        victims = [dict(v, node=p["node"]) for p in preempted if p["preemptor"] == key for v in p["victims"]]
        knock_on = [d.to_json() for d in recorder.disruptions[marks[1]:]
                    if not any(v["pod"] == d.pod for v in victims)]
        self.stopped = self._loop_stop(marks[2])
        current = cluster.store.get("Pod", shape.namespace, name)
        if _running(current, uid):
            node = current["spec"]["nodeName"]
            r.copies.append(Copy(name, uid, node, preempting, created, victims, knock_on))
            return None
        stop = self._why_not(current, uid, name, self.stopped)
        stop.victims, stop.created_at = victims, created
        if current is not None and current["metadata"].get("uid") == uid:
            # A step later, as a replay's delete event must come after the attempt it ends.
            cluster.run(cluster.now() + STEP)
            stop.deleted_at = cluster.now()
            cluster.api.delete("Pod", shape.namespace, name, grace_period=0)
            cluster.run()
        return stop

    def _why_not(self, pod: Obj | None, uid: str, name: str, stopped: str | None) -> Stop:
        if stopped is not None:
            return Stop("Stopped", stopped, name)
        if pod is None or pod["metadata"].get("uid") != uid:
            history = self.recorder.pods.get(uid)
            why = history.reason if history is not None else "deleted"
            return Stop("Removed", f"removed ({why}) before it ran", name)
        status = pod.get("status") or {}
        if status.get("phase") == "Failed":  # bound, but its kubelet refused it
            said = f"{status.get('reason', '')}: {status.get('message', '')}".strip(": ")
            return Stop("Failed", said, name)
        cond = get_condition(pod, "PodScheduled")
        if cond is not None and cond.get("status") == "False":
            return Stop(cond.get("reason") or "Unschedulable", cond.get("message", ""), name)
        scheduler = pod["spec"].get("schedulerName", "default-scheduler")
        return Stop("NotScheduled", f"no scheduling attempt (schedulerName {scheduler})", name)


def _running(pod: Obj | None, uid: str) -> bool:
    """Whether the copy with `uid` holds its node: bound, neither terminating nor finished."""
    return pod is not None and pod["metadata"].get("uid") == uid and bool(pod["spec"].get("nodeName")) \
        and not is_terminating(pod) and (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")


def _fates(cluster: Cluster, results: list[ShapeResult]) -> None:
    """A copy placed early may be gone at the end (a later copy preempted it): say so."""
    recorder = cluster.recorder
    assert recorder is not None
    removals = {d.uid: d for d in recorder.disruptions}
    for r in results:
        for c in r.copies:
            if _running(cluster.store.get("Pod", r.shape.namespace, c.name), c.uid):
                continue
            d = removals.get(c.uid)
            c.fate = f"{d.cause} {d.detail}".strip() if d is not None else "removed"


# ---- the reasons --------------------------------------------------------------------------------

def group_reasons(message: str) -> tuple[dict[str, int], dict[str, int] | str | None]:
    """The FailedScheduling message's reasons, grouped over nodes as the scheduler counted them:
    ({reason: nodes}, the preemption part as {reason: nodes} or its sentence, or None)."""
    found = fiterror.parse(message)
    return found.reasons, found.preemption


# ---- output -------------------------------------------------------------------------------------


def to_json(result: CapacityResult) -> dict[str, Any]:
    shapes = []
    for r in result.shapes:
        s = r.shape
        nodes: dict[str, int] = {}
        for c in r.copies:
            if c.fate is None:
                nodes[c.node] = nodes.get(c.node, 0) + 1
        entry: dict[str, Any] = {
            "name": s.name, "namespace": s.namespace, "source": s.source, "copyPrefix": r.base,
            "requests": s.requests(),
            "priorityClassName": s.priority_class, "copyPriorityClassName": r.companion,
            "fit": r.fit, "running": sum(nodes.values()), "nodes": dict(sorted(nodes.items())),
            "copies": [c.to_json() for c in r.copies],
            "stop": r.stop.to_json() if r.stop else None,
        }
        if result.preempt:
            entry["fitByPreemption"] = r.fit_preempting
            entry["victims"] = len(r.victims())
            entry["stopPreempting"] = r.stop_preempting.to_json() if r.stop_preempting else None
        shapes.append(entry)
    out: dict[str, Any] = {"order": ORDER, "preempt": result.preempt, "max": result.max_copies,
                           "time": result.sim.cluster.now(), "shapes": shapes}
    if result.warnings:
        out["warnings"] = result.warnings
    return out


def compress(prefix: str, indices: list[int]) -> str:
    """web-{0..3,7}: copy names, runs of three or more as ranges."""
    runs: list[str] = []
    i = 0
    while i < len(indices):
        j = i
        while j + 1 < len(indices) and indices[j + 1] == indices[j] + 1:
            j += 1
        if j - i >= 2:
            runs.append(f"{indices[i]}..{indices[j]}")
        else:
            runs.extend(str(n) for n in indices[i:j + 1])
        i = j + 1
    if len(runs) == 1 and ".." not in runs[0]:
        return f"{prefix}-{runs[0]}"
    return f"{prefix}-{{{','.join(runs)}}}"


def _stop_line(label: str, stop: Stop | None) -> str:
    if stop is None:
        return ""
    line = f"  {label}: the next copy ({stop.copy}) - {stop.type}: {stop.message}" if stop.copy else \
        f"  {label}: {stop.type}: {stop.message}"
    if stop.victims:
        line += f" (it preempted {len(stop.victims)} pod(s) all the same: " + \
                ", ".join(v["pod"] for v in stop.victims) + ")"
    return line


def render_table(result: CapacityResult, console: Console) -> None:
    cluster = result.sim.cluster
    nodes = [n["metadata"]["name"] for n in cluster.store.list("Node")]
    names = ", ".join(r.shape.name for r in result.shapes)
    rounds = "without preemption, then preempting lower-priority pods" if result.preempt else \
        "without preemption (copies have preemptionPolicy Never)"
    on = f"{len(nodes)} node{'' if len(nodes) == 1 else 's'}"
    console.print(f"[bold]Capacity[/bold] on {on}: copies of {names} added {ORDER}, one at a time, {rounds}",
                  soft_wrap=True, highlight=False)
    for r in result.shapes:
        s = r.shape
        requests = ", ".join(f"{k} {v}" for k, v in s.requests().items()) or "no requests"
        klass = s.priority_class or "-"
        line = f"  {s.namespace}/{s.name} ({requests}; priorityClassName {klass}): {r.fit} fit"
        if result.preempt:
            line += f", {r.fit_preempting} more by preempting {len(r.victims())} pod(s)"
        running = sum(1 for c in r.copies if c.fate is None)
        if running != len(r.copies):
            line += f"; {running} still running at the end"
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    console.print("[bold]Why the next copy does not fit[/bold]", highlight=False)
    for r in result.shapes:
        console.print(f"{r.shape.name}:", highlight=False, markup=False)
        for label, stop in (("without preemption", r.stop), ("with preemption", r.stop_preempting)):
            line = _stop_line(label, stop)
            if line:
                console.print(line, soft_wrap=True, highlight=False, markup=False)
            if stop is not None and stop.type == "Unschedulable":
                reasons, preemption = group_reasons(stop.message)
                for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                    console.print(f"      {count:>6} node(s): {reason}", soft_wrap=True, highlight=False,
                                  markup=False)
                if isinstance(preemption, dict):
                    said = "; ".join(f"{count} node(s): {reason}" for reason, count in
                                     sorted(preemption.items(), key=lambda kv: (-kv[1], kv[0])))
                    console.print(f"      preemption: {said}", soft_wrap=True, highlight=False, markup=False)

    per_node = Table(title="Copies per node", title_justify="left")
    per_node.add_column("node", overflow="fold")
    for r in result.shapes:
        per_node.add_column(r.shape.name, overflow="fold")
    placed: dict[str, dict[int, list[int]]] = {}
    for i, r in enumerate(result.shapes):
        for c in r.copies:
            if c.fate is None:
                placed.setdefault(c.node, {}).setdefault(i, []).append(int(c.name.rsplit("-", 1)[1]))
    for node in nodes:
        if node not in placed:
            continue
        row = [node]
        for i, r in enumerate(result.shapes):
            got = placed[node].get(i, [])
            row.append(f"{len(got)} ({compress(r.base, got)})" if got else "-")
        per_node.add_row(*row)
    if per_node.row_count:
        console.print(per_node)

    if result.preempt:
        pre = Table(title="Preemptions: what each copy cost", title_justify="left")
        for col in ("copy", "node", "victims", "knock-on removals"):
            pre.add_column(col, overflow="fold")
        for r in result.shapes:
            for c in r.copies:
                if c.victims or c.knock_on:
                    pre.add_row(f"{r.shape.namespace}/{c.name}", c.node,
                                ", ".join(f"{v['pod']} ({v['priority']})" for v in c.victims) or "-",
                                ", ".join(f"{d['pod']} ({d['cause']})" for d in c.knock_on) or "-")
        if pre.row_count:
            console.print(pre)
    gone = [(r, c) for r in result.shapes for c in r.copies if c.fate is not None]
    if gone:
        console.print("[bold]Copies no longer running at the end[/bold]", highlight=False)
        for r, c in gone:
            console.print(f"  {r.shape.namespace}/{c.name} (was on {c.node}): {c.fate}", soft_wrap=True,
                          highlight=False, markup=False)
