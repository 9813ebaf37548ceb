"""Results: the stable JSON contract, and the human table."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.api.duration import format_duration
from kubesched.api.kinds import SIMULATED, stored_only_summary
from kubesched.api.objects import get_condition
from kubesched.api.quantity import format_amount
from kubesched.descheduler.descheduler import PassRecord
from kubesched.descheduler.framework import EvictionAttempt
from kubesched.runtime.cluster import Cluster
from kubesched.scheduler.record import DecisionRecord
from kubesched.sim.runner import SimResult

SHOWN_RESOURCES = ("cpu", "memory", "pods")


def _resources(amounts: dict[str, int], names: list[str]) -> dict[str, str]:
    return {n: format_amount(n, amounts.get(n, 0)) for n in names}


def preemptions(cluster: Cluster) -> list[dict[str, Any]]:
    """Every preemption any scheduler performed, in time order: the schedulers' own records, as
    only they know the candidates and the criterion that chose the node."""
    return sorted((p for s in cluster.schedulers for p in s.handle.preemptions), key=lambda p: p["time"])


def decision_records(cluster: Cluster) -> dict[str, list[DecisionRecord]]:
    """The decision records of explained pods, from every scheduler."""
    return {k: r for s in cluster.schedulers for k, r in s.records.items()}


def to_json(result: SimResult, explain: set[str] | None = None) -> dict[str, Any]:
    cluster, recorder = result.cluster, result.recorder
    pods = []
    for h in recorder.pods.values():
        meta, spec, status = h.obj["metadata"], h.obj.get("spec", {}), h.obj.get("status", {})
        pods.append({
            "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta.get("uid"),
            "priority": spec.get("priority", 0), "nodeName": spec.get("nodeName"),
            "nominatedNodeName": status.get("nominatedNodeName"), "phase": status.get("phase"),
            "deleted": h.deleted, "reason": h.reason or status.get("reason"),
        })
    nodes = []
    for node in cluster.store.list("Node"):
        ni = cluster.scheduler.node_info(node["metadata"]["name"])
        assert ni is not None
        names = sorted(set(ni.allocatable) | set(ni.requested))
        requested = dict(ni.requested, pods=len(ni.pods))
        nodes.append({
            "name": ni.name, "allocatable": _resources(ni.allocatable, names),
            "requested": _resources(requested, names), "taints": ni.taints, "unschedulable": ni.unschedulable,
        })
    out: dict[str, Any] = {
        "time": cluster.now(),
        "pods": pods,
        "nodes": nodes,
        "events": [{"time": e.time, "type": e.type, "reason": e.reason, "object": e.object, "message": e.message}
                   for e in recorder.events],
        "rejected": [{"time": r.time, "object": r.object, "message": r.message} for r in recorder.rejected],
    }
    stored = Counter(obj["kind"] for _, obj in result.scenario.objects if obj["kind"] not in SIMULATED)
    if stored:
        out["storedOnly"] = dict(sorted(stored.items()))
    warnings = [str(w) for w in result.scenario.warnings] + recorder.warnings
    if warnings:
        out["warnings"] = warnings
    preempted = preemptions(cluster)
    if preempted:
        out["preemptions"] = preempted
    if recorder.disruptions:
        out["disruptions"] = [d.to_json() for d in recorder.disruptions]
    if cluster.api.evictions:
        out["evictions"] = [_eviction_json(e) for e in cluster.api.evictions]
    if cluster.drainer.drains:
        out["drains"] = [d.to_json() for d in cluster.drainer.drains]
    if cluster.descheduler is not None:
        out["descheduler"] = {"passes": [p.to_json() for p in cluster.descheduler.passes]}
    if result.expects:
        out["expect"] = [{"expect": e.expect, "ok": e.ok, "detail": e.detail, "time": e.time} for e in result.expects]
    if explain:
        out["decisions"] = {k: [r.to_json() for r in recs] for k, recs in decision_records(cluster).items()}
    return out


def _eviction_json(e: dict[str, Any]) -> dict[str, Any]:
    return {"time": e["time"], "pod": e["pod"], "requester": e["requester"], "code": e["code"],
            "message": e["message"], "causes": e["causes"], "pdb": e.get("pdb")}


def _answer(e: dict[str, Any]) -> str:
    if e["code"] == 200:
        return "200 evicted" + (f" (budget {e['pdb']})" if e.get("pdb") else "")
    return f"{e['code']} {e['message']}" + "".join(f" {c}" for c in e["causes"])


def _collapse_retries(attempts: list[dict[str, Any]]) -> list[tuple[float, float, int, dict[str, Any]]]:
    """Fold a requester's repeated identical answers for one pod (drain retries every 5 s) into
    one row: (first time, last time, count, attempt)."""
    rows: list[list[Any]] = []
    open_rows: dict[tuple[str, str], int] = {}  # (pod, requester) -> its latest row
    for e in attempts:
        key = (e["pod"], e["requester"])
        i = open_rows.get(key)
        if i is not None and e["code"] != 200 and _answer(rows[i][3]) == _answer(e):
            rows[i][1], rows[i][2] = e["time"], rows[i][2] + 1
            continue
        open_rows[key] = len(rows)
        rows.append([e["time"], e["time"], 1, e])
    return [(a, b, n, e) for a, b, n, e in rows]


def attempt_detail(a: EvictionAttempt) -> str:
    """What became of a descheduler eviction, in a few words: the landing or the refusal."""
    if a.result == "Evicted":
        budget = f" (budget {a.pdb})" if a.pdb else ""
        if a.message:
            return a.message + budget
        return (f"replacement likely on {a.landing}" if a.landing else "no node fits a replacement") + budget
    return f"{a.code} {a.message}" if a.code else a.message


def render_descheduler(passes: list[PassRecord], console: Console) -> None:
    """One row per eviction the descheduler attempted; passes that did nothing are only counted."""
    evicted = sum(p.evicted for p in passes)
    table = Table(title=f"Descheduler: {len(passes)} pass(es), {evicted} eviction(s)", title_justify="left")
    for col in ("pass", "time", "pod", "node", "strategy", "result", "detail"):
        table.add_column(col)
    for p in passes:
        for err in p.errors:
            table.add_row(str(p.number), format_duration(p.time), "-", "-", "-", "Error", err, style="red")
        for a in p.attempts:
            style = None if a.result == "Evicted" else "yellow"
            table.add_row(str(p.number), format_duration(a.time), a.pod, a.node or "-", a.strategy, a.result,
                          attempt_detail(a), style=style)
    console.print(table)


def render_table(result: SimResult, console: Console) -> None:
    cluster, recorder = result.cluster, result.recorder
    console.print(f"[bold]Scenario[/bold] {result.scenario.name}: ran to {format_duration(cluster.now())} "
                  f"of virtual time; {len(recorder.pods)} pods, {sum(1 for _ in cluster.store.list('Node'))} nodes")
    others = stored_only_summary(obj for _, obj in result.scenario.objects)
    if others:
        console.print(f"Also loaded, kept as they are (nothing in kubesched acts on them): {others}",
                      markup=False, highlight=False)

    nodes = Table(title="Nodes", title_justify="left")
    for col in ("node", "cpu (req/alloc)", "memory (req/alloc)", "pods", "taints"):
        nodes.add_column(col)
    for node in cluster.store.list("Node"):
        ni = cluster.scheduler.node_info(node["metadata"]["name"])
        assert ni is not None
        flags = [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}" for t in ni.taints]
        if ni.unschedulable:
            flags.insert(0, "(cordoned)")
        nodes.add_row(
            ni.name,
            f"{format_amount('cpu', ni.requested.get('cpu', 0))}/{format_amount('cpu', ni.allocatable.get('cpu', 0))}",
            f"{format_amount('memory', ni.requested.get('memory', 0))}/"
            f"{format_amount('memory', ni.allocatable.get('memory', 0))}",
            f"{len(ni.pods)}/{ni.allocatable.get('pods', 0)}",
            ", ".join(flags),
        )
    console.print(nodes)

    placed = Table(title="Pods", title_justify="left")
    for col in ("pod", "priority", "node", "phase", "note"):
        placed.add_column(col)
    for h in recorder.pods.values():
        meta, spec, status = h.obj["metadata"], h.obj.get("spec", {}), h.obj.get("status", {})
        note = ""
        if h.deleted:
            note = f"removed at {format_duration(h.deleted_at or 0)}: {h.reason}"
        elif not spec.get("nodeName"):
            cond = get_condition(h.obj, "PodScheduled")
            note = cond.get("message", "") if cond else "not attempted yet"
        elif status.get("nominatedNodeName"):
            note = f"nominated to {status['nominatedNodeName']}"
        placed.add_row(f"{meta.get('namespace')}/{meta['name']}", str(spec.get("priority", 0)),
                       spec.get("nodeName") or "-", "Deleted" if h.deleted else status.get("phase", ""), note)
    console.print(placed)

    if recorder.rejected:
        rej = Table(title="Rejected by the API", title_justify="left")
        for col in ("time", "object", "message"):
            rej.add_column(col)
        for r in recorder.rejected:
            rej.add_row(format_duration(r.time), r.object, r.message)
        console.print(rej)

    preempted = preemptions(cluster)
    if preempted:
        pre = Table(title="Preemptions", title_justify="left")
        for col in ("time", "preemptor", "node", "victims", "chosen by"):
            pre.add_column(col)
        for p in preempted:
            victims = ", ".join(
                f"{v['pod']} ({v['priority']}{', violates ' + '/'.join(v['violates']) if v['violates'] else ''}"
                f"{', already terminating' if v['alreadyTerminating'] else ''})" for v in p["victims"])
            pre.add_row(format_duration(p["time"]), f"{p['preemptor']} ({p['priority']})", p["node"], victims,
                        p["decidedBy"])
        console.print(pre)

    if recorder.disruptions:
        dis = Table(title="Disruptions", title_justify="left")
        for col in ("time", "pod", "node", "cause", "detail", "replaced by"):
            dis.add_column(col)
        for d in recorder.disruptions:
            dis.add_row(format_duration(d.time), d.pod, d.node or "-", d.cause, d.detail,
                        d.replacement or (f"- ({d.unowned})" if d.unowned else "-"))
        console.print(dis)

    if cluster.api.evictions:
        ev = Table(title="Eviction requests", title_justify="left")
        for col in ("time", "pod", "by", "answer"):
            ev.add_column(col)
        for first, last, count, e in _collapse_retries(cluster.api.evictions):
            when = format_duration(first) + (f"-{format_duration(last)} ({count} times)" if count > 1 else "")
            ev.add_row(when, e["pod"], e["requester"], _answer(e), style=None if e["code"] == 200 else "yellow")
        console.print(ev)

    if cluster.descheduler is not None:
        render_descheduler(cluster.descheduler.passes, console)

    for d in cluster.drainer.drains:
        drain = Table(title=f"Drain of {d.node}: {d.status}", title_justify="left")
        for col in ("time", "kubectl drain"):
            drain.add_column(col)
        rows: dict[str, list[Any]] = {}  # kubectl repeats a refusal every 5 s: one row per line
        for t, line in d.log:
            rows.setdefault(line, [t, t, 0])
            rows[line][1:] = [t, rows[line][2] + 1]
        for line, (first, last, count) in rows.items():
            when = format_duration(first) + (f"-{format_duration(last)} ({count} times)" if count > 1 else "")
            drain.add_row(when, line)
        console.print(drain)

    timeline = Table(title="Timeline", title_justify="left")
    for col in ("time", "object", "reason", "message"):
        timeline.add_column(col)
    for e in recorder.events:
        style = "yellow" if e.type == "Warning" else None
        timeline.add_row(format_duration(e.time), e.object, e.reason, e.message, style=style)
    console.print(timeline)

    if result.expects:
        failed = [e for e in result.expects if not e.ok]
        console.print(f"[bold]Expectations:[/bold] {len(result.expects) - len(failed)} held, {len(failed)} failed")
        for e in failed:
            console.print(f"  [red]FAILED[/red] {e.expect}: {e.detail}")
