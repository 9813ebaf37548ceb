"""`kubesched deschedule`: what the descheduler's next pass would do to a cluster snapshot.

The plan is the first pass of the periodic run, computed the same way: the snapshot becomes a
throwaway simulated cluster (the live one is never touched), the pass runs with the policy's
profiles and limits, and every eviction goes through that cluster's Eviction API, so budgets
answer as they would (and two evictions debit a budget twice). Where each evicted pod would
likely land is our scheduler's choice for its replacement, with the capacity earlier moves of
the plan already reserved (see Placement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.cluster.cluster import Cluster
from kubesched.descheduler.descheduler import PassRecord
from kubesched.descheduler.framework import EvictionAttempt
from kubesched.input.scenario import Scenario
from kubesched.sim.runner import build_cluster


@dataclass
class Plan:
    scenario: Scenario
    cluster: Cluster
    first_pass: PassRecord
    source: str = ""  # what was planned on, for the heading

    @property
    def evictions(self) -> list[EvictionAttempt]:
        return [a for a in self.first_pass.attempts if a.result == "Evicted"]

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.first_pass.nodes, "errors": self.first_pass.errors,
                "plan": [{**a.to_json(), "budget": budget_answer(a)} for a in self.first_pass.attempts]}


def budget_answer(a: EvictionAttempt) -> str:
    """Whether the pod's disruption budget lets it go, as the plan reports it."""
    if a.result == "Evicted":
        return f"allows ({a.pdb})" if a.pdb else "no budget"
    if a.result == "Refused":
        return f"refuses ({a.pdb}): {a.message}" if a.pdb else f"{a.code}: {a.message}"
    return "not asked"


def plan(scenario: Scenario, source: str = "") -> Plan:
    """Run the snapshot up to the end of the descheduler's first pass (virtual time 0)."""
    if scenario.descheduler_policy is None:
        raise ValueError("a DeschedulerPolicy is needed to plan")
    cluster = build_cluster(scenario)
    cluster.run(until=0.0)
    assert cluster.recorder is not None and cluster.recorder.passes
    return Plan(scenario, cluster, cluster.recorder.passes[0], source or scenario.name)


def render_plan(p: Plan, console: Console) -> None:
    evictions = p.evictions
    first = p.first_pass
    console.print(f"[bold]Descheduling plan[/bold] for {p.source}: {first.nodes} ready nodes; "
                  f"{len(evictions)} pod(s) would be evicted (dry run: nothing was changed)")
    for err in first.errors:
        console.print(f"[red]pass not run:[/red] {err}")
    table = Table(title="Planned evictions", title_justify="left")
    for col in ("pod", "node", "strategy", "budget", "likely landing"):
        table.add_column(col, overflow="fold")
    for a in evictions:
        table.add_row(a.pod, a.node or "-", a.strategy, budget_answer(a),
                      a.landing or a.message or "pending (no node fits)")
    console.print(table)
    others = [a for a in first.attempts if a.result != "Evicted"]
    if others:
        kept = Table(title="Considered, not evicted", title_justify="left")
        for col in ("pod", "node", "strategy", "why"):
            kept.add_column(col, overflow="fold")
        for a in others:
            kept.add_row(a.pod, a.node or "-", a.strategy,
                         f"{a.result}: {budget_answer(a) if a.result == 'Refused' else a.message}")
        console.print(kept)
