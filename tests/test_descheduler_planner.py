"""`kubesched deschedule` (the dry-run planner) against the periodic run it predicts.

For every descheduler scenario: the plan is the first pass of `simulate` on the same input,
and where the plan says an evicted pod's replacement would likely land is where the scheduler
really puts it in that run (for the replacements scheduled at that instant).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.descheduler.framework import EvictionAttempt
from kubesched.sim.planner import plan
from kubesched.sim.runner import load, simulate

SCENARIOS = sorted(Path(__file__).parent.glob("scenarios/descheduler-*.yaml"))


def key(a: EvictionAttempt) -> tuple:
    return (a.pod, a.node, a.strategy, a.result, a.code, a.pdb, a.landing, a.message)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_plan_is_the_first_pass_of_the_periodic_run(path: Path) -> None:
    planned = plan(load([str(path)]))
    result = simulate(load([str(path)]))
    assert result.cluster.descheduler is not None
    first = result.cluster.recorder.passes[0]
    assert [key(a) for a in planned.first_pass.attempts] == [key(a) for a in first.attempts]
    assert planned.first_pass.errors == first.errors
    # In every pass, each predicted landing is where the replacement went, for replacements the
    # run created and placed at that instant.
    cluster = result.cluster
    checked = 0
    for p in result.cluster.recorder.passes:
        for a in p.attempts:
            d = next((d for d in cluster.recorder.disruptions if d.uid == a.uid), None)
            if a.result != "Evicted" or d is None or d.replacement is None:
                continue
            ns, name = d.replacement.split("/")
            placed = cluster.recorder.pod(ns, name)
            assert placed is not None
            if placed.obj["metadata"]["creationTimestamp"] != cluster.api.timestamp(p.time):
                continue
            assert placed.obj["spec"].get("nodeName") == a.landing, \
                f"{a.pod}: planned {a.landing}, replacement {d.replacement} went to {placed.obj['spec'].get('nodeName')}"
            checked += 1
    assert checked or not any(a.result == "Evicted" and a.landing for p in cluster.recorder.passes
                              for a in p.attempts)


def test_planner_changes_nothing_in_its_input(tmp_path: Path) -> None:
    source = next(p for p in SCENARIOS if "nodes-added" in p.name) if any(
        "nodes-added" in p.name for p in SCENARIOS) else SCENARIOS[0]
    copy = tmp_path / source.name
    copy.write_text(source.read_text())
    before = copy.read_text()
    out = subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "deschedule", str(copy), "--policy", str(copy),
                          "-o", "json"], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert {"nodes", "errors", "plan"} <= set(data)
    assert copy.read_text() == before
