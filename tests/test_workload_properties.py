"""Properties of the ReplicaSet and DaemonSet controllers under random disruption.

A ReplicaSet keeps `spec.replicas` active pods (the rescheduling design proposal and pkg/controller/replicaset: a pod
stops counting when its graceful termination starts or it fails), so whatever happens to its pods
— deleted (gracefully or at once), evicted through the Eviction API (a PodDisruptionBudget may
refuse), failed on their node — and however its scale changes, the rules below hold when the
cluster has room for every replica:

* Right after each change (at the same virtual instant) the ReplicaSet has exactly spec.replicas
  active pods: replacements and scale-ups are created at once, scale-downs delete at once.
* Once things settle (graceful terminations over) every replica runs, nothing is terminating, and
  the status says so: replicas, readyReplicas, availableReplicas equal spec.replicas,
  terminatingReplicas is 0 and observedGeneration is the current generation.
* Every pod it made carries the template's labels and a controller reference to it.

A DaemonSet runs one pod on every node that should run it (NodeShouldRunDaemonPod): here, nodes
labelled role=worker without a NoExecute taint the pods do not tolerate. Whatever the order of
label changes, taints and pod deletions, once things settle each such node has exactly one live
daemon pod, Running there, every other node has none, and no daemon pod is left unscheduled.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import controller_of, is_terminal, is_terminating
from kubesched.apiserver.errors import APIError
from kubesched.cluster.cluster import Cluster

# ---- ReplicaSet -----------------------------------------------------------------------------------------

LABELS = {"app": "web", "tier": "front"}
MAX_REPLICAS = 6
PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ACTIONS = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, MAX_REPLICAS)),
    st.tuples(st.just("delete-now"), st.integers(0, MAX_REPLICAS)),
    st.tuples(st.just("evict"), st.integers(0, MAX_REPLICAS)),
    st.tuples(st.just("fail"), st.integers(0, MAX_REPLICAS)),
    st.tuples(st.just("scale"), st.integers(0, MAX_REPLICAS)),
)


def build(replicas: int, nodes: int, min_available: int | None) -> Cluster:
    c = Cluster()
    for i in range(nodes):
        c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                  "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    if min_available is not None:
        c.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                  "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}}})
    c.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
              "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [
                           {"name": "c", "image": "web", "resources": {"requests": {"cpu": "100m"}}}]}}}})
    return c


def owned(c: Cluster) -> list[dict[str, Any]]:
    uid = c.api.get("ReplicaSet", "default", "web")["metadata"]["uid"]
    return sorted((p for p in c.api.list("Pod", "default") if (controller_of(p) or {}).get("uid") == uid),
                  key=lambda p: p["metadata"]["name"])


def active(c: Cluster) -> list[dict[str, Any]]:
    return [p for p in owned(c) if not is_terminating(p) and not is_terminal(p)]


def apply(c: Cluster, op: str, arg: int) -> None:
    if op == "scale":
        c.api.patch("ReplicaSet", "default", "web", {"spec": {"replicas": arg}})
        return
    candidates = active(c) if op != "delete" else owned(c)
    if not candidates:
        return
    name = candidates[arg % len(candidates)]["metadata"]["name"]
    try:
        if op == "delete":
            c.api.delete("Pod", "default", name)
        elif op == "delete-now":
            c.api.delete("Pod", "default", name, grace_period=0)
        elif op == "evict":
            c.api.evict("default", name)
        elif c.api.get("Pod", "default", name)["spec"].get("nodeName"):
            c.api.update_status("Pod", "default", name, lambda s: s.update(phase="Failed", reason="Evicted"))
    except APIError:
        pass  # an eviction the budget refuses, a pod already gone


@PROPS
@given(replicas=st.integers(0, MAX_REPLICAS), nodes=st.integers(1, 3),
       min_available=st.one_of(st.none(), st.integers(0, 3)),
       steps=st.lists(st.tuples(st.sampled_from([0, 1, 5, 40]), ACTIONS), max_size=12))
def test_a_replica_set_converges_to_its_replica_count(replicas: int, nodes: int, min_available: int | None,
                                                       steps: list[tuple[int, tuple[str, int]]]) -> None:
    c = build(replicas, nodes, min_available)
    c.run(until=0)
    t = 0.0
    for gap, (op, arg) in steps:
        t += gap
        c.run(until=t)
        apply(c, op, arg)
        c.run(until=t)
        want = c.api.get("ReplicaSet", "default", "web")["spec"]["replicas"]
        assert len(active(c)) == want, f"after {op} {arg} at {t}s"
    c.run(until=t + 60)
    rs = c.api.get("ReplicaSet", "default", "web")
    want = rs["spec"]["replicas"]
    pods = owned(c)
    running = [p for p in pods if not is_terminating(p) and p["status"].get("phase") == "Running"]
    assert len(running) == want and not any(is_terminating(p) for p in pods)
    assert all(p["metadata"]["labels"] == LABELS for p in pods)
    status = rs["status"]
    assert (status["replicas"], status.get("readyReplicas", 0), status.get("availableReplicas", 0)) == (want,) * 3
    assert status["terminatingReplicas"] == 0 and status["observedGeneration"] == rs["metadata"]["generation"]


# ---- DaemonSet ------------------------------------------------------------------------------------------

NODES = 3
NODE_ACTIONS = st.tuples(st.sampled_from(["label", "unlabel", "taint", "untaint", "delete-pod"]),
                         st.integers(0, NODES - 1))


def build_daemon_set(workers: list[bool]) -> Cluster:
    c = Cluster()
    for i, worker in enumerate(workers):
        c.create({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": f"n{i}", "labels": {"role": "worker"} if worker else {}},
                  "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    c.create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
              "spec": {"selector": {"matchLabels": {"app": "agent"}},
                       "template": {"metadata": {"labels": {"app": "agent"}},
                                    "spec": {"nodeSelector": {"role": "worker"},
                                             "containers": [{"name": "c", "image": "agent"}]}}}})
    return c


def apply_to_node(c: Cluster, op: str, i: int) -> None:
    name = f"n{i}"
    if op in ("label", "unlabel"):
        c.api.patch("Node", "", name, {"metadata": {"labels": {"role": "worker" if op == "label" else None}}})
    elif op in ("taint", "untaint"):
        taints = [{"key": "maintenance", "effect": "NoExecute"}] if op == "taint" else None
        c.api.patch("Node", "", name, {"spec": {"taints": taints}})
    else:
        for p in c.api.list("Pod", "default"):
            if p["spec"].get("nodeName") == name and not is_terminating(p):
                c.api.delete("Pod", "default", p["metadata"]["name"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workers=st.lists(st.booleans(), min_size=NODES, max_size=NODES),
       steps=st.lists(st.tuples(st.sampled_from([0, 1, 20]), NODE_ACTIONS), max_size=10))
def test_a_daemon_set_runs_one_pod_on_each_node_that_should_run_it(
        workers: list[bool], steps: list[tuple[int, tuple[str, int]]]) -> None:
    c = build_daemon_set(workers)
    t = 0.0
    for gap, (op, i) in steps:
        t += gap
        c.run(until=t)
        apply_to_node(c, op, i)
    c.run(until=t + 60)
    for n in c.api.list("Node"):
        eligible = (n["metadata"].get("labels") or {}).get("role") == "worker" and not (n.get("spec") or {}).get("taints")
        live = [p for p in c.api.list("Pod", "default") if not is_terminating(p) and not is_terminal(p)
                and (p["spec"].get("nodeName") == n["metadata"]["name"])]
        assert len(live) == (1 if eligible else 0), n["metadata"]["name"]
        assert all(p["status"].get("phase") == "Running" for p in live)
    assert not [p for p in c.api.list("Pod", "default") if not p["spec"].get("nodeName")]
