"""Pod facts the descheduler's plugins share (descheduler pkg/utils and pkg/descheduler/pod)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.objects import MIRROR_ANNOTATION, Obj, is_terminal
from kubesched.api.qos import qos_class
from kubesched.api.selectors import LabelSelector, SelectorError

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
SOURCE_ANNOTATION = "kubernetes.io/config.source"
QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def owner_refs(pod: Obj) -> list[Obj]:
    return list(pod["metadata"].get("ownerReferences") or ())


def is_daemonset_pod(pod: Obj) -> bool:
    return any(r.get("kind") == "DaemonSet" for r in owner_refs(pod))


def is_mirror_pod(pod: Obj) -> bool:
    return MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {})


def is_static_pod(pod: Obj) -> bool:
    source = (pod["metadata"].get("annotations") or {}).get(SOURCE_ANNOTATION)
    return source is not None and source != "api"


def is_critical(pod: Obj) -> bool:
    priority = pod.get("spec", {}).get("priority")
    return priority is not None and priority >= SYSTEM_CRITICAL_PRIORITY


def has_local_storage(pod: Obj) -> bool:
    return any("hostPath" in v or "emptyDir" in v for v in pod.get("spec", {}).get("volumes") or ())


def has_pvc(pod: Obj) -> bool:
    return any("persistentVolumeClaim" in v for v in pod.get("spec", {}).get("volumes") or ())


def priority(pod: Obj) -> int | None:
    return pod.get("spec", {}).get("priority")


def sort_by_priority_low_to_high(pods: list[Obj]) -> list[Obj]:
    """SortPodsBasedOnPriorityLowToHigh: no priority first, then ascending priority; among equal
    priorities BestEffort before Burstable before Guaranteed.

    Upstream's comparator says "less" for any BestEffort pod, even against another BestEffort
    pod, and Go sorts short slices (up to 12) by insertion sort; so for those the exact swaps
    are replayed (equal BestEffort pods come out reversed). Longer lists use a stable sort.
    """
    def less(a: Obj, b: Obj) -> bool:
        pa, pb = priority(a), priority(b)
        if pa is None and pb is not None:
            return True
        if pb is None and pa is not None:
            return False
        if pa == pb:
            qa, qb = qos_class(a), qos_class(b)
            return qa == "BestEffort" or (qa == "Burstable" and qb == "Guaranteed")
        return pa < pb  # type: ignore[operator]

    out = list(pods)
    if len(out) <= 12:
        for i in range(1, len(out)):
            j = i
            while j > 0 and less(out[j], out[j - 1]):
                out[j], out[j - 1] = out[j - 1], out[j]
                j -= 1
        return out
    return sorted(out, key=lambda p: (priority(p) is not None, priority(p) or 0, QOS_RANK[qos_class(p)]))


# ---- arguments most strategies share ------------------------------------------------------------

def validate_namespaces(args: dict[str, Any], errors: list[str]) -> None:
    ns = args.get("namespaces") or {}
    if ns.get("include") and ns.get("exclude"):
        errors.append("only one of Include/Exclude namespaces can be set")


def validate_label_selector(args: dict[str, Any], errors: list[str], key: str = "labelSelector") -> None:
    if args.get(key) is not None:
        try:
            LabelSelector.compile(args[key])
        except SelectorError as e:
            errors.append(f"failed to get label selectors from strategy's params: {e}")


def validate_pod_selection(args: dict[str, Any], errors: list[str]) -> None:
    """The `namespaces` and `labelSelector` arguments most strategies share."""
    validate_namespaces(args, errors)
    validate_label_selector(args, errors)


def selected_active_pods(args: dict[str, Any]) -> Callable[[Obj], bool]:
    """Unfinished pods in the strategy's namespaces matching its labelSelector."""
    return all_of(lambda p: not is_terminal(p), namespace_filter(args), label_filter(args))


def namespace_filter(args: dict[str, Any]) -> Callable[[Obj], bool]:
    ns = args.get("namespaces") or {}
    include, exclude = set(ns.get("include") or ()), set(ns.get("exclude") or ())
    if include:
        return lambda p: p["metadata"].get("namespace", "default") in include
    if exclude:
        return lambda p: p["metadata"].get("namespace", "default") not in exclude
    return lambda p: True


def label_filter(args: dict[str, Any], key: str = "labelSelector") -> Callable[[Obj], bool]:
    if args.get(key) is None:
        return lambda p: True
    selector = LabelSelector.compile(args[key])
    if selector.is_empty:
        return lambda p: True
    return lambda p: selector.matches(p["metadata"].get("labels") or {})


def all_of(*tests: Callable[[Obj], bool]) -> Callable[[Obj], bool]:
    return lambda p: all(t(p) for t in tests)


def non_negative_int(args: dict[str, Any], key: str, errors: list[str]) -> None:
    value = args.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        errors.append(f"{key}: must be a non-negative integer, got {value!r}")
