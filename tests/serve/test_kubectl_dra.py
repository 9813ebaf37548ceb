"""Dynamic Resource Allocation through `kubesched serve` with the real kubectl: the API server
refuses what kube-apiserver refuses (a DeviceClass whose CEL selector does not compile), defaults
claims as it does, shows the four kinds with kubectl's columns, and takes claim status through
the status subresource only."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.serve.harness import Served, wait_for

BROKEN_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken}
spec:
  selectors:
  - cel: {expression: "device.driver =="}
"""

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {kubernetes.io/hostname: gpu-1}}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-1
  pool: {name: gpu-1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: a100}}, capacity: {memory: {value: 80Gi}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""


def test_a_selector_that_does_not_compile_type_check_or_fit_the_cost_limit_is_refused(served: Served) -> None:
    out = served.kubectl("apply", "-f", "-", input=BROKEN_CLASS, check=False)
    assert out.startswith('The DeviceClass "broken" is invalid: spec.selectors[0].cel.expression: '
                          'Invalid value: "device.driver ==": compilation failed'), out
    assert "broken" not in served.kubectl("get", "deviceclasses", "-o", "name")
    body = json.dumps(yaml.safe_load(BROKEN_CLASS)).encode()
    request = urllib.request.Request(f"{served.url}/apis/resource.k8s.io/v1/deviceclasses", body,
                                     {"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 422
    status = json.loads(refused.value.read())
    assert status["message"].startswith('DeviceClass.resource.k8s.io "broken" is invalid: '
                                        "spec.selectors[0].cel.expression: Invalid value: ")
    assert status["details"]["causes"][0]["field"] == "spec.selectors[0].cel.expression"
    assert status["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    # kube-apiserver type-checks a selector and estimates its cost when it is stored.
    out = served.kubectl("apply", "-f", "-", check=False, input="""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: typo}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: "device.capacity['gpu.example.com'].memory > quantity('40Gi')"}
""")
    assert out.startswith('The ResourceClaim "typo" is invalid: spec.devices.requests[0].exactly.selectors[0].'
                          "cel.expression: Invalid value: ") and "compilation failed: ERROR: <input>:1:43: found no " \
        "matching overload for '_>_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'" in out, out
    nested = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, " * 5 + "device.driver.matches('gpu.*')" + ")" * 5
    out = served.kubectl("apply", "-f", "-", check=False, input=f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: costly}}
spec:
  selectors:
  - cel: {{expression: "{nested}"}}
""")
    assert out.strip() == ('The DeviceClass "costly" is invalid: spec.selectors[0].cel.expression: '
                           "Forbidden: too complex, exceeds cost limit"), out
    # DRAConsumableCapacity is off: a new selector's device has no allowMultipleAllocations.
    out = served.kubectl("apply", "-f", "-", check=False, input="""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: shared}
spec:
  selectors:
  - cel: {expression: "device.allowMultipleAllocations"}
""")
    assert out.startswith('The DeviceClass "shared" is invalid: spec.selectors[0].cel.expression: Invalid value: '
                          '"device.allowMultipleAllocations": compilation failed: ERROR: <input>:1:7: undefined field '
                          "'allowMultipleAllocations'"), out


def test_dra_objects_read_back_as_in_a_cluster(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=CLUSTER)
    slices = served.kubectl("get", "resourceslices").splitlines()
    assert slices[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert slices[1].split()[:4] == ["gpu-1-gpus", "gpu-1", "gpu.example.com", "gpu-1"]
    classes = served.kubectl("get", "deviceclasses").splitlines()
    assert classes[0].split() == ["NAME", "AGE"] and classes[1].split()[0] == "gpu.example.com"
    claim = json.loads(served.kubectl("get", "resourceclaim", "one-gpu", "-o", "json"))
    # The API server's defaults: one device, counted exactly.
    assert claim["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
    by_field = served.kubectl("get", "resourceslices", "--field-selector", "spec.nodeName=gpu-1", "-o", "name")
    assert by_field.split() == ["resourceslice.resource.k8s.io/gpu-1-gpus"]


def test_claim_status_is_written_through_its_subresource(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=CLUSTER)
    assert served.kubectl("get", "resourceclaims", "--no-headers").split()[:2] == ["one-gpu", "pending"]
    allocation = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-1",
                                           "device": "gpu-0"}]}}
    # A patch of the claim itself leaves its status alone, as kube-apiserver's strategy does.
    served.kubectl("patch", "resourceclaim", "one-gpu", "--type=merge", "-p",
                   json.dumps({"status": {"allocation": allocation}}))
    assert served.kubectl("get", "resourceclaims", "--no-headers").split()[1] == "pending"
    served.kubectl("patch", "resourceclaim", "one-gpu", "--subresource=status", "--type=merge", "-p",
                   json.dumps({"status": {"allocation": allocation}}))
    wait_for(lambda: served.kubectl("get", "resourceclaims", "--no-headers").split()[1] == "allocated",
             what="the claim to show allocated")
    # Consumers without an allocation are refused, field path and all.
    out = served.kubectl("patch", "resourceclaim", "one-gpu", "--subresource=status", "--type=merge", "-p",
                         json.dumps({"status": {"allocation": None, "reservedFor": [
                             {"resource": "pods", "name": "p", "uid": "u1"}]}}), check=False)
    assert "status.reservedFor: Forbidden: may not be specified when `allocated` is not set" in out
    # The spec may not change once the claim exists.
    out = served.kubectl("patch", "resourceclaim", "one-gpu", "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/devices/requests/0/exactly/count", "value": 2}]), check=False)
    assert out.startswith('The ResourceClaim "one-gpu" is invalid: spec: Invalid value: '), out
    assert out.rstrip().endswith(": field is immutable")


def test_beta_versions_and_gated_kinds_are_not_served(served: Served) -> None:
    out = served.kubectl("get", "resourceclaims.v1beta1.resource.k8s.io", check=False)
    assert "the server doesn't have a resource type" in out
    assert "v1" in served.kubectl("api-versions").split("resource.k8s.io/")[1].split()[0]
    # kube-apiserver installs DeviceTaintRules only while DRADeviceTaintRules is on.
    assert "devicetaintrules" not in served.kubectl("api-resources", "--api-group=resource.k8s.io")
    assert "resource.k8s.io/v1alpha3" not in served.kubectl("api-versions")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{served.url}/apis/resource.k8s.io/v1alpha3/devicetaintrules", timeout=30)
    assert missing.value.code == 404


def test_device_taint_rules_are_served_in_v1alpha3_with_their_gate(tmp_path: Path) -> None:
    served = Served(tmp_path, args=["--feature-gates", "DRADeviceTaints=true,DRADeviceTaintRules=true"]).start()
    try:
        _device_taint_rules(served)
    finally:
        served.kill()


def _device_taint_rules(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input="""
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: fabric-down}
spec:
  deviceSelector: {driver: gpu.example.com, pool: gpu-1}
  taint: {key: example.com/fabric-down, effect: NoExecute}
""")
    rules = served.kubectl("get", "devicetaintrules").splitlines()
    assert rules[0].split() == ["NAME", "AGE"] and rules[1].split()[0] == "fabric-down"
    rule = json.loads(served.kubectl("get", "devicetaintrule", "fabric-down", "-o", "json"))
    assert rule["spec"]["taint"]["timeAdded"]  # stamped by the API server
    out = served.kubectl("apply", "-f", "-", check=False, input="""
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: broken}
spec:
  taint: {key: example.com/x, effect: PreferNoSchedule}
""")
    assert 'spec.taint.effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", ' \
           '"NoSchedule", "None"' in out, out
