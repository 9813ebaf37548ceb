"""What an update may change of a pod's spec (ValidatePodUpdate): container images, a shorter
active deadline, added tolerations, removed scheduling gates, and, while the pod is gated, added
node selector terms. Everything else is fixed once the pod exists; the resize subresource, not an
update, changes resources."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

MAX_INT32 = 2**31 - 1
UPDATABLE = ("`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
             "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
             "(allow it to be set to 1 if it was previously negative)")


def _containers(old: list[Obj], new: list[Obj], path: str, problems: list[str]) -> bool:
    """ValidateContainerUpdates: the same containers, each still naming an image; False stops."""
    if len(old) != len(new):
        problems.append(f"{path}: Forbidden: pod updates may not add or remove containers")
        return False
    for i, container in enumerate(new):
        if not container.get("image"):
            problems.append(f"{path}[{i}].image: Required value")
    return True


def _deadline(old: Any, new: Any, problems: list[str]) -> None:
    path = "spec.activeDeadlineSeconds"
    if new is not None:
        if not isinstance(new, int) or not 0 <= new <= MAX_INT32:
            problems.append(f"{path}: Invalid value: {new}: must be between 0 and {MAX_INT32}, inclusive")
        elif old is not None and old < new:
            problems.append(f"{path}: Invalid value: {new}: must be less than or equal to previous value")
    elif old is not None:
        problems.append(f"{path}: Invalid value: null: must not update from a positive integer to nil value")


def _only_added_tolerations(old: list[Obj], new: list[Obj], problems: list[str]) -> None:
    """Every existing toleration is kept, its tolerationSeconds aside."""
    for toleration in old:
        if not any({**toleration, "tolerationSeconds": t.get("tolerationSeconds")} == {
                **t, "tolerationSeconds": t.get("tolerationSeconds")} for t in new):
            problems.append("spec.tolerations: Forbidden: existing toleration can not be modified except its "
                            "tolerationSeconds")
            return


def _only_deleted_gates(old: list[Obj], new: list[Obj], problems: list[str]) -> None:
    names = {g.get("name") for g in old}
    if any(g.get("name") not in names for g in new):
        problems.append("spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate "
                        f"'{next(g.get('name') for g in new if g.get('name') not in names)}'")


def pod_update_problems(old: Obj, new: Obj) -> list[str]:
    """`path: message` for each change `new` makes to `old`'s spec that an update may not make."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec == new_spec:
        return []
    problems: list[str] = []
    for key in ("containers", "initContainers"):
        if not _containers(old_spec.get(key) or [], new_spec.get(key) or [], f"spec.{key}", problems):
            return problems
    _deadline(old_spec.get("activeDeadlineSeconds"), new_spec.get("activeDeadlineSeconds"), problems)
    _only_added_tolerations(old_spec.get("tolerations") or [], new_spec.get("tolerations") or [], problems)
    _only_deleted_gates(old_spec.get("schedulingGates") or [], new_spec.get("schedulingGates") or [], problems)
    if problems:
        return problems
    munged = dict(new_spec)
    for key in ("containers", "initContainers"):
        if key in munged:
            munged[key] = [{**c, "image": o.get("image")} for c, o in zip(munged[key], old_spec.get(key) or [],
                                                                            strict=True)]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        _keep(munged, old_spec, key)
    grace = new_spec.get("terminationGracePeriodSeconds")
    if grace == 1 and (old_spec.get("terminationGracePeriodSeconds") or 0) < 0:
        _keep(munged, old_spec, "terminationGracePeriodSeconds")
    if old_spec.get("schedulingGates"):  # mutable scheduling directives of a gated pod
        selector, old_selector = new_spec.get("nodeSelector") or {}, old_spec.get("nodeSelector") or {}
        if any(selector.get(k) != v for k, v in old_selector.items()):
            return ["spec.nodeSelector: Invalid value: "
                    f"{selector}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"]
        _keep(munged, old_spec, "nodeSelector")
        _keep(munged, old_spec, "affinity")
    if munged != old_spec:
        changed = sorted(k for k in munged.keys() | old_spec.keys() if munged.get(k) != old_spec.get(k))
        return [f"spec: Forbidden: pod updates may not change fields other than {UPDATABLE}\n"
                + "".join(f"  changed: spec.{k}\n" for k in changed)]
    return []


def _keep(munged: Obj, old_spec: Obj, key: str) -> None:
    """Take `key` as the old spec has it (present or absent) in the comparison."""
    if key in old_spec:
        munged[key] = old_spec[key]
    else:
        munged.pop(key, None)
