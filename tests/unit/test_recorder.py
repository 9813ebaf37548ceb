"""The results recorder: what a run reports, learnt from the API's objects; and a Cluster without one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.cluster.cluster import Cluster
from kubesched.sim.runner import load, simulate


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}], **spec}}


HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
LOW_SET = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: low}
spec:
  replicas: 1
  selector: {matchLabels: {app: low}}
  template:
    metadata: {labels: {app: low}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: c, image: nginx, resources: {requests: {cpu: "4"}}}]
"""


def test_a_preemption_names_its_preemptor_from_the_scheduler_s_event() -> None:
    c = Cluster()
    for obj in (HIGH, node("n1", cpu="2"), pod("low", cpu="2")):
        assert c.create(obj) is not None
    c.run()
    c.create(pod("high", cpu="2", priorityClassName="high"))
    c.run()
    assert c.recorder is not None
    [d] = c.recorder.disruptions
    assert (d.pod, d.node, d.cause, d.detail) == ("default/low", "n1", "Preempted", "by default/high (priority 1000)")
    assert c.recorder.pod("default", "low").reason == "Preempted"  # type: ignore[union-attr]


def test_a_node_pressure_eviction_says_which_threshold_was_met() -> None:
    c = Cluster()
    c.create(node("n1", memory="4Gi"))
    c.create({**pod("a", nodeName="n1"), "metadata": {"name": "a", "annotations": {
        "sim.kubesched.io/usage-memory": "4150Mi"}}})
    c.run(until=60)
    assert c.recorder is not None
    [d] = c.recorder.disruptions
    assert (d.cause, d.detail) == ("Evicted", "memory.available 46Mi < 100Mi (hard threshold)")


def test_a_preemption_loop_stops_the_run_once_the_preemptor_is_known(tmp_path: Path) -> None:
    """The same ReplicaSet's pod preempted on the same node, replaced, preempted again: the run
    stops at the tenth time, and the warning names the last preemptor (known from its Event,
    recorded just after the victim's deletion began)."""
    events = "\n".join(
        f"  - {{at: {10 + 20 * i}s, create: {{apiVersion: v1, kind: Pod, metadata: {{name: high-{i}, annotations: "
        f"{{sim.kubesched.io/duration: 5s}}}}, spec: {{priorityClassName: high, restartPolicy: Never, containers: "
        f"[{{name: c, image: busybox, resources: {{requests: {{cpu: '4'}}}}}}]}}}}}}" for i in range(12))
    path = tmp_path / "loop.yaml"
    path.write_text(f"""\
apiVersion: v1
kind: Node
metadata: {{name: n1}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: high}}
value: 1000
---
{LOW_SET}---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {{name: loop}}
spec:
  events:
{events}
""")
    result = simulate(load([str(path)]))
    assert result.cluster.now() == 190
    assert [d.detail for d in result.recorder.disruptions] == [f"by default/high-{i} (priority 1000)" for i in range(10)]
    assert result.recorder.warnings == [
        "stopped at 3m10s of virtual time: ReplicaSet/default/low is going round in circles - its pod on n1 was "
        "removed (Preempted: by default/high-9 (priority 1000)), replaced, and the replacement removed the same way, "
        "10 times in a row; pass --until to run regardless"]


def test_a_cluster_without_a_recorder_runs_and_keeps_nothing_of_its_own() -> None:
    """`serve`'s cluster: the components work through the API as ever; what the API refuses is
    the caller's answer, and nothing else is kept beside the store."""
    c = Cluster(recorder=None)
    assert c.create(node("n1")) is not None
    assert c.create(pod("a")) is not None
    assert c.create(pod("b", priorityClassName="gone")) is None  # refused: not raised
    assert c.restore(pod("c", nodeName="n1", priorityClassName="gone")) is not None  # kept running
    c.run()
    assert c.store.get("Pod", "default", "a")["spec"]["nodeName"] == "n1"
    assert c.store.get("Pod", "default", "c")["status"]["phase"] == "Running"
    assert c.store.get("Pod", "default", "b") is None
