"""DeschedulerPolicy (descheduler/v1alpha2): loading, defaulting and validation.

Defaulting follows the descheduler: every profile gets DefaultEvictor at the filter and
preEvictionFilter points (first, unless listed) and a DefaultEvictor pluginConfig when it has
none; a plugin enabled without a pluginConfig gets its default arguments. Errors are collected
with upstream's wording ("in profile P: ...") and make the run exit 2.

`deschedulingInterval` is the descheduler's `--descheduling-interval` flag; kubesched reads it
from the policy (a Go duration; absent or 0: one pass, as the flag's default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.duration import parse_duration
from kubesched.api.fieldschema import check
from kubesched.api.objects import Obj, deep_copy
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.api.validation.objects import shape_problems
from kubesched.descheduler.framework import EXTENSION_POINTS, FILTER, PRE_EVICTION_FILTER, Limits
from kubesched.descheduler.plugins import REGISTRY
from kubesched.descheduler.plugins.defaultevictor import DefaultEvictor

POLICY_FIELDS = {"apiVersion", "kind", "metadata", "profiles", "nodeSelector", "maxNoOfPodsToEvictPerNode",
                 "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal", "deschedulingInterval",
                 "gracePeriodSeconds", "evictionFailureEventNotification", "metricsCollector",
                 "metricsProviders"}
PROFILE_FIELDS = ("name", "pluginConfig", "plugins")
# The types of the policy's fields checked first (an api.validation.check_shape schema): what
# load_policy indexes into.
SHAPE: dict[str, Any] = {
    "profiles": [{"name": str, "pluginConfig": [{"name": str, "args": dict}],
                  "plugins": {"*": {"enabled": [str], "disabled": [str]}}}],
    "nodeSelector": str, "maxNoOfPodsToEvictPerNode": int, "maxNoOfPodsToEvictPerNamespace": int,
    "maxNoOfPodsToEvictTotal": int, "gracePeriodSeconds": int,
}
# The types of the policy fields that the shape check leaves alone, and of the plugin args
# (by name, wherever a plugin takes one) whose plugins take the type for granted (fieldschema.check
# schemas); each plugin checks the rest of its own args.
POLICY_TYPES = {"metricsCollector": {"enabled": bool},
                "metricsProviders": [{"source": str, "prometheus": dict}],
                "evictionFailureEventNotification": bool}
_NAMESPACES = {"include": [str], "exclude": [str]}
ARG_TYPES = {"namespaces": _NAMESPACES, "evictableNamespaces": _NAMESPACES,
             "labelSelector": "V1LabelSelector", "namespaceLabelSelector": "V1LabelSelector",
             "priorityThreshold": {"name": str, "value": int},
             "podProtections": {"defaultDisabled": [str], "extraEnabled": [str]}, "nodeSelector": str,
             "nodeAffinityType": [str], "excludedTaints": [str], "includedTaints": [str],
             "includePreferNoSchedule": bool, "excludeOwnerKinds": [str]}
# Points upstream's Plugins struct has but no plugin implements (enabling anything there fails).
IDLE_POINTS = ("presort", "sort")


class PolicyError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass
class ProfileSpec:
    name: str
    plugins: dict[str, list[str]]  # extension point -> enabled plugin names, in order
    args: dict[str, dict[str, Any]]  # plugin name -> defaulted args


@dataclass
class Policy:
    profiles: list[ProfileSpec] = field(default_factory=list)
    node_selector: str | None = None
    limits: Limits = field(default_factory=Limits)
    interval: float = 0.0
    grace_period: int | None = None
    metrics_source: str | None = None  # "KubernetesMetrics" when metricsCollector/metricsProviders ask


def _limit(obj: Obj, key: str, errors: list[str]) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        errors.append(f"{key}: Invalid value: {value!r}: must be a non-negative integer")
        return None
    return value


def _profile(raw: Obj, index: int, errors: list[str]) -> ProfileSpec | None:
    name = raw.get("name") or ""
    where = f"in profile {name}"
    errors.extend(f'{where}: unknown field "{k}"' for k in raw if k not in PROFILE_FIELDS)
    plugins_raw = raw.get("plugins") or {}
    plugins: dict[str, list[str]] = {}
    for point, sets in plugins_raw.items():
        if point not in EXTENSION_POINTS and point not in IDLE_POINTS:
            errors.append(f'{where}: unknown extension point "{point}" (one of {", ".join(EXTENSION_POINTS)})')
            continue
        errors.extend(f'{where}: unknown field "plugins.{point}.{k}"' for k in sets or {}
                      if k not in ("enabled", "disabled"))
        enabled = list((sets or {}).get("enabled") or ())
        unknown = [p for p in enabled if p not in REGISTRY or point not in REGISTRY[p].points]
        if unknown:
            errors.append(f'profile "{name}" configures {point} extension point of non-existing plugins: '
                          f'[{" ".join(unknown)}]')
        if point in EXTENSION_POINTS:
            plugins[point] = list(dict.fromkeys(enabled))
    for point in EXTENSION_POINTS:
        plugins.setdefault(point, [])
    for point in (FILTER, PRE_EVICTION_FILTER):
        if DefaultEvictor.name not in plugins[point]:
            plugins[point].insert(0, DefaultEvictor.name)
    args: dict[str, dict[str, Any]] = {}
    for i, pc in enumerate(raw.get("pluginConfig") or ()):
        errors.extend(f'{where}: unknown field "pluginConfig[{i}].{k}"'
                      for k in pc if k not in ("name", "args"))
        pname = pc.get("name")
        if pname not in REGISTRY:
            errors.append(f"{where}: plugin {pname} in pluginConfig not registered")
            continue
        if pname in args:
            errors.append(f"{where}: pluginConfig[{i}]: plugin {pname} configured more than once")
            continue
        args[pname] = deep_copy(pc.get("args") or {})
    for point in EXTENSION_POINTS:
        for pname in plugins[point]:
            if pname in REGISTRY:
                args.setdefault(pname, {})
    for pname in list(args):
        cls = REGISTRY[pname]
        given = args[pname]
        if not isinstance(given, dict):
            errors.append(f"{where}: {pname}: args must be an object")
            continue
        problems = [f'unknown field "{k}"' for k in given if k not in cls.fields]
        typed = {k: ARG_TYPES[k] for k in given if k in ARG_TYPES and k in cls.fields}
        problems += [f"{path}: {message}" if message else f'unknown field "{path}"'
                     for path, message in check({k: given[k] for k in typed}, typed)]
        args[pname] = cls.defaults(given)
        problems += cls.validate(args[pname]) if not problems else []
        errors.extend(f"{where}: {pname}: {p}" for p in problems)
    return ProfileSpec(name or f"profile-{index}", plugins, args)


def load_policy(obj: Obj) -> Policy:
    """Turn a DeschedulerPolicy object into a Policy; PolicyError lists everything wrong."""
    errors: list[str] = []
    errors.extend(f'unknown field "{k}"' for k in obj if k not in POLICY_FIELDS)
    policy = Policy()
    names: set[str] = set()
    for i, raw in enumerate(obj.get("profiles") or ()):
        spec = _profile(raw or {}, i, errors)
        if spec is not None:
            if spec.name in names:
                errors.append(f'profiles[{i}].name: Duplicate value: "{spec.name}"')
            names.add(spec.name)
            policy.profiles.append(spec)
    if obj.get("nodeSelector"):
        try:
            LabelSelector.parse(obj["nodeSelector"])
            policy.node_selector = obj["nodeSelector"]
        except SelectorError as e:
            errors.append(f"nodeSelector: {e}")
    policy.limits = Limits(_limit(obj, "maxNoOfPodsToEvictPerNode", errors),
                           _limit(obj, "maxNoOfPodsToEvictPerNamespace", errors),
                           _limit(obj, "maxNoOfPodsToEvictTotal", errors))
    policy.grace_period = _limit(obj, "gracePeriodSeconds", errors)
    if obj.get("deschedulingInterval") is not None:
        try:
            policy.interval = parse_duration(obj["deschedulingInterval"])
        except ValueError as e:
            errors.append(f"deschedulingInterval: {e}")
    typed = {k: v for k, v in obj.items() if k in POLICY_TYPES}
    mistyped = [f"{path}: {message}" if message else f'unknown field "{path}"'
                for path, message in check(typed, POLICY_TYPES)]
    if mistyped:
        raise PolicyError(errors + mistyped)
    providers = obj.get("metricsProviders") or []
    if len(providers) > 1:
        errors.append(f"only a single metrics provider can be set, got {len(providers)} instead")
    for p in providers:
        if (p or {}).get("source") != "KubernetesMetrics":
            errors.append(f'metricsProviders: source "{(p or {}).get("source")}" is not supported '
                          "(kubesched reads simulated usage as KubernetesMetrics)")
    if providers and (obj.get("metricsCollector") or {}).get("enabled"):
        errors.append("it is not allowed to combine metrics provider when metrics collector is enabled")
    if providers or (obj.get("metricsCollector") or {}).get("enabled"):
        policy.metrics_source = "KubernetesMetrics"
    if errors:
        raise PolicyError(errors)
    return policy


def check_policy(obj: Obj) -> list[tuple[str, str]]:
    """(field path, message) for what is wrong with a DeschedulerPolicy as input: its shape first,
    then the descheduler's own defaulting and validation (plugins and their args), whose messages
    name their fields themselves."""
    found = shape_problems(obj, SHAPE)
    if found:
        return found
    try:
        load_policy(obj)
    except PolicyError as e:
        return [("", message) for message in e.errors]
    return []
