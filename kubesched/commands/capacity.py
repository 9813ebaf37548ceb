"""`kubesched capacity`: the command line of kubesched.sim.capacity."""

from __future__ import annotations

import click
import yaml

from kubesched.api.errors import InputError, Problem
from kubesched.api.features import FeatureGates
from kubesched.api.loader import Dumper
from kubesched.input.commandline import (
    echo_json,
    fail,
    feature_gates_option,
    output_console,
    results_only,
    warn,
)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--pod", "pods", multiple=True, required=True, metavar="FILE",
              help="A pod shape: one Pod (or a Deployment/ReplicaSet/StatefulSet/Job, for its pod template). "
                   "Repeatable.")
@click.option("--preempt", is_flag=True,
              help="Then also count the copies that fit by preempting lower-priority pods, and which pods "
                   "each would cost.")
@click.option("--max", "max_copies", type=click.IntRange(min=1), metavar="N",
              help="Stop a shape after N copies (cluster-capacity's --max-limit, but per shape). "
                   "Default: no limit.")
@click.option("--output", "-o", type=click.Choice(["table", "json", "yaml"]), default="table")
@click.option("--report", "report", metavar="FILE", help="Also write an HTML report of the final state.")
@click.option("--strict", is_flag=True, help="Treat warnings (unknown fields, ignored settings) as errors.")
@feature_gates_option
def capacity(paths: tuple[str, ...], pods: tuple[str, ...], preempt: bool, max_copies: int | None,
             output: str, report: str | None, strict: bool, feature_gates: FeatureGates | None) -> None:
    """How many more copies of each --pod shape fit on the cluster in PATHS (files or directories,
    as `simulate` takes: a `kubesched snapshot` or `kubectl get nodes,pods,pdb,priorityclasses -A
    -o yaml`), the node each copy lands on, and why the next one does not fit.

    Copies are created one at a time through the API, named <pod>-0, <pod>-1, ... (<pod>-copy-N
    if the snapshot has <pod>-N pods), each one virtual second after the cluster has come to rest
    from the one before: the answer is what `simulate` gives when it adds the same copies one by
    one at those times (each copy's createdAt is in the JSON). The snapshot's pods keep running (a
    sim.kubesched.io/duration is dropped; a Scenario's events are not used) and its kubelets admit
    each copy as usual. A copy that does not fit is deleted before the next one.

    Several shapes take turns, round-robin (web-0, batch-0, web-1, batch-1, ...), the order of
    cluster-capacity's multi-podspec mode; a shape whose next copy does not fit stops, with that
    copy's FailedScheduling reasons, and the others go on.

    Copies do not preempt: they get a twin of their PriorityClass with the same value and
    preemptionPolicy Never (kubesched-capacity-<class>). With --preempt, once no shape fits any
    more, a second round adds copies with their own priorityClassName, which preempt
    lower-priority pods as the scheduler does, until each shape's next copy fails even so.

    Exit codes: 0 answered, 2 bad input.
    """
    from kubesched.sim.capacity import ORDER, Shape, load_shapes, render_table, run_capacity, to_json
    from kubesched.sim.runner import load

    problems: list[Problem] = []
    shapes: list[Shape] = []
    warned: list[Problem] = []  # the shapes' warnings; the snapshot's are the result's
    try:
        shapes = load_shapes(pods, strict, warned)
    except InputError as e:
        problems.extend(e.problems)
    try:
        scenario = load(list(paths), strict=strict, feature_gates=feature_gates)  # its problems are told together with the shapes'
        if not problems:
            result = run_capacity(scenario, shapes, preempt, max_copies)
    except InputError as e:
        problems.extend(e.problems)
    if problems:
        fail(problems)
    results_only()
    warn([*warned, *result.warnings])
    if output == "table":
        render_table(result, output_console())
    elif output == "json":
        echo_json(to_json(result))
    else:
        click.echo(yaml.dump(to_json(result), Dumper=Dumper, sort_keys=False))
    if report:
        from kubesched.sim.report import write_report

        counts = ", ".join(f"{r.shape.name} {r.fit}" + (f" (+{r.fit_preempting} by preempting)"
                                                        if preempt else "") for r in result.shapes)
        write_report(report, [("capacity", result.sim)], f"kubesched capacity: {counts}",
                     [f"copies added {ORDER}, one at a time, to {' '.join(paths)}", *result.warnings])
