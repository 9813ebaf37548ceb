"""DefaultEvictor: which pods the descheduler may evict at all (Filter) and, right before an
eviction, whether the pod has somewhere else to go (PreEvictionFilter with nodeFit).

Follows descheduler pkg/framework/plugins/defaultevictor: an `evict` annotation overrides every
check; mirror, static and terminating pods are never evicted; the protections (bare pods,
DaemonSet pods, local storage, system-critical priority, PVCs, pods without a budget) come from
the legacy boolean arguments or from `podProtections`; then labelSelector, minReplicas and
minPodAge. nodeFit asks our scheduler's own filters (see Placement), not a re-implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.duration import parse_duration
from kubesched.api.objects import Obj, is_terminating
from kubesched.api.pdb import pdb_covers, pdb_selector
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.descheduler.framework import ALLOWED, FILTER, PRE_EVICTION_FILTER, Handle, Plugin, Status
from kubesched.descheduler.podutil import (
    SYSTEM_CRITICAL_PRIORITY,
    has_local_storage,
    has_pvc,
    is_critical,
    is_daemonset_pod,
    is_mirror_pod,
    is_static_pod,
    owner_refs,
    validate_label_selector,
)

EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
PROTECTIONS = ("PodsWithLocalStorage", "DaemonSetPods", "SystemCriticalPods", "FailedBarePods",
               "PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")
DEFAULT_PROTECTIONS = ("PodsWithLocalStorage", "SystemCriticalPods", "FailedBarePods", "DaemonSetPods")
Constraint = Callable[[Obj], str | None]


class DefaultEvictor(Plugin):
    name = "DefaultEvictor"
    points = frozenset({FILTER, PRE_EVICTION_FILTER})
    fields = frozenset({
        "nodeSelector", "evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods",
        "ignorePvcPods", "evictFailedBarePods", "labelSelector", "priorityThreshold", "nodeFit",
        "minReplicas", "minPodAge", "ignorePodsWithoutPDB", "noEvictionPolicy", "namespaceLabelSelector",
        "podProtections"})

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        errors: list[str] = []
        threshold = args.get("priorityThreshold") or {}
        if threshold.get("value") is not None and threshold.get("name"):
            errors.append("priority threshold misconfigured, only one of priorityThreshold fields can be set")
        policy = args.get("noEvictionPolicy")
        if policy not in (None, "", "Preferred", "Mandatory"):
            errors.append('noEvictionPolicy accepts only ["Preferred" "Mandatory"] values')
        validate_label_selector(args, errors)
        validate_label_selector(args, errors, "namespaceLabelSelector")
        if args.get("nodeSelector"):
            try:
                LabelSelector.parse(args["nodeSelector"])
            except SelectorError as e:
                errors.append(f"nodeSelector: {e}")
        if args.get("minPodAge") is not None:
            try:
                parse_duration(args["minPodAge"])
            except ValueError as e:
                errors.append(f"minPodAge: {e}")
        for key in ("defaultDisabled", "extraEnabled"):
            for name in (args.get("podProtections") or {}).get(key) or ():
                if name not in PROTECTIONS:
                    errors.append(f'podProtections.{key}: unsupported protection "{name}" '
                                  f'(kubesched supports {", ".join(PROTECTIONS)})')
        return errors

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        super().__init__(handle, args)
        self.constraints: list[Constraint] = self._protections() + self._selection()

    # ---- Filter ---------------------------------------------------------------------------------

    def _effective_protections(self) -> set[str]:
        """getEffectivePodProtections: podProtections when given, else the legacy booleans."""
        pp = self.args.get("podProtections") or {}
        if pp.get("defaultDisabled") or pp.get("extraEnabled"):
            on = [p for p in DEFAULT_PROTECTIONS if p not in (pp.get("defaultDisabled") or ())]
            return set(on) | set(pp.get("extraEnabled") or ())
        a = self.args
        legacy = {"PodsWithLocalStorage": not a.get("evictLocalStoragePods"),
                  "DaemonSetPods": not a.get("evictDaemonSetPods"),
                  "SystemCriticalPods": not a.get("evictSystemCriticalPods"),
                  "FailedBarePods": not a.get("evictFailedBarePods"),
                  "PodsWithPVC": bool(a.get("ignorePvcPods")),
                  "PodsWithoutPDB": bool(a.get("ignorePodsWithoutPDB"))}
        return {k for k, on in legacy.items() if on}

    def _protections(self) -> list[Constraint]:
        on = self._effective_protections()
        out: list[Constraint] = []
        if "SystemCriticalPods" in on:
            out.append(lambda p: "pod has system critical priority and is protected against eviction"
                       if is_critical(p) else None)
            threshold = self._priority_threshold()
            out.append(lambda p: "pod has higher priority than specified priority class threshold"
                       if (p["spec"].get("priority") is not None and p["spec"]["priority"] >= threshold) else None)
        if "FailedBarePods" in on:
            out.append(lambda p: "pod does not have any ownerRefs" if not owner_refs(p) else None)
        else:
            out.append(lambda p: "pod does not have any ownerRefs and is not in failed phase"
                       if not owner_refs(p) and (p.get("status") or {}).get("phase") != "Failed" else None)
        if "PodsWithLocalStorage" in on:
            out.append(lambda p: "pod has local storage and is protected against eviction"
                       if has_local_storage(p) else None)
        if "DaemonSetPods" in on:
            out.append(lambda p: "daemonset pods are protected against eviction" if is_daemonset_pod(p) else None)
        if "PodsWithPVC" in on:
            out.append(lambda p: "pod with PVC is protected against eviction" if has_pvc(p) else None)
        if "PodsWithoutPDB" in on:
            out.append(lambda p: None if self._covered_by_pdb(p)
                       else "pod does not have a PodDisruptionBudget and is protected against eviction")
        if "PodsWithResourceClaims" in on:
            out.append(lambda p: "pod has ResourceClaims and descheduler is configured to protect ResourceClaims pods"
                       if p["spec"].get("resourceClaims") else None)
        return out

    def _priority_threshold(self) -> int:
        """GetPriorityValueFromPriorityThreshold: a value, a PriorityClass's value, or by default
        the system-critical priority."""
        threshold = self.args.get("priorityThreshold") or {}
        if threshold.get("value") is not None:
            return int(threshold["value"])
        if threshold.get("name"):
            pc = self.handle.api.store.get("PriorityClass", "", threshold["name"])
            if pc is None:
                raise LookupError(f"unable to get priority class {threshold['name']}")
            return int(pc.get("value", 0))
        return SYSTEM_CRITICAL_PRIORITY

    def _covered_by_pdb(self, pod: Obj) -> bool:
        ns = pod["metadata"].get("namespace", "default")
        return any(pdb_covers(b, pod, pdb_selector(b)) for b in self.handle.api.store.list("PodDisruptionBudget", ns))

    def _selection(self) -> list[Constraint]:
        out: list[Constraint] = []
        if self.args.get("labelSelector") is not None:
            selector = LabelSelector.compile(self.args["labelSelector"])
            if not selector.is_empty:
                out.append(lambda p: None if selector.matches(p["metadata"].get("labels") or {})
                           else "pod labels do not match the labelSelector filter in the policy parameter")
        min_replicas = self.args.get("minReplicas") or 0
        if min_replicas > 1:
            out.append(lambda p: self._min_replicas(p, min_replicas))
        if self.args.get("minPodAge") is not None:
            min_age = parse_duration(self.args["minPodAge"])
            out.append(lambda p: self._min_age(p, min_age))
        return out

    def _min_replicas(self, pod: Obj, min_replicas: int) -> str | None:
        refs = owner_refs(pod)
        if len(refs) != 1:
            return None  # no owner, or several (not supported upstream either): no check
        uid = refs[0].get("uid")
        ns = pod["metadata"].get("namespace", "default")
        count = sum(1 for p in self.handle.api.store.list("Pod", ns)
                    if any(r.get("uid") == uid for r in owner_refs(p)))
        if count < min_replicas:
            return f"owner has {count} replicas which is less than minReplicas of {min_replicas}"
        return None

    def _min_age(self, pod: Obj, min_age: float) -> str | None:
        start = (pod.get("status") or {}).get("startTime")
        if not start or self.handle.now() - self.handle.api.seconds(start) < min_age:
            return f"pod age is not older than MinPodAge: {self.args['minPodAge']} seconds"
        return None

    def filter(self, pod: Obj) -> Status:
        annotations = pod["metadata"].get("annotations") or {}
        if EVICT_ANNOTATION in annotations:
            return ALLOWED
        if self.args.get("noEvictionPolicy") == "Mandatory" and NO_EVICTION_ANNOTATION in annotations:
            return Status.refused("pod has the prefer-no-eviction annotation and noEvictionPolicy is Mandatory")
        problems = ["pod is a mirror pod"] if is_mirror_pod(pod) else []
        if is_static_pod(pod):
            problems.append("pod is a static pod")
        if is_terminating(pod):
            problems.append("pod is terminating")
        problems.extend(msg for c in self.constraints if (msg := c(pod)) is not None)
        return Status.refused(", ".join(problems)) if problems else ALLOWED

    # ---- PreEvictionFilter -----------------------------------------------------------------------

    def pre_eviction_filter(self, pod: Obj) -> Status:
        if self.args.get("nodeFit"):
            nodes = self.handle.ready_node_names(self.args.get("nodeSelector"))
            if not self.handle.placement.fits_elsewhere(pod, nodes):
                return Status.refused("pod does not fit on any other node because of nodeSelector(s), Taint(s), "
                                      "or nodes marked as unschedulable")
        ns_selector = self.args.get("namespaceLabelSelector") or {}
        if ns_selector.get("matchLabels"):
            ns = self.handle.api.store.get("Namespace", "", pod["metadata"].get("namespace", "default"))
            labels = (ns or {}).get("metadata", {}).get("labels") or {}
            if not LabelSelector.compile(ns_selector).matches(labels):
                return Status.refused("pod namespace do not match the namespaceLabelSelector filter in the policy "
                                      "parameter")
        return ALLOWED
