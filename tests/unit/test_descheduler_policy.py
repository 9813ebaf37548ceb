"""DeschedulerPolicy loading: the descheduler's defaulting, and every mistake refused with its reason."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.descheduler.framework import DESCHEDULE, FILTER, PRE_EVICTION_FILTER
from kubesched.descheduler.policy import PolicyError, load_policy


def policy(*profiles: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": list(profiles), **top}


def errors(obj: dict[str, Any]) -> list[str]:
    with pytest.raises(PolicyError) as e:
        load_policy(obj)
    return e.value.errors


def test_default_evictor_is_added_first_at_filter_points_with_default_args() -> None:
    p = load_policy(policy({"name": "p", "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}}))
    spec = p.profiles[0]
    assert spec.plugins[FILTER] == ["DefaultEvictor"]
    assert spec.plugins[PRE_EVICTION_FILTER] == ["DefaultEvictor"]
    assert spec.plugins[DESCHEDULE] == ["RemovePodsViolatingNodeTaints"]
    assert "DefaultEvictor" in spec.args and "RemovePodsViolatingNodeTaints" in spec.args


def test_listed_default_evictor_keeps_its_place_and_args() -> None:
    p = load_policy(policy({"name": "p",
                            "pluginConfig": [{"name": "DefaultEvictor", "args": {"nodeFit": True}},
                                             {"name": "ScoreImprovement", "args": {"minScoreGain": 30}}],
                            "plugins": {"preEvictionFilter": {"enabled": ["ScoreImprovement", "DefaultEvictor"]}}}))
    spec = p.profiles[0]
    assert spec.plugins[PRE_EVICTION_FILTER] == ["ScoreImprovement", "DefaultEvictor"]
    assert spec.args["DefaultEvictor"] == {"nodeFit": True}
    assert spec.args["ScoreImprovement"] == {"minScoreGain": 30}


def test_limits_interval_and_selector() -> None:
    p = load_policy(policy(maxNoOfPodsToEvictPerNode=2, maxNoOfPodsToEvictPerNamespace=3, maxNoOfPodsToEvictTotal=4,
                           deschedulingInterval="5m", nodeSelector="pool=a,tier!=gpu"))
    assert (p.limits.per_node, p.limits.per_namespace, p.limits.total) == (2, 3, 4)
    assert p.interval == 300.0
    assert p.node_selector == "pool=a,tier!=gpu"


def test_unknown_plugins_are_refused_with_upstream_wording() -> None:
    assert errors(policy({"name": "p", "plugins": {"balance": {"enabled": ["Nope"]}},
                          "pluginConfig": [{"name": "Typo"}]})) == [
        'profile "p" configures balance extension point of non-existing plugins: [Nope]',
        "in profile p: plugin Typo in pluginConfig not registered"]


def test_plugin_at_the_wrong_extension_point_is_refused() -> None:
    assert errors(policy({"name": "p", "plugins": {"deschedule": {"enabled": ["DefaultEvictor"]}}})) == [
        'profile "p" configures deschedule extension point of non-existing plugins: [DefaultEvictor]']


def test_bad_arguments_are_refused() -> None:
    found = errors(policy({"name": "p", "pluginConfig": [
        {"name": "DefaultEvictor", "args": {"priorityThreshold": {"name": "x", "value": 5}}},
        {"name": "ScoreImprovement", "args": {"minScoreGain": 0}},
        {"name": "DisruptionRateLimit", "args": {"perod": "1h"}}]}))
    assert found == [
        "in profile p: DefaultEvictor: priority threshold misconfigured, only one of priorityThreshold fields can be set",
        "in profile p: ScoreImprovement: minScoreGain: must be an integer of at least 1, got 0",
        'in profile p: DisruptionRateLimit: unknown field "perod"']


def test_bad_top_level_fields_are_refused() -> None:
    assert errors(policy(maxNoOfPodsToEvictTotal=-1, deschedulingInterval="soon", nodeSelector="a in (b",
                         strategies={})) == [
        'unknown field "strategies"',
        'nodeSelector: requirement 1: unable to parse requirement: "a in (b"',
        "maxNoOfPodsToEvictTotal: Invalid value: -1: must be a non-negative integer",
        'deschedulingInterval: "soon" is not a duration']


def test_duplicate_profile_names_and_plugin_configs() -> None:
    found = errors(policy({"name": "p", "pluginConfig": [{"name": "PodLifeTime"}, {"name": "PodLifeTime"}]},
                          {"name": "p"}))
    assert "in profile p: pluginConfig[1]: plugin PodLifeTime configured more than once" in found
    assert 'profiles[1].name: Duplicate value: "p"' in found
