"""`--explain ns/pod`: every scheduling attempt of one pod, node by node."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.api.duration import format_duration
from kubesched.cluster.recorder import Disruption
from kubesched.scheduler.record import DecisionRecord


def render_preemption(rec: DecisionRecord, console: Console) -> None:
    """The PostFilter part of an attempt: DefaultPreemption's dry run and choice."""
    pf = rec.postfilter
    if pf is None or pf.get("eligible") is False:
        return  # no PostFilter ran, or the message says why
    if "candidates" not in pf:
        console.print("  Preemption: no node where removing pods could help")
        return
    console.print(f"  Preemption dry run: {pf['potentialNodes']} node(s) where it might help, starting at "
                  f"offset {pf['offset']}, looking for {pf['numCandidates']} candidate(s)")
    table = Table(title="Preemption candidates", title_justify="left")
    for col in ("node", "victims", "PDB violations", ""):
        table.add_column(col, overflow="fold")
    for c in pf["candidates"]:
        mark = f"← chosen ({pf['decidedBy']})" if c["node"] == pf.get("nominatedNode") else ""
        violated = ", ".join(f"{k} ({'/'.join(v)})" for k, v in c["violatedBudgets"].items())
        table.add_row(c["node"], ", ".join(c["victims"]), f"{c['pdbViolations']} {violated}".strip(), mark)
    for node, why in pf["rejected"].items():
        table.add_row(node, "-", "-", f"not a candidate: {why}")
    console.print(table)


def render_victim(key: str, preemptions: list[dict], console: Console) -> None:
    for p in preemptions:
        for v in p["victims"]:
            if v["pod"] != key:
                continue
            kept = ", ".join(p["reprieved"]) or "none"
            console.print(
                f"[bold]{key}[/bold] was preempted at {format_duration(p['time'])} by {p['preemptor']} "
                f"(priority {p['priority']} > {v['priority']}) on {p['node']}; node chosen by: {p['decidedBy']}. "
                f"Victims are reprieved most important first while the preemptor still fits; {key} could not "
                f"be (kept on the node: {kept})"
                + (f"; it violates PodDisruptionBudget {'/'.join(v['violates'])}" if v["violates"] else ""))


def render(key: str, records: list[DecisionRecord], console: Console) -> None:
    if not records:
        console.print(f"[bold]{key}[/bold]: no scheduling attempt was made (unknown pod, already bound, "
                      "or handled by another scheduler)")
        return
    for rec in records:
        head = f"[bold]{key}[/bold] attempt {rec.attempt} at {format_duration(rec.time)} ({rec.profile}): "
        head += f"[green]scheduled to {rec.chosen}[/green]" if rec.chosen else f"[red]{rec.result}[/red]"
        console.print(head)
        if rec.message:
            console.print(f"  {rec.message}")
        if rec.prefilter:
            console.print(f"  PreFilter rejected the pod on every node: {rec.prefilter}")
        if rec.skipped:
            console.print(f"  Skipped for this pod: {', '.join(rec.skipped)}")
        filt = Table(title="Filter", title_justify="left")
        for col in ("node", "verdict", "plugin", "reason"):
            filt.add_column(col, overflow="fold")
        for name in rec.feasible:
            filt.add_row(name, "[green]feasible[/green]", "", "")
        for name, (plugin, code, reasons) in rec.verdicts.items():
            why = ", ".join(reasons) + (f" ({rec.details[name]})" if name in rec.details else "")
            filt.add_row(name, f"[red]{code}[/red]", plugin, why)
        if rec.not_checked:
            why = ("the pod's nominated node, tried first, fits" if rec.nominated_first
                   else "enough feasible nodes were found first (percentageOfNodesToScore)")
            filt.add_row(f"({rec.not_checked} more)", "not checked", "", why)
        console.print(filt)
        render_preemption(rec, console)
        if rec.scores and rec.totals is not None:
            score = Table(title="Score (normalised × weight)", title_justify="left")
            score.add_column("node", overflow="fold")
            for d in rec.scores:
                score.add_column(f"{d.plugin} ×{d.weight}", justify="right")
            score.add_column("total", justify="right")
            order = sorted(range(len(rec.feasible)), key=lambda i: -int(rec.totals[i]))
            for i in order:
                cells = [f"{int(d.normalized[i]) * d.weight} ({int(d.raw[i])})" for d in rec.scores]
                mark = " ←" if rec.feasible[i] == rec.chosen else ""
                score.add_row(rec.feasible[i], *cells, f"{int(rec.totals[i])}{mark}")
            console.print(score)
            console.print("  cells: weighted score (raw plugin score); ties between equal totals go to the "
                          "node Go's heap puts first, as kube-scheduler v1.35 does")


def render_removal(key: str, disruptions: list[Disruption], evictions: list[dict[str, Any]],
                   console: Console) -> None:
    """How the pod left its node (any cause) and every eviction asked for it, with the answers."""
    for d in disruptions:
        if d.pod != key:
            continue
        line = f"[bold]{key}[/bold] was removed from {d.node} at {format_duration(d.time)}: {d.cause}"
        if d.detail:
            line += f" ({d.detail})"
        if d.replacement:
            line += f"; replaced by {d.replacement}"
        elif d.scaled_down:
            line += "; not replaced (its ReplicaSet scaled down)"
        elif d.unowned:
            line += f"; not replaced ({d.unowned})"
        else:
            line += "; no replacement yet" if d.owner_uid else "; not replaced (no controller owns it)"
        console.print(line)
    for e in evictions:
        if e["pod"] == key:
            answer = "allowed" if e["code"] == 200 else f"refused {e['code']}: {e['message']} {' '.join(e['causes'])}"
            console.print(f"  eviction asked by {e['requester']} at {format_duration(e['time'])}: {answer}")
