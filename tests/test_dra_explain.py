"""`--explain` on a pod whose claims a node cannot satisfy names the claim and request at fault and
says what the node lacks: upstream's "cannot allocate all claims" alone leaves users guessing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.commands.cli import main

CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic}
spec:
  selectors: [{cel: {expression: "device.driver == 'nic.example.com'"}}]
---
apiVersion: v1
kind: Node
metadata: {name: cpu-1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-2}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-1
  pool: {name: gpu-1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {numa: {int: 0}}}
  - {name: gpu-1, attributes: {numa: {int: 1}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-2-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-2
  pool: {name: gpu-2, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {numa: {int: 0}}}
  - {name: gpu-1, attributes: {numa: {int: 0}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-2-nics}
spec:
  driver: nic.example.com
  nodeName: gpu-2
  pool: {name: gpu-2, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: nic-0, attributes: {numa: {int: 1}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pair}
spec:
  devices:
    requests:
    - {name: gpus, exactly: {deviceClassName: gpu, count: 2}}
    constraints: [{matchAttribute: gpu.example.com/numa}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu-and-nic}
spec:
  devices:
    requests:
    - {name: gpu, exactly: {deviceClassName: gpu}}
    - {name: nic, exactly: {deviceClassName: nic}}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers: [{name: c, image: t, resources: {claims: [{name: a}, {name: b}]}}]
  resourceClaims: [{name: a, resourceClaimName: pair}, {name: b, resourceClaimName: gpu-and-nic}]
"""


def explain(tmp_path: Path) -> dict[str, dict]:
    path = tmp_path / "s.yaml"
    path.write_text(CLUSTER)
    result = CliRunner().invoke(main, ["simulate", str(path), "-o", "json", "--explain", "default/trainer"])
    assert result.exit_code == 0, result.output
    [attempt, *_] = json.loads(result.output)["decisions"]["default/trainer"]
    return {f["node"]: f for f in attempt["filter"]}


def test_each_node_says_which_request_it_cannot_serve_and_why(tmp_path: Path) -> None:
    verdicts = explain(tmp_path)
    # The message stays upstream's; the detail is kubesched's own.
    assert {v["reasons"][0] for v in verdicts.values()} == {"cannot allocate all claims"}
    assert verdicts["cpu-1"]["detail"] == (
        "claim default/pair, request gpus: wants 2 device(s) of class gpu; no device on this node matches")
    assert verdicts["gpu-1"]["detail"] == (
        "claim default/pair: no choice of devices satisfies its constraints (matchAttribute gpu.example.com/numa)")
    assert verdicts["gpu-2"]["detail"] == (
        "claim default/gpu-and-nic, request gpu: the node's devices cannot serve it together with the pod's "
        "earlier claims")


def test_the_table_shows_the_detail_after_the_message(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(CLUSTER)
    result = CliRunner().invoke(main, ["simulate", str(path), "--explain", "default/trainer"], terminal_width=400)
    assert "cannot allocate all claims (claim default/pair, request gpus: wants 2 device(s) of class gpu; " \
           "no device on this node matches)" in result.output


def test_devices_held_by_other_claims_are_counted() -> None:
    scenario = str(Path(__file__).parent / "scenarios" / "dra-gpu-template.yaml")
    result = CliRunner().invoke(main, ["simulate", scenario, "-o", "json", "--explain", "default/train-c"])
    first = json.loads(result.output)["decisions"]["default/train-c"][0]
    [gpu_node] = [f for f in first["filter"] if f["node"] == "gpu-1"]
    assert gpu_node["detail"].endswith(
        "request gpu: wants 1 device(s) of class gpu.example.com; 2 on this node match, 2 of them held by other claims")


TAINTED = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-1
  pool: {name: gpu-1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, taints: [{key: example.com/ecc, value: "true", effect: NoSchedule}]}
  - {name: gpu-1, taints: [{key: example.com/info, effect: None}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two}
spec:
  devices:
    requests:
    - {name: gpus, exactly: {deviceClassName: gpu, count: 2}}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers: [{name: c, image: t, resources: {claims: [{name: a}]}}]
  resourceClaims: [{name: a, resourceClaimName: two}]
"""


def test_a_device_kept_out_by_a_taint_is_named_with_its_taint(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(TAINTED)
    result = CliRunner().invoke(main, ["simulate", str(path), "-o", "json", "--explain", "default/trainer",
                                       "--feature-gates", "DRADeviceTaints=true"])
    assert result.exit_code == 0, result.output
    [verdict] = json.loads(result.output)["decisions"]["default/trainer"][0]["filter"]
    assert verdict["reasons"] == ["cannot allocate all claims"]
    assert verdict["detail"] == (
        "claim default/two, request gpus: wants 2 device(s) of class gpu; 1 on this node match, 0 of them held by "
        "other claims; 1 more match but have taints the request does not tolerate: gpu-0 (example.com/ecc=true:NoSchedule)")
