"""resource.k8s.io validation: what kube-apiserver v1.35 refuses in DeviceClasses, ResourceSlices,
ResourceClaims and templates, with its field paths and words; what an update and a status write
may change; and the defaults a claim is stored with."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.api.features import FeatureGates
from kubesched.api.validation.objects import object_problems
from kubesched.apiserver.errors import Invalid
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore

V1 = "resource.k8s.io/v1"


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": list(requests), **devices}}}


def exact(name: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", **fields}}


def device_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"}, "spec": spec}


def resource_slice(*devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    fields = {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 0,
                                                                       "resourceSliceCount": 1}}
    fields.update(spec)
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {**{k: v for k, v in fields.items() if v is not None}, "devices": list(devices)}}


def sel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


@pytest.mark.parametrize("obj", [
    claim(exact()),
    claim(exact(allocationMode="All", selectors=[sel("device.attributes['gpu.example.com'].model == 'a100'")])),
    claim(exact(count=4, adminAccess=True, tolerations=[{"key": "example.com/dirty", "operator": "Exists"}])),
    claim({"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "big.example.com"},
                                             {"name": "small", "deviceClassName": "small.example.com", "count": 2}]},
          constraints=[{"requests": ["gpu/big"], "matchAttribute": "gpu.example.com/numa"}],
          config=[{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}}]),
    claim(),
    device_class(selectors=[sel("device.driver == 'gpu.example.com'")], extendedResourceName="example.com/gpu",
                 config=[{"opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]),
    resource_slice({"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "gpu.example.com/rev": {"int": 3},
                                                    "driverVersion": {"version": "1.2.3-rc.1"}},
                    "capacity": {"memory": {"value": "80Gi"}}}),
    resource_slice({"name": "gpu-0"}, nodeName=None, allNodes=True),
    {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "default"},
     "spec": {"metadata": {"labels": {"app": "x"}}, "spec": {"devices": {"requests": [exact()]}}}},
])
def test_good_objects_pass(obj: dict[str, Any]) -> None:
    assert object_problems(obj) == []


@pytest.mark.parametrize(("obj", "problems"), [
    (claim({"name": "gpu"}),
     ["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"]),
    (claim({**exact(), "firstAvailable": [{"name": "a", "deviceClassName": "x"}]}),
     ["spec.devices.requests[0]: Invalid value: \"null\": exactly one of `exactly` or `firstAvailable` is required, "
      "but multiple fields are set"]),
    (claim({"name": "gpu", "exactly": {}}), ["spec.devices.requests[0].exactly.deviceClassName: Required value"]),
    (claim(exact("GPU")),
     ['spec.devices.requests[0].name: Invalid value: "GPU": a lowercase RFC 1123 label must consist of lower case '
      "alphanumeric characters or '-', and must start and end with an alphanumeric character"]),
    (claim(exact(), exact()), ['spec.devices.requests[1]: Duplicate value: "gpu"']),
    (claim(exact(count=0)), ["spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"]),
    (claim(exact(allocationMode="All", count=2)),
     ["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"]),
    (claim(exact(allocationMode="Some")),
     ['spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", '
      '"ExactCount"']),
    (claim(exact(selectors=[{}])), ["spec.devices.requests[0].exactly.selectors[0].cel: Required value"]),
    (claim(exact(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])),
     ['spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator '
      "`Exists`"]),
    (claim(*(exact(f"r{i}") for i in range(33))),
     ["spec.devices.requests: Too many: 33: must have at most 32 items"]),
    (claim({"name": "gpu", "firstAvailable": [{"name": f"s{i}", "deviceClassName": "x"} for i in range(9)]}),
     ["spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"]),
    (claim({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "x"}] * 2}),
     ['spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"']),
    (claim(exact(), constraints=[{"requests": ["cpu", "gpu/big"], "matchAttribute": "numa"}]),
     ['spec.devices.constraints[0].requests[0]: Invalid value: "cpu": must be the name of a request in the claim '
      "or the name of a request and a subrequest separated by '/'",
      'spec.devices.constraints[0].requests[1]: Invalid value: "gpu/big": must be the name of a request in the '
      "claim or the name of a request and a subrequest separated by '/'",
      'spec.devices.constraints[0].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain '
      "and a name separated by a slash"]),
    (claim(exact(), constraints=[{}]), ["spec.devices.constraints[0].matchAttribute: Required value"]),
    (claim(exact(), config=[{"opaque": {"driver": "gpu.example.com", "parameters": [1]}}]),
     ['spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object']),
    (claim(exact(), config=[{}]), ["spec.devices.config[0].opaque: Required value"]),
    (device_class(extendedResourceName="gpu"),
     ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name']),
    (resource_slice({"name": "gpu-0"}, nodeName=None),
     ["spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required"]),
    (resource_slice({"name": "gpu-0"}, allNodes=True),
     ['spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, '
      "`perDeviceNodeSelection` is required, but multiple fields are set"]),
    (resource_slice({"name": "gpu-0"}, pool={"name": "n1", "generation": -1, "resourceSliceCount": 0}),
     ["spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
      "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"]),
    (resource_slice({"name": "gpu-0"}, driver=""), ["spec.driver: Required value"]),
    (resource_slice({"name": "gpu-0"}, {"name": "gpu-0"}), ['spec.devices[1]: Duplicate value: "gpu-0"']),
    (resource_slice(*({"name": f"d{i}"} for i in range(129))),
     ["spec.devices: Too many: 129: must have at most 128 items"]),
    (resource_slice({"name": "gpu-0", "attributes": {"model": {"string": "a", "int": 1}, "rev": {}}}),
     ['spec.devices[0].attributes[model]: Invalid value: {"string":"a","int":1}: exactly one value must be '
      "specified",
      'spec.devices[0].attributes[rev]: Invalid value: "": exactly one value must be specified']),
    (resource_slice({"name": "gpu-0", "attributes": {"v": {"version": "1.2"}}}),
     ['spec.devices[0].attributes[v].version: Invalid value: "1.2": must be a string compatible with semver.org '
      "spec 2.0.0"]),
    (resource_slice({"name": "gpu-0", "capacity": {"memory": {"value": "lots"}, "9lives": {"value": "1"}}}),
     ['spec.devices[0].capacity[memory].value: "lots" is not a quantity',
      'spec.devices[0].capacity: Invalid value: "9lives": a valid C identifier must start with alphabetic '
      "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  "
      "or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"]),
    (resource_slice({"name": "gpu-0", "attributes": {f"a{i}": {"int": i} for i in range(33)}}),
     ["spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"]),
])
def test_bad_objects_get_upstreams_messages(obj: dict[str, Any], problems: list[str]) -> None:
    assert object_problems(obj) == problems


def test_a_selector_that_does_not_compile_is_an_invalid_expression() -> None:
    problems = object_problems(device_class(selectors=[sel("device.driver ==")]))
    assert len(problems) == 1
    assert problems[0].startswith('spec.selectors[0].cel.expression: Invalid value: "device.driver ==": '
                                  "compilation failed")
    too_long = object_problems(claim(exact(selectors=[sel("true || " * 1300 + "true")])))
    assert too_long == ["spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more "
                        "than 10240 bytes"]


@pytest.fixture
def api() -> APIServer:
    server = APIServer(MemoryStore(), now=lambda: 0.0)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return server


def test_claims_are_stored_with_upstreams_defaults() -> None:
    api = APIServer(MemoryStore(), now=lambda: 0.0, features=FeatureGates({"DRADeviceTaints": True}))  # tolerations kept
    stored = api.create(claim(exact(tolerations=[{"key": "k"}]), {"name": "any", "firstAvailable": [
        {"name": "one", "deviceClassName": "x"}, {"name": "all", "deviceClassName": "x", "allocationMode": "All"}]}))
    requests = stored["spec"]["devices"]["requests"]
    assert requests[0]["exactly"] == {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
                                      "count": 1, "tolerations": [{"key": "k", "operator": "Equal"}]}
    assert requests[1]["firstAvailable"] == [
        {"name": "one", "deviceClassName": "x", "allocationMode": "ExactCount", "count": 1},
        {"name": "all", "deviceClassName": "x", "allocationMode": "All"}]


def test_a_claims_spec_is_immutable_and_its_status_checked(api: APIServer) -> None:
    stored = api.create(claim(exact()))
    changed = copy.deepcopy(stored)
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    with pytest.raises(Invalid, match=r'^ResourceClaim.resource.k8s.io "c" is invalid: spec: Invalid value: .*: '
                                      r"field is immutable$"):
        api.update(changed)
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
    pod = {"resource": "pods", "name": "p", "uid": "u1"}

    def allocate(status: dict[str, Any]) -> None:
        status["allocation"] = {"devices": {"results": [dict(result, request="cpu")]}}

    with pytest.raises(Invalid) as refused:
        api.update_status("ResourceClaim", "default", "c", allocate)
    assert refused.value.fields == [("status.allocation.devices.results[0].request",
                                     'Invalid value: "cpu": must be the name of a request in the claim or the name '
                                     "of a request and a subrequest separated by '/'")]
    with pytest.raises(Invalid, match=r"status.reservedFor: Forbidden: may not be specified when `allocated` is "
                                      r"not set"):
        api.update_status("ResourceClaim", "default", "c", lambda s: s.update(reservedFor=[pod]))
    api.update_status("ResourceClaim", "default", "c",
                      lambda s: s.update(allocation={"devices": {"results": [result]}}, reservedFor=[pod]))
    with pytest.raises(Invalid, match=r'status.reservedFor\[1\]: Duplicate value: "u1"'):
        api.update_status("ResourceClaim", "default", "c", lambda s: s.update(reservedFor=[pod, pod]))
    with pytest.raises(Invalid, match=r"status.allocation: Invalid value: .*: field is immutable"):
        api.update_status("ResourceClaim", "default", "c",
                          lambda s: s.update(allocation={"devices": {"results": [dict(result, device="gpu-1")]}}))
    # Clearing it (deallocation) is fine once nobody holds the claim.
    cleared = api.update_status("ResourceClaim", "default", "c", lambda s: s.clear())
    assert cleared["status"] == {}


def test_a_slices_driver_pool_and_node_are_immutable(api: APIServer) -> None:
    stored = api.create(resource_slice({"name": "gpu-0"}))
    moved = copy.deepcopy(stored)
    moved["spec"]["nodeName"] = "n2"
    moved["spec"]["devices"].append({"name": "gpu-1"})
    with pytest.raises(Invalid) as refused:
        api.update(moved)
    assert refused.value.fields == [("spec.nodeName", 'Invalid value: "n2": field is immutable')]
    grown = copy.deepcopy(stored)
    grown["spec"]["devices"].append({"name": "gpu-1"})
    assert len(api.update(grown)["spec"]["devices"]) == 2


def test_admin_access_needs_a_namespace_labelled_for_it(api: APIServer) -> None:
    with pytest.raises(Invalid) as refused:
        api.create(claim(exact(adminAccess=True)))
    assert refused.value.fields == [("spec.devices.requests[0].exactly.adminAccess",
                                     "Forbidden: admin access to devices requires the "
                                     "`resource.kubernetes.io/admin-access: true` label on the containing namespace")]
    api.create({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "monitoring", "labels": {"resource.kubernetes.io/admin-access": "true"}}})
    admin = claim(exact(adminAccess=True))
    admin["metadata"]["namespace"] = "monitoring"
    assert api.create(admin)["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True


def test_device_status_names_allocated_devices_with_well_formed_data(api: APIServer) -> None:
    api.create(claim(exact()))
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
    api.update_status("ResourceClaim", "default", "c",
                      lambda s: s.update(allocation={"devices": {"results": [result]}}))
    ready = {"type": "Ready", "status": "True", "reason": "Configured", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    good = {"driver": "gpu.example.com", "pool": "n1", "device": "gpu-0", "conditions": [ready],
            "data": {"vendor": "x"}, "networkData": {"interfaceName": "eth1", "ips": ["10.9.8.7/24", "2001:db8::1/64"]}}
    stored = api.update_status("ResourceClaim", "default", "c", lambda s: s.update(devices=[good]))
    assert stored["status"]["devices"] == [good]
    bad = [{**good, "device": "gpu-1", "conditions": [{**ready, "status": "Maybe", "reason": "not ok"}],
            "networkData": {"ips": ["10.9.8.7", "2001:0db8::1/64"]}}, good, good]
    with pytest.raises(Invalid) as refused:
        api.update_status("ResourceClaim", "default", "c", lambda s: s.update(devices=bad))
    assert refused.value.fields == [
        ("status.devices[0]", "Invalid value: gpu.example.com/n1/gpu-1: must be an allocated device in the claim"),
        ("status.devices[0].conditions[0].status",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        ("status.devices[0].conditions[0].reason",
         "Invalid value: \"not ok\": a condition reason must start with alphabetic character, optionally followed "
         "by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' "
         "(e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
         "for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"),
        ("status.devices[0].networkData.ips[0]",
         'Invalid value: "10.9.8.7": must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)'),
        ("status.devices[0].networkData.ips[1]",
         'Invalid value: "2001:0db8::1/64": must be in canonical form ("2001:db8::1/64")'),
        ("status.devices[2]", "Duplicate value: gpu.example.com/n1/gpu-0"),
    ]


def test_a_spec_is_judged_the_same_however_often_it_is_checked() -> None:
    """Specs found valid are remembered (claims from one template share theirs); an invalid one is
    reported every time, and a valid one stays valid under another claim's name."""
    bad = claim(exact(count=0))
    good = claim(exact(count=2))
    for _ in range(3):
        assert object_problems(copy.deepcopy(good)) == []
        assert object_problems(copy.deepcopy(bad)) == object_problems(copy.deepcopy(bad)) != []
    renamed = copy.deepcopy(good)
    renamed["metadata"]["name"] = "Not_A_Name"
    assert [p for p in object_problems(renamed) if p.startswith("metadata.name")]
