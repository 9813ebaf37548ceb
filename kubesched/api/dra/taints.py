"""Device taints and the tolerations of device requests (DRADeviceTaints, alpha in v1.35).

A driver taints a device in its ResourceSlice (or a DeviceTaintRule taints devices it selects);
a request tolerates a taint with the rules of pod tolerations (resourceclaim.ToleratesTaint).
Only the effects that mean something hold a device back: NoSchedule keeps it from being
allocated, NoExecute also evicts the pods of claims that hold it; None, and any effect a newer
API server might know, are informational and ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]
NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"
EFFECTIVE = (NO_SCHEDULE, NO_EXECUTE)


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """Whether one toleration tolerates one taint: an empty effect or key matches any, `Exists`
    any value, `Equal` (the default) only the same value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerated(taint: Obj, tolerations: Iterable[Obj]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def prevents_allocation(taints: Iterable[Obj], tolerations: list[Obj]) -> bool:
    """taintPreventsAllocation: some NoSchedule or NoExecute taint is not tolerated."""
    return any(t.get("effect") in EFFECTIVE and not tolerated(t, tolerations) for t in taints)

