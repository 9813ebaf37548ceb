"""Device taints and binding conditions in the structured allocator, behind their gates
(DRADeviceTaints, DRADeviceBindingConditions), as k8s.io/dynamic-resource-allocation/structured
v1.35 decides: a NoSchedule or NoExecute taint keeps a device from a request that does not
tolerate it; a device with binding conditions is only allocated when its feature is on, and then
the result carries the conditions and binds the claim to the node."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.dra import binding, taintrules
from kubesched.api.dra.allocator import Features
from kubesched.api.dra.taints import prevents_allocation, tolerates
from tests.unit.test_dra_allocator import allocate, claim, devices, exactly, gpus, slice_

Obj = dict[str, Any]
TAINTS = Features(device_taints=True)
BINDING = Features(device_binding=True)
BROKEN = {"key": "example.com/broken", "value": "fan", "effect": "NoSchedule"}


def tainted(n: int, taints: dict[int, list[Obj]]) -> list[Obj]:
    found = gpus(n)
    for i, ts in taints.items():
        found[i]["taints"] = ts
    return found


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    ({"key": "k", "operator": "Equal", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "w", "effect": "NoSchedule"}, False),  # Equal by default
    ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "w", "effect": "NoExecute"}, True),
    ({"operator": "Exists"}, {"key": "any", "effect": "NoExecute"}, True),  # no key: every key
    ({"operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "effect": "NoExecute"}, False),
    ({"key": "j", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
])
def test_toleration_matching_follows_pod_tolerations(toleration: Obj, taint: Obj, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_only_no_schedule_and_no_execute_hold_a_device_back() -> None:
    assert prevents_allocation([{"key": "k", "effect": "NoExecute"}], [])
    assert not prevents_allocation([{"key": "k", "effect": "None"}], [])
    assert not prevents_allocation([{"key": "k", "effect": "SomeFutureEffect"}], [])


def test_an_untolerated_taint_skips_the_device() -> None:
    result = allocate([slice_("gpu.x", tainted(3, {0: [BROKEN]}))], claim(exactly("g", count=2)), features=TAINTS)
    assert devices(result) == [["g:gpu-1", "g:gpu-2"]]


def test_a_tolerated_taint_does_not_and_the_result_carries_the_tolerations() -> None:
    toleration = {"key": "example.com/broken", "operator": "Exists", "effect": "NoSchedule"}
    result = allocate([slice_("gpu.x", tainted(2, {0: [BROKEN]}))],
                      claim(exactly("g", tolerations=[toleration])), features=TAINTS)
    assert devices(result) == [["g:gpu-0"]]
    assert result is not None and result[0]["devices"]["results"][0]["tolerations"] == [toleration]


def test_with_the_gate_off_taints_are_not_looked_at() -> None:
    assert devices(allocate([slice_("gpu.x", tainted(1, {0: [BROKEN]}))], claim(exactly("g")))) == [["g:gpu-0"]]


def test_all_mode_fails_when_a_selected_device_is_tainted() -> None:
    slices = [slice_("gpu.x", tainted(2, {1: [BROKEN]}))]
    assert allocate(slices, claim(exactly("g", allocationMode="All")), features=TAINTS) is None
    assert devices(allocate(slices, claim(exactly("g", allocationMode="All")))) == [["g:gpu-0", "g:gpu-1"]]


def test_a_subrequest_is_tolerated_by_its_own_tolerations() -> None:
    toleration = {"key": "example.com/broken", "operator": "Exists"}
    first = {"name": "g", "firstAvailable": [
        {"name": "strict", "deviceClassName": "gpu"},
        {"name": "lenient", "deviceClassName": "gpu", "tolerations": [toleration]}]}
    result = allocate([slice_("gpu.x", tainted(1, {0: [BROKEN]}))], claim(first), features=TAINTS)
    assert devices(result) == [["g/lenient:gpu-0"]]


def bound(n: int) -> list[Obj]:
    found = gpus(n)
    found[0].update(bindingConditions=["example.com/attached"], bindingFailureConditions=["example.com/failed"],
                    bindsToNode=True)
    return found


def test_devices_with_binding_conditions_need_the_feature() -> None:
    slices = [slice_("gpu.x", bound(2), nodeName=None, allNodes=True)]
    assert devices(allocate(slices, claim(exactly("g")))) == [["g:gpu-1"]]


def test_with_the_feature_the_result_has_the_conditions_and_binds_to_the_node() -> None:
    slices = [slice_("gpu.x", bound(2), allNodes=True)]
    result = allocate(slices, claim(exactly("g")), features=BINDING)
    assert result is not None
    entry = result[0]["devices"]["results"][0]
    assert (entry["device"], entry["bindingConditions"], entry["bindingFailureConditions"]) == (
        "gpu-0", ["example.com/attached"], ["example.com/failed"])
    assert result[0]["nodeSelector"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}


def allocated_claim(conditions: list[Obj], stamp: str = "2025-01-01T00:00:00Z") -> Obj:
    result = {"request": "g", "driver": "gpu.x", "pool": "n1", "device": "gpu-0",
              "bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]}
    return {"metadata": {"name": "c"}, "status": {
        "allocation": {"devices": {"results": [result]}, "allocationTimestamp": stamp},
        "devices": [{"driver": "gpu.x", "pool": "n1", "device": "gpu-0", "conditions": conditions}]}}


def test_a_claim_is_ready_once_every_binding_condition_is_true() -> None:
    assert not binding.ready_for_binding(allocated_claim([]))
    assert not binding.ready_for_binding(allocated_claim([{"type": "attached", "status": "False"}]))
    assert binding.ready_for_binding(allocated_claim([{"type": "attached", "status": "True"}]))


def test_a_true_failure_condition_fails_binding_with_its_reason() -> None:
    failed = {"type": "failed", "status": "True", "reason": "FabricError", "message": "port down"}
    with pytest.raises(binding.BindingFailed, match='^claim c binding failed: reason=FabricError, message="port down"$'):
        binding.ready_for_binding(allocated_claim([failed]))


def test_binding_times_out_after_the_timeout_from_the_allocation() -> None:
    def seconds(stamp: str) -> float:
        return 100.0

    claim_ = allocated_claim([])
    assert not binding.timed_out(claim_, 700.0, binding.BINDING_TIMEOUT, seconds)
    assert binding.timed_out(claim_, 700.5, binding.BINDING_TIMEOUT, seconds)


def rule(**selector: str) -> Obj:
    return {"metadata": {"name": "r"}, "spec": {"deviceSelector": selector,
                                                 "taint": {"key": "maintenance", "effect": "NoSchedule"}}}


def test_a_rule_selects_by_driver_pool_and_device_and_nothing_without_a_selector() -> None:
    assert taintrules.matches(rule(driver="gpu.x"), "gpu.x", "n1", "gpu-0")
    assert taintrules.matches(rule(), "gpu.x", "n1", "gpu-0")  # the empty selector: every device
    assert not taintrules.matches(rule(driver="gpu.x", device="gpu-1"), "gpu.x", "n1", "gpu-0")
    assert not taintrules.matches({"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}, "gpu.x", "n1", "gpu-0")


def test_rule_taints_reach_the_allocator_after_the_devices_own() -> None:
    slice_obj = slice_("gpu.x", gpus(2))
    ruled = taintrules.with_rules(slice_obj, [rule(device="gpu-0")])
    assert ruled["spec"]["devices"][0]["taints"] == [{"key": "maintenance", "effect": "NoSchedule"}]
    assert "taints" not in slice_obj["spec"]["devices"][0]  # the stored slice is left as it is
    assert taintrules.with_rules(slice_obj, [rule(pool="other")]) is slice_obj
    assert devices(allocate([ruled], claim(exactly("g")), features=TAINTS)) == [["g:gpu-1"]]
