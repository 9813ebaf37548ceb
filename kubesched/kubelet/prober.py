"""When a simulated container is started and Ready: its startup and readiness probes, as the
kubelet's prober workers run them, and the simulation annotations that make a probe fail.

No probe is sent: every probe succeeds unless the pod says otherwise with
`sim.kubesched.io/never-ready: "app,sidecar"` (those containers' probes never succeed) or
`sim.kubesched.io/probe-fails-after: "app=5m"` (the container's readiness probe fails from that
long after the container started). What is modelled is the timing, in virtual time:

- a probe runs first `initialDelaySeconds` after the container started, then every
  `periodSeconds` (the documented schedule; the real worker's first tick is jittered only when the
  kubelet itself has just started, which a simulation never is);
- a container with a startup probe is started after `successThreshold` (always 1) successes; until
  then it is neither started nor probed for readiness;
- once started, the readiness probe runs at once (the kubelet triggers it when it sees the
  container started) if its initial delay is over, else when it is; the container is Ready after
  `successThreshold` consecutive successes and Not Ready again after `failureThreshold`
  consecutive failures;
- a container without a readiness probe is Ready as soon as it is started.

`timeoutSeconds` bounds how long one probe may take; a simulated probe answers at once, so it
never changes the timing. Liveness probes restart a container in the real kubelet; a simulated
liveness probe always succeeds, so they are not modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubesched.api.objects import Obj
from kubesched.api.podlife import (
    NEVER_READY_ANNOTATION,
    PROBE_FAILS_AFTER_ANNOTATION,
    never_ready,
    probe_fails_after,
)

# The API server's defaults for a probe's zero fields (SetDefaults_Probe).
DEFAULT_PERIOD = 10
DEFAULT_SUCCESS_THRESHOLD = 1
DEFAULT_FAILURE_THRESHOLD = 3


@dataclass(frozen=True)
class Probe:
    initial_delay: float
    period: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, spec: Obj | None) -> Probe | None:
        """The probe a container declares, with the API's defaults for what it leaves at zero."""
        if not isinstance(spec, dict):
            return None
        return cls(initial_delay=_count(spec, "initialDelaySeconds", 0),
                   period=_count(spec, "periodSeconds", DEFAULT_PERIOD),
                   success_threshold=_count(spec, "successThreshold", DEFAULT_SUCCESS_THRESHOLD),
                   failure_threshold=_count(spec, "failureThreshold", DEFAULT_FAILURE_THRESHOLD))

    def first_at_or_after(self, start: float, when: float) -> float:
        """The first probe of the series start, start + period, ... that runs at or after `when`."""
        if when <= start:
            return start
        return start + math.ceil((when - start) / self.period) * self.period


def _count(spec: Obj, key: str, default: int) -> int:
    value = spec.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


@dataclass(frozen=True)
class Timeline:
    """A container's readiness over its run, in seconds since it started: started from `started`,
    Ready from `ready` until `unready` (None: never)."""

    started: float | None
    ready: float | None
    unready: float | None

    def state(self, elapsed: float) -> tuple[bool, bool]:
        """(started, ready) `elapsed` seconds after the container started."""
        started = self.started is not None and elapsed >= self.started
        ready = self.ready is not None and elapsed >= self.ready and (self.unready is None or elapsed < self.unready)
        return started, ready

    def changes(self) -> tuple[float, ...]:
        return tuple(t for t in (self.started, self.ready, self.unready) if t is not None)

    @property
    def at_once(self) -> bool:
        """Started and Ready from its start on, for good: when it started changes nothing."""
        return self.started == 0.0 and self.ready == 0.0 and self.unready is None


def timeline(container: Obj, never_ready: bool, fails_after: float | None) -> Timeline:
    """When the container becomes started and Ready, and Not Ready again, by its probes."""
    startup = Probe.of(container.get("startupProbe"))
    started = 0.0 if startup is None else startup.initial_delay + (startup.success_threshold - 1) * startup.period
    if never_ready:
        return Timeline(started, None, None)
    readiness = Probe.of(container.get("readinessProbe"))
    if readiness is None:
        return Timeline(started, started, None)
    first = max(readiness.initial_delay, started)
    ready = first + (readiness.success_threshold - 1) * readiness.period
    if fails_after is None:
        return Timeline(started, ready, None)
    failing = readiness.first_at_or_after(first, fails_after)
    if failing <= ready:  # it failed before enough successes: Ready is never reported
        return Timeline(started, None, None)
    return Timeline(started, ready, failing + (readiness.failure_threshold - 1) * readiness.period)


def probed_containers(pod: Obj) -> list[Obj]:
    """The containers whose readiness makes the pod's: its app containers and its sidecars
    (restartable init containers)."""
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    return [*sidecars, *(spec.get("containers") or ())]


# A container without probes or annotations: started and Ready at once (most containers).
_AT_ONCE = Timeline(0.0, 0.0, None)


def timelines(pod: Obj) -> dict[str, Timeline]:
    """Every probed container's timeline, by name."""
    annotations = pod["metadata"].get("annotations")
    if not annotations or (NEVER_READY_ANNOTATION not in annotations
                           and PROBE_FAILS_AFTER_ANNOTATION not in annotations):
        # Nothing makes a probe fail: a container without probes needs no reading of them.
        return {c.get("name", ""): _AT_ONCE if "startupProbe" not in c and "readinessProbe" not in c
                else timeline(c, False, None) for c in probed_containers(pod)}
    stuck, fails = never_ready(pod), probe_fails_after(pod)
    return {c.get("name", ""): timeline(c, c.get("name") in stuck, fails.get(c.get("name", "")))
            for c in probed_containers(pod)}


def reports_readiness(pod: Obj) -> bool:
    """Whether the kubelet's probes (or the simulation's annotations) decide when the pod is
    Ready, rather than its containers being Ready as soon as they run."""
    return bool(never_ready(pod)) or any(
        isinstance(c.get("readinessProbe"), dict) or isinstance(c.get("startupProbe"), dict)
        for c in probed_containers(pod))
