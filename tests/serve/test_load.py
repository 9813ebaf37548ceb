"""50 concurrent clients, 10,000 writes and watches on loopback: no watch event lost or doubled."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bench.serve_load import nodes, run_load, run_pod_load
from tests.serve.harness import Served


def test_no_watch_event_lost_or_duplicated_under_load(served: Served) -> None:
    result = asyncio.run(run_load(served.url, clients=50, writes=10_000, watchers=5))
    assert not result.errors, result.errors[:5]
    assert result.writes == 10_000
    assert result.missing == 0
    assert result.duplicated == 0
    assert result.out_of_order == 0


def test_created_pods_are_bound_and_run_and_every_watcher_sees_each_event_once(tmp_path: Path) -> None:
    cluster = tmp_path / "nodes.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes(5)}))
    served = Served(tmp_path, args=[str(cluster)]).start()
    try:
        result = asyncio.run(run_pod_load(served.url, pods=300, writers=16, watchers=3))
    finally:
        served.kill()
    assert not result.errors, result.errors[:5]
    assert result.created == 300
    # Each pod: created, bound, started (its Running status) at the least.
    assert result.events >= 3 * 300
    assert (result.missing, result.duplicated, result.out_of_order, result.diverged) == (0, 0, 0, 0)
