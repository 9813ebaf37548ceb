"""Results: the stable JSON contract, and the human table.

The table has to stay readable at 150,000 pods: it summarises first (counts, utilisation, pending
time and preemptions per priority class, pending pods grouped by reason) and then lists, each
listing cut at LISTED rows with a note of how many more the JSON has. Names are never cut: columns
fold rather than end in an ellipsis, and piped output is as wide as its widest row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubesched.api.dra.claims import POD_CLAIM_NAME_ANNOTATION, allocation, owning_pod, reserved_for
from kubesched.api.duration import format_duration
from kubesched.api.kinds import SIMULATED, stored_only_summary
from kubesched.api.objects import Obj, get_condition
from kubesched.api.quantity import format_amount, format_memory
from kubesched.api.served import shown_kind
from kubesched.cluster.cluster import Cluster
from kubesched.cluster.recorder import Recorder
from kubesched.scheduler.record import DecisionRecord
from kubesched.sim import summary as run_summary
from kubesched.sim.runner import SimResult
from kubesched.sim.summary import preemptions

if TYPE_CHECKING:  # rich draws only the table: `-o json` does not import it
    from rich.console import Console
    from rich.table import Table

    from kubesched.descheduler.descheduler import PassRecord
    from kubesched.descheduler.framework import EvictionAttempt

LISTED = 100  # rows per listing in the table; the JSON has them all


def _resources(amounts: dict[str, int], names: list[str]) -> dict[str, str]:
    return {n: format_amount(n, amounts.get(n, 0)) for n in names}


def shown_amount(name: str, amount: int) -> str:
    return format_memory(amount) if name == "memory" else format_amount(name, amount)


def percent(ratio: float) -> str:
    return f"{ratio * 100:.1f}%"


def fold_table(title: str, *columns: str) -> Table:
    """A titled table whose cells fold (never end in an ellipsis) when the console is narrow."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", caption_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    return table


def bounded(table: Table, total: int, what: str, limit: int = LISTED) -> int:
    """How many rows of `total` to list; a caption says how many more the JSON has."""
    if total > limit:
        table.caption = f"... and {total - limit:,} more {what} (use -o json)"
    return min(total, limit)


def decision_records(cluster: Cluster) -> dict[str, list[DecisionRecord]]:
    """The decision records of explained pods, from every scheduler."""
    return {k: r for s in cluster.schedulers for k, r in s.records.items()}


# What the results tell of each device a claim holds (a share of a device with its consumption,
# under consumable capacity).
_ALLOCATED_FIELDS = ("request", "driver", "pool", "device", "shareID", "consumedCapacity")


def _claim_json(claim: Obj) -> dict[str, Any]:
    """A ResourceClaim as the results give it: the pod it was made for (if generated) and the
    devices its allocation holds."""
    meta = claim["metadata"]
    namespace = meta.get("namespace", "default")
    pod, _ = owning_pod(claim)
    results = ((allocation(claim) or {}).get("devices") or {}).get("results") or ()
    return {"namespace": namespace, "name": meta["name"], "pod": f"{namespace}/{pod}" if pod else None,
            "podClaimName": (meta.get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) if pod else None,
            "allocated": [{k: r[k] for k in _ALLOCATED_FIELDS if k in r} for r in results],
            "reservedFor": [f"{namespace}/{r.get('name')}" for r in reserved_for(claim)]}


def to_json(result: SimResult, explain: set[str] | None = None, stream: bool = False) -> dict[str, Any]:
    """The results contract. With `stream`, the two lists that grow with the run (pods and events)
    are iterators a writer encodes item by item (`echo_json`), never all built at once."""
    cluster, recorder = result.cluster, result.recorder
    pods = _pod_rows(recorder)
    events = ({"time": e.time, "type": e.type, "reason": e.reason, "object": e.object, "message": e.message}
              for e in recorder.events)
    nodes = []
    devices = node_devices(cluster)
    for node in cluster.store.list("Node"):
        ni = cluster.scheduler.node_info(node["metadata"]["name"])
        assert ni is not None
        names = sorted(set(ni.allocatable) | set(ni.requested))
        requested = dict(ni.requested, pods=len(ni.pods))
        nodes.append({
            "name": ni.name, "allocatable": _resources(ni.allocatable, names),
            "requested": _resources(requested, names), "taints": ni.taints, "unschedulable": ni.unschedulable,
        })
        if ni.name in devices:
            nodes[-1]["devices"] = {driver: {"allocated": used, "published": total}
                                    for driver, (used, total) in sorted(devices[ni.name].items())}
    out: dict[str, Any] = {
        "time": cluster.now(),
        "pods": pods if stream else list(pods),
        "nodes": nodes,
        "events": events if stream else list(events),
        "rejected": [{"time": r.time, "object": r.object, "message": r.message} for r in recorder.rejected],
    }
    claims = [{"namespace": pvc["metadata"].get("namespace", "default"), "name": pvc["metadata"]["name"],
               "volumeName": (pvc.get("spec") or {}).get("volumeName") or None}
              for pvc in cluster.store.list("PersistentVolumeClaim")]
    if claims:
        out["persistentVolumeClaims"] = sorted(claims, key=lambda c: (c["namespace"], c["name"]))
    resource_claims = [_claim_json(c) for c in cluster.store.list("ResourceClaim")]
    if resource_claims:
        out["resourceClaims"] = sorted(resource_claims, key=lambda c: (c["namespace"], c["name"]))
    budgets = [_budget_json(pdb) for pdb in cluster.store.list("PodDisruptionBudget")]
    if budgets:
        out["podDisruptionBudgets"] = budgets
    stored = Counter(kind for kind in (shown_kind(obj) for _, obj in result.scenario.objects)
                     if kind not in SIMULATED)
    if stored:
        out["storedOnly"] = dict(sorted(stored.items()))
    warnings = [str(w) for w in result.scenario.warnings] + recorder.warnings
    if warnings:
        out["warnings"] = warnings
    preempted = preemptions(recorder)
    if preempted:
        out["preemptions"] = preempted
    if recorder.disruptions:
        out["disruptions"] = [d.to_json() for d in recorder.disruptions]
    if recorder.evictions:
        out["evictions"] = [_eviction_json(e) for e in recorder.evictions]
    if recorder.drains:
        out["drains"] = [d.to_json() for d in recorder.drains]
    if cluster.descheduler is not None:
        out["descheduler"] = {"passes": [p.to_json() for p in recorder.passes]}
    if result.expects:
        out["expect"] = [{"expect": e.expect, "ok": e.ok, "detail": e.detail, "time": e.time} for e in result.expects]
    if explain:
        out["decisions"] = {k: [r.to_json() for r in recs] for k, recs in decision_records(cluster).items()}
    out["summary"] = run_summary.summarize(result)
    return out


def _pod_rows(recorder: Recorder) -> Iterator[dict[str, Any]]:
    failed = {e.object: e.message for e in recorder.events if e.reason == "FailedScheduling"}  # the last one
    for h in recorder.pods.values():
        meta, spec, status = h.obj["metadata"], h.obj.get("spec", {}), h.obj.get("status", {})
        pod = {
            "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta.get("uid"),
            "priority": spec.get("priority", 0), "nodeName": spec.get("nodeName"),
            "nominatedNodeName": status.get("nominatedNodeName"), "phase": status.get("phase"),
            "deleted": h.deleted, "reason": h.reason or status.get("reason"),
        }
        if run_summary.is_pending(h):
            # Why it waits: the scheduler's last word on it, and its conditions as the API has them.
            pod["message"] = failed.get(f"Pod/{meta.get('namespace')}/{meta['name']}")
            pod["conditions"] = status.get("conditions") or []
        yield pod


def _budget_json(pdb: dict[str, Any]) -> dict[str, Any]:
    """A PodDisruptionBudget as its status stands at the end of the run."""
    meta, spec, status = pdb["metadata"], pdb.get("spec") or {}, pdb.get("status") or {}
    out = {"namespace": meta.get("namespace"), "name": meta["name"]}
    out.update({k: spec[k] for k in ("minAvailable", "maxUnavailable") if spec.get(k) is not None})
    out.update({k: status.get(k, 0) for k in ("currentHealthy", "desiredHealthy", "disruptionsAllowed",
                                               "expectedPods")})
    return out


def _eviction_json(e: Mapping[str, Any]) -> dict[str, Any]:
    return {"time": e["time"], "pod": e["pod"], "requester": e["requester"], "code": e["code"],
            "message": e["message"], "causes": e["causes"], "pdb": e.get("pdb")}


def _answer(e: Mapping[str, Any]) -> str:
    if e["code"] == 200:
        return "200 evicted" + (f" (budget {e['pdb']})" if e.get("pdb") else "")
    return f"{e['code']} {e['message']}" + "".join(f" {c}" for c in e["causes"])


def _collapse_retries(attempts: Sequence[Mapping[str, Any]]) -> list[tuple[float, float, int, Mapping[str, Any]]]:
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


def render_descheduler(passes: list[PassRecord], console: Console, limit: int = LISTED) -> None:
    """One row per eviction the descheduler attempted; passes that did nothing are only counted."""
    evicted = sum(p.evicted for p in passes)
    table = fold_table(f"Descheduler: {len(passes)} pass(es), {evicted} eviction(s)",
                       "pass", "time", "pod", "node", "strategy", "result", "detail")
    rows: list[tuple[list[str], str | None]] = []
    for p in passes:
        rows.extend(([str(p.number), format_duration(p.time), "-", "-", "-", "Error", err], "red") for err in p.errors)
        rows.extend(([str(p.number), format_duration(a.time), a.pod, a.node or "-", a.strategy, a.result,
                      attempt_detail(a)], None if a.result == "Evicted" else "yellow") for a in p.attempts)
    for cells, style in rows[:bounded(table, len(rows), "attempts", limit)]:
        table.add_row(*cells, style=style)
    console.print(table)


def _summary_section(summary: dict[str, Any], console: Console, limit: int) -> None:
    """Counts, utilisation, pending time and preemptions per class, pending pods by reason."""
    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    pods, span = summary["pods"], summary["span"]
    phases = ", ".join(f"{n:,} {p}" for p, n in pods.items() if p not in ("total", "deleted") and n)
    gone = ", ".join(f"{n:,} {r}" for r, n in pods["deleted"].items())
    say(f"Summary over {format_duration(span['start'])}-{format_duration(span['end'])} of virtual time")
    say(f"  Pods: {pods['total']:,}: {phases or 'none left'}" + (f"; deleted: {gone}" if gone else "")
        + f". Nodes: {summary['nodes']:,}")
    if summary["utilization"]:
        used = ", ".join(f"{r} {percent(u['average'])} (peak {percent(u['peak'])} at {format_duration(u['peakAt'])})"
                         for r, u in summary["utilization"].items())
        say(f"  Requested/allocatable, time-weighted average: {used}")
    if summary["events"]:
        say("  Events: " + ", ".join(f"{n:,} {r}" for r, n in sorted(summary["events"].items(), key=lambda kv: -kv[1])))
    pre = summary["preemptions"]
    if pre["total"]:
        say(f"  Preempted: {pre['victims']:,} pod(s) in {pre['total']:,} preemption(s)")
    if summary["pendingTime"]:
        table = fold_table("Time from creation to a node, by priority class", "class", "priority", "bound",
                           "p50", "p90", "p99", "max", "never bound")
        for r in summary["pendingTime"]:
            table.add_row(r["class"], str(r["priority"]), f"{r['bound']:,}",
                          *(_seconds(r[f"p{q}"]) for q in run_summary.PERCENTILES), _seconds(r["max"]),
                          f"{r['unbound']:,}")
        console.print(table)
    if pre["byClass"]:
        table = fold_table("Preemption by priority class", "class", "priority", "preempted others", "their victims",
                           "was preempted", "by")
        for r in pre["byClass"]:
            table.add_row(r["class"], str(r["priority"]), f"{r['preemptions']:,}", f"{r['victimsCaused']:,}",
                          f"{r['preempted']:,}", ", ".join(f"{n:,} by {c}" for c, n in r["preemptedBy"].items()) or "-")
        console.print(table)
    reasons = summary["pendingReasons"]
    if reasons:
        table = fold_table(f"Pending pods by reason: {sum(g['pods'] for g in reasons):,}", "pods", "reason",
                           "for example")
        for g in reasons[:bounded(table, len(reasons), "reasons", limit)]:
            table.add_row(f"{g['pods']:,}", g["reason"], ", ".join(g["examples"]))
        console.print(table)


def _seconds(value: float | None) -> str:
    return "-" if value is None else format_duration(round(value, 3))


def _nodes_section(cluster: Cluster, console: Console, limit: int) -> None:
    nodes = list(cluster.store.list("Node"))
    infos = [cluster.scheduler.node_info(node["metadata"]["name"]) for node in nodes]
    extended = sorted({r for ni in infos if ni is not None for r, v in ni.allocatable.items() if "/" in r and v})
    devices = node_devices(cluster)
    table = fold_table(f"Nodes: {len(nodes):,}", "node", "cpu (req/alloc)", "memory (req/alloc)", "pods",
                       *(["extended (req/alloc)"] if extended else []),
                       *(["devices (alloc/published)"] if devices else []), "taints")
    for ni in infos[:bounded(table, len(infos), "nodes", limit)]:
        assert ni is not None
        flags = [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}" for t in ni.taints]
        if ni.unschedulable:
            flags.insert(0, "(cordoned)")
        cells = [ni.name] + [f"{shown_amount(r, ni.requested.get(r, 0))}/{shown_amount(r, ni.allocatable.get(r, 0))}"
                             for r in ("cpu", "memory")]
        cells.append(f"{len(ni.pods)}/{ni.allocatable.get('pods', 0)}")
        if extended:
            cells.append(", ".join(f"{r} {ni.requested.get(r, 0)}/{ni.allocatable[r]}" for r in extended
                                   if ni.allocatable.get(r)))
        if devices:
            cells.append(", ".join(f"{driver} {used}/{total}"
                                   for driver, (used, total) in sorted(devices.get(ni.name, {}).items())))
        table.add_row(*cells, ", ".join(flags))
    console.print(table)


def node_devices(cluster: Cluster) -> dict[str, dict[str, tuple[int, int]]]:
    """Per node and driver, the DRA devices its ResourceSlices publish and how many of them an
    allocated claim holds."""
    held = {(r.get("driver"), r.get("pool"), r.get("device"))
            for c in cluster.store.list("ResourceClaim")
            for r in ((allocation(c) or {}).get("devices") or {}).get("results") or ()}
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for s in cluster.store.list("ResourceSlice"):
        spec = s.get("spec") or {}
        node = spec.get("nodeName")
        if not node:
            continue
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        used, total = out.setdefault(node, {}).get(driver, (0, 0))
        for d in spec.get("devices") or ():
            total += 1
            used += (driver, pool, d.get("name")) in held
        out[node][driver] = (used, total)
    return out


def _pods_section(recorder: Recorder, console: Console, limit: int) -> None:
    histories = list(recorder.pods.values())
    table = fold_table(f"Pods: {len(histories):,}", "pod", "priority", "node", "phase", "note")
    for h in histories[:bounded(table, len(histories), "pods", limit)]:
        meta, spec, status = h.obj["metadata"], h.obj.get("spec", {}), h.obj.get("status", {})
        note = ""
        if h.deleted:
            note = f"removed at {format_duration(h.deleted_at or 0)}: {h.reason}"
        elif not spec.get("nodeName"):
            cond = get_condition(h.obj, "PodScheduled")
            note = cond.get("message", "") if cond else run_summary.NOT_ATTEMPTED
        elif status.get("nominatedNodeName"):
            note = f"nominated to {status['nominatedNodeName']}"
        table.add_row(f"{meta.get('namespace')}/{meta['name']}", str(spec.get("priority", 0)),
                      spec.get("nodeName") or "-", "Deleted" if h.deleted else status.get("phase", ""), note)
    console.print(table)


def _budgets_section(budgets: list[dict[str, Any]], console: Console, limit: int) -> None:
    table = fold_table("Disruption budgets", "budget", "min available / max unavailable", "allowed disruptions",
                       "healthy (current/desired)", "expected pods")
    for b in budgets[:bounded(table, len(budgets), "budgets", limit)]:
        wanted = " / ".join(str(b.get(k, "-")) for k in ("minAvailable", "maxUnavailable"))
        table.add_row(f"{b['namespace']}/{b['name']}", wanted, str(b["disruptionsAllowed"]),
                      f"{b['currentHealthy']}/{b['desiredHealthy']}", str(b["expectedPods"]))
    console.print(table)


def render_table(result: SimResult, console: Console, limit: int = LISTED) -> None:
    """The run for people: the summary, then each listing cut at `limit` rows."""
    cluster, recorder = result.cluster, result.recorder
    console.print(f"[bold]Scenario[/bold] {result.scenario.name}: ran to {format_duration(cluster.now())} "
                  f"of virtual time; {len(recorder.pods)} pods, {sum(1 for _ in cluster.store.list('Node'))} nodes")
    others = stored_only_summary(obj for _, obj in result.scenario.objects)
    if others:
        console.print(f"Also loaded, kept as they are (nothing in kubesched acts on them): {others}",
                      markup=False, highlight=False)
    _summary_section(run_summary.summarize(result), console, limit)
    _nodes_section(cluster, console, limit)
    _pods_section(recorder, console, limit)
    budgets = [_budget_json(pdb) for pdb in cluster.store.list("PodDisruptionBudget")]
    if budgets:
        _budgets_section(budgets, console, limit)

    if recorder.rejected:
        rej = fold_table("Rejected by the API", "time", "object", "message")
        for r in recorder.rejected[:bounded(rej, len(recorder.rejected), "rejections", limit)]:
            rej.add_row(format_duration(r.time), r.object, r.message)
        console.print(rej)

    preempted = preemptions(recorder)
    if preempted:
        pre = fold_table("Preemptions", "time", "preemptor", "node", "victims", "chosen by")
        for p in preempted[:bounded(pre, len(preempted), "preemptions", limit)]:
            victims = ", ".join(
                f"{v['pod']} ({v['priority']}{', violates ' + '/'.join(v['violates']) if v['violates'] else ''}"
                f"{', already terminating' if v['alreadyTerminating'] else ''})" for v in p["victims"])
            pre.add_row(format_duration(p["time"]), f"{p['preemptor']} ({p['priority']})", p["node"], victims,
                        p["decidedBy"])
        console.print(pre)

    if recorder.disruptions:
        dis = fold_table("Disruptions", "time", "pod", "node", "cause", "detail", "replaced by")
        for d in recorder.disruptions[:bounded(dis, len(recorder.disruptions), "disruptions", limit)]:
            dis.add_row(format_duration(d.time), d.pod, d.node or "-", d.cause, d.detail,
                        d.replacement or (f"- ({d.unowned})" if d.unowned else "-"))
        console.print(dis)

    if recorder.evictions:
        ev = fold_table("Eviction requests", "time", "pod", "by", "answer")
        collapsed = _collapse_retries(recorder.evictions)
        for first, last, count, e in collapsed[:bounded(ev, len(collapsed), "eviction requests", limit)]:
            when = format_duration(first) + (f"-{format_duration(last)} ({count} times)" if count > 1 else "")
            ev.add_row(when, e["pod"], e["requester"], _answer(e), style=None if e["code"] == 200 else "yellow")
        console.print(ev)

    if cluster.descheduler is not None:
        render_descheduler(recorder.passes, console, limit)

    for d in recorder.drains:
        drain = fold_table(f"Drain of {d.node}: {d.status}", "time", "kubectl drain")
        rows: dict[str, list[Any]] = {}  # kubectl repeats a refusal every 5 s: one row per line
        for t, line in d.log:
            rows.setdefault(line, [t, t, 0])
            rows[line][1:] = [t, rows[line][2] + 1]
        for line, (first, last, count) in list(rows.items())[:bounded(drain, len(rows), "lines", limit)]:
            when = format_duration(first) + (f"-{format_duration(last)} ({count} times)" if count > 1 else "")
            drain.add_row(when, line)
        console.print(drain)

    timeline = fold_table("Timeline", "time", "object", "reason", "message")
    for e in recorder.events[:bounded(timeline, len(recorder.events), "events", limit)]:
        timeline.add_row(format_duration(e.time), e.object, e.reason, e.message,
                         style="yellow" if e.type == "Warning" else None)
    console.print(timeline)

    if result.expects:
        failed = [e for e in result.expects if not e.ok]
        console.print(f"[bold]Expectations:[/bold] {len(result.expects) - len(failed)} held, {len(failed)} failed")
        for e in failed:
            console.print(f"  [red]FAILED[/red] {e.expect}: {e.detail}")
