"""The small controllers a real cluster runs that clients read from: node Leases, core/v1
Endpoints, and the protection finalizers, driven with kubectl and the official client."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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


@pytest.fixture
def frozen(tmp_path: Path):  # noqa: ANN201
    """A server whose clock only `kubesched advance` moves."""
    server = Served(tmp_path, args=["--speed", "0"]).start()
    try:
        yield server
    finally:
        server.kill()


def _advance(served: Served, by: str) -> None:
    subprocess.run([*KUBESCHED, "advance", by, "--kubeconfig", served.kubeconfig], check=True, capture_output=True)


def _leases(served: Served) -> dict[str, dict]:
    out = served.kubectl("get", "leases", "-n", "kube-node-lease", "-o", "json")
    return {item["metadata"]["name"]: item for item in json.loads(out)["items"]}


def test_each_node_renews_its_lease_in_kube_node_lease(frozen: Served) -> None:
    assert "kube-node-lease" in frozen.kubectl("get", "namespaces")
    frozen.kubectl("apply", "-f", "-", input=NODES)
    leases = wait_for(lambda: (found := _leases(frozen)) and len(found) == 2 and found, what="two node leases")
    nodes = json.loads(frozen.kubectl("get", "nodes", "-o", "json"))["items"]
    uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes}
    for name, lease in leases.items():
        assert lease["spec"]["holderIdentity"] == name
        assert lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uids[name]}]
    rows = [line.split() for line in frozen.kubectl("get", "leases", "-n", "kube-node-lease").splitlines()]
    assert rows[0] == ["NAME", "HOLDER", "AGE"]
    assert [r[:2] for r in rows[1:]] == [["node-a", "node-a"], ["node-b", "node-b"]]

    # Renewed every 10 s of the cluster's time, a quarter of the duration.
    first = leases["node-a"]["spec"]["renewTime"]
    _advance(frozen, "25s")
    renewed = _leases(frozen)["node-a"]["spec"]["renewTime"]
    assert renewed > first
    assert (_seconds(renewed) - _seconds(first)) == 20

    # The node's lease goes with it.
    frozen.kubectl("delete", "node", "node-b")
    wait_for(lambda: list(_leases(frozen)) == ["node-a"], what="node-b's lease to be collected")


def _seconds(micro_time: str) -> float:
    from datetime import datetime

    return datetime.strptime(micro_time, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
