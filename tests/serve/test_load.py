"""50 concurrent clients, 10,000 writes and watches on loopback: no watch event lost or doubled."""

from __future__ import annotations

import asyncio

from bench.serve_load import run_load
from tests.serve.harness import Served


def test_no_watch_event_lost_or_duplicated_under_load(served: Served) -> None:
    result = asyncio.run(run_load(served.url, clients=50, writes=10_000, watchers=5))
    assert not result.errors, result.errors[:5]
    assert result.writes == 10_000
    assert result.missing == 0
    assert result.duplicated == 0
    assert result.out_of_order == 0
