"""scheduling.k8s.io/v1: PriorityClasses (pkg/apis/scheduling/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.validation.checker import Checker
from kubesched.api.validation.core import PREEMPTION_POLICIES


def _priority_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    c.need(obj, "value", path, int, 32)
    c.get(obj, "globalDefault", path, bool)
    c.get(obj, "description", path, str)
    c.enum(obj, "preemptionPolicy", path, PREEMPTION_POLICIES)
