"""node.k8s.io/v1: RuntimeClasses (pkg/apis/node/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.names import dns_label_errors
from kubesched.api.validation.checker import Checker, _labels, check_resource_list, subpath
from kubesched.api.validation.core import _tolerations


def _runtime_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    handler = c.need(obj, "handler", path, str)
    if handler is not None:
        c.names(handler, subpath(path, "handler"), dns_label_errors)
    overhead = c.get(obj, "overhead", path, dict)
    if overhead is not None:
        check_resource_list(c, overhead.get("podFixed"), subpath(path, "overhead.podFixed"), container=True)
    scheduling_path = subpath(path, "scheduling")
    scheduling = c.get(obj, "scheduling", path, dict)
    if scheduling is not None:
        _labels(c, scheduling.get("nodeSelector"), subpath(scheduling_path, "nodeSelector"))
        _tolerations(c, scheduling.get("tolerations"), subpath(scheduling_path, "tolerations"))
