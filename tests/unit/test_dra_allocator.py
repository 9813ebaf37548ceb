"""The structured allocator's decisions, as k8s.io/dynamic-resource-allocation/structured makes
them: devices in pool and slice order, the first full solution, backtracking when a later request
or a constraint needs a device an earlier one took, and the limits that make a claim impossible."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.dra.allocator import AllocationError, Allocator, Features, gather_pools
from kubesched.api.dra.cel import CELError, compile_selector, device_view

Obj = dict[str, Any]
NODE: Obj = {"metadata": {"name": "n1", "labels": {"zone": "a"}}}
CLASSES: dict[str, Obj] = {
    "gpu": {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.x'"}}]}},
    "nic": {"metadata": {"name": "nic"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'nic.x'"}}]}},
}


def slice_(driver: str, devices: list[Obj], name: str = "", pool: str = "n1", generation: int = 1, count: int = 1,
           **where: Any) -> Obj:
    spec: Obj = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                 "devices": devices}
    spec.update(where or {"nodeName": "n1"})
    return {"metadata": {"name": name or f"{driver}-{pool}-{generation}", "resourceVersion": "1"}, "spec": spec}


def gpus(n: int, **attrs: Any) -> list[Obj]:
    return [{"name": f"gpu-{i}", "attributes": {k: {"int": v(i)} for k, v in attrs.items()},
             "capacity": {"memory": {"value": "80Gi" if i % 2 else "16Gi"}}} for i in range(n)]


def claim(*requests: Obj, constraints: list[Obj] | None = None, name: str = "c") -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def exactly(name: str, cls: str = "gpu", **fields: Any) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": cls, **fields}}


def allocate(slices: list[Obj], *claims: Obj, allocated: set[Any] | None = None,
             features: Features | None = None) -> list[Obj] | None:
    a = Allocator(features or Features(), allocated or set(), CLASSES.get, lambda node: slices,
                  lambda driver, pool: [s for s in slices if s["spec"]["driver"] == driver
                                        and s["spec"]["pool"]["name"] == pool])
    return a.allocate(NODE, list(claims))


def devices(result: list[Obj] | None) -> list[list[str]]:
    assert result is not None
    return [[f"{r['request']}:{r['device']}" for r in a["devices"]["results"]] for a in result]


def test_first_free_devices_in_slice_order_and_node_selector() -> None:
    result = allocate([slice_("gpu.x", gpus(4))], claim(exactly("g", count=2)), allocated={("gpu.x", "n1", "gpu-0")})
    assert devices(result) == [["g:gpu-1", "g:gpu-2"]]
    assert result is not None and result[0]["nodeSelector"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}


def test_not_enough_devices_is_no_allocation() -> None:
    assert allocate([slice_("gpu.x", gpus(2))], claim(exactly("g", count=3))) is None


def test_claims_of_one_pod_do_not_share_devices() -> None:
    result = allocate([slice_("gpu.x", gpus(2))], claim(exactly("g"), name="a"), claim(exactly("g"), name="b"))
    assert devices(result) == [["g:gpu-0"], ["g:gpu-1"]]


def test_request_selectors_run_after_the_class_and_see_capacity_as_quantities() -> None:
    big = [{"cel": {"expression": "device.capacity['gpu.x'].memory.compareTo(quantity('40Gi')) >= 0"}}]
    result = allocate([slice_("gpu.x", gpus(4)), slice_("nic.x", [{"name": "nic-0"}])],
                      claim(exactly("g", selectors=big, count=2)))
    assert devices(result) == [["g:gpu-1", "g:gpu-3"]]


def test_backtracking_when_a_later_request_needs_the_device_an_earlier_took() -> None:
    # "any" takes gpu-0 first; "zero" (which only gpu-0 satisfies) then fails, so "any" moves on.
    zero = [{"cel": {"expression": "device.attributes['gpu.x'].index == 0"}}]
    result = allocate([slice_("gpu.x", gpus(2, index=lambda i: i))], claim(exactly("any"), exactly("zero", selectors=zero)))
    assert devices(result) == [["any:gpu-1", "zero:gpu-0"]]


def test_match_attribute_constraint() -> None:
    result = allocate([slice_("gpu.x", gpus(4, numa=lambda i: 1 if i >= 2 else 0)),
                       slice_("nic.x", [{"name": "nic-0", "attributes": {"gpu.x/numa": {"int": 1}}}])],
                      claim(exactly("g"), exactly("n", cls="nic"), constraints=[
                          {"requests": ["g", "n"], "matchAttribute": "gpu.x/numa"}]))
    assert devices(result) == [["g:gpu-2", "n:nic-0"]]


def test_all_mode_takes_every_selectable_device_or_nothing() -> None:
    assert devices(allocate([slice_("gpu.x", gpus(3))], claim(exactly("g", allocationMode="All")))) == [
        ["g:gpu-0", "g:gpu-1", "g:gpu-2"]]
    assert allocate([slice_("gpu.x", gpus(3))], claim(exactly("g", allocationMode="All")),
                    allocated={("gpu.x", "n1", "gpu-1")}) is None
    with pytest.raises(AllocationError, match="currently being updated"):
        allocate([slice_("gpu.x", gpus(3), count=2)], claim(exactly("g", allocationMode="All")))


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    request = {"name": "g", "firstAvailable": [{"name": "large", "deviceClassName": "gpu", "count": 3},
                                              {"name": "small", "deviceClassName": "gpu"}]}
    assert devices(allocate([slice_("gpu.x", gpus(4))], claim(request))) == [
        ["g/large:gpu-0", "g/large:gpu-1", "g/large:gpu-2"]]
    assert devices(allocate([slice_("gpu.x", gpus(2))], claim(request))) == [["g/small:gpu-0"]]


def test_admin_access_may_use_a_device_in_use() -> None:
    result = allocate([slice_("gpu.x", gpus(1))], claim(exactly("g", adminAccess=True)),
                      allocated={("gpu.x", "n1", "gpu-0")})
    assert result is not None and result[0]["devices"]["results"][0]["adminAccess"] is True


def test_at_most_32_devices_per_claim() -> None:
    with pytest.raises(AllocationError, match="exceeds the claim limit of 32"):
        allocate([slice_("gpu.x", gpus(40))], claim(exactly("g", count=33)))


def test_newer_generation_replaces_older_slices_and_incomplete_pools_are_skipped() -> None:
    old = slice_("gpu.x", gpus(2), generation=1, name="old")
    new = slice_("gpu.x", [{"name": "gpu-9"}], generation=2, name="new")
    assert devices(allocate([old, new], claim(exactly("g")))) == [["g:gpu-9"]]
    incomplete = slice_("gpu.x", gpus(2), count=2)
    assert allocate([incomplete], claim(exactly("g"))) is None
    pools = gather_pools([incomplete], NODE, Features(), lambda d, p: [incomplete])
    assert pools[0].incomplete


def test_slices_by_node_selector_and_for_all_nodes() -> None:
    by_label = slice_("gpu.x", gpus(1), nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]})
    elsewhere = slice_("gpu.x", gpus(1), pool="other", nodeName="n2")
    everywhere = slice_("gpu.x", [{"name": "shared-0"}], pool="net", allNodes=True)
    result = allocate([elsewhere, by_label, everywhere], claim(exactly("g", count=2)))
    assert devices(result) == [["g:gpu-0", "g:shared-0"]]
    assert result is not None and result[0]["nodeSelector"] == {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}


def test_a_selector_that_fails_at_runtime_stops_the_attempt() -> None:
    broken = [{"cel": {"expression": "device.attributes['gpu.x'].missing == 1"}}]
    with pytest.raises(AllocationError, match="CEL runtime error"):
        allocate([slice_("gpu.x", gpus(1))], claim(exactly("g", selectors=broken)))


def test_class_configuration_comes_before_the_claims() -> None:
    classes = dict(CLASSES, gpu={**CLASSES["gpu"], "spec": {**CLASSES["gpu"]["spec"], "config": [
        {"opaque": {"driver": "gpu.x", "parameters": {"mode": "class"}}}]}})
    c = claim(exactly("g"))
    c["spec"]["devices"]["config"] = [{"requests": ["g"], "opaque": {"driver": "gpu.x", "parameters": {"mode": "claim"}}}]
    a = Allocator(Features(), set(), classes.get, lambda node: [slice_("gpu.x", gpus(1))], lambda d, p: [])
    result = a.allocate(NODE, [c])
    assert result is not None
    assert [(x["source"], x["opaque"]["parameters"]["mode"]) for x in result[0]["devices"]["config"]] == [
        ("FromClass", "class"), ("FromClaim", "claim")]
    assert all("requests" not in x for x in result[0]["devices"]["config"])  # every request: left empty


def test_cel_compile_errors_and_views() -> None:
    with pytest.raises(CELError, match="undeclared reference to 'foo'"):
        compile_selector("foo == 1")
    with pytest.raises(CELError, match="Syntax error"):
        compile_selector("device.driver ==")
    view = device_view("gpu.x", {"model": {"string": "a100"}, "other.io/rev": {"version": "1.2.3"}},
                       {"memory": {"value": "80Gi"}})
    assert compile_selector("device.attributes['gpu.x'].model == 'a100'").matches(view)
    assert compile_selector("device.attributes['other.io'].rev.isGreaterThan(semver('1.2.0'))").matches(view)
    assert compile_selector("device.attributes['unknown.io'].size() == 0").matches(view)
    assert not compile_selector("device.capacity['gpu.x'].memory.isLessThan(quantity('1Gi'))").matches(view)


def test_cel_bind_names_a_value_once() -> None:
    """cel.bind, which upstream's DRA environment loads, so a domain is written once."""
    view = device_view("gpu.x", {"model": {"string": "a100"}, "cores": {"int": 108}}, {})
    expression = "cel.bind(gpu, device.attributes['gpu.x'], gpu.model == 'a100' && gpu.cores > 100)"
    assert compile_selector(expression).matches(view)
    assert compile_selector("cel.bind(a, 1, cel.bind(b, a + 1, b == 2))").matches(view)
    with pytest.raises(CELError, match="undeclared reference to 'gpu'"):
        compile_selector("cel.bind(g, device.attributes['gpu.x'], gpu.cores > 1)")


@pytest.mark.parametrize(("expression", "found"), [
    ("device.driver", "string"), ("'gpu.x'", "string"), ("true ? 1 : 2", "int"),
    ("device.capacity['gpu.x'].memory.compareTo(quantity('1Gi'))", "int")])
def test_a_selector_that_is_plainly_not_boolean_is_refused_when_stored(expression: str, found: str) -> None:
    with pytest.raises(CELError, match=f"^must evaluate to bool or the unknown type, not {found}$"):
        compile_selector(expression)


def test_a_selector_of_unknown_type_fails_when_it_runs_not_boolean() -> None:
    view = device_view("gpu.x", {"model": {"string": "a100"}}, {})
    selector = compile_selector("device.attributes['gpu.x'].model")  # dyn to the checker: stored
    with pytest.raises(CELError, match="CEL result of type string could not be converted to bool"):
        selector.matches(view)


def test_partitionable_devices_share_their_pools_counters() -> None:
    counters = slice_("gpu.x", [], name="counters")
    counters["spec"]["sharedCounters"] = [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]
    del counters["spec"]["devices"]
    counters["spec"]["pool"]["resourceSliceCount"] = 2
    parts = slice_("gpu.x", [{"name": f"half-{i}", "consumesCounters": [
        {"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}]} for i in range(3)], name="parts", count=2)
    on = Features(partitionable_devices=True)
    assert devices(allocate([counters, parts], claim(exactly("g", count=2)), features=on)) == [["g:half-0", "g:half-1"]]
    assert allocate([counters, parts], claim(exactly("g", count=3)), features=on) is None  # 60Gi of 40Gi
    # What allocated devices consume is gone, whichever node they are for.
    assert devices(allocate([counters, parts], claim(exactly("g")), allocated={("gpu.x", "n1", "half-2")},
                            features=on)) == [["g:half-0"]]
    assert allocate([counters, parts], claim(exactly("g", count=2)), allocated={("gpu.x", "n1", "half-2")},
                    features=on) is None
    # Without the gate, devices that consume counters are never allocated.
    assert allocate([counters, parts], claim(exactly("g"))) is None
