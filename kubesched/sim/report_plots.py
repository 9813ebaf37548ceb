"""The report's figures, drawn with matplotlib's object-oriented API on the Agg backend: no pyplot
state, no display, static SVG (inlined into the page) or PNG.

Importing this module imports matplotlib (about half a second), which is why only the report does.
"""

from __future__ import annotations

import heapq
import itertools
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from io import StringIO

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from kubesched.sim.timeline import PodSpan, Step  # noqa: E402

WIDTH = 11.0  # inches; the page scales the SVG to its column
LANE = 0.16  # inches per pod running at once on a node in the per-node timeline
MAX_LANES = 6  # a node's band grows up to this many lanes, then they get thinner
MAX_HEIGHT = 16.0  # inches of the per-node timeline's plot at most; beyond, every band is squeezed
_salt = itertools.count()

OUTCOME_COLOURS = {
    "Running": "#2e8b57", "Succeeded": "#4f81bd", "Pending": "#9e9e9e", "Failed": "#8e44ad",
    "Preempted": "#d62728", "Evicted": "#ff7f0e", "EvictionAPI": "#e6a100", "Drained": "#bcbd22",
    "Descheduled": "#17becf", "TaintManagerEviction": "#8c564b", "NodeLost": "#7f7f7f",
}
OTHER_OUTCOME = "#b0b0b0"
RESOURCE_COLOURS = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def time_unit(span: float) -> tuple[float, str]:
    """The unit a time axis of this span reads best in: (seconds per unit, its name)."""
    for seconds, name, up_to in ((1, "s", 300), (60, "min", 5 * 3600), (3600, "h", 5 * 86400)):
        if span <= up_to:
            return seconds, name
    return 86400, "days"


def to_svg(fig: Figure) -> str:
    """The figure as an <svg> element to inline. Text stays text (the browser's sans-serif font,
    nothing fetched) and each figure gets its own id salt, so ids do not clash across figures."""
    out = StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"kubesched-{next(_salt)}"}):
        fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg"):]


def _extend(step: Step, horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """Points to draw a step function with steps-post up to `horizon`, without the drop at the end
    where the pods still running stop being counted."""
    keep = step.times < horizon
    times, values = step.times[keep], step.values[keep]
    return np.append(times, horizon), np.append(values, values[-1] if len(values) else 0.0)


# ---- utilisation -------------------------------------------------------------------------------------


def _number(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 or x == int(x) else f"{x:.3g}"


def human_amount(name: str, amount: float) -> str:
    """A cluster total in the unit people size clusters in: cores, binary bytes, GPUs."""
    if name == "cpu":
        return f"{_number(amount / 1000)} cores"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for unit, size in (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= size:
                return f"{_number(amount / size)}{unit}"
        return _number(amount)
    if name.endswith(" devices"):
        return f"{_number(amount)} devices"
    return f"{_number(amount)} GPUs" if name.endswith("gpu") else _number(amount)


def utilisation_figure(requested: dict[str, Step], allocatable: dict[str, Step], resources: list[str],
                       horizon: float, title: str = "Cluster utilisation (requested / allocatable)") -> Figure:
    scale, unit = time_unit(horizon)
    fig = Figure(figsize=(WIDTH, 3.8))
    ax = fig.add_subplot()
    for i, name in enumerate(resources):
        alloc = allocatable.get(name)
        if alloc is None or alloc.maximum() <= 0:
            continue  # asked for, offered nowhere: every pod asking for it stays pending
        ratio = requested[name].ratio(alloc)
        t, v = _extend(ratio, horizon)
        mean = ratio.mean(0.0, horizon) * 100
        label = (f"{name}: peak {ratio.maximum() * 100:.0f}%, mean {mean:.0f}% "
                 f"of {human_amount(name, alloc.maximum())}")
        ax.plot(t / scale, v * 100, drawstyle="steps-post", linewidth=1.4,
                color=RESOURCE_COLOURS[i % len(RESOURCE_COLOURS)], label=label)
    ax.set_xlim(0, horizon / scale)
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of allocatable")
    ax.set_xlabel(f"virtual time ({unit})")
    ax.set_title(title, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


# ---- pending pods --------------------------------------------------------------------------------------


def pending_figure(by_reason: dict[str, Step], horizon: float, top: int = 6) -> Figure:
    """Pending pods stacked by reason; the reasons that kept fewest pod-seconds waiting fold into one."""
    scale, unit = time_unit(horizon)
    weight = {r: s.mean(0.0, horizon) for r, s in by_reason.items()}
    ranked = sorted(by_reason, key=lambda r: (-weight[r], r))
    shown, rest = ranked[:top], ranked[top:]
    series = [(r, [by_reason[r]]) for r in shown]
    if rest:
        series.append((f"{len(rest)} other reason(s)", [by_reason[r] for r in rest]))
    grid = np.unique(np.concatenate([s.times for s in by_reason.values()] + [np.array([horizon])]))
    fig = Figure(figsize=(WIDTH, 3.0))
    ax = fig.add_subplot()
    base = np.zeros(len(grid))
    colours = matplotlib.colormaps["tab10"]
    for i, (label, steps) in enumerate(series):
        values = sum(s.values[np.maximum(np.searchsorted(s.times, grid, side="right") - 1, 0)] for s in steps)
        ax.fill_between(grid / scale, base, base + values, step="post", color=colours(i % 10), alpha=0.85,
                        linewidth=0, label=textwrap.shorten(label, 90))
        base = base + values
    ax.set_xlim(0, horizon / scale)
    ax.set_ylim(0, max(base.max() * 1.1, 1))
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("pending pods")
    ax.set_xlabel(f"virtual time ({unit})")
    ax.set_title("Pending pods by FailedScheduling reason", loc="left")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.18), fontsize=8, frameon=False, ncol=1)
    return fig


# ---- per-node timeline ----------------------------------------------------------------------------------


def _lanes(spans: list[PodSpan]) -> tuple[list[int], int]:
    """A lane for each span (in `spans` order, sorted by start) so that none overlaps another in its
    lane: the lowest lane free at its start. Returns the lanes and how many were needed."""
    busy: list[tuple[float, int]] = []
    free: list[int] = []
    lanes, used = [], 0
    for s in spans:
        while busy and busy[0][0] <= s.start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else used
        used = max(used, lane + 1)
        heapq.heappush(busy, (s.end, lane))
        lanes.append(lane)
    return lanes, used


def natural_key(name: str) -> list[object]:
    """node-2 before node-10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def node_timeline_figure(spans_by_node: dict[str, list[PodSpan]], nodes: list[str], horizon: float,
                         label_pods: bool) -> Figure:
    """One band per node, as tall as the most pods it ran at once (up to a cap): they share it in
    lanes. Each bar is a pod from its binding to its end, coloured by what became of it."""
    scale, unit = time_unit(horizon)
    rects: dict[str, list[np.ndarray]] = defaultdict(list)
    labels = []
    ticks, centres = [], []
    top = 0.0  # in inches of the plot at full size
    for node in nodes:
        spans = sorted(spans_by_node.get(node, []), key=lambda s: (s.start, s.end))
        lanes, count = _lanes(spans)
        band = LANE * min(max(count, 1), MAX_LANES) + 0.1
        height = (band - 0.1) / max(count, 1)
        ticks.append(f"{node} ({len(spans)} pod{'s' if len(spans) != 1 else ''})")
        centres.append(top + band / 2)
        for s, lane in zip(spans, lanes, strict=True):
            y0, y1 = top + 0.05 + lane * height, top + 0.05 + (lane + 0.88) * height
            x0, x1 = s.start / scale, s.end / scale
            rects[s.outcome].append(np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]))
            if label_pods and height >= LANE:
                labels.append((x0, (y0 + y1) / 2, s.key.split("/", 1)[1]))
        top += band
    fig = Figure(figsize=(WIDTH, 1.0 + min(max(top, 0.8), MAX_HEIGHT)))
    ax = fig.add_subplot()
    for outcome, verts in sorted(rects.items()):
        colour = OUTCOME_COLOURS.get(outcome, OTHER_OUTCOME)
        ax.add_collection(PolyCollection(verts, facecolors=colour, edgecolors=colour, linewidths=0.4))
    for x, y, text in labels:
        ax.text(x + horizon / scale * 0.004, y, text, va="center", ha="left", fontsize=7, color="white",
                clip_on=True)
    ax.set_xlim(0, horizon / scale)
    ax.set_ylim(top, 0)
    ax.set_yticks(centres, ticks, fontsize=8)
    ax.set_xlabel(f"virtual time ({unit})")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Pods per node, from binding to end", loc="left")
    handles = [Patch(color=OUTCOME_COLOURS.get(o, OTHER_OUTCOME), label=f"{o} ({len(v)})")
               for o, v in sorted(rects.items())]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


# ---- preemptions and evictions --------------------------------------------------------------------------


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str
    weight: int = 1


def graph_figure(edges: list[Edge], title: str, left: str, right: str) -> Figure:
    """A two-column graph: who (left) removed whom (right), an arrow per edge, thicker when it
    stands for more removals. Both columns keep the order the edges first name them in."""
    sources = list(dict.fromkeys(e.source for e in edges))
    targets = list(dict.fromkeys(e.target for e in edges))
    rows = max(len(sources), len(targets), 2)
    fig = Figure(figsize=(WIDTH, 0.9 + 0.38 * rows))
    ax = fig.add_subplot()
    ax.set_axis_off()

    def place(names: list[str]) -> dict[str, float]:
        gap = rows / max(len(names), 1)
        return {n: rows - (i + 0.5) * gap for i, n in enumerate(names)}

    ys, yt = place(sources), place(targets)
    heaviest = max(e.weight for e in edges)
    box = {"boxstyle": "round,pad=0.3", "linewidth": 0.8}
    for e in edges:
        width = 0.8 + 3.2 * np.log1p(e.weight) / np.log1p(heaviest) if heaviest > 1 else 1.2
        ax.annotate("", xy=(0.72, yt[e.target]), xytext=(0.28, ys[e.source]),
                    arrowprops={"arrowstyle": "-|>", "color": "#d62728", "alpha": 0.7, "linewidth": width,
                                "shrinkA": 2, "shrinkB": 2})
        mid = (0.5, (ys[e.source] + yt[e.target]) / 2)
        ax.text(*mid, e.label, ha="center", va="center", fontsize=7,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    for name, y in ys.items():
        ax.text(0.27, y, textwrap.shorten(name, 48), ha="right", va="center", fontsize=8,
                bbox={**box, "facecolor": "#fde2e2", "edgecolor": "#d62728"})
    for name, y in yt.items():
        ax.text(0.73, y, textwrap.shorten(name, 48), ha="left", va="center", fontsize=8,
                bbox={**box, "facecolor": "#eeeeee", "edgecolor": "#555555"})
    ax.text(0.27, rows + 0.35, left, ha="right", fontsize=9, weight="bold")
    ax.text(0.73, rows + 0.35, right, ha="left", fontsize=9, weight="bold")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.2, rows + 0.8)
    ax.set_title(title, loc="left")
    return fig


def removals_figure(by_cause: dict[str, list[float]], horizon: float) -> Figure:
    """Each removal of a running pod as a mark on its cause's row, over time."""
    scale, unit = time_unit(horizon)
    causes = sorted(by_cause, key=lambda c: (-len(by_cause[c]), c))
    fig = Figure(figsize=(WIDTH, 1.1 + 0.45 * len(causes)))
    ax = fig.add_subplot()
    for row, cause in enumerate(causes):
        times = np.asarray(by_cause[cause]) / scale
        ax.scatter(times, np.full(len(times), row), marker="D", s=60, alpha=0.75, linewidths=0.5,
                   color=OUTCOME_COLOURS.get(cause, OTHER_OUTCOME), edgecolors="black")
    ax.set_yticks(range(len(causes)), [f"{c} ({len(by_cause[c])})" for c in causes], fontsize=8)
    ax.set_ylim(len(causes) - 0.5, -0.5)
    ax.set_xlim(0, horizon / scale)
    ax.set_xlabel(f"virtual time ({unit})")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Removals of running pods by cause", loc="left")
    return fig


def count_edges(pairs: Iterable[tuple[str, str]]) -> list[Edge]:
    """Aggregated edges: one per (source, target) in order of first appearance, labelled with how many
    removals it stands for."""
    return [Edge(s, t, f"{n:,}", n) for (s, t), n in Counter(pairs).items()]
