"""autoscaling/v1 HorizontalPodAutoscalers are the stored autoscaling/v2 ones in the older shape,
as kube-apiserver converts them (pkg/apis/autoscaling/v1/conversion.go): one stored object, two
views. v1 knows only a cpu utilisation target; what else the object says travels in annotations
(the other metrics, the current metrics, the conditions, the behavior), so a v1 client that
writes back what it read loses nothing."""

from __future__ import annotations

import json
from typing import Any

Obj = dict[str, Any]

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_ANNOTATIONS = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message")  # Go's struct order


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _some(**fields: Any) -> Obj:
    return {k: v for k, v in fields.items() if v is not None}


def _is_cpu_target(metric: Obj) -> bool:
    resource = metric.get("resource") or {}
    return metric.get("type") == "Resource" and resource.get("name") == "cpu" and \
        (resource.get("target") or {}).get("averageUtilization") is not None


# ---- metrics: v2's source/target shape <-> v1's (autoscaling/v2beta1's) flat one -------------------

def _spec_to_v1(metric: Obj) -> Obj:
    mtype = metric.get("type", "")
    if mtype in ("Resource", "ContainerResource"):
        field = "resource" if mtype == "Resource" else "containerResource"
        source = metric.get(field) or {}
        target = source.get("target") or {}
        return {"type": mtype, field: _some(name=source.get("name"), container=source.get("container"),
                                            targetAverageUtilization=target.get("averageUtilization"),
                                            targetAverageValue=target.get("averageValue"))}
    if mtype == "Pods":
        source = metric.get("pods") or {}
        ident = source.get("metric") or {}
        return {"type": mtype, "pods": _some(metricName=ident.get("name"), selector=ident.get("selector"),
                                             targetAverageValue=(source.get("target") or {}).get("averageValue"))}
    if mtype == "Object":
        source = metric.get("object") or {}
        ident, target = source.get("metric") or {}, source.get("target") or {}
        return {"type": mtype, "object": _some(target=source.get("describedObject"), metricName=ident.get("name"),
                                               targetValue=target.get("value"), selector=ident.get("selector"),
                                               averageValue=target.get("averageValue"))}
    if mtype == "External":
        source = metric.get("external") or {}
        ident, target = source.get("metric") or {}, source.get("target") or {}
        return {"type": mtype, "external": _some(metricName=ident.get("name"), metricSelector=ident.get("selector"),
                                                 targetValue=target.get("value"),
                                                 targetAverageValue=target.get("averageValue"))}
    return {"type": mtype}


def _target(utilization: Any = None, value: Any = None, average: Any = None) -> Obj:
    kind = "Utilization" if utilization is not None else "Value" if value is not None else "AverageValue"
    return _some(type=kind, averageUtilization=utilization, value=value, averageValue=average)


def _spec_to_v2(metric: Obj) -> Obj:
    mtype = metric.get("type", "")
    if mtype in ("Resource", "ContainerResource"):
        field = "resource" if mtype == "Resource" else "containerResource"
        source = metric.get(field) or {}
        return {"type": mtype, field: _some(name=source.get("name"), container=source.get("container"), target=_target(
            source.get("targetAverageUtilization"), average=source.get("targetAverageValue")))}
    if mtype == "Pods":
        source = metric.get("pods") or {}
        return {"type": mtype, "pods": {"metric": _some(name=source.get("metricName"), selector=source.get("selector")),
                                        "target": _target(average=source.get("targetAverageValue"))}}
    if mtype == "Object":
        source = metric.get("object") or {}
        return {"type": mtype, "object": {
            "describedObject": source.get("target") or {},
            "metric": _some(name=source.get("metricName"), selector=source.get("selector")),
            "target": _target(value=source.get("targetValue"), average=source.get("averageValue"))}}
    if mtype == "External":
        source = metric.get("external") or {}
        return {"type": mtype, "external": {
            "metric": _some(name=source.get("metricName"), selector=source.get("metricSelector")),
            "target": _target(value=source.get("targetValue"), average=source.get("targetAverageValue"))}}
    return {"type": mtype}


def _status_to_v1(metric: Obj) -> Obj:
    mtype = metric.get("type", "")
    for field in ("resource", "containerResource", "pods", "object", "external"):
        if field in metric:
            source = metric[field] or {}
            current = source.get("current") or {}
            ident = source.get("metric") or {}
            if field in ("resource", "containerResource"):
                body = _some(name=source.get("name"), container=source.get("container"),
                             currentAverageUtilization=current.get("averageUtilization"),
                             currentAverageValue=current.get("averageValue"))
            elif field == "pods":
                body = _some(metricName=ident.get("name"), selector=ident.get("selector"),
                             currentAverageValue=current.get("averageValue"))
            elif field == "object":
                body = _some(target=source.get("describedObject"), metricName=ident.get("name"),
                             currentValue=current.get("value"), selector=ident.get("selector"),
                             averageValue=current.get("averageValue"))
            else:
                body = _some(metricName=ident.get("name"), metricSelector=ident.get("selector"),
                             currentValue=current.get("value"), currentAverageValue=current.get("averageValue"))
            return {"type": mtype, field: body}
    return {"type": mtype}


def _status_to_v2(metric: Obj) -> Obj:
    mtype = metric.get("type", "")
    for field in ("resource", "containerResource", "pods", "object", "external"):
        if field in metric:
            source = metric[field] or {}
            if field in ("resource", "containerResource"):
                body = _some(name=source.get("name"), container=source.get("container"), current=_some(
                    averageUtilization=source.get("currentAverageUtilization"),
                    averageValue=source.get("currentAverageValue")))
            elif field == "pods":
                body = {"metric": _some(name=source.get("metricName"), selector=source.get("selector")),
                        "current": _some(averageValue=source.get("currentAverageValue"))}
            elif field == "object":
                body = {"describedObject": source.get("target") or {},
                        "metric": _some(name=source.get("metricName"), selector=source.get("selector")),
                        "current": _some(value=source.get("currentValue"), averageValue=source.get("averageValue"))}
            else:
                body = {"metric": _some(name=source.get("metricName"), selector=source.get("metricSelector")),
                        "current": _some(value=source.get("currentValue"),
                                         averageValue=source.get("currentAverageValue"))}
            return {"type": mtype, field: body}
    return {"type": mtype}


# ---- behavior: kept as the internal type marshals, Go field names and nulls included -------------

def _rules_out(rules: Obj | None) -> Obj | None:
    if rules is None:
        return None
    return {"StabilizationWindowSeconds": rules.get("stabilizationWindowSeconds"),
            "SelectPolicy": rules.get("selectPolicy"),
            "Policies": [{"Type": p.get("type"), "Value": p.get("value"), "PeriodSeconds": p.get("periodSeconds")}
                         for p in rules.get("policies") or ()] or None,
            "Tolerance": rules.get("tolerance")}


def _rules_in(rules: Obj | None) -> Obj | None:
    if not isinstance(rules, dict):
        return None
    policies = [_some(type=p.get("Type"), value=p.get("Value"), periodSeconds=p.get("PeriodSeconds"))
                for p in rules.get("Policies") or () if isinstance(p, dict)]
    return _some(stabilizationWindowSeconds=rules.get("StabilizationWindowSeconds"),
                 selectPolicy=rules.get("SelectPolicy"), policies=policies or None, tolerance=rules.get("Tolerance"))


# ---- the object ------------------------------------------------------------------------------------

def to_v1(hpa: Obj) -> Obj:
    """The stored (v2) HPA as autoscaling/v1 shows it."""
    spec, status = hpa.get("spec") or {}, hpa.get("status")
    meta = dict(hpa.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    metrics = spec.get("metrics") or []
    cpu = next((m for m in metrics if _is_cpu_target(m)), None)
    if others := [_spec_to_v1(m) for m in metrics if not _is_cpu_target(m)]:
        annotations[METRICS] = _json(others)
    if spec.get("behavior") is not None:
        behavior = spec["behavior"]
        annotations[BEHAVIOR] = _json({"ScaleUp": _rules_out(behavior.get("scaleUp")),
                                       "ScaleDown": _rules_out(behavior.get("scaleDown"))})
    out_spec = _some(scaleTargetRef=spec.get("scaleTargetRef"), minReplicas=spec.get("minReplicas"),
                     maxReplicas=spec.get("maxReplicas"),
                     targetCPUUtilizationPercentage=cpu["resource"]["target"]["averageUtilization"] if cpu else None)
    out: Obj = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": meta,
                "spec": out_spec}
    if status is not None:
        current = status.get("currentMetrics") or []
        if current:
            annotations[CURRENT_METRICS] = _json([_status_to_v1(m) for m in current])
        if status.get("conditions"):
            annotations[CONDITIONS] = _json([{key: c[key] for key in _CONDITION_FIELDS if key in c}
                                             for c in status["conditions"]])
        used = next(((m.get("resource") or {}).get("current") or {} for m in current if m.get("type") == "Resource"
                     and (m.get("resource") or {}).get("name") == "cpu"), {})
        out["status"] = _some(observedGeneration=status.get("observedGeneration"),
                              lastScaleTime=status.get("lastScaleTime"),
                              currentReplicas=status.get("currentReplicas", 0),
                              desiredReplicas=status.get("desiredReplicas", 0),
                              currentCPUUtilizationPercentage=used.get("averageUtilization"))
    if annotations:
        meta["annotations"] = annotations
    return out


def _loads(annotations: Obj, key: str) -> Any:
    try:
        return json.loads(annotations[key]) if key in annotations else None
    except (TypeError, ValueError):
        return None


def to_v2(hpa: Obj) -> Obj:
    """An autoscaling/v1 HPA in the stored (v2) shape, its conversion annotations taken back in."""
    spec, status = hpa.get("spec") or {}, hpa.get("status")
    meta = dict(hpa.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    metrics: list[Obj] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    metrics += [_spec_to_v2(m) for m in _loads(annotations, METRICS) or () if isinstance(m, dict)]
    out_spec = _some(scaleTargetRef=spec.get("scaleTargetRef"), minReplicas=spec.get("minReplicas"),
                     maxReplicas=spec.get("maxReplicas"), metrics=metrics or None)
    behavior = _loads(annotations, BEHAVIOR)
    if isinstance(behavior, dict):
        out_spec["behavior"] = _some(scaleUp=_rules_in(behavior.get("ScaleUp")),
                                     scaleDown=_rules_in(behavior.get("ScaleDown")))
    out: Obj = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta,
                "spec": out_spec}
    if status is not None:
        current = [_status_to_v2(m) for m in _loads(annotations, CURRENT_METRICS) or () if isinstance(m, dict)]
        if not current and status.get("currentCPUUtilizationPercentage") is not None:
            current = [{"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
        conditions = _loads(annotations, CONDITIONS)
        out["status"] = _some(observedGeneration=status.get("observedGeneration"),
                              lastScaleTime=status.get("lastScaleTime"),
                              currentReplicas=status.get("currentReplicas"),
                              desiredReplicas=status.get("desiredReplicas", 0), currentMetrics=current or None,
                              conditions=conditions if isinstance(conditions, list) else None)
    for key in _ANNOTATIONS:
        annotations.pop(key, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


def in_version(hpa: Obj, api_version: str) -> Obj:
    """An HPA of either version as `api_version` shows it: what managed fields compare for an
    entry kept in that version."""
    if hpa.get("apiVersion") == api_version:
        return hpa
    return to_v1(hpa) if api_version == "autoscaling/v1" else to_v2(hpa)
