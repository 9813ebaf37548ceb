"""CEL device selectors checked and costed as kube-apiserver v1.35 does when it stores them.

The expected costs are those upstream's own tests of the DRA CEL compiler record
(k8s.io/dynamic-resource-allocation/cel), so the estimator agrees with cel-go's on them.
"""

from __future__ import annotations

import pytest

from kubesched.api.dra.cel import CELError, compile_selector, device_view

NESTED_ALL = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, " * 7 + "int('1'.find('[0-9]*')) < 100" + ")" * 7


@pytest.mark.parametrize(("expression", "cost"), [
    ('device.driver == ""', 2),
    ('device.driver == "dra.example.com"', 4),
    ('"no-such-domain" in device.attributes', 3),
    ('device.attributes["dra.example.com"].name', 4),
    ('device.attributes["dra.example.com"]["name"]', 4),
    ('device.attributes["dra.example.com"].name == "fish"', 5),
    ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', 15),
    ('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))', 6),
    ('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 6),
    ('!("name" in device.capacity["dra.example.com"]) || '
     'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 11),
    ('device.attributes.exists_one(x, x == "dra.example.com")', 164),
    ('device.attributes["dra.example.com"].exists_one(x, x == "services")', 133),
    ('device.attributes["dra.example.com"].services.split("example").size() >= 2', 19),
    ('device.attributes["dra.example.com"].services.matches("[^a]?sym")', 18),
    ("device.allowMultipleAllocations == true", 3),
    (NESTED_ALL, 85555551),
])
def test_the_estimate_is_cel_gos(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


@pytest.mark.parametrize(("expression", "message"), [
    ("device.driver + 1 == 2",
     "compilation failed: ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(string, int)'\n"
     " | device.driver + 1 == 2\n | ..............^"),
    ("device.nosuchfield",
     "compilation failed: ERROR: <input>:1:7: undefined field 'nosuchfield'\n | device.nosuchfield\n | ......^"),
    ("device.capacity['x'].mem.compareTo(1) == 0",
     "found no matching overload for 'compareTo' applied to 'kubernetes.Quantity.(int)'"),
    ("device.capacity['x'].mem > quantity('1Gi')",
     "found no matching overload for '_>_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'"),
    ("device.driver.foo == 'a'", "type 'string' does not support field selection"),
    ("device.driver.nosuch()", "undeclared reference to 'nosuch' (in container '')"),
    ("device.attributes['x'].names.exists(n, n == 'a')",
     "expression of type 'google.protobuf.Any' cannot be range of a comprehension (must be list, map, or dynamic)"),
    ("device.attributes[1].x", "found no matching overload for '_[_]' applied to "
     "'(map(string, map(string, google.protobuf.Any)), int)'"),
    ("device.attributes['x'].y.z", "must evaluate to bool or the unknown type, not dyn"),
])
def test_type_errors_are_refused_with_cel_gos_message(expression: str, message: str) -> None:
    with pytest.raises(CELError) as e:
        compile_selector(expression)
    assert message in str(e.value)


def test_dynamic_attribute_values_type_check_against_anything() -> None:
    for expression in ("device.attributes['x'].a > 1 && device.attributes['x'].b == 'c'",
                       "device.attributes['x'].v.isGreaterThan(semver('1.0.0'))",
                       "device.attributes.exists(d, d.startsWith('gpu'))",
                       "device.capacity['x'].mem.compareTo(quantity('1Gi')) >= 0"):
        assert compile_selector(expression).max_cost < 1_000_000


def test_a_selector_over_the_runtime_limit_stops_with_cel_gos_error() -> None:
    """The estimate bounds the actual cost, so only a selector estimated over the limit is
    charged as it runs; a low limit (upstream's Options.CostLimit) shows it stopping."""
    view = device_view("dra.example.com", {}, {})
    cheap = compile_selector("[1, 2, 3].all(x, x > 0)")
    assert cheap.matches(view, cost_limit=1000)
    nested = compile_selector("[1, 2, 3, 4, 5].all(x, [1, 2, 3, 4, 5].all(y, [1, 2, 3, 4, 5].all(z, z > 0)))")
    assert nested.max_cost > 200
    with pytest.raises(CELError, match="^operation cancelled: actual cost limit exceeded$"):
        nested.matches(view, cost_limit=200)
    assert nested.matches(view, cost_limit=100_000)


def test_allow_multiple_allocations_is_a_field_of_new_selectors_only_with_consumable_capacity() -> None:
    """v1.35 declares it in the environment of new expressions only with DRAConsumableCapacity on;
    stored expressions keep it either way."""
    expression = "device.allowMultipleAllocations"
    assert compile_selector(expression).max_cost == 2
    with pytest.raises(CELError, match="undefined field 'allowMultipleAllocations'"):
        compile_selector(expression, consumable_capacity=False)


GPU = device_view("gpu.example.com", {"model": {"string": " A100-SXM "}, "index": {"int": 3}},
                  {"memory": {"value": "40Gi"}})


@pytest.mark.parametrize("expression", [
    "device.attributes['gpu.example.com'].model.trim().lowerAscii() == 'a100-sxm'",
    "device.driver.upperAscii() == 'GPU.EXAMPLE.COM'",
    "device.driver.split('.') == ['gpu', 'example', 'com'] && device.driver.split('.', 2).size() == 2",
    "device.driver.replace('.', '-', 1) == 'gpu-example.com' && device.driver.charAt(0) == 'g'",
    "device.driver.indexOf('.') == 3 && device.driver.lastIndexOf('.') == 11 && device.driver.substring(4, 11) == 'example'",
    "strings.quote(device.driver) == '\"gpu.example.com\"'",
    "device.driver.find('[a-z]+') == 'gpu' && device.driver.findAll('[a-z]+', 2) == ['gpu', 'example']",
    "[1, 2, 3].isSorted() && [3, 1, 2].sum() == 6 && [3, 1, 2].max() == 3 && [3, 1, 2].min() == 1",
    "[3, 1, 2].sort() == [1, 2, 3] && [1, 1, 2].distinct() == [1, 2] && [1, 2].reverse() == [2, 1]",
    "[[1], [2, 3]].flatten() == [1, 2, 3] && [1, 2, 3].slice(1, 3) == [2, 3] && lists.range(3) == [0, 1, 2]",
    "[1, 2, 3].indexOf(2) == 1 && [1, 2, 2].lastIndexOf(2) == 2",
    "sets.contains([1, 2, 3], [3, 1]) && sets.equivalent([1, 2], [2, 1, 1]) && !sets.intersects([1], [2])",
])
def test_the_library_functions_of_dras_environment_type_check_and_run(expression: str) -> None:
    """Kubernetes' base CEL environment, which v1.35's DRA environment extends: cel-go's
    strings and sets extensions and Kubernetes' lists and regex libraries."""
    assert compile_selector(expression).matches(GPU)


@pytest.mark.parametrize(("expression", "message"), [
    ("device.driver.lowerAscii(1) == ''",
     "found no matching overload for 'lowerAscii' applied to 'string.(int)'"),
    ("[1, 2].isSorted() == 1", "found no matching overload for '_==_' applied to '(bool, int)'"),
    ("['a'].sum() == 'a'", "found no matching overload for 'sum' applied to 'list(string).()'"),
    ("sets.contains([1], 1)", "found no matching overload for 'sets.contains' applied to '(list(int), int)'"),
    ("device.driver.split(1).size() > 0", "found no matching overload for 'split' applied to 'string.(int)'"),
])
def test_library_functions_refuse_wrong_argument_types_with_cel_gos_message(expression: str, message: str) -> None:
    with pytest.raises(CELError) as e:
        compile_selector(expression)
    assert message in str(e.value)


@pytest.mark.parametrize(("expression", "cost"), [
    # lists: 1 per element compared (Kubernetes' library estimator)
    ("[1, 2, 3].isSorted()", 13),
    ("[1, 2, 3].max() == 3", 14),
    # a string's indexOf: a traversal of it (the driver name is at most 63 characters)
    ("device.driver.indexOf('.') == 3", 10),
    # cel-go's sets extension: 1 a call
    ("sets.contains([1], [1])", 21),
])
def test_library_costs_are_cel_gos(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


def test_joining_strings_of_unknown_length_is_too_complex_as_upstream_estimates_it() -> None:
    """The element size of a list the environment does not declare is unknown, so `join` is
    estimated at the most a string could cost: validation refuses it."""
    assert compile_selector("['a', 'b'].join('-') == 'a-b'").max_cost > 1_000_000


NIC = device_view("nic.example.com", {"address": {"string": "10.1.2.3"}, "subnet": {"string": "10.1.0.0/16"},
                                      "v6": {"string": "2001:db8::7"}}, {})
OTHER_NIC = device_view("nic.example.com", {"address": {"string": "192.168.0.9"},
                                            "subnet": {"string": "192.168.0.0/24"}, "v6": {"string": "fe80::1"}}, {})


@pytest.mark.parametrize("expression", [
    "cidr('10.0.0.0/8').containsIP(device.attributes['nic.example.com'].address)",
    "cidr('10.0.0.0/8').containsCIDR(device.attributes['nic.example.com'].subnet)",
    "cidr(device.attributes['nic.example.com'].subnet).containsIP(ip(device.attributes['nic.example.com'].address))"
    " && cidr(device.attributes['nic.example.com'].subnet).prefixLength() == 16",
    "ip(device.attributes['nic.example.com'].v6).isGlobalUnicast() && ip(device.attributes['nic.example.com'].v6).family() == 6",
])
def test_ip_and_cidr_selectors_select_devices_by_address(expression: str) -> None:
    """Kubernetes' IP and CIDR libraries (in the base environment since v1.30): a NIC's address
    attributes matched against networks."""
    selector = compile_selector(expression)
    assert selector.matches(NIC)
    assert not selector.matches(OTHER_NIC)


@pytest.mark.parametrize("expression", [
    "isIP('1.2.3.4') && !isIP('1.2.3.04') && !isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0')",
    "isCIDR('1.2.3.0/24') && !isCIDR('1.2.3.4') && !isCIDR('1.2.3.0/33')",
    "ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')",
    "ip('127.0.0.1').isLoopback() && ip('::').isUnspecified() && ip('169.254.169.254').isLinkLocalUnicast()",
    "ip('224.0.0.1').isLinkLocalMulticast() && !ip('255.255.255.255').isGlobalUnicast()",
    "string(ip('10.0.0.1')) == '10.0.0.1' && string(cidr('10.0.0.1/8')) == '10.0.0.1/8'",
    "cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
    "cidr('192.168.0.0/24').prefixLength() == 24 && !cidr('2001:db8::/32').containsIP('192.168.1.1')",
    "!cidr('10.0.0.0/16').containsCIDR('10.0.0.0/8') && cidr('10.0.0.0/8').containsCIDR(cidr('10.0.0.0/8'))",
])
def test_the_ip_and_cidr_functions_run_as_kubernetes_does(expression: str) -> None:
    assert compile_selector(expression).matches(GPU)


@pytest.mark.parametrize(("expression", "message"), [
    ("ip(1) == ip('1.2.3.4')", "found no matching overload for 'ip' applied to '(int)'"),
    ("cidr('10.0.0.0/8').containsIP(1)", "found no matching overload for 'containsIP' applied to 'net.CIDR.(int)'"),
    ("ip('1.2.3.4').prefixLength() == 1", "found no matching overload for 'prefixLength' applied to 'net.IP.()'"),
    ("ip('1.2.3.4') == '1.2.3.4'", "found no matching overload for '_==_' applied to '(net.IP, string)'"),
])
def test_ip_and_cidr_functions_refuse_wrong_argument_types(expression: str, message: str) -> None:
    with pytest.raises(CELError) as e:
        compile_selector(expression)
    assert message in str(e.value)


@pytest.mark.parametrize(("expression", "cost"), [
    # parsing a traversal of the text (0.1 a character, an attribute value at most 64), an
    # accessor 1; containsIP compares two addresses of 4 to 16 bytes (ceil(32 * 0.1) = 4), plus
    # a traversal of a string argument
    ("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", 6),
    ("cidr('10.0.0.0/8').containsIP(device.attributes['x'].a)", 16),
    ("isIP(device.attributes['x'].a)", 11),
    ("ip.isCanonical(device.attributes['x'].a)", 17),  # parsed and compared: 0.2 a character
    ("cidr('10.0.0.1/8').ip().family() == 4", 4),
    # containsCIDR once more (ceil(1.6) = 2) and 1
    ("cidr('10.0.0.0/8').containsCIDR(cidr('10.1.0.0/16'))", 10),
    # equality of two IPs is O(1)
    ("ip('10.0.0.1') == ip('10.0.0.1')", 3),
])
def test_ip_and_cidr_costs_are_kubernetes_estimates(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


def test_base64_is_not_in_dras_environment() -> None:
    """cel-go's encoders extension is not among the libraries of Kubernetes' base environment,
    which DRA's extends, so v1.35 refuses a selector calling it."""
    with pytest.raises(CELError, match="undeclared reference to 'base64'"):
        compile_selector("base64.encode(b'a') == 'YQ=='")
