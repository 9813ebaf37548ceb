"""RemovePodsViolatingNodeTaints: evict pods that no longer tolerate a NoSchedule taint of their node.

Follows descheduler pkg/framework/plugins/removepodsviolatingnodetaints. A taint added after a
pod was bound does not remove the pod (only NoExecute does, through the taint manager); this
strategy does it for NoSchedule taints, and for PreferNoSchedule ones when
`includePreferNoSchedule` is set. NoExecute taints are left to the taint manager.

`excludedTaints` and `includedTaints` name taints by key (`dedicated`) or by key and value
(`dedicated=gpu`); a key=value entry never names a taint with an empty value. Without
`includedTaints` every taint counts; with it (even an empty list, as upstream tells nil from
empty) only the named ones do.

Pods are taken node by node, in the order the node lists them; the profile's Filter plugins
decide which may go, then PreEvictionFilter (nodeFit) right before each eviction. Upstream
applies PreEvictionFilter while listing; running it last gives the same pods, and a "Filtered"
attempt then means the pod did violate a taint. A node's eviction limit moves on to the next
node, the pass's total limit ends the strategy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.objects import Obj
from kubesched.api.taints import first_untolerated
from kubesched.descheduler.framework import DESCHEDULE, Plugin, Status, evict_violators
from kubesched.descheduler.podutil import (
    selected_active_pods,
    validate_pod_selection,
)


def _names_taint(names: set[str]) -> Callable[[Obj], bool]:
    """Whether a taint is named in `names` by its key or by key=value (non-empty value only)."""
    def named(taint: Obj) -> bool:
        key, value = taint.get("key", ""), taint.get("value") or ""
        return key in names or (value != "" and f"{key}={value}" in names)
    return named


class RemovePodsViolatingNodeTaints(Plugin):
    name = "RemovePodsViolatingNodeTaints"
    points = frozenset({DESCHEDULE})
    fields = frozenset({"namespaces", "labelSelector", "includePreferNoSchedule", "excludedTaints",
                        "includedTaints"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        validate_pod_selection(args, errors)
        if args.get("excludedTaints") and args.get("includedTaints"):
            errors.append("either includedTaints or excludedTaints can be set, but not both")
        return errors

    def _taint_filter(self) -> Callable[[Obj], bool]:
        effects = {"NoSchedule", "PreferNoSchedule"} if self.args.get("includePreferNoSchedule") else {"NoSchedule"}
        excluded = _names_taint(set(self.args.get("excludedTaints") or ()))
        included_names = self.args.get("includedTaints")
        included = (lambda t: True) if included_names is None else _names_taint(set(included_names))
        return lambda t: t.get("effect") in effects and not excluded(t) and included(t)

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        counts = self._taint_filter()
        keep = selected_active_pods(self.args)
        tainted = [n for n in nodes if (n.get("spec") or {}).get("taints")]
        evict_violators(self.handle, tainted, keep, lambda pod, node: first_untolerated(
            node["spec"]["taints"], pod["spec"].get("tolerations") or [], counts) is not None, self.name)
        return None
