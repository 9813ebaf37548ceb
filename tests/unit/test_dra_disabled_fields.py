"""resource.k8s.io's strategies drop the fields of an alpha feature whose gate is off, unless the
stored object already uses them, and stamp a device taint's timeAdded when the gate is on."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.api.features import FeatureGates
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore

Obj = dict[str, Any]
TAINT = {"key": "example.com/broken", "effect": "NoSchedule"}


def server(**gates: bool) -> APIServer:
    api = APIServer(MemoryStore(), now=lambda: 5.0, features=FeatureGates(gates))
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return api


def slice_obj() -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "taints": [dict(TAINT)], "bindsToNode": True,
                                  "bindingConditions": ["ready"], "bindingFailureConditions": ["failed"]}]}}


def claim_obj() -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu", "tolerations": [{"key": "example.com/broken", "operator": "Exists"}]}}]}}}


def test_with_the_gates_off_taints_tolerations_and_binding_fields_are_dropped() -> None:
    api = server()
    assert api.create(slice_obj())["spec"]["devices"][0] == {"name": "gpu-0"}
    assert "tolerations" not in api.create(claim_obj())["spec"]["devices"]["requests"][0]["exactly"]


def test_with_the_gates_on_they_are_kept_and_a_taint_gets_its_time() -> None:
    api = server(DRADeviceTaints=True, DRADeviceBindingConditions=True)
    device = api.create(slice_obj())["spec"]["devices"][0]
    assert device["taints"] == [{**TAINT, "timeAdded": api.timestamp(5.0)}]
    assert device["bindingConditions"] == ["ready"] and device["bindsToNode"] is True
    assert api.create(claim_obj())["spec"]["devices"]["requests"][0]["exactly"]["tolerations"]


def test_an_update_keeps_what_the_stored_object_already_uses() -> None:
    on, off = server(DRADeviceTaints=True), server()
    stored = on.create(slice_obj())
    off.store.create(copy.deepcopy(stored))  # written while the gate was on
    changed = copy.deepcopy(stored)
    changed["spec"]["devices"][0]["taints"].append({"key": "example.com/hot", "effect": "NoExecute"})
    kept = off.update(changed)["spec"]["devices"][0]["taints"]
    assert [t["key"] for t in kept] == ["example.com/broken", "example.com/hot"]
