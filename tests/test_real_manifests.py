"""Public manifests as their users apply them: ingress-nginx's `deploy.yaml` (a trimmed copy of
controller v1.12's static manifest: RBAC, a ConfigMap with `data: null`, Services, the controller
Deployment, the admission webhook's certificate Jobs, an IngressClass and the webhook itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DEPLOY = Path(__file__).parent / "manifests" / "ingress-nginx" / "deploy.yaml"
NODE = """apiVersion: v1
kind: Node
metadata:
  name: kind-control-plane
  labels: {kubernetes.io/hostname: kind-control-plane, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110", ephemeral-storage: 100Gi}
  capacity: {cpu: "4", memory: 8Gi, pods: "110", ephemeral-storage: 100Gi}
  conditions: [{type: Ready, status: "True"}]
"""


def simulate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    return subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_ingress_nginx_deploy_yaml_runs_on_a_node(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(NODE)
    proc = simulate(tmp_path, "node.yaml", str(DEPLOY), "-o", "json")
    assert (proc.returncode, proc.stderr) == (0, "")
    result = json.loads(proc.stdout)
    pods = {p["name"].rsplit("-", 1)[0]: p for p in result["pods"]}
    assert set(pods) == {"ingress-nginx-admission-create", "ingress-nginx-admission-patch",
                         next(name for name in pods if name.startswith("ingress-nginx-controller-"))}
    assert {p["nodeName"] for p in pods.values()} == {"kind-control-plane"}
    assert result["storedOnly"] == {"ClusterRole": 2, "ClusterRoleBinding": 2, "ConfigMap": 1, "IngressClass": 1, "Role": 2,
                                    "RoleBinding": 2, "Service": 2, "ServiceAccount": 2,
                                    "ValidatingWebhookConfiguration": 1}


def test_ingress_nginx_deploy_yaml_alone_runs(tmp_path: Path) -> None:
    """Applied before any node exists: its pods wait, and the run still ends cleanly."""
    proc = simulate(tmp_path, str(DEPLOY), "-o", "json")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert len(json.loads(proc.stdout)["pods"]) == 3


def test_kube_prometheus_crd_with_a_plain_equals_sign_runs(tmp_path: Path) -> None:
    """The Prometheus operator's CRDs list the matcher `=` unquoted; go-yaml reads it as a string."""
    proc = simulate(tmp_path, str(DEPLOY.parent.parent / "kube-prometheus"), "-o", "json")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert json.loads(proc.stdout)["storedOnly"] == {"CustomResourceDefinition": 1}
