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


if __name__ == "__main__":
    main()
