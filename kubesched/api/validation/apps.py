"""apps/v1: ReplicaSets, Deployments, DaemonSets and StatefulSets (pkg/apis/apps/validation).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.names import dns_subdomain_errors
from kubesched.api.validation.checker import Checker, _int_or_percent, _label_selector, _labels, subpath
from kubesched.api.validation.core import (
    _claim_spec,
    _nonnegative,
    _pod_template,
    _replicas,
    _selector_matches,
)


def _workload(c: Checker, obj: dict[str, Any], path: str, kind: str) -> None:
    """ReplicaSet, Deployment, DaemonSet or StatefulSet: a selector that matches a pod template."""
    spec_path = subpath(path, "spec")
    if obj.get("spec") is None:
        c.required(spec_path)
        return
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        return
    if kind != "DaemonSet":
        _replicas(c, spec, spec_path)
    selector = None
    selector_path = subpath(spec_path, "selector")
    if spec.get("selector") is None:
        c.required(selector_path)
    elif c.typed(spec["selector"], selector_path, dict) is not None:
        if not spec["selector"].get("matchLabels") and not spec["selector"].get("matchExpressions"):
            # The API server says "deployment" for ReplicaSets too.
            what = {"DaemonSet": "daemonset", "StatefulSet": "statefulset"}.get(kind, "deployment")
            c.invalid(selector_path, spec["selector"], f"empty selector is invalid for {what}")
        else:
            selector = _label_selector(c, spec["selector"], selector_path)
    if not _pod_template(c, spec, spec_path, ("Always",), _selector_matches(c, selector, spec_path)):
        return
    strategy_key = "strategy" if kind in ("Deployment", "ReplicaSet") else "updateStrategy"
    strategy = c.get(spec, strategy_key, spec_path, dict)
    if strategy is not None:
        strategy_path = subpath(spec_path, strategy_key)
        allowed = ("RollingUpdate", "Recreate") if kind == "Deployment" else ("RollingUpdate", "OnDelete")
        if kind != "ReplicaSet":
            c.enum(strategy, "type", strategy_path, allowed)
            rolling = c.get(strategy, "rollingUpdate", strategy_path, dict) or {}
            for key in ("maxSurge", "maxUnavailable"):
                _int_or_percent(c, rolling.get(key), f"{strategy_path}.rollingUpdate.{key}")


def _statefulset(c: Checker, obj: dict[str, Any], path: str) -> None:
    _workload(c, obj, path, "StatefulSet")
    spec_path = subpath(path, "spec")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    c.enum(spec, "podManagementPolicy", spec_path, ("OrderedReady", "Parallel"))
    c.get(spec, "serviceName", spec_path, str)
    _nonnegative(c, spec, ("minReadySeconds", "revisionHistoryLimit"), spec_path)
    _nonnegative(c, c.get(spec, "ordinals", spec_path, dict) or {}, ("start",),
                 subpath(spec_path, "ordinals"))
    rolling_path = subpath(spec_path, "updateStrategy.rollingUpdate")
    rolling = ((spec.get("updateStrategy") or {}) if isinstance(spec.get("updateStrategy"), dict) else {}).get(
        "rollingUpdate")
    if isinstance(rolling, dict):
        _nonnegative(c, rolling, ("partition",), rolling_path)
    retention_path = subpath(spec_path, "persistentVolumeClaimRetentionPolicy")
    retention = c.get(spec, "persistentVolumeClaimRetentionPolicy", spec_path, dict) or {}
    for key in ("whenDeleted", "whenScaled"):
        c.enum(retention, key, retention_path, ("Retain", "Delete"))
    for i, claim in enumerate(c.get(spec, "volumeClaimTemplates", spec_path, list) or []):
        claim_path = f"{spec_path}.volumeClaimTemplates[{i}]"
        if c.typed(claim, claim_path, dict) is None:
            continue
        meta = c.get(claim, "metadata", claim_path, dict) or {}
        name = c.need(meta, "name", subpath(claim_path, "metadata"), str)
        if name:
            c.names(name, subpath(claim_path, "metadata.name"), dns_subdomain_errors)
        _labels(c, meta.get("labels"), subpath(claim_path, "metadata.labels"))
        _claim_spec(c, claim.get("spec"), subpath(claim_path, "spec"))
