"""Which pods a scale-down deletes first: controller.ActivePodsWithRanks (v1.35, with the
PodDeletionCost and LogarithmicScaleDown features on, as they are by default).

Rules, in order, each deciding only when the pods differ in it:
 1. not yet assigned to a node before assigned;
 2. Pending before Unknown before Running;
 3. not Ready before Ready;
 4. lower `controller.kubernetes.io/pod-deletion-cost` before higher;
 5. more active related pods on the same node (the rank) before fewer;
 6. both Ready: Ready for less time before longer;
 7. more container restarts before fewer;
 8. created more recently before earlier.
In 6 and 8 times count on a log2 scale (nanoseconds before now), so pods of a similar age are
equivalent and the uid decides among them: a pseudo-random pick that spreads deletions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from functools import cmp_to_key

from kubesched.api.objects import Obj, get_condition, is_pod_ready
from kubesched.controllers.podcontrol import is_pod_active

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
INT32 = range(-(2 ** 31), 2 ** 31)
INTEGER = re.compile(r"[+-]?[0-9]+")  # strconv.ParseInt base 10


def pods_to_delete(pods: list[Obj], related: list[Obj], diff: int, now: float,
                   seconds: Callable[[str], float]) -> list[Obj]:
    """getPodsToDelete: the `diff` pods to delete first. `related` are the pods of every
    ReplicaSet with the same controller (none for a ReplicaSet without one); `seconds` turns a
    timestamp into virtual seconds."""
    if diff >= len(pods):
        return pods[:diff]
    on_node = Counter(p["spec"].get("nodeName") or "" for p in related if is_pod_active(p))
    ranked = [(p, on_node[p["spec"].get("nodeName") or ""]) for p in pods]
    ranked.sort(key=cmp_to_key(lambda a, b: _compare(a, b, now, seconds)))
    return [p for p, _ in ranked[:diff]]


def _compare(a: tuple[Obj, int], b: tuple[Obj, int], now: float, seconds: Callable[[str], float]) -> int:
    if _less(a, b, now, seconds):
        return -1
    return 1 if _less(b, a, now, seconds) else 0


def _less(a: tuple[Obj, int], b: tuple[Obj, int], now: float, seconds: Callable[[str], float]) -> bool:
    (pi, rank_i), (pj, rank_j) = a, b
    node_i, node_j = pi["spec"].get("nodeName") or "", pj["spec"].get("nodeName") or ""
    if node_i != node_j and (not node_i or not node_j):
        return not node_i
    phase_i = PHASE_ORDINAL.get((pi.get("status") or {}).get("phase", ""), 0)
    phase_j = PHASE_ORDINAL.get((pj.get("status") or {}).get("phase", ""), 0)
    if phase_i != phase_j:
        return phase_i < phase_j
    ready_i, ready_j = is_pod_ready(pi), is_pod_ready(pj)
    if ready_i != ready_j:
        return not ready_i
    cost_i, cost_j = _deletion_cost(pi), _deletion_cost(pj)
    if cost_i != cost_j:
        return cost_i < cost_j
    if rank_i != rank_j:
        return rank_i > rank_j
    if ready_i and ready_j:
        t_i, t_j = _ready_since(pi, seconds), _ready_since(pj, seconds)
        if t_i != t_j:
            return _more_recent(pi, pj, t_i, t_j, now)
    restarts_i, restarts_j = _max_restarts(pi), _max_restarts(pj)
    if restarts_i != restarts_j:
        return restarts_i > restarts_j
    c_i, c_j = _created(pi, seconds), _created(pj, seconds)
    if c_i != c_j:
        return _more_recent(pi, pj, c_i, c_j, now)
    return False


def _more_recent(pi: Obj, pj: Obj, t_i: float | None, t_j: float | None, now: float) -> bool:
    """Whether pi's time is later on the logarithmic scale; a missing time counts as latest, a
    tie goes to the smaller uid."""
    if t_i is None or t_j is None:
        return t_i is None
    diff = _log_rank(now - t_i) - _log_rank(now - t_j)
    if diff == 0:
        return pi["metadata"].get("uid", "") < pj["metadata"].get("uid", "")
    return diff < 0


def _log_rank(age: float) -> int:
    nanos = age * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _ready_since(pod: Obj, seconds: Callable[[str], float]) -> float | None:
    cond = get_condition(pod, "Ready")
    stamp = cond.get("lastTransitionTime") if cond else None
    return seconds(stamp) if stamp else None


def _created(pod: Obj, seconds: Callable[[str], float]) -> float | None:
    stamp = pod["metadata"].get("creationTimestamp")
    return seconds(stamp) if stamp else None


def _deletion_cost(pod: Obj) -> int:
    """helper.GetDeletionCostFromPodAnnotations: an int32; anything else counts as 0."""
    value = (pod["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    if value is None or not INTEGER.fullmatch(value):
        return 0
    cost = int(value)
    return cost if cost in INT32 else 0


def _max_restarts(pod: Obj) -> int:
    return max((c.get("restartCount", 0) for c in (pod.get("status") or {}).get("containerStatuses") or ()),
               default=0)
