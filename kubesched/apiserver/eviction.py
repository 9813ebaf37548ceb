"""The pods/eviction subresource: a DELETE that a PodDisruptionBudget may refuse.

Follows pkg/registry/core/pod/storage/eviction.go (v1.35). Pods that are Pending, Succeeded,
Failed or already terminating are deleted without looking at budgets. Otherwise the pod's one
budget must allow a disruption; several budgets are a misconfiguration (500), none means yes.
An allowed eviction debits the budget at once (disruptionsAllowed - 1, the pod recorded in
status.disruptedPods) so a second eviction racing the disruption controller is refused, then
marks the pod with the DisruptionTarget condition and deletes it with its grace period.
An unready pod may go without a debit while the budget is otherwise met (IfHealthyBudget, the
default) or always (AlwaysAllow), since it is not counted as healthy anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kubesched.api.objects import Obj, is_pod_ready, is_terminating, set_condition
from kubesched.api.pdb import disruption_allowed_condition, pdb_covers, pdb_selector
from kubesched.apiserver.caller import Caller
from kubesched.apiserver.errors import APIError, BadRequest, Forbidden, TooManyRequests
from kubesched.runtime.observer import Observer
from kubesched.store.base import Store


class APIServer(Protocol):
    """What the subresource uses of the API server that serves it (typed here rather than imported:
    kubesched.apiserver.server imports this module to serve pods/eviction)."""

    store: Store
    now: Callable[[], float]
    observer: Observer

    def timestamp(self, seconds: float | None = None) -> str: ...

    def get(self, kind: str, namespace: str, name: str) -> Obj: ...

    def update_status(self, kind: str, namespace: str, name: str, mutate: Callable[[Obj], Any],
                      caller: Caller | None = None) -> Obj: ...

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None,
               propagation_policy: str | None = None, caller: Caller | None = None) -> Obj | None: ...

# The eviction's own writes (the budget's debit, the pod's condition and deletion) are the
# registry's, made after the eviction was admitted: admission does not judge them again.
_REGISTRY = Caller(admitted=True)

EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
MAX_DISRUPTED_POD_SIZE = 2000
EVICTED_BY_API = "EvictionByEvictionAPI"  # the DisruptionTarget reason an accepted eviction sets
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


class MultiplePDBs(APIError):
    """Returned as a Status with code 500 (not an exception upstream; the answer is the same)."""

    code = 500
    reason = "InternalError"


def _can_ignore_pdb(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed", "Pending") or is_terminating(pod)


def guarding_budgets(store: Store, pod: Obj) -> list[Obj]:
    """The budgets an eviction of `pod` is checked against: none for a pod that may go regardless,
    else those covering it (an eviction proceeds only with at most one)."""
    if _can_ignore_pdb(pod):
        return []
    return [p for p in store.list("PodDisruptionBudget", pod["metadata"].get("namespace", "default"))
            if pdb_covers(p, pod, pdb_selector(p))]


def _check_body(name: str, eviction: Obj | None) -> tuple[int | None, bool]:
    """(gracePeriodSeconds, dryRun) from the Eviction's deleteOptions; BadRequest if malformed."""
    if not eviction:
        return None, False
    if eviction.get("apiVersion", "policy/v1") not in EVICTION_VERSIONS or eviction.get("kind", "Eviction") != "Eviction":
        raise BadRequest(f"not a Eviction object: {eviction.get('apiVersion')}, Kind={eviction.get('kind')}")
    if (eviction.get("metadata") or {}).get("name", name) != name:
        raise BadRequest("name in URL does not match name in Eviction object")
    options = eviction.get("deleteOptions") or {}
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise BadRequest("deleteOptions.gracePeriodSeconds: must be an integer")
    dry_run = options.get("dryRun") or []
    if dry_run not in ([], ["All"]):
        raise BadRequest(f'dryRun: Unsupported value: "{dry_run[0] if dry_run else dry_run}": supported values: "All"')
    return grace, bool(dry_run)


def evict(api: APIServer, namespace: str, name: str, eviction: Obj | None, requester: str,
          admit: Callable[[Obj | None], Obj] | None = None) -> Obj:
    """POST pods/<name>/eviction; returns a Success Status or raises the refusal. `admit`: the
    Eviction's admission, which judges it once its body has been checked (as decoding and
    EvictionREST.Create check it) and before the pod is read, and returns it as the webhooks
    left it.

    Every request and its answer is told to the API server's observer, admission's refusals too.
    """
    entry: dict[str, Any] = {"time": api.now(), "pod": f"{namespace}/{name}", "requester": requester}
    try:
        grace, dry_run = _check_body(name, eviction)
        if admit is not None:
            eviction = admit(eviction)
            grace, dry_run = _check_body(name, eviction)  # the deleteOptions a webhook left
        pod = api.get("Pod", namespace, name)  # read once, after admission, as getPod
        entry["uid"] = pod["metadata"].get("uid")
        entry["pdb"] = _check_budgets(api, pod, dry_run)
    except APIError as e:
        entry.update(code=e.code, reason=e.reason, message=e.message, causes=list(e.causes),
                     pdb=e.pdb)
        api.observer.eviction(entry)
        raise
    # Recorded before the delete, so watchers of the deletion can tell who evicted the pod.
    entry.update(code=200, reason="", message="", causes=[], dryRun=dry_run)
    api.observer.eviction(entry)
    if not dry_run:
        _mark_and_delete(api, namespace, name, grace)
    return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200}


def _by(error: APIError, pdb_name: str) -> APIError:
    """Note which budget refused, for the record of requests (not part of the API's answer)."""
    error.pdb = pdb_name
    return error


def _check_budgets(api: APIServer, pod: Obj, dry_run: bool) -> str | None:
    """Raise unless the eviction of `pod` may proceed; debit the budget (the one listed, as
    checkAndDecrement writes the budget it judged). Returns the budget's name."""
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", "default"), meta["name"]
    pdbs = guarding_budgets(api.store, pod)
    if len(pdbs) > 1:
        raise MultiplePDBs(MULTIPLE_PDBS)
    if not pdbs:
        return None
    pdb = pdbs[0]
    spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
    pdb_name = pdb["metadata"]["name"]
    if not is_pod_ready(pod):
        if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return pdb_name
        desired = status.get("desiredHealthy") or 0
        if (status.get("currentHealthy") or 0) >= desired > 0:
            return pdb_name
    if (status.get("observedGeneration") or 0) < pdb["metadata"].get("generation", 1):
        raise _by(TooManyRequests(VIOLATION, [f"The disruption budget {pdb_name} is still being processed by the server."]),
                  pdb_name)
    allowed = status.get("disruptionsAllowed") or 0
    if allowed < 0:
        raise _by(Forbidden(f'poddisruptionbudgets.policy "{pdb_name}" is forbidden: pdb disruptions allowed is negative'),
                  pdb_name)
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise _by(Forbidden(f'poddisruptionbudgets.policy "{pdb_name}" is forbidden: DisruptedPods map too big - '
                            "too many evictions not confirmed by PDB controller"), pdb_name)
    if allowed == 0:
        raise _by(TooManyRequests(VIOLATION, [
            f"The disruption budget {pdb_name} needs {status.get('desiredHealthy') or 0} healthy pods "
            f"and has {status.get('currentHealthy') or 0} currently"]), pdb_name)
    if dry_run:
        return pdb_name
    now = api.timestamp()

    def debit(st: Obj) -> None:
        st["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            set_condition(st, disruption_allowed_condition(st, now))
        st.setdefault("disruptedPods", {})[name] = now

    api.update_status("PodDisruptionBudget", namespace, pdb_name, debit, _REGISTRY)
    return pdb_name


def _mark_and_delete(api: APIServer, namespace: str, name: str, grace: int | None) -> None:
    """addConditionAndDeletePod: DisruptionTarget (EvictionByEvictionAPI), then a graceful delete."""
    now = api.timestamp()

    def mark(status: Obj) -> None:
        set_condition(status, {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": now, "reason": EVICTED_BY_API,
                               "message": "Eviction API: evicting"})

    api.update_status("Pod", namespace, name, mark, _REGISTRY)
    api.delete("Pod", namespace, name, grace_period=grace, caller=_REGISTRY)

