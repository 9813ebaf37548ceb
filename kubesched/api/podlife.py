"""How long a simulated pod runs and takes to stop: the `sim.kubesched.io` annotations the
simulated kubelet reads, and what the descheduler's planner must agree with it on."""

from __future__ import annotations

from kubesched.api.duration import parse_duration
from kubesched.api.objects import Obj

DURATION_ANNOTATION = "sim.kubesched.io/duration"
SHUTDOWN_ANNOTATION = "sim.kubesched.io/shutdown"
EXIT_CODE_ANNOTATION = "sim.kubesched.io/exit-code"


def annotation_seconds(pod: Obj, key: str) -> float | None:
    value = (pod["metadata"].get("annotations") or {}).get(key)
    return None if value is None else parse_duration(value)


def exit_code(pod: Obj) -> int:
    """`sim.kubesched.io/exit-code`: how the pod's containers exit at the end of their duration
    (0, success, unless said otherwise)."""
    value = (pod["metadata"].get("annotations") or {}).get(EXIT_CODE_ANNOTATION)
    return 0 if value is None else int(value)


def shutdown_time(pod: Obj, grace: float) -> float:
    """How long a pod takes to stop once the kubelet asks it to: its containers exit on SIGTERM at
    once unless `sim.kubesched.io/shutdown` says they take longer, and they are killed when the
    grace period is over. (KWOK and kube-scheduler-simulator remove deleted pods at once too, and
    so do the real kube-scheduler's recorded runs the fidelity corpus holds.)"""
    shutdown = annotation_seconds(pod, SHUTDOWN_ANNOTATION)
    return 0.0 if shutdown is None else min(shutdown, grace)
