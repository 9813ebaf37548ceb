"""numFeasibleNodesToFind (schedule_one.go) and kubernetes.io "Scheduler Performance Tuning" percentageOfNodesToScore rules."""

from __future__ import annotations

import pytest

from kubesched.scheduler.scheduler import num_feasible_nodes_to_find


@pytest.mark.parametrize(("percentage", "nodes", "expected"), [
    (None, 50, 50),  # fewer than 100 nodes: all of them
    (None, 99, 99),
    (None, 100, 100),  # adaptive: 50 - 100/125 = 50% -> 50, raised to the floor of 100
    (None, 1000, 420),  # 50 - 8 = 42%
    (None, 5000, 500),  # 50 - 40 = 10% (seed: "10% for a 5000-node cluster")
    (None, 10000, 500),  # 50 - 80 < 5: the 5% floor
    (0, 5000, 500),  # 0 means the compiled-in default
    (30, 1000, 300),
    (1, 1000, 100),  # at least 100 nodes
    (100, 5000, 5000),
])
def test_num_feasible_nodes_to_find(percentage: int | None, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected
