"""`kubesched trace alibaba-gpu`: the Alibaba GPU trace (Weng et al., ATC'23) as a scenario, and
what its replay does with GPU shares, GPU models, lifetimes and QoS classes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.commands.cli import main

TRACE = Path(__file__).resolve().parents[2] / "shared" / "data" / "alibaba-gpu-v2023"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
              "scheduled_time\n")
NODES = NODE_HEADER + "cpu-0,32000,262144,0,\nt4-0,64000,262144,1,T4\nv100-0,8000,32768,1,V100M16\n"
# Two half-GPU shares and a whole GPU asking for the T4 node's one GPU; a pod that may only run on
# a V100; a CPU pod; a pod the trace never scheduled (deleted at 500 s); one that Failed after
# 100 s; one still running when the trace ends (at 1000 s).
PODS = POD_HEADER + """\
share-a,4000,8192,1,500,T4,LS,Running,0,300,0
share-b,4000,8192,1,500,T4,BE,Succeeded,10,400,10
whole,4000,8192,1,1000,T4,BE,Running,20,1000,20
v100,1000,1024,1,1000,V100M16,Burstable,Running,30,900,30
cpu,2000,4096,0,0,,Guaranteed,Succeeded,40,240,40
never,1000,1024,0,0,,BE,Pending,50,500,
failed,1000,1024,0,0,,LS,Failed,60,160,60
"""


def write_trace(tmp_path: Path, pods: str = PODS, name: str = "default") -> Path:
    (tmp_path / "openb_node_list_all_node.csv").write_text(NODES)
    (tmp_path / f"openb_pod_list_{name}.csv").write_text(pods)
    return tmp_path


def convert(directory: Path, out: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    result = CliRunner().invoke(main, ["trace", "alibaba-gpu", str(directory), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    objs = json.loads(text)["items"] if out.suffix == ".json" else list(yaml.safe_load_all(text))
    return objs, result.output


def replay(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", str(path), "--output", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def test_objects_carry_resources_models_classes_and_lifetimes(tmp_path: Path) -> None:
    objs, out = convert(write_trace(tmp_path), tmp_path / "s.yaml")
    nodes, pods = by_kind(objs, "Node"), by_kind(objs, "Pod")
    assert nodes["t4-0"]["status"]["allocatable"] == {
        "cpu": "64000m", "memory": "262144Mi", "pods": "110", "nvidia.com/gpu": "1", "kubesched.io/gpu-milli": "1000"}
    assert nodes["t4-0"]["metadata"]["labels"]["nvidia.com/gpu.product"] == "T4"
    assert "nvidia.com/gpu" not in nodes["cpu-0"]["status"]["allocatable"]
    # A share asks for milli-GPUs only; a whole GPU for both the device and its 1000 milli-GPUs.
    share = pods["share-a"]["spec"]["containers"][0]["resources"]
    assert share["requests"] == {"cpu": "4000m", "memory": "8192Mi", "kubesched.io/gpu-milli": "500"}
    assert share["limits"] == {"kubesched.io/gpu-milli": "500"}
    assert pods["whole"]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "1", "kubesched.io/gpu-milli": "1000"}
    assert pods["v100"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["V100M16"]}]}]}
    assert "affinity" not in pods["cpu"]["spec"]
    classes = by_kind(objs, "PriorityClass")
    assert {n: (c["value"], c["preemptionPolicy"]) for n, c in classes.items()} == {
        "alibaba-ls": (9000, "Never"), "alibaba-guaranteed": (9000, "Never"),
        "alibaba-burstable": (7000, "Never"), "alibaba-be": (5000, "Never")}
    assert pods["share-b"]["spec"]["priorityClassName"] == "alibaba-be"
    # Creation times count from the stated epoch; durations are deletion minus scheduled times.
    assert pods["whole"]["metadata"]["creationTimestamp"] == "2023-01-01T00:00:20Z"
    assert pods["share-b"]["metadata"]["annotations"] == {"sim.kubesched.io/duration": "390s"}
    assert pods["failed"]["metadata"]["annotations"] == {
        "sim.kubesched.io/duration": "100s", "sim.kubesched.io/exit-code": "1"}
    assert "annotations" not in pods["whole"]["metadata"]  # still running when the trace ends
    assert "annotations" not in pods["never"]["metadata"]
    [scenario] = by_kind(objs, "Scenario").values()
    assert scenario["spec"]["startTime"] == "2023-01-01T00:00:00Z"
    assert scenario["spec"]["events"] == [{"at": "500s", "delete": {"kind": "Pod", "namespace": "default",
                                                                     "name": "never"}}]
    # What the scenario cannot say is printed, written as a comment and kept on the Scenario.
    assert "2 pods ask for part of one GPU" in out and "per-GPU fragmentation" in out
    assert "# - GPU sharing: 2 pods ask for part of one GPU" in (tmp_path / "s.yaml").read_text()
    assert "per-GPU fragmentation" in scenario["metadata"]["annotations"]["kubesched.io/trace-notes"]


def test_replay_shares_a_gpu_keeps_models_and_ends_pods_as_the_trace_did(tmp_path: Path) -> None:
    _, _ = convert(write_trace(tmp_path), tmp_path / "s.json")
    data = replay(tmp_path / "s.json")
    pods = {p["name"]: p for p in data["pods"]}
    # The two halves share the T4 node's one GPU; the whole GPU then waits for both to end.
    assert pods["share-a"]["nodeName"] == pods["share-b"]["nodeName"] == "t4-0"
    assert pods["whole"]["nodeName"] == "t4-0"
    waits = [e for e in data["events"] if e["object"] == "Pod/default/whole" and e["reason"] == "FailedScheduling"]
    assert waits and "Insufficient kubesched.io/gpu-milli" in waits[0]["message"]
    started = next(e["time"] for e in data["events"] if e["object"] == "Pod/default/whole" and e["reason"] == "Scheduled")
    assert started == 400.0  # share-a ends at 0 + 300 s, share-b at 10 + 390 s
    # The V100 pod goes to the small V100 node, though the CPU node is far emptier.
    assert pods["v100"]["nodeName"] == "v100-0"
    assert (pods["failed"]["phase"], pods["cpu"]["phase"], pods["share-b"]["phase"]) == ("Failed", "Succeeded",
                                                                                         "Succeeded")
    assert pods["never"]["deleted"] and pods["never"]["reason"] == "Deleted"
    assert pods["whole"]["phase"] == "Running" and not pods["whole"]["deleted"]


def test_saturated_pods_never_end_and_higher_classes_preempt(tmp_path: Path) -> None:
    pods = POD_HEADER + "be-0,1000,1024,1,1000,,BE,Succeeded,0,10,0\nbe-1,1000,1024,1,1000,,BE,Failed,50,60,50\n" \
        "ls-0,1000,1024,1,1000,,LS,Succeeded,9000,9100,9000\n"
    objs, out = convert(write_trace(tmp_path, pods), tmp_path / "s.json", "--saturated", "--interval", "2")
    # Nothing ends; pods arrive in trace order, `--interval` seconds apart.
    assert [(p["metadata"]["creationTimestamp"], "annotations" in p["metadata"]) for p in by_kind(objs, "Pod").values()
            ] == [("2023-01-01T00:00:00Z", False), ("2023-01-01T00:00:02Z", False), ("2023-01-01T00:00:04Z", False)]
    assert {c["preemptionPolicy"] for c in by_kind(objs, "PriorityClass").values()} == {"PreemptLowerPriority"}
    assert "pods never end" in out
    # Two GPUs (T4 and V100), both taken by BE pods: the LS pod preempts one of them.
    data = replay(tmp_path / "s.json")
    result = {p["name"]: p for p in data["pods"]}
    assert result["ls-0"]["phase"] == "Running" and result["ls-0"]["nodeName"]
    assert [result[n]["reason"] for n in ("be-0", "be-1")].count("Preempted") == 1
    [p] = data["preemptions"]
    assert p["preemptor"] == "default/ls-0"


def test_gpuspec_variant_limit_and_pods_no_node_can_hold(tmp_path: Path) -> None:
    # A pod limited to the V100 node though it needs more CPU than that node has is deleted when
    # the trace deleted it, rather than retried for the rest of the trace.
    pods = POD_HEADER + "fits,1000,1024,0,0,,LS,Running,0,800,0\nbig,16000,1024,1,1000,V100M16,LS,Failed,5,50,5\n" \
        "late,1000,1024,0,0,,LS,Running,900,1000,900\n"
    objs, out = convert(write_trace(tmp_path, pods, "gpuspec33"), tmp_path / "s.yaml", "--pods", "gpuspec33",
                        "--limit", "2")
    assert sorted(by_kind(objs, "Pod")) == ["big", "fits"]
    # The trace ends at its last deletion (1000 s, by a pod past the limit): `fits` ended before.
    assert by_kind(objs, "Pod")["fits"]["metadata"]["annotations"] == {"sim.kubesched.io/duration": "800s"}
    [scenario] = by_kind(objs, "Scenario").values()
    assert scenario["metadata"]["name"] == "alibaba-gpu-gpuspec33"
    assert scenario["spec"]["events"] == [{"at": "50s", "delete": {"kind": "Pod", "namespace": "default",
                                                                    "name": "big"}}]
    assert "1 pods fit no node of their allowed GPU models even on an empty cluster (big)" in out


def test_bad_input_is_reported_not_a_traceback(tmp_path: Path) -> None:
    write_trace(tmp_path, POD_HEADER + "x,1000,1024,0,0,,Gold,Running,0,10,0\n")
    result = CliRunner().invoke(main, ["trace", "alibaba-gpu", str(tmp_path), "-o", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2 and "'Gold': expected one of LS, Guaranteed, Burstable, BE" in result.output
    result = CliRunner().invoke(main, ["trace", "alibaba-gpu", str(tmp_path), "--pods", "nope", "-o",
                                       str(tmp_path / "s.yaml")])
    assert result.exit_code == 2 and "openb_pod_list_nope.csv" in result.output
    result = CliRunner().invoke(main, ["trace", "alibaba-gpu", str(tmp_path), "--interval", "1", "-o",
                                       str(tmp_path / "s.yaml")])
    assert result.exit_code == 2 and "--interval: only with --saturated" in result.output
    result = CliRunner().invoke(main, ["trace", "alibaba-gpu", str(tmp_path), "--gpus", "mig", "-o",
                                       str(tmp_path / "s.yaml")])
    assert result.exit_code == 2 and "'mig' is not one of 'extended', 'dra', 'dra-shared'" in result.output


@pytest.mark.skipif(not TRACE.is_dir(), reason="the trace is not on this machine")
def test_the_real_trace_converts_and_its_first_pods_replay(tmp_path: Path) -> None:
    objs, out = convert(TRACE, tmp_path / "s.json", "--limit", "300")
    assert len(by_kind(objs, "Node")) == 1523 and len(by_kind(objs, "Pod")) == 300
    assert "ask for part of one GPU" in out
    data = replay(tmp_path / "s.json")
    assert not data["rejected"]
    assert all(p["nodeName"] or p["deleted"] for p in data["pods"])


def test_dra_publishes_gpus_as_devices_and_pods_claim_them(tmp_path: Path) -> None:
    objs, out = convert(write_trace(tmp_path), tmp_path / "s.yaml", "--gpus", "dra")
    nodes, pods = by_kind(objs, "Node"), by_kind(objs, "Pod")
    # No extended resource: the GPUs are devices in a slice of the node's own pool.
    assert nodes["t4-0"]["status"]["allocatable"] == {"cpu": "64000m", "memory": "262144Mi", "pods": "110"}
    assert nodes["t4-0"]["metadata"]["labels"]["nvidia.com/gpu.product"] == "T4"
    [cls] = by_kind(objs, "DeviceClass").values()
    assert cls["spec"] == {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}
    slices = {s["spec"]["nodeName"]: s["spec"] for s in by_kind(objs, "ResourceSlice").values()}
    assert sorted(slices) == ["t4-0", "v100-0"]  # the CPU node publishes nothing
    assert slices["t4-0"] == {"driver": "gpu.nvidia.com", "nodeName": "t4-0",
                              "pool": {"name": "t4-0", "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": "gpu-0", "attributes": {"index": {"int": 0},
                                                                            "model": {"string": "T4"}}}]}
    # A whole GPU and a share alike claim one device through the one template for one GPU.
    [template] = by_kind(objs, "ResourceClaimTemplate").values()
    assert template["metadata"]["name"] == "gpus-1" and template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]
    for name in ("whole", "share-a"):
        spec = pods[name]["spec"]
        assert spec["containers"][0]["resources"] == {
            "requests": {"cpu": "4000m", "memory": "8192Mi"}, "claims": [{"name": "gpus"}]}
        assert spec["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "gpus-1"}]
    assert "resourceClaims" not in pods["cpu"]["spec"]
    assert "a share takes a whole GPU" in out and "2 resource slices" in out


def test_dra_replay_gives_a_share_a_whole_gpu(tmp_path: Path) -> None:
    _, _ = convert(write_trace(tmp_path), tmp_path / "s.json", "--gpus", "dra")
    data = replay(tmp_path / "s.json")
    pods = {p["name"]: p for p in data["pods"]}
    assert pods["share-a"]["nodeName"] == pods["share-b"]["nodeName"] == pods["whole"]["nodeName"] == "t4-0"
    scheduled = {e["object"].rsplit("/", 1)[1]: e["time"] for e in data["events"] if e["reason"] == "Scheduled"}
    # Each half takes the T4 node's one device in turn: share-b waits for share-a (0 + 300 s),
    # the whole GPU for share-b (300 + 390 s).
    assert (scheduled["share-a"], scheduled["share-b"], scheduled["whole"]) == (0.0, 300.0, 690.0)
    waits = [e for e in data["events"] if e["object"] == "Pod/default/share-b" and e["reason"] == "FailedScheduling"]
    assert waits and "cannot allocate all claims" in waits[0]["message"]
    [claim] = [c for c in data["resourceClaims"] if c["pod"] == "default/whole"]
    assert [(d["pool"], d["device"]) for d in claim["allocated"]] == [("t4-0", "gpu-0")]


def test_shared_dra_replay_packs_shares_onto_one_gpu(tmp_path: Path) -> None:
    objs, out = convert(write_trace(tmp_path), tmp_path / "s.json", "--gpus", "dra-shared")
    [scenario] = by_kind(objs, "Scenario").values()
    assert scenario["spec"]["featureGates"] == {"DRAConsumableCapacity": True}
    slices = {s["spec"]["nodeName"]: s["spec"] for s in by_kind(objs, "ResourceSlice").values()}
    assert slices["t4-0"]["devices"][0]["allowMultipleAllocations"] is True
    assert slices["t4-0"]["devices"][0]["capacity"] == {"milli": {"value": "1000"}}
    templates = by_kind(objs, "ResourceClaimTemplate")
    assert templates["gpu-share-500"]["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"milli": "500"}}}}]
    assert "consumable capacity on" in out
    data = replay(tmp_path / "s.json")
    scheduled = {e["object"].rsplit("/", 1)[1]: e["time"] for e in data["events"] if e["reason"] == "Scheduled"}
    # The two halves share the T4's one GPU at once; the whole GPU waits for both to end (share-b
    # at 10 + 390 s).
    assert (scheduled["share-a"], scheduled["share-b"], scheduled["whole"]) == (0.0, 10.0, 400.0)
    [claim] = [c for c in data["resourceClaims"] if c["pod"] == "default/whole"]  # the shares' went with their pods
    assert [(d["device"], d["consumedCapacity"]) for d in claim["allocated"]] == [("gpu-0", {"milli": "1k"})]


def whole_gpu_trace(tmp_path: Path, spacing: int) -> Path:
    """A seeded trace of whole GPUs: 14 nodes of 0 to 8 GPUs and four models, 240 pods of 0, 1, 2, 4
    or 8 GPUs, some limited to models, arriving `spacing` seconds apart and living 1 to 50 minutes."""
    rng = random.Random(7)
    models = ("T4", "V100M16", "P100", "G2")
    nodes = NODE_HEADER + "".join(
        f"n{i},{rng.choice((32000, 64000, 96000))},{rng.choice((131072, 262144))},{gpus},{models[i % 4] if gpus else ''}\n"
        for i, gpus in enumerate((0, 0, 1, 1, 2, 2, 2, 4, 4, 4, 8, 8, 8, 8)))
    pods = POD_HEADER
    for i in range(240):
        gpus = rng.choice((0, 1, 1, 1, 2, 2, 4, 8))
        spec = "|".join(rng.sample(models, rng.randint(1, 3))) if gpus and rng.random() < 0.3 else ""
        created = i * spacing
        phase = rng.choice(("Running", "Succeeded", "Failed"))
        pods += (f"p{i:03},{rng.randint(1, 16) * 1000},{rng.randint(1, 32) * 1024},{gpus},{gpus * 1000},{spec},"
                 f"{rng.choice(('LS', 'BE', 'Burstable'))},{phase},{created},{created + rng.randint(60, 3000)},"
                 f"{created}\n")
    tmp_path.mkdir()
    (tmp_path / "openb_node_list_all_node.csv").write_text(nodes)
    (tmp_path / "openb_pod_list_default.csv").write_text(pods)
    return tmp_path


def replay_both(tmp_path: Path, spacing: int) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The whole-GPU trace converted with `--gpus extended` and `--gpus dra`, and both replays."""
    trace = whole_gpu_trace(tmp_path / "trace", spacing)
    convert(trace, tmp_path / "extended.json")
    objs, _ = convert(trace, tmp_path / "dra.json", "--gpus", "dra")
    extended, dra = replay(tmp_path / "extended.json"), replay(tmp_path / "dra.json")
    # Every node publishes as many devices as it had nvidia.com/gpu, and every claim holds as
    # many devices as its pod asked for, on the pod's node.
    published = {n["name"]: int(n["allocatable"].get("nvidia.com/gpu", 0)) for n in extended["nodes"]}
    assert {n["name"]: n.get("devices", {}).get("gpu.nvidia.com", {}).get("published", 0) for n in dra["nodes"]
            } == published
    asked = {line.split(",")[0]: int(line.split(",")[3])
             for line in (trace / "openb_pod_list_default.csv").read_text().splitlines()[1:]}
    node_of = {p["name"]: p["nodeName"] for p in dra["pods"]}
    for claim in dra["resourceClaims"]:
        pod = claim["pod"].split("/")[1]
        assert len(claim["allocated"]) == asked[pod] and {d["pool"] for d in claim["allocated"]} == {node_of[pod]}
    assert {t["metadata"]["name"] for t in objs if t["kind"] == "ResourceClaimTemplate"} == {
        f"gpus-{n}" for n in (1, 2, 4, 8)}
    return trace, extended, dra


def placements(data: dict[str, Any]) -> dict[str, tuple[str | None, float | None]]:
    """Each pod's node and when it was bound there."""
    scheduled = {e["object"]: e["time"] for e in data["events"] if e["reason"] == "Scheduled"}
    return {p["name"]: (p["nodeName"], scheduled.get(f"Pod/default/{p['name']}")) for p in data["pods"]}


def gpu_waits(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in data["events"] if e["reason"] == "FailedScheduling"
            and ("nvidia.com/gpu" in e["message"] or "cannot allocate all claims" in e["message"])]


def test_dra_replay_places_whole_gpus_as_the_extended_resource_does(tmp_path: Path) -> None:
    """A claim's device count and the nvidia.com/gpu count let the same nodes through Filter, and
    neither enters a score (NodeResourcesFit scores cpu and memory by default, DynamicResources
    only ranks prioritized-list choices), so with whole GPUs every pod lands on the same node at
    the same time either way: here the GPUs fill up to 87 % and pods wait for them in both."""
    _, extended, dra = replay_both(tmp_path, spacing=120)
    assert placements(dra) == placements(extended)
    assert all(node for node, _ in placements(dra).values())
    assert gpu_waits(extended) and gpu_waits(dra)


def test_dra_replay_may_hand_freed_gpus_to_another_waiting_pod(tmp_path: Path) -> None:
    """Where the two replays may part. Pods of one priority wait in the scheduling queue in the
    order they last entered it, and what brings a rejected pod back differs: one NodeResourcesFit
    rejected (Insufficient nvidia.com/gpu) returns when any assigned pod is deleted or ends, one
    DynamicResources rejected (cannot allocate all claims) when a claim is deallocated, which the
    resource-claim controller does after the pod ends, or when slices, classes or nodes change.
    So pods waiting for GPUs are retried at other moments and in another order, and when more of
    them wait than the GPUs freed can hold, another pod may take them; from then on the clusters
    differ. So the replays agree until pods that waited for GPUs are placed differently, and in
    both every pod, all fitting some node, ends up placed."""
    _, extended, dra = replay_both(tmp_path, spacing=60)
    ours, theirs = placements(dra), placements(extended)
    parted = [n for n in ours if ours[n] != theirs[n]]
    start = min(t for n in parted for _, t in (ours[n], theirs[n]) if t is not None)
    first = {n for n in parted if start in (ours[n][1], theirs[n][1])}
    waited = [{e["object"].rsplit("/", 1)[1] for e in gpu_waits(data) if e["time"] < start} for data in (extended, dra)]
    assert first and first <= waited[0] & waited[1]
    assert sum(1 for _, t in theirs.values() if t is not None and t < start) >= 100
    assert all(node for node, _ in ours.values()) and all(node for node, _ in theirs.values())
