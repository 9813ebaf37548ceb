"""Exports of v1.32-v1.33 clusters say resource.k8s.io/v1beta1 or v1beta2, which v1.35 no longer
serves: they are read in v1, so a run of such an export allocates the same devices as the v1
original, and the objects the cluster holds are all v1."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.dra.convert import is_beta, to_v1
from kubesched.api.errors import InputError
from kubesched.api.served import no_match
from kubesched.sim.runner import load, simulate

CLASS = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}


def test_v1beta1_requests_move_into_exactly() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
             "spec": {"devices": {"requests": [
                 {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2,
                  "selectors": [{"cel": {"expression": "true"}}], "adminAccess": False,
                  "tolerations": [{"key": "k", "operator": "Exists"}]},
                 {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "big.example.com"}]},
             ], "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/numa"}]}}}
    before = copy.deepcopy(claim)
    out = to_v1(claim)
    assert claim == before  # the input is left as it is
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert out["spec"]["devices"]["requests"] == [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": "true"}}],
                                    "allocationMode": "ExactCount", "count": 2, "adminAccess": False,
                                    "tolerations": [{"key": "k", "operator": "Exists"}]}},
        {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "big.example.com"}]},
    ]
    assert out["spec"]["devices"]["constraints"] == before["spec"]["devices"]["constraints"]


def test_v1beta1_devices_lose_their_basic_wrapper() -> None:
    sl = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1},
                   "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}},
                                                          "capacity": {"memory": {"value": "80Gi"}}}}]}}
    assert to_v1(sl)["spec"]["devices"] == [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}},
                                             "capacity": {"memory": {"value": "80Gi"}}}]


def test_v1beta2_has_v1s_shapes_and_other_kinds_are_not_converted() -> None:
    template = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
                                                            "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}
    assert to_v1(template) == {**template, "apiVersion": "resource.k8s.io/v1"}
    assert is_beta(template) and is_beta(CLASS)
    assert not is_beta({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass"})
    assert not is_beta({"apiVersion": "gpu.example.com/v1beta1", "kind": "DeviceClass"})  # a custom resource
    # kubectl would refuse them: v1.35 serves the group in v1 only.
    assert no_match("resource.k8s.io/v1beta1", "ResourceClaim") == \
        'no matches for kind "ResourceClaim" in version "resource.k8s.io/v1beta1" (expected "resource.k8s.io/v1")'


def _export(version: str) -> list[dict[str, Any]]:
    """A node with two GPUs, a class, and a pod with its own claim for one GPU, as `version` writes them."""
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(2)]
    request: dict[str, Any] = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}
    if version == "v1beta1":
        devices = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}} for d in devices]
        request = {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2}
    group = f"resource.k8s.io/{version}"
    return [
        {**CLASS, "apiVersion": group},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"},
         "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
        {"apiVersion": group, "kind": "ResourceSlice", "metadata": {"name": "gpu-1-gpus"},
         "spec": {"driver": "gpu.example.com", "nodeName": "gpu-1",
                  "pool": {"name": "gpu-1", "generation": 1, "resourceSliceCount": 1}, "devices": devices}},
        {"apiVersion": group, "kind": "ResourceClaim", "metadata": {"name": "two-gpus", "namespace": "default"},
         "spec": {"devices": {"requests": [request]}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
                  "resourceClaims": [{"name": "gpu", "resourceClaimName": "two-gpus"}]}},
    ]


def _run(tmp_path: Path, objects: list[dict[str, Any]]) -> Any:
    path = tmp_path / "export.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return simulate(load([str(path)]))


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_a_beta_export_runs_as_its_v1_original(tmp_path: Path, version: str) -> None:
    beta = _run(tmp_path, _export(version)).cluster.store
    original = _run(tmp_path, _export("v1")).cluster.store
    for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim"):
        assert {o["apiVersion"] for o in beta.list(kind)} == {"resource.k8s.io/v1"}
    claim = beta.get("ResourceClaim", "default", "two-gpus")
    assert claim["spec"] == original.get("ResourceClaim", "default", "two-gpus")["spec"]
    assert beta.get("ResourceSlice", "", "gpu-1-gpus")["spec"] == \
        original.get("ResourceSlice", "", "gpu-1-gpus")["spec"]
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["gpu-0", "gpu-1"]
    assert beta.get("Pod", "default", "train")["spec"]["nodeName"] == "gpu-1"


def test_a_bad_beta_object_is_reported_in_v1s_terms(tmp_path: Path) -> None:
    objects = _export("v1beta1")
    objects[3]["spec"]["devices"]["requests"][0]["count"] = 0
    with pytest.raises(InputError) as bad:
        _run(tmp_path, objects)
    assert "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero" in str(bad.value)
