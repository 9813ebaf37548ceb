"""Jumping over idle housekeeping (runtime.clock): a run whose only work left is periodic retries
that change nothing reaches a far end in bounded time, and leaves every object as ticking does."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from kubesched.runtime.clock import IDLE_JUMP, VirtualClock
from kubesched.sim.runner import build_cluster, load

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SCENARIO = Path(__file__).parent.parent / "scenarios" / "long-horizon-idle-jump.yaml"


def _state(until: float, jump: bool) -> dict[str, Any]:
    """Every object but the Events at `until`, without the resourceVersions and uids that Events use up."""
    scenario = load([str(SCENARIO)], until=until)
    scenario.expects = []
    cluster = build_cluster(scenario)
    if not jump:
        cluster.clock.changes = None
    cluster.run(scenario.until)
    found = {}
    for kind in cluster.store.kinds():
        if kind == "Event":
            continue
        for obj in cluster.store.list(kind):
            meta = {k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion", "managedFields")}
            found[kind, meta.get("namespace"), meta["name"]] = UID.sub("uid", json.dumps({**obj, "metadata": meta}))
    return found


def test_jumping_leaves_every_object_as_ticking_does() -> None:
    for until in (3 * IDLE_JUMP + 1234.0, 30 * 24 * 3600.0):  # jumps within the first year
        assert _state(until, jump=True) == _state(until, jump=False)


def test_a_century_of_idle_retries_ends_in_bounded_time() -> None:
    start = time.process_time()
    _state(876000 * 3600.0, jump=True)
    assert time.process_time() - start < 30


def test_a_jump_stops_short_of_a_fixed_timer_and_keeps_periods_in_phase() -> None:
    clock = VirtualClock()
    clock.changes = lambda: 0
    ticks: list[float] = []
    fired: list[float] = []

    def tick() -> None:
        ticks.append(clock.now())
        clock.call_at(clock.now() + 30, tick, daemon=True)

    clock.call_at(0, tick, daemon=True)
    clock.call_at(10 * IDLE_JUMP + 5, lambda: fired.append(clock.now()), daemon=True, fixed=True)
    clock.run(until=20 * IDLE_JUMP)
    assert fired == [10 * IDLE_JUMP + 5]
    assert all(t % 30 == 0 for t in ticks)
    assert len(ticks) < 20 * IDLE_JUMP / 30 / 2  # most of the ticks were jumped over
