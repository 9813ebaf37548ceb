"""The real kubectl against `kubesched serve`: what a user types, what a user sees."""

from __future__ import annotations

import subprocess
import time

from tests.serve.harness import Served, wait_for

NODES = """
apiVersion: v1
kind: List
items:
""" + "".join(f"""
- apiVersion: v1
  kind: Node
  metadata:
    name: node-{n}
    labels: {{kubernetes.io/hostname: node-{n}, topology.kubernetes.io/zone: zone-{n}}}
  status:
    allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
    capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
""" for n in "abc")

APP = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      priorityClassName: high
      containers:
      - name: app
        image: nginx:1.27
        resources: {requests: {cpu: "1", memory: 1Gi}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 3
  selector: {matchLabels: {app: web}}
"""


def _pods(served: Served) -> list[list[str]]:
    out = served.kubectl("get", "pods", "-o", "wide", "--no-headers")
    return [line.split() for line in out.splitlines() if line.strip()]


def _running(served: Served, n: int) -> list[list[str]]:
    def ready() -> list[list[str]] | None:
        rows = _pods(served)
        running = [r for r in rows if r[2] == "Running"]
        return rows if len(running) == n and len(rows) == n else None
    return wait_for(ready, what=f"{n} running pods")


def test_apply_get_scale_describe_delete(served: Served) -> None:
    assert "node/node-a created" in served.kubectl("apply", "-f", "-", input=NODES)
    out = served.kubectl("apply", "-f", "-", input=APP)
    assert "deployment.apps/web created" in out
    assert "poddisruptionbudget.policy/web created" in out
    assert "priorityclass.scheduling.k8s.io/high created" in out

    header = served.kubectl("get", "pods", "-o", "wide").splitlines()[0].split()
    assert header[:9] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE"]
    rows = _running(served, 3)
    # Spread over the zones by the default topology spreading, one per node.
    assert sorted(r[6] for r in rows) == ["node-a", "node-b", "node-c"]
    assert all(r[1] == "1/1" for r in rows)

    nodes = served.kubectl("get", "nodes", "--no-headers").splitlines()
    assert [line.split()[:2] for line in nodes] == [["node-a", "Ready"], ["node-b", "Ready"], ["node-c", "Ready"]]

    # Re-applying an unchanged manifest changes nothing; a changed image rolls out.
    assert "deployment.apps/web unchanged" in served.kubectl("apply", "-f", "-", input=APP)
    assert "deployment.apps/web configured" in served.kubectl("apply", "-f", "-", input=APP.replace("1.27", "1.28"))

    assert "deployment.apps/web scaled" in served.kubectl("scale", "deployment/web", "--replicas=5")
    wait_for(lambda: served.kubectl("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}") == "5",
             what="5 ready replicas")
    rows = _running(served, 5)

    pod = rows[0][0]
    described = served.kubectl("describe", "pod", pod)
    assert "Events:" in described
    assert "Successfully assigned default/" in described
    assert "Scheduled" in described

    out = served.kubectl("delete", "pod", pod)
    assert f'pod "{pod}" deleted' in out
    assert pod not in served.kubectl("get", "pods", "--no-headers")
    _running(served, 5)  # the ReplicaSet replaced it


def test_drain_respects_the_budget(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=NODES)
    served.kubectl("apply", "-f", "-", input=APP.replace("minAvailable: 3", "minAvailable: 2"))
    _running(served, 3)
    out = served.kubectl("drain", "node-a", "--ignore-daemonsets", "--timeout=90s", timeout=120)
    assert "node/node-a cordoned" in out
    assert "node/node-a drained" in out
    rows = _running(served, 3)
    assert "node-a" not in [r[6] for r in rows]
    nodes = served.kubectl("get", "nodes", "--no-headers").splitlines()
    assert nodes[0].split()[1] == "Ready,SchedulingDisabled"


def test_drain_waits_for_a_budget_that_refuses(served: Served) -> None:
    """minAvailable 3 of 3: every eviction gets 429 until the replacement is Ready elsewhere,
    which cannot happen while the pod still holds its place; kubectl retries until its timeout."""
    served.kubectl("apply", "-f", "-", input=NODES)
    served.kubectl("apply", "-f", "-", input=APP)
    _running(served, 3)
    out = served.kubectl("drain", "node-a", "--ignore-daemonsets", "--timeout=7s", check=False, timeout=60)
    assert "Cannot evict pod as it would violate the pod's disruption budget" in out
    assert "will retry after 5s" in out
    rows = _running(served, 3)
    assert "node-a" in [r[6] for r in rows]


def test_explain_and_api_resources(served: Served) -> None:
    out = served.kubectl("explain", "pod.spec")
    assert "KIND:       Pod" in out
    assert "containers" in out and "nodeName" in out
    out = served.kubectl("explain", "deployment.spec.replicas")
    assert "replicas" in out
    resources = served.kubectl("api-resources", "--no-headers")
    assert any(line.split()[:2] == ["pods", "po"] for line in resources.splitlines())
    assert any(line.split()[0] == "poddisruptionbudgets" for line in resources.splitlines())


def test_get_watch_streams_changes(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=NODES)
    served.kubectl("run", "anchor", "--image=busybox", "--restart=Never")
    watcher = subprocess.Popen(["kubectl", "--kubeconfig", served.kubeconfig, "get", "pods", "-w", "--no-headers"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # kubectl lists, prints, then watches from the list's resourceVersion: once the listed pod
        # is printed, whatever happens next is streamed.
        assert watcher.stdout is not None and watcher.stdout.readline().startswith("anchor")
        served.kubectl("run", "solo", "--image=busybox", "--restart=Never")
        wait_for(lambda: served.kubectl("get", "pod", "solo", "-o", "jsonpath={.status.phase}") == "Running",
                 what="solo running")
        time.sleep(1)
    finally:
        watcher.terminate()
        out, err = watcher.communicate(timeout=10)
    lines = [line.split() for line in out.splitlines() if line.strip() and line.startswith("solo")]
    assert lines, err
    assert lines[-1][2] == "Running"
    assert any(line[2] in ("Pending", "ContainerCreating") for line in lines[:-1])


def test_top_reads_the_kubelets_usage(served: Served) -> None:
    """metrics.k8s.io from the simulated kubelets: requests unless the pod says it uses more."""
    served.kubectl("apply", "-f", "-", input=NODES)
    served.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: Pod
metadata:
  name: hungry
  annotations: {sim.kubesched.io/usage-cpu: 1500m, sim.kubesched.io/usage-memory: 2Gi}
spec:
  nodeName: node-b
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}
""")
    wait_for(lambda: "Running" in served.kubectl("get", "pod", "hungry", "--no-headers"), what="hungry running")
    pods = served.kubectl("top", "pod", "--no-headers").split()
    assert pods == ["hungry", "1500m", "2048Mi"]
    nodes = {line.split()[0]: line.split()[1:] for line in served.kubectl("top", "node", "--no-headers").splitlines()}
    assert nodes["node-b"][:2] == ["1500m", "37%"]
    assert nodes["node-a"][0] == "0m"
