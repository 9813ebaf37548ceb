"""autoscaling/v1's view of the stored autoscaling/v2 HPA (server.autoscalingv1): the cpu target
and utilisation in v1's own fields, everything else kept in kube-apiserver's annotations, so a v1
client that writes back what it read changes nothing."""

from __future__ import annotations

import json

from kubesched.server.autoscalingv1 import BEHAVIOR, CONDITIONS, METRICS, to_v1, to_v2

HPA = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2, "maxReplicas": 10,
        "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"a": "b"}}},
                                      "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                                          "metric": {"name": "hits"}, "target": {"type": "Value", "value": "5"}}},
            {"type": "External", "external": {"metric": {"name": "queue"},
                                              "target": {"type": "AverageValue", "averageValue": "30"}}},
        ],
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                 "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
                     "scaleDown": {"selectPolicy": "Min", "tolerance": "50m",
                                   "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}},
    },
    "status": {
        "currentReplicas": 3, "desiredReplicas": 4, "lastScaleTime": "2026-01-01T00:00:00Z",
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 90,
                                                                         "averageValue": "450m"}}},
            {"type": ""},
        ],
        "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
                        "reason": "SucceededRescale", "message": "the HPA controller was able to update the target "
                                                                 "scale to 4"}],
    },
}


def test_v1_shows_the_cpu_target_and_keeps_the_rest_in_annotations() -> None:
    v1 = to_v1(HPA)
    assert v1["spec"] == {"scaleTargetRef": HPA["spec"]["scaleTargetRef"], "minReplicas": 2, "maxReplicas": 10,
                          "targetCPUUtilizationPercentage": 60}
    assert v1["status"] == {"lastScaleTime": "2026-01-01T00:00:00Z", "currentReplicas": 3, "desiredReplicas": 4,
                            "currentCPUUtilizationPercentage": 90}
    annotations = v1["metadata"]["annotations"]
    assert annotations["team"] == "a"
    assert json.loads(annotations[METRICS])[0] == {"type": "Resource", "resource": {"name": "memory",
                                                                                     "targetAverageValue": "1Gi"}}
    assert json.loads(annotations[CONDITIONS])[0]["reason"] == "SucceededRescale"
    assert annotations[BEHAVIOR].startswith('{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max",')


def test_a_v1_round_trip_changes_nothing() -> None:
    assert to_v2(to_v1(HPA)) == HPA


def test_a_v1_object_without_a_target_has_no_metric() -> None:
    v2 = to_v2({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}})
    assert v2["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}
    assert "annotations" not in v2["metadata"]
