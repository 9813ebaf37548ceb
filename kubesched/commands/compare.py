"""`kubesched compare`: the command line of kubesched.sim.compare."""

from __future__ import annotations

import click
from rich.console import Console

from kubesched.api.duration import parse_duration
from kubesched.api.errors import InputError, Problem
from kubesched.api.features import FeatureGates
from kubesched.input.commandline import (
    bad_input_exits,
    echo_json,
    feature_gates_option,
    option,
    output_console,
    results_only,
    warn,
)
from kubesched.sim.compare import compare, load_all, render, run_all


@click.command(name="compare")
@click.argument("paths", nargs=-1, required=True)
@click.option("--config", "configs", multiple=True, required=True, metavar="FILE",
              help="A KubeSchedulerConfiguration file; give two or more. Each replaces any in PATHS.")
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
@click.option("--report", "report", metavar="FILE", help="Also write a self-contained HTML report of every run.")
@click.option("--until", "until", metavar="DURATION", help="Stop every run at this virtual time (e.g. 2h).")
@click.option("--strict", is_flag=True, help="Treat warnings (unknown fields, ignored settings) as errors.")
@feature_gates_option
def command(paths: tuple[str, ...], configs: tuple[str, ...], output: str, report: str | None,
            until: str | None, strict: bool, feature_gates: FeatureGates | None) -> None:
    """Run the input in PATHS once under each --config KubeSchedulerConfiguration and show what
    differs: pods placed differently, pods pending under some only, preemptions, node
    utilisation spread and fragmentation.

    Exit codes: 0 compared, 2 bad input.
    """
    err = Console(stderr=True)
    with bad_input_exits():
        if len(configs) < 2:
            raise InputError([Problem("command line", None, "--config", "give at least two configurations to compare")])
        scenario, loaded = load_all(list(paths), list(configs), strict, option(until, "--until", parse_duration),
                                    feature_gates)
    warn(scenario.warnings)
    runs = run_all(scenario, list(configs), loaded, progress=err if err.is_terminal else None)
    results_only()
    for run in runs:
        warn(run.result.recorder.warnings, f"{run.label}: ")
    data = compare(runs)
    if output == "json":
        echo_json(data)
    else:
        console = output_console()
        console.print(f"[bold]Compared[/bold] {len(runs)} configurations on {' '.join(paths)}: "
                      + ", ".join(f"{r.label} ({r.config})" for r in runs), highlight=False)
        render(data, console)
    if report is not None:
        from kubesched.sim.report import write_report

        notes = [f"{len(data['placedDifferently'])} pod(s) placed differently, {len(data['pendingDiffers'])} "
                 "pending under some configurations only"]
        notes += [f"{r['label']}: {r['nodesUsed']} of {r['nodes']} nodes used, {r['pending']} pending, "
                  f"{len(r['preemptions'])} preemption(s)" for r in data["runs"]]
        write_report(report, [(run.label, run.result) for run in runs], f"kubesched compare {' '.join(paths)}", notes)
