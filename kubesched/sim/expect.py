"""The vocabulary of a Scenario's `expect` entries: one class per kind of entry, holding the fields
it may carry, how they are checked when the Scenario loads, and how the entry is judged against the
cluster at its time. Keeping the three together means a new field cannot be accepted by the loader
yet ignored by the check, or the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kubesched.api.objects import get_condition
from kubesched.api.quantity import format_amount, resource_amount
from kubesched.api.storage import ANN_SELECTED_NODE
from kubesched.api.validation import (
    NONNEGATIVE_MSG,
    POD_PHASES,
    POSITIVE_MSG,
    PV_PHASES,
    PVC_PHASES,
    Checker,
    check_resource_list,
    check_shape,
    check_string_map,
    check_taints,
    subpath,
)
from kubesched.runtime.cluster import Cluster
from kubesched.sim.recorder import Recorder

# Fields an `expect` entry may set to null, to check that the pod has no node, nomination or reason.
EXPECT_UNSET = ("nodeName", "nominatedNodeName", "reason", "replacement", "notReplaced", "volumeName", "selectedNode",
                "claim")
DESCHEDULED_RESULTS = ("Evicted", "Refused", "Filtered", "LimitReached", "None")
DRAIN_STATUSES = ("Drained", "Failed", "TimedOut", "InProgress")
CONDITION_STATUSES = ("True", "False", "Unknown")
CONTAINER_CHECKS = {"ready": bool, "started": bool, "restartCount": int}  # a pod entry's `containers: {name: ...}`


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


def _subject(c: Checker, value: Any, path: str, parts: int) -> None:
    """An expect subject: "namespace/name" for pods, a bare name for nodes."""
    text = c.typed(value, path, str)
    if text is None:
        return
    pieces = text.split("/")
    if len(pieces) != parts or not all(pieces):
        c.invalid(path, text, 'must be "namespace/name"' if parts == 2 else "must be a node name")


def _message_check(c: Checker, entry: dict[str, Any], path: str) -> None:
    c.get(entry, "message", path, str)
    c.get(entry, "messageContains", path, str)
    if entry.get("message") is not None and entry.get("messageContains") is not None:
        c.err(path, "Invalid value: specify message or messageContains, not both")


def _conditions_check(c: Checker, entry: dict[str, Any], path: str) -> None:
    """`conditions: {Type: "True"|"False"|"Unknown"}`."""
    for ctype, status in (c.get(entry, "conditions", path, dict) or {}).items():
        if status not in CONDITION_STATUSES:
            c.unsupported(subpath(subpath(path, "conditions"), ctype), status, CONDITION_STATUSES)


def _event_check(c: Checker, entry: dict[str, Any], path: str) -> None:
    """`event: {reason, message|messageContains}`."""
    event = c.get(entry, "event", path, dict)
    if event is None:
        return
    event_path = subpath(path, "event")
    for key in event:
        if key not in ("reason", "message", "messageContains", "count"):
            c.err(subpath(event_path, key), f'unknown field "{key}" for an event expectation')
    if not event:
        c.required(event_path, "at least one of reason, message, messageContains, count")
    c.get(event, "reason", event_path, str)
    count = c.get(event, "count", event_path, int)
    if count is not None and count < 0:
        c.invalid(subpath(event_path, "count"), count, NONNEGATIVE_MSG)
    _message_check(c, event, event_path)


class Expectation:
    """One kind of `expect` entry, named by its subject key (`pod: ns/name`, `node: name`, ...)."""

    subject: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]  # what the entry may check, besides its subject and `at`

    needs_a_check: ClassVar[bool] = True  # `rejected: Kind/ns/name` alone is a check; a pod alone is not

    def validate(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        """Check the entry's fields (the subject key, `at`, unknown fields and nulls are checked for
        every kind by the Scenario's validation before this)."""
        if self.needs_a_check:
            if not any(key in entry for key in self.fields):
                c.required(path, f"at least one of {', '.join(self.fields)}")
            _conditions_check(c, entry, path)
        self.validate_fields(c, entry, path)

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        raise NotImplementedError

    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """(holds, what was seen instead) at the entry's time."""
        raise NotImplementedError


class PodExpectation(Expectation):
    subject = "pod"
    fields = ("nodeName", "phase", "deleted", "reason", "nominatedNodeName", "priority", "event", "score",
              "message", "messageContains", "conditions", "restartCount", "replaced", "containers")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["pod"], subpath(path, "pod"), 2)
        for key in ("nodeName", "nominatedNodeName", "reason"):
            c.get(entry, key, path, str)
        _message_check(c, entry, path)
        c.get(entry, "restartCount", path, int)
        c.get(entry, "replaced", path, bool)
        containers_path = subpath(path, "containers")
        for name, want in (c.get(entry, "containers", path, dict) or {}).items():
            check_shape(c, want, subpath(containers_path, name), CONTAINER_CHECKS)
            for key in want if isinstance(want, dict) else ():
                if key not in CONTAINER_CHECKS:
                    c.err(subpath(subpath(containers_path, name), key), f'unknown field "{key}" for a container expectation')
        c.enum(entry, "phase", path, POD_PHASES)
        c.get(entry, "deleted", path, bool)
        c.get(entry, "priority", path, int, 32)
        _event_check(c, entry, path)
        score = c.get(entry, "score", path, dict)
        if score is not None:
            score_path = subpath(path, "score")
            for key in score:
                if key not in ("node", "plugin", "raw", "normalized", "total"):
                    c.err(subpath(score_path, key), f'unknown field "{key}" for a score expectation')
            if c.get(score, "node", score_path, str) is None:
                c.required(subpath(score_path, "node"), "the node whose score is checked")
            c.get(score, "plugin", score_path, str)
            for key in ("raw", "normalized", "total"):
                c.get(score, key, score_path, int)

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


class NodeExpectation(Expectation):
    subject = "node"
    fields = ("requested", "allocatable", "unschedulable", "taints", "conditions")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["node"], subpath(path, "node"), 1)
        for key in ("requested", "allocatable"):
            check_resource_list(c, entry.get(key), subpath(path, key))
        c.get(entry, "unschedulable", path, bool)
        check_taints(c, entry.get("taints"), subpath(path, "taints"))

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
            have = [{k: t.get(k) for k in ("key", "value", "effect") if t.get(k) is not None}
                    for t in node.get("spec", {}).get("taints") or ()]
            if have != e["taints"]:
                return False, f"taints are {have}"
        return _conditions_ok(node, e)


class RejectedExpectation(Expectation):
    subject = "rejected"
    fields = ("message", "messageContains")
    needs_a_check = False

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        text = c.typed(entry["rejected"], subpath(path, "rejected"), str)
        pieces = text.split("/") if text is not None else []
        if text is not None and (len(pieces) not in (2, 3) or not all(pieces)):
            c.invalid(subpath(path, "rejected"), text, 'must be "Kind/namespace/name" or "Kind/name"')
        _message_check(c, entry, path)  # any kind: every kind loads, and a quota may refuse any

    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        hits = [r for r in _recorder(cluster).rejected if r.object == e["rejected"]]
        if not hits:
            return False, f"{e['rejected']} was not rejected"
        if not any(_message_ok(e, r.message) for r in hits):
            return False, f"rejected with: {hits[-1].message}"
        return True, ""


class _PodScoped(Expectation):
    """Eviction and budget entries: a "namespace/name" subject and typed fields of their own."""

    strings: ClassVar[tuple[str, ...]] = ("message", "messageContains", "cause", "requester")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry[self.subject], subpath(path, self.subject), 2)
        for key in self.fields:
            if key in self.strings:
                c.get(entry, key, path, str)
            elif key == "disruptedPods":
                for i, item in enumerate(c.get(entry, key, path, list) or []):
                    c.typed(item, f"{path}.{key}[{i}]", str)
            elif key == "event":
                _event_check(c, entry, path)
            elif key != "conditions":
                c.get(entry, key, path, int)
        _message_check(c, entry, path)


class EvictionExpectation(_PodScoped):
    subject = "eviction"
    fields = ("attempt", "code", "message", "messageContains", "cause", "requester")

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


class PodDisruptionBudgetExpectation(_PodScoped):
    subject = "pdb"
    fields = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods", "disruptedPods",
              "observedGeneration", "conditions", "event")

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


class DrainExpectation(Expectation):
    subject = "drain"
    fields = ("status", "evicted", "notEvicted", "message", "messageContains")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["drain"], subpath(path, "drain"), 1)
        c.enum(entry, "status", path, DRAIN_STATUSES)
        for key in ("evicted", "notEvicted"):
            for i, item in enumerate(c.get(entry, key, path, list) or []):
                c.typed(item, f"{path}.{key}[{i}]", str)
        _message_check(c, entry, path)

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


class DescheduledExpectation(Expectation):
    subject = "descheduled"
    fields = ("result", "strategy", "pass", "landing", "fromNode", "message", "messageContains")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["descheduled"], subpath(path, "descheduled"), 2)
        c.enum(entry, "result", path, DESCHEDULED_RESULTS)
        for key in ("strategy", "landing", "fromNode"):
            c.get(entry, key, path, str)
        c.get(entry, "pass", path, int)
        _message_check(c, entry, path)

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


class DeschedulerPassExpectation(Expectation):
    subject = "deschedulerPass"
    fields = ("evicted", "message", "messageContains")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        c.get(entry, "deschedulerPass", path, int)
        c.get(entry, "evicted", path, int)
        _message_check(c, entry, path)

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


class _VolumeExpectation(Expectation):
    """Claims ("namespace/name") and volumes (a bare name) share their checks."""

    parts: ClassVar[int]

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry[self.subject], subpath(path, self.subject), self.parts)
        c.enum(entry, "phase", path, PVC_PHASES if self.parts == 2 else PV_PHASES)
        for key in ("volumeName", "storageClassName", "selectedNode", "claim"):
            c.get(entry, key, path, str)
        c.get(entry, "deleted", path, bool)
        for key in ("volumeNodeAffinity", "nodeAffinity"):
            check_shape(c, entry.get(key), subpath(path, key), {"*": [str]})
        _event_check(c, entry, path)


class PersistentVolumeClaimExpectation(_VolumeExpectation):
    subject = "pvc"
    parts = 2
    fields = ("phase", "volumeName", "storageClassName", "selectedNode", "volumeNodeAffinity", "deleted", "event")

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


class PersistentVolumeExpectation(_VolumeExpectation):
    subject = "pv"
    parts = 1
    fields = ("phase", "claim", "nodeAffinity", "deleted", "event")

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


class ObjectExpectation(Expectation):
    subject = "object"
    fields = ("exists", "status", "annotations", "conditions", "event")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        text = c.typed(entry["object"], subpath(path, "object"), str)
        if text is not None and (len(text.split("/")) not in (2, 3) or not all(text.split("/"))):
            c.invalid(subpath(path, "object"), text, 'must be "Kind/namespace/name" or "Kind/name"')
        c.get(entry, "exists", path, bool)
        c.get(entry, "status", path, dict)
        check_string_map(c, entry.get("annotations"), subpath(path, "annotations"))
        _event_check(c, entry, path)

    def check(self, cluster: Cluster, e: dict[str, Any]) -> tuple[bool, str]:
        """Any object by "Kind/namespace/name" (or "Kind/name"): whether it exists, its conditions,
        status fields (an omitted count is 0; a list against a number compares its length), the
        annotations given (each must have that value) and events."""
        kind, *rest = e["object"].split("/")
        ns, name = rest if len(rest) == 2 else ("", rest[0])
        obj = cluster.store.get(kind, ns, name)
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


class DisruptionExpectation(Expectation):
    subject = "disruption"
    fields = ("cause", "fromNode", "replacement", "notReplaced", "occurrence")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["disruption"], subpath(path, "disruption"), 2)
        for key in ("cause", "fromNode"):
            c.get(entry, key, path, str)
        if entry.get("replacement") is not None:
            _subject(c, entry["replacement"], subpath(path, "replacement"), 2)
        occurrence = c.get(entry, "occurrence", path, int)
        if occurrence is not None and occurrence < 1:
            c.invalid(subpath(path, "occurrence"), occurrence, POSITIVE_MSG)

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


# In the order error messages list them.
EXPECTATIONS: dict[str, Expectation] = {e.subject: e for e in (
    PodExpectation(), NodeExpectation(), RejectedExpectation(), EvictionExpectation(),
    PodDisruptionBudgetExpectation(), DrainExpectation(), DescheduledExpectation(), DeschedulerPassExpectation(),
    PersistentVolumeClaimExpectation(), PersistentVolumeExpectation(), ObjectExpectation(), DisruptionExpectation())}
EXPECT_SUBJECTS = {subject: e.fields for subject, e in EXPECTATIONS.items()}


def check(cluster: Cluster, e: dict[str, Any]) -> ExpectResult:
    expectation = next(x for subject, x in EXPECTATIONS.items() if subject in e)
    ok, detail = expectation.check(cluster, e)
    return ExpectResult(e, ok, detail, cluster.now())
