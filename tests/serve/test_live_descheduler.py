"""`kubesched descheduler` as its own process against `kubesched serve`: it evicts through the
Eviction API, a budget's 429 is respected, and `--dry-run` changes nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from tests.serve.harness import KUBESCHED, Served, wait_for

NODES = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname": f"node-{n}"}},
          "spec": {"unschedulable": n != "a"},
          "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                     "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}} for n in "abc"]
WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx",
                                                      "resources": {"requests": {"cpu": "500m"}}}]}}}}
POLICY = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
          "profiles": [{"name": "spread", "pluginConfig": [{"name": "DefaultEvictor"}, {"name": "RemoveDuplicates"}],
                        "plugins": {"balance": {"enabled": ["RemoveDuplicates"]}}}]}


def _setup(served: Served, tmp: Path, min_available: int | None) -> Path:
    """Three replicas on node-a (the others cordoned while they were placed), then uncordoned."""
    served.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([*NODES, WEB]))
    wait_for(lambda: _nodes(served) == ["node-a"] * 3, what="three pods on node-a")
    if min_available is not None:
        served.kubectl("apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}}}))
        wait_for(lambda: "3" in served.kubectl("get", "pdb", "web", "-o", "jsonpath={.status.currentHealthy}"),
                 what="the budget's status")
    for n in "bc":
        served.kubectl("uncordon", f"node-{n}")
    policy = tmp / "policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    return policy


def _nodes(served: Served) -> list[str]:
    pods = json.loads(served.kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    return sorted(p["spec"].get("nodeName") or "" for p in pods if not p["metadata"].get("deletionTimestamp")
                  and (p.get("status") or {}).get("phase") == "Running")


def _descheduler(served: Served, policy: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KUBESCHED, "descheduler", "--kubeconfig", served.kubeconfig, "--policy", str(policy),
                           *args], capture_output=True, text=True, timeout=120)


def test_descheduler_evicts_duplicates(served: Served, tmp_path: Path) -> None:
    policy = _setup(served, tmp_path, None)
    run = _descheduler(served, policy)
    assert run.returncode == 0, run.stderr
    assert "pass 1: 2 evicted" in run.stderr
    wait_for(lambda: _nodes(served) == ["node-a", "node-b", "node-c"], what="the replicas spread")
    # The descheduler's own events, as sigs.k8s.io/descheduler words them.
    events = json.loads(served.kubectl("get", "events.events.k8s.io", "-o", "json"))["items"]
    notes = [e["note"] for e in events if e.get("reportingController") == "descheduler"]
    assert len(notes) == 2 and all(n == "pod evicted from node-a node by sigs.k8s.io/descheduler" for n in notes)


def test_a_budget_refusal_is_respected(served: Served, tmp_path: Path) -> None:
    policy = _setup(served, tmp_path, 3)
    run = _descheduler(served, policy)
    assert run.returncode == 0, run.stderr
    assert "pass 1: 0 evicted" in run.stderr
    assert "Refused" in run.stderr and "disruption budget" in run.stderr
    assert _nodes(served) == ["node-a"] * 3


def test_dry_run_changes_nothing(served: Served, tmp_path: Path) -> None:
    policy = _setup(served, tmp_path, None)
    before = json.loads(served.kubectl("get", "pods", "-o", "json"))["items"]
    run = _descheduler(served, policy, "--dry-run", "-o", "json")
    assert run.returncode == 0, run.stderr
    plan = json.loads(run.stdout)
    assert len([a for a in plan["plan"] if a["result"] == "Evicted"]) == 2
    after = json.loads(served.kubectl("get", "pods", "-o", "json"))["items"]
    assert [p["metadata"]["resourceVersion"] for p in after] == [p["metadata"]["resourceVersion"] for p in before]
