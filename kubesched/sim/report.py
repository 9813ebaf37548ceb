"""`--report report.html`: one self-contained HTML page per run or comparison of runs.

Everything is inline (SVG figures, one style sheet, no script), so the file opens anywhere, offline,
and can be mailed or attached to a ticket as it is. Large runs stay readable: the per-node timeline
shows the nodes with the most happening, long tables are cut with a count of what was left out,
and every time series is derived once (see timeline.py), not sampled. Importing this module loads
matplotlib: the commands import it only when asked for a report.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesched.api.duration import format_duration
from kubesched.api.objects import Obj, get_condition
from kubesched.sim import report_plots as plots
from kubesched.sim import timeline as tl
from kubesched.sim.results import decision_records
from kubesched.sim.summary import pod_class, preemptions

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from kubesched.scheduler.record import DecisionRecord
    from kubesched.sim.runner import SimResult

TIMELINE_NODES = 40  # nodes in the per-node timeline of a larger cluster
LABELLED_PODS = 60  # bars in the timeline that get their pod's name
POD_GRAPH_EDGES = 30  # up to this many preemption edges the graph shows pods, beyond it priorities
TABLE_ROWS = 200  # rows of a detail table before it is cut
FOLDED_ROWS = 25  # a longer table is folded away, to be unfolded
NODES_NAMED = 12  # node names listed under one per-node reason
OPEN_DETAILS = 10  # up to this many pending pods show their per-node reasons unfolded


@dataclass
class RunView:
    """What the report shows of one run, derived once."""

    label: str
    result: SimResult
    end: float
    horizon: float  # the time axes' extent: the run's end, or 1 s when everything happened at 0
    nodes: list[Obj]
    spans: list[tl.PodSpan]
    requested: dict[str, tl.Step]
    allocatable: dict[str, tl.Step]
    resources: list[str]
    windows: list[tl.PendingWindow]
    pending: dict[str, tl.Step]
    preemptions: list[dict[str, Any]]
    classes: dict[str, str] = field(default_factory=dict)  # pod key -> "class (priority)"

    @classmethod
    def of(cls, label: str, result: SimResult, pending: bool = True) -> RunView:
        """`pending`: also derive the pending pods' series (the utilisation plot alone does not)."""
        cluster, recorder = result.cluster, result.recorder
        end = cluster.now()
        nodes = list(cluster.api.store.list("Node"))
        spans = tl.pod_spans(recorder, end)
        allocatable = tl.allocatable_over_time(recorder)
        resources = tl.utilisation_resources(spans, allocatable)
        windows = tl.pending_windows(recorder, end) if pending else []
        requested = tl.requested_over_time(spans, resources)
        devices_allocated, devices_published = tl.devices_over_time(recorder)
        requested.update(devices_allocated)  # devices are plotted as a share of those published
        allocatable = {**allocatable, **devices_published}
        resources += sorted(devices_published)
        view = cls(label, result, end, end if end > 0 else 1.0, nodes, spans, requested, allocatable, resources,
                   windows, tl.pending_over_time(windows), preemptions(recorder))
        for h in recorder.pods.values():
            name, value = pod_class(h.obj)
            view.classes[tl.pod_key(h.obj)] = name if name == f"priority {value}" else f"{name} ({value})"
        return view


# ---- public ---------------------------------------------------------------------------------------------


def write_report(path: str, runs: list[tuple[str, SimResult]], title: str, notes: list[str] | None = None) -> None:
    """Write the HTML report of `runs` (label, result): one section each, and a side-by-side summary
    when there are several. `notes` are shown under the title (what was compared, assumptions)."""
    views = [RunView.of(label, result) for label, result in runs]
    body = [f"<h1>{_e(title)}</h1>"]
    body += [f"<p class='note'>{_e(n)}</p>" for n in notes or []]
    if len(views) > 1:
        body.append(_side_by_side(views))
        body.append("<nav>" + " · ".join(f"<a href='#run-{i}'>{_e(v.label)}</a>" for i, v in enumerate(views))
                    + "</nav>")
    body += [_run_section(i, v) for i, v in enumerate(views)]
    Path(path).write_text(_PAGE.format(title=_e(title), style=_STYLE, body="\n".join(body)), encoding="utf-8")


def save_utilisation_plot(result: SimResult, path: str) -> None:
    """Cluster utilisation over virtual time as an image; the format follows the suffix (.png, .svg)."""
    view = RunView.of(result.scenario.name, result, pending=False)
    fig = plots.utilisation_figure(view.requested, view.allocatable, view.resources, view.horizon,
                                      title=f"{result.scenario.name}: requested / allocatable")
    fig.savefig(path, dpi=130, bbox_inches="tight")


# ---- one run ----------------------------------------------------------------------------------------------


def _run_section(index: int, v: RunView) -> str:
    parts = [f"<section id='run-{index}'><h2>{_e(v.label)}</h2>", _summary(v)]
    parts.append(_figure(plots.utilisation_figure(v.requested, v.allocatable, v.resources, v.horizon),
                         "utilisation", _utilisation_caption(v)))
    parts.append(_timeline(v))
    parts.append(_pending(v))
    parts.append(_removals(v))
    parts.append(_still_pending(v))
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _phases(v: RunView) -> Counter[str]:
    """Pods by what they are at the end: their phase, or Deleted (why) for those removed."""
    pods = v.result.recorder.pods.values()
    return Counter(("Deleted" if h.reason in (None, "Deleted") else f"Deleted ({h.reason})") if h.deleted
                   else (h.obj.get("status") or {}).get("phase") or "Pending" for h in pods)


def _summary_rows(v: RunView) -> list[tuple[str, str]]:
    result, recorder = v.result, v.result.recorder
    days = f" ({v.end / 86400:.1f} days)" if v.end >= 2 * 86400 else ""
    rows = [("scenario", result.scenario.name), ("virtual time", f"0 to {format_duration(v.end)}{days}"),
            ("nodes", f"{len(v.nodes):,}"), ("pods", f"{len(recorder.pods):,}")]
    rows += [(f"  {phase}", f"{n:,}") for phase, n in sorted(_phases(v).items(), key=lambda kv: (-kv[1], kv[0]))]
    victims = sum(len(p["victims"]) for p in v.preemptions)
    rows.append(("preemptions", f"{len(v.preemptions):,} ({victims:,} victims)"))
    causes = Counter(d.cause for d in recorder.disruptions)
    rows.append(("removals of running pods", ", ".join(f"{c} {n:,}" for c, n in causes.most_common()) or "none"))
    evictions = result.recorder.evictions
    if evictions:
        refused = sum(1 for e in evictions if e["code"] != 200)
        rows.append(("Eviction API requests", f"{len(evictions):,} ({refused:,} refused)"))
    if recorder.rejected:
        rows.append(("refused by the API", f"{len(recorder.rejected):,}"))
    waits = [h.bound_at - h.created_at for h in recorder.pods.values() if h.bound_at is not None]
    if waits:
        waits.sort()
        rows.append(("time to bind (median / p99 / max)",
                     " / ".join(_when(waits[min(int(q * len(waits)), len(waits) - 1)]) for q in (0.5, 0.99))
                     + f" / {_when(waits[-1])}"))
    if result.expects:
        failed = sum(1 for e in result.expects if not e.ok)
        rows.append(("expectations", f"{len(result.expects) - failed} held, {failed} failed"))
    return rows


def _summary(v: RunView) -> str:
    table = _table(("", ""), _summary_rows(v), header=False, cls="summary")
    warnings = [str(w) for w in v.result.scenario.warnings] + v.result.recorder.warnings
    notes = "".join(f"<p class='warning'>warning: {_e(w)}</p>" for w in warnings[:20])
    if len(warnings) > 20:
        notes += f"<p class='warning'>... and {len(warnings) - 20} more warning(s)</p>"
    return table + notes


def _side_by_side(views: list[RunView]) -> str:
    rows: dict[str, list[str | None]] = {}
    for i, v in enumerate(views):
        for name, value in _summary_rows(v):
            rows.setdefault(name, [None] * len(views))[i] = value
    # a phase one run has no pod in counts 0 there; any other row it lacks does not apply to it
    table = [(k, *(x if x is not None else "0" if k.startswith("  ") else "-" for x in vals))
             for k, vals in rows.items()]
    return _table(("", *(v.label for v in views)), table, cls="summary")


def _utilisation_caption(v: RunView) -> str:
    if v.spans:
        return ("Requests of the pods bound to nodes, as a share of the nodes' allocatable, over virtual time "
                "(a pod counts from its binding until it ended or was deleted); DRA devices allocated to "
                "claims, as a share of those ResourceSlices publish, per driver.")
    return "No pod was bound to a node during the run."


def _timeline(v: RunView) -> str:
    by_node: dict[str, list[tl.PodSpan]] = defaultdict(list)
    for s in v.spans:
        by_node[s.node].append(s)
    names = sorted({n["metadata"]["name"] for n in v.nodes} | set(by_node), key=plots.natural_key)
    if not names:
        return "<h3>Pods per node</h3><p>No nodes.</p>"
    caption = "Each bar is a pod from its binding to its end (or the run's); pods running at once share the row."
    if len(names) > TIMELINE_NODES:
        removals = Counter(d.node for d in v.result.recorder.disruptions)
        busy = {n: sum(s.end - s.start for s in spans) for n, spans in by_node.items()}
        chosen = sorted(names, key=lambda n: (-removals[n], -len(by_node.get(n, ())), -busy.get(n, 0.0), n))
        names = sorted(chosen[:TIMELINE_NODES], key=plots.natural_key)
        caption = (f"Showing {TIMELINE_NODES} of {len(v.nodes):,} nodes: those where most pods were removed "
                   f"(preempted, evicted...), then those that ran the most pods. " + caption)
    shown = sum(len(by_node.get(n, ())) for n in names)
    fig = plots.node_timeline_figure(by_node, names, v.horizon, label_pods=shown <= LABELLED_PODS)
    return _figure(fig, "timeline", caption)


def _pending(v: RunView) -> str:
    if not v.windows:
        return "<h3>Pending pods</h3><p>No pod waited for a node.</p>"
    fig = plots.pending_figure(v.pending, v.horizon)
    pods_by_reason: dict[str, set[str]] = defaultdict(set)
    for w in v.windows:
        pods_by_reason[w.reason].add(w.key)
    waiting = {tl.pod_key(h.obj) for h in v.result.recorder.pods.values()
               if h.ended_at is None and h.bound_at is None}
    still = Counter(w.reason for w in v.windows if w.end >= v.end and w.key in waiting)
    rows = sorted(((r, f"{len(pods_by_reason[r]):,}", f"{int(v.pending[r].maximum()):,}",
                    _when(v.pending[r].mean(0.0, v.horizon) * v.horizon), f"{still[r]:,}")
                   for r in v.pending), key=lambda row: -v.pending[row[0]].mean(0.0, v.horizon))
    table = _table(("reason (FailedScheduling, node counts left out)", "pods", "peak at once", "pod-time waited",
                    "pending at the end"), rows)
    return _figure(fig, "pending", "Pods waiting for a node, by the reason of their latest failed attempt.") + table


def _removals(v: RunView) -> str:
    recorder = v.result.recorder
    parts = ["<h3>Preemptions and evictions</h3>"]
    if v.preemptions:
        pairs = [(p["preemptor"], victim["pod"], p) for p in v.preemptions for victim in p["victims"]]
        if len(pairs) <= POD_GRAPH_EDGES:
            edges = [plots.Edge(f"{a} ({v.classes.get(a, '')})", f"{b} ({v.classes.get(b, '')})",
                                f"{p['node']} @ {_when(p['time'])}") for a, b, p in pairs]
            fig = plots.graph_figure(edges, "Who preempted whom", "preemptor", "victim")
            caption = "An arrow per victim, labelled with the node and the time of the preemption."
        else:
            # highest priorities on top on both sides: preemption runs downwards, so arrows seldom cross
            ranked = sorted((-p["priority"], -victim["priority"], p["preemptor"], victim["pod"])
                             for p in v.preemptions for victim in p["victims"])
            edges = plots.count_edges((v.classes.get(a, a), v.classes.get(b, b)) for _, _, a, b in ranked)
            fig = plots.graph_figure(edges, "Who preempted whom, by priority class", "preemptors' class",
                                     "victims' class")
            caption = f"{len(pairs):,} victims of {len(v.preemptions):,} preemptions; arrows labelled with counts."
        parts.append(_figure(fig, "preemptions", caption))
        rows = [(_when(p["time"]), f"{p['preemptor']} ({p['priority']})", p["node"],
                 ", ".join(f"{x['pod']} ({x['priority']})" for x in p["victims"]), p["decidedBy"])
                for p in v.preemptions]
        parts.append(_table(("time", "preemptor", "node", "victims", "node chosen by"), rows))
    by_cause: dict[str, list[float]] = defaultdict(list)
    for d in recorder.disruptions:
        by_cause[d.cause].append(d.time)
    refused = [e["time"] for e in v.result.recorder.evictions if e["code"] != 200]
    if refused:
        by_cause["Eviction API refusals"] = refused
    if by_cause:
        parts.append(_figure(plots.removals_figure(by_cause, v.horizon), "removals",
                             "Every removal of a running (or bound) pod, by cause; refused Eviction API requests "
                             "on a row of their own."))
        rows = [(_when(d.time), d.pod, d.node or "-", d.cause, d.detail, d.replacement or "-")
                for d in recorder.disruptions]
        parts.append(_table(("time", "pod", "node", "cause", "detail", "replaced by"), rows))
    if len(parts) == 1:
        parts.append("<p>No pod was preempted or evicted.</p>")
    return "\n".join(parts)


def _still_pending(v: RunView) -> str:
    """Each pod still waiting at the end: its latest FailedScheduling message and, when the run kept
    decision records for it (--explain), each node's verdict in its last attempt."""
    recorder = v.result.recorder
    pending = [h for h in recorder.pods.values() if h.ended_at is None and h.bound_at is None]
    if not pending:
        return "<h3>Pods still pending</h3><p>None: every pod got a node or was removed.</p>"
    last: dict[str, str] = {}
    for e in recorder.events:
        if e.reason == "FailedScheduling" and e.object.startswith("Pod/"):
            last[e.object[4:]] = e.message
    records = decision_records(v.result.cluster)
    out = [f"<h3>Pods still pending ({len(pending):,})</h3>"]
    if not any(records.get(tl.pod_key(h.obj)) for h in pending):
        out.append("<p class='note'>Per-node reasons come from decision records: run with "
                   "<code>--explain NS/POD</code> (or <code>'*'</code>) to keep them.</p>")
    for h in pending[:TABLE_ROWS]:
        key = tl.pod_key(h.obj)
        cond = get_condition(h.obj, "PodScheduled") or {}
        message = last.get(key) or cond.get("message") or "no scheduling attempt yet"
        unfolded = " open" if len(pending) <= OPEN_DETAILS else ""
        out.append(f"<details class='pending'{unfolded}><summary><b>{_e(key)}</b> ({_e(v.classes.get(key, ''))}), "
                   f"pending since {_when(h.created_at)}: {_e(message)}</summary>")
        recs = records.get(key)
        out.append(_verdicts(recs[-1]) if recs else "<p class='note'>No per-node record of its attempts "
                   f"(<code>--explain {_e(key)}</code> keeps one).</p>")
        out.append("</details>")
    if len(pending) > TABLE_ROWS:
        out.append(f"<p class='note'>... and {len(pending) - TABLE_ROWS:,} more pending pod(s).</p>")
    return "\n".join(out)


def _verdicts(rec: DecisionRecord) -> str:
    """The nodes of one attempt grouped by verdict: the plugin and reasons that rejected them."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[str]] = defaultdict(list)
    for node, (plugin, code, reasons) in rec.verdicts.items():
        groups[(plugin, code, tuple(reasons))].append(node)
    rows = []
    for (plugin, code, reasons), nodes in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        more = len(nodes) - NODES_NAMED
        named = ", ".join(nodes[:NODES_NAMED]) + (f" and {more} more" if more > 0 else "")
        rows.append((f"{len(nodes):,}", plugin, code, "; ".join(reasons), named))
    if rec.feasible:
        rows.append((f"{len(rec.feasible):,}", "", "feasible", "", ", ".join(rec.feasible[:NODES_NAMED])))
    head = f"<p>Attempt {rec.attempt} at {_when(rec.time)}: {_e(rec.result)}"
    head += f"; PreFilter: {_e(rec.prefilter)}" if rec.prefilter else ""
    head += f"; {rec.not_checked} node(s) not checked" if rec.not_checked else ""
    return head + "</p>" + _table(("nodes", "plugin", "verdict", "reason", "which"), rows)


# ---- HTML ----------------------------------------------------------------------------------------------------


def _when(seconds: float) -> str:
    """A time or duration as people read it: milliseconds only under a minute, days beyond two."""
    if seconds >= 2 * 86400:
        days, rest = divmod(round(seconds / 60), 24 * 60)
        return f"{days}d{rest // 60}h{rest % 60:02d}m"
    return format_duration(round(seconds) if seconds >= 60 else round(seconds, 3))


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _figure(fig: Figure, name: str, caption: str) -> str:
    svg = plots.to_svg(fig)
    return f"<figure class='plot {name}'>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]], header: bool = True, cls: str = "") -> str:
    shown = rows[:TABLE_ROWS]
    out = [f"<details><summary>{len(rows):,} rows</summary>"] if len(rows) > FOLDED_ROWS else []
    out.append(f"<table class='{cls}'>")
    if header:
        out.append("<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>")
    out += ["<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in shown]
    out.append("</table>")
    if len(rows) > len(shown):
        out.append(f"<p class='note'>... and {len(rows) - len(shown):,} more row(s).</p>")
    if len(rows) > FOLDED_ROWS:
        out.append("</details>")
    return "".join(out)


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; background: #fff; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #4f81bd; padding-bottom: .2em; margin-top: 2em; }
h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f2f4f8; }
table.summary td:first-child { font-weight: 600; white-space: pre; }
figure.plot { margin: 1em 0; }
figure.plot svg { max-width: 100%; height: auto; }
figcaption, .note { color: #555; font-size: .9em; }
.warning { color: #9a6700; font-size: .9em; }
details.pending { margin: .3em 0; } details.pending summary { cursor: pointer; }
nav { margin: 1em 0; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{style}</style></head>
<body>
{body}
</body></html>
"""
