"""Turning loaded input into a run: cluster objects, configuration, and the Scenario's timeline.

Objects are created kind by kind in dependency order — namespaces and classes before the pods
that refer to them, limit ranges and quotas before what they govern, nodes before pods — so a
`kubectl get ... -o yaml` snapshot (which lists pods before priority classes) is admitted as the
live cluster admitted it; file order is kept within a kind. Virtual time 0 is the moment of the export: `--now`, else the Scenario's
`startTime`, else the time `kubesched snapshot` recorded on its List, else the newest timestamp
anywhere in the input; so pod ages, taints' `timeAdded` and the like count from the real past, and an
object stamped later than that is created at that offset. The ReplicaSets an export of
Deployments and their pods lacks are rebuilt from the pods (controllers.rebuiltreplicasets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesched.api.duration import parse_duration
from kubesched.api.errors import Problem
from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.loader import LoadedObject
from kubesched.api.objects import DEFAULT_EPOCH, Obj, controller_of, parse_time
from kubesched.controllers.rebuiltreplicasets import rebuild_replica_sets

CREATE_ORDER = ["Namespace", "PriorityClass", "RuntimeClass", "LimitRange", "ResourceQuota", "StorageClass",
                "CSIDriver", "Node", "CSINode", "PersistentVolume", "PersistentVolumeClaim", "DeviceClass", "ResourceSlice",
                "DeviceTaintRule", "ResourceClaimTemplate", "ResourceClaim", "PodDisruptionBudget",
                "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "CronJob", "Job",
                "Pod"]


@dataclass
class TimedAction:
    at: float
    action: str  # create, delete, evict, patch, drain, usage
    body: dict[str, Any]
    index: int


@dataclass
class Scenario:
    name: str = "scenario"
    seed: int = 0
    until: float | None = None
    epoch: datetime = DEFAULT_EPOCH
    objects: list[tuple[float, Obj]] = field(default_factory=list)  # (creation time, object)
    actions: list[TimedAction] = field(default_factory=list)
    expects: list[dict[str, Any]] = field(default_factory=list)
    # One scheduler instance per KubeSchedulerConfiguration document (none: the default scheduler).
    scheduler_configs: list[LoadedObject] = field(default_factory=list)
    scenario_origin: LoadedObject | None = None
    kubelet_config: Obj | None = None
    descheduler_policy: Obj | None = None
    warnings: list[Problem] = field(default_factory=list)  # what was off in the input, though usable
    feature_gates: FeatureGates = DEFAULT_FEATURE_GATES  # spec.featureGates, then --feature-gates on top


# Fields holding when something happened (not deletionTimestamp: it may lie in the future).
TIME_FIELDS = frozenset({"creationTimestamp", "startTime", "lastTransitionTime", "lastHeartbeatTime",
                         "lastProbeTime", "lastUpdateTime", "startedAt", "finishedAt", "timeAdded", "time",
                         "lastScheduleTime", "lastSuccessfulTime", "completionTime", "firstTimestamp",
                         "lastTimestamp", "eventTime", "lastPhaseTransitionTime"})


def _timestamps(value: Any, found: list[datetime]) -> list[datetime]:
    """Every time an exported object records, anywhere in it, in document order, added to `found`:
    the newest is when it was exported."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TIME_FIELDS and isinstance(item, str):
                try:
                    found.append(parse_time(item))
                except ValueError:
                    continue
            elif isinstance(item, (dict, list)):
                _timestamps(item, found)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _timestamps(item, found)
    return found


def _order(kind: str) -> int:
    return CREATE_ORDER.index(kind) if kind in CREATE_ORDER else len(CREATE_ORDER)


def build(loaded: list[LoadedObject], now: datetime | None = None) -> Scenario:
    """Assemble the run from validated objects; `now` is the moment of the export (virtual time
    0), overriding the Scenario's startTime and the newest timestamp in the input."""
    sc = Scenario()
    cluster_objs: list[Obj] = []
    sources_of: dict[int, str] = {}  # the file each object came from
    for lo in loaded:
        obj, kind = lo.obj, lo.obj.get("kind")
        if kind == "Scenario":
            spec = obj.get("spec") or {}
            sc.name = obj.get("metadata", {}).get("name", sc.name)
            sc.scenario_origin = lo
            sc.seed = int(spec.get("seed", 0))
            sc.until = parse_duration(spec["until"]) if spec.get("until") is not None else None
            if spec.get("startTime"):
                sc.epoch = parse_time(spec["startTime"])
            if spec.get("featureGates"):
                sc.feature_gates = FeatureGates(spec["featureGates"])
            for i, ev in enumerate(spec.get("events") or ()):
                action = next(k for k in ev if k != "at")
                sc.actions.append(TimedAction(parse_duration(ev.get("at", 0)), action, ev[action], i))
            sc.expects.extend(spec.get("expect") or ())
        elif kind == "KubeSchedulerConfiguration":
            sc.scheduler_configs.append(lo)
        elif kind == "KubeletConfiguration":
            sc.kubelet_config = obj
        elif kind == "DeschedulerPolicy":
            sc.descheduler_policy = obj
        else:
            cluster_objs.append(obj)
            sources_of.setdefault(id(obj), lo.source)
    if now is not None:
        sc.epoch = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    elif not any(lo.obj.get("kind") == "Scenario" and (lo.obj.get("spec") or {}).get("startTime") for lo in loaded):
        recorded = [lo.snapshot_time for lo in loaded if lo.snapshot_time is not None]
        sc.epoch = max(recorded) if recorded else \
            max(_timestamps(cluster_objs, []), default=DEFAULT_EPOCH)
    rebuilt, note = rebuild_replica_sets(cluster_objs)
    if note is not None:
        uids = {rs["metadata"]["uid"] for rs in rebuilt}
        sources = dict.fromkeys(sources_of[id(o)] for o in cluster_objs
                                if o["kind"] == "Pod" and (controller_of(o) or {}).get("uid") in uids)
        sc.warnings.append(Problem(", ".join(sources), None, "", note))
    for obj in sorted([*cluster_objs, *rebuilt], key=lambda o: _order(o["kind"])):
        stamp = (obj.get("metadata") or {}).get("creationTimestamp")
        at = max((parse_time(stamp) - sc.epoch).total_seconds(), 0.0) if stamp else 0.0
        sc.objects.append((at, obj))
    sc.actions.sort(key=lambda a: a.at)
    return sc
