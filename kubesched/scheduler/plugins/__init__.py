"""In-tree plugins, one module each, registered under their Kubernetes names."""

from __future__ import annotations

from kubesched.scheduler.framework import Plugin
from kubesched.scheduler.plugins.defaultbinder import DefaultBinder
from kubesched.scheduler.plugins.imagelocality import ImageLocality
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.plugins.nodename import NodeName
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.scheduler.plugins.queuesort import PrioritySort
from kubesched.scheduler.plugins.schedulinggates import SchedulingGates
from kubesched.scheduler.plugins.tainttoleration import TaintToleration

REGISTRY: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
        NodeResourcesFit, NodeResourcesBalancedAllocation, ImageLocality, DefaultBinder,
    )
}

# The v1.35 default profile's multiPoint list (apis/config/v1/default_plugins.go), with its
# score weights; volume and DRA plugins are absent (they skip pods without volumes or claims).
DEFAULT_MULTIPOINT: list[tuple[str, int]] = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
]
