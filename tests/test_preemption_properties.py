"""Properties of preemption (DefaultPreemption PostFilter) on small random clusters.

Pods here ask for cpu only and nodes have plenty of memory, so "fits" is plain arithmetic
(cpu and pod count, terminating pods included, pods nominated to the node with priority >= the
pod's included) and the reference rules below are written from the spec, not from kubesched:

* Victims always have strictly lower priority than their preemptor; equal- or higher-priority pods
  are never preempted; a pod with preemptionPolicy Never preempts nobody (the Pod Priority and Preemption docs, "Pod Priority
  and Preemption": non-preempting PriorityClass, troubleshooting).
* Preemption only happens when the pod fits nowhere (checked on a snapshot of the cluster taken at
  the moment of each preemption), and on the chosen node the victims are enough and each one is
  needed (kube-scheduler's preemption code selectVictimsOnNode: remove all lower-priority pods, then reprieve greedily).
* After its victims are gone the preemptor gets a node, unless a higher-priority pod took the node
  it preempted on (the Pod Priority and Preemption docs, "Pods are preempted, but the preemptor is not scheduled").
* No node is ever over-committed, terminating pods still counting until the kubelet removes them;
  the scheduler's own accounting agrees with the reference at every step.
* PodDisruptionBudgets are best effort: the chosen node has the fewest budget-violating victims,
  then the lowest highest-victim priority, then the smallest priority sum, then the fewest victims
  (kube-scheduler's preemption code pickOneNodeForPreemption; a budget with an empty selector protects nothing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kubesched.cluster.cluster import Cluster
from kubesched.runtime.observer import NullObserver

# --- the small world -----------------------------------------------------------------------------

NODE_CPU = ["1", "2", "3", "4"]
POD_CPU = ["250m", "500m", "1", "1500m", "2", "3"]
# name -> (value, preemptionPolicy); no class at all means priority 0 (no global default here).
CLASSES: dict[str, tuple[int, str | None]] = {
    "low": (10, None), "mid": (100, None), "high": (1000, None), "top": (10000, None), "never": (500, "Never"),
}
LOW_CLASSES: list[str | None] = [None, "low", "mid"]
GRACE = [None, 0, 5, 60]  # None: the default 30 s
APPS = ["a", "b", "c"]
INT32_MAX = 2**31 - 1

PROPS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=150, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def millis(cpu: str) -> int:
    """A cpu quantity as written here ("250m", "2") in millicores."""
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def priority_of(pc: str | None) -> int:
    return CLASSES[pc][0] if pc else 0


def priority_class_objects() -> list[dict[str, Any]]:
    out = []
    for name, (value, policy) in CLASSES.items():
        obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": name}, "value": value}
        if policy:
            obj["preemptionPolicy"] = policy
        out.append(obj)
    return out


def node_obj(name: str, cpu: str, pods: str = "110") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": pods}}}


def pod_obj(name: str, cpu: str, pc: str | None = None, *, grace: int | None = None, node: str | None = None,
            labels: dict[str, str] | None = None, duration: str | None = None, port: int | None = None
            ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]}
    if port:  # a host port no other pod uses: NodePorts runs (and preemption's what-ifs copy nodes), never rejects
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": port}]
    if pc:
        spec["priorityClassName"] = pc
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    if duration:
        meta["annotations"] = {"sim.kubesched.io/duration": duration}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pdb_obj(name: str, selector: dict[str, Any], min_available: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": selector, "minAvailable": min_available}}


def with_budgets(allowed: dict[str, int], decoy: bool, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Budgets whose controller-computed disruptionsAllowed is min(allowed, matching pods): the
    pods are bare, so an integer minAvailable of (matching pods - allowed) says it."""
    objs = []
    for app, n in allowed.items():
        count = sum(1 for p in pods if (p["metadata"].get("labels") or {}).get("app") == app)
        objs.append(pdb_obj(f"pdb-{app}", {"matchLabels": {"app": app}}, max(0, count - n)))
    if decoy:  # selects every pod in policy/v1 and allows nothing; preemption ignores empty selectors
        objs.append(pdb_obj("pdb-empty", {}, len(pods)))
    return objs


# --- reference arithmetic on pod objects ---------------------------------------------------------

def cpu_of(pod: dict[str, Any]) -> int:
    return sum(millis(c["resources"]["requests"]["cpu"]) for c in pod["spec"]["containers"])


def prio(pod: dict[str, Any]) -> int:
    return pod["spec"].get("priority") or 0


def uid_of(pod: dict[str, Any]) -> str:
    return pod["metadata"]["uid"]


def key_of(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def holds_room(pod: dict[str, Any]) -> bool:
    return pod["status"].get("phase") not in ("Succeeded", "Failed")


def usage(pods: list[dict[str, Any]], node: str, without: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(cpu millis, pod count) of the pods bound to `node` that still hold room; terminating count."""
    on = [p for p in pods if p["spec"].get("nodeName") == node and holds_room(p) and uid_of(p) not in without]
    return sum(cpu_of(p) for p in on), len(on)


def fits(pods: list[dict[str, Any]], alloc: dict[str, tuple[int, int]], pod: dict[str, Any], node: str,
         without: frozenset[str] = frozenset()) -> bool:
    """Does `pod` fit on `node` with the pods in `without` gone, counting the pods nominated there
    with priority >= its own (RunFilterPluginsWithNominatedPods)?"""
    cpu, count = usage(pods, node, without)
    for p in pods:
        if (not p["spec"].get("nodeName") and (p["status"].get("nominatedNodeName") or "") == node
                and prio(p) >= prio(pod) and uid_of(p) != uid_of(pod)):
            cpu, count = cpu + cpu_of(p), count + 1
    cap_cpu, cap_pods = alloc[node]
    return cpu + cpu_of(pod) <= cap_cpu and count + 1 <= cap_pods


# --- instrumenting a run -------------------------------------------------------------------------

class SnapshotList(NullObserver, list[dict[str, Any]]):
    """The scheduler's observer: keeps each preemption with the store's pods as they were then."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self.cluster = cluster
        self.snapshots: list[list[dict[str, Any]]] = []
        self.marks: list[int] = []  # how many nomination changes the observer had seen by then
        self.observer: Observer | None = None

    def preempted(self, record: Mapping[str, Any]) -> None:
        self.snapshots.append(list(self.cluster.store.list("Pod")))
        self.marks.append(len(self.observer.nominations) if self.observer else 0)
        self.append(dict(record))


class Observer:
    """Watches pods: bindings (checked against allocatable the moment they happen), nomination
    changes, and the start of each preemption victim's deletion."""

    def __init__(self, cluster: Cluster, alloc: dict[str, tuple[int, int]]) -> None:
        self.cluster = cluster
        self.alloc = alloc
        self.violations: list[str] = []
        self.binds: list[tuple[float, str, str]] = []  # (time, uid, node)
        self.nominations: list[tuple[float, str, str]] = []  # (time, uid, node or "" when cleared)
        self.preempted: dict[str, tuple[float, str, int, list[int]]] = {}  # uid -> (time, node, prio, nominated)
        self.deleting: set[str] = set()
        self.priority: dict[str, int] = {}
        cluster.store.watch(self.on_pod, {"Pod"})

    def on_pod(self, ev: Any) -> None:
        new, old = ev.obj, ev.old or {}
        now = self.cluster.now()
        uid = uid_of(new)
        self.priority[uid] = prio(new)
        was_nominated = (old.get("status") or {}).get("nominatedNodeName") or ""
        nominated = "" if ev.type == "DELETED" or new["spec"].get("nodeName") else \
            (new.get("status") or {}).get("nominatedNodeName") or ""
        if nominated != was_nominated:
            self.nominations.append((now, uid, nominated))
        if uid not in self.deleting and (ev.type == "DELETED" or new["metadata"].get("deletionTimestamp")):
            self.deleting.add(uid)
            cond = next((c for c in (new.get("status") or {}).get("conditions") or ()
                         if c["type"] == "DisruptionTarget"), None)
            if cond is not None and cond.get("reason") == "PreemptionByScheduler":
                node = new["spec"].get("nodeName") or ""
                there = [prio(p) for p in self.cluster.store.list("Pod") if not p["spec"].get("nodeName")
                         and (p.get("status") or {}).get("nominatedNodeName") == node]
                self.preempted[uid] = (now, node, prio(new), there)
        node = new["spec"].get("nodeName")
        if ev.type != "DELETED" and node and not (old.get("spec") or {}).get("nodeName"):
            self.binds.append((now, uid, node))
            if ev.type != "ADDED":  # pre-bound input pods are the test's own doing
                self.check_node(node, f"binding {key_of(new)}", new)

    def check_node(self, node: str, when: str, bound: dict[str, Any] | None = None) -> None:
        """Nothing over allocatable; and a pod just bound left room for the pods nominated to the
        node with priority >= its own (they were counted as if running there)."""
        pods = list(self.cluster.store.list("Pod"))
        cpu, count = usage(pods, node)
        cap_cpu, cap_pods = self.alloc[node]
        if cpu > cap_cpu or count > cap_pods:
            self.violations.append(f"{when} at {self.cluster.now()}: {node} holds {cpu}m/{count} pods "
                                   f"> {cap_cpu}m/{cap_pods}")
        if bound is None:
            return
        waiting = [p for p in pods if not p["spec"].get("nodeName") and prio(p) >= prio(bound)
                   and (p.get("status") or {}).get("nominatedNodeName") == node]
        cpu += sum(cpu_of(p) for p in waiting)
        if cpu > cap_cpu or count + len(waiting) > cap_pods:
            self.violations.append(f"{when} at {self.cluster.now()} took room held on {node} for "
                                   f"{[key_of(p) for p in waiting]}")


def start(node_objs: list[dict[str, Any]], extra: Sequence[dict[str, Any]] = (),
          seed: int = 0) -> tuple[Cluster, SnapshotList, Observer]:
    cluster = Cluster(seed=seed)
    records = SnapshotList(cluster)
    cluster.scheduler.handle.observer = records
    alloc = {n["metadata"]["name"]: (millis(n["status"]["allocatable"]["cpu"]), int(n["status"]["allocatable"]["pods"]))
             for n in node_objs}
    obs = records.observer = Observer(cluster, alloc)
    for obj in [*priority_class_objects(), *node_objs, *extra]:
        assert cluster.create(obj) is not None, cluster.recorder.rejected
    return cluster, records, obs


def step_and_check(cluster: Cluster, obs: Observer, times: list[float]) -> None:
    """Run to each time in turn; at each, no node is over-committed and the scheduler's accounting
    (terminating pods included) equals the reference."""
    for t in [*times, None]:
        cluster.run(until=t)
        pods = list(cluster.store.list("Pod"))
        for node, (cap_cpu, cap_pods) in obs.alloc.items():
            cpu, count = usage(pods, node)
            assert cpu <= cap_cpu and count <= cap_pods, (cluster.now(), node, cpu, count)
            ni = cluster.scheduler.node_info(node)
            assert ni is not None
            assert ni.requested.get("cpu", 0) == cpu, (cluster.now(), node, dict(ni.requested), cpu)
            assert len(ni.pods) == count, (cluster.now(), node, len(ni.pods), count)


def final_pod(cluster: Cluster, key: str) -> Any:
    ns, name = key.split("/")
    h = cluster.recorder.pod(ns, name)
    assert h is not None, key
    return h


# --- the checks every run gets -------------------------------------------------------------------

def check_preemptions(cluster: Cluster, records: SnapshotList, obs: Observer, liveness: bool,
                      with_budgets: bool = False) -> None:
    assert obs.violations == []
    assert not cluster.recorder.rejected
    # The kubelet never had to turn a pod away for lack of room (it would mark it Failed).
    assert not [key_of(h.obj) for h in cluster.recorder.pods.values() if h.obj["status"].get("phase") == "Failed"]
    by_key = {key_of(h.obj): h for h in cluster.recorder.pods.values()}  # names are unique in these runs
    not_terminating_victims: set[str] = set()
    last_record: dict[str, int] = {}
    for i, (rec, snap, mark) in enumerate(zip(records, records.snapshots, records.marks, strict=True)):
        preemptor = next(p for p in snap if key_of(p) == rec["preemptor"])
        node = rec["node"]
        last_record[rec["preemptor"]] = i
        # (1, 3) victims: on the node, strictly lower priority, priorities as admitted.
        assert rec["victims"], rec
        assert rec["priority"] == prio(preemptor)
        assert preemptor["spec"].get("preemptionPolicy") != "Never", rec
        assert not preemptor["spec"].get("nodeName"), rec
        victims = []
        for v in rec["victims"]:
            pod = next(p for p in snap if key_of(p) == v["pod"])
            victims.append(pod)
            assert v["priority"] == prio(pod) < rec["priority"], (rec, v)
            assert pod["spec"].get("nodeName") == node, (rec, v)
            assert v["alreadyTerminating"] == bool(pod["metadata"].get("deletionTimestamp")), (rec, v)
            if not v["alreadyTerminating"]:
                not_terminating_victims.add(v["pod"])
        assert len({v["pod"] for v in rec["victims"]}) == len(rec["victims"])
        # (2) it fit nowhere as things stood; with the victims gone it fits, and every victim is needed.
        fit_somewhere = [n for n in obs.alloc if fits(snap, obs.alloc, preemptor, n)]
        assert fit_somewhere == [], (rec, fit_somewhere)
        gone = frozenset(uid_of(p) for p in victims)
        assert fits(snap, obs.alloc, preemptor, node, gone), rec
        for p in victims:
            assert not fits(snap, obs.alloc, preemptor, node, gone - {uid_of(p)}), (rec, key_of(p), "not needed")
        if not with_budgets:
            # Reprieve goes most important first: a victim did not fit back even next to just the
            # kept pods of its own priority or higher (a superset of those kept before its turn).
            potential = [p for p in snap if p["spec"].get("nodeName") == node and holds_room(p)
                         and prio(p) < rec["priority"]]
            kept = [p for p in potential if uid_of(p) not in gone]
            for v in victims:
                back = {uid_of(k) for k in kept if prio(k) >= prio(v)} | {uid_of(v)}
                removed = frozenset(uid_of(p) for p in potential) - back
                assert not fits(snap, obs.alloc, preemptor, node, removed), (rec, key_of(v), "reprieve order")
        # Not while its victims on the node it is still nominated to are terminating (eligibility).
        held = preemptor["status"].get("nominatedNodeName")
        if held:
            waiting_for = [key_of(p) for p in snap if p["spec"].get("nodeName") == held and holds_room(p)
                           and p["metadata"].get("deletionTimestamp") and prio(p) < rec["priority"]
                           and any(c["type"] == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
                                   for c in p["status"].get("conditions") or ())]
            assert waiting_for == [], (rec, held, waiting_for)
        # The preemptor is nominated to the node right after (or already was).
        uid = uid_of(preemptor)
        before = [n for _, u, n in obs.nominations[:mark] if u == uid]
        after = [n for t, u, n in obs.nominations[mark:] if u == uid and t == rec["time"]]
        assert after[:1] == [node] or (before[-1:] == [node] and preemptor["status"].get("nominatedNodeName") == node), \
            (rec, before, after)
        # Pods of lower priority nominated to the node lose that nomination at once (so they may
        # preempt elsewhere), unless every victim was already terminating (v1.35 async preemption).
        if not all(v["alreadyTerminating"] for v in rec["victims"]):
            for p in snap:
                if (not p["spec"].get("nodeName") and (p["status"].get("nominatedNodeName") or "") == node
                        and prio(p) < rec["priority"] and uid_of(p) != uid):
                    assert any(u == uid_of(p) and t == rec["time"] and n != node for t, u, n in obs.nominations), \
                        (rec, key_of(p), "kept its nomination")
    # (1) every pod removed as Preempted was a victim, and a higher-priority pod was nominated to
    # its node when its deletion began; every victim not already terminating ends Preempted.
    preempted = {key_of(h.obj) for h in cluster.recorder.pods.values() if h.reason == "Preempted"}
    assert preempted == not_terminating_victims
    for key in preempted:
        h = by_key[key]
        assert h.deleted
        _, node, priority, nominated_there = obs.preempted[uid_of(h.obj)]
        assert node == h.obj["spec"]["nodeName"]
        assert any(p > priority for p in nominated_there), (key, priority, nominated_there)
    preempted_events = {e.object.removeprefix("Pod/") for e in cluster.recorder.events if e.reason == "Preempted"}
    assert preempted_events == preempted
    # (4) after its last preemption, a preemptor left unbound lost the node to a higher-priority pod
    # nominated or bound there later.
    if not liveness:
        return
    for key, i in last_record.items():
        rec = records[i]
        h = by_key[key]
        if h.obj["spec"].get("nodeName"):
            continue
        assert not h.deleted
        takers = [u for t, u, n in obs.nominations + obs.binds
                  if n == rec["node"] and t >= rec["time"] and obs.priority[u] > rec["priority"]]
        assert takers, (rec, "preemptor never bound, nothing of higher priority took the node")


# --- 1-5. random workloads -----------------------------------------------------------------------

@st.composite
def budgets(draw: Any) -> tuple[dict[str, int], bool]:
    """Per app label value, maybe a budget allowing 0-2 disruptions; and whether to add a decoy
    budget with an empty selector (which protects nothing from preemption) allowing none."""
    allowed = {}
    for app in APPS:
        if draw(st.booleans()):
            allowed[app] = draw(st.sampled_from([0, 0, 1, 2]))
    return allowed, draw(st.booleans())


@st.composite
def workloads(draw: Any, classes: list[str | None] | None = None, durations: bool | None = None) -> dict[str, Any]:
    nodes = [node_obj(f"n{i}", draw(st.sampled_from(NODE_CPU)), draw(st.sampled_from(["110", "110", "2", "3"])))
             for i in range(draw(st.integers(1, 5)))]
    use_durations = draw(st.booleans()) if durations is None else durations
    pool = classes if classes is not None else [*LOW_CLASSES, "high", "top", "never"]
    pods = []
    for i in range(draw(st.integers(1, 12))):
        at = draw(st.sampled_from([0, 0, 0, 1, 5, 12, 45, 100]))
        duration = draw(st.sampled_from([None, None, "20s", "90s"])) if use_durations else None
        port = 10000 + i if draw(st.integers(0, 3)) == 0 else None
        app = draw(st.sampled_from([*APPS, None]))
        pods.append((at, pod_obj(f"p{i}", draw(st.sampled_from(POD_CPU)), draw(st.sampled_from(pool)),
                                 grace=draw(st.sampled_from(GRACE)), duration=duration, port=port,
                                 labels={"app": app} if app else None)))
    pdbs = with_budgets(*draw(budgets()), [p for _, p in pods]) if draw(st.integers(0, 2)) == 0 else []
    return {"nodes": nodes, "pods": pods, "pdbs": pdbs, "durations": use_durations, "seed": draw(st.integers(0, 3))}


def run_workload(w: dict[str, Any]) -> tuple[Cluster, SnapshotList, Observer]:
    cluster, records, obs = start(w["nodes"], [*w["pdbs"], *(p for at, p in w["pods"] if at == 0)], seed=w["seed"])
    for at, p in w["pods"]:
        if at:
            cluster.clock.call_at(at, lambda p=p: cluster.create(p))
    step_and_check(cluster, obs, [0, 1, 3, 6, 12, 20, 31, 46, 70, 100, 110, 140, 200])
    return cluster, records, obs


@PROPS
@given(workloads())
def test_preemption_invariants_on_random_workloads(w: dict[str, Any]) -> None:
    cluster, records, obs = run_workload(w)
    check_preemptions(cluster, records, obs, liveness=not w["durations"], with_budgets=bool(w["pdbs"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_equal_priorities_never_preempt(data: st.DataObject) -> None:
    pc = data.draw(st.sampled_from([None, "low", "high", "never"]))
    w = data.draw(workloads(classes=[pc]))
    cluster, records, obs = run_workload(w)
    check_preemptions(cluster, records, obs, liveness=False, with_budgets=bool(w["pdbs"]))
    assert list(records) == []
    assert not any(h.reason == "Preempted" for h in cluster.recorder.pods.values())


# --- by construction: the pod fits, or it cannot fit without preempting ---------------------------

@st.composite
def full_nodes(draw: Any, classes: list[str | None], slack: list[int], graces: list[int | None] = GRACE
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """1-5 nodes, each filled by pre-bound pods up to its cpu less a drawn slack (in millis)."""
    nodes, pods = [], []
    for i in range(draw(st.integers(1, 5))):
        cap = draw(st.sampled_from(NODE_CPU))
        name = f"n{i}"
        nodes.append(node_obj(name, cap))
        room = millis(cap) - draw(st.sampled_from(slack))
        while room >= 500 and len(pods) < 11:
            size = min(room, draw(st.sampled_from([500, 1000, 1500, 2000])))
            room -= size
            pods.append(pod_obj(f"r{len(pods)}", f"{size}m", draw(st.sampled_from(classes)),
                                grace=draw(st.sampled_from(graces)), node=name))
    return nodes, pods


def free_cpu(nodes: list[dict[str, Any]], running: list[dict[str, Any]]) -> dict[str, int]:
    free = {n["metadata"]["name"]: millis(n["status"]["allocatable"]["cpu"]) for n in nodes}
    for p in running:
        free[p["spec"]["nodeName"]] -= cpu_of(p)
    return free


@FEW
@given(st.data())
def test_no_preemption_when_the_pod_fits_somewhere(data: st.DataObject) -> None:
    nodes, running = data.draw(full_nodes([*LOW_CLASSES, "high"], [0, 0, 500, 1000, 2000]))
    want = data.draw(st.sampled_from(["250m", "500m", "1", "2"]))
    room = [n for n, f in free_cpu(nodes, running).items() if f >= millis(want)]
    assume(room)
    pc = data.draw(st.sampled_from(["high", "top"]))
    cluster, records, obs = start(nodes, [*running, pod_obj("new", want, pc)], seed=data.draw(st.integers(0, 3)))
    step_and_check(cluster, obs, [0, 1, 31])
    check_preemptions(cluster, records, obs, liveness=True)
    assert list(records) == []
    assert not any(h.reason == "Preempted" or h.deleted for h in cluster.recorder.pods.values())
    new = final_pod(cluster, "default/new")
    assert new.obj["spec"].get("nodeName") in room


@FEW
@given(st.data())
def test_preemption_happens_when_only_it_helps(data: st.DataObject) -> None:
    nodes, running = data.draw(full_nodes([*LOW_CLASSES, "high", "top"], [0, 0, 250]))
    pc = data.draw(st.sampled_from(["high", "top"]))
    want = data.draw(st.sampled_from(["1", "1500m", "2", "3"]))
    free = free_cpu(nodes, running)
    for p in running:
        if priority_of(p["spec"].get("priorityClassName")) < priority_of(pc):
            free[p["spec"]["nodeName"]] += cpu_of(p)
    helpful = [n for n, f in free.items() if f >= millis(want)]  # with every lower-priority pod gone
    assume(helpful)
    assume(all(f < millis(want) for f in free_cpu(nodes, running).values()))  # fits nowhere as it stands
    cluster, records, obs = start(nodes, [*running, pod_obj("new", want, pc)], seed=data.draw(st.integers(0, 3)))
    step_and_check(cluster, obs, [0, 1, 31])
    check_preemptions(cluster, records, obs, liveness=True)
    assert [r["preemptor"] for r in records] == ["default/new"], list(records)
    assert records[0]["node"] in helpful
    assert records[0]["time"] == 0
    # Nothing else happens in this cluster: once its victims are gone it is bound to that node.
    new = final_pod(cluster, "default/new")
    assert new.obj["spec"].get("nodeName") == records[0]["node"]


@FEW
@given(st.data())
def test_preemption_policy_never_waits(data: st.DataObject) -> None:
    """A full cluster of low pods: a `never` pod (priority 500) stays pending and preempts nothing;
    the same pod with an ordinary class of the same priority would have preempted."""
    nodes, running = data.draw(full_nodes(LOW_CLASSES, [0]))
    want = data.draw(st.sampled_from(["500m", "1"]))
    seed = data.draw(st.integers(0, 3))
    assume(all(f < millis(want) for f in free_cpu(nodes, running).values()))
    cluster, records, obs = start(nodes, [*running, pod_obj("new", want, "never")], seed=seed)
    step_and_check(cluster, obs, [0, 40])
    check_preemptions(cluster, records, obs, liveness=False)
    assert list(records) == []
    assert final_pod(cluster, "default/new").obj["spec"].get("nodeName") is None
    assert not any(h.deleted for h in cluster.recorder.pods.values())
    # Control: an ordinary class does preempt in the same cluster.
    cluster, records, obs = start(nodes, [*running, pod_obj("new", want, "high")], seed=seed)
    step_and_check(cluster, obs, [0, 40])
    check_preemptions(cluster, records, obs, liveness=True)
    assert [r["preemptor"] for r in records] == ["default/new"]
    assert final_pod(cluster, "default/new").obj["spec"].get("nodeName") == records[0]["node"]


@FEW
@given(st.data())
def test_higher_priority_preemptor_takes_the_node(data: st.DataObject) -> None:
    """P (mid) preempts on a full cluster of low pods with long grace periods; R (top, a whole node)
    arrives while P's victims are still terminating. If R preempts on P's node, P loses its
    nomination at once; in the end R is bound, and P is bound too unless R took its node."""
    nodes, running = data.draw(full_nodes([None, "low"], [0], graces=[30, 60]))
    big = max((node["status"]["allocatable"]["cpu"] for node in nodes), key=millis)
    p_cpu = data.draw(st.sampled_from(["500m", "1", "2"]))
    assume(millis(p_cpu) <= millis(big))
    assume(all(f < millis(p_cpu) for f in free_cpu(nodes, running).values()))
    r_at = data.draw(st.sampled_from([1, 5, 20]))
    cluster, records, obs = start(nodes, [*running, pod_obj("p", p_cpu, "mid")], seed=data.draw(st.integers(0, 3)))
    cluster.clock.call_at(r_at, lambda: cluster.create(pod_obj("r", big, "top")))
    step_and_check(cluster, obs, [0, r_at, 31, 61])
    check_preemptions(cluster, records, obs, liveness=True)
    assert [r["preemptor"] for r in records][:1] == ["default/p"], list(records)
    r_pod = final_pod(cluster, "default/r").obj
    assert r_pod["spec"].get("nodeName"), list(records)
    p_last = [r for r in records if r["preemptor"] == "default/p"][-1]
    if not final_pod(cluster, "default/p").obj["spec"].get("nodeName"):
        assert r_pod["spec"]["nodeName"] == p_last["node"], list(records)


# --- 6. disruption budgets -----------------------------------------------------------------------

@FEW
@given(st.data())
def test_pdb_protected_victim_avoided_when_possible(data: st.DataObject) -> None:
    """N nodes, each with one low pod taking the whole node; the pending pod needs a whole node.
    The victim is PDB-protected only if every candidate is; among equals, the lowest priority."""
    n = data.draw(st.integers(2, 5))
    allowed, decoy = data.draw(budgets())
    nodes, running, protected, priority = [], [], {}, {}
    for i in range(n):
        name = f"n{i}"
        nodes.append(node_obj(name, "2"))
        app = data.draw(st.sampled_from([*APPS, None]))
        pc = data.draw(st.sampled_from(LOW_CLASSES))
        running.append(pod_obj(f"v{i}", "2", pc, node=name, labels={"app": app} if app else None))
        protected[name] = [f"pdb-{app}"] if app in allowed and allowed[app] == 0 else []
        priority[name] = priority_of(pc)
    cluster, records, obs = start(nodes, [*with_budgets(allowed, decoy, running), *running],
                                  seed=data.draw(st.integers(0, 3)))
    cluster.run(until=0)  # the pods run and the budgets' status is settled before the preemptor comes
    cluster.create(pod_obj("new", "2", "high"))
    step_and_check(cluster, obs, [0, 1])
    check_preemptions(cluster, records, obs, liveness=True, with_budgets=True)
    assert [r["preemptor"] for r in records] == ["default/new"], list(records)
    rec = records[0]
    node = rec["node"]
    assert len(rec["victims"]) == 1
    assert rec["victims"][0]["pod"] == f"default/v{node[1:]}"
    assert rec["victims"][0]["violates"] == protected[node], (rec, protected)
    best = min(bool(p) for p in protected.values())
    assert bool(protected[node]) == best, (rec, protected)
    assert priority[node] == min(priority[m] for m in protected if bool(protected[m]) == best), (rec, priority)
    assert final_pod(cluster, "default/new").obj["spec"].get("nodeName") == node


@FEW
@given(st.data())
def test_pdb_chosen_node_minimises_violations_then_priorities(data: st.DataObject) -> None:
    """Every node full (1-3 low pods), the pending pod needs a whole node, so each node's victims
    are all its pods. With each pod under at most one budget the violations on a node are
    sum over budgets of max(0, covered - allowed). The chosen node minimises (violations, highest
    victim priority, sum of priority + 2^31, number of victims)."""
    n = data.draw(st.integers(2, 4))
    cap = data.draw(st.sampled_from(["2", "3"]))
    allowed, decoy = data.draw(budgets())
    nodes, running = [], []
    expected: dict[str, tuple[int, int, int, int]] = {}
    for i in range(n):
        name = f"n{i}"
        nodes.append(node_obj(name, cap))
        units = millis(cap) // 500
        sizes = []
        while units:
            size = min(units, data.draw(st.integers(1, 4)))
            if len(sizes) == 2:
                size = units
            sizes.append(size)
            units -= size
        covered: dict[str, int] = defaultdict(int)
        prios = []
        for size in sizes:
            app = data.draw(st.sampled_from([*APPS, None]))
            pc = data.draw(st.sampled_from(LOW_CLASSES))
            running.append(pod_obj(f"v{len(running)}", f"{size * 500}m", pc, node=name,
                                   labels={"app": app} if app else None))
            if app in allowed:
                covered[app] += 1
            prios.append(priority_of(pc))
        violations = sum(max(0, c - allowed[app]) for app, c in covered.items())
        expected[name] = (violations, max(prios), sum(p + INT32_MAX + 1 for p in prios), len(prios))
    cluster, records, obs = start(nodes, [*with_budgets(allowed, decoy, running), *running],
                                  seed=data.draw(st.integers(0, 3)))
    cluster.run(until=0)  # the pods run and the budgets' status is settled before the preemptor comes
    cluster.create(pod_obj("new", cap, "top"))
    step_and_check(cluster, obs, [0, 1])
    check_preemptions(cluster, records, obs, liveness=True, with_budgets=True)
    assert [r["preemptor"] for r in records] == ["default/new"], list(records)
    rec = records[0]
    node = rec["node"]
    assert {v["pod"] for v in rec["victims"]} == {key_of(p) for p in running if p["spec"]["nodeName"] == node}
    assert sum(1 for v in rec["victims"] if v["violates"]) == expected[node][0], (rec, expected)
    assert expected[node] == min(expected.values()), (rec, expected)
    assert final_pod(cluster, "default/new").obj["spec"].get("nodeName") == node
