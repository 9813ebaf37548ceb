"""The HorizontalPodAutoscaler controller in `serve`, driven with kubectl (`autoscale`, `get
hpa`, `top`) and the official client's autoscaling/v1 and v2 APIs: it scales a Deployment on the
usage `kubectl top` shows, and v1 is the stored v2 object in the older shape."""

from __future__ import annotations

import json
from pathlib import Path

from kubernetes import client, config

from tests.serve.harness import Served, wait_for

SEED = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "16", memory: 16Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {sim.kubesched.io/usage-cpu: 400m}}
    spec: {containers: [{name: c, image: web, resources: {requests: {cpu: 200m}}}]}
"""


def test_autoscale_scales_a_deployment_on_the_usage_top_shows(tmp_path: Path) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text(SEED)
    served = Served(tmp_path, args=["--speed", "40", str(seed)]).start()
    try:
        wait_for(lambda: "400m" in served.kubectl("top", "pod", "--no-headers"), what="the pod's usage")
        assert served.kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=5").strip() == \
            "horizontalpodautoscaler.autoscaling/web autoscaled"
        # Managed fields are kept in the version of the request, as kube-apiserver keeps them.
        assert _managed(served)[("kubectl-autoscale", "autoscaling/v1")] == {"f:spec": {
            "f:maxReplicas": {}, "f:minReplicas": {}, "f:scaleTargetRef": {}, "f:targetCPUUtilizationPercentage": {}}}

        # 200% of the request against 50%: 1 -> 4 (the scale-up rate without a behavior) -> 5 (maxReplicas).
        wait_for(lambda: served.kubectl("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}") == "5",
                 timeout=60, what="5 ready replicas")
        row = served.kubectl("get", "hpa", "web", "--no-headers").split()
        assert row[:6] == ["web", "Deployment/web", "cpu:", "200%/50%", "1", "5"]
        assert served.kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "--no-headers").split()[:6] == \
            row[:6]
        events = served.kubectl("get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler",
                                "-o", "jsonpath={range .items[*]}{.reason}: {.message}{'\\n'}{end}")
        assert "SuccessfulRescale: New size: 4; reason: cpu resource utilization (percentage of request) above " \
               "target" in events.splitlines()

        config.load_kube_config(served.kubeconfig)
        v1 = client.AutoscalingV1Api().read_namespaced_horizontal_pod_autoscaler("web", "default")
        assert (v1.spec.target_cpu_utilization_percentage, v1.status.current_cpu_utilization_percentage) == (50, 200)
        assert (v1.spec.min_replicas, v1.spec.max_replicas, v1.status.desired_replicas) == (1, 5, 5)
        conditions = json.loads(v1.metadata.annotations["autoscaling.alpha.kubernetes.io/conditions"])
        assert [c["type"] for c in conditions] == ["AbleToScale", "ScalingActive", "ScalingLimited"]

        v2 = client.AutoscalingV2Api().read_namespaced_horizontal_pod_autoscaler("web", "default")
        limited = next(c for c in v2.status.conditions if c.type == "ScalingLimited")
        assert (limited.status, limited.reason) == ("True", "TooManyReplicas")
        assert v2.status.current_metrics[0].resource.current.average_utilization == 200

        # A v1 write keeps what v1 cannot say: the v2 behavior survives a v1 update of the target.
        client.AutoscalingV2Api().patch_namespaced_horizontal_pod_autoscaler(
            "web", "default", {"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})
        v1 = client.AutoscalingV1Api().read_namespaced_horizontal_pod_autoscaler("web", "default")
        v1.spec.target_cpu_utilization_percentage = 70
        client.AutoscalingV1Api().replace_namespaced_horizontal_pod_autoscaler("web", "default", v1)
        v2 = client.AutoscalingV2Api().read_namespaced_horizontal_pod_autoscaler("web", "default")
        assert v2.spec.metrics[0].resource.target.average_utilization == 70
        assert v2.spec.behavior.scale_down.stabilization_window_seconds == 60
        assert not (v2.metadata.annotations or {})
        # Each writer owns what it changed, in its own version's paths; the v1 update took the target
        # from `kubectl autoscale`.
        managed = _managed(served)
        assert managed[("OpenAPI-Generator", "autoscaling/v1")] == {"f:spec": {"f:targetCPUUtilizationPercentage": {}}}
        assert set(managed[("OpenAPI-Generator", "autoscaling/v2")]["f:spec"]) == {"f:behavior"}
        assert set(managed[("kubectl-autoscale", "autoscaling/v1")]["f:spec"]) == {
            "f:maxReplicas", "f:minReplicas", "f:scaleTargetRef"}

        # Server-side apply through v1 too: the applier's entry in v1, conflicts found in each
        # manager's own version.
        served.kubectl("apply", "--server-side", "-f", "-", input=V1_APPLIED.format(target=60))
        assert _managed(served, "other")[("kubectl", "autoscaling/v1")] == {"f:spec": {
            "f:maxReplicas": {}, "f:scaleTargetRef": {}, "f:targetCPUUtilizationPercentage": {}}}
        served.kubectl("patch", "hpa.v2.autoscaling", "other", "--type", "merge", "-p", json.dumps({"spec": {
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 50}}}]}}))
        refused = served.kubectl("apply", "--server-side", "-f", "-", input=V1_APPLIED.format(target=70), check=False)
        assert 'conflict with "kubectl-patch" using autoscaling/v2: .spec.metrics' in refused
    finally:
        served.kill()


V1_APPLIED = """
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {{name: other}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: other}}
  maxReplicas: 5
  targetCPUUtilizationPercentage: {target}
"""


def _managed(served: Served, name: str = "web") -> dict[tuple[str, str], dict]:
    hpa = json.loads(served.kubectl("get", "hpa.v2.autoscaling", name, "-o", "json", "--show-managed-fields"))
    return {(m["manager"], m["apiVersion"]): m["fieldsV1"] for m in hpa["metadata"]["managedFields"]}
