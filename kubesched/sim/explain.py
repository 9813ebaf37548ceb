"""`--explain ns/pod`: every scheduling attempt of one pod, node by node."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kubesched.api.duration import format_duration
from kubesched.scheduler.record import DecisionRecord


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
            filt.add_column(col)
        for name in rec.feasible:
            filt.add_row(name, "[green]feasible[/green]", "", "")
        for name, (plugin, code, reasons) in rec.verdicts.items():
            filt.add_row(name, f"[red]{code}[/red]", plugin, ", ".join(reasons))
        if rec.not_checked:
            filt.add_row(f"({rec.not_checked} more)", "not checked", "",
                         "enough feasible nodes were found first (percentageOfNodesToScore)")
        console.print(filt)
        if rec.scores and rec.totals is not None:
            score = Table(title="Score (normalised × weight)", title_justify="left")
            score.add_column("node")
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
