"""`kubesched simulate` on what real clusters and real bundles hold, as a user runs it: what the API
server takes runs (exit 0), what kubectl or the API server refuses is bad input (exit 2, one line
per problem). The inputs under tests/inputs are shaped as kube-prometheus' `manifests/` and a
`kubectl get ... -A -o yaml` export are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

INPUTS = Path(__file__).parent / "inputs"


def simulate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_kube_prometheus_manifests_run(tmp_path: Path) -> None:
    proc = simulate(tmp_path, str(INPUTS / "kube-prometheus"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    kept = " ".join(proc.stdout.split())
    for count in ("3 ClusterRole", "3 Role", "2 ServiceMonitor", "1 CustomResourceDefinition", "1 Prometheus,",
                  "1 NetworkPolicy", "1 APIService"):
        assert count in kept, (count, proc.stdout)


def test_an_rbac_heavy_export_runs(tmp_path: Path) -> None:
    """`system:` ClusterRoles and Roles, kube-root-ca.crt and the default ServiceAccount in every
    namespace, Leases named after their nodes: all as the cluster holds them."""
    proc = simulate(tmp_path, str(INPUTS / "rbac-export.yaml"), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert '"ConfigMap": 5' in proc.stdout and '"ServiceAccount": 5' in proc.stdout and '"ClusterRole": 7' in proc.stdout


def test_unknown_kinds_and_removed_versions_exit_2(tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text(
        "apiVersion: v1\nkind: Gizmo\nmetadata: {name: g}\n---\n"
        "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: web}\n---\n"
        "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: web}\n---\n"
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n---\n"
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a/b}\n")
    proc = simulate(tmp_path, "in.yaml")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        'in.yaml doc 1: no matches for kind "Gizmo" in version "v1"',
        'in.yaml doc 2: no matches for kind "Deploymnet" in version "apps/v1"',
        'in.yaml doc 3: no matches for kind "Ingress" in version "extensions/v1beta1" (removed in v1.22; '
        'expected "networking.k8s.io/v1")',
        'in.yaml doc 4: apiVersion: no kind "KubeSchedulerConfiguration" in version '
        '"kubescheduler.config.k8s.io/v1beta3" (expected "kubescheduler.config.k8s.io/v1")',
        "in.yaml doc 6: metadata.name: Invalid value: \"a/b\": may not contain '/'",
    ]


def test_a_node_without_resources_is_warned_about(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: bare}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: sized}\nstatus: {allocatable: {cpu: '2', memory: 4Gi}}\n")
    proc = simulate(tmp_path, "nodes.yaml", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        'warning: nodes.yaml doc 1: status: Node "bare" has neither allocatable nor capacity: it offers 0 cpu '
        "and 0 memory to pods"]
    assert simulate(tmp_path, "nodes.yaml", "--strict").returncode == 2
