"""oom_score_adj by QoS (pkg/kubelet/qos/policy.go) and the OOM killer's choice."""

from __future__ import annotations

from kubesched.kubelet.oom import oom_score_adj, victim
from kubesched.kubelet.usage import PodUsage, pod_usage

GI = 2**30
CAPACITY = 10 * GI


def pod(name: str, containers_resources: list[dict], seq: int = 1, usage: str | None = None,
        **spec: object) -> PodUsage:
    annotations = {} if usage is None else {"sim.kubesched.io/usage-memory": usage}
    containers = [{"name": f"c{i}", "resources": r} for i, r in enumerate(containers_resources)]
    return pod_usage({"metadata": {"name": name, "uid": name, "annotations": annotations},
                      "spec": {"containers": containers, **spec}}, "n1", seq)


def adj(p: PodUsage, i: int = 0) -> int:
    return oom_score_adj(p, p.containers[i], CAPACITY)


def test_adjustment_by_qos() -> None:
    assert adj(pod("g", [{"limits": {"cpu": "1", "memory": "1Gi"}}])) == -997
    assert adj(pod("be", [{}])) == 1000
    assert adj(pod("b", [{"requests": {"memory": "1Gi"}}])) == 1000 - 1000 * GI // CAPACITY == 900
    assert adj(pod("tiny", [{"requests": {"memory": "1"}}])) == 999  # never as high as BestEffort
    assert adj(pod("huge", [{"requests": {"memory": "10Gi", "cpu": "1"}}])) == 3  # never as low as Guaranteed
    assert adj(pod("node-critical", [{}], priority=2_000_001_000, priorityClassName="system-node-critical")) == -997


def test_pod_level_requests_are_shared_out_and_sidecars_follow_the_smallest_container() -> None:
    shared = pod("pl", [{}, {}], resources={"requests": {"memory": "4Gi"}})
    assert adj(shared, 0) == adj(shared, 1) == 1000 - 1000 * (2 * GI) // CAPACITY
    side = pod_usage({"metadata": {"name": "s", "uid": "s"}, "spec": {
        "containers": [{"name": "main", "resources": {"requests": {"memory": "2Gi"}}}],
        "initContainers": [{"name": "side", "restartPolicy": "Always", "resources": {"requests": {"memory": "1"}}}]}},
        "n1", 1)
    assert oom_score_adj(side, side.containers[1], CAPACITY) == oom_score_adj(side, side.containers[0], CAPACITY)


def test_victim_is_the_highest_score_and_the_newest_on_ties() -> None:
    guaranteed = pod("g", [{"limits": {"cpu": "1", "memory": "6Gi"}}], 1)
    burstable = pod("b", [{"requests": {"memory": "1Gi"}}], 2, usage="2Gi")
    besteffort = pod("e", [{}], 3, usage="100Mi")
    picked, _ = victim([guaranteed, burstable, besteffort], CAPACITY, CAPACITY)
    assert picked.name == "b"  # 200 + 900 beats 9 + 1000 and 600 - 997
    twin = pod("e2", [{}], 4, usage="100Mi")
    assert victim([besteffort, twin], CAPACITY, CAPACITY)[0].name == "e2"
    idle = pod("idle", [{}], 5, usage="0")
    assert victim([idle], CAPACITY, CAPACITY) is None  # holding no memory, killing it frees nothing
