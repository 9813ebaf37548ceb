"""policy/v1: PodDisruptionBudgets (pkg/apis/policy/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.validation.checker import Checker, _int_or_percent, _label_selector, subpath


def _pdb(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        return
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        c.err(spec_path, "minAvailable and maxUnavailable cannot be both set")
    for key in ("minAvailable", "maxUnavailable"):
        _int_or_percent(c, spec.get(key), subpath(spec_path, key))
    _label_selector(c, spec.get("selector"), subpath(spec_path, "selector"))
    c.enum(spec, "unhealthyPodEvictionPolicy", spec_path, ("AlwaysAllow", "IfHealthyBudget"))
