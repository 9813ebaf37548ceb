"""In-tree plugins, one module each, registered under their Kubernetes names."""

from __future__ import annotations

import importlib
import importlib.util

from kubesched.scheduler.framework import Plugin
from kubesched.scheduler.plugins.defaultbinder import DefaultBinder
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler.plugins.dynamicresources import DynamicResources
from kubesched.scheduler.plugins.imagelocality import ImageLocality
from kubesched.scheduler.plugins.interpodaffinity import InterPodAffinity
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.plugins.nodename import NodeName
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.scheduler.plugins.nodepreferavoidpods import NodePreferAvoidPods
from kubesched.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.scheduler.plugins.podtopologyspread import PodTopologySpread
from kubesched.scheduler.plugins.queuesort import PrioritySort
from kubesched.scheduler.plugins.schedulinggates import SchedulingGates
from kubesched.scheduler.plugins.tainttoleration import TaintToleration
from kubesched.scheduler.plugins.volumebinding import VolumeBinding
from kubesched.scheduler.plugins.volumerestrictions import VolumeRestrictions
from kubesched.scheduler.plugins.volumezone import VolumeZone

REGISTRY: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
        NodeResourcesFit, NodeResourcesBalancedAllocation, ImageLocality, DefaultBinder,
        InterPodAffinity, PodTopologySpread, DynamicResources, DefaultPreemption, NodePreferAvoidPods,
        VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
    )
}

# The v1.35 default profile's multiPoint list (apis/config/v1/default_plugins.go), with its
# score weights (0: none given, the default of 1 if the plugin scores); of DynamicResources only what
# a pod without resource claims meets is modelled.
DEFAULT_MULTIPOINT: list[tuple[str, int]] = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 0), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
]

ENTRY_POINT_GROUP = "kubesched.plugins"


def resolve(name: str) -> type[Plugin] | None:
    """A plugin class by name: in-tree, an installed `kubesched.plugins` entry point, or `module:Class`.

    Out-of-tree plugins are ordinary Python classes subclassing the extension-point bases in
    `kubesched.scheduler.framework`, enabled in a KubeSchedulerConfiguration by that name.
    """
    if name in REGISTRY:
        return REGISTRY[name]
    from importlib.metadata import entry_points  # a tenth of the CLI's start-up, for a rare case

    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        cls = ep.load()
        return cls if isinstance(cls, type) and issubclass(cls, Plugin) else None
    module, _, attr = name.rpartition(":")
    if not module:
        return None
    try:
        if module.endswith(".py"):  # a file path, relative to the working directory
            spec = importlib.util.spec_from_file_location(f"kubesched_user_plugin_{len(_LOADED)}", module)
            if spec is None or spec.loader is None:
                return None
            loaded = _LOADED.get(module)
            if loaded is None:
                loaded = _LOADED[module] = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(loaded)
        else:
            loaded = importlib.import_module(module)
    except (ImportError, OSError):
        return None
    cls = getattr(loaded, attr, None)
    return cls if isinstance(cls, type) and issubclass(cls, Plugin) else None


_LOADED: dict[str, object] = {}
