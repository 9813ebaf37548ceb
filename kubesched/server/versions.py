"""An object as another group/version of its resource shows it, for admission that judges a
request at an equivalent resource (matchPolicy Equivalent): Events (core/v1 and events.k8s.io/v1)
and HorizontalPodAutoscalers (autoscaling/v1 and v2) differ in shape; elsewhere (a custom
resource's versions, with conversion None) only apiVersion differs."""

from __future__ import annotations

from kubesched.api.objects import Obj
from kubesched.server import autoscalingv1
from kubesched.server import events as events_view


def convert(obj: Obj, api_version: str) -> Obj:
    if obj.get("apiVersion") == api_version:
        return obj
    kind = obj.get("kind")
    if kind == "Event":
        return events_view.to_events_v1(obj) if api_version == "events.k8s.io/v1" else events_view.to_core(obj)
    if kind == "HorizontalPodAutoscaler":
        return autoscalingv1.to_v1(obj) if api_version == "autoscaling/v1" else autoscalingv1.to_v2(obj)
    return {**obj, "apiVersion": api_version}
