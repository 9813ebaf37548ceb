"""The small controllers a real cluster runs that clients read from: node Leases, core/v1
Endpoints, and the protection finalizers, driven with kubectl and the official client."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest

from tests.serve.harness import KUBESCHED, Served, wait_for

NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """One server for the module: each test works on objects of its own."""
    server = Served(tmp_path_factory.mktemp("controllers")).start()
    try:
        yield server
    finally:
        server.kill()


def _advance(served: Served, by: str) -> None:
    subprocess.run([*KUBESCHED, "advance", by, "--kubeconfig", served.kubeconfig], check=True, capture_output=True)


def _leases(served: Served) -> dict[str, dict]:
    out = served.kubectl("get", "leases", "-n", "kube-node-lease", "-o", "json")
    return {item["metadata"]["name"]: item for item in json.loads(out)["items"]}


def test_each_node_renews_its_lease_in_kube_node_lease(served: Served) -> None:
    assert "kube-node-lease" in served.kubectl("get", "namespaces")
    served.kubectl("apply", "-f", "-", input=NODES)
    leases = wait_for(lambda: (found := _leases(served)) and {"node-a", "node-b"} <= set(found) and found,
                      what="two node leases")
    nodes = json.loads(served.kubectl("get", "nodes", "-o", "json"))["items"]
    uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes}
    for name in ("node-a", "node-b"):
        lease = leases[name]
        assert lease["spec"]["holderIdentity"] == name
        assert lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uids[name]}]
    rows = [line.split() for line in served.kubectl("get", "leases", "-n", "kube-node-lease").splitlines()]
    assert rows[0] == ["NAME", "HOLDER", "AGE"]
    assert [r[:2] for r in rows[1:] if r[0].startswith("node-")] == [["node-a", "node-a"], ["node-b", "node-b"]]

    # Renewed every 10 s of the cluster's time, a quarter of the duration; a jump ahead renews
    # once, where it lands (what a watcher sees of it).
    first = leases["node-a"]["spec"]["renewTime"]
    since = json.loads(served.kubectl("get", "leases", "-n", "kube-node-lease", "-o", "json"))["metadata"][
        "resourceVersion"]
    _advance(served, "25s")
    renewed = _leases(served)["node-a"]["spec"]["renewTime"]
    assert 25 <= _seconds(renewed) - _seconds(first) < 36
    from kubernetes import client, config, watch

    api = client.CoordinationV1Api(config.new_client_from_config(served.kubeconfig))
    seen = [e["object"].spec.renew_time.timestamp() for e in watch.Watch().stream(
        api.list_namespaced_lease, "kube-node-lease", resource_version=since, timeout_seconds=1,
        field_selector="metadata.name=node-a")]
    # (a renewal due before the jump began may come first)
    assert seen[-1] == _seconds(renewed) and all(b - a >= 25 for a, b in zip(seen, seen[1:], strict=False))
    wait_for(lambda: _leases(served)["node-a"]["spec"]["renewTime"] > renewed, timeout=30,
             what="the next renewal at the usual cadence")

    # The node's lease goes with it.
    served.kubectl("delete", "node", "node-b")
    wait_for(lambda: "node-b" not in _leases(served), what="node-b's lease to be collected")
    assert "node-a" in _leases(served)


def _seconds(micro_time: str) -> float:
    from datetime import UTC, datetime

    return datetime.strptime(micro_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


SERVICES = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}, capacity: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: ready, labels: {app: web}}
spec:
  hostname: ready
  subdomain: web
  containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: warming, labels: {app: web}, annotations: {sim.kubesched.io/never-ready: c}}
spec:
  containers:
  - name: c
    image: nginx
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {httpGet: {path: /, port: 8080}}
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}, {name: admin, port: 9000, targetPort: 9000}]
---
apiVersion: v1
kind: Service
metadata: {name: raw}
spec: {clusterIP: None, selector: {app: web}}
"""


def test_endpoints_controller_lists_ready_and_not_ready_addresses(served: Served) -> None:
    from kubernetes import client, config

    served.kubectl("apply", "-f", "-", input=SERVICES)
    api = client.CoreV1Api(config.new_client_from_config(served.kubeconfig))
    try:
        def endpoints(name: str):  # noqa: ANN202
            try:
                return api.read_namespaced_endpoints(name, "default")
            except client.ApiException:
                return None

        def settled(name: str):  # noqa: ANN202
            ep = endpoints(name)
            subsets = (ep.subsets or []) if ep else []
            return ep if subsets and all(len(s.addresses or []) == 1 and len(s.not_ready_addresses or []) == 1
                                         for s in subsets) else None

        web = wait_for(lambda: settled("web"), what="one ready and one not-ready address")
        pods = {p.metadata.name: p for p in api.list_namespaced_pod("default").items}
        (subset,) = web.subsets  # both ports on both pods: one subset
        assert sorted((p.name, p.port, p.protocol) for p in subset.ports) == [("admin", 9000, "TCP"),
                                                                             ("http", 8080, "TCP")]
        (address,) = subset.addresses
        assert (address.ip, address.node_name, address.hostname) == (pods["ready"].status.pod_ip, "n1", "ready")
        assert (address.target_ref.kind, address.target_ref.name, address.target_ref.uid) == (
            "Pod", "ready", pods["ready"].metadata.uid)
        assert subset.not_ready_addresses[0].target_ref.name == "warming"
        assert subset.not_ready_addresses[0].hostname is None  # its subdomain does not name the Service
        assert web.metadata.labels == {"tier": "front"}
        assert web.metadata.owner_references is None
        trigger = web.metadata.annotations["endpoints.kubernetes.io/last-change-trigger-time"]
        assert trigger.endswith("Z") and "T" in trigger

        # A headless Service without ports lists its addresses alone, and is labelled headless.
        raw = wait_for(lambda: settled("raw"), what="the headless Service's endpoints")
        assert raw.subsets[0].ports is None
        assert raw.metadata.labels == {"service.kubernetes.io/headless": ""}

        out = served.kubectl("get", "endpoints", "web")
        assert out.split()[:3] == ["NAME", "ENDPOINTS", "AGE"]
        assert f"{pods['ready'].status.pod_ip}:8080" in out and f"{pods['ready'].status.pod_ip}:9000" in out

        # The ready pod goes: its address goes; the Service goes: its Endpoints go.
        served.kubectl("delete", "pod", "ready", "--grace-period=0", "--force")
        wait_for(lambda: (ep := endpoints("web")) and not any(s.addresses for s in ep.subsets or []),
                 what="the deleted pod's address to go")
        served.kubectl("delete", "service", "web")
        wait_for(lambda: endpoints("web") is None, what="the Endpoints to go with their Service")
    finally:
        api.api_client.close()


STORAGE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}, capacity: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: manual
  hostPath: {path: /data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: manual
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]
"""


def test_a_claim_in_use_and_a_bound_volume_stay_until_released(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=STORAGE)

    def get(kind: str, name: str) -> dict | None:
        out = served.kubectl("get", kind, name, "-o", "json", "--ignore-not-found")
        return json.loads(out) if out.strip() else None

    wait_for(lambda: (get("pvc", "data") or {}).get("status", {}).get("phase") == "Bound", what="the claim bound")
    wait_for(lambda: (get("pod", "user") or {}).get("status", {}).get("phase") == "Running", what="the pod running")
    # StorageObjectInUseProtection's finalizers, added on create.
    assert get("pvc", "data")["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert get("pv", "disk")["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]

    served.kubectl("delete", "pvc", "data", "--wait=false")
    served.kubectl("delete", "pv", "disk", "--wait=false")
    _advance(served, "5s")
    claim, volume = get("pvc", "data"), get("pv", "disk")
    assert claim["metadata"]["deletionTimestamp"] and claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert volume["metadata"]["deletionTimestamp"] and volume["status"]["phase"] == "Bound"
    assert "Terminating" in served.kubectl("get", "pvc", "data")

    # The pod goes: the claim is let go, its volume is released and let go too.
    served.kubectl("delete", "pod", "user", "--grace-period=0", "--force")
    wait_for(lambda: get("pvc", "data") is None, what="the claim to go once no pod uses it")
    wait_for(lambda: get("pv", "disk") is None, what="the volume to go once released")


JOB = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}, capacity: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  completions: 2
  parallelism: 2
  template:
    metadata: {annotations: {sim.kubesched.io/duration: 1s}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: forever}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


def test_job_pods_keep_their_tracking_finalizer_until_counted(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=JOB)

    def pods(job: str) -> list[dict]:
        out = served.kubectl("get", "pods", "-l", f"batch.kubernetes.io/job-name={job}", "-o", "json")
        return json.loads(out)["items"]

    running = wait_for(lambda: [p for p in pods("forever") if p["status"].get("phase") == "Running"],
                       what="the long Job's pod running")
    assert running[0]["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    done = wait_for(lambda: (job := json.loads(served.kubectl("get", "job", "batch", "-o", "json")))
                    .get("status", {}).get("succeeded") == 2 and job, what="two completions")
    assert any(c["type"] == "Complete" for c in done["status"]["conditions"])
    finished = pods("batch")
    assert len(finished) == 2 and all(not p["metadata"].get("finalizers") for p in finished)

    # A pod deleted while its Job runs is counted before it goes; a deleted Job's pods do not linger.
    served.kubectl("delete", "pod", running[0]["metadata"]["name"], "--wait=false")
    wait_for(lambda: json.loads(served.kubectl("get", "job", "forever", "-o", "json"))
             .get("status", {}).get("failed") == 1, what="the deleted pod counted as failed")
    served.kubectl("delete", "job", "forever", "--wait=false")
    wait_for(lambda: not pods("forever"), what="the deleted Job's pods to go")


def test_token_requests_are_discovered_and_described(served: Served) -> None:
    """`serviceaccounts/token` in /api/v1 and in the OpenAPI v3 document, as kube-apiserver lists
    it, so clients that look a subresource up before posting to it find it."""
    from kubernetes import client, config

    api_client = config.new_client_from_config(served.kubeconfig)
    try:
        core = client.CoreV1Api(api_client)
        token = next(r for r in core.get_api_resources().resources if r.name == "serviceaccounts/token")
        assert (token.group, token.version, token.kind, token.verbs, token.namespaced) == (
            "authentication.k8s.io", "v1", "TokenRequest", ["create"], True)
        document = json.loads(served.kubectl("get", "--raw", "/openapi/v3/api/v1"))
        post = document["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]["post"]
        assert post["operationId"] == "createCoreV1NamespacedServiceAccountToken"
        ref = post["requestBody"]["content"]["*/*"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert ref == "io.k8s.api.authentication.v1.TokenRequest" and ref in document["components"]["schemas"]

        core.create_namespaced_service_account("default", {"metadata": {"name": "bot"}})
        issued = core.create_namespaced_service_account_token("bot", "default", {"spec": {"audiences": []}})
        assert issued.status.token
    finally:
        api_client.close()


def test_the_kubernetes_service_resolves_to_this_server(served: Served) -> None:
    """kube-apiserver's endpoint reconciler: the `kubernetes` Service has an Endpoints and an
    EndpointSlice of its own naming the address and port the server listens on, put back when
    deleted; a client that follows them reaches the server."""
    from kubernetes import client, config

    api = config.new_client_from_config(served.kubeconfig)
    core, discovery = client.CoreV1Api(api), client.DiscoveryV1Api(api)
    endpoints = core.read_namespaced_endpoints("kubernetes", "default")
    assert endpoints.metadata.labels == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert [([a.ip for a in s.addresses], [(p.name, p.port, p.protocol) for p in s.ports])
            for s in endpoints.subsets] == [(["127.0.0.1"], [("https", served.port, "TCP")])]
    slices = discovery.list_namespaced_endpoint_slice("default", label_selector="kubernetes.io/service-name=kubernetes")
    [eps] = slices.items
    assert (eps.metadata.name, eps.address_type) == ("kubernetes", "IPv4")
    assert [(e.addresses, e.conditions.ready) for e in eps.endpoints] == [(["127.0.0.1"], True)]
    assert [(p.name, p.port, p.protocol) for p in eps.ports] == [("https", served.port, "TCP")]
    svc = core.read_namespaced_service("kubernetes", "default")
    assert [(p.port, p.target_port) for p in svc.spec.ports] == [(443, served.port)]
    with urllib.request.urlopen(f"http://{eps.endpoints[0].addresses[0]}:{eps.ports[0].port}/version") as answer:
        assert json.load(answer)["major"] == "1"

    core.delete_namespaced_endpoints("kubernetes", "default")
    discovery.delete_namespaced_endpoint_slice("kubernetes", "default")
    _advance(served, "10s")
    assert core.read_namespaced_endpoints("kubernetes", "default").subsets[0].addresses[0].ip == "127.0.0.1"
    assert discovery.read_namespaced_endpoint_slice("kubernetes", "default").ports[0].port == served.port
