"""PodDisruptionBudget helpers shared by the disruption controller and the eviction subresource."""

from __future__ import annotations

from kubesched.api.objects import Obj
from kubesched.api.selectors import LabelSelector, SelectorError


def pdb_selector(pdb: Obj) -> LabelSelector | None:
    """The pods a budget selects, or None for none at all.

    A missing or invalid selector selects nothing; an empty one (`{}`) selects every pod in the
    namespace (policy/v1; policy/v1beta1, where it selected nothing, is no longer served).
    """
    raw = (pdb.get("spec") or {}).get("selector")
    if raw is None:
        return None
    # Every eviction and every descheduler check asks each budget of the namespace again;
    # compiling (with label validation) dominated, while a selector's text is cheap to key on.
    return _compiled(repr(raw), raw)


_COMPILED: dict[str, LabelSelector | None] = {}
_COMPILED_MAX = 4096


def _compiled(key: str, raw: Obj) -> LabelSelector | None:
    if key in _COMPILED:
        return _COMPILED[key]
    try:
        selector: LabelSelector | None = LabelSelector.compile(raw)
    except SelectorError:
        selector = None
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[key] = selector
    return selector


def pdb_covers(pdb: Obj, pod: Obj, selector: LabelSelector | None) -> bool:
    return (selector is not None and pdb["metadata"].get("namespace") == pod["metadata"].get("namespace")
            and selector.matches(pod["metadata"].get("labels") or {}))


def disruption_allowed_condition(status: Obj, now: str) -> Obj:
    """The DisruptionAllowed condition that matches status.disruptionsAllowed
    (pdbhelper.UpdateDisruptionAllowedCondition)."""
    allowed = (status.get("disruptionsAllowed") or 0) > 0
    return {"type": "DisruptionAllowed", "status": "True" if allowed else "False",
            "reason": "SufficientPods" if allowed else "InsufficientPods", "message": "",
            "observedGeneration": status.get("observedGeneration"), "lastTransitionTime": now}
