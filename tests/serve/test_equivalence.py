"""The same scenario through `simulate` and through `serve` (each object applied with kubectl at
the same virtual time, the clock moved with `kubesched advance`) ends in the same placements:
one engine, two clocks."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import yaml

from tests.serve.harness import KUBESCHED, Served


def _deployment(name: str, replicas: int, cpu: str, priority: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"priorityClassName": priority, "terminationGracePeriodSeconds": 0,
                                           "containers": [{"name": "c", "image": "busybox",
                                                           "resources": {"requests": {"cpu": cpu}}}]}}}}


NODES = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname": f"node-{n}",
                                                      "topology.kubernetes.io/zone": f"z{i % 2}"}},
          "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                     "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}} for i, n in enumerate("abc")]
CLASSES = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": v}
           for name, v in (("high", 1000), ("low", 10))]
# (virtual seconds, object): one object per instant, so both runs see the same order of events.
TIMELINE = [
    (10, _deployment("batch", 6, "1", "low")),
    (20, _deployment("web", 3, "1", "high")),
    (30, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
          "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}}}),
    (60, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "urgent", "namespace": "default"},
          "spec": {"priorityClassName": "high", "containers": [{"name": "c", "image": "busybox",
                                                                "resources": {"requests": {"cpu": "3"}}}]}}),
    (120, _deployment("late", 2, "2", "low")),
]
END = 300


def _owner_of(name: str) -> str:
    """A Deployment's pod `web-5d4c9-x2kq4` -> `web`; a bare pod keeps its name."""
    parts = name.split("-")
    return "-".join(parts[:-2]) if len(parts) >= 3 else name


def _placements(pods: list[tuple[str, str | None]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for name, node in pods:
        out[_owner_of(name)].append(node or "<pending>")
    return {k: sorted(v) for k, v in sorted(out.items())}


def test_simulate_and_serve_place_pods_alike(tmp_path: Path) -> None:
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "same"},
                "spec": {"until": f"{END}s", "events": [{"at": f"{at}s", "create": obj} for at, obj in TIMELINE]}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([*NODES, *CLASSES, scenario]))
    run = subprocess.run([*KUBESCHED, "simulate", str(path), "-o", "json"], capture_output=True, text=True,
                         check=True)
    simulated = _placements([(p["name"], p["nodeName"]) for p in json.loads(run.stdout)["pods"]
                             if not p["deleted"]])

    served = Served(tmp_path, ["--speed", "0"]).start()
    try:
        served.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([*NODES, *CLASSES]))
        now = 0
        for at, obj in TIMELINE:
            _advance(served, at - now)
            now = at
            served.kubectl("create", "-f", "-", input=yaml.safe_dump(obj))
        _advance(served, END - now)
        pods = json.loads(served.kubectl("get", "pods", "-o", "json"))["items"]
    finally:
        served.kill()
    live = _placements([(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods])
    assert live == simulated
    # The scenario did what it is for: a preemption, and pods left pending.
    assert "urgent" in live and live["urgent"] != ["<pending>"]
    assert "<pending>" in live["late"] or "<pending>" in live["batch"]


def _advance(served: Served, seconds: int) -> None:
    if seconds > 0:
        subprocess.run([*KUBESCHED, "advance", f"{seconds}s", "--kubeconfig", served.kubeconfig], check=True,
                       capture_output=True)
