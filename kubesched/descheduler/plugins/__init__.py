"""The descheduler plugins kubesched ships, by name (descheduler's pluginregistry)."""

from __future__ import annotations

from kubesched.descheduler.framework import Plugin
from kubesched.descheduler.plugins.defaultevictor import DefaultEvictor
from kubesched.descheduler.plugins.extensions import DisruptionRateLimit, PreferAvoidPods, ScoreImprovement
from kubesched.descheduler.plugins.failedpods import RemoveFailedPods
from kubesched.descheduler.plugins.nodeaffinity import RemovePodsViolatingNodeAffinity
from kubesched.descheduler.plugins.nodetaints import RemovePodsViolatingNodeTaints
from kubesched.descheduler.plugins.nodeutilization import HighNodeUtilization, LowNodeUtilization
from kubesched.descheduler.plugins.podantiaffinity import RemovePodsViolatingInterPodAntiAffinity
from kubesched.descheduler.plugins.podlifetime import PodLifeTime
from kubesched.descheduler.plugins.removeduplicates import RemoveDuplicates
from kubesched.descheduler.plugins.toomanyrestarts import RemovePodsHavingTooManyRestarts
from kubesched.descheduler.plugins.topologyspread import RemovePodsViolatingTopologySpreadConstraint

REGISTRY: dict[str, type[Plugin]] = {cls.name: cls for cls in (
    DefaultEvictor, LowNodeUtilization, HighNodeUtilization, RemoveDuplicates,
    RemovePodsViolatingInterPodAntiAffinity, RemovePodsViolatingNodeAffinity, RemovePodsViolatingNodeTaints,
    RemovePodsViolatingTopologySpreadConstraint, RemovePodsHavingTooManyRestarts, PodLifeTime,
    RemoveFailedPods, DisruptionRateLimit, ScoreImprovement, PreferAvoidPods)}
