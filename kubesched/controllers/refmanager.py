"""Claiming: which objects a controller owns (pkg/controller/controller_ref_manager.go ClaimObject).

A controller acts only on objects whose controller reference names it. An orphan its selector
matches is adopted (its ownerReferences patched to add the controller's), unless the orphan or
the controller is being deleted; an object it owns that its selector no longer matches is released.
Objects another controller owns are never touched. The patches are merge patches of the whole
ownerReferences list (upstream sends strategic merge patches keyed by uid; the result is the same).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.objects import Obj, controller_of, is_terminating
from kubesched.api.selectors import LabelSelector
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.controllers.podcontrol import controller_ref


def claim(api: APIServer, owner: Obj, selector: LabelSelector, objects: Iterable[Obj]) -> list[Obj]:
    """The objects `owner` controls once orphans are adopted and strays released, in input order.

    An adoption or release the API refuses (the object is gone, say) leaves the object unclaimed;
    the watch event that follows any real change brings the controller back.
    """
    uid = owner["metadata"]["uid"]
    owner_deleting = is_terminating(owner)
    claimed: list[Obj] = []
    for obj in objects:
        ref = controller_of(obj)
        matches = selector.matches(obj["metadata"].get("labels") or {})
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches:
                claimed.append(obj)
            elif not owner_deleting:
                _set_refs(api, obj, [r for r in obj["metadata"]["ownerReferences"] if r.get("uid") != uid])
            continue
        if owner_deleting or not matches or is_terminating(obj):
            continue
        adopted = _set_refs(api, obj, [*(obj["metadata"].get("ownerReferences") or ()), controller_ref(owner)])
        if adopted is not None:
            claimed.append(adopted)
    return claimed


def _set_refs(api: APIServer, obj: Obj, refs: list[Obj]) -> Obj | None:
    meta = obj["metadata"]
    try:
        return api.patch(obj["kind"], meta.get("namespace", ""), meta["name"],
                         {"metadata": {"ownerReferences": refs or None}})
    except APIError:
        return None
