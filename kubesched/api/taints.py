"""Taint/toleration matching (core/v1 helper ToleratesTaint)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubesched.api.objects import Obj


def tolerates(toleration: Obj, taint: Obj) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: Iterable[Obj], taint: Obj) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated(taints: Iterable[Obj], tolerations: list[Obj],
                      keep: Callable[[Obj], bool]) -> Obj | None:
    """The first taint selected by `keep` that no toleration tolerates (FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if keep(taint) and not tolerated(tolerations, taint):
            return taint
    return None
