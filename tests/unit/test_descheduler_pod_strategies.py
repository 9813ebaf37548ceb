"""The pod-state strategies: RemovePodsHavingTooManyRestarts, PodLifeTime and RemoveFailedPods.

Rows of upstream's test tables (toomanyrestarts_test.go, pod_lifetime_test.go,
failedpods_test.go, and their validation tests) run through a real cluster: the pods are created
with the status and creation time the upstream case gives them, the descheduler's first pass
runs at 0s, and its attempts are read back. Upstream calls a plugin's Deschedule directly; a
kubesched pass needs two ready nodes, so cases with one node get an empty spare node (nodeFit is
off in those cases, so it changes nothing).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.descheduler.descheduler import PassRecord
from kubesched.descheduler.plugins.failedpods import RemoveFailedPods
from kubesched.descheduler.plugins.podlifetime import PodLifeTime
from kubesched.descheduler.plugins.toomanyrestarts import RemovePodsHavingTooManyRestarts
from kubesched.descheduler.policy import PolicyError, load_policy
from kubesched.sim.runner import build_cluster, load

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
RS = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}]
DS = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid", "controller": True}]
JOB = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job1", "uid": "job-uid", "controller": True}]
OLD = 60 * 60 * 24 * 365  # upstream's olderPodCreationTime is years back


def stamp(seconds_ago: float) -> str:
    return (EPOCH - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, cpu: str = "2", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "10"}}}


def pod(name: str, on: str = "n1", age: float = OLD, owners: list[dict[str, Any]] | None = RS,
        status: dict[str, Any] | None = None, cpu: str = "100m", ns: str = "default",
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "creationTimestamp": stamp(age)}
    for key, value in (("ownerReferences", owners), ("labels", labels), ("annotations", annotations)):
        if value:
            meta[key] = value
    body = {"nodeName": on, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
            **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, **({"status": status} if status else {})}


def waiting(reason: str, restarts: int = 0) -> dict[str, Any]:
    return {"name": "c", "restartCount": restarts, "state": {"waiting": {"reason": reason}}}


def terminated(reason: str = "", code: int = 0) -> dict[str, Any]:
    return {"name": "c", "restartCount": 0, "state": {"terminated": {"exitCode": code, "reason": reason}}}


def first_pass(tmp_path: Path, plugin: str, args: dict[str, Any], pods: list[dict[str, Any]],
               nodes: list[dict[str, Any]] | None = None, evictor: dict[str, Any] | None = None,
               **limits: int) -> PassRecord:
    """Run the descheduler's first pass (at 0s) with one profile enabling `plugin`."""
    nodes = nodes or [node("n1")]
    assert {p["spec"]["nodeName"] for p in pods} <= {n["metadata"]["name"] for n in nodes}, "a pod on no node"
    if len(nodes) == 1:
        nodes = [*nodes, node("spare")]
    namespaces = sorted({p["metadata"]["namespace"] for p in pods} - {"default"})
    policy = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **limits,
              "profiles": [{"name": "p",
                            "pluginConfig": [{"name": "DefaultEvictor", "args": evictor or {}},
                                             {"name": plugin, "args": args}],
                            "plugins": {"deschedule": {"enabled": [plugin]}}}]}
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "t"},
                "spec": {"startTime": EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ")}}
    docs = [*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces),
            *nodes, *pods, policy, scenario]
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    cluster = build_cluster(load([str(path)]))
    cluster.run(until=0.0)
    assert cluster.descheduler is not None and cluster.recorder.passes, "the descheduler did not run"
    record = cluster.recorder.passes[0]
    assert not record.errors, record.errors
    return record


def evicted(record: PassRecord) -> list[str]:
    return [a.pod.split("/", 1)[1] for a in record.attempts if a.result == "Evicted"]


def results(record: PassRecord) -> dict[str, str]:
    """Each attempted pod's last result in the pass."""
    return {a.pod.split("/", 1)[1]: a.result for a in record.attempts}


# ---- RemovePodsHavingTooManyRestarts (toomanyrestarts_test.go) ----------------------------------

def restart_pods() -> list[dict[str, Any]]:
    """initPods: pod-i has an init container with 5*i restarts and two containers with 10*i each;
    pod-6 belongs to a DaemonSet, pod-7 has local storage, pod-8 is a mirror pod."""
    pods = []
    for i in range(10):
        status = {"phase": "Running",
                  "initContainerStatuses": [{"name": "init", "restartCount": 5 * i, "state": {}}],
                  "containerStatuses": [{"name": "c", "restartCount": 10 * i, "state": {"running": {}}},
                                        {"name": "d", "restartCount": 10 * i, "state": {"running": {}}}]}
        pods.append(pod(f"pod-{i}", status=status))
    pods[6]["metadata"]["ownerReferences"] = DS
    pods[7]["spec"]["volumes"] = [{"name": "sample", "hostPath": {"path": "/somePath"}}]
    pods[8]["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "mirror"}
    return pods


def restart_nodes(other: str | None) -> list[dict[str, Any]]:
    """node1 plus upstream's node2 (tainted), node3 (unschedulable), node4 (no cpu left) or node5."""
    nodes = [node("node1")]
    if other == "node2":
        nodes.append(node("node2", taints=[{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]))
    elif other == "node3":
        nodes.append(node("node3", unschedulable=True))
    elif other in ("node4", "node5"):
        nodes.append(node(other, cpu="200m" if other == "node4" else "2"))
    return nodes


def restart_case(tmp_path: Path, args: dict[str, Any], other: str | None = None, node_fit: bool = False,
                 status_change: Any = None, **limits: int) -> PassRecord:
    pods = restart_pods()
    for p in pods:
        p["spec"]["nodeName"] = "node1"
    pods += [pod("cpu-consumer-1", on="node4", cpu="150m", owners=None),
             pod("cpu-consumer-2", on="node5", cpu="150m", owners=None)]
    nodes = restart_nodes(other)
    names = {n["metadata"]["name"] for n in nodes}
    pods = [p for p in pods if p["spec"]["nodeName"] in names]
    if status_change is not None:
        for p in pods:
            status_change(p.setdefault("status", {}))
    return first_pass(tmp_path, "RemovePodsHavingTooManyRestarts", args, pods, nodes,
                      evictor={"nodeFit": node_fit}, **limits)


@pytest.mark.parametrize(("threshold", "init", "expected"), [
    (10000, True, 0),  # All pods have total restarts under threshold
    (1, True, 6),  # Some pods have total restarts bigger than threshold
    (25, True, 6),  # Nine pods have total restarts equals threshold (includingInitContainers)
    (25, False, 5),
    (20, True, 6),
    (20, False, 6),
    (5 * 25 + 1, True, 1),  # Five pods over the threshold, but only 1 pod eviction
    (5 * 20 + 1, False, 1),
])
def test_too_many_restarts_threshold(tmp_path: Path, threshold: int, init: bool, expected: int) -> None:
    record = restart_case(tmp_path, {"podRestartThreshold": threshold, "includingInitContainers": init})
    assert len(evicted(record)) == expected
    assert not {"pod-0", "pod-6", "pod-7", "pod-8"} & set(evicted(record))


def test_too_many_restarts_equal_to_threshold_is_evicted(tmp_path: Path) -> None:
    # pod-1 has exactly 20 container restarts: "restarts < threshold" is what keeps a pod
    record = restart_case(tmp_path, {"podRestartThreshold": 20})
    assert "pod-1" in evicted(record)
    record = restart_case(tmp_path, {"podRestartThreshold": 21})
    assert "pod-1" not in evicted(record)


def test_too_many_restarts_limits(tmp_path: Path) -> None:
    per_node = restart_case(tmp_path, {"podRestartThreshold": 1, "includingInitContainers": True},
                            maxNoOfPodsToEvictPerNode=3)
    assert evicted(per_node) == ["pod-1", "pod-2", "pod-3"]
    # the node's limit ends its loop: pod-4 is refused once and nothing after it is tried
    assert results(per_node)["pod-4"] == "LimitReached"
    assert "pod-5" not in results(per_node)
    per_namespace = restart_case(tmp_path, {"podRestartThreshold": 1, "includingInitContainers": True},
                                 maxNoOfPodsToEvictPerNamespace=3)
    assert len(evicted(per_namespace)) == 3
    total = restart_case(tmp_path, {"podRestartThreshold": 1}, maxNoOfPodsToEvictTotal=2)
    assert evicted(total) == ["pod-1", "pod-2"]


@pytest.mark.parametrize(("other", "expected"), [("node2", 0), ("node3", 0), ("node4", 0), ("node5", 3)])
def test_too_many_restarts_node_fit(tmp_path: Path, other: str, expected: int) -> None:
    """The only other node is tainted / unschedulable / without cpu for the pod / has room."""
    record = restart_case(tmp_path, {"podRestartThreshold": 1, "includingInitContainers": True}, other=other,
                          node_fit=True, maxNoOfPodsToEvictPerNode=3)
    assert len(evicted(record)) == expected


def crash_loop(status: dict[str, Any]) -> None:
    if status.get("containerStatuses"):
        status["containerStatuses"][0]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}


def init_crash_loop(status: dict[str, Any]) -> None:
    status["initContainerStatuses"] = [{"name": "init", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]


def test_too_many_restarts_states(tmp_path: Path) -> None:
    args = {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}
    looping = restart_case(tmp_path, args, other="node5", node_fit=True, status_change=crash_loop,
                           maxNoOfPodsToEvictPerNode=3)
    assert len(evicted(looping)) == 3
    running = restart_case(tmp_path, args, other="node5", node_fit=True, maxNoOfPodsToEvictPerNode=3)
    assert evicted(running) == []
    by_phase = restart_case(tmp_path, {"podRestartThreshold": 1, "states": ["Running"]}, maxNoOfPodsToEvictPerNode=3)
    assert len(evicted(by_phase)) == 3


def test_too_many_restarts_states_of_init_containers(tmp_path: Path) -> None:
    args = {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}
    counted = restart_case(tmp_path, {**args, "includingInitContainers": True}, status_change=init_crash_loop,
                           maxNoOfPodsToEvictPerNode=3)
    assert len(evicted(counted)) == 3
    ignored = restart_case(tmp_path, args, status_change=init_crash_loop, maxNoOfPodsToEvictPerNode=3)
    assert evicted(ignored) == []


def test_too_many_restarts_namespaces_and_labels(tmp_path: Path) -> None:
    status = {"phase": "Running", "containerStatuses": [{"name": "c", "restartCount": 7, "state": {}}]}
    pods = [pod("a", status=status, labels={"app": "web"}), pod("b", status=status, labels={"app": "db"}),
            pod("c", status=status, ns="batch", labels={"app": "web"})]
    record = first_pass(tmp_path, "RemovePodsHavingTooManyRestarts",
                        {"podRestartThreshold": 5, "namespaces": {"exclude": ["batch"]},
                         "labelSelector": {"matchLabels": {"app": "web"}}}, pods)
    assert evicted(record) == ["a"]


def test_too_many_restarts_validation() -> None:
    v = RemovePodsHavingTooManyRestarts.validate
    assert v({"podRestartThreshold": 1, "states": ["Running"]}) == []
    assert v({"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}) == []
    assert v({"podRestartThreshold": 0}) == ["invalid PodsHavingTooManyRestarts threshold"]
    assert v({}) == ["invalid PodsHavingTooManyRestarts threshold"]
    assert v({"podRestartThreshold": 1, "states": ["Failed"]}) == ["states must be one of [CrashLoopBackOff Running]"]
    assert v({"podRestartThreshold": 0, "states": ["Failed"]}) == [
        "invalid PodsHavingTooManyRestarts threshold", "states must be one of [CrashLoopBackOff Running]"]
    assert v({"podRestartThreshold": 1, "namespaces": {"include": ["a"], "exclude": ["b"]}}) == [
        "only one of Include/Exclude namespaces can be set"]
    assert v({"podRestartThreshold": "3"}) == ["podRestartThreshold: must be an integer, got '3'"]


# ---- PodLifeTime (pod_lifetime_test.go) ---------------------------------------------------------

def lifetime(tmp_path: Path, args: dict[str, Any], pods: list[dict[str, Any]], **kw: Any) -> PassRecord:
    return first_pass(tmp_path, "PodLifeTime", args, pods, **kw)


MAX = {"maxPodLifeTimeSeconds": 600}


def test_pod_lifetime_age_threshold(tmp_path: Path) -> None:
    assert evicted(lifetime(tmp_path, MAX, [pod("p1", age=0), pod("p2")])) == ["p2"]
    assert evicted(lifetime(tmp_path, MAX, [pod("p3", age=0), pod("p4", age=0)])) == []
    assert evicted(lifetime(tmp_path, MAX, [pod("p5", age=0), pod("p6", age=605)])) == ["p6"]
    assert evicted(lifetime(tmp_path, MAX, [pod("p7", age=0), pod("p8", age=595)])) == []
    # exactly the limit is not "older than" it
    assert evicted(lifetime(tmp_path, MAX, [pod("p9", age=600), pod("p10", age=601)])) == ["p10"]


def test_pod_lifetime_oldest_first_across_nodes(tmp_path: Path) -> None:
    pods = [pod("young", on="n1", age=700), pod("oldest", on="n2", age=3000), pod("middle", on="n1", age=2000)]
    record = lifetime(tmp_path, MAX, pods, nodes=[node("n1"), node("n2")], maxNoOfPodsToEvictTotal=2)
    assert evicted(record) == ["oldest", "middle"]
    assert results(record)["young"] == "LimitReached"


def test_pod_lifetime_eviction_limits(tmp_path: Path) -> None:
    pods = [pod("p1", age=0), pod("p2"), pod("p9")]
    assert evicted(lifetime(tmp_path, MAX, pods)) == ["p2", "p9"]
    assert evicted(lifetime(tmp_path, MAX, pods, maxNoOfPodsToEvictPerNamespace=1)) == ["p2"]
    assert evicted(lifetime(tmp_path, MAX, pods, maxNoOfPodsToEvictPerNamespace=2, maxNoOfPodsToEvictTotal=1)) == ["p2"]
    per_node = lifetime(tmp_path, MAX, pods, maxNoOfPodsToEvictPerNode=1)
    assert evicted(per_node) == ["p2"]
    assert results(per_node)["p9"] == "LimitReached"


def test_pod_lifetime_label_selector_and_evictor(tmp_path: Path) -> None:
    pods = [pod("p12", labels={"foo": "bar"}), pod("p13", labels={"foo": "bar1"})]
    record = lifetime(tmp_path, {**MAX, "labelSelector": {"matchLabels": {"foo": "bar"}}}, pods)
    assert evicted(record) == ["p12"]
    pvc = [pod("p11", volumes=[{"name": "pvc", "persistentVolumeClaim": {"claimName": "foo"}}])]
    assert evicted(lifetime(tmp_path, MAX, pvc, evictor={"ignorePvcPods": True})) == []
    assert evicted(lifetime(tmp_path, MAX, pvc)) == ["p11"]


@pytest.mark.parametrize(("state", "status", "expected"), [
    ("ContainerCreating", {"containerStatuses": [waiting("ContainerCreating")]}, 1),
    ("PodInitializing", {"containerStatuses": [waiting("PodInitializing")]}, 1),
    ("ImagePullBackOff", {"containerStatuses": [waiting("ImagePullBackOff")]}, 1),
    ("CrashLoopBackOff", {"containerStatuses": [waiting("CrashLoopBackOff")]}, 1),
    ("CreateContainerConfigError", {"containerStatuses": [waiting("CreateContainerConfigError")]}, 1),
    ("ErrImagePull", {"containerStatuses": [waiting("ErrImagePull")]}, 1),
    ("InvalidImageName", {"containerStatuses": [waiting("InvalidImageName")]}, 1),
    ("ContainerCreating", {"containerStatuses": [waiting("ImagePullBackOff")]}, 0),
    ("CreateContainerError", {"initContainerStatuses": [waiting("CreateContainerError")]}, 0),
    ("CreateContainerError", {"ephemeralContainerStatuses": [waiting("CreateContainerError")]}, 0),
    ("NodeLost", {"reason": "NodeLost"}, 1),  # pod status reasons
    ("NodeAffinity", {"reason": "NodeAffinity"}, 1),
    ("Shutdown", {"reason": "Shutdown"}, 1),
    ("UnexpectedAdmissionError", {"reason": "UnexpectedAdmissionError"}, 1),
    ("Succeeded", {"phase": "Succeeded"}, 1),  # phases
    ("Failed", {"phase": "Failed"}, 1),
    ("Unknown", {"phase": "Unknown"}, 1),
    ("OOMKilled", {"containerStatuses": [terminated("OOMKilled", 137)]}, 1),  # terminated reasons (newest)
])
def test_pod_lifetime_states(tmp_path: Path, state: str, status: dict[str, Any], expected: int) -> None:
    pods = [pod("p9", status=status), pod("plain")]
    record = lifetime(tmp_path, {**MAX, "states": [state]}, pods)
    assert evicted(record) == ["p9"][:expected]


def test_pod_lifetime_init_and_ephemeral_containers_when_asked(tmp_path: Path) -> None:
    init = pod("init", status={"initContainerStatuses": [waiting("CreateContainerError")]})
    eph = pod("eph", status={"ephemeralContainerStatuses": [terminated("OOMKilled", 137)]})
    args = {**MAX, "states": ["CreateContainerError", "OOMKilled"]}
    assert evicted(lifetime(tmp_path, args, [init, eph])) == []
    assert evicted(lifetime(tmp_path, {**args, "includingInitContainers": True}, [init, eph])) == ["init"]
    assert evicted(lifetime(tmp_path, {**args, "includingEphemeralContainers": True}, [init, eph])) == ["eph"]


def test_pod_lifetime_states_by_phase(tmp_path: Path) -> None:
    """Two old pods with different states: only the one in the listed phase goes."""
    pods = [pod("p9", status={"phase": "Failed"}), pod("p10", status={"phase": "Running"})]
    assert evicted(lifetime(tmp_path, {**MAX, "states": ["Failed"]}, pods)) == ["p9"]
    # states alone (no age limit) is a criterion of its own in the newest version
    assert evicted(lifetime(tmp_path, {"states": ["Running"]}, pods)) == ["p10"]


def test_pod_lifetime_owner_kinds(tmp_path: Path) -> None:
    pods = [pod("p1", owners=JOB, status={"phase": "Failed"}), pod("p2", status={"phase": "Failed"})]
    assert evicted(lifetime(tmp_path, {"states": ["Failed"], "ownerKinds": {"exclude": ["Job"]}}, pods)) == ["p2"]
    assert evicted(lifetime(tmp_path, {"states": ["Failed"], "ownerKinds": {"include": ["Job"]}}, pods)) == ["p1"]


def test_pod_lifetime_exit_codes(tmp_path: Path) -> None:
    pods = [pod("p1", status={"phase": "Failed", "containerStatuses": [terminated(code=1)]})]
    assert evicted(lifetime(tmp_path, {"states": ["Failed"], "exitCodes": [1]}, pods)) == ["p1"]
    assert evicted(lifetime(tmp_path, {"states": ["Failed"], "exitCodes": [2]}, pods)) == []


def condition(ctype: str, status: str, reason: str = "", ago: float | None = 7200) -> dict[str, Any]:
    out = {"type": ctype, "status": status, "reason": reason}
    if ago is not None:
        out["lastTransitionTime"] = stamp(ago)
    return out


def test_pod_lifetime_conditions(tmp_path: Path) -> None:
    completed = pod("p1", status={"phase": "Running", "conditions": [condition("Initialized", "True", "PodCompleted")]})
    other = pod("p2", status={"phase": "Running", "conditions": [condition("Initialized", "True", "OtherReason")]})
    assert evicted(lifetime(tmp_path, {"conditions": [{"reason": "PodCompleted", "status": "True"}]},
                            [completed, other])) == ["p1"]
    ready = pod("p3", status={"phase": "Running", "conditions": [condition("Ready", "False")]})
    assert evicted(lifetime(tmp_path, {"conditions": [{"type": "Ready"}]}, [ready])) == ["p3"]


def test_pod_lifetime_transition_time(tmp_path: Path) -> None:
    five_minutes = {"reason": "PodCompleted", "status": "True", "minTimeSinceLastTransitionSeconds": 300}
    stale = pod("stale", status={"phase": "Succeeded", "conditions": [
        condition("Initialized", "True", "PodCompleted"), condition("Ready", "False", "PodCompleted")]})
    recent = pod("recent", status={"phase": "Succeeded", "conditions": [
        condition("Initialized", "True", "PodCompleted", ago=60)]})
    running = pod("running", status={"phase": "Running"})
    record = lifetime(tmp_path, {"states": ["Succeeded"], "conditions": [five_minutes]}, [stale, recent, running])
    assert evicted(record) == ["stale"]
    # only the conditions that match the filter's fields count for the transition time
    scoped = pod("scoped", status={"phase": "Running", "conditions": [
        condition("Initialized", "", "PodCompleted"), condition("Ready", "", "OtherReason", ago=60)]})
    filt = {"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 300}
    assert evicted(lifetime(tmp_path, {"conditions": [filt]}, [scoped])) == ["scoped"]
    # a condition without lastTransitionTime never satisfies a transition threshold
    untimed = pod("untimed", status={"phase": "Running", "conditions": [condition("Ready", "True", ago=None)]})
    assert evicted(lifetime(tmp_path, {"conditions": [{"minTimeSinceLastTransitionSeconds": 300}]}, [untimed])) == []


def test_pod_lifetime_orders_by_transition_time_when_a_filter_has_a_threshold(tmp_path: Path) -> None:
    # created long ago but completed recently goes after the one that completed earlier
    early = pod("early", age=1000, status={"phase": "Succeeded", "conditions": [
        condition("Ready", "False", "PodCompleted", ago=900)]})
    late = pod("late", age=OLD, status={"phase": "Succeeded", "conditions": [
        condition("Ready", "False", "PodCompleted", ago=400)]})
    args = {"states": ["Succeeded"], "conditions": [{"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 300}]}
    record = lifetime(tmp_path, args, [late, early], maxNoOfPodsToEvictTotal=1)
    assert evicted(record) == ["early"]


def test_pod_lifetime_failed_pod_removal_compat(tmp_path: Path) -> None:
    pods = [pod("failed-rs", status={"phase": "Failed", "containerStatuses": [terminated("Error", 1)]}),
            pod("failed-job", owners=JOB, status={"phase": "Failed"})]
    args = {"states": ["Failed"], "maxPodLifeTimeSeconds": 0, "ownerKinds": {"exclude": ["Job"]}}
    assert evicted(lifetime(tmp_path, args, pods)) == ["failed-rs"]


def test_pod_lifetime_validation() -> None:
    v = PodLifeTime.validate
    assert v({"states": ["Running"]}) == []
    assert v({"conditions": [{"reason": "PodCompleted"}]}) == []
    assert v({"maxPodLifeTimeSeconds": 600}) == []
    assert v({"exitCodes": [1]}) == []
    assert v({"conditions": [{"minTimeSinceLastTransitionSeconds": 300}]}) == []
    assert v({}) == ["at least one filtering criterion must be specified "
                     "(maxPodLifeTimeSeconds, states, conditions, or exitCodes)"]
    assert v({"states": ["Running"], "namespaces": {"include": ["a"], "exclude": ["b"]}}) == [
        "only one of Include/Exclude namespaces can be set"]
    assert v({"states": ["Running"], "ownerKinds": {"include": ["Job"], "exclude": ["ReplicaSet"]}}) == [
        "only one of Include/Exclude ownerKinds can be set"]
    [bad_state] = v({"states": ["NotAState"]})
    assert bad_state.startswith("states must be one of [Completed ContainerCannotRun ContainerCreating ")
    assert bad_state.endswith(" Shutdown StartError Succeeded UnexpectedAdmissionError Unknown]")
    assert v({"conditions": [{}]}) == [
        "conditions[0]: at least one of type, status, reason, or minTimeSinceLastTransitionSeconds must be set"]
    assert v({"maxPodLifeTimeSeconds": -1}) == ["maxPodLifeTimeSeconds: must be a non-negative integer, got -1"]


# ---- RemoveFailedPods (failedpods_test.go) ------------------------------------------------------

def failed(name: str, reason: str = "", init: dict[str, Any] | None = None, container: dict[str, Any] | None = None,
           **kw: Any) -> dict[str, Any]:
    """newPodStatus: phase Failed with the given pod reason and init/app container states."""
    status: dict[str, Any] = {"phase": "Failed"}
    if reason:
        status["reason"] = reason
    if init is not None:
        status["initContainerStatuses"] = [{"name": "init", "restartCount": 0, "state": init}]
    if container is not None:
        status["containerStatuses"] = [{"name": "c", "restartCount": 0, "state": container}]
    return pod(name, status=status, **kw)


NODE_AFFINITY = {"terminated": {"exitCode": 0, "reason": "NodeAffinity"}}
CONFIG_ERROR_TERMINATED = {"terminated": {"exitCode": 0, "reason": "CreateContainerConfigError"}}
CONFIG_ERROR_WAITING = {"waiting": {"reason": "CreateContainerConfigError"}}


@pytest.mark.parametrize(("args", "pods", "expected"), [
    ({}, [], 0),  # 0 failures, 0 evictions
    ({}, [failed("p1", container=NODE_AFFINITY)], 1),
    ({"includingInitContainers": True}, [failed("p1", init=NODE_AFFINITY)], 1),
    ({"includingInitContainers": True}, [failed("p1", init=CONFIG_ERROR_WAITING)], 1),
    ({"reasons": ["CreateContainerConfigError"]}, [failed("p1", container=CONFIG_ERROR_TERMINATED)], 1),
    ({"reasons": ["CreateContainerConfigError", "NodeAffinity"]}, [failed("p1", container=CONFIG_ERROR_TERMINATED)], 1),
    ({"reasons": ["CreateContainerConfigError"]}, [failed("p1", container=NODE_AFFINITY)], 0),
    ({"reasons": ["CreateContainerConfigError"]}, [failed("p1", init=CONFIG_ERROR_WAITING)], 0),
    ({"minPodLifetimeSeconds": 3600}, [failed("p1", container=NODE_AFFINITY, age=0)], 0),
    ({"includingInitContainers": True, "excludeOwnerKinds": ["ReplicaSet"]}, [failed("p1", init=NODE_AFFINITY)], 0),
    ({"includingInitContainers": True, "excludeOwnerKinds": ["DaemonSet"]}, [failed("p1", init=NODE_AFFINITY)], 1),
    ({"reasons": ["Shutdown"]}, [failed("p1", reason="Shutdown"), failed("p2", reason="Shutdown")], 2),
    ({"reasons": ["Shutdown"]}, [pod("p1", status={"phase": "Running", "reason": "Shutdown"})], 0),  # not Failed
    ({"exitCodes": [1]}, [failed("p1", container={"terminated": {"exitCode": 1}}),
                          failed("p2", container={"terminated": {"exitCode": 2}})], 1),
])
def test_remove_failed_pods(tmp_path: Path, args: dict[str, Any], pods: list[dict[str, Any]], expected: int) -> None:
    record = first_pass(tmp_path, "RemoveFailedPods", args, pods)
    assert len(evicted(record)) == expected
    assert all(a.strategy == "RemoveFailedPods" for a in record.attempts)


def test_remove_failed_pods_two_nodes(tmp_path: Path) -> None:
    pods = [failed("p1", on="node1", init=CONFIG_ERROR_TERMINATED), failed("p2", on="node2", init=CONFIG_ERROR_TERMINATED)]
    record = first_pass(tmp_path, "RemoveFailedPods", {"includingInitContainers": True}, pods,
                        nodes=[node("node1"), node("node2")])
    assert sorted(evicted(record)) == ["p1", "p2"]


def test_remove_failed_pods_node_fit(tmp_path: Path) -> None:
    """nodeFit: the only other node is unschedulable / has no room: nothing goes."""
    unschedulable = [node("n1"), node("n2", unschedulable=True)]
    record = first_pass(tmp_path, "RemoveFailedPods", {}, [failed("p1", container=NODE_AFFINITY)], unschedulable,
                        evictor={"nodeFit": True})
    assert evicted(record) == []
    assert results(record)["p1"] == "Filtered"
    # 1 container terminated with reason Shutdown, nodeFit and nowhere to go: 0 evictions
    record = first_pass(tmp_path, "RemoveFailedPods", {}, [failed("p1", reason="Shutdown")], unschedulable,
                        evictor={"nodeFit": True})
    assert evicted(record) == []


def test_remove_failed_pods_default_min_lifetime_is_an_hour(tmp_path: Path) -> None:
    assert RemoveFailedPods.defaults({}) == {"minPodLifetimeSeconds": 3600}
    assert RemoveFailedPods.defaults({"minPodLifetimeSeconds": 0}) == {"minPodLifetimeSeconds": 0}
    pods = [failed("young", container=NODE_AFFINITY, age=3600), failed("old", container=NODE_AFFINITY, age=3601)]
    assert evicted(first_pass(tmp_path, "RemoveFailedPods", {}, pods)) == ["old"]


def test_remove_failed_pods_terminating_and_bare(tmp_path: Path) -> None:
    bare = failed("bare", container=NODE_AFFINITY, owners=None)
    assert evicted(first_pass(tmp_path, "RemoveFailedPods", {}, [bare])) == []
    assert evicted(first_pass(tmp_path, "RemoveFailedPods", {}, [bare], evictor={"evictFailedBarePods": True})) == ["bare"]


def test_remove_failed_pods_validation() -> None:
    v = RemoveFailedPods.validate
    assert v({"namespaces": {"include": ["default"]}, "excludeOwnerKinds": ["Job"], "reasons": ["ReasonDoesNotMatch"],
              "minPodLifetimeSeconds": 3600}) == []
    assert v({"namespaces": {"include": ["default"], "exclude": ["kube-system"]}}) == [
        "only one of Include/Exclude namespaces can be set"]
    assert v({"labelSelector": {"matchLabels": {"role.kubernetes.io/node": ""}}}) == []
    [selector] = v({"labelSelector": {"matchExpressions": [{"operator": "In"}]}})
    assert selector.startswith("failed to get label selectors from strategy's params: ")


def test_policy_refuses_bad_arguments_with_the_plugins_words() -> None:
    def errors(name: str, args: dict[str, Any]) -> list[str]:
        with pytest.raises(PolicyError) as e:
            load_policy({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
                         "profiles": [{"name": "p", "pluginConfig": [{"name": name, "args": args}],
                                       "plugins": {"deschedule": {"enabled": [name]}}}]})
        return e.value.errors

    assert errors("RemovePodsHavingTooManyRestarts", {}) == [
        "in profile p: RemovePodsHavingTooManyRestarts: invalid PodsHavingTooManyRestarts threshold"]
    assert errors("PodLifeTime", {"maxPodLifeTimeSeconds": 60, "state": ["Running"]}) == [
        'in profile p: PodLifeTime: unknown field "state"']
    assert errors("RemoveFailedPods", {"reasons": "Error"}) == [
        "in profile p: RemoveFailedPods: reasons: must be a list of strings, got 'Error'"]
