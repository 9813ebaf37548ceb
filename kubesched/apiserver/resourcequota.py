"""The ResourceQuota admission plugin (apiserver/pkg/admission/plugin/resourcequota), on create.

Every object created in a namespace is checked against the namespace's quotas that track
something it uses (status.hard, as the resource-quota controller last computed it) and whose
scopes it is in: a pod must state the cpu and memory requests or limits a quota tracks, a quota
whose usage is not computed for those resources yet refuses, and an object that would take usage
above a hard limit is refused with upstream's message (`exceeded quota: q, requested: pods=1,
used: pods=3, limited: pods=3`). Admitted objects are charged at once: the plugin writes the new
status.used, so a burst of creates cannot overrun the quota before the controller recounts.

A quota just created has no status.hard, tracks nothing yet and admits everything, as upstream's
does until its controller's first sync. Upstream also charges a refused or failed create's
usage when the write after admission fails; here a create of an existing name is refused first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.objects import Obj, deep_copy
from kubesched.api.quota import (
    ResourceList,
    add,
    compute_usage,
    exceeded,
    mask,
    matching_resources,
    object_count_name,
    pod_level_set,
    pretty,
    printable,
    quota_matches,
    resource_list,
    usage,
)
from kubesched.apiserver.errors import admission_forbidden

if TYPE_CHECKING:
    from kubesched.store.base import Store

# The quota resources a pod's every container must state when a quota tracks them (upstream's
# backward-compatibility rule; no resource is added to it any more).
MUST_SPECIFY = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})


def crd_plurals(store: Store) -> dict[tuple[str, str], str]:
    """(group, kind) -> plural of every custom resource the store has a definition for."""
    plurals = {}
    for crd in store.list("CustomResourceDefinition"):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        if names.get("kind") and names.get("plural"):
            plurals[(spec.get("group", ""), names["kind"])] = names["plural"]
    return plurals


def count_name(obj: Obj, store: Store) -> str:
    """The object's `count/<resource>.<group>` quota name."""
    plurals = crd_plurals(store) if "/" in str(obj.get("apiVersion") or "") else {}
    return object_count_name(obj, lambda group, kind: plurals.get((group, kind)))


def admit(obj: Obj, store: Store, dra_extended: bool = False) -> None:
    """Refuse `obj` (being created) if a quota of its namespace does not allow it, else charge it.
    `dra_extended`: DRAExtendedResource is on (claims count in extended-resource names too)."""
    namespace = obj["metadata"].get("namespace")
    quotas = list(store.list("ResourceQuota", namespace)) if namespace else []
    if not quotas:
        return
    kind, count = obj["kind"], count_name(obj, store)
    pertinent = []
    for quota in quotas:
        if not quota_matches(quota, obj, count):
            continue
        name, status = quota["metadata"]["name"], quota.get("status") or {}
        tracked = matching_resources(kind, count, status.get("hard") or {}, dra_extended)
        if kind == "Pod":
            missing = unstated(obj["spec"], tracked)
            if missing:
                raise admission_forbidden(obj, f"failed quota: {name}: {missing}")
        unknown = sorted(n for n in tracked if n not in (status.get("used") or {}))
        if unknown:
            raise admission_forbidden(obj, f"status unknown for quota: {name}, resources: {','.join(sorted(tracked))}")
        pertinent.append(quota)
    delta = {n: v for n, v in usage(obj, count, dra_extended=store.get if dra_extended else None).items()
             if v.value}  # quota.RemoveZeros
    if not pertinent or not delta:
        return
    charged: list[tuple[Obj, ResourceList]] = []
    for quota in pertinent:
        status = quota["status"]
        hard, used = resource_list(status["hard"]), resource_list(status["used"])
        requested = mask(delta, hard)
        new_used = add(used, requested)
        over = exceeded(mask(new_used, requested), hard)
        if over:
            raise admission_forbidden(obj, f"exceeded quota: {quota['metadata']['name']}, "
                                           f"requested: {pretty(mask(requested, over))}, "
                                           f"used: {pretty(mask(used, over))}, limited: {pretty(mask(hard, over))}")
        charged.append((quota, new_used))
    for quota, new_used in charged:
        if printable(new_used) != printable(resource_list(quota["status"]["used"])):
            updated = {**quota, "metadata": dict(quota["metadata"]),
                       "status": {**deep_copy(quota["status"]), "used": printable(new_used)}}
            store.update(updated)


def unstated(spec: Obj, tracked: list[str]) -> str:
    """podEvaluator.Constraints: with a quota on cpu or memory, every container and init container
    must state it (`must specify limits.cpu for: app; requests.memory for: app,sidecar`); a pod
    with pod-level resources need not."""
    required = MUST_SPECIFY.intersection(tracked)
    if not required or pod_level_set(spec):
        return ""
    missing: dict[str, set[str]] = {}
    for group in ("containers", "initContainers"):
        for container in spec.get(group) or ():
            resources = container.get("resources") or {}
            stated = compute_usage(resource_list(resources.get("requests")), resource_list(resources.get("limits")))
            for name in required.difference(stated):
                missing.setdefault(name, set()).add(container.get("name", ""))
    if not missing:
        return ""
    return "must specify " + "; ".join(f"{n} for: {','.join(sorted(missing[n]))}" for n in sorted(missing))
