"""`kubesched compare`: one input under several KubeSchedulerConfigurations, and what differs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.commands.cli import main
from kubesched.sim.compare import labels

EXAMPLE = Path(__file__).parent.parent / "examples" / "compare"
CLUSTER = str(EXAMPLE / "cluster")
MOST = str(EXAMPLE / "configs" / "most-allocated.yaml")
LEAST = str(EXAMPLE / "configs" / "least-allocated.yaml")


def _compare(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["compare", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def _json(*args: str) -> dict[str, Any]:
    code, out, err = _compare(*args, "-o", "json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return _json(CLUSTER, "--config", MOST, "--config", LEAST)


def test_most_allocated_packs_where_least_allocated_spreads(example: dict[str, Any]) -> None:
    most, least = example["runs"]
    assert (most["label"], least["label"]) == ("most-allocated.yaml", "least-allocated.yaml")
    assert most["nodesUsed"] < least["nodesUsed"] == least["nodes"] == 8
    # Packing loads some nodes fully and leaves others empty: a wider spread of utilisation.
    assert most["utilisation"]["cpu"]["stddev"] > least["utilisation"]["cpu"]["stddev"] + 0.1
    placed = {e["pod"]: e["runs"] for e in example["placedDifferently"]}
    assert len(placed) >= 10
    for runs in placed.values():
        assert runs["most-allocated.yaml"]["nodeName"] != runs["least-allocated.yaml"]["nodeName"] or (
            runs["most-allocated.yaml"]["deleted"] != runs["least-allocated.yaml"]["deleted"])


def test_the_big_pod_is_pending_and_the_critical_one_preempts_only_when_spread(example: dict[str, Any]) -> None:
    most, least = example["runs"]
    [train] = example["pendingDiffers"]
    assert train["pod"] == "default/train"
    assert train["runs"]["most-allocated.yaml"]["nodeName"] is not None
    assert train["runs"]["least-allocated.yaml"]["nodeName"] is None
    assert "8 Insufficient cpu" in train["runs"]["least-allocated.yaml"]["message"]
    assert (most["pending"], least["pending"]) == (0, 1)
    assert most["preemptions"] == []
    [preemption] = least["preemptions"]
    assert preemption["preemptor"] == "default/checkout" and preemption["victims"]
    victim = example_outcome(example, preemption["victims"][0])
    assert victim["least-allocated.yaml"]["reason"] == "Preempted"
    assert victim["most-allocated.yaml"]["deleted"] is False


def example_outcome(data: dict[str, Any], pod: str) -> dict[str, Any]:
    return next(e["runs"] for e in data["placedDifferently"] + data["pendingDiffers"] if e["pod"] == pod)


def test_table_shows_the_summary_and_each_difference() -> None:
    code, out, _ = _compare(CLUSTER, "--config", MOST, "--config", LEAST)
    assert code == 0
    assert "Placed differently: " in out and "Pending under some configurations only: 1 pod(s)" in out
    row = next(line for line in out.splitlines() if "default/train " in line)
    assert "pending: 0/8 nodes are available" in row
    assert "nodes used" in out and "7 of 8" in out and "8 of 8" in out
    assert "cpu utilisation (mean ± sd)" in out and "memory fragmentation" in out
    preemption = next(line for line in out.splitlines() if "default/checkout (1000)" in line)
    assert "least-allocated.yaml" in preemption and "default/worker-" in preemption


def test_three_configurations_and_a_repeated_one_behaves_the_same(tmp_path: Path) -> None:
    """A third configuration is one more column; a copy of the first (same file name, so labelled
    by its path) runs exactly as the first: the runs share nothing but the input."""
    copy = tmp_path / "most-allocated.yaml"
    shutil.copy(MOST, copy)
    data = _json(CLUSTER, "--config", MOST, "--config", LEAST, "--config", str(copy))
    labels = [r["label"] for r in data["runs"]]
    assert labels == [MOST, "least-allocated.yaml", str(copy)]
    first, _, again = data["runs"]
    assert {k: v for k, v in first.items() if k not in ("label", "config")} == \
        {k: v for k, v in again.items() if k not in ("label", "config")}
    assert data["placedDifferently"]
    for entry in data["placedDifferently"] + data["pendingDiffers"]:
        assert set(entry["runs"]) == set(labels)
        assert entry["runs"][MOST] == entry["runs"][str(copy)]


def test_runs_are_labelled_by_file_name_unless_names_clash() -> None:
    assert labels(["a/x.yaml", "b/x.yaml", "y.yaml", "y.yaml", "z.yaml"]) == \
        ["a/x.yaml", "b/x.yaml", "y.yaml #1", "y.yaml #2", "z.yaml"]


def test_fragmentation_is_the_share_of_free_room_the_workload_cannot_use(tmp_path: Path) -> None:
    """Two 4-cpu/8Gi nodes, a 3-cpu/2Gi pod and a 1-cpu/1Gi pod. Packed, both share node a (cpu
    full): the free cpu is all on b, where either pod fits (0 %), and a's 5Gi of free memory is
    useless to both (5 of 13Gi). Spread, a 1-cpu remnant is too small for the big pod: it strands
    1 of 4 free cpu and 6 of 13Gi for half of the pods."""
    (tmp_path / "cluster.yaml").write_text("""
apiVersion: v1
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: big}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 2Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
""")
    data = _json(str(tmp_path / "cluster.yaml"), "--config", MOST, "--config", LEAST)
    most, least = data["runs"]
    assert most["fragmentation"]["cpu"] == {"free": "4", "fragmented": 0.0, "largestFree": "4",
                                            "largestFreeNode": "b"}
    assert most["fragmentation"]["memory"]["fragmented"] == round(5 / 13, 4)
    assert least["fragmentation"]["cpu"]["fragmented"] == round(1 / 8, 4)
    assert least["fragmentation"]["memory"]["fragmented"] == round(6 / 26, 4)
    assert (most["nodesUsed"], least["nodesUsed"]) == (1, 2)
    assert most["utilisation"]["cpu"] == {"mean": 0.5, "stddev": 0.5, "nodes": 2}
    assert least["utilisation"]["cpu"] == {"mean": 0.5, "stddev": 0.25, "nodes": 2}


def test_bad_configurations_exit_2_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(MOST).read_text().replace("MostAllocated", "Packed"))
    code, out, err = _compare(CLUSTER, "--config", MOST, "--config", str(bad))
    assert code == 2 and out == ""
    assert f"{bad} doc 1: profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type: Unsupported value: " \
        '"Packed"' in err
    node = tmp_path / "node.yaml"
    node.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: x}\n")
    code, _, err = _compare(CLUSTER, "--config", MOST, "--config", str(node), "--config", str(tmp_path / "none.yaml"))
    assert code == 2
    assert f"{node}: no KubeSchedulerConfiguration (apiVersion kubescheduler.config.k8s.io/v1) in it" in err
    assert f"{tmp_path / 'none.yaml'}: no such file or directory" in err
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(Path(LEAST).read_text() + "---\n" + node.read_text())
    code, _, err = _compare(CLUSTER, "--config", MOST, "--config", str(mixed))
    assert code == 2 and "holds KubeSchedulerConfiguration documents only" in err
    code, _, err = _compare(CLUSTER, "--config", MOST)
    assert code == 2 and "give at least two configurations" in err


def test_report_holds_every_run(tmp_path: Path) -> None:
    report = tmp_path / "compare.html"
    code, _, err = _compare(CLUSTER, "--config", MOST, "--config", LEAST, "--report", str(report))
    assert code == 0, err
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "most-allocated.yaml" in page and "least-allocated.yaml" in page
    assert "1 pending under some configurations only" in page


GPU_CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 2}}]}}}
"""


def test_device_fragmentation_counts_free_gpus_no_pod_of_the_workload_can_use(tmp_path: Path) -> None:
    """Two nodes of two GPUs; two one-GPU pods spread (least allocated) leave one GPU free on each,
    which the two-GPU pod cannot use: all the free GPUs are fragmented. Packed, the two free GPUs
    are on one node and the big pod runs there."""
    docs = [GPU_CLUSTER]
    for n in ("n1", "n2"):
        docs.append(f"""apiVersion: v1
kind: Node
metadata: {{name: {n}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {n}-gpu}}
spec:
  driver: gpu.example.com
  nodeName: {n}
  pool: {{name: {n}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}, {{name: gpu-1}}]""")
    for i, (template, cpu) in enumerate((("one", "1"), ("one", "1"), ("two", "100m"))):
        docs.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: p{i}, creationTimestamp: "2025-01-01T00:00:0{i + 1}Z"}}
spec:
  containers: [{{name: c, image: app, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: {template}}}]""")
    (tmp_path / "cluster.yaml").write_text("\n---\n".join(docs))
    least, most = _json(str(tmp_path / "cluster.yaml"), "--config", LEAST, "--config", MOST)["runs"]
    assert least["devices"] == {"gpu.example.com": {"published": 4, "allocated": 2, "free": 2, "fragmented": 1.0}}
    assert least["pending"] == 1
    assert most["devices"] == {"gpu.example.com": {"published": 4, "allocated": 4, "free": 0, "fragmented": 0.0}}
    assert most["pending"] == 0
