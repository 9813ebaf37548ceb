"""RemovePodsViolatingTopologySpreadConstraint: rows of upstream's TestTopologySpreadConstraint
table (topologyspreadconstraint_test.go), run through a real cluster's first descheduling pass,
plus the arguments' defaults and validation (defaults_test.go, validation_test.go).

Pods are built like upstream's createTestPods: named pod-0, pod-1, ... in list order, 100m CPU,
owned by a ReplicaSet, in namespace ns1; nodes like BuildTestNode (2 CPU unless told).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster.cluster import Cluster
from kubesched.descheduler.plugins.topologyspread import (
    RemovePodsViolatingTopologySpreadConstraint as Plugin,
)
from kubesched.descheduler.policy import PolicyError, load_policy
from kubesched.sim.runner import build_cluster, load

NAME = Plugin.name
OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}]
FOO = {"foo": "bar"}


def node(name: str, cpu: str = "2", taints: list[dict[str, Any]] | None = None, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}}}


def zones(*specs: tuple[str, str], cpu: str = "2") -> list[dict[str, Any]]:
    return [node(name, cpu, zone=zone) for name, zone in specs]


def constraint(max_skew: int = 1, key: str = "zone", when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": FOO}, **extra}


def pods(*groups: dict[str, Any]) -> list[dict[str, Any]]:
    """createTestPods: each group is {count, node, labels, constraints, nodeSelector, affinity,
    tolerations, owned, priorityClassName}; pods are numbered across groups."""
    out: list[dict[str, Any]] = []
    for g in groups:
        for _ in range(g.get("count", 1)):
            spec: dict[str, Any] = {
                "nodeName": g["node"],
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]}
            for key in ("nodeSelector", "affinity", "tolerations", "priorityClassName"):
                if key in g:
                    spec[key] = g[key]
            if "constraints" in g:
                spec["topologySpreadConstraints"] = g["constraints"]
            meta = {"name": f"pod-{len(out)}", "namespace": "ns1", "labels": g.get("labels", FOO)}
            if g.get("owned", True):
                meta["ownerReferences"] = OWNER
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return out


def first_pass(tmp_path: Path, nodes: list[dict[str, Any]], pod_list: list[dict[str, Any]],
               args: dict[str, Any] | None = None, node_fit: bool = False,
               policy_extra: dict[str, Any] | None = None) -> tuple[list[str], Cluster]:
    """The pods the plugin evicts in the pass at t=0, in eviction order."""
    config = [{"name": "DefaultEvictor", "args": {"nodeFit": node_fit}}]
    if args is not None:
        config.append({"name": NAME, "args": args})
    policy = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **(policy_extra or {}),
              "profiles": [{"name": "p", "pluginConfig": config, "plugins": {"balance": {"enabled": [NAME]}}}]}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all([namespace, *nodes, *pod_list, policy]))
    cluster = build_cluster(load([str(path)]))
    cluster.run(until=0.0)
    d = cluster.descheduler
    assert d is not None and len(cluster.recorder.passes) == 1
    return [a.pod.split("/")[1] for a in cluster.recorder.passes[0].attempts if a.result == "Evicted"], cluster


TWO_ZONES = (("n1", "zoneA"), ("n2", "zoneB"))


# ---- the balancing arithmetic -------------------------------------------------------------------

@pytest.mark.parametrize(("name", "zone_nodes", "groups", "max_skew", "want"), [
    ("2 domains, sizes [2,1], maxSkew=1, move 0 pods", TWO_ZONES,
     [(1, "n1", True), (1, "n1", False), (1, "n2", False)], 1, 0),
    ("2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2]", TWO_ZONES,
     [(1, "n1", True), (2, "n1", False), (1, "n2", False)], 1, 1),
    ("2 domains, sizes [5,2], maxSkew=1, move 1 pod to achieve [4,3]", TWO_ZONES,
     [(1, "n1", True), (4, "n1", False), (2, "n2", False)], 1, 1),
    ("2 domains, sizes [4,0], maxSkew=1, move 2 pods to achieve [2,2]", TWO_ZONES,
     [(1, "n1", True), (3, "n1", False)], 1, 2),
    ("3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]",
     (("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC")), [(1, "n2", True), (100, "n3", False)], 1, 66),
    ("4 domains, sizes [0, 1, 3, 5], should move 3 to get [2, 2, 3, 2]",
     (("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC"), ("n4", "zoneD")),
     [(1, "n2", True), (3, "n3", False), (5, "n4", False)], 1, 3),
    ("2 domains size [2 6], maxSkew=2, should move 1 to get [3 5]", TWO_ZONES,
     [(1, "n1", True), (1, "n1", False), (6, "n2", False)], 2, 1),
    ("3 domains size [5 5 5], maxSkew=1, should move 0 to retain [5 5 5]",
     (("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC")), [(5, "n1", True), (5, "n2", True), (5, "n3", True)], 1, 0),
])
def test_upstream_balancing_rows(tmp_path: Path, name: str, zone_nodes: tuple[tuple[str, str], ...],
                                 groups: list[tuple[int, str, bool]], max_skew: int, want: int) -> None:
    """Only the first pod carries the constraint, as in upstream's rows: the namespace's
    constraints come from any pod, and every matching pod counts. The nodes get 20 CPUs: our
    kubelets admit pods against allocatable (upstream's fake cluster has no kubelet)."""
    pod_list = pods(*({"count": n, "node": where, **({"constraints": [constraint(max_skew)]} if with_c else {})}
                      for n, where, with_c in groups))
    evicted, _ = first_pass(tmp_path, zones(*zone_nodes, cpu="20"), pod_list)
    assert len(evicted) == want, name


def test_which_pods_move_8_7_0(tmp_path: Path) -> None:
    """'3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]': 3 from zoneA, then 2
    from zoneB, each from the back of its domain (pods listed by name, so pod-8 and pod-9 sort
    after pod-14)."""
    nodes = zones(("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC"))
    pod_list = pods({"count": 8, "node": "n1", "constraints": [constraint()]},
                    {"count": 7, "node": "n2", "constraints": [constraint()]})
    evicted, cluster = first_pass(tmp_path, nodes, pod_list)
    assert sorted(evicted) == ["pod-5", "pod-6", "pod-7", "pod-8", "pod-9"]
    # every replacement is expected in the empty zone
    d = cluster.descheduler
    assert d is not None and {a.landing for a in cluster.recorder.passes[0].attempts} == {"n3"}


def test_no_evictable_pods_no_balance(tmp_path: Path) -> None:
    """'[3,1], no pods eligible, move 0 pods': pods the evictor refuses are not even counted."""
    pod_list = pods({"node": "n1", "constraints": [constraint()], "owned": False},
                    {"count": 2, "node": "n1", "owned": False}, {"node": "n2", "owned": False})
    assert first_pass(tmp_path, zones(*TWO_ZONES), pod_list)[0] == []


def test_namespaces_and_label_selector_filter_the_counted_pods(tmp_path: Path) -> None:
    three_one = pods({"node": "n1", "constraints": [constraint()]}, {"count": 2, "node": "n1"}, {"node": "n2"})
    assert len(first_pass(tmp_path, zones(*TWO_ZONES), three_one, {"namespaces": {"exclude": ["kube-system"]}},
                          node_fit=True)[0]) == 1
    assert first_pass(tmp_path, zones(*TWO_ZONES), three_one, {"namespaces": {"include": ["other"]}})[0] == []
    two_zero = pods({"node": "n1", "constraints": [constraint()]}, {"node": "n1"})
    by_label = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["baz"]}]}
    assert first_pass(tmp_path, zones(*TWO_ZONES), two_zero, {"labelSelector": by_label})[0] == []
    by_label = {"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["baz"]}]}
    assert first_pass(tmp_path, zones(*TWO_ZONES), two_zero, {"labelSelector": by_label})[0] == ["pod-1"]


def test_soft_constraints_only_when_asked(tmp_path: Path) -> None:
    """'[3,1] ... (soft constraints)': ScheduleAnyway is balanced only with constraints listing it."""
    pod_list = pods({"node": "n1", "constraints": [constraint(when="ScheduleAnyway")]},
                    {"count": 2, "node": "n1"}, {"node": "n2"})
    assert first_pass(tmp_path, zones(*TWO_ZONES), pod_list)[0] == []
    both = {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}
    assert len(first_pass(tmp_path, zones(*TWO_ZONES), pod_list, both)[0]) == 1


def test_multiple_constraints_issue_564(tmp_path: Path) -> None:
    """'Multiple constraints (6 nodes/2 zones, 4 pods)': the soft zone constraint [3,1] moves
    one pod; the hard hostname constraint [1,1,1,1,0,0] is balanced."""
    nodes = [node(f"n{i}", **{"topology.kubernetes.io/zone": "zoneA" if i <= 3 else "zoneB",
                                "kubernetes.io/hostname": f"n{i}"}) for i in range(1, 7)]
    both = [{"labelSelector": {"matchLabels": {"app": "whoami"}}, "maxSkew": 1,
             "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
            {"labelSelector": {"matchLabels": {"app": "whoami"}}, "maxSkew": 1,
             "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]
    pod_list = pods(*({"node": n, "labels": {"app": "whoami"}, "constraints": both} for n in ("n1", "n2", "n3", "n4")))
    evicted, _ = first_pass(tmp_path, nodes, pod_list, {"constraints": ["DoNotSchedule", "ScheduleAnyway"]})
    assert len(evicted) == 1


def test_match_label_keys(tmp_path: Path) -> None:
    """matchLabelKeys rows: two pods of one ReplicaSet [2,0] move one; two ReplicaSets (different
    pod-template-hash) are two constraints of [1,0] each, both balanced."""
    hashed = [constraint(matchLabelKeys=["pod-template-hash"])]
    same = pods(*({"node": "n1", "labels": {**FOO, "pod-template-hash": "foo"}, "constraints": hashed}
                  for _ in range(2)))
    assert first_pass(tmp_path, zones(*TWO_ZONES), same)[0] == ["pod-1"]
    different = pods(*({"node": "n1", "labels": {**FOO, "pod-template-hash": h}, "constraints": hashed}
                       for h in ("foo", "bar")))
    assert first_pass(tmp_path, zones(*TWO_ZONES), different)[0] == []


# ---- which pods go first ------------------------------------------------------------------------

def test_pods_with_node_selector_or_affinity_go_last(tmp_path: Path) -> None:
    """'[4,0] only move 1 pod since pods with nodeSelector and nodeAffinity aren't evicted': two
    are chosen; one of them has a node affinity nothing matches, so only the plain pod goes."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]}}}
    pod_list = pods({"count": 2, "node": "n1", "constraints": [constraint()], "nodeSelector": {"zone": "zoneA"}},
                    {"node": "n1", "constraints": [constraint()], "affinity": affinity},
                    {"node": "n1", "constraints": [constraint()]})
    evicted, _ = first_pass(tmp_path, zones(*TWO_ZONES), pod_list, node_fit=True)
    assert evicted == ["pod-3"]


def test_highest_priority_plain_pod_goes_first(tmp_path: Path) -> None:
    """sortDomains orders by ascending priority and evicts from the back, so of pods without a
    node constraint the highest priority is chosen (what upstream's comparator does)."""
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value} for name, value in (("low", 10), ("mid", 500), ("high", 1000))]
    pod_list = pods({"node": "n1", "constraints": [constraint()], "priorityClassName": "mid"},
                    {"node": "n1", "priorityClassName": "high"}, {"node": "n1", "priorityClassName": "low"})
    evicted, _ = first_pass(tmp_path, [*classes, *zones(*TWO_ZONES)], pod_list)
    assert evicted == ["pod-1"]


def test_pods_that_fit_a_target_are_preferred(tmp_path: Path) -> None:
    """PR 1719: among the domain's pods, those that fit a node of a below-average domain are
    moved first, so a pod tolerating the target's taint is chosen over one that does not."""
    taint = [{"key": "taint-test", "value": "test", "effect": "NoSchedule"}]
    nodes = [node("n1", zone="zoneA"), node("n2", taints=taint, zone="zoneB")]
    tolerates = [{"key": "taint-test", "value": "test", "operator": "Equal", "effect": "NoSchedule"}]
    pod_list = pods({"node": "n1", "constraints": [constraint()], "tolerations": tolerates},
                    {"node": "n1", "constraints": [constraint()]})
    assert first_pass(tmp_path, nodes, pod_list)[0] == ["pod-0"]


# ---- topologyBalanceNodeFit and the node inclusion policies -------------------------------------

def test_topology_balance_node_fit_blocks_moves_the_target_cannot_take(tmp_path: Path) -> None:
    """'[2,0] move 0 pods since pod does not tolerate the tainted node' and its PreferNoSchedule
    twin (the scheduler ignores soft taints), then topologyBalanceNodeFit false evicts anyway."""
    pod_list = pods({"node": "n1", "constraints": [constraint()]},
                    {"node": "n1", "nodeSelector": {"zone": "zoneA"}})
    hard = [node("n1", zone="zoneA"), node("n2", taints=[{"key": "taint-test", "value": "test",
                                                          "effect": "NoSchedule"}], zone="zoneB")]
    assert first_pass(tmp_path, hard, pod_list)[0] == []
    soft = [node("n1", zone="zoneA"), node("n2", taints=[{"key": "taint-test", "value": "test",
                                                          "effect": "PreferNoSchedule"}], zone="zoneB")]
    assert first_pass(tmp_path, soft, pod_list)[0] == ["pod-0"]
    assert first_pass(tmp_path, hard, pod_list, {"topologyBalanceNodeFit": False})[0] == ["pod-0"]


def test_not_enough_cpu_in_the_small_domain(tmp_path: Path) -> None:
    """'[2,3,4], NodeFit is enabled, and not enough cpu on zoneA; nothing should be moved', and
    with topologyBalanceNodeFit false '1 should be moved to force scale-up'. Upstream keeps
    DefaultEvictor's nodeFit on for that row (its NodeFit sees room in zoneB); ours asks the
    scheduler, whose spread filter knows the replacement fits nowhere, so it is off here."""
    nodes = [node("n1", cpu="250m", zone="zoneA"), node("n2", cpu="1", zone="zoneB"), node("n3", cpu="1", zone="zoneC")]
    pod_list = pods({"count": 2, "node": "n1", "constraints": [constraint()]},
                    {"count": 3, "node": "n2", "constraints": [constraint()]},
                    {"count": 4, "node": "n3", "constraints": [constraint()]})
    assert first_pass(tmp_path, nodes, pod_list, node_fit=True)[0] == []
    assert first_pass(tmp_path, nodes, pod_list, {"topologyBalanceNodeFit": False})[0] == ["pod-8"]


def test_target_nodes_are_those_of_below_average_domains(tmp_path: Path) -> None:
    """'[[1,4],[2,1]], NodeFit is enabled; should move 1': pod-4 (the back of zoneA) fits zoneB;
    and '[[1,0],[1,1],[2,1]] not enough cpu on ZoneA': no zoneA node has room, nothing moves."""
    nodes = [node("a1", cpu="1", zone="zoneA"), node("a2", cpu="1", zone="zoneA"),
             node("b1", cpu="1", zone="zoneB"), node("b2", cpu="1", zone="zoneB")]
    pod_list = pods({"node": "a1", "constraints": [constraint()]}, {"count": 4, "node": "a2", "constraints": [constraint()]},
                    {"count": 2, "node": "b1", "constraints": [constraint()]}, {"node": "b2", "constraints": [constraint()]})
    assert first_pass(tmp_path, nodes, pod_list, node_fit=True)[0] == ["pod-4"]
    nodes = [node("a1", cpu="150m", zone="zoneA"), node("b1", cpu="1", zone="zoneB"), node("c1", cpu="1", zone="zoneC"),
             node("a2", cpu="50m", zone="zoneA"), node("b2", cpu="1", zone="zoneB"), node("c2", cpu="1", zone="zoneC")]
    pod_list = pods({"node": "a1", "constraints": [constraint()]}, {"node": "b1", "constraints": [constraint()]},
                    {"node": "b2", "constraints": [constraint()]}, {"count": 2, "node": "c1", "constraints": [constraint()]},
                    {"node": "c2", "constraints": [constraint()]})
    assert first_pass(tmp_path, nodes, pod_list, node_fit=True)[0] == []


def windows_nodes(*extra: str) -> list[dict[str, Any]]:
    names = ["linNodeA", "linNodeB", "linNodeC", "winNodeA", "winNodeB", "winNodeC", *extra]
    return [node(f"n{i + 1}", node=n, os="linux" if n.startswith("lin") else "windows") for i, n in enumerate(names)]


def test_node_affinity_policy_honor_limits_domains(tmp_path: Path) -> None:
    """The 'os=windows' rows: with nodeAffinityPolicy Honor (the default) the linux nodes are no
    domains, so [3,3,2] is balanced; a fourth windows node makes [3,3,2,0] and moves 2; with
    Ignore the linux nodes count as empty domains and pods move to... nowhere they fit."""
    def pod_list(policy: str | None = None) -> list[dict[str, Any]]:
        extra = {"nodeAffinityPolicy": policy} if policy else {}
        c = [constraint(key="node", **extra)]
        return pods(*({"count": n, "node": where, "constraints": c, "nodeSelector": {"os": "windows"}}
                      for n, where in ((3, "n4"), (3, "n5"), (2, "n6"))))
    assert first_pass(tmp_path, windows_nodes(), pod_list())[0] == []
    assert len(first_pass(tmp_path, windows_nodes("winNodeD"), pod_list())[0]) == 2
    assert first_pass(tmp_path, windows_nodes(), pod_list("Ignore"))[0] == []  # linux targets do not fit
    assert len(first_pass(tmp_path, windows_nodes(), pod_list("Ignore"), {"topologyBalanceNodeFit": False})[0]) == 4


def test_pinned_pods_are_their_own_constraint(tmp_path: Path) -> None:
    """'[0,0,0,4,3,1], 0 pod is evicted as pods of node:winNodeA can only be scheduled on this
    node and nodeFit is true', next to '1 pod is evicted from node 4' when they are not pinned."""
    def pod_list(first_selector: dict[str, str]) -> list[dict[str, Any]]:
        c = [constraint(key="node")]
        return pods({"count": 4, "node": "n4", "constraints": c, "nodeSelector": first_selector},
                    {"count": 3, "node": "n5", "constraints": c, "nodeSelector": {"os": "windows"}},
                    {"count": 1, "node": "n6", "constraints": c, "nodeSelector": {"os": "windows"}})
    assert len(first_pass(tmp_path, windows_nodes(), pod_list({"os": "windows"}))[0]) == 1
    assert first_pass(tmp_path, windows_nodes(), pod_list({"node": "winNodeA"}), node_fit=True)[0] == []


def test_node_taints_policy(tmp_path: Path) -> None:
    """Issue 839 ('Tainted nodes; nothing should be moved'): required node affinity keeps the
    tainted control-plane nodes out of the hostname domains. And nodeTaintsPolicy Honor drops a
    domain whose nodes' taints the pod does not tolerate, even when fit is not checked."""
    cp = [{"key": "node-role.kubernetes.io/controlplane", "value": "true", "effect": "NoSchedule"}]
    nodes = [node("controlplane1", taints=cp, zone="zoneA", **{"kubernetes.io/hostname": "cp-1"}),
             node("infraservices1", taints=[{"key": "infra_service", "effect": "NoSchedule"}], zone="zoneA",
                  infra_service="true", **{"kubernetes.io/hostname": "infra-1"}),
             node("app1", zone="zoneA", app_service="true", **{"kubernetes.io/hostname": "app-1"}),
             node("app2", zone="zoneB", app_service="true", **{"kubernetes.io/hostname": "app-2"})]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "app_service", "operator": "Exists"}]}]}}}
    c = [constraint(key="kubernetes.io/hostname")]
    pod_list = pods({"count": 2, "node": "app1", "constraints": c, "affinity": affinity},
                    {"count": 2, "node": "app2", "constraints": c, "affinity": affinity})
    assert first_pass(tmp_path, nodes, pod_list, node_fit=True)[0] == []

    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    tainted = [node("n1", zone="zoneA"), node("n2", taints=taint, zone="zoneB")]
    two_zero = pods(*({"node": "n1", "constraints": [constraint(nodeTaintsPolicy="Honor")]} for _ in range(2)))
    assert first_pass(tmp_path, tainted, two_zero, {"topologyBalanceNodeFit": False})[0] == []
    two_zero = pods(*({"node": "n1", "constraints": [constraint(nodeTaintsPolicy="Ignore")]} for _ in range(2)))
    assert first_pass(tmp_path, tainted, two_zero, {"topologyBalanceNodeFit": False})[0] == ["pod-1"]


# ---- the eviction loop ---------------------------------------------------------------------------

def test_limits(tmp_path: Path) -> None:
    """[4,0] chooses pod-2 and pod-3 (the back of n1's list, in list order): the per-node limit
    stops at one, so does the total limit."""
    pod_list = pods({"count": 4, "node": "n1", "constraints": [constraint()]})
    evicted, cluster = first_pass(tmp_path, zones(*TWO_ZONES), pod_list)
    assert evicted == ["pod-2", "pod-3"]
    evicted, cluster = first_pass(tmp_path, zones(*TWO_ZONES), pod_list, policy_extra={"maxNoOfPodsToEvictPerNode": 1})
    assert evicted == ["pod-2"]
    d = cluster.descheduler
    assert d is not None
    assert [a.result for a in cluster.recorder.passes[0].attempts] == ["Evicted", "LimitReached"]
    evicted, cluster = first_pass(tmp_path, zones(*TWO_ZONES), pod_list, policy_extra={"maxNoOfPodsToEvictTotal": 1})
    assert evicted == ["pod-2"]


def test_pdb_refusal_does_not_stop_the_others(tmp_path: Path) -> None:
    """An eviction the API refuses (a budget allowing no disruption for pod-2) is skipped and the
    next chosen pod is still evicted."""
    pod_list = pods({"count": 2, "node": "n1", "constraints": [constraint()]},
                    {"node": "n1", "constraints": [constraint()], "labels": {**FOO, "guarded": "yes"}},
                    {"node": "n1", "constraints": [constraint()]})
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard", "namespace": "ns1"},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"guarded": "yes"}}}}
    evicted, cluster = first_pass(tmp_path, [*zones(*TWO_ZONES), pdb], pod_list)
    d = cluster.descheduler
    assert d is not None
    assert [(a.pod, a.result) for a in cluster.recorder.passes[0].attempts] == [("ns1/pod-2", "Refused"), ("ns1/pod-3", "Evicted")]


# ---- arguments -----------------------------------------------------------------------------------

def test_defaults() -> None:
    assert Plugin.defaults({}) == {"constraints": ["DoNotSchedule"], "topologyBalanceNodeFit": True}
    assert Plugin.defaults({"topologyBalanceNodeFit": False, "constraints": ["ScheduleAnyway"]}) == {
        "constraints": ["ScheduleAnyway"], "topologyBalanceNodeFit": False}


def _policy_errors(args: dict[str, Any]) -> list[str]:
    policy = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
              "profiles": [{"name": "p", "pluginConfig": [{"name": NAME, "args": args}],
                            "plugins": {"balance": {"enabled": [NAME]}}}]}
    try:
        load_policy(policy)
    except PolicyError as e:
        return e.errors
    return []


def test_validation_messages() -> None:
    prefix = f"in profile p: {NAME}: "
    assert _policy_errors({"namespaces": {"include": ["default"]}}) == []
    assert _policy_errors({"namespaces": {"include": ["default"], "exclude": ["kube-system"]}}) == [
        prefix + "only one of Include/Exclude namespaces can be set"]
    assert _policy_errors({"constraints": ["DoNotSchedule", "ScheduleAnyway"]}) == []
    assert _policy_errors({"constraints": ["foo"]}) == [
        prefix + "constraint foo is not one of map[DoNotSchedule:{} ScheduleAnyway:{}]"]
    bad_selector = _policy_errors({"labelSelector": {"matchExpressions": [{"operator": "In"}]}})
    assert len(bad_selector) == 1
    assert bad_selector[0].startswith(prefix + "failed to get label selectors from strategy's params: ")
    assert _policy_errors({"includeSoftConstraints": True}) == [prefix + 'unknown field "includeSoftConstraints"']
    assert _policy_errors({"topologyBalanceNodeFit": "yes"}) == [
        prefix + "topologyBalanceNodeFit: must be a boolean, got 'yes'"]
