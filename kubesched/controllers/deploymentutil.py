"""Deployment helpers without side effects (pkg/controller/deployment/util/deployment_util.go):
ReplicaSet identity (pod-template-hash), revisions and annotations, surge/unavailability
arithmetic, conditions and the status computed from the ReplicaSets."""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.intstr import scaled_value
from kubesched.api.objects import Obj, deep_copy
from kubesched.controllers.podcontrol import compute_hash
from kubesched.controllers.replicaset import replicas_of

HASH_LABEL = "pod-template-hash"  # DefaultDeploymentUniqueLabelKey
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
NOT_COPIED = {REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
              "kubectl.kubernetes.io/last-applied-configuration", "deprecated.deployment.rollback.to"}
DEFAULT_PROGRESS_DEADLINE = 600
DEFAULT_REVISION_HISTORY_LIMIT = 10
NO_LIMIT = 2 ** 31 - 1  # math.MaxInt32 switches the deadline / the history limit off
DEFAULT_SURGE = DEFAULT_UNAVAILABLE = "25%"

# Progressing condition reasons
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"


# ---- ReplicaSet identity -------------------------------------------------------------------------

def new_rs_template(d: Obj) -> tuple[Obj, str]:
    """The new ReplicaSet's pod template: the Deployment's plus the pod-template-hash label."""
    template = deep_copy(d["spec"].get("template") or {})
    pod_hash = compute_hash(template, (d.get("status") or {}).get("collisionCount"))
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
    return template, pod_hash


def equal_ignore_hash(a: Obj | None, b: Obj | None) -> bool:
    """EqualIgnoreHash: two pod templates equal once the pod-template-hash label is dropped."""
    return _without_hash(a) == _without_hash(b)


def _without_hash(template: Obj | None) -> Obj:
    t = deep_copy(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
    return t


def by_creation(rss: Iterable[Obj]) -> list[Obj]:
    """ReplicaSetsByCreationTimestamp: oldest first, names breaking ties."""
    return sorted(rss, key=lambda rs: (rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"]))


def find_new_rs(d: Obj, rss: list[Obj]) -> Obj | None:
    """FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's."""
    template = d["spec"].get("template")
    return next((rs for rs in by_creation(rss) if equal_ignore_hash(rs["spec"].get("template"), template)), None)


def find_active_or_latest(new_rs: Obj | None, old_rss: list[Obj]) -> Obj | None:
    """FindActiveOrLatest: the one ReplicaSet with replicas, else the new (or newest) one if none
    has any; None when several have replicas."""
    if new_rs is None and not old_rss:
        return None
    active = [rs for rs in [*reversed(by_creation(old_rss)), new_rs] if rs is not None and replicas_of(rs) > 0]
    if len(active) == 1:
        return active[0]
    if active:
        return None
    return new_rs if new_rs is not None else by_creation(old_rss)[-1]


# ---- revisions and annotations ---------------------------------------------------------------------

def revision(obj: Obj) -> int:
    value = (obj["metadata"].get("annotations") or {}).get(REVISION, "")
    return int(value) if value.isdigit() else 0


def set_new_rs_annotations(d: Obj, rs: Obj, new_revision: int, exists: bool) -> bool:
    """SetNewReplicaSetAnnotations: copy the Deployment's own annotations, raise the revision
    (keeping the previous one in revision-history when an old ReplicaSet comes back) and, on a
    new ReplicaSet, record the replica annotations. Returns whether anything changed."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for k, v in (d["metadata"].get("annotations") or {}).items():
        if k not in NOT_COPIED and annotations.get(k) != v:
            annotations[k] = v
            changed = True
    old = annotations.get(REVISION)
    if old is not None and not old.isdigit():
        return changed
    if int(old or 0) < new_revision:
        annotations[REVISION] = str(new_revision)
        changed = True
        if old is not None:
            history = annotations.get(REVISION_HISTORY)
            annotations[REVISION_HISTORY] = f"{history},{old}" if history else old
    if not exists and set_replicas_annotations(rs, replicas_of(d), replicas_of(d) + max_surge(d)):
        changed = True
    return changed


def set_replicas_annotations(rs: Obj, desired: int, max_replicas: int) -> bool:
    annotations = rs["metadata"].setdefault("annotations", {})
    wanted = {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(max_replicas)}
    if all(annotations.get(k) == v for k, v in wanted.items()):
        return False
    annotations.update(wanted)
    return True


def desired_replicas_annotation(rs: Obj) -> int | None:
    value = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


# ---- strategy arithmetic ---------------------------------------------------------------------------

def _rolling(d: Obj) -> Obj | None:
    strategy = d["spec"].get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    return strategy.get("rollingUpdate") or {}


def _fenceposts(d: Obj) -> tuple[int, int]:
    """ResolveFenceposts: maxSurge rounds up, maxUnavailable down, and both 0 means 1 unavailable."""
    rolling = _rolling(d) or {}
    replicas = replicas_of(d)
    surge = scaled_value(rolling.get("maxSurge", DEFAULT_SURGE), replicas, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", DEFAULT_UNAVAILABLE), replicas, False)
    return surge, 1 if surge == 0 and unavailable == 0 else unavailable


def max_surge(d: Obj) -> int:
    return _fenceposts(d)[0] if _rolling(d) is not None else 0


def max_unavailable(d: Obj) -> int:
    replicas = replicas_of(d)
    if _rolling(d) is None or replicas == 0:
        return 0
    return min(_fenceposts(d)[1], replicas)


def new_rs_new_replicas(d: Obj, all_rss: list[Obj], new_rs: Obj | None) -> int:
    """NewRSNewReplicas for RollingUpdate: as many more new pods as keep every ReplicaSet's
    replicas within spec.replicas + maxSurge, up to spec.replicas."""
    current = replicas_of(new_rs) if new_rs is not None else 0
    replicas = replicas_of(d)
    room = replicas + max_surge(d) - sum(replicas_of(rs) for rs in all_rss)
    if room <= 0:
        return current
    return current + min(room, replicas - current)


def progress_deadline(d: Obj) -> int | None:
    seconds = d["spec"].get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE)
    return None if seconds == NO_LIMIT else seconds


def revision_history_limit(d: Obj) -> int | None:
    limit = d["spec"].get("revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    return None if limit == NO_LIMIT else limit


# ---- status ------------------------------------------------------------------------------------------

def _sum(rss: Iterable[Obj | None], field: str) -> int:
    return sum((rs.get("status") or {}).get(field, 0) for rs in rss if rs is not None)


def calculate_status(d: Obj, all_rss: list[Obj], new_rs: Obj | None, now: str) -> Obj:
    """calculateStatus: the ReplicaSets' counts summed, and the Available condition."""
    available = _sum(all_rss, "availableReplicas")
    total = sum(replicas_of(rs) for rs in all_rss)
    old = d.get("status") or {}
    counts = {
        "observedGeneration": d["metadata"].get("generation", 1),
        "replicas": _sum(all_rss, "replicas"),
        "updatedReplicas": _sum([new_rs], "replicas"),
        "readyReplicas": _sum(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
    }
    status: Obj = {k: v for k, v in counts.items() if v}  # omitempty
    status["terminatingReplicas"] = _sum(all_rss, "terminatingReplicas")
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    status["conditions"] = deep_copy(old.get("conditions") or [])
    if available >= replicas_of(d) - max_unavailable(d):
        cond = condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", now)
    else:
        cond = condition("Available", "False", "MinimumReplicasUnavailable",
                         "Deployment does not have minimum availability.", now)
    set_condition(status, cond)
    return status


def complete(d: Obj, status: Obj) -> bool:
    """DeploymentComplete: every replica updated and available, and the generation observed."""
    replicas = replicas_of(d)
    return (status.get("updatedReplicas", 0) == replicas and status.get("replicas", 0) == replicas
            and status.get("availableReplicas", 0) == replicas
            and status.get("observedGeneration", 0) >= d["metadata"].get("generation", 1))


def progressing(d: Obj, status: Obj) -> bool:
    """DeploymentProgressing: more updated, ready or available pods, or fewer old ones."""
    old = d.get("status") or {}

    def old_pods(st: Obj) -> int:
        return st.get("replicas", 0) - st.get("updatedReplicas", 0)

    return (status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0) or old_pods(status) < old_pods(old)
            or status.get("readyReplicas", 0) > old.get("readyReplicas", 0)
            or status.get("availableReplicas", 0) > old.get("availableReplicas", 0))


# ---- conditions --------------------------------------------------------------------------------------

def condition(ctype: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {"type": ctype, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def get_condition(status: Obj, ctype: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == ctype), None)


def set_condition(status: Obj, cond: Obj) -> None:
    """SetDeploymentCondition: no change for the same status and reason; the transition time is
    kept while the status stays."""
    current = get_condition(status, cond["type"])
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, cond["type"])
    status.setdefault("conditions", []).append(cond)


def remove_condition(status: Obj, ctype: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != ctype]
