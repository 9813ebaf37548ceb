"""`kubesched scheduler` as its own process against `kubesched serve` over real HTTP: it schedules
the pods that name it, preempts as simulate does, survives its API server's restart, and with
`--leader-elect` only one replica binds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.serve.harness import KUBESCHED, Served, wait_for

NODES = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname": f"node-{n}"}},
          "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                     "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}} for n in "ab"]
CLASSES = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": v}
           for name, v in (("high", 1000), ("low", 10))]


def _pod(name: str, cpu: str, priority: str, labels: dict[str, str] | None = None, node: str | None = None) -> dict:
    spec: dict = {"schedulerName": "kubesched", "priorityClassName": priority, "terminationGracePeriodSeconds": 30,
                  "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                         "annotations": {"sim.kubesched.io/shutdown": "2s"}}, "spec": spec}


# Two nodes full of low-priority pods, two of them (on node-a) protected by a budget that allows
# no disruption; a high-priority pod then needs room: the victim must come from node-b.
LOWS = [_pod("low-a1", "2", "low", {"app": "guarded"}, "node-a"), _pod("low-a2", "2", "low", {"app": "guarded"}, "node-a"),
        _pod("low-b1", "2", "low", {"app": "free"}, "node-b"), _pod("low-b2", "2", "low", {"app": "free"}, "node-b")]
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guarded", "namespace": "default"},
       "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}}}
URGENT = _pod("urgent", "2", "high")
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": "kubesched"}]}


class Scheduler:
    """One `kubesched scheduler` process."""

    def __init__(self, served: Served, *args: str) -> None:
        self.log = served.tmp / f"scheduler-{time.monotonic_ns()}.log"
        self.proc = subprocess.Popen([*KUBESCHED, "scheduler", "--kubeconfig", served.kubeconfig, "--port", "0", *args],
                                     stdout=self.log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def output(self) -> str:
        return self.log.read_text()


@pytest.fixture
def schedulers(served: Served) -> Iterator[list[Scheduler]]:
    started: list[Scheduler] = []
    yield started
    for s in started:
        s.stop(signal.SIGKILL)


def _apply(served: Served, *objs: dict) -> None:
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))


def _pods(served: Served) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in json.loads(served.kubectl("get", "pods", "-o", "json"))["items"]}


def _running(served: Served, names: set[str]) -> dict[str, dict]:
    def check() -> dict[str, dict] | None:
        pods = _pods(served)
        ok = all(pods.get(n, {}).get("status", {}).get("phase") == "Running" for n in names)
        return pods if ok else None
    return wait_for(check, timeout=60, what=f"{sorted(names)} running")


def test_live_scheduler_preempts_as_simulate_does(served: Served, schedulers: list[Scheduler], tmp_path: Path) -> None:
    _apply(served, *NODES, *CLASSES)
    schedulers.append(Scheduler(served))
    _apply(served, *LOWS, PDB)
    before = _running(served, {p["metadata"]["name"] for p in LOWS})
    _apply(served, URGENT)
    after = _running(served, {"urgent"})
    wait_for(lambda: len(_pods(served)) == 4, timeout=60, what="the victim gone")
    after = _pods(served)
    live = {name: p["spec"].get("nodeName") for name, p in after.items()}
    victims = set(before) - set(after)
    assert len(victims) == 1 and victims <= {"low-b1", "low-b2"}, victims  # the budget protected node-a's pods
    assert live["urgent"] == "node-b"
    events = served.kubectl("get", "events", "--field-selector", "reason=Preempted", "-o", "json")
    notes = [e["message"] for e in json.loads(events)["items"]]
    assert any(n.startswith("Preempted by pod") and "on node node-b" in n for n in notes), notes
    scheduled = json.loads(served.kubectl("get", "events.events.k8s.io", "--field-selector", "reason=Scheduled",
                                          "-o", "json"))["items"]
    assert {e["reportingController"] for e in scheduled} == {"kubesched"}
    assert all(e["action"] == "Binding" for e in scheduled)

    # The same objects in simulate (the low pods first, the urgent one once they run).
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "same"},
                "spec": {"events": [{"at": "30s", "create": URGENT}]}}
    path = tmp_path / "same.yaml"
    path.write_text(yaml.safe_dump_all([*NODES, *CLASSES, CONFIG, *LOWS, PDB, scenario]))
    run = subprocess.run([*KUBESCHED, "simulate", str(path), "-o", "json"], capture_output=True, text=True, check=True)
    simulated = {p["name"]: p["nodeName"] for p in json.loads(run.stdout)["pods"] if not p["deleted"]}
    assert live == simulated
    # Every pod was bound once.
    assert max(Counter(e["regarding"]["name"] for e in scheduled).values()) == 1


def test_live_scheduler_survives_a_server_restart(served: Served, schedulers: list[Scheduler]) -> None:
    _apply(served, *NODES, *CLASSES)
    schedulers.append(Scheduler(served))
    _apply(served, *[_pod(f"first-{i}", "100m", "low") for i in range(5)])
    _running(served, {f"first-{i}" for i in range(5)})
    served.kill()  # kill -9, then the same port again
    served.start(served.port)
    _apply(served, *[_pod(f"second-{i}", "100m", "low") for i in range(5)])
    pods = _running(served, {f"first-{i}" for i in range(5)} | {f"second-{i}" for i in range(5)})
    assert all(p["spec"]["nodeName"] in ("node-a", "node-b") for p in pods.values())
    scheduled = json.loads(served.kubectl("get", "events", "--field-selector", "reason=Scheduled", "-o", "json"))
    counts = Counter(e["involvedObject"]["name"] for e in scheduled["items"])
    assert set(counts) == set(pods) and max(counts.values()) == 1, counts
    assert schedulers[0].proc.poll() is None, schedulers[0].output()


def test_only_the_leader_schedules(served: Served, schedulers: list[Scheduler]) -> None:
    _apply(served, *NODES, *CLASSES)
    args = ("--leader-elect", "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.5")
    first, second = Scheduler(served, *args), Scheduler(served, *args)
    schedulers += [first, second]
    _apply(served, *[_pod(f"p-{i}", "100m", "low") for i in range(4)])
    _running(served, {f"p-{i}" for i in range(4)})
    lease = json.loads(served.kubectl("get", "lease", "kubesched", "-n", "kube-system", "-o", "json"))
    holder = lease["spec"]["holderIdentity"]
    leader = first if f"_{first.proc.pid}_" in holder else second
    follower = second if leader is first else first
    assert "scheduling pods of kubesched" in leader.output()
    assert "scheduling pods of" not in follower.output()
    leader.stop(signal.SIGKILL)  # no release: the follower takes over once the lease expires
    killed = time.monotonic()
    _apply(served, *[_pod(f"q-{i}", "100m", "low") for i in range(4)])
    _running(served, {f"q-{i}" for i in range(4)})
    assert time.monotonic() - killed < 3 + 10
    assert "scheduling pods of kubesched" in follower.output()
    scheduled = json.loads(served.kubectl("get", "events", "--field-selector", "reason=Scheduled", "-o", "json"))
    counts = Counter(e["involvedObject"]["name"] for e in scheduled["items"])
    assert len(counts) == 8 and max(counts.values()) == 1, counts


def test_metrics_and_health(served: Served, schedulers: list[Scheduler]) -> None:
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _apply(served, *NODES, *CLASSES)
    schedulers.append(Scheduler(served, "--host", "127.0.0.1", "--port", str(port)))
    _apply(served, _pod("fits", "1", "low"), _pod("too-big", "64", "low"))
    _running(served, {"fits"})

    def scrape() -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                return answer.read().decode()
        except OSError:
            return ""

    def counted() -> str | None:
        text = scrape()
        ok = 'scheduler_schedule_attempts_total{profile="kubesched",result="scheduled"} 1.0' in text and \
            'scheduler_schedule_attempts_total{profile="kubesched",result="unschedulable"}' in text and \
            'scheduler_pending_pods{queue="unschedulable"} 1.0' in text
        return text if ok else None

    wait_for(counted, what="the attempts counted")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        assert answer.read() == b"ok"
