"""`kubesched snapshot` of a running `serve`, and `simulate` of that snapshot, reproduce its state:
the same pods on the same nodes in the same phases, the pending pod pending for the same reason,
nothing moved, and virtual time 0 at the moment the snapshot recorded."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import yaml
from click.testing import CliRunner

from kubesched.api.errors import InputError
from kubesched.api.loader import SNAPSHOT_TIME
from kubesched.api.objects import parse_time
from kubesched.live.connection import Connection
from kubesched.live.snapshot import USED, list_objects, snapshot
from kubesched.sim.runner import load
from tests.serve.harness import KUBESCHED, Served, wait_for

SNAPSHOT = [sys.executable, "-c", "from kubesched.live.snapshot import snapshot; snapshot()"]


def _node(name: str, zone: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def _pod(name: str, namespace: str, priority: str, cpu: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"priorityClassName": priority,
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}


CLUSTER = [
    _node("node-a", "z0"), _node("node-b", "z1"),
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota", "namespace": "team"},
     "spec": {"hard": {"requests.cpu": "2", "pods": "5"}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"priorityClassName": "high", "containers": [
                               {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1500m"}}}]}}}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}},
    _pod("solo", "team", "low", "1"),
]
# Created once the rest is placed: no node has 3 CPUs free, and evicting `solo` (the only
# lower-priority pod) would not free enough, so it stays pending.
BIG = _pod("big", "default", "high", "3")


def _pods(server: Served) -> list[dict]:
    return json.loads(server.kubectl("get", "pods", "-A", "-o", "json"))["items"]


def _unschedulable(pod: dict) -> str | None:
    """The message of the pod's PodScheduled=False condition, once the scheduler has tried it."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c.get("message")
    return None


def _settled(server: Served) -> list[dict] | None:
    pods = _pods(server)
    if len(pods) != 4:
        return None
    done = all(_unschedulable(p) if p["metadata"]["name"] == "big" else p["status"].get("phase") == "Running"
               for p in pods)
    return pods if done else None


def _clock(server: Served, advance: str | None = None) -> str:
    """serve's time (RFC 3339), after moving it `advance` ahead."""
    path, body = ("/kubesched.io/clock/advance", json.dumps({"by": advance}).encode()) if advance else \
        ("/kubesched.io/clock", None)
    urllib.request.urlopen(urllib.request.Request(server.url + path, data=body), timeout=30).read()
    with urllib.request.urlopen(server.url + "/kubesched.io/clock", timeout=30) as answer:
        return json.load(answer)["time"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The cluster, settled; its clock stopped and then moved an hour past its last change, so the
    moment of a snapshot differs from every timestamp in it (and from this machine's clock)."""
    server = Served(tmp_path_factory.mktemp("snapshot"), ["--speed", "0"]).start()
    try:
        server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(CLUSTER))
        wait_for(lambda: len([p for p in _pods(server) if p["status"].get("phase") == "Running"]) == 3,
                 what="the deployment and the bare pod running")
        server.kubectl("apply", "-f", "-", input=yaml.safe_dump(BIG))
        wait_for(lambda: _settled(server), what="the cluster to settle")
        _clock(server, advance="1h")
        yield server
    finally:
        server.kill()


def test_simulate_of_a_snapshot_reproduces_the_served_cluster(cluster: Served, tmp_path: Path) -> None:
    served = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in _settled(cluster) or ()}
    snap = tmp_path / "snap.yaml"
    subprocess.run([*SNAPSHOT, "--kubeconfig", cluster.kubeconfig, "-o", str(snap)], check=True,
                   capture_output=True, text=True, timeout=60)
    exported = yaml.safe_load(snap.read_text())
    assert (exported["apiVersion"], exported["kind"]) == ("v1", "List")
    kinds = {o["kind"] for o in exported["items"]}
    assert {"Namespace", "Node", "PriorityClass", "ResourceQuota", "Deployment", "ReplicaSet",
            "PodDisruptionBudget", "Pod"} <= kinds
    recorded = parse_time(exported["metadata"]["annotations"][SNAPSHOT_TIME])
    assert recorded == parse_time(_clock(cluster))  # serve's clock, an hour past the last change

    run = subprocess.run([*KUBESCHED, "simulate", str(snap), "-o", "json"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    result = json.loads(run.stdout)
    got = {(p["namespace"], p["name"]): p for p in result["pods"]}
    assert got.keys() == served.keys()
    for key, pod in served.items():
        assert (got[key]["nodeName"], got[key]["phase"], got[key]["nominatedNodeName"], got[key]["deleted"]) == (
            pod["spec"].get("nodeName"), pod["status"]["phase"], pod["status"].get("nominatedNodeName"), False), key
    assert got["default", "big"]["nodeName"] is None
    assert result["rejected"] == []
    assert not result.get("disruptions") and not result.get("evictions") and not result.get("preemptions")
    # Pending for the reason serve's scheduler gave.
    failed = [e["message"] for e in result["events"] if e["reason"] == "FailedScheduling"]
    assert failed and set(failed) == {_unschedulable(served["default", "big"])}
    assert load([str(snap)]).epoch == recorded
    # Without the record, virtual time 0 would be the newest timestamp in the objects: an hour early.
    del exported["metadata"]["annotations"]
    (tmp_path / "bare.yaml").write_text(yaml.safe_dump(exported))
    assert load([str(tmp_path / "bare.yaml")]).epoch < recorded


def test_filters_narrow_namespaced_kinds_and_managed_fields_are_gone(cluster: Served) -> None:
    raw = json.loads(cluster.kubectl("get", "pod", "solo", "-n", "team", "-o", "json", "--show-managed-fields"))
    assert raw["metadata"]["managedFields"]  # the server has them; the snapshot must not

    runner = CliRunner()
    answer = runner.invoke(snapshot, ["--kubeconfig", cluster.kubeconfig, "-n", "team", "-o", "json"])
    assert answer.exit_code == 0, answer.output
    items = json.loads(answer.stdout)["items"]
    names = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in items}
    assert {("Pod", "team", "solo"), ("ResourceQuota", "team", "quota")} <= names
    assert not any(ns not in (None, "team") for _, ns, _ in names)
    # Cluster-scoped kinds are whole whatever the filters.
    assert {("Node", None, "node-a"), ("Node", None, "node-b"), ("Namespace", None, "default"),
            ("PriorityClass", None, "high")} <= names
    assert all("managedFields" not in o["metadata"] and o["apiVersion"] for o in items)

    answer = runner.invoke(snapshot, ["--kubeconfig", cluster.kubeconfig, "-l", "app=web", "-o", "json"])
    assert answer.exit_code == 0, answer.output
    namespaced = {(o["kind"], o["metadata"]["name"].split("-")[0]) for o in json.loads(answer.stdout)["items"]
                  if o["metadata"].get("namespace")}
    # The pods and their ReplicaSet carry the label (from the template); the Deployment and budget do not.
    assert namespaced == {("Pod", "web"), ("ReplicaSet", "web")}
    assert "Node" in {o["kind"] for o in json.loads(answer.stdout)["items"]}

    answer = runner.invoke(snapshot, ["--kubeconfig", cluster.kubeconfig, "-n", "team", "-A"])
    assert answer.exit_code == 2


def test_pages_are_read_to_the_end(cluster: Served) -> None:
    conn = Connection(cluster.kubeconfig)
    try:
        pods = list_objects(conn, next(k for k in USED if k.kind == "Pod"), page_size=1)
    finally:
        conn.close()
    assert sorted(p["metadata"]["name"] for p in pods)[:2] == ["big", "solo"] and len(pods) == 4
    assert all(p["kind"] == "Pod" and p["apiVersion"] == "v1" for p in pods)


class _Flaky(BaseHTTPRequestHandler):
    """A server that sheds load once (429), then lets a list's continue token expire (410) once."""

    log: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        query = parse_qs(urlparse(self.path).query)
        self.log.append(self.path)
        token = query.get("continue", [None])[0]
        if len(self.log) == 1:
            self._answer(429, {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow down"})
        elif token and "expired" not in self.log:
            self.log.append("expired")
            self._answer(410, {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
        else:  # items as kube-apiserver lists them: without kind and apiVersion
            name = "b" if token else "a"
            item = {"metadata": {"name": name, "namespace": "default",
                                 "managedFields": [{"manager": "kubectl", "operation": "Update"}]}}
            self._answer(200, {"kind": "PodList", "apiVersion": "v1", "items": [item],
                               "metadata": {"continue": "" if token else "next"}})

    def _answer(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: object) -> None:
        pass


def test_throttling_is_waited_out_and_an_expired_list_is_read_again(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "u", "user": {}}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    conn = Connection(str(kubeconfig))
    try:
        pods = list_objects(conn, next(k for k in USED if k.kind == "Pod"), page_size=1)
    finally:
        conn.close()
        server.shutdown()
    assert pods == [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "default"}}
                    for n in ("a", "b")]
    pages = [p for p in _Flaky.log if p != "expired"]
    assert len(pages) == 5  # 429, first page, expired continue, first page again, second page


def test_a_malformed_snapshot_time_is_bad_input(tmp_path: Path) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                    "metadata": {"annotations": {SNAPSHOT_TIME: "yesterday"}},
                                    "items": [_node("node-a", "z0")]}))
    with pytest.raises(InputError) as e:
        load([str(snap)])
    assert [str(p) for p in e.value.problems] == [
        f'{snap} doc 1: metadata.annotations.{SNAPSHOT_TIME}: Invalid value: "yesterday": '
        "must be an RFC 3339 time, e.g. 2026-01-01T00:00:00Z"]
