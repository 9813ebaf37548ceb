"""A troubleshoot support bundle's cluster-resources/ read as a whole, as a user runs it: the
objects load (typed Lists, items without kind), and each file that holds no Kubernetes object
(API discovery, RBAC self-review, error lists) is skipped with one warning naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

BUNDLE = Path(__file__).parent / "bundles" / "k3s"
SKIPPED = {
    "auth-cani-list/default.json": "a list of 2 mappings",
    "auth-cani-list/kube-system.json": "a list of 2 mappings",
    "auth-cani-list/shop.json": "a list of 2 mappings",
    "groups-resources-errors.json": "a list of 1 string",
    "groups.json": "a list of 3 mappings",
    "image-pull-secrets/shop/ghcr-credentials.json": "a mapping without apiVersion and kind",
    "pod-disruption-budgets-errors.json": "a list of 1 string",
    "resources.json": "a list of 2 mappings",
}


def simulate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    return subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cluster_resources_of_a_support_bundle_run(tmp_path: Path) -> None:
    shutil.copytree(BUNDLE, tmp_path / "bundle")
    proc = simulate(tmp_path, "bundle/cluster-resources/", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"warning: {os.path.join('bundle/cluster-resources/', name)}: skipped: holds no Kubernetes object ({what})"
        for name, what in SKIPPED.items()]
    pods = {f"{p['namespace']}/{p['name']}": p for p in json.loads(proc.stdout)["pods"]}
    # pods/shop.json is a PodList whose items have no kind: they are Pods, as kubectl reads them
    assert {name: (p["nodeName"], p["phase"]) for name, p in pods.items() if name.startswith("shop/")} == {
        "shop/web-7d9c8b6f4-b8k2q": ("k3s-agent-1", "Running"),
        "shop/web-7d9c8b6f4-m4x7n": ("k3s-server-0", "Running"),
    }
    assert len(pods) == 6  # the Deployment's ReplicaSet is in the bundle: no pod is made twice


def test_strict_makes_each_skipped_file_an_error(tmp_path: Path) -> None:
    shutil.copytree(BUNDLE, tmp_path / "bundle")
    proc = simulate(tmp_path, "--strict", "bundle/cluster-resources")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        f"{os.path.join('bundle/cluster-resources', name)}: skipped: holds no Kubernetes object ({what})"
        for name, what in SKIPPED.items()]


def test_a_file_with_objects_and_a_problem_is_still_bad_input(tmp_path: Path) -> None:
    shutil.copytree(BUNDLE, tmp_path / "bundle")
    pods = tmp_path / "bundle/cluster-resources/pods/kube-system.json"
    pods.write_text(json.dumps({**json.loads(pods.read_text()), "items": 3}, indent=2))
    broken = tmp_path / "bundle/cluster-resources/services/kube-system.json"
    broken.write_text(broken.read_text()[:-2])
    proc = simulate(tmp_path, "bundle/cluster-resources")
    assert (proc.returncode, proc.stdout) == (2, "")
    problems = [line for line in proc.stderr.splitlines() if not line.startswith("warning: ")]
    assert problems[0] == "bundle/cluster-resources/pods/kube-system.json doc 1: items: expected a list, got integer"
    assert problems[1].startswith("bundle/cluster-resources/services/kube-system.json doc 1: JSON syntax error at line ")
    assert len(problems) == 2


def test_a_file_named_on_the_command_line_is_never_skipped(tmp_path: Path) -> None:
    shutil.copytree(BUNDLE, tmp_path / "bundle")
    proc = simulate(tmp_path, "bundle/cluster-resources/nodes.json", "bundle/cluster-resources/groups.json")
    assert (proc.returncode, proc.stderr) == (
        2, "bundle/cluster-resources/groups.json doc 1: expected a mapping (a Kubernetes object), got list\n")


def test_empty_input_names_the_empty_file_or_directory(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("---\n# nothing yet\n---\n")
    (tmp_path / "bundle/cluster-resources").mkdir(parents=True)
    (tmp_path / "bundle/cluster-resources/pods-errors.json").write_text("")
    (tmp_path / "bundle/cluster-resources/groups.json").write_text('[{"name": "apps"}]')
    proc = simulate(tmp_path, "empty.yaml", "bundle/cluster-resources")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        "empty.yaml: no objects in this file (kubectl: no objects passed)",
        "bundle/cluster-resources: no objects in this directory (kubectl: no objects passed); "
        "1 file skipped, holding no Kubernetes object",
    ]
