"""`kubesched` command line."""

from __future__ import annotations

import json
import sys

import click
import yaml
from rich.console import Console

from kubesched.api.errors import InputError


@click.group()
@click.version_option(package_name="kubesched")
def main() -> None:
    """kubesched: the Kubernetes scheduling system, simulated."""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--output", "-o", type=click.Choice(["table", "json", "yaml"]), default="table",
              help="table for people; json/yaml follow the results contract.")
@click.option("--explain", "explain", multiple=True, metavar="NS/POD",
              help="Show this pod's decision records (repeatable; '*' for every pod).")
def simulate(paths: tuple[str, ...], output: str, explain: tuple[str, ...]) -> None:
    """Run the cluster in PATHS (files or directories of Kubernetes objects) in virtual time.

    Exit codes: 0 ran and every expectation held, 1 an expectation failed, 2 bad input.
    """
    from kubesched.sim import explain as explain_view
    from kubesched.sim.results import render_table, to_json
    from kubesched.sim.runner import load
    from kubesched.sim.runner import simulate as run

    err = Console(stderr=True)
    try:
        scenario = load(list(paths))
    except InputError as e:
        for p in e.problems:
            err.print(str(p), markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    keys = {k if "/" in k or k == "*" else f"default/{k}" for k in explain}
    result = run(scenario, explain=keys or None)
    if output == "table":
        console = Console()
        render_table(result, console)
        records, preemptions = result.cluster.records(), result.cluster.preemptions()
        for key in sorted(records) if "*" in keys else sorted(keys):
            # A pod that was only removed (preempted, evicted...) is explained by its removal alone.
            removed = any(v["pod"] == key for p in preemptions for v in p["victims"]) or any(
                d.pod == key for d in result.cluster.disruptions) or any(
                e["pod"] == key for e in result.cluster.api.evictions)
            if records.get(key) or not removed:
                explain_view.render(key, records.get(key, []), console)
            explain_view.render_victim(key, preemptions, console)
            explain_view.render_removal(key, result.cluster.disruptions, result.cluster.api.evictions, console)
    else:
        data = to_json(result, keys or None)
        if output == "json":
            click.echo(json.dumps(data, indent=2))
        else:
            click.echo(yaml.safe_dump(data, sort_keys=False))
    sys.exit(0 if result.ok else 1)


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
    from kubesched.descheduler.planner import plan as make_plan
    from kubesched.descheduler.planner import render_plan
    from kubesched.sim.runner import load

    err = Console(stderr=True)
    try:
        scenario = load(list(paths))
        chosen = load([policy]).descheduler_policy
    except InputError as e:
        for p in e.problems:
            err.print(str(p), markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    if chosen is None:
        err.print(f"{policy}: no DeschedulerPolicy (apiVersion descheduler/v1alpha2) in it", markup=False)
        sys.exit(2)
    scenario.descheduler_policy = chosen
    result = make_plan(scenario, " ".join(paths))
    if output == "table":
        render_plan(result, Console())
    elif output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(yaml.safe_dump(result.to_json(), sort_keys=False))


if __name__ == "__main__":
    main()
