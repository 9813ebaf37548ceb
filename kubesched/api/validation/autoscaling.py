"""autoscaling/v2: a HorizontalPodAutoscaler's target and bounds (pkg/apis/autoscaling/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.validation.checker import Checker, subpath


def _horizontal_pod_autoscaler(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    ref_path = subpath(spec_path, "scaleTargetRef")
    ref = c.get(spec, "scaleTargetRef", spec_path, dict) or {}
    c.need(ref, "kind", ref_path, str)
    c.need(ref, "name", ref_path, str)
    low = c.get(spec, "minReplicas", spec_path, int, 32)
    high = c.get(spec, "maxReplicas", spec_path, int, 32) or 0
    if low is not None and low < 1:
        c.invalid(subpath(spec_path, "minReplicas"), low, "must be greater than or equal to 1")
    if high < 1:
        c.invalid(subpath(spec_path, "maxReplicas"), high, "must be greater than or equal to 1")
    elif low is not None and high < low:
        c.invalid(subpath(spec_path, "maxReplicas"), high, "must be greater than or equal to `minReplicas`")
