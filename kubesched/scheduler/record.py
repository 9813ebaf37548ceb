"""Decision records: why a scheduling attempt chose a node, or why it could not.

The real scheduler only reports reasons aggregated over nodes; a record keeps the per-node
verdicts (which plugin rejected the node and why) and every plugin's raw, normalised and
weighted score, so `--explain` can answer "why not this node?".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class ScoreDetail:
    plugin: str
    weight: int
    raw: np.ndarray
    normalized: np.ndarray

    def to_json(self, nodes: list[str]) -> dict[str, Any]:
        return {"plugin": self.plugin, "weight": self.weight,
                "nodes": {n: {"raw": int(r), "normalized": int(s), "weighted": int(s) * self.weight}
                          for n, r, s in zip(nodes, self.raw, self.normalized, strict=True)}}


@dataclass
class DecisionRecord:
    pod: str
    time: float
    attempt: int
    profile: str
    num_nodes: int
    verdicts: dict[str, tuple[str, str, list[str]]] = field(default_factory=dict)  # node -> (plugin, code, reasons)
    details: dict[str, str] = field(default_factory=dict)  # node -> what its rejecting plugin adds (explain)
    feasible: list[str] = field(default_factory=list)
    not_checked: int = 0  # nodes never filtered: enough feasible nodes were found first
    nominated_first: bool = False  # the pod's nominated node passed on its own, nothing else was tried
    prefilter: str | None = None
    skipped: list[str] = field(default_factory=list)
    scores: list[ScoreDetail] = field(default_factory=list)
    totals: np.ndarray | None = None
    chosen: str | None = None
    result: str = ""  # "Scheduled", "Unschedulable", "Error", ...
    message: str = ""
    postfilter: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pod": self.pod, "time": self.time, "attempt": self.attempt, "profile": self.profile,
            "result": self.result, "message": self.message, "nodeName": self.chosen,
            "numNodes": self.num_nodes, "notChecked": self.not_checked, "nominatedFirst": self.nominated_first,
            "filter": [{"node": n, "plugin": p, "code": c, "reasons": r}
                       | ({"detail": self.details[n]} if n in self.details else {})
                       for n, (p, c, r) in self.verdicts.items()]
            + [{"node": n, "plugin": None, "code": "Success", "reasons": []} for n in self.feasible],
        }
        if self.prefilter:
            out["preFilter"] = self.prefilter
        if self.skipped:
            out["skippedPlugins"] = self.skipped
        if self.scores:
            out["score"] = [d.to_json(self.feasible) for d in self.scores]
            assert self.totals is not None
            out["totals"] = {n: int(t) for n, t in zip(self.feasible, self.totals, strict=True)}
        if self.postfilter is not None:
            out["postFilter"] = self.postfilter
        return out
