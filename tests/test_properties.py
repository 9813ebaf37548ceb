"""Properties of whole runs, checked on random clusters against independent reference rules.

* Safety: whatever the scheduler binds fits (cpu, memory, pod count), matches the pod's node
  selector / required node affinity, tolerates the node's NoSchedule/NoExecute taints, does not
  clash on host ports, and was not sent to a cordoned node — all judged on the cluster as it was
  at the moment of binding. A pod left Pending explains itself with "0/<N> nodes are available".
* Determinism: the same input and seed give the same JSON result.
* Fast path = slow path: the vectorised filter scan and score arrays agree with the per-node
  plugin methods.
* Host selection replays Go's container/heap exactly (reference written here from heap.go).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.loader import Dumper
from kubesched.cluster.cluster import Cluster
from kubesched.scheduler.framework import CycleState
from kubesched.scheduler.scheduler import select_host
from kubesched.scheduler.types import Code, PodInfo
from kubesched.scheduler.vectorised.filters import find_feasible
from kubesched.sim.results import to_json
from kubesched.sim.runner import load, simulate

# --- the small worlds the generators draw from ---------------------------------------------------

CPU_MILLIS = {"0": 0, "100m": 100, "250m": 250, "500m": 500, "1": 1000, "1500m": 1500, "2": 2000, "4": 4000}
MEM_BYTES = {"0": 0, "64Mi": 64 << 20, "128Mi": 128 << 20, "512Mi": 512 << 20, "1Gi": 1 << 30,
             "2Gi": 2 << 30, "4Gi": 4 << 30}
NODE_CPU = ["1", "2", "4"]
NODE_MEM = ["1Gi", "2Gi", "4Gi"]
NODE_PODS = ["1", "2", "3", "5", "110"]
LABELS = {"zone": ["a", "b", "c"], "disk": ["ssd", "hdd"], "gpu": ["true"], "cores": ["2", "4", "8"]}
TAINT_KEYS = ["dedicated", "spot", "gpu"]
TAINT_VALUES = ["x", "y"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
PRIORITY_CLASSES = {"low": 10, "high": 1000}
IMAGES = ["nginx:1.27", "redis", "postgres:17"]
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- generators ----------------------------------------------------------------------------------

@st.composite
def taints(draw: Any) -> list[dict[str, str]]:
    out, seen = [], set()
    for _ in range(draw(st.integers(0, 2))):
        key, effect = draw(st.sampled_from(TAINT_KEYS)), draw(st.sampled_from(EFFECTS))
        if (key, effect) in seen:
            continue
        seen.add((key, effect))
        out.append({"key": key, "value": draw(st.sampled_from(TAINT_VALUES)), "effect": effect})
    return out


@st.composite
def nodes(draw: Any, min_size: int = 1, max_size: int = 12) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(min_size, max_size))):
        labels = {k: draw(st.sampled_from(v)) for k, v in LABELS.items() if draw(st.booleans())}
        allocatable = {"cpu": draw(st.sampled_from(NODE_CPU)), "pods": draw(st.sampled_from(NODE_PODS))}
        if draw(st.integers(0, 9)):  # now and then a node reports no memory at all
            allocatable["memory"] = draw(st.sampled_from(NODE_MEM))
        spec: dict[str, Any] = {}
        node_taints = draw(taints())
        if node_taints:
            spec["taints"] = node_taints
        if draw(st.integers(0, 4)) == 0:
            spec["unschedulable"] = True
        status: dict[str, Any] = {"allocatable": allocatable}
        images = draw(st.lists(st.sampled_from(IMAGES), unique=True, max_size=2))
        if images:
            status["images"] = [{"names": [im], "sizeBytes": draw(st.sampled_from([50 << 20, 500 << 20]))}
                                for im in images]
        labels["kubernetes.io/hostname"] = f"n{i}"
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
                    "spec": spec, "status": status})
    return out


@st.composite
def resources(draw: Any) -> dict[str, Any]:
    amounts = {}
    if draw(st.booleans()):
        amounts["cpu"] = draw(st.sampled_from(list(CPU_MILLIS)))
    if draw(st.booleans()):
        amounts["memory"] = draw(st.sampled_from(list(MEM_BYTES)))
    if not amounts:
        return {}
    # Sometimes only limits: the API server copies them into requests.
    return {"limits": amounts} if draw(st.integers(0, 3)) == 0 else {"requests": amounts}


@st.composite
def tolerations(draw: Any) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            out.append({"operator": "Exists"})  # tolerates everything
            continue
        tol: dict[str, Any] = {"key": draw(st.sampled_from([*TAINT_KEYS, "node.kubernetes.io/unschedulable"]))}
        if draw(st.booleans()):
            tol["operator"] = "Exists"
        else:
            tol["operator"] = draw(st.sampled_from(["Equal", None])) or "Equal"
            tol["value"] = draw(st.sampled_from(TAINT_VALUES))
        effect = draw(st.sampled_from(["", *EFFECTS]))
        if effect:
            tol["effect"] = effect
        out.append(tol)
    return out


@st.composite
def node_selector_terms(draw: Any, node_names: list[str]) -> list[dict[str, Any]]:
    terms = []
    for _ in range(draw(st.integers(1, 2))):
        term: dict[str, Any] = {}
        exprs = []
        for _ in range(draw(st.integers(0, 2))):
            key = draw(st.sampled_from(list(LABELS)))
            op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
            if op in ("Gt", "Lt"):
                key = "cores"
                exprs.append({"key": key, "operator": op, "values": [draw(st.sampled_from(["1", "3", "5", "9"]))]})
            elif op in ("In", "NotIn"):
                values = draw(st.lists(st.sampled_from(LABELS[key]), min_size=1, unique=True))
                exprs.append({"key": key, "operator": op, "values": values})
            else:
                exprs.append({"key": key, "operator": op})
        if exprs:
            term["matchExpressions"] = exprs
        if not exprs or draw(st.integers(0, 4)) == 0:
            # A metadata.name field requirement takes exactly one value (API validation).
            name = draw(st.sampled_from([*node_names, "ghost"]))
            term["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": [name]}]
        terms.append(term)
    return terms


POD_LABELS = {"app": ["web", "db"], "tier": ["fe", "be"]}
TOPOLOGY_KEYS = ["zone", "kubernetes.io/hostname"]


@st.composite
def pod_labels(draw: Any) -> dict[str, str]:
    return {k: draw(st.sampled_from(v)) for k, v in POD_LABELS.items() if draw(st.booleans())}


@st.composite
def label_selector(draw: Any) -> dict[str, Any]:
    key = draw(st.sampled_from(list(POD_LABELS)))
    if draw(st.booleans()):
        return {"matchLabels": {key: draw(st.sampled_from(POD_LABELS[key]))}}
    return {"matchExpressions": [{"key": key, "operator": draw(st.sampled_from(["In", "NotIn"])),
                                  "values": [draw(st.sampled_from(POD_LABELS[key]))]}]}


@st.composite
def pod_affinity_term(draw: Any) -> dict[str, Any]:
    return {"labelSelector": draw(label_selector()), "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS))}


@st.composite
def inter_pod(draw: Any, spec: dict[str, Any]) -> None:
    """Spread constraints and pod (anti-)affinity, now and then."""
    if draw(st.integers(0, 3)) == 0:
        constraints, seen = [], set()
        for _ in range(draw(st.integers(1, 2))):
            key = draw(st.sampled_from(TOPOLOGY_KEYS))
            when = draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))
            if (key, when) in seen:
                continue
            seen.add((key, when))
            constraints.append({"maxSkew": draw(st.integers(1, 2)), "topologyKey": key, "whenUnsatisfiable": when,
                                "labelSelector": draw(label_selector())})
        spec["topologySpreadConstraints"] = constraints
    for kind in ("podAffinity", "podAntiAffinity"):
        if draw(st.integers(0, 4)) == 0:
            body: dict[str, Any] = {}
            if draw(st.booleans()):
                body["requiredDuringSchedulingIgnoredDuringExecution"] = [draw(pod_affinity_term())]
            else:
                body["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": draw(st.integers(1, 100)), "podAffinityTerm": draw(pod_affinity_term())}]
            spec.setdefault("affinity", {})[kind] = body


@st.composite
def pod_spec(draw: Any, node_names: list[str]) -> dict[str, Any]:
    containers = []
    port_used = False
    for i in range(draw(st.integers(1, 2))):
        c: dict[str, Any] = {"name": f"c{i}", "image": draw(st.sampled_from(IMAGES))}
        res = draw(resources())
        if res:
            c["resources"] = res
        if not port_used and draw(st.integers(0, 3)) == 0:
            port_used = True
            port: dict[str, Any] = {"containerPort": 80, "hostPort": draw(st.sampled_from([8080, 8081])),
                                    "protocol": draw(st.sampled_from(["TCP", "UDP"]))}
            if draw(st.booleans()):
                port["hostIP"] = draw(st.sampled_from(["10.0.0.1", "10.0.0.2"]))
            c["ports"] = [port]
        containers.append(c)
    spec: dict[str, Any] = {"containers": containers}
    inits = []
    for i in range(draw(st.integers(0, 2))):
        c = {"name": f"i{i}", "image": "busybox"}
        res = draw(resources())
        if res:
            c["resources"] = res
        if draw(st.integers(0, 2)) == 0:
            c["restartPolicy"] = "Always"  # a sidecar
        inits.append(c)
    if inits:
        spec["initContainers"] = inits
    if draw(st.integers(0, 2)) == 0:
        spec["nodeSelector"] = {k: draw(st.sampled_from(LABELS[k]))
                                for k in draw(st.lists(st.sampled_from(list(LABELS)), min_size=1, unique=True))}
    if draw(st.integers(0, 3)) == 0:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": draw(node_selector_terms(node_names))}}}
    if draw(st.integers(0, 3)) == 0:
        spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.integers(1, 100)), "preference": draw(node_selector_terms(node_names))[0]}]
    tols = draw(tolerations())
    if tols:
        spec["tolerations"] = tols
    pc = draw(st.sampled_from([None, *PRIORITY_CLASSES]))
    if pc:
        spec["priorityClassName"] = pc
    draw(inter_pod(spec))
    return spec


@st.composite
def workloads(draw: Any) -> dict[str, Any]:
    """Nodes, pods (some pre-bound, some arriving later, some finishing), and node changes over time."""
    node_objs = draw(nodes())
    names = [n["metadata"]["name"] for n in node_objs]
    pods = []
    for i in range(draw(st.integers(1, 14))):
        spec = draw(pod_spec(names))
        meta: dict[str, Any] = {"name": f"p{i}", "namespace": "default", "labels": draw(pod_labels())}
        if draw(st.integers(0, 5)) == 0:
            spec["nodeName"] = draw(st.sampled_from(names))
        if draw(st.integers(0, 4)) == 0:
            meta["annotations"] = {"sim.kubesched.io/duration": draw(st.sampled_from(["5s", "40s"]))}
        at = draw(st.sampled_from([0, 0, 0, 3, 20, 61]))
        pods.append((at, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}))
    changes = []
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.sampled_from([1, 10, 30, 60]))
        node = draw(st.sampled_from(names))
        if draw(st.booleans()):
            patch = {"spec": {"unschedulable": draw(st.sampled_from([True, None]))}}
        else:
            patch = {"spec": {"taints": draw(taints()) or None}}
        changes.append((at, node, patch))
    return {"nodes": node_objs, "pods": pods, "changes": changes, "seed": draw(st.integers(0, 3))}


def priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value} for name, value in PRIORITY_CLASSES.items()]


# --- reference rules (written from the upstream sources, not from kubesched) ---------------------

def amount(name: str, raw: str) -> int:
    return CPU_MILLIS[raw] if name == "cpu" else MEM_BYTES[raw]


def container_requests(c: dict[str, Any]) -> dict[str, int]:
    res = c.get("resources") or {}
    merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return {k: amount(k, v) for k, v in merged.items()}


def pod_requests(spec: dict[str, Any]) -> dict[str, int]:
    """component-helpers resource.PodRequests (sidecars included), no overhead."""
    reqs: dict[str, int] = {}
    for c in spec["containers"]:
        for k, v in container_requests(c).items():
            reqs[k] = reqs.get(k, 0) + v
    init_max: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        r = container_requests(c)
        if c.get("restartPolicy") == "Always":
            for k, v in r.items():
                reqs[k] = reqs.get(k, 0) + v
                sidecars[k] = sidecars.get(k, 0) + v
            phase = dict(sidecars)
        else:
            phase = {k: r.get(k, 0) + sidecars.get(k, 0) for k in set(r) | set(sidecars)}
        for k, v in phase.items():
            init_max[k] = max(init_max.get(k, 0), v)
    for k, v in init_max.items():
        reqs[k] = max(reqs.get(k, 0), v)
    return reqs


def node_alloc(node: dict[str, Any]) -> dict[str, int]:
    a = node["status"]["allocatable"]
    return {"cpu": CPU_MILLIS[a["cpu"]] if a["cpu"] in CPU_MILLIS else int(a["cpu"]) * 1000,
            "memory": MEM_BYTES[a["memory"]] if "memory" in a else 0, "pods": int(a.get("pods", 110))}


def tolerates(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    """v1 Toleration.ToleratesTaint."""
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("key") and tol["key"] != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (tol.get("value") or "") == (taint.get("value") or "")


def expression_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if key not in labels:
        return False
    have, want = int(labels[key]), int(values[0])
    return have > want if op == "Gt" else have < want


def term_matches(term: dict[str, Any], labels: dict[str, str], name: str) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(expression_matches(e, labels) for e in exprs):
        return False
    return all((name in f["values"]) == (f["operator"] == "In") for f in fields)


def affinity_ok(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(term_matches(t, labels, node["metadata"]["name"]) for t in required["nodeSelectorTerms"])


def host_ports(spec: dict[str, Any]) -> list[tuple[str, str, int]]:
    """util.GetHostPorts: sidecar init containers, then regular containers."""
    containers = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    containers += spec["containers"]
    return [(p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", p["hostPort"])
            for c in containers for p in c.get("ports") or () if p.get("hostPort")]


def ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    if a[1:] != b[1:]:
        return False
    return "0.0.0.0" in (a[0], b[0]) or a[0] == b[0]


# --- 1. safety of every binding ------------------------------------------------------------------

def run_workload(w: dict[str, Any]) -> tuple[Cluster, list[str], set[str]]:
    cluster = Cluster(seed=w["seed"])
    store = cluster.store
    violations: list[str] = []

    def on_pod(ev: Any) -> None:
        old, new = ev.old, ev.obj
        if ev.type != "MODIFIED" or (old or {}).get("spec", {}).get("nodeName") or not new["spec"].get("nodeName"):
            return
        name, node_name = new["metadata"]["name"], new["spec"]["nodeName"]
        node = store.get("Node", "", node_name)
        if node is None:
            violations.append(f"{name} bound to missing node {node_name}")
            return
        spec = new["spec"]
        node_spec = node.get("spec") or {}
        tols = spec.get("tolerations") or []
        if node_spec.get("unschedulable") and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tols):
            violations.append(f"{name} bound to cordoned {node_name}")
        for taint in node_spec.get("taints") or ():
            if taint["effect"] in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tols):
                violations.append(f"{name} bound to {node_name} with untolerated {taint}")
        if not affinity_ok(spec, node):
            violations.append(f"{name} bound to {node_name} against its node selector/affinity")
        on_node = [p for p in store.list("Pod", "default") if p["spec"].get("nodeName") == node_name
                   and p["status"].get("phase") not in ("Succeeded", "Failed")]
        alloc = node_alloc(node)
        used = {"cpu": 0, "memory": 0, "pods": len(on_node)}
        for p in on_node:
            for k, v in pod_requests(p["spec"]).items():
                used[k] += v
        prebound_only = [p for p in on_node if p["metadata"]["name"] in prebound]
        pre_used = {"cpu": 0, "memory": 0, "pods": len(prebound_only)}
        for p in prebound_only:
            for k, v in pod_requests(p["spec"]).items():
                pre_used[k] += v
        for k in ("cpu", "memory", "pods"):
            if used[k] > alloc[k] and pre_used[k] <= alloc[k]:
                violations.append(f"{name} overcommits {k} on {node_name}: {used[k]} > {alloc[k]}")
        mine = host_ports(spec)
        for p in on_node:
            if p["metadata"]["name"] == name:
                continue
            for theirs in host_ports(p["spec"]):
                if any(ports_conflict(m, theirs) for m in mine):
                    violations.append(f"{name} clashes on host port {theirs} with {p['metadata']['name']}")

    store.watch(on_pod, {"Pod"})
    prebound = {p["metadata"]["name"] for _, p in w["pods"] if p["spec"].get("nodeName")}
    for pc in priority_classes():
        cluster.create(pc)
    for n in w["nodes"]:
        cluster.create(n)
    for at, p in w["pods"]:
        if at == 0:
            cluster.create(p)
        else:
            cluster.clock.call_at(at, lambda p=p: cluster.create(p))
    for at, node, patch in w["changes"]:
        cluster.clock.call_at(at, lambda node=node, patch=patch: cluster.api.patch("Node", "", node, patch))
    cluster.run()
    return cluster, violations, prebound


@PROPS
@given(workloads())
def test_bindings_are_always_valid_and_pending_pods_explain_themselves(w: dict[str, Any]) -> None:
    cluster, violations, _ = run_workload(w)
    assert violations == []
    assert not cluster.recorder.rejected
    num_nodes = len(w["nodes"])
    for h in cluster.recorder.pods.values():
        pod = h.obj
        if h.deleted or pod["spec"].get("nodeName"):
            continue
        assert pod["status"]["phase"] == "Pending"
        cond = next(c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled")
        assert cond["status"] == "False"
        assert cond["reason"] == "Unschedulable"
        assert cond["message"].startswith(f"0/{num_nodes} nodes are available"), cond["message"]


@PROPS
@given(workloads())
def test_final_usage_never_exceeds_allocatable(w: dict[str, Any]) -> None:
    """At the end, no node is over its allocatable unless the input's pre-bound pods alone put it there."""
    cluster, _, prebound = run_workload(w)
    nodes_by_name = {n["metadata"]["name"]: n for n in w["nodes"]}
    for name, node in nodes_by_name.items():
        pods = [h.obj for h in cluster.recorder.pods.values() if not h.deleted and h.obj["spec"].get("nodeName") == name
                and h.obj["status"].get("phase") not in ("Succeeded", "Failed")]
        if any(p["metadata"]["name"] in prebound for p in pods):
            continue
        alloc = node_alloc(node)
        used = {"cpu": 0, "memory": 0, "pods": len(pods)}
        for p in pods:
            for k, v in pod_requests(p["spec"]).items():
                used[k] += v
        for k in ("cpu", "memory", "pods"):
            assert used[k] <= alloc[k], (name, k, used, alloc)
        # The scheduler's own accounting agrees with the reference.
        ni = cluster.scheduler.node_info(name)
        assert ni is not None
        assert len(ni.pods) == len(pods)
        assert ni.requested.get("cpu", 0) == used["cpu"]
        assert ni.requested.get("memory", 0) == used["memory"]


# --- 2. determinism ------------------------------------------------------------------------------

def scenario_documents(w: dict[str, Any]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [*priority_classes(), *w["nodes"]]
    events = []
    for at, p in w["pods"]:
        if at == 0:
            docs.append(p)
        else:
            events.append({"at": f"{at}s", "create": p})
    for at, node, patch in w["changes"]:
        events.append({"at": f"{at}s", "patch": {"kind": "Node", "name": node, "patch": patch}})
    docs.append({"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "prop"},
                 "spec": {"seed": w["seed"], "events": events}})
    return docs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_same_input_and_seed_give_the_same_result(w: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.yaml"
        # kubesched's Dumper quotes what kubectl would misread (a taint value `y` is true to it)
        path.write_text(yaml.dump_all(scenario_documents(w), Dumper=Dumper, sort_keys=False))
        first = to_json(simulate(load([str(path)])))
        second = to_json(simulate(load([str(path)])))
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert first == second
    assert len({p["uid"] for p in first["pods"]}) == len(first["pods"])


# --- 3. fast path = slow path ----------------------------------------------------------------------

DEFAULT_WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
                   "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
NORMALIZE = {"TaintToleration": True, "NodeAffinity": False}  # DefaultNormalizeScore(100, reverse)
NO_NORMALIZE = {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality"}


def default_normalize(scores: list[int], reverse: bool) -> list[int]:
    """helper.DefaultNormalizeScore."""
    top = max([0, *scores])
    if top == 0:
        return [100] * len(scores) if reverse else list(scores)
    out = [100 * s // top for s in scores]
    return [100 - s for s in out] if reverse else out


@st.composite
def filter_cases(draw: Any) -> dict[str, Any]:
    node_objs = draw(nodes(min_size=2, max_size=12))
    copies = draw(st.sampled_from([1, 1, 1, 12]))  # big enough for the chunked scan to take several rounds
    node_objs = [{**n, "metadata": {**n["metadata"], "name": f"{n['metadata']['name']}-{k}"}}
                 for k in range(copies) for n in node_objs]
    names = [n["metadata"]["name"] for n in node_objs]
    running = []
    for i in range(draw(st.integers(0, 10 + len(names) // 4))):
        spec = draw(pod_spec(names))
        spec["nodeName"] = draw(st.sampled_from(names))
        running.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"r{i}", "labels": draw(pod_labels())},
                        "spec": spec})
    incoming = draw(pod_spec(names))
    if draw(st.booleans()):  # half the time, a pod that many nodes accept, so that scoring has work
        incoming.pop("nodeSelector", None)
        (incoming.get("affinity") or {}).get("nodeAffinity", {}).pop(
            "requiredDuringSchedulingIgnoredDuringExecution", None)
        incoming["tolerations"] = [{"operator": "Exists"}]
    incoming["schedulerName"] = "nobody"  # stored, admitted, but never scheduled by the cluster itself
    return {"nodes": node_objs, "running": running, "pod": incoming, "labels": draw(pod_labels()), "start": draw(st.integers(0, 10**6)),
            "want": draw(st.one_of(st.integers(1, 12), st.integers(1, len(node_objs))))}


def status_tuple(status: Any) -> tuple[str, Code, tuple[str, ...]]:
    return status.plugin, status.code, tuple(status.reasons)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filter_cases())
def test_vectorised_filter_and_score_equal_per_node_plugins(case: dict[str, Any]) -> None:
    cluster = Cluster()
    for pc in priority_classes():
        cluster.create(pc)
    for n in case["nodes"]:
        cluster.create(n)
    for p in case["running"]:
        cluster.create(p)
    stored = cluster.create({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "incoming", "labels": case["labels"]}, "spec": case["pod"]})
    assert stored is not None
    cluster.run()
    sched = cluster.scheduler
    profile = sched.profiles["default-scheduler"]
    pod = PodInfo.of(cluster.store.get("Pod", "default", "incoming"))
    state = CycleState()
    all_nodes, all_slots = sched.cache.ordered()
    pre, status, _ = profile.run_pre_filter(state, pod, all_nodes)
    if not status.ok:
        return
    nodes_, slots = all_nodes, all_slots
    if pre.node_names is not None:
        keep = [i for i, n in enumerate(all_nodes) if n.name in pre.node_names]
        nodes_, slots = [all_nodes[i] for i in keep], all_slots[keep]
    n = len(nodes_)
    if n == 0:
        return
    start, want = case["start"] % n, min(case["want"], n)

    fast = find_feasible(profile, state, pod, nodes_, slots, sched.cache.table, start, want)

    # One node at a time, as findNodesThatPassFilters does with one worker: after `want`
    # feasible nodes the walk goes on, and the next feasible node cancels it uncounted.
    slow_feasible, slow_statuses, processed = [], {}, 0
    for i in range(n):
        ni = nodes_[(start + i) % n]
        st_ = profile.filter_node(state, pod, ni)
        if st_.ok:
            if len(slow_feasible) == want:
                break
            slow_feasible.append(ni.name)
        else:
            slow_statuses[ni.name] = status_tuple(st_)
        processed += 1
    assert [ni.name for ni in fast.feasible] == slow_feasible
    assert {k: status_tuple(v) for k, v in fast.statuses.items()} == slow_statuses
    assert fast.processed == processed

    # Scores over every feasible node, in iteration order from 0.
    everything = find_feasible(profile, state, pod, nodes_, slots, sched.cache.table, 0, n)
    feasible = everything.feasible
    if len(feasible) < 2:
        return
    assert profile.run_pre_score(state, pod, feasible).ok
    feasible_slots = np.array([ni.slot for ni in feasible], dtype=np.int64)
    totals, detail = profile.run_score(state, pod, feasible, feasible_slots, sched.cache.table)
    expected = [0] * len(feasible)
    ran = set()
    for pl in profile.at("score"):
        if pl.name in state.skip_score:
            continue
        ran.add(pl.name)
        raw = [int(pl.score(state, pod, ni)) for ni in feasible]
        if pl.name in NORMALIZE:
            norm = default_normalize(raw, NORMALIZE[pl.name])
        elif pl.name in NO_NORMALIZE:
            norm = raw
        else:  # plugin-specific normalisation (spread, inter-pod affinity), fed the per-node scores
            norm = [int(x) for x in pl.normalize(state, pod, np.array(raw, dtype=np.int64))]
        assert all(0 <= s <= 100 for s in norm), (pl.name, norm)
        assert list(detail[pl.name][0]) == raw, pl.name
        assert list(detail[pl.name][1]) == norm, pl.name
        weight = DEFAULT_WEIGHTS[pl.name]
        assert detail[pl.name][2] == weight
        expected = [e + s * weight for e, s in zip(expected, norm, strict=True)]
    assert set(detail) == ran
    assert list(totals) == expected


# --- 4. host selection = Go's container/heap -------------------------------------------------------

def go_heap_winner(totals: list[int]) -> int:
    """sort.Interface over (index, total) with Less(i, j) = T[i] > T[j]; heap.Init then heap.Pop."""
    h = list(range(len(totals)))

    def less(i: int, j: int) -> bool:
        return totals[h[i]] > totals[h[j]]

    def swap(i: int, j: int) -> None:
        h[i], h[j] = h[j], h[i]

    def down(i0: int, n: int) -> None:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(j2, j1):
                j = j2
            if not less(j, i):
                break
            swap(i, j)
            i = j

    n = len(h)
    for i in range(n // 2 - 1, -1, -1):  # heap.Init
        down(i, n)
    n = len(h) - 1  # heap.Pop: swap root with last, fix, remove last
    swap(0, n)
    down(0, n)
    return h.pop()


def test_select_host_known_example() -> None:
    # From the upstream notes: the root after heapify is index 3, not the first top score at index 2.
    assert go_heap_winner([1, 2, 5, 5]) == 3
    assert select_host(np.array([1, 2, 5, 5], dtype=np.int64)) == 3
    assert select_host(np.array([7], dtype=np.int64)) == 0
    assert select_host(np.array([5, 5, 5], dtype=np.int64)) == 0


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=40))
def test_select_host_replays_go_heap(totals: list[int]) -> None:
    winner = select_host(np.array(totals, dtype=np.int64))
    assert winner == go_heap_winner(totals)
    assert totals[winner] == max(totals)
