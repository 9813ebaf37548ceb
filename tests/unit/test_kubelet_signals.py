"""Signals, thresholds met, ranking and the eviction message, against upstream's helpers.go."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubesched.kubelet.config import Threshold, ThresholdValue, parse
from kubesched.kubelet.signals import (
    Observation,
    by_eviction_priority,
    canonical,
    eviction_message,
    observe,
    quantity_string,
    rank,
    thresholds_met,
)
from kubesched.kubelet.usage import NodeResources, PodUsage, pod_usage

GI = 2**30
MI = 2**20


@pytest.mark.parametrize(("value", "fmt", "text"), [
    (0, "BinarySI", "0"), (512, "BinarySI", "512"), (1536, "BinarySI", "1536"), (24 * MI, "BinarySI", "24Mi"),
    (1536 * MI, "BinarySI", "1536Mi"), (-500 * MI, "BinarySI", "-500Mi"), (2147483680, "BinarySI", "2147483680"),
    (5000, "DecimalSI", "5k"), (12345, "DecimalSI", "12345"), (-500, "DecimalSI", "-500"),
    (Fraction(3, 2), "DecimalSI", "1500m"), (10**9, "DecimalExponent", "1e9"),
])
def test_canonical_matches_quantity_string(value: int, fmt: str, text: str) -> None:
    assert canonical(value, fmt) == text


@pytest.mark.parametrize(("raw", "text"), [("100Mi", "100Mi"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"),
                                          ("500M", "500M"), ("1000", "1k"), ("1e3", "1e3"), ("0.5", "500m")])
def test_quantity_string_keeps_the_written_format(raw: str, text: str) -> None:
    assert quantity_string(raw) == text


def running(name: str, requests: dict | None = None, usage: str | None = None, priority: int = 0,
            seq: int = 1, **extra: str) -> PodUsage:
    annotations = {f"sim.kubesched.io/usage-{k}": v for k, v in extra.items()}
    if usage is not None:
        annotations["sim.kubesched.io/usage-memory"] = usage
    pod = {"metadata": {"name": name, "uid": name, "annotations": annotations},
           "spec": {"priority": priority, "containers": [{"name": "c", "resources": {"requests": requests or {}}}]}}
    return pod_usage(pod, "n1", seq)


def test_memory_ranking_usage_above_requests_then_priority_then_excess() -> None:
    pods = [running("guaranteed-low", {"memory": "1Gi"}, "1Gi", 0, 1),
            running("over-high", {"memory": "1Gi"}, "3Gi", 100, 2),
            running("besteffort-high", None, "1Gi", 100, 3),
            running("over-low", {"memory": "1Gi"}, "1100Mi", 10, 4),
            running("under-low", {"memory": "2Gi"}, "1Gi", 0, 5)]
    order = [p.name for p in rank("memory.available", pods, False)]
    assert order == ["over-low", "over-high", "besteffort-high", "guaranteed-low", "under-low"]


def test_inodes_rank_by_priority_among_users_and_pids_by_priority_then_count() -> None:
    pods = [running("big-high", priority=100, seq=1, inodes="9000", pids="900"),
            running("small-low", priority=0, seq=2, inodes="10", pids="10"),
            running("none-low", priority=0, seq=3),
            running("mid-low", priority=0, seq=4, inodes="500", pids="500")]
    assert [p.name for p in rank("nodefs.inodesFree", pods, False)] == ["mid-low", "small-low", "big-high", "none-low"]
    assert [p.name for p in rank("pid.available", pods, False)] == ["mid-low", "small-low", "none-low", "big-high"]


def test_disk_ranking_follows_the_filesystem_behind_the_signal() -> None:
    logs = running("logs", {"ephemeral-storage": "1Gi"}, None, 0, 1, **{"ephemeral-storage": "5Gi"})
    layer = running("layer", None, None, 0, 2, **{"writable-layer": "6Gi"})
    assert [p.name for p in rank("nodefs.available", [logs, layer], False)] == ["layer", "logs"]
    assert [p.name for p in rank("nodefs.available", [logs, layer], True)] == ["logs", "layer"]
    assert [p.name for p in rank("imagefs.available", [logs, layer], True)] == ["layer", "logs"]


def resources(**kw: object) -> NodeResources:
    base = {"memory_capacity": 4 * GI, "pods_memory_limit": 3 * GI, "nodefs_capacity": 100 * GI,
            "nodefs_inodes": 1000, "imagefs_capacity": None, "imagefs_inodes": None, "pid_max": 100,
            "system": {"memory": GI, "ephemeral-storage": 0, "inodes": 10, "pids": 5, "images": 10 * GI,
                       "images-inodes": 100}}
    return NodeResources(**{**base, **kw})


def test_observations_on_a_single_filesystem_and_with_a_dedicated_imagefs() -> None:
    totals = {"cpu": 0, "memory": 2 * GI, "ephemeral-storage": GI, "inodes": 1, "pids": 3, "writable-layer": GI,
              "writable-layer-inodes": 2}
    obs = observe(resources(), totals)
    assert obs["memory.available"] == Observation(GI, 4 * GI)
    assert obs["allocatableMemory.available"] == Observation(GI, 3 * GI)
    assert obs["nodefs.available"] == Observation(88 * GI, 100 * GI) == obs["imagefs.available"]
    assert obs["nodefs.inodesFree"] == Observation(1000 - 113, 1000)
    assert obs["pid.available"] == Observation(92, 100)
    obs = observe(resources(imagefs_capacity=50 * GI), totals)
    assert obs["nodefs.available"].available == 99 * GI and obs["imagefs.available"].available == 39 * GI
    assert "imagefs.inodesFree" not in obs


def test_thresholds_met_with_and_without_minimum_reclaim() -> None:
    t = Threshold("memory.available", ThresholdValue(quantity=Fraction(100 * MI)), 0.0,
                  ThresholdValue(percentage=0.5))
    obs = {"memory.available": Observation(150 * MI, GI)}
    assert thresholds_met([t], obs, False) == []
    assert thresholds_met([t], obs, True) == [t]  # 100Mi + 50% of 1Gi > 150Mi
    assert thresholds_met([t], {"memory.available": Observation(100 * MI, GI)}, False) == []  # not below


def test_memory_thresholds_are_reclaimed_first() -> None:
    config = parse({"evictionHard": {"nodefs.available": "1Gi", "memory.available": "1Gi"}})
    assert [t.signal for t in by_eviction_priority(reversed(config.thresholds))][:2] == \
        ["memory.available", "allocatableMemory.available"]


def test_eviction_message_names_containers_using_more_than_they_request() -> None:
    pod = pod_usage({"metadata": {"name": "p", "uid": "p", "annotations": {"sim.kubesched.io/usage-memory": "3Gi"}},
                     "spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "1024Mi"}}},
                                             {"name": "b", "resources": {"requests": {"memory": "2Gi"}}}]}}, "n1", 1)
    pod.containers[0].put("memory", 2 * GI)
    pod.containers[1].put("memory", GI)
    t = Threshold("memory.available", ThresholdValue(quantity=Fraction(100 * MI), text="100Mi"))
    assert eviction_message(t, Observation(50 * MI, 4 * GI), pod) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container a was using 2Gi, request is 1Gi, has larger consumption of memory. ")
    inodes = Threshold("nodefs.inodesFree", ThresholdValue(percentage=0.05, text="5%"))
    assert eviction_message(inodes, Observation(3000, 100000), pod) == \
        "The node was low on resource: inodes. Threshold quantity: 5k, available: 3k. "
