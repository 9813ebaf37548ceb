"""How each kind of Scenario `expect` entry is judged against the run at the entry's time: one
check per kind of entry, subclassing the loader's class for that kind (kubesched.input.expectations)
so the fields it reads are the fields the loader accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, cast

from kubesched.api.dra.claims import (
    POD_CLAIM_NAME_ANNOTATION,
    allocation,
    extended_claim_name,
    owning_pod,
    reserved_for,
)
from kubesched.api.dra.extended import CLAIM_ANNOTATION
from kubesched.api.objects import get_condition
from kubesched.api.quantity import format_amount, resource_amount
from kubesched.api.storage import ANN_SELECTED_NODE
from kubesched.cluster.cluster import Cluster
from kubesched.cluster.recorder import Recorder
from kubesched.input import expectations


@dataclass
class ExpectResult:
    expect: dict[str, Any]
    ok: bool
    detail: str
    time: float


def _recorder(cluster: Cluster) -> Recorder:
    assert cluster.recorder is not None  # a simulated cluster always has its recorder
    return cluster.recorder


def _message_ok(want: dict[str, Any], message: str) -> bool:
    if "message" in want and message != want["message"]:
        return False
    return not ("messageContains" in want and want["messageContains"] not in message)


def _event_ok(cluster: Cluster, ref: str, e: dict[str, Any]) -> tuple[bool, str]:
    """`event: {reason, message|messageContains, count}`: some Event about the object matches
    (exactly `count` of them, when given)."""
    if "event" not in e:
        return True, ""
    want = e["event"]
    events = [ev for ev in _recorder(cluster).events if ev.object == ref and ev.reason == want.get("reason", ev.reason)]
    if "count" in want:
        matching = sum(1 for ev in events if _message_ok(want, ev.message))
        return (True, "") if matching == want["count"] else (False, f"{matching} matching events, expected {want['count']}")
    if not any(_message_ok(want, ev.message) for ev in events):
        seen = "; ".join(f"{ev.reason}: {ev.message}" for ev in events) or "none"
        return False, f"no matching {want.get('reason', '')} event (seen: {seen})"
    return True, ""


def _conditions_ok(obj: dict[str, Any], e: dict[str, Any]) -> tuple[bool, str]:
    for ctype, want in (e.get("conditions") or {}).items():
        cond = get_condition(obj, ctype)
        have = cond.get("status") if cond else None
        if have != want:
            return False, f"condition {ctype} is {have!r}, expected {want!r}"
    return True, ""


def _check_score(cluster: Cluster, key: str, want: dict[str, Any]) -> tuple[bool, str]:
    """`score: {node, plugin, raw|normalized|total}` against the pod's last scored attempt."""
    records = [r for r in cluster.scheduler.records.get(key, []) if r.totals is not None]
    if not records:
        return False, "no attempt of this pod scored nodes"
    rec = records[-1]
    if want["node"] not in rec.feasible:
        return False, f"node {want['node']} was not scored (feasible: {rec.feasible})"
    i = rec.feasible.index(want["node"])
    assert rec.totals is not None
    if "total" in want and int(rec.totals[i]) != want["total"]:
        return False, f"total on {want['node']} is {int(rec.totals[i])}, expected {want['total']}"
    if "plugin" in want:
        detail = next((d for d in rec.scores if d.plugin == want["plugin"]), None)
        if detail is None:
            return False, f"plugin {want['plugin']} did not score (skipped or disabled)"
        for field, values in (("raw", detail.raw), ("normalized", detail.normalized)):
            if field in want and int(values[i]) != want[field]:
                return False, f"{want['plugin']} {field} on {want['node']} is {int(values[i])}, expected {want[field]}"
    return True, ""


def _affinity_terms(pv: dict[str, Any] | None) -> dict[str, list[str]]:
    """A volume's required node affinity as {key: values} of its first term's expressions."""
    required = (((pv or {}).get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    terms = required.get("nodeSelectorTerms") or [{}]
    return {e.get("key", ""): list(e.get("values") or ()) for e in terms[0].get("matchExpressions") or ()}


def _container_ok(status: dict[str, Any], name: str, want: dict[str, Any]) -> tuple[bool, str]:
    """`containers: {name: {ready, started, restartCount}}`: what the kubelet reports of a container
    (or a sidecar) in the pod's status."""
    statuses = (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ()))
    cs = next((x for x in statuses if x.get("name") == name), None)
    if cs is None:
        return False, f"container {name} has no status"
    for key, value in want.items():
        have = cs.get(key, 0 if key == "restartCount" else None)
        if have != value:
            return False, f"container {name} {key} is {have!r}, expected {value!r}"
    return True, ""


class PodCheck(expectations.PodExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        ns, _, name = e["pod"].partition("/")
        h = _recorder(cluster).pod(ns, name)
        if h is None:
            return False, f"pod {e['pod']} never existed"
        obj = h.obj
        spec, status = obj.get("spec", {}), obj.get("status", {})
        actual = {
            "nodeName": spec.get("nodeName"),
            "phase": status.get("phase"),
            "deleted": h.deleted,
            "reason": h.reason or status.get("reason"),
            "nominatedNodeName": status.get("nominatedNodeName"),
            "priority": spec.get("priority"),
        }
        for key in actual:
            if key in e and e[key] != actual[key]:
                return False, f"{key} is {actual[key]!r}, expected {e[key]!r}"
        if not _message_ok(e, status.get("message") or ""):
            return False, f"status.message is {status.get('message')!r}"
        ok, detail = _conditions_ok(obj, e)
        if not ok:
            return ok, detail
        if "restartCount" in e:
            restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or ())
            if restarts != e["restartCount"]:
                return False, f"restartCount is {restarts}, expected {e['restartCount']}"
        for cname, want in (e.get("containers") or {}).items():
            ok, detail = _container_ok(status, cname, want)
            if not ok:
                return ok, detail
        if "replaced" in e:
            uid = obj["metadata"].get("uid")
            replacement = next((d.replacement for d in _recorder(cluster).disruptions if d.uid == uid), None)
            if (replacement is not None) != e["replaced"]:
                return False, f"replacement is {replacement!r}"
        if "score" in e:
            ok, detail = _check_score(cluster, e["pod"], e["score"])
            if not ok:
                return ok, detail
        return _event_ok(cluster, f"Pod/{ns}/{name}", e)


class NodeCheck(expectations.NodeExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        node = cluster.store.get("Node", "", e["node"])
        ni = cluster.scheduler.node_info(e["node"])
        if node is None or ni is None:
            return False, f"node {e['node']} does not exist"
        for field in ("requested", "allocatable"):
            for name, want in (e.get(field) or {}).items():
                have = (ni.requested if field == "requested" else ni.allocatable).get(name, 0)
                if name == "pods" and field == "requested":
                    have = len(ni.pods)
                if have != resource_amount(name, want):
                    return False, f"{field} {name} is {format_amount(name, have)}, expected {want}"
        if "unschedulable" in e and bool(node.get("spec", {}).get("unschedulable")) != e["unschedulable"]:
            return False, f"unschedulable is {not e['unschedulable']}"
        if "taints" in e:
            taints = [{k: t.get(k) for k in ("key", "value", "effect") if t.get(k) is not None}
                      for t in node.get("spec", {}).get("taints") or ()]
            if taints != e["taints"]:
                return False, f"taints are {taints}"
        return _conditions_ok(node, e)


class RejectedCheck(expectations.RejectedExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        hits = [r for r in _recorder(cluster).rejected if r.object == e["rejected"]]
        if not hits:
            return False, f"{e['rejected']} was not rejected"
        if not any(_message_ok(e, r.message) for r in hits):
            return False, f"rejected with: {hits[-1].message}"
        return True, ""


class EvictionCheck(expectations.EvictionExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """The pod's eviction attempt number `attempt` (1-based; default the latest so far)."""
        attempts = [a for a in _recorder(cluster).evictions if a["pod"] == e["eviction"]]
        if not attempts:
            return False, f"no eviction of {e['eviction']} was asked"
        n = e.get("attempt", len(attempts))
        if not 1 <= n <= len(attempts):
            return False, f"only {len(attempts)} eviction attempts"
        a = attempts[n - 1]
        shown = f"attempt {n}: {a['code']} {a['message']} {a['causes']}"
        if "code" in e and a["code"] != e["code"]:
            return False, shown
        if not _message_ok(e, a["message"]):
            return False, shown
        if "cause" in e and e["cause"] not in a["causes"]:
            return False, shown
        if "requester" in e and a["requester"] != e["requester"]:
            return False, shown
        return True, ""


class PodDisruptionBudgetCheck(expectations.PodDisruptionBudgetExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        ns, _, name = e["pdb"].partition("/")
        pdb = cluster.store.get("PodDisruptionBudget", ns, name)
        if pdb is None:
            return False, f"PodDisruptionBudget {e['pdb']} does not exist"
        status = pdb.get("status") or {}
        for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods", "observedGeneration"):
            if key in e and (status.get(key) or 0) != e[key]:
                return False, f"{key} is {status.get(key) or 0}, expected {e[key]}"
        if "disruptedPods" in e and sorted(status.get("disruptedPods") or {}) != sorted(e["disruptedPods"]):
            return False, f"disruptedPods is {sorted(status.get('disruptedPods') or {})}"
        ok, detail = _conditions_ok(pdb, e)
        return _event_ok(cluster, f"PodDisruptionBudget/{ns}/{name}", e) if ok else (ok, detail)


class DrainCheck(expectations.DrainExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        drains = [d for d in _recorder(cluster).drains if d.node == e["drain"]]
        if not drains:
            return False, f"node {e['drain']} was never drained"
        d = drains[-1]
        if "status" in e and d.status != e["status"]:
            return False, f"status is {d.status} ({d.log[-1][1] if d.log else ''})"
        if "evicted" in e and sorted(d.evicted) != sorted(e["evicted"]):
            return False, f"evicted {d.evicted}"
        if "notEvicted" in e and sorted(d.pending) != sorted(e["notEvicted"]):
            return False, f"not evicted {sorted(d.pending)}"
        if ("message" in e or "messageContains" in e) and not any(_message_ok(e, m) for _, m in d.log):
            return False, "no such line in: " + " | ".join(m for _, m in d.log)
        return True, ""


class DescheduledCheck(expectations.DescheduledExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """The descheduler's last attempt at the pod (in pass `pass`, by `strategy`, when given);
        `result: None` holds when there was no such attempt."""
        if cluster.descheduler is None:
            return False, "no DeschedulerPolicy: the descheduler did not run"
        ran = _recorder(cluster).passes
        passes = [p for p in ran if e.get("pass") in (None, p.number)]
        if e.get("pass") is not None and not passes:
            return False, f"the descheduler ran {len(ran)} pass(es)"
        found = [a for p in passes for a in p.attempts
                 if a.pod == e["descheduled"] and e.get("strategy") in (None, a.strategy)]
        if e.get("result") == "None":
            return (not found), (f"{found[-1].strategy}: {found[-1].result} {found[-1].message}" if found else "")
        if not found:
            return False, f"the descheduler never tried {e['descheduled']}"
        a = found[-1]
        shown = f"pass at {a.time:g}s, {a.strategy}: {a.result}" + (f" ({a.message})" if a.message else "") + \
            (f", landing {a.landing}" if a.landing else "")
        for key, have in (("result", a.result), ("landing", a.landing), ("fromNode", a.node)):
            if key in e and e[key] != have:
                return False, shown
        return (True, "") if _message_ok(e, a.message) else (False, shown)


class DeschedulerPassCheck(expectations.DeschedulerPassExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        ran = _recorder(cluster).passes
        n = e["deschedulerPass"]
        if not 1 <= n <= len(ran):
            return False, f"the descheduler ran {len(ran)} pass(es)"
        p = ran[n - 1]
        if "evicted" in e and p.evicted != e["evicted"]:
            return False, f"pass {n} at {p.time:g}s evicted {p.evicted}"
        if ("message" in e or "messageContains" in e) and not any(_message_ok(e, m) for m in p.errors):
            return False, f"pass {n} errors: {p.errors}"
        return True, ""


class PersistentVolumeClaimCheck(expectations.PersistentVolumeClaimExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        ns, _, name = e["pvc"].partition("/")
        pvc = cluster.store.get("PersistentVolumeClaim", ns, name)
        if "deleted" in e and (pvc is None) != e["deleted"]:
            return False, "the claim exists" if pvc is not None else "the claim does not exist"
        if pvc is None:
            return ("deleted" in e), f"PersistentVolumeClaim {e['pvc']} does not exist"
        spec = pvc.get("spec") or {}
        actual = {
            "phase": (pvc.get("status") or {}).get("phase"),
            "volumeName": spec.get("volumeName"),
            "storageClassName": spec.get("storageClassName"),
            "selectedNode": (pvc["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE),
        }
        for key, have in actual.items():
            if key in e and e[key] != have:
                return False, f"{key} is {have!r}, expected {e[key]!r}"
        if "volumeNodeAffinity" in e:
            pv = cluster.store.get("PersistentVolume", "", spec.get("volumeName") or "")
            if pv is None:
                return False, f"the claim is bound to no existing volume ({spec.get('volumeName')!r})"
            have = _affinity_terms(pv)
            if have != e["volumeNodeAffinity"]:
                return False, f"volume {pv['metadata']['name']} has node affinity {have}"
        return _event_ok(cluster, f"PersistentVolumeClaim/{ns}/{name}", e)


class ResourceClaimCheck(expectations.ResourceClaimExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        ns, _, name = e["resourceClaim"].partition("/")
        if "podClaim" in e:  # the claim the pod's template made, whatever its generated name
            found = [c for c in cluster.store.list("ResourceClaim", ns) if owning_pod(c)[0] == name
                     and (c["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) == e["podClaim"]]
            claim = found[0] if found else None
        elif e.get("extendedResources"):  # the claim the scheduler made for the pod's extended resources
            found = [c for c in cluster.store.list("ResourceClaim", ns) if owning_pod(c)[0] == name
                     and (c["metadata"].get("annotations") or {}).get(CLAIM_ANNOTATION) == "true"]
            claim = found[0] if found else None
            pod = cluster.store.get("Pod", ns, name)
            if claim is not None and pod is not None and extended_claim_name(pod) != claim["metadata"]["name"]:
                return False, (f"the pod's status.extendedResourceClaimStatus names {extended_claim_name(pod)!r},"
                               f" not {claim['metadata']['name']!r}")
        else:
            claim = cluster.store.get("ResourceClaim", ns, name)
        if "deleted" in e and (claim is None) != e["deleted"]:
            return False, "the claim exists" if claim is not None else "the claim does not exist"
        if claim is None:
            return ("deleted" in e), f"no ResourceClaim {e['resourceClaim']}" + (
                f" for pod claim {e['podClaim']}" if "podClaim" in e else
                " for its extended resources" if e.get("extendedResources") else "")
        results = ((allocation(claim) or {}).get("devices") or {}).get("results") or ()
        actual = {"allocated": sorted(f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results),
                  "reservedFor": sorted(f"{ns}/{r.get('name')}" for r in reserved_for(claim))}
        for key, have in actual.items():
            if key in e and sorted(e[key]) != have:
                return False, f"{key} is {have}, expected {sorted(e[key])}"
        return _event_ok(cluster, f"ResourceClaim/{ns}/{claim['metadata']['name']}", e)


class PersistentVolumeCheck(expectations.PersistentVolumeExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        pv = cluster.store.get("PersistentVolume", "", e["pv"])
        if "deleted" in e and (pv is None) != e["deleted"]:
            return False, "the volume exists" if pv is not None else "the volume does not exist"
        if pv is None:
            return ("deleted" in e), f"PersistentVolume {e['pv']} does not exist"
        ref = (pv.get("spec") or {}).get("claimRef")
        actual = {"phase": (pv.get("status") or {}).get("phase"),
                  "claim": f"{ref.get('namespace')}/{ref.get('name')}" if ref else None}
        for key, have in actual.items():
            if key in e and e[key] != have:
                return False, f"{key} is {have!r}, expected {e[key]!r}"
        if "nodeAffinity" in e and _affinity_terms(pv) != e["nodeAffinity"]:
            return False, f"node affinity is {_affinity_terms(pv)}"
        return _event_ok(cluster, f"PersistentVolume/{e['pv']}", e)


class ObjectCheck(expectations.ObjectExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """Any object by "Kind/namespace/name" (or "Kind/name"): whether it exists, its conditions,
        status fields (an omitted count is 0; a list against a number compares its length), the
        annotations given (each must have that value) and events."""
        kind, *rest = e["object"].split("/")
        ns, name = rest if len(rest) == 2 else ("", rest[0])
        obj = cluster.store.get(kind, ns, name)
        if obj is None:  # a custom kind, stored qualified by its group (`Widget.example.com`)
            kinds = cast("list[str]", cluster.store.kinds())  # Store.list shadows the builtin in its annotations
            qualified = next((k for k in kinds if k.startswith(kind + ".")), None)
            obj = cluster.store.get(qualified, ns, name) if qualified is not None else None
        if (obj is not None) != e.get("exists", True):
            return False, f"{e['object']} {'exists' if obj is not None else 'does not exist'}"
        if obj is None:
            return True, ""
        status = obj.get("status") or {}
        for key, want in (e.get("status") or {}).items():
            have = status.get(key)
            if isinstance(want, int) and not isinstance(want, bool) and (have is None or isinstance(have, list)):
                have = len(have or ())  # an omitted count is 0

            if have != want:
                return False, f"status.{key} is {have!r}, expected {want!r}"
        annotations = obj["metadata"].get("annotations") or {}
        for key, want in (e.get("annotations") or {}).items():
            if annotations.get(key) != want:
                return False, f"annotation {key} is {annotations.get(key)!r}, expected {want!r}"
        ok, detail = _conditions_ok(obj, e)
        return _event_ok(cluster, e["object"], e) if ok else (ok, detail)


class DisruptionCheck(expectations.DisruptionExpectation):
    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """The pod's `occurrence`-th removal (1-based; default the first): cause, fromNode, replacement,
        and `notReplaced`, why its controller will not replace it."""
        removals = [d for d in _recorder(cluster).disruptions if d.pod == e["disruption"]]
        n = e.get("occurrence", 1)
        if len(removals) < n:
            return False, f"{e['disruption']} was removed {len(removals)} time(s)"
        d = removals[n - 1]
        for key, have in (("cause", d.cause), ("fromNode", d.node), ("replacement", d.replacement),
                           ("notReplaced", d.unowned)):
            if key in e and e[key] != have:
                return False, f"{key} is {have!r}, expected {e[key]!r}"
        return True, ""


class _Judged(Protocol):
    @property
    def subject(self) -> str: ...

    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """(holds, what was seen instead) at the entry's time."""
        ...


# One check per kind of entry the loader accepts (a test holds the two to the same kinds).
_ALL: tuple[_Judged, ...] = (
    PodCheck(), NodeCheck(), RejectedCheck(), EvictionCheck(), PodDisruptionBudgetCheck(), DrainCheck(),
    DescheduledCheck(), DeschedulerPassCheck(), PersistentVolumeClaimCheck(), PersistentVolumeCheck(),
    ResourceClaimCheck(), ObjectCheck(),
    DisruptionCheck())
CHECKS = {c.subject: c for c in _ALL}


def check(cluster: Cluster, e: dict[str, Any]) -> ExpectResult:
    judged = next(x for subject, x in CHECKS.items() if subject in e)
    ok, detail = judged.check(cluster, e)
    return ExpectResult(e, ok, detail, cluster.now())
