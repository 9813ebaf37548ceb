"""FitError.Error() (pkg/scheduler/framework/types.go): the "0/N nodes are available" message.

Reasons are counted over nodes and printed as "<count> <reason>" sorted as plain strings; nodes a
PreFilter result left out count with the absent-node status; a PreFilter rejection replaces the
node histogram; the PostFilter message is appended with no period of its own.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import get_condition
from kubesched.cluster.cluster import Cluster
from kubesched.scheduler.types import Code, Status
from kubesched.scheduler.vectorised.filters import fit_error_message

UU, U = Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE
TAINT = "node(s) had untolerated taint(s)"
CORDONED = "node(s) were unschedulable"


def st(*reasons: str, code: Code = UU, plugin: str = "P") -> Status:
    return Status(code, reasons, plugin)


def statuses(**groups: tuple[int, Status]) -> dict[str, Status]:
    out = {}
    for prefix, (count, status) in groups.items():
        for i in range(count):
            out[f"{prefix}{i}"] = status
    return out


def test_counts_sort_as_strings_not_numbers() -> None:
    s = statuses(t=(10, st(TAINT)), c=(2, st("Insufficient cpu", code=U)))
    assert fit_error_message(12, s, None, None, None) == (
        "0/12 nodes are available: 10 node(s) had untolerated taint(s), 2 Insufficient cpu.")
    s = statuses(m=(10, st("Insufficient memory", code=U)), u=(2, st(CORDONED)))
    assert fit_error_message(12, s, None, None, None) == (
        "0/12 nodes are available: 10 Insufficient memory, 2 node(s) were unschedulable.")
    # Same count: the reason text decides.
    s = statuses(u=(3, st(CORDONED)), t=(3, st(TAINT)))
    assert fit_error_message(6, s, None, None, None) == (
        "0/6 nodes are available: 3 node(s) had untolerated taint(s), 3 node(s) were unschedulable.")


def test_one_node_can_count_for_several_reasons() -> None:
    both = st("Too many pods", "Insufficient cpu", "Insufficient memory", code=U)
    s = statuses(a=(2, both), b=(1, st("Insufficient cpu", code=U)))
    assert fit_error_message(3, s, None, None, None) == (
        "0/3 nodes are available: 2 Insufficient memory, 2 Too many pods, 3 Insufficient cpu.")


def test_absent_nodes_count_with_the_absent_status() -> None:
    absent = st("node(s) didn't satisfy plugin(s) [NodeAffinity]")
    s = statuses(a=(2, st("Insufficient cpu", code=U)))
    assert fit_error_message(5, s, absent, None, None) == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    # Every node absent.
    assert fit_error_message(4, {}, absent, None, None) == (
        "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeAffinity].")


def test_the_default_absent_status_has_no_reasons() -> None:
    s = statuses(a=(1, st("Insufficient cpu", code=U)))
    assert fit_error_message(3, s, Status(UU), None, None) == "0/3 nodes are available: 1 Insufficient cpu."
    assert fit_error_message(3, s, None, None, None) == "0/3 nodes are available: 1 Insufficient cpu."


def test_no_reasons_at_all_leaves_the_bare_prefix() -> None:
    assert fit_error_message(3, {}, None, None, None) == "0/3 nodes are available:"


def test_a_prefilter_message_replaces_the_node_reasons() -> None:
    rejected = st("pod affinity terms conflict", plugin="NodeAffinity")
    s = {f"n{i}": rejected for i in range(3)}
    assert fit_error_message(3, s, None, "pod affinity terms conflict", None) == (
        "0/3 nodes are available: pod affinity terms conflict.")


def test_the_postfilter_message_is_appended_without_a_period() -> None:
    s = statuses(a=(1, st("Insufficient cpu", code=U)))
    post = "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    assert fit_error_message(1, s, None, None, post) == (
        "0/1 nodes are available: 1 Insufficient cpu. " + post)
    assert fit_error_message(2, {}, None, "pod affinity terms conflict", "not helpful") == (
        "0/2 nodes are available: pod affinity terms conflict. not helpful")
    assert fit_error_message(2, {}, None, None, "not helpful") == "0/2 nodes are available: not helpful"


# --- the same messages from a running cluster ----------------------------------------------------------

def node(name: str, cpu: str = "4", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"disk": name[:3]}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pending_message(cluster: Cluster, name: str) -> str:
    pod = cluster.store.get("Pod", "default", name)
    assert pod is not None and not pod["spec"].get("nodeName")
    cond = get_condition(pod, "PodScheduled")
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable"
    events = [e.message for e in cluster.recorder.events if e.object == f"Pod/default/{name}" and e.reason == "FailedScheduling"]
    assert events and events[-1] == cond["message"]
    return cond["message"]


def test_cluster_message_with_many_reasons() -> None:
    cluster = Cluster()
    for i in range(10):
        cluster.create(node(f"tainted-{i}", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    cluster.create(node("small-0", cpu="1"))
    cluster.create(node("small-1", cpu="1"))
    cluster.create(node("cordoned", unschedulable=True))
    cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}})
    cluster.run()
    assert pending_message(cluster, "big") == (
        "0/13 nodes are available: 1 node(s) were unschedulable, 10 node(s) had untolerated taint(s), "
        "2 Insufficient cpu. no new claims to deallocate, preemption: 0/13 nodes are available: "
        "13 Preemption is not helpful for scheduling.")


def test_cluster_message_with_nodes_left_out_by_prefilter() -> None:
    cluster = Cluster()
    for name in ("n0", "n1", "n2"):
        cluster.create(node(name, cpu="1"))
    field = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
    cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pinned"},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
                             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                 "nodeSelectorTerms": [field]}}}}})
    cluster.run()
    assert pending_message(cluster, "pinned") == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def test_cluster_message_when_prefilter_rejects() -> None:
    cluster = Cluster()
    for name in ("n0", "n1"):
        cluster.create(node(name))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]},
                            {"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
    cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "conflict"},
                    "spec": {"containers": [{"name": "c"}],
                             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                 "nodeSelectorTerms": [term]}}}}})
    cluster.run()
    # n1 ∩ n0 within one term is empty, and it is the only term: NodeAffinity's PreFilter rejects,
    # so DynamicResources' PreFilter never runs and its PostFilter ends the phase reading no state.
    assert pending_message(cluster, "conflict") == "0/2 nodes are available: pod affinity terms conflict. not found"
