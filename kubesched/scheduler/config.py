"""Profiles from a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

A profile starts from the default multiPoint plugin list; `plugins.<point>.enabled/disabled`
(with "*" for all defaults) and `pluginConfig` args adjust it, exactly in the way the real
configuration merges user plugins with the defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.fieldschema import check
from kubesched.api.validation.objects import node_affinity_problems
from kubesched.scheduler.cache import Cache
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

# KubeSchedulerConfiguration (v1) fields kubesched accepts but does not act on, and why.
IGNORED_FIELDS = {
    "parallelism": "kubesched runs each scheduling cycle on one thread",
    "leaderElection": "kubesched does not elect a leader",
    "delayCacheUntilActive": "kubesched does not elect a leader",
    "clientConnection": "kubesched's scheduler talks to its in-process API server",
    "enableProfiling": "kubesched serves no debugging endpoints",
    "enableContentionProfiling": "kubesched serves no debugging endpoints",
    "extenders": "kubesched does not call scheduler extenders",
}
# Every field of the configuration and its type, as kube-scheduler's strict decoding knows them
# (a fieldschema.check schema; None: any value, for the ignored fields).
_PLUGINS = [{"name": str, "weight": int}]
CONFIG_SCHEMA: dict[str, Any] = {
    "apiVersion": str, "kind": str, "percentageOfNodesToScore": int, "podInitialBackoffSeconds": int,
    "podMaxBackoffSeconds": int, **dict.fromkeys(IGNORED_FIELDS),
    "profiles": [{"schedulerName": str, "percentageOfNodesToScore": int,
                  "plugins": dict.fromkeys((*EXTENSION_POINTS, "multiPoint"),
                                           {"enabled": _PLUGINS, "disabled": _PLUGINS}),
                  "pluginConfig": [{"name": str, "args": dict}]}],
}
# The args of each in-tree plugin that takes any (kubescheduler.config.k8s.io/v1 <Plugin>Args).
_RESOURCE_SPECS = [{"name": str, "weight": int}]
PLUGIN_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": int, "minCandidateNodesAbsolute": int},
    "DynamicResources": {"filterTimeout": str, "bindingTimeout": str},
    "InterPodAffinity": {"hardPodAffinityWeight": int, "ignorePreferredTermsOfExistingPods": bool},
    "NodeAffinity": {"addedAffinity": "V1NodeAffinity"},
    "NodeResourcesFit": {"ignoredResources": [str], "ignoredResourceGroups": [str], "scoringStrategy": {
        "type": str, "resources": _RESOURCE_SPECS,
        "requestedToCapacityRatio": {"shape": [{"utilization": int, "score": int}]}}},
    "NodeResourcesBalancedAllocation": {"resources": _RESOURCE_SPECS},
    "PodTopologySpread": {"defaultConstraints": "[V1TopologySpreadConstraint", "defaultingType": str},
    "VolumeBinding": {"bindTimeoutSeconds": int, "shape": [{"utilization": int, "score": int}]},
}


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
        initial, maximum = obj.get("podInitialBackoffSeconds"), obj.get("podMaxBackoffSeconds")  # null: unset
        cfg = cls(
            profiles=obj.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}],
            percentage_of_nodes_to_score=obj.get("percentageOfNodesToScore"),
            initial_backoff=1.0 if initial is None else float(initial),
            max_backoff=10.0 if maximum is None else float(maximum),
        )
        names = [p.get("schedulerName") or DEFAULT_SCHEDULER_NAME for p in cfg.profiles]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ConfigError(f"profiles[{i}].schedulerName", f'Duplicate value: "{name}"')
        percentages = [("", cfg.percentage_of_nodes_to_score)] + [
            (f"profiles[{i}].", p.get("percentageOfNodesToScore")) for i, p in enumerate(cfg.profiles)]
        for prefix, pct in percentages:
            if pct is not None and not 0 <= pct <= 100:
                raise ConfigError(f"{prefix}percentageOfNodesToScore",
                                  f"Invalid value: {pct}: not in valid range [0-100]")
        if cfg.initial_backoff <= 0:
            raise ConfigError("podInitialBackoffSeconds", "Invalid value: must be greater than 0")
        if cfg.max_backoff < cfg.initial_backoff:
            raise ConfigError("podMaxBackoffSeconds",
                              "Invalid value: must be greater than or equal to PodInitialBackoffSeconds")
        return cfg


def check_fields(obj: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    """What kube-scheduler's strict decoding would say of a KubeSchedulerConfiguration and the args of
    its in-tree plugins: (field path, message) for a value of the wrong type, (field path, None) for a
    field that does not exist (refused there; kubesched warns, as kubectl does for objects)."""
    yield from check(obj, CONFIG_SCHEMA)
    for i, profile in enumerate(obj.get("profiles") if isinstance(obj.get("profiles"), list) else ()):
        configs = profile.get("pluginConfig") if isinstance(profile, dict) else None
        for j, entry in enumerate(configs if isinstance(configs, list) else ()):
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name in PLUGIN_ARGS:
                schema = {"apiVersion": str, "kind": str, **PLUGIN_ARGS[name]}
                yield from check(entry.get("args"), schema, f"profiles[{i}].pluginConfig[{j}].args")


def ignored_settings(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, message) for each setting kubesched accepts but does not act on. Expects a
    configuration that check_fields found nothing wrong with."""
    for key, reason in IGNORED_FIELDS.items():
        if obj.get(key) not in (None, [], {}):
            yield key, f"ignored: {reason}"


def check_configuration(obj: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(problems, warnings) of a KubeSchedulerConfiguration as input, each (field path, message):
    what strict decoding refuses (a field that does not exist only warns), then the NodeAffinity
    plugin's `addedAffinity`, checked as a pod's node affinity is, and the settings kubesched
    ignores. What building its profiles finds is load_config's."""
    problems: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    for path, message in check_fields(obj):
        if message is None:
            warnings.append(("", f'unknown field "{path}"'))
        else:
            problems.append((path, message))
    if problems:
        return problems, warnings
    for i, profile in enumerate(obj.get("profiles") or ()):
        for j, entry in enumerate(profile.get("pluginConfig") or ()):
            if entry.get("name") == "NodeAffinity" and entry.get("args"):
                problems += node_affinity_problems(entry["args"].get("addedAffinity"),
                                                   f"profiles[{i}].pluginConfig[{j}].args.addedAffinity")
    warnings.extend(ignored_settings(obj))
    return problems, warnings


def _plugin_list(points: dict[str, Any], point: str, defaults: list[tuple[str, int]], path: str
                 ) -> list[tuple[str, int]]:
    """Merge one extension point's enabled/disabled with the defaults (order: defaults, then enabled)."""
    spec = points.get(point) or {}
    disabled = {d.get("name") for d in spec.get("disabled") or ()}
    out = [] if "*" in disabled else [(n, w) for n, w in defaults if n not in disabled]
    for i, e in enumerate(spec.get("enabled") or ()):
        name = e.get("name") or ""
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


def load_config(obj: dict[str, Any] | None) -> SchedulerConfig:
    """The configuration (None: the default one), every profile built once so that a bad plugin
    or argument is a ConfigError when the input is loaded, not when a scheduler starts."""
    config = SchedulerConfig.from_object(obj)
    build_profiles(config, Handle(Cache()))
    return config
