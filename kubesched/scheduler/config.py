"""Profiles from a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

A profile starts from the default multiPoint plugin list; `plugins.<point>.enabled/disabled`
(with "*" for all defaults) and `pluginConfig` args adjust it, exactly in the way the real
configuration merges user plugins with the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.scheduler.framework import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    ConfigError,
    Handle,
    Plugin,
    Profile,
)
from kubesched.scheduler.plugins import DEFAULT_MULTIPOINT, resolve

DEFAULT_SCHEDULER_NAME = "default-scheduler"
MAX_TOTAL_SCORE = 2**63 - 1


@dataclass
class SchedulerConfig:
    profiles: list[dict[str, Any]] = field(default_factory=lambda: [{"schedulerName": DEFAULT_SCHEDULER_NAME}])
    percentage_of_nodes_to_score: int | None = None
    initial_backoff: float = 1.0
    max_backoff: float = 10.0

    @classmethod
    def from_object(cls, obj: dict[str, Any] | None) -> SchedulerConfig:
        if not obj:
            return cls()
        cfg = cls(
            profiles=obj.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}],
            percentage_of_nodes_to_score=obj.get("percentageOfNodesToScore"),
            initial_backoff=float(obj.get("podInitialBackoffSeconds", 1)),
            max_backoff=float(obj.get("podMaxBackoffSeconds", 10)),
        )
        names = [p.get("schedulerName") or DEFAULT_SCHEDULER_NAME for p in cfg.profiles]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ConfigError(f"profiles[{i}].schedulerName", f'Duplicate value: "{name}"')
        pct = cfg.percentage_of_nodes_to_score
        if pct is not None and not 0 <= pct <= 100:
            raise ConfigError("percentageOfNodesToScore", f"Invalid value: {pct}: not in valid range [0-100]")
        if cfg.initial_backoff <= 0:
            raise ConfigError("podInitialBackoffSeconds", "Invalid value: must be greater than 0")
        if cfg.max_backoff < cfg.initial_backoff:
            raise ConfigError("podMaxBackoffSeconds",
                              "Invalid value: must be greater than or equal to PodInitialBackoffSeconds")
        return cfg


def _plugin_list(points: dict[str, Any], point: str, defaults: list[tuple[str, int]], path: str
                 ) -> list[tuple[str, int]]:
    """Merge one extension point's enabled/disabled with the defaults (order: defaults, then enabled)."""
    spec = points.get(point) or {}
    disabled = {d.get("name") for d in spec.get("disabled") or ()}
    out = [] if "*" in disabled else [(n, w) for n, w in defaults if n not in disabled]
    for i, e in enumerate(spec.get("enabled") or ()):
        name = e.get("name")
        if resolve(name) is None:
            raise ConfigError(f"{path}.{point}.enabled[{i}].name",
                              f'"{name}" is not a known plugin (in-tree, a kubesched.plugins entry point, '
                              "or an importable module:Class)")
        weight = int(e.get("weight") or 0)
        if weight < 0:
            raise ConfigError(f"{path}.{point}.enabled[{i}].weight", f"Invalid value: {weight}: must not be negative")
        out = [(n, w) for n, w in out if n != name] + [(name, weight)]
    return out


def build_profile(spec: dict[str, Any], index: int, handle: Handle, percentage: int | None) -> Profile:
    path = f"profiles[{index}].plugins"
    points = spec.get("plugins") or {}
    multipoint = _plugin_list(points, "multiPoint", DEFAULT_MULTIPOINT, path)
    args = {c.get("name"): c.get("args") or {} for c in spec.get("pluginConfig") or ()}
    instances: dict[str, Plugin] = {}

    def instance(name: str) -> Plugin:
        if name not in instances:
            cls = resolve(name)
            assert cls is not None
            try:
                instances[name] = cls(handle, args.get(name, args.get(cls.name)))
            except ConfigError as e:  # plugin args are checked by the plugin; give the full path
                raise ConfigError(f"profiles[{index}].{e.path}", e.message) from None
        return instances[name]

    plugins: dict[str, list[Plugin]] = {}
    weights: dict[str, int] = {}
    for point, base in EXTENSION_POINTS.items():
        implementing = [(n, w) for n, w in multipoint if issubclass(resolve(n) or Plugin, base)]
        for n, w in _plugin_list(points, point, implementing, path):
            if not issubclass(resolve(n) or Plugin, base):
                raise ConfigError(f"{path}.{point}", f'plugin "{n}" does not extend {point} plugin')
            plugins.setdefault(point, []).append(instance(n))
            if point == "score":
                weights[instance(n).name] = w or 1  # a zero weight means the default of 1
    if len(plugins.get("queueSort", [])) != 1:
        raise ConfigError(f"{path}.queueSort", "Invalid value: exactly one queue sort plugin must be enabled, "
                          f"got {len(plugins.get('queueSort', []))}")
    if sum(weights.values()) * MAX_NODE_SCORE > MAX_TOTAL_SCORE:
        raise ConfigError(f"{path}.score", "Invalid value: total score of Score plugins could overflow")
    if not plugins.get("bind"):
        raise ConfigError(f"{path}.bind", "at least one bind plugin is needed")
    return Profile(
        scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        handle=handle,
        plugins=plugins,
        score_weights=weights,
        percentage_of_nodes_to_score=spec.get("percentageOfNodesToScore", percentage),
    )


def build_profiles(cfg: SchedulerConfig, handle: Handle) -> dict[str, Profile]:
    """Every profile, checked together: all must share one QueueSort (the queue is shared)."""
    profiles: dict[str, Profile] = {}
    for i, spec in enumerate(cfg.profiles):
        profile = build_profile(spec, i, handle, cfg.percentage_of_nodes_to_score)
        profiles[profile.scheduler_name] = profile
    if len({p.at("queueSort")[0].name for p in profiles.values()}) > 1:
        raise ConfigError("profiles", "Invalid value: queueSort must be the same for all profiles")
    return profiles
