"""Consumable capacity as the structured allocator decides it behind DRAConsumableCapacity: a device
that allows multiple allocations is shared while what every share consumes fits, each share with
its id and consumption; the request policy rounds amounts up and fills in defaults; `distinct
Attribute` keeps a claim's shares apart; and with the gate off none of it applies."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesched.api.dra.allocator import AllocationError, Allocator, Features
from kubesched.api.dra.diagnosis import diagnose
from kubesched.api.features import FeatureGates
from kubesched.apiserver.dra import drop_disabled_fields

Obj = dict[str, Any]
NODE: Obj = {"metadata": {"name": "n1"}}
CLASSES: dict[str, Obj] = {
    "gpu": {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.x'"}}]}},
}
ON = Features(consumable_capacity=True)
POLICY: Obj = {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}


def shared_gpus(n: int, memory: str = "40Gi", policy: Obj | None = None, **more: Obj) -> Obj:
    capacity: Obj = {"memory": {"value": memory, **({"requestPolicy": policy} if policy else {})}, **more}
    devices = [{"name": f"gpu-{i}", "allowMultipleAllocations": True, "attributes": {"index": {"int": i}},
                "capacity": capacity} for i in range(n)]
    return {"kind": "ResourceSlice", "metadata": {"name": "s", "resourceVersion": "1"},
            "spec": {"driver": "gpu.x", "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
                                                                  "resourceSliceCount": 1}, "devices": devices}}


def claim(*requests: Obj, name: str = "c", constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": {"devices": devices}}


def gpu(name: str = "g", memory: str | None = None, **fields: Any) -> Obj:
    if memory is not None:
        fields["capacity"] = {"requests": {"memory": memory}}
    return {"name": name, "exactly": {"deviceClassName": "gpu", **fields}}


def allocate(slice_: Obj, *claims: Obj, features: Features = ON, consumed: dict[Any, Any] | None = None,
             allocated: set[Any] | None = None) -> list[Obj] | None:
    a = Allocator(features, allocated or set(), CLASSES.get, lambda node: [slice_], lambda driver, pool: [slice_],
                  consumed or {}, set(consumed or {}))
    return a.allocate(NODE, list(claims))


def shares(result: list[Obj] | None) -> list[list[tuple[str, Any]]]:
    assert result is not None
    return [[(r["device"], (r.get("consumedCapacity") or {}).get("memory")) for r in a["devices"]["results"]]
            for a in result]


def test_claims_of_one_pod_share_a_device_while_its_capacity_lasts() -> None:
    result = allocate(shared_gpus(2), claim(gpu(memory="10Gi"), name="a"), claim(gpu(memory="30Gi"), name="b"),
                      claim(gpu(memory="20Gi"), name="c"))
    assert shares(result) == [[("gpu-0", "10Gi")], [("gpu-0", "30Gi")], [("gpu-1", "20Gi")]]
    assert result is not None
    ids = [a["devices"]["results"][0]["shareID"] for a in result]
    assert len(set(ids)) == 3 and all(len(i) == 36 for i in ids)


def test_allocated_shares_count_against_the_device() -> None:
    held = {("gpu.x", "n1", "gpu-0"): {"memory": Fraction(35 * 2**30)}}
    assert shares(allocate(shared_gpus(2), claim(gpu(memory="10Gi")), consumed=held)) == [[("gpu-1", "10Gi")]]
    assert allocate(shared_gpus(1), claim(gpu(memory="10Gi")), consumed=held) is None
    assert shares(allocate(shared_gpus(1), claim(gpu(memory="5Gi")), consumed=held)) == [[("gpu-0", "5Gi")]]


def test_request_policy_rounds_up_to_a_step_and_fills_in_the_default() -> None:
    result = allocate(shared_gpus(1, policy=POLICY), claim(gpu(memory="12Gi"), name="a"), claim(gpu(), name="b"),
                      claim(gpu(memory="1Gi"), name="c"))
    assert shares(result) == [[("gpu-0", "20Gi")], [("gpu-0", "10Gi")], [("gpu-0", "10Gi")]]


def test_request_policy_refuses_what_it_does_not_admit() -> None:
    ranged = {"default": "10Gi", "validRange": {"min": "10Gi", "max": "20Gi", "step": "10Gi"}}
    assert allocate(shared_gpus(1, policy=ranged), claim(gpu(memory="25Gi"))) is None
    values = {"default": "8Gi", "validValues": ["8Gi", "16Gi"]}
    assert shares(allocate(shared_gpus(1, policy=values), claim(gpu(memory="9Gi")))) == [[("gpu-0", "16Gi")]]
    assert allocate(shared_gpus(1, policy=values), claim(gpu(memory="17Gi"))) is None


def test_without_a_request_or_default_a_share_takes_the_whole_capacity() -> None:
    result = allocate(shared_gpus(2), claim(gpu(), name="a"), claim(gpu(), name="b"))
    assert shares(result) == [[("gpu-0", "40Gi")], [("gpu-1", "40Gi")]]


def test_every_capacity_is_consumed_and_unknown_ones_cannot_be_asked_for() -> None:
    slice_ = shared_gpus(1, cores={"value": "100", "requestPolicy": {"default": "25", "validValues": ["25", "50"]}})
    result = allocate(slice_, claim(gpu(memory="10Gi")))
    assert result is not None
    assert result[0]["devices"]["results"][0]["consumedCapacity"] == {"memory": "10Gi", "cores": "25"}
    asked = gpu(capacity={"requests": {"bandwidth": "1G"}})
    assert allocate(shared_gpus(1), claim(asked)) is None


def test_a_request_for_two_devices_may_get_two_shares_of_one_unless_distinct() -> None:
    assert shares(allocate(shared_gpus(2), claim(gpu(memory="10Gi", count=2)))) == [
        [("gpu-0", "10Gi"), ("gpu-0", "10Gi")]]
    distinct = [{"distinctAttribute": "gpu.x/index"}]
    result = allocate(shared_gpus(2), claim(gpu("a", memory="10Gi"), gpu("b", memory="10Gi"), constraints=distinct))
    assert shares(result) == [[("gpu-0", "10Gi"), ("gpu-1", "10Gi")]]


def test_a_device_that_is_not_shared_is_taken_whole_but_must_hold_the_amount() -> None:
    slice_ = shared_gpus(2)
    for d in slice_["spec"]["devices"]:
        d.pop("allowMultipleAllocations")
    result = allocate(slice_, claim(gpu(memory="10Gi"), name="a"), claim(gpu(memory="10Gi"), name="b"))
    assert result is not None and [r["device"] for a in result for r in a["devices"]["results"]] == ["gpu-0", "gpu-1"]
    assert all("shareID" not in r for a in result for r in a["devices"]["results"])
    assert allocate(slice_, claim(gpu(memory="50Gi"))) is None


def test_with_the_gate_off_shared_devices_are_whole_and_capacity_requests_an_error() -> None:
    result = allocate(shared_gpus(2), claim(gpu(), name="a"), claim(gpu(), name="b"), features=Features())
    assert shares(result) == [[("gpu-0", None)], [("gpu-1", None)]]
    with pytest.raises(AllocationError, match="request g: has capacity requests, but the DRAConsumableCapacity "
                                              "feature is disabled"):
        allocate(shared_gpus(1), claim(gpu(memory="10Gi")), features=Features())


def test_the_api_server_drops_the_fields_while_the_gate_is_off() -> None:
    off, on = FeatureGates(), FeatureGates({"DRAConsumableCapacity": True})
    slice_ = shared_gpus(1, policy=POLICY)
    drop_disabled_fields(slice_, None, off)
    device = slice_["spec"]["devices"][0]
    assert "allowMultipleAllocations" not in device and device["capacity"]["memory"] == {"value": "40Gi"}
    asked = {"kind": "ResourceClaim", **claim(gpu(memory="1Gi"), constraints=[{"distinctAttribute": "gpu.x/index"}])}
    kept = {**asked, "spec": {"devices": {"requests": [gpu(memory="1Gi")]}}}
    drop_disabled_fields(kept, None, on)
    assert kept["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {"requests": {"memory": "1Gi"}}
    drop_disabled_fields(asked, None, off)
    assert asked["spec"]["devices"] == {"requests": [gpu()], "constraints": [{}]}


def test_explain_counts_a_device_whose_capacity_shares_hold_as_held() -> None:
    held = {("gpu.x", "n1", "gpu-0"): {"memory": 35 * 2**30}}
    slice_ = shared_gpus(1)
    a = Allocator(ON, set(), CLASSES.get, lambda node: [slice_], lambda driver, pool: [slice_], held, set(held))
    assert diagnose(a, NODE, [claim(gpu(memory="10Gi"))]) == (
        "claim default/c, request g: wants 1 device(s) of class gpu; 1 on this node match, 1 of them held by "
        "other claims")
