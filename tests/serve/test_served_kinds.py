"""Everyday kinds beyond the scheduling system's (Ingress, NetworkPolicy, HPA, EndpointSlice),
with kubectl, and Services' cluster IPs and node ports, with the official client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.serve.harness import Served, wait_for

MANIFEST = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, labels: {app: demo}}
spec:
  ingressClassName: nginx
  rules:
  - host: example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, labels: {app: demo}}
spec: {podSelector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, labels: {app: demo}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-x7k2p, labels: {app: demo}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints: [{addresses: [10.244.0.5]}]
"""


def _lines(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines() if line.strip()]


def test_apply_prune_and_get_print_upstreams_columns(served: Served) -> None:
    served.kubectl("apply", "--prune", "-l", "app=demo", "-f", "-", input=MANIFEST)
    out = served.kubectl("get", "ingress,hpa,networkpolicy,endpointslices")
    rows = _lines(out)
    assert ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"] in rows
    assert rows[rows.index(["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]) + 1][:5] == [
        "ingress.networking.k8s.io/web", "nginx", "example.com", "80", rows[1][4]]
    assert ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"] in rows
    # v1.35's defaults: minReplicas 1 and a cpu target of 80% when no metric is given
    assert "horizontalpodautoscaler.autoscaling/web   Deployment/web   cpu: <unknown>/80%   1         5" in out
    assert ["NAME", "POD-SELECTOR", "AGE"] in rows and "networkpolicy.networking.k8s.io/deny   app=web" in out
    assert ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"] in rows
    assert ["endpointslice.discovery.k8s.io/web-x7k2p", "IPv4", "80", "10.244.0.5"] in [r[:4] for r in rows]
    assert served.kubectl("get", "networkpolicy", "deny", "-o", "jsonpath={.spec.policyTypes}") == '["Ingress"]'

    # Pruning: an Ingress (in kubectl's default prune list) the label selects and the file no
    # longer holds goes.
    served.kubectl("apply", "--prune", "-l", "app=demo", "-f", "-", input=MANIFEST.split("---")[1])
    assert served.kubectl("get", "ingress", "-o", "name") == ""
    # Upstream's required field, with its message.
    bad = served.kubectl("apply", "-f", "-", check=False, input=MANIFEST.split("---")[0].replace(
        "pathType: Prefix, ", "").replace("name: web,", "name: bad,"))
    assert "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified" in bad


def test_services_get_cluster_ips_and_node_ports(served: Served) -> None:
    api = client.CoreV1Api(config.new_client_from_config(config_file=served.kubeconfig))
    try:
        assert api.read_namespaced_service("kubernetes", "default").spec.cluster_ip == "10.96.0.1"

        def svc(name: str, **spec: object) -> client.V1Service:
            body = {"metadata": {"name": name},
                    "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}
            return api.create_namespaced_service("default", body)

        a = svc("a")
        assert a.spec.cluster_ip.startswith("10.") and a.spec.cluster_ips == [a.spec.cluster_ip]
        assert svc("h", clusterIP="None").spec.cluster_ips == ["None"]
        np = svc("np", type="NodePort")
        assert 30000 <= np.spec.ports[0].node_port <= 32767
        assert svc("mine", clusterIP="10.96.0.10").spec.cluster_ip == "10.96.0.10"

        for spec, message in (
                ({"clusterIP": "10.96.0.10"}, 'spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: failed to '
                 "allocate IP 10.96.0.10: provided IP is already allocated"),
                ({"clusterIP": "10.0.0.1"}, "failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in "
                 "the valid range. The range of valid IPs is 10.96.0.0/12"),
                ({"type": "NodePort", "ports": [{"port": 80, "nodePort": np.spec.ports[0].node_port}]},
                 f"spec.ports[0].nodePort: Invalid value: {np.spec.ports[0].node_port}: provided port is "
                 "already allocated")):
            with pytest.raises(ApiException) as refused:
                svc("refused", **spec)
            assert refused.value.status == 422 and message in json.loads(refused.value.body)["message"]

        # Deleting frees the IP; an update keeps it.
        api.delete_namespaced_service("mine", "default")
        assert svc("again", clusterIP="10.96.0.10").spec.cluster_ip == "10.96.0.10"
        patched = api.patch_namespaced_service("a", "default", {"metadata": {"labels": {"x": "y"}}})
        assert patched.spec.cluster_ip == a.spec.cluster_ip
        with pytest.raises(ApiException) as changed:
            api.patch_namespaced_service("a", "default", {"spec": {"clusterIP": "10.96.0.20"}})
        assert 'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.20"}: may not change once set' in \
            json.loads(changed.value.body)["message"]
    finally:
        api.api_client.close()


WORKLOAD = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""


def test_endpointslice_controller_lists_a_services_ready_pods(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=WORKLOAD)

    def slices() -> list[dict]:
        out = served.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o", "json")
        return json.loads(out)["items"]

    def ready() -> list[dict]:
        found = slices()
        endpoints = found[0].get("endpoints") or [] if len(found) == 1 else []
        return found if len(endpoints) == 2 and all(e["conditions"]["ready"] for e in endpoints) else []

    (es,) = wait_for(ready, what="two ready endpoints")
    assert es["metadata"]["name"].startswith("web-")
    assert es["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert es["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert es["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    pods = json.loads(served.kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    assert sorted(e["addresses"][0] for e in es["endpoints"]) == sorted(p["status"]["podIP"] for p in pods)

    served.kubectl("delete", "service", "web")
    wait_for(lambda: not slices(), what="the slices to go with their Service")
