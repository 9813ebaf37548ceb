"""CEL device selectors through `kubesched serve`: kube-apiserver v1.35 compiles a DeviceClass's
or a claim's selectors when the object is written, in DRA's CEL environment (Kubernetes' base
environment, which has the URL, format, semver and lists libraries, optional values and
two-variable comprehensions, but not cel-go's math extension), and refuses one that does not
compile with a 422 naming the expression's field."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.serve.harness import Served


def _post(served: Served, path: str, obj: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(f"{served.url}{path}", json.dumps(obj).encode(),
                                     {"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _device_class(name: str, expression: str) -> dict[str, object]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def _claim(name: str, expression: str) -> dict[str, object]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": expression}}]}}]}}}


@pytest.mark.parametrize(("expression", "message"), [
    ("math.greatest(device.attributes['gpu.example.com'].cores, 8) > 8",
     "compilation failed: ERROR: <input>:1:1: undeclared reference to 'math' (in container '')"),
    ("math.abs(-1) == 1", "undeclared reference to 'abs' (in container '')"),
    ("base64.decode('YQ==') == b'a'", "undeclared reference to 'base64' (in container '')"),
    ("url(device.driver).getPort() == 443", "found no matching overload for '_==_' applied to '(string, int)'"),
    ("format.dns1123Label().validate(device.driver)",
     "must evaluate to bool or the unknown type, not optional_type(list(string))"),
    ("[1, 2].sortBy(x, [x]).size() == 2",
     "found no matching overload for '@sortByAssociatedKeys' applied to 'list(int).(list(list(int)))'"),
])
def test_a_device_class_with_an_unsupported_or_misused_function_is_refused(served: Served, expression: str,
                                                                          message: str) -> None:
    code, status = _post(served, "/apis/resource.k8s.io/v1/deviceclasses", _device_class("refused", expression))
    assert code == 422, status
    assert status["reason"] == "Invalid"
    cause = status["details"]["causes"][0]  # type: ignore[index]
    assert cause["field"] == "spec.selectors[0].cel.expression"
    assert cause["reason"] == "FieldValueInvalid"
    assert message in cause["message"], cause["message"]
    assert str(status["message"]).startswith('DeviceClass.resource.k8s.io "refused" is invalid: '
                                             "spec.selectors[0].cel.expression: Invalid value: ")


def test_a_claim_with_a_misused_function_is_refused_naming_its_request(served: Served) -> None:
    code, status = _post(served, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
                         _claim("refused", "url('/a').scheme == 'https'"))
    assert code == 422, status
    cause = status["details"]["causes"][0]  # type: ignore[index]
    assert cause["field"] == "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert "compilation failed: ERROR: <input>:1:10: undefined field 'scheme'" in cause["message"]


@pytest.mark.parametrize("expression", [
    "format.dns1123Label().validate(device.driver).hasValue() == false",
    "device.attributes['gpu.example.com'].exists(k, v, k == 'model' && v == 'a100')",
    "url('https://' + device.driver + '/').getHostname() == device.driver",
    "optional.of(device.driver).orValue('') != '' && semver('v1.2', true).minor() == 2",
    "['b', 'a'].sortBy(s, s)[0] == 'a' && [1, 2].transformList(i, v, v * 2) == [2, 4]",
])
def test_selectors_using_the_environments_libraries_are_stored(served: Served, expression: str) -> None:
    code, status = _post(served, "/apis/resource.k8s.io/v1/deviceclasses", _device_class("stored", expression))
    assert code == 201, status
    stored = json.loads(served.kubectl("get", "deviceclass", "stored", "-o", "json"))
    assert stored["spec"]["selectors"][0]["cel"]["expression"] == expression
