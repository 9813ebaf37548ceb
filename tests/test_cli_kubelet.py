"""`kubesched simulate` with a KubeletConfiguration, as a user runs it: a real subprocess on real files.

Eviction settings the kubelet would refuse to start with are bad input: exit 2, one stderr line per
problem naming file, document and field, nothing simulated. Good settings change what happens.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
NODE = ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {capacity: {memory: 4Gi}, allocatable: {cpu: '4', memory: 3900Mi, pods: '110'}}\n")
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: hog, annotations: {sim.kubesched.io/usage-memory: 3Gi}}\n"
       "spec: {nodeName: n1, containers: [{name: c, image: app}]}\n")


def simulate(cwd: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (cwd / "in.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", "in.yaml", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def bad(cwd: Path, config: str) -> list[str]:
    proc = simulate(cwd, KUBELET + config)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    return proc.stderr.splitlines()


def test_each_bad_eviction_setting_is_reported_with_its_field(tmp_path: Path) -> None:
    lines = bad(tmp_path, "evictionHard: {memory.available: '-1Gi', nodefs.available: '120%', disk.available: 1Gi,"
                          " imagefs.available: 1x}\n"
                          "evictionSoft: {memory.available: 1Gi, pid.available: '10%'}\n"
                          "evictionSoftGracePeriod: {memory.available: '90'}\n"
                          "evictionMinimumReclaim: {nodefs.available: '-1Gi'}\n"
                          "evictionPressureTransitionPeriod: 5 minutes\n")
    assert lines == [
        "in.yaml doc 1: evictionHard.memory.available: eviction threshold memory.available must be positive: -1Gi",
        "in.yaml doc 1: evictionHard.nodefs.available: eviction percentage threshold nodefs.available must be "
        "<= 100%: 120%",
        "in.yaml doc 1: evictionHard.disk.available: unsupported eviction signal disk.available",
        'in.yaml doc 1: evictionHard.imagefs.available: "1x" is not a quantity',
        'in.yaml doc 1: evictionSoftGracePeriod.memory.available: "90" is not a duration',
        "in.yaml doc 1: evictionMinimumReclaim.nodefs.available: negative eviction minimum reclaim specified for "
        "nodefs.available",
        "in.yaml doc 1: evictionSoftGracePeriod.pid.available: grace period must be specified for the soft eviction "
        "threshold pid.available",
        'in.yaml doc 1: evictionPressureTransitionPeriod: "5 minutes" is not a duration',
    ]


def test_wrong_types_and_options(tmp_path: Path) -> None:
    assert bad(tmp_path, "evictionHard: {memory.available: 100}\n") == [
        "in.yaml doc 1: evictionHard.memory.available: expected a string, got integer"]
    [line] = bad(tmp_path, "enforceNodeAllocatable: [pods, everything]\n")
    assert line.startswith('in.yaml doc 1: enforceNodeAllocatable: invalid option "everything" specified for '
                           'EnforceNodeAllocatable setting. Valid options are "pods", '), line
    [line] = bad(tmp_path, "evictionSoft: {memory.available: '1.5.0%'}\nevictionSoftGracePeriod: {memory.available: 1m}\n")
    assert line == 'in.yaml doc 1: evictionSoft.memory.available: strconv.ParseFloat: parsing "1.5.0": invalid syntax'


def test_bad_usage_event_keys(tmp_path: Path) -> None:
    proc = simulate(tmp_path, NODE + "---\n" + POD + "---\napiVersion: kubesched.io/v1alpha1\nkind: Scenario\n"
                    "metadata: {name: s}\nspec:\n  events:\n  - {at: 1s, usage: {name: hog, gpu: '1', pids: '-1'}}\n")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        'in.yaml doc 3: spec.events[0].usage.gpu: unknown field "gpu" (a usage event has namespace, name, container '
        "and amounts of cpu, memory, ephemeral-storage, inodes, pids, writable-layer, writable-layer-inodes)",
        'in.yaml doc 3: spec.events[0].usage.pids: Invalid value: "-1": must be greater than or equal to 0',
    ]


def test_configuration_changes_what_the_kubelet_does(tmp_path: Path) -> None:
    """3Gi of the node's 4Gi used: nothing happens under the default thresholds; a hard
    memory.available<1500Mi (replacing the default thresholds) brings MemoryPressure and an eviction."""
    def run(config: str) -> dict:
        proc = simulate(tmp_path, KUBELET + config + "---\n" + NODE + "---\n" + POD, "--output", "json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    quiet = run("evictionMaxPodGracePeriod: 0\n")
    assert [p["phase"] for p in quiet["pods"]] == ["Running"]
    pressed = run("evictionHard: {memory.available: 1500Mi}\n")
    [pod] = pressed["pods"]
    assert pod["phase"] == "Failed" and pod["reason"] == "Evicted"
    assert any(e["reason"] == "NodeHasInsufficientMemory" for e in pressed["events"])
