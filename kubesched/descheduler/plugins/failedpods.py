"""RemoveFailedPods: delete pods left in phase Failed (descheduler
pkg/framework/plugins/removefailedpods, its newest form).

A Failed pod no longer runs, but its object stays (a ReplicaSet has already replaced it) until
someone deletes it; the descheduler does so through the Eviction API, which lets finished pods
go without consulting budgets. Upstream now hands the work to PodLifeTime with the arguments
translated, and so do we:

- minPodLifetimeSeconds -> maxPodLifeTimeSeconds: older than this (strictly), from creation;
  by default 3600;
- reasons -> states: the pod's status reason or a container's waiting or terminated reason
  (init containers with includingInitContainers) — or the phase itself, should it be listed;
- excludeOwnerKinds -> ownerKinds.exclude; exitCodes and includingInitContainers as they are;

plus a "phase is Failed" test. Pods are therefore evicted oldest first across all nodes; a node
at its limit skips the pod, the pass's total limit ends the plugin.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Obj
from kubesched.descheduler.framework import DESCHEDULE, Handle, Plugin, Status
from kubesched.descheduler.plugins.podlifetime import PodLifeTime, boolean, list_of
from kubesched.descheduler.podutil import (
    non_negative_int,
    validate_pod_selection,
)

DEFAULT_MIN_POD_LIFETIME_SECONDS = 3600


class RemoveFailedPods(Plugin):
    name = "RemoveFailedPods"
    points = frozenset({DESCHEDULE})
    fields = frozenset({"namespaces", "labelSelector", "excludeOwnerKinds", "minPodLifetimeSeconds", "reasons",
                        "exitCodes", "includingInitContainers"})

    @classmethod
    def defaults(cls, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(args)
        if out.get("minPodLifetimeSeconds") is None:
            out["minPodLifetimeSeconds"] = DEFAULT_MIN_POD_LIFETIME_SECONDS
        return out

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        non_negative_int(args, "minPodLifetimeSeconds", errors)
        list_of(args, "reasons", str, errors)
        list_of(args, "excludeOwnerKinds", str, errors)
        list_of(args, "exitCodes", int, errors)
        boolean(args, "includingInitContainers", errors)
        validate_pod_selection(args, errors)
        return errors

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        self.delegate = PodLifeTime(handle, lifetime_args(args), strategy=self.name, extra=is_failed)

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        self.delegate.deschedule(nodes)
        return None


def is_failed(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Failed"


def lifetime_args(args: dict[str, Any]) -> dict[str, Any]:
    """RemoveFailedPods' arguments as PodLifeTime's (upstream's toLifeTimeArgs)."""
    out = {"namespaces": args.get("namespaces"), "labelSelector": args.get("labelSelector"),
           "maxPodLifeTimeSeconds": args.get("minPodLifetimeSeconds"), "states": args.get("reasons"),
           "exitCodes": args.get("exitCodes"), "includingInitContainers": bool(args.get("includingInitContainers"))}
    if args.get("excludeOwnerKinds"):
        out["ownerKinds"] = {"exclude": list(args["excludeOwnerKinds"])}
    return out
