"""KubeletConfiguration eviction settings: defaults, replacement vs merge, and what is refused."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubesched.kubelet.config import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    ConfigError,
    EvictionConfig,
    Threshold,
    parse,
    problems,
)


def signals(config: EvictionConfig) -> dict[str, Threshold]:
    return {t.signal + ("" if t.hard else "/soft"): t for t in config.thresholds}


def test_defaults_are_the_five_linux_hard_thresholds_and_5m() -> None:
    config = parse(None)
    got = signals(config)
    assert set(got) == {"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
                        "imagefs.inodesFree", ALLOCATABLE_MEMORY_AVAILABLE}
    assert got["memory.available"].value.quantity == 100 * 2**20
    assert got["nodefs.available"].value.amount(1000) == 100
    assert config.pressure_transition_period == 300 and config.max_pod_grace_period == 0


def test_eviction_hard_replaces_the_defaults_unless_merged() -> None:
    assert set(signals(parse({"evictionHard": {"pid.available": "100"}}))) == {"pid.available"}
    merged = signals(parse({"evictionHard": {"pid.available": "100", "memory.available": "1Gi"},
                            "mergeDefaultEvictionSettings": True}))
    assert merged["memory.available"].value.quantity == 2**30
    assert "nodefs.available" in merged and "pid.available" in merged
    assert parse({"evictionHard": {}}).thresholds == []


def test_zero_and_hundred_percent_switch_a_threshold_off() -> None:
    assert signals(parse({"evictionHard": {"memory.available": "0%", "nodefs.available": "100%"}})) == {}


def test_percentages_are_float32_like_the_kubelet() -> None:
    t = signals(parse({"evictionHard": {"nodefs.available": "10%"}}))["nodefs.available"]
    assert t.value.amount(20 * 2**30) == 2147483680  # not 2147483648: float32(0.1) is a bit more


def test_soft_thresholds_take_their_grace_period_and_zero_makes_them_hard() -> None:
    config = parse({"evictionHard": {}, "evictionSoft": {"memory.available": "1Gi", "nodefs.available": "5Gi"},
                    "evictionSoftGracePeriod": {"memory.available": "1m30s", "nodefs.available": "0s"},
                    "evictionMinimumReclaim": {"memory.available": "500Mi"}})
    got = signals(config)
    assert got["memory.available/soft"].grace_period == 90
    assert got["memory.available/soft"].min_reclaim.quantity == Fraction(500 * 2**20)
    assert got["nodefs.available"].hard  # isHardEvictionThreshold: grace period 0
    assert ALLOCATABLE_MEMORY_AVAILABLE not in got  # only hard memory thresholds apply to the pods' cgroup


def test_enforce_node_allocatable_without_pods_drops_the_pods_cgroup_threshold() -> None:
    assert ALLOCATABLE_MEMORY_AVAILABLE not in signals(parse({"enforceNodeAllocatable": ["none"]}))


def test_transition_period_zero_means_default() -> None:
    assert parse({"evictionPressureTransitionPeriod": "0s"}).pressure_transition_period == 300
    assert parse({"evictionPressureTransitionPeriod": "30s"}).pressure_transition_period == 30


@pytest.mark.parametrize(("config", "path", "message"), [
    ({"evictionHard": {"memory.avail": "1Gi"}}, "evictionHard.memory.avail",
     "unsupported eviction signal memory.avail"),
    ({"evictionHard": {"memory.available": "0"}}, "evictionHard.memory.available",
     "eviction threshold memory.available must be positive: 0"),
    ({"evictionHard": {"memory.available": "-5%"}}, "evictionHard.memory.available",
     "eviction percentage threshold memory.available must be >= 0%: -5%"),
    ({"evictionSoft": {"memory.available": "1Gi"}}, "evictionSoftGracePeriod.memory.available",
     "grace period must be specified for the soft eviction threshold memory.available"),
    ({"evictionSoftGracePeriod": {"memory.available": "-1s"}}, "evictionSoftGracePeriod.memory.available",
     "invalid eviction grace period specified: -1s, must be a positive value"),
    ({"evictionMinimumReclaim": {"memory.available": "0%"}}, "evictionMinimumReclaim.memory.available",
     "eviction percentage minimum reclaim memory.available must be positive: 0%"),
    ({"enforceNodeAllocatable": ["none", "pods"]}, "enforceNodeAllocatable",
     'invalid combination of options: "none" cannot be combined with other options'),
])
def test_refused_settings(config: dict, path: str, message: str) -> None:
    assert problems(config) == [(path, message)]
    with pytest.raises(ConfigError) as e:
        parse(config)
    assert (e.value.path, e.value.message) == (path, message)


def test_all_problems_are_reported_together() -> None:
    found = problems({"evictionHard": {"x": "1", "memory.available": "1q"}, "evictionSoft": {"pid.available": "5"}})
    assert [p for p, _ in found] == ["evictionHard.x", "evictionHard.memory.available",
                                     "evictionSoftGracePeriod.pid.available"]
