"""Names are never cut in any command's table, piped or not (issue 25): piped output is as wide as
its widest row, so `| grep` and `| awk` read whole names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# A pod name of a real ReplicaSet: long enough to be cut at 80 columns.
LONG = "checkout-frontend-canary-7d9f8b6c5-x2x9q"
CLUSTER = f"""\
apiVersion: v1
kind: Node
metadata: {{name: ip-10-0-12-34.eu-west-1.compute.internal}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: ip-10-0-56-78.eu-west-1.compute.internal, creationTimestamp: "2026-01-01T00:00:00Z"}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: {LONG}
  namespace: shop-production
  creationTimestamp: "2025-12-01T00:00:00Z"
  annotations: {{descheduler.alpha.kubernetes.io/evict: "true"}}
spec:
  nodeName: ip-10-0-12-34.eu-west-1.compute.internal
  containers: [{{name: app, image: shop/frontend:1.2.3, resources: {{requests: {{cpu: "3", memory: 1Gi}}}}}}]
status: {{phase: Running, startTime: "2025-12-01T00:00:00Z"}}
"""
POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: lifetime
  pluginConfig:
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 86400}
  plugins:
    deschedule: {enabled: [PodLifeTime]}
"""


def _run(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "kubesched.commands.cli", *args], capture_output=True, text=True,
                          timeout=120, env={"COLUMNS": "60", "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_piped_tables_keep_whole_names(tmp_path: Path) -> None:
    cluster, policy = tmp_path / "cluster.yaml", tmp_path / "policy.yaml"
    cluster.write_text(CLUSTER)
    policy.write_text(POLICY)
    planned = _run("deschedule", str(cluster), "--policy", str(policy))
    assert f"shop-production/{LONG}" in planned
    assert "…" not in planned
    simulated = _run("simulate", str(cluster))
    assert LONG in simulated and "ip-10-0-12-34.eu-west-1.compute.internal" in simulated
    assert "…" not in simulated
