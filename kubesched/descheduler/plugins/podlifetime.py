"""PodLifeTime: evict pods that have lived too long, or that match given status criteria
(descheduler pkg/framework/plugins/podlifetime, its newest form).

A pod is a candidate when every criterion that is set holds (criteria are ANDed, the entries of
one criterion ORed): older than `maxPodLifeTimeSeconds` (age from metadata.creationTimestamp,
whole seconds, strictly greater); in one of `states` (the pod's phase, its status reason, or a
container's waiting or terminated reason — init and ephemeral containers only when asked);
owned (or not) by one of `ownerKinds`; having a condition matching one of `conditions`
(type/status/reason, and optionally a last transition at least `minTimeSinceLastTransitionSeconds`
ago); having a container terminated with one of `exitCodes`. Plus the usual namespaces and
labelSelector, and the profile's Filter and PreEvictionFilter plugins.

The candidates of every node are gathered first, then evicted oldest first — by the last
transition of the matching conditions when a condition filter carries a transition threshold,
else by creation time — so that when limits or budgets stop the pass, the oldest went first.
A node at its limit only skips that pod; the pass's total limit ends the plugin.

RemoveFailedPods is this plugin under another name with a "phase is Failed" test added
(`strategy` and `extra`), as upstream's NewAs.

PreEvictionFilter is asked while listing, as upstream does for this plugin, but as the last test
rather than right after Filter: the chosen pods are the same, and pods the plugin would not have
picked anyway leave no "Filtered" attempt behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
from kubesched.descheduler.podutil import (
    all_of,
    label_filter,
    namespace_filter,
    non_negative_int,
    owner_refs,
    validate_label_selector,
    validate_namespaces,
)

ALLOWED_STATES = frozenset({
    # pod phases
    "Running", "Pending", "Succeeded", "Failed", "Unknown",
    # pod status reasons
    "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError",
    # container waiting reasons
    "PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError",
    "ErrImagePull", "CreateContainerError", "InvalidImageName",
    # container terminated reasons
    "OOMKilled", "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun", "StartError",
})
CONDITION_FIELDS = ("type", "status", "reason", "minTimeSinceLastTransitionSeconds")


def container_statuses(pod: Obj, key: str = "containerStatuses") -> list[Obj]:
    return list((pod.get("status") or {}).get(key) or ())


def container_reasons(statuses: Iterable[Obj]) -> set[str]:
    """The waiting and terminated reasons of these container statuses."""
    out: set[str] = set()
    for cs in statuses:
        state = cs.get("state") or {}
        for kind in ("waiting", "terminated"):
            reason = (state.get(kind) or {}).get("reason")
            if reason:
                out.add(reason)
    return out


def exit_codes(statuses: Iterable[Obj]) -> set[int]:
    """Exit codes of the containers that are terminated now."""
    out: set[int] = set()
    for cs in statuses:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is not None:
            out.add(int(terminated.get("exitCode", 0)))
    return out


def list_of(args: dict[str, Any], key: str, kind: type, errors: list[str], where: str = "") -> None:
    """Our check that a list argument holds the type its Go field has (decoding would refuse it)."""
    value = args.get(key)
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        errors.append(f"{where}{key}: must be a list of {'integers' if kind is int else 'strings'}, got {value!r}")


def boolean(args: dict[str, Any], key: str, errors: list[str]) -> None:
    """Our check that a flag is a YAML boolean (a quoted "true" would not decode upstream)."""
    if args.get(key) is not None and not isinstance(args[key], bool):
        errors.append(f"{key}: must be a boolean, got {args[key]!r}")


class PodLifeTime(Plugin):
    name = "PodLifeTime"
    points = frozenset({DESCHEDULE})
    fields = frozenset({"namespaces", "labelSelector", "ownerKinds", "maxPodLifeTimeSeconds", "states",
                        "conditions", "exitCodes", "includingInitContainers", "includingEphemeralContainers"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        non_negative_int(args, "maxPodLifeTimeSeconds", errors)
        list_of(args, "states", str, errors)
        list_of(args, "exitCodes", int, errors)
        for key in ("includingInitContainers", "includingEphemeralContainers"):
            boolean(args, key, errors)
        conditions = args.get("conditions")
        if conditions is not None and (not isinstance(conditions, list)
                                       or not all(isinstance(c, dict) for c in conditions)):
            errors.append(f"conditions: must be a list of objects, got {conditions!r}")
        owners = args.get("ownerKinds")
        if owners is not None and not isinstance(owners, dict):
            errors.append(f"ownerKinds: must be an object, got {owners!r}")
        elif owners is not None:
            list_of(owners, "include", str, errors, "ownerKinds.")
            list_of(owners, "exclude", str, errors, "ownerKinds.")
        if errors:
            return errors
        validate_namespaces(args, errors)
        owners = owners or {}
        if owners.get("include") and owners.get("exclude"):
            errors.append("only one of Include/Exclude ownerKinds can be set")
        validate_label_selector(args, errors)
        states = args.get("states") or []
        if not ALLOWED_STATES.issuperset(states):
            errors.append(f"states must be one of [{' '.join(sorted(ALLOWED_STATES))}]")
        for i, cond in enumerate(args.get("conditions") or ()):
            if not any(cond.get(k) not in (None, "") for k in CONDITION_FIELDS):
                errors.append(f"conditions[{i}]: at least one of type, status, reason, or "
                              "minTimeSinceLastTransitionSeconds must be set")
            wait = cond.get("minTimeSinceLastTransitionSeconds")
            if wait is not None and (not isinstance(wait, int) or isinstance(wait, bool) or wait < 0):
                errors.append(f"conditions[{i}].minTimeSinceLastTransitionSeconds: must be a non-negative "
                              f"integer, got {wait!r}")
        if args.get("maxPodLifeTimeSeconds") is None and not states and not args.get("conditions") \
                and not args.get("exitCodes"):
            errors.append("at least one filtering criterion must be specified "
                          "(maxPodLifeTimeSeconds, states, conditions, or exitCodes)")
        return errors

    def __init__(self, handle: Handle, args: dict[str, Any], *, strategy: str | None = None,
                 extra: Callable[[Obj], bool] | None = None) -> None:
        super().__init__(handle, args)
        self.strategy = strategy or self.name
        ev = handle.evictor
        tests = [namespace_filter(args), label_filter(args), ev.filter]
        if extra is not None:
            tests.append(extra)
        tests.extend(self._criteria())
        tests.append(lambda p: ev.pre_eviction_filter(p, self.strategy))
        self._keep = all_of(*tests)

    # ---- the criteria -------------------------------------------------------------------------

    def _criteria(self) -> list[Callable[[Obj], bool]]:
        a = self.args
        out: list[Callable[[Obj], bool]] = []
        if a.get("maxPodLifeTimeSeconds") is not None:
            limit = a["maxPodLifeTimeSeconds"]
            out.append(lambda p: self._seconds_since(p["metadata"]["creationTimestamp"]) > limit)
        if a.get("states"):
            out.append(self._in_states(set(a["states"])))
        owners = a.get("ownerKinds") or {}
        if owners.get("include"):
            include = set(owners["include"])
            out.append(lambda p: any(r.get("kind") in include for r in owner_refs(p)))
        if owners.get("exclude"):
            exclude = set(owners["exclude"])
            out.append(lambda p: not any(r.get("kind") in exclude for r in owner_refs(p)))
        if a.get("conditions"):
            out.append(lambda p: any(self._condition_matches(c, f, timed=True)
                                     for f in a["conditions"] for c in self._conditions(p)))
        if a.get("exitCodes"):
            codes = set(a["exitCodes"])
            keys = ["containerStatuses"] + (["initContainerStatuses"] if a.get("includingInitContainers") else [])
            out.append(lambda p: bool(codes & exit_codes(s for k in keys for s in container_statuses(p, k))))
        return out

    def _in_states(self, states: set[str]) -> Callable[[Obj], bool]:
        keys = ["containerStatuses"]
        if self.args.get("includingInitContainers"):
            keys.append("initContainerStatuses")
        if self.args.get("includingEphemeralContainers"):
            keys.append("ephemeralContainerStatuses")

        def test(pod: Obj) -> bool:
            status = pod.get("status") or {}
            if status.get("phase") in states or status.get("reason") in states:
                return True
            return bool(states & container_reasons(s for k in keys for s in container_statuses(pod, k)))
        return test

    @staticmethod
    def _conditions(pod: Obj) -> list[Obj]:
        return list((pod.get("status") or {}).get("conditions") or ())

    def _condition_matches(self, cond: Obj, f: Obj, *, timed: bool) -> bool:
        """Type, status and reason as far as the filter sets them; with `timed`, also a last
        transition long enough ago when the filter asks for one (a condition without a
        lastTransitionTime then does not match)."""
        if any(f.get(k) and cond.get(k) != f[k] for k in ("type", "status", "reason")):
            return False
        if not timed or f.get("minTimeSinceLastTransitionSeconds") is None:
            return True
        stamp = cond.get("lastTransitionTime")
        if not stamp:
            return False
        return self._seconds_since(stamp) >= f["minTimeSinceLastTransitionSeconds"]

    def _seconds_since(self, stamp: str) -> int:
        """Whole seconds elapsed since `stamp` in cluster time (Go truncates the duration)."""
        return int(self.handle.now() - self.handle.api.seconds(stamp))

    def _relevant_time(self, pod: Obj) -> float:
        """The eviction order key: the latest transition among conditions matching a filter that
        carries a transition threshold, else the creation time."""
        api = self.handle.api
        times = [api.seconds(c["lastTransitionTime"])
                 for f in self.args.get("conditions") or () if f.get("minTimeSinceLastTransitionSeconds") is not None
                 for c in self._conditions(pod)
                 if c.get("lastTransitionTime") and self._condition_matches(c, f, timed=False)]
        return max(times) if times else api.seconds(pod["metadata"]["creationTimestamp"])

    # ---- Deschedule ---------------------------------------------------------------------------

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        pods = [p for n in nodes for p in self.handle.pods_on_node(n["metadata"]["name"], self._keep)]
        pods.sort(key=self._relevant_time)  # stable: equal times keep node order
        ev = self.handle.evictor
        for pod in pods:
            try:
                ev.evict(pod, self.strategy)
            except TotalLimitError:
                return None
            except (NodeLimitError, NamespaceLimitError, EvictionFailed):
                continue
        return None
