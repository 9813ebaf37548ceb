"""`kubesched` command line."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

import click
import yaml

from kubesched.input.commandline import (
    bad_input_exits,
    echo_json,
    exit_at_once,
    feature_gates_option,
    option,
    output_console,
    results_only,
    warn,
)

if TYPE_CHECKING:
    from rich.console import Console

    from kubesched.api.features import FeatureGates
    from kubesched.input.scenario import Scenario


# Commands whose modules (the HTTP server, the Kubernetes client, trace readers) are imported
# only when they run, so that `simulate` does not pay for them: command -> (module, attribute).
LAZY_COMMANDS = {
    "serve": ("kubesched.commands.serve", "serve"),
    "advance": ("kubesched.commands.serve", "advance"),
    "snapshot": ("kubesched.live.snapshot", "snapshot"),
    "scheduler": ("kubesched.live.scheduler", "scheduler"),
    "descheduler": ("kubesched.live.descheduler", "descheduler"),
    "trace": ("kubesched.commands.trace", "trace"),
    "compare": ("kubesched.commands.compare", "command"),
    "capacity": ("kubesched.commands.capacity", "capacity"),
}


class _Commands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            module, attribute = LAZY_COMMANDS[name]
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=_Commands)
@click.version_option(package_name="kubesched")
def main() -> None:
    """kubesched: the Kubernetes scheduling system, simulated."""


def _load(paths: list[str], strict: bool = False, now: str | None = None,
          until: str | None = None, feature_gates: FeatureGates | None = None) -> Scenario:
    """Load and validate PATHS, printing warnings; bad input (or, with `strict`, a warning) exits 2."""
    from kubesched.api.duration import parse_duration
    from kubesched.api.objects import parse_time
    from kubesched.sim.runner import load

    with bad_input_exits():
        scenario = load(paths, strict=strict, now=option(now, "--now", parse_time),
                        until=option(until, "--until", parse_duration), feature_gates=feature_gates)
    warn(scenario.warnings)
    return scenario


def _terminal_console() -> Console | None:
    """A rich Console on stderr for a progress bar, if stderr is a terminal a person watches; rich
    is imported only then (a run writing JSON to a pipe does not need it)."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    err = Console(stderr=True)
    return err if err.is_terminal else None


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--output", "-o", type=click.Choice(["table", "json", "yaml"]), default="table",
              help="table for people; json/yaml follow the results contract.")
@click.option("--explain", "explain", multiple=True, metavar="NS/POD",
              help="Show this pod's decision records (repeatable; '*' for every pod).")
@click.option("--until", "until", metavar="DURATION",
              help="Stop at this virtual time (e.g. 2h), overriding the scenario's own `until`.")
@click.option("--now", "now", metavar="TIME",
              help="The moment of the export (RFC 3339); default: the newest timestamp in the input.")
@click.option("--strict", is_flag=True, help="Treat warnings (unknown fields, ignored settings) as errors.")
@feature_gates_option
@click.option("--report", "report", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write a self-contained HTML report (timelines, utilisation, pending reasons) to FILE.")
def simulate(paths: tuple[str, ...], output: str, explain: tuple[str, ...], until: str | None, now: str | None,
             strict: bool, feature_gates: FeatureGates | None, report: str | None) -> None:
    """Run the cluster in PATHS (files or directories of Kubernetes objects) in virtual time.

    Exit codes: 0 ran and every expectation held, 1 an expectation failed, 2 bad input.
    """
    from kubesched.sim.results import decision_records, render_table, to_json
    from kubesched.sim.runner import collector_paused
    from kubesched.sim.runner import simulate as run
    from kubesched.sim.summary import preemptions

    progress = _terminal_console()
    with collector_paused():  # and frozen before it resumes: it has nothing to look for in the run
        scenario = _load(list(paths), strict, now, until, feature_gates)
        keys = {k if "/" in k or k == "*" else f"default/{k}" for k in explain}
        result = run(scenario, explain=keys or None, progress=progress, consume=True)
        results_only()
    if report:
        from kubesched.sim.report import write_report

        write_report(report, [(scenario.name, result)], f"kubesched simulate: {scenario.name}")
    disruptions = result.recorder.disruptions
    warn(result.recorder.warnings)
    if output == "table":
        from kubesched.sim import explain as explain_view

        console = output_console()
        render_table(result, console)
        records, preempted = decision_records(result.cluster), preemptions(result.recorder)
        for key in sorted(records) if "*" in keys else sorted(keys):
            # A pod that was only removed (preempted, evicted...) is explained by its removal alone.
            removed = any(v["pod"] == key for p in preempted for v in p["victims"]) or any(
                d.pod == key for d in disruptions) or any(e["pod"] == key for e in result.recorder.evictions)
            if records.get(key) or not removed:
                explain_view.render(key, records.get(key, []), console)
            explain_view.render_victim(key, preempted, console)
            explain_view.render_removal(key, disruptions, result.recorder.evictions, console)
    else:
        data = to_json(result, keys or None, stream=output == "json")
        if output == "json":
            echo_json(data)
        else:
            from kubesched.api.loader import Dumper

            click.echo(yaml.dump(data, Dumper=Dumper, sort_keys=False))
    exit_at_once(0 if result.ok else 1)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--policy", "policy", required=True, metavar="FILE",
              help="A DeschedulerPolicy (descheduler/v1alpha2); used instead of any in PATHS.")
@click.option("--output", "-o", type=click.Choice(["table", "json", "yaml"]), default="table")
def deschedule(paths: tuple[str, ...], policy: str, output: str) -> None:
    """Dry-run the descheduler on the cluster snapshot in PATHS: which pods its next pass would
    evict, by which strategy, whether their budgets allow it, and where each would likely land.
    Nothing is changed; the plan is exactly the first pass of `simulate` with the same policy
    (which replaces any DeschedulerPolicy in PATHS).

    Exit codes: 0 planned (even if nothing would move), 2 bad input.
    """
    from rich.console import Console

    from kubesched.sim.planner import plan as make_plan
    from kubesched.sim.planner import render_plan
    from kubesched.sim.runner import load

    err = Console(stderr=True)
    with bad_input_exits():
        scenario = _load(list(paths))
        chosen = load([policy]).descheduler_policy
    if chosen is None:
        err.print(f"{policy}: no DeschedulerPolicy (apiVersion descheduler/v1alpha2) in it", markup=False)
        sys.exit(2)
    scenario.descheduler_policy = chosen
    result = make_plan(scenario, " ".join(paths))
    if output == "table":
        render_plan(result, output_console())
    elif output == "json":
        echo_json(result.to_json())
    else:
        from kubesched.api.loader import Dumper

        click.echo(yaml.dump(result.to_json(), Dumper=Dumper, sort_keys=False))


if __name__ == "__main__":
    main()
