"""How long a simulated pod runs, whether its probes succeed and how long it takes to stop: the
`sim.kubesched.io` annotations the simulated kubelet reads, and what the descheduler's planner
must agree with it on."""

from __future__ import annotations

from kubesched.api.duration import DurationError, parse_duration
from kubesched.api.objects import Obj

DURATION_ANNOTATION = "sim.kubesched.io/duration"
SHUTDOWN_ANNOTATION = "sim.kubesched.io/shutdown"
EXIT_CODE_ANNOTATION = "sim.kubesched.io/exit-code"
NEVER_READY_ANNOTATION = "sim.kubesched.io/never-ready"
PROBE_FAILS_AFTER_ANNOTATION = "sim.kubesched.io/probe-fails-after"


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


def never_ready(pod: Obj) -> set[str]:
    """`sim.kubesched.io/never-ready`: the containers whose probes never succeed."""
    value = (pod["metadata"].get("annotations") or {}).get(NEVER_READY_ANNOTATION) or ""
    return {name.strip() for name in value.split(",") if name.strip()}


def probe_fails_after(pod: Obj) -> dict[str, float]:
    """`sim.kubesched.io/probe-fails-after`: per container, how long after it started its
    readiness probe starts failing."""
    value = (pod["metadata"].get("annotations") or {}).get(PROBE_FAILS_AFTER_ANNOTATION) or ""
    return {name: after for name, after, _ in parse_fails_after(value)}


def parse_fails_after(value: str) -> list[tuple[str, float, str | None]]:
    """`app=5m,web=1h`: (container, seconds, why the item is wrong or None), in order."""
    items = []
    for item in value.split(","):
        if not item.strip():
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            items.append((name, 0.0, f'"{item.strip()}" must be <container>=<duration>'))
            continue
        try:
            seconds = parse_duration(raw.strip())
        except DurationError as e:
            items.append((name, 0.0, str(e)))
            continue
        items.append((name, seconds, None if seconds >= 0 else "must be greater than or equal to 0"))
    return items
