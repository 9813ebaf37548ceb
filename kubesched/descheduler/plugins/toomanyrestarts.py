"""RemovePodsHavingTooManyRestarts: evict pods whose containers keep restarting (descheduler
pkg/framework/plugins/removepodshavingtoomanyrestarts).

A pod goes when the restartCounts of its containers (and of its init containers, with
`includingInitContainers`) add up to at least `podRestartThreshold` — a crash loop may come
from the node (a volume that will not mount, a setting that differs), so another node may do
better. `states` narrows this to pods in the Running phase or with a container waiting in
CrashLoopBackOff. In kubesched restarts come from the OOM killer (a container over its memory
limit restarts with restartCount + 1) or from a scenario `patch` of the pod's status.

Nodes are taken in turn and each node's matching pods listed as the node comes up; a node at its
eviction limit moves on to the next node, the pass's total limit ends the plugin, other refusals
skip the pod. PreEvictionFilter is asked while listing, as upstream does, but after the restart
and state tests, so pods that are not candidates leave no "Filtered" attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.objects import Obj
from kubesched.descheduler.framework import (
    DESCHEDULE,
    EvictionFailed,
    Handle,
    NamespaceLimitError,
    NodeLimitError,
    Plugin,
    Status,
    TotalLimitError,
)
from kubesched.descheduler.plugins.podlifetime import boolean, container_statuses, list_of
from kubesched.descheduler.podutil import (
    all_of,
    label_filter,
    namespace_filter,
    validate_pod_selection,
)

ALLOWED_STATES = frozenset({"Running", "CrashLoopBackOff"})


class RemovePodsHavingTooManyRestarts(Plugin):
    name = "RemovePodsHavingTooManyRestarts"
    points = frozenset({DESCHEDULE})
    fields = frozenset({"namespaces", "labelSelector", "podRestartThreshold", "includingInitContainers", "states"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        threshold = args.get("podRestartThreshold", 0)
        if not isinstance(threshold, int) or isinstance(threshold, bool):
            errors.append(f"podRestartThreshold: must be an integer, got {threshold!r}")
        list_of(args, "states", str, errors)
        boolean(args, "includingInitContainers", errors)
        if errors:
            return errors
        validate_pod_selection(args, errors)
        if threshold < 1:
            errors.append("invalid PodsHavingTooManyRestarts threshold")
        if not ALLOWED_STATES.issuperset(args.get("states") or ()):
            errors.append(f"states must be one of [{' '.join(sorted(ALLOWED_STATES))}]")
        return errors

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        ev = handle.evictor
        tests: list[Callable[[Obj], bool]] = [namespace_filter(args), label_filter(args), ev.filter,
                                              lambda p: self.restarts(p) >= args["podRestartThreshold"]]
        if args.get("states"):
            tests.append(self._in_states(set(args["states"])))
        tests.append(lambda p: ev.pre_eviction_filter(p, self.name))
        self._keep = all_of(*tests)

    def _statuses(self, pod: Obj) -> list[Obj]:
        statuses = container_statuses(pod)
        if self.args.get("includingInitContainers"):
            statuses += container_statuses(pod, "initContainerStatuses")
        return statuses

    def restarts(self, pod: Obj) -> int:
        return sum(int(cs.get("restartCount") or 0) for cs in self._statuses(pod))

    def _in_states(self, states: set[str]) -> Callable[[Obj], bool]:
        """The pod's phase, or a container waiting for one of these reasons."""
        def test(pod: Obj) -> bool:
            if (pod.get("status") or {}).get("phase") in states:
                return True
            return any(((cs.get("state") or {}).get("waiting") or {}).get("reason") in states
                       for cs in self._statuses(pod))
        return test

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        ev = self.handle.evictor
        for node in nodes:
            for pod in self.handle.pods_on_node(node["metadata"]["name"], self._keep):
                try:
                    ev.evict(pod, self.name)
                except NodeLimitError:
                    break
                except TotalLimitError:
                    return None
                except (NamespaceLimitError, EvictionFailed):
                    continue
        return None
