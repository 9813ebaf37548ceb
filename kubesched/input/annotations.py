"""The simulation's own annotations (`sim.kubesched.io/...`), checked where the input is read.

The API server stores any annotation; these are the ones kubesched's kubelet, prober and
provisioner act on (how long a pod runs and takes to stop, its exit code, its usage, when its probes
fail; a node's inodes, pids and system usage; how long a class's provisioner takes), so a mistyped
one is bad input rather than a setting silently ignored. The kubelet's usage model keeps the keys in
step with these (tests/unit/test_kubelet_usage.py).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.podlife import NEVER_READY_ANNOTATION, PROBE_FAILS_AFTER_ANNOTATION, parse_fails_after
from kubesched.api.validation.checker import Checker, _dicts, _quantity, _show, subpath

SIM_PREFIX = "sim.kubesched.io/"
SIM_USAGE_KEYS = ("cpu", "memory", "ephemeral-storage", "inodes", "pids", "writable-layer", "writable-layer-inodes")
SIM_NODE_AMOUNTS = ("inodes", "pid-max", "imagefs-capacity", "imagefs-inodes")
SIM_SYSTEM_USAGE_KEYS = ("memory", "ephemeral-storage", "inodes", "pids", "images", "images-inodes")
# Annotations the simulated kubelet reads as durations: how long a pod runs, how long it takes to stop.
SIM_DURATION_ANNOTATIONS = ("sim.kubesched.io/duration", "sim.kubesched.io/shutdown")
SIM_EXIT_CODE = "sim.kubesched.io/exit-code"  # how a pod's containers exit at the end of their duration
SIM_PROVISIONING_TIME = "sim.kubesched.io/provisioning-time"  # a StorageClass's provisioner's delay


class SimulationChecker(Checker):
    """The API server's checks plus the simulation annotations' own rules."""

    def annotations(self, annotations: dict[str, str], path: str, kind: str, pod_spec: Any) -> None:
        simulation_annotations(self, annotations, path, kind, pod_spec)


def simulation_annotations(c: Checker, annotations: dict[str, str], path: str, kind: str, pod_spec: Any) -> None:
    """Check the `sim.kubesched.io/` annotations of an object of `kind` (a pod template's as a Pod's)."""
    pod, node = kind == "Pod", kind == "Node"
    for key in SIM_DURATION_ANNOTATIONS if pod else ():
        c.duration(annotations, key, path)
    if kind == "StorageClass" and annotations.get(SIM_PROVISIONING_TIME, "never") != "never":
        c.duration(annotations, SIM_PROVISIONING_TIME, path)
    for key, raw in annotations.items():
        if not key.startswith(SIM_PREFIX) or key in SIM_DURATION_ANNOTATIONS:
            continue
        name = key[len(SIM_PREFIX):]
        if pod and key == SIM_EXIT_CODE:
            if not (raw.isdigit() and int(raw) <= 255):
                c.invalid(subpath(path, key), raw, "must be an exit code, an integer from 0 to 255")
        elif pod and key in (NEVER_READY_ANNOTATION, PROBE_FAILS_AFTER_ANNOTATION):
            _probe_annotation(c, key, raw, subpath(path, key), pod_spec)
        elif pod and name.startswith("usage-") and name[len("usage-"):] in SIM_USAGE_KEYS or \
                node and (name in SIM_NODE_AMOUNTS or name.startswith("system-usage-")
                          and name[len("system-usage-"):] in SIM_SYSTEM_USAGE_KEYS):
            _quantity(c, raw, subpath(path, key), "cpu" if name == "usage-cpu" else "")
        elif pod or node:
            c.err(subpath(path, key), "unknown simulation annotation (docs/scenarios.md lists them)")


def _probe_annotation(c: Checker, key: str, raw: str, path: str, pod_spec: Any) -> None:
    """`never-ready` names containers (app containers or sidecars) of the pod; `probe-fails-after`
    gives durations to containers that have a readiness probe."""
    spec = pod_spec if isinstance(pod_spec, dict) else {}
    probed = {ctr.get("name"): ctr for ctr in (*_dicts(spec.get("initContainers")), *_dicts(spec.get("containers")))
              if ctr in _dicts(spec.get("containers")) or ctr.get("restartPolicy") == "Always"}
    if key == NEVER_READY_ANNOTATION:
        items = [(name.strip(), None) for name in raw.split(",")]
    else:
        items = [(name, why) for name, _, why in parse_fails_after(raw)]
    if not any(name for name, _ in items):
        c.invalid(path, raw, "must name at least one container" if key == NEVER_READY_ANNOTATION
                  else "must be a comma-separated list of <container>=<duration>")
    seen: set[str] = set()
    for name, why in items:
        if why is not None:
            c.invalid(path, raw, why)
        elif name in seen:
            c.invalid(path, raw, f"container {_show(name)} is given twice")
        elif name and name not in probed:
            c.invalid(path, raw, f"no container or sidecar {_show(name)} in the pod")
        elif name and key == PROBE_FAILS_AFTER_ANNOTATION and not isinstance(probed[name].get("readinessProbe"), dict):
            c.invalid(path, raw, f"container {_show(name)} has no readinessProbe")
        seen.add(name)
