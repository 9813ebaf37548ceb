"""Pod QoS class, as pkg/apis/core/v1/helper/qos.ComputePodQOS decides it (v1.35).

QoS drives eviction order and preemption tie-breaks, so it is computed from the spec (which is
all the API server uses to set ``status.qosClass``). Only cpu and memory count. Each container,
init containers included, is classified on its own: no requests or limits at all is BestEffort;
cpu and memory each requested and limited at the same non-zero amount is Guaranteed; anything
else is Burstable. The pod is Guaranteed or BestEffort only if every container is, else Burstable.
When ``spec.resources`` is set (PodLevelResources, on by default since 1.34) it alone decides.

Specs are read as stored after API defaulting: a limit without a request counts as the request,
and quantities are compared at milli precision.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Any

from kubesched.api.quantity import _millis
from kubesched.api.resources import default_pod_level_requests, effective_container_requests

__all__ = ["BEST_EFFORT", "BURSTABLE", "GUARANTEED", "qos_class"]

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"


def _requirements_qos(requests: Mapping[str, int], limits: Mapping[str, int]) -> str:
    """resourceQOS: the class of a single set of requests and limits (in millis)."""
    if not requests and not limits:
        return BEST_EFFORT
    classes = set()
    for name in ("cpu", "memory"):
        request = requests.get(name, 0)
        if request != limits.get(name, 0):
            return BURSTABLE
        classes.add(BEST_EFFORT if request == 0 else GUARANTEED)
    return classes.pop() if len(classes) == 1 else BURSTABLE


def qos_class(pod: Mapping[str, Any]) -> str:
    """``Guaranteed``, ``Burstable`` or ``BestEffort`` for a pod manifest (``status`` is ignored)."""
    spec = pod.get("spec") or {}
    pod_level = default_pod_level_requests(spec, _millis)
    if pod_level is not None:
        return _requirements_qos(pod_level, _millis_of(spec["resources"].get("limits")))
    qos = None
    for container in chain(spec.get("containers") or (), spec.get("initContainers") or ()):
        limits = (container.get("resources") or {}).get("limits")
        this = _requirements_qos(_millis_of(effective_container_requests(container)), _millis_of(limits))
        if this == BURSTABLE:
            return BURSTABLE
        if qos is None:
            qos = this
        elif qos != this:
            return BURSTABLE
    return qos or BEST_EFFORT


def _millis_of(resource_list: Mapping[str, Any] | None) -> dict[str, int]:
    return {name: _millis(raw) for name, raw in (resource_list or {}).items()}
