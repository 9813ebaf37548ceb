"""The usage model: defaults, annotations, spreading over containers, node capacities."""

from __future__ import annotations

from typing import Any

from kubesched.api.errors import InputError
from kubesched.api.loader import LoadedObject
from kubesched.api.resources import pod_requests
from kubesched.input.validation import validate
from kubesched.kubelet.config import parse
from kubesched.kubelet.usage import USAGE_KEYS, NodeResources, UsageTracker, pod_usage

GI = 2**30
MI = 2**20


def pod(containers: list[dict], annotations: dict | None = None, **spec: Any) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "uid": "u", "annotations": annotations or {}},
            "spec": {"nodeName": "n1", "containers": containers, **spec}}


def container(name: str, requests: dict | None = None, limits: dict | None = None) -> dict:
    return {"name": name, "image": "app", "resources": {"requests": requests or {}, "limits": limits or {}}}


def test_usage_defaults_to_the_requests_and_zero_for_the_rest() -> None:
    pu = pod_usage(pod([container("a", {"memory": "1Gi"}), container("b", limits={"memory": "512Mi"})]), "n1", 1)
    assert [c.usage["memory"] for c in pu.containers] == [GI, 512 * MI]  # a limit alone is the request
    assert pu.total("inodes") == pu.total("pids") == pu.total("writable-layer") == 0
    assert pu.requests["memory"] == GI + 512 * MI


def test_the_requests_given_are_a_one_container_pods_usage() -> None:
    # A single container's usage comes from the pod's requests when the kubelet has them; it must
    # be what walking the container gives (fractional quantities round the same way).
    shapes = [pod([container("a", {"cpu": "100m", "memory": "500Mi"})]),
              pod([container("a", {"cpu": "0", "memory": "1.5", "ephemeral-storage": "1Gi"})]),
              pod([container("a", limits={"memory": "512Mi"})]),
              pod([container("a", {"cpu": "1", "nvidia.com/gpu": "1"})])]
    for p in shapes:
        given = pod_usage(p, "n1", 1, pod_requests(p["spec"]))
        walked = pod_usage(p, "n1", 1)
        assert {k: given.total(k) for k in USAGE_KEYS} == {k: walked.total(k) for k in USAGE_KEYS}


def test_a_pod_total_is_spread_by_requests_with_the_remainder_to_the_largest() -> None:
    pu = pod_usage(pod([container("a", {"memory": "1Gi"}), container("b", {"memory": "3Gi"})],
                       {"sim.kubesched.io/usage-memory": "2Gi"}), "n1", 1)
    assert [c.usage["memory"] for c in pu.containers] == [GI // 2, 3 * GI // 2]
    pu.set_pod_total("ephemeral-storage", 5)  # nobody requests it: evenly, remainder to the first
    assert [c.usage["ephemeral-storage"] for c in pu.containers] == [3, 2]


def test_sidecars_run_alongside_and_init_containers_do_not() -> None:
    spec_pod = pod([container("main")], initContainers=[container("init"), {**container("side"),
                                                                              "restartPolicy": "Always"}])
    pu = pod_usage(spec_pod, "n1", 1)
    assert [(c.name, c.sidecar) for c in pu.containers] == [("main", False), ("side", True)]


def test_tracker_keeps_node_totals() -> None:
    tracker = UsageTracker()
    pu = tracker.add(pod([container("a", {"memory": "1Gi"})]), "n1")
    tracker.update(pu, {"memory": 3 * GI, "pids": 7}, None)
    assert tracker.node_totals("n1")["memory"] == 3 * GI and tracker.node_totals("n1")["pids"] == 7
    tracker.update(pu, {"memory": GI}, pu.containers[0])
    assert tracker.node_totals("n1")["memory"] == GI
    tracker.remove("u")
    assert tracker.node_totals("n1")["memory"] == 0 and list(tracker.on_node("n1")) == []


def node(status: dict, annotations: dict | None = None) -> dict:
    return {"kind": "Node", "metadata": {"name": "n1", "annotations": annotations or {}}, "status": status}


def test_capacity_is_allocatable_plus_the_hard_threshold_when_not_given() -> None:
    config = parse(None)
    res = NodeResources.of(node({"allocatable": {"memory": "2Gi", "ephemeral-storage": "9Gi"}}), config)
    assert res.memory_capacity == res.pods_memory_limit == 2 * GI + 100 * MI
    # Without a dedicated imagefs, imagefs.available<15% is read off nodefs too: a capacity whose
    # 15% still leaves the 9Gi allocatable, and no more (nodefs.available<10% is then clear too).
    fifteen_percent = config.hard_value("imagefs.available").amount(res.nodefs_capacity)
    assert 0 <= res.nodefs_capacity - fifteen_percent - 9 * GI <= 1
    assert res.nodefs_inodes is None and not res.dedicated_imagefs and res.pid_max == 4194304


def test_with_a_dedicated_imagefs_nodefs_capacity_clears_its_own_threshold() -> None:
    config = parse(None)
    res = NodeResources.of(node({"allocatable": {"ephemeral-storage": "9Gi"}},
                                {"sim.kubesched.io/imagefs-capacity": "100Gi"}), config)
    ten_percent = config.hard_value("nodefs.available").amount(res.nodefs_capacity)
    assert 0 <= res.nodefs_capacity - ten_percent - 9 * GI <= 1


def test_a_given_capacity_wins_and_bounds_the_pods_cgroup() -> None:
    res = NodeResources.of(node({"capacity": {"memory": "8Gi"}, "allocatable": {"memory": "6Gi"}},
                                {"sim.kubesched.io/inodes": "1M", "sim.kubesched.io/imagefs-capacity": "100Gi",
                                 "sim.kubesched.io/system-usage-memory": "1Gi", "sim.kubesched.io/pid-max": "bad"}),
                           parse(None))
    assert res.memory_capacity == 8 * GI and res.pods_memory_limit == 6 * GI + 100 * MI
    assert res.nodefs_capacity is None and res.nodefs_inodes == 10**6 and res.imagefs_capacity == 100 * GI
    assert res.system["memory"] == GI and res.pid_max == 4194304  # unreadable: the default


def usage_event(**amounts: Any) -> LoadedObject:
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "s"},
                "spec": {"events": [{"at": "1s", "usage": {"name": "p", **amounts}}]}}
    return LoadedObject(scenario, "s.yaml", 1)


def test_validation_accepts_exactly_the_usage_keys() -> None:
    validate([usage_event(**dict.fromkeys(USAGE_KEYS, "1"))])
    try:
        validate([usage_event(gpus="1")])
    except InputError as e:
        assert [p.path for p in e.problems] == ["spec.events[0].usage.gpus"]
    else:
        raise AssertionError("an unknown usage key was accepted")


def test_validation_knows_every_simulation_annotation() -> None:
    from kubesched.input.annotations import SIM_NODE_AMOUNTS, SIM_SYSTEM_USAGE_KEYS, SIM_USAGE_KEYS
    from kubesched.kubelet import usage

    assert SIM_USAGE_KEYS == USAGE_KEYS
    assert SIM_SYSTEM_USAGE_KEYS == usage.SYSTEM_KEYS
    assert {f"sim.kubesched.io/{k}" for k in SIM_NODE_AMOUNTS} == {
        usage.NODE_INODES, usage.NODE_PID_MAX, usage.IMAGEFS_CAPACITY, usage.IMAGEFS_INODES}


def test_bad_usage_annotations_are_input_errors() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {
        "sim.kubesched.io/usage-memory": "lots", "sim.kubesched.io/usage-gpus": "1"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "annotations": {
        "sim.kubesched.io/pid-max": "-5", "sim.kubesched.io/system-usage-memory": "1Gi"}}}
    try:
        validate([LoadedObject(pod, "p.yaml", 1), LoadedObject(node, "n.yaml", 1)])
    except InputError as e:
        assert [str(p) for p in e.problems] == [
            'p.yaml doc 1: metadata.annotations.sim.kubesched.io/usage-memory: "lots" is not a quantity',
            "p.yaml doc 1: metadata.annotations.sim.kubesched.io/usage-gpus: unknown simulation annotation "
            "(docs/scenarios.md lists them)",
            "n.yaml doc 1: metadata.annotations.sim.kubesched.io/pid-max: Invalid value: \"-5\": must be greater "
            "than or equal to 0",
        ]
    else:
        raise AssertionError("bad annotations were accepted")
