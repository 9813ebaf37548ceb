"""The CEL libraries of v1.35's DRA environment beyond the ones selectors use most: Kubernetes' URL
and format libraries, cel-go's optional values, the lists extension's costs, and what the base
environment leaves out (cel-go's math extension)."""

from __future__ import annotations

import pytest

from kubesched.api.dra.cel import CELError, compile_selector, device_view

NIC = device_view("nic.example.com", {"endpoint": {"string": "https://nic.example.com:8443/api/v1?zone=a&zone=b"},
                                      "name": {"string": "eth-0"}}, {})


def _matches(expression: str) -> bool:
    return compile_selector(expression).matches(NIC)


def _refused(expression: str) -> str:
    with pytest.raises(CELError) as e:
        compile_selector(expression)
    return str(e.value)


@pytest.mark.parametrize("expression", [
    "url(device.attributes['nic.example.com'].endpoint).getScheme() == 'https'",
    "url(device.attributes['nic.example.com'].endpoint).getHost() == 'nic.example.com:8443'",
    "url(device.attributes['nic.example.com'].endpoint).getHostname() == 'nic.example.com'",
    "url(device.attributes['nic.example.com'].endpoint).getPort() == '8443'",
    "url(device.attributes['nic.example.com'].endpoint).getEscapedPath() == '/api/v1'",
    "url(device.attributes['nic.example.com'].endpoint).getQuery() == {'zone': ['a', 'b']}",
    "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
    "url('https://[::1]:80/').getHostname() == '::1' && url('https://example.com/').getPort() == ''",
    "url('/path').getScheme() == '' && url('https://example.com').getEscapedPath() == ''",
    "url('https://example.com/path?').getQuery() == {}",
    "isURL('https://example.com/') && isURL('/absolute') && !isURL('relative') && !isURL('')",
    "url('https://a.example/') == url('https://a.example/') && url('https://a.example/') != url('https://b.example/')",
])
def test_the_url_library_reads_urls_as_kubernetes_does(expression: str) -> None:
    assert _matches(expression)


@pytest.mark.parametrize(("expression", "message"), [
    ("url('relative') == url('/a')",
     'URL parse error during conversion from string: parse "relative": invalid URI for request'),
    ("url('') == url('/a')", 'URL parse error during conversion from string: parse "": empty url'),
    ("url(':x') == url('/a')", 'URL parse error during conversion from string: parse ":x": missing protocol scheme'),
])
def test_a_url_that_does_not_parse_is_an_error_at_run_time(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=message):
        _matches(expression)


@pytest.mark.parametrize("expression", [
    "!format.dns1123Label().validate(device.attributes['nic.example.com'].name).hasValue()",
    "format.dns1123Label().validate('Eth_0').value() == ['a lowercase RFC 1123 label must consist of lower case "
    "alphanumeric characters or \\'-\\', and must start and end with an alphanumeric character']",
    "format.named('dns1035Label').hasValue() && !format.named('nosuch').hasValue()",
    "format.named('dns1123Subdomain').value().validate('a.b-c') == optional.none()",
    "format.dns1123LabelPrefix().validate('gen-').orValue([]) == [] && format.dns1123Label().validate('gen-').hasValue()",
    "format.qualifiedName().validate('example.com/name') == optional.none()",
    "format.labelValue().validate('').orValue(['x']) == ['x']",
    "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000') == optional.none() "
    "&& format.uuid().validate('nope').value() == ['does not match the UUID format']",
    "format.byte().validate('aGVsbG8=') == optional.none() && format.byte().validate('***').value() == ['invalid base64']",
    "format.date().validate('2021-01-01') == optional.none() && format.date().validate('2021-02-30').hasValue()",
    "format.datetime().validate('2021-01-01T00:00:00Z') == optional.none() && format.datetime().validate('x').hasValue()",
    "format.uri().validate('https://example.com') == optional.none() "
    "&& format.uri().validate('x').value() == ['parse \"x\": invalid URI for request']",
    "format.dns1123Label() == format.dns1123Label() && format.dns1123Label() != format.dns1035Label()",
])
def test_the_format_library_validates_as_kubernetes_does(expression: str) -> None:
    assert _matches(expression)


@pytest.mark.parametrize("expression", [
    "optional.of(1).hasValue() && optional.of(1).value() == 1 && !optional.none().hasValue()",
    "optional.none().orValue(3) == 3 && optional.of(2).orValue(3) == 2",
    "optional.none().or(optional.of('a')).value() == 'a' && optional.of('b').or(optional.of('a')).value() == 'b'",
    "!optional.ofNonZeroValue('').hasValue() && !optional.ofNonZeroValue(0).hasValue() "
    "&& optional.ofNonZeroValue([1]).hasValue()",
])
def test_optional_values_run_as_cel_gos(expression: str) -> None:
    assert _matches(expression)


def test_the_value_of_none_is_an_error_at_run_time() -> None:
    with pytest.raises(CELError, match=r"optional.none\(\) dereference"):
        _matches("optional.none().value() == 1")


@pytest.mark.parametrize(("expression", "message"), [
    ("url(1) == url('/a')", "found no matching overload for 'url' applied to '(int)'"),
    ("url('/a').getPort() == 1", "found no matching overload for '_==_' applied to '(string, int)'"),
    ("url('/a').getQuery()['k'] == 'v'", "found no matching overload for '_==_' applied to '(list(string), string)'"),
    ("url('/a').scheme == 'https'", "undefined field 'scheme'"),
    ("format.dns1123Label().validate(1).hasValue()",
     "found no matching overload for 'validate' applied to 'kubernetes.NamedFormat.(int)'"),
    ("format.dns1123Label().validate('a')", "must evaluate to bool or the unknown type, not optional_type(list(string))"),
    ("format.nosuch().validate('a').hasValue()", "undeclared reference to 'format'"),
    ("optional.of(1).value() == 'a'", "found no matching overload for '_==_' applied to '(int, string)'"),
    ("optional.of(1).orValue('a') == 1",
     "found no matching overload for 'orValue' applied to 'optional_type(int).(string)'"),
    ("(1).hasValue()", "found no matching overload for 'hasValue' applied to 'int.()'"),
])
def test_misused_library_functions_are_refused_with_cel_gos_message(expression: str, message: str) -> None:
    assert message in _refused(expression)


@pytest.mark.parametrize("expression", [
    "math.greatest(1, 2) == 2", "math.abs(-1) == 1", "math.bitAnd(3, 1) == 1", "math.ceil(1.2) == 2.0",
])
def test_cel_gos_math_extension_is_not_in_dras_environment(expression: str) -> None:
    """v1.35's base environment (environment.MustBaseEnvSet) loads no math extension, so a
    selector calling one is refused when it is stored, as kube-apiserver refuses it."""
    message = _refused(expression)
    assert message.startswith("compilation failed: ERROR: <input>:1:1: undeclared reference to 'math' (in container '')")
    assert "undeclared reference to '" + expression.split(".")[1].split("(")[0] + "' (in container '')" in message


@pytest.mark.parametrize(("expression", "cost"), [
    # url(): a traversal of the text (an attribute value is at most 64 characters); accessors 1
    ("url(device.attributes['x'].a).getScheme() == 'https'", 13),
    # URL equality: a traversal of the right side's size when known
    ("url('https://a.example/') == url('https://a.example/')", 6),
    # validate: a regular expression of 128 characters (32 at 0.25 a character) over the string
    ("format.dns1123Label().validate(device.attributes['x'].a).hasValue()", 230),
    ("format.named('uri').hasValue()", 2),
    ("format.dns1123Label() == format.dns1035Label()", 9),
    ("optional.of(1).hasValue()", 2),
])
def test_url_format_and_optional_costs_are_kubernetes_estimates(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


@pytest.mark.parametrize(("expression", "cost"), [
    # slice: the result's elements (end - start), 1 for the call, 10 for the new list
    ("[1, 2, 3, 4].slice(1, 3).size() == 2", 25),
    # reverse and flatten: the list's elements (times the depth)
    ("[1, 2, 3].reverse().size() == 3", 26),
    ("[[1], [2]].flatten(2).size() == 2", 47),
    # distinct and sort: n² comparisons at 2 each (2.1 for strings)
    ("[1, 2, 3].distinct().size() == 3", 41),
    ("['a', 'b', 'c'].sort().size() == 3", 42),
    ("[1, 2, 3].sort().size() == 3", 41),
    # lists.range: cel-go's estimator never applies, so 1
    ("lists.range(3).size() == 3", 3),
])
def test_the_lists_extension_costs_as_its_version_3_estimators(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


def test_flattening_to_an_unknown_depth_is_too_complex() -> None:
    depth = "device.attributes['x'].d"
    assert compile_selector(f"[[1]].flatten({depth}).size() == 1").max_cost > 1_000_000


ATTRS = device_view("gpu.example.com", {"model": {"string": "a100"}, "cores": {"int": 108}, "mig": {"bool": True}}, {})


@pytest.mark.parametrize("expression", [
    "[1, 2, 3].all(i, v, i < v) && !{'a': 'a'}.all(k, v, k != v)",
    "device.attributes['gpu.example.com'].exists(k, v, k == 'cores' && v == 108)",
    "device.attributes['gpu.example.com'].existsOne(k, v, k.startsWith('m')) == false",
    "[1, 1, 2].exists_one(i, v, i == 2 && v == 2)",
    "[1, 2, 3].transformList(i, v, i * v + v) == [1, 4, 9]",
    "[1, 2, 3].transformList(i, v, i % 2 == 0, i * v + v) == [1, 9]",
    "[1, 2, 3].transformMap(i, v, i * v + v) == {0: 1, 1: 4, 2: 9}",
    "{'greeting': 'hello'}.transformMapEntry(k, v, {v: k}) == {'hello': 'greeting'}",
    "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v * 10) == {'b': 20}",
    "[3, 1, 2].sortBy(x, -x) == [3, 2, 1] && ['bb', 'a'].sortBy(s, size(s)) == ['a', 'bb']",
    "optional.of(2).optMap(x, x * 2).value() == 4 && !optional.none().optMap(x, x).hasValue()",
    "optional.of(2).optFlatMap(x, x > 1 ? optional.of(x) : optional.none()).hasValue()",
])
def test_two_variable_comprehensions_sort_by_and_optional_macros_run_as_cel_gos(expression: str) -> None:
    assert compile_selector(expression).matches(ATTRS)


def test_all_is_false_when_one_element_is_even_if_another_errs() -> None:
    """cel-go's `all` is logical AND over the elements: a false one decides it, an error only
    matters when none is false."""
    assert not compile_selector("[0, 1].all(i, v, 10 / v > 10)").matches(ATTRS)
    with pytest.raises(CELError, match="divide by zero"):
        compile_selector("[0, 1].all(i, v, 10 / v > 0)").matches(ATTRS)


@pytest.mark.parametrize(("expression", "message"), [
    ("{'a': 'x', 'b': 'x'}.transformMapEntry(k, v, {v: k}).size() == 1", "insert failed: key x already exists"),
    ("[1, 2].sortBy(x, [x]) == [1, 2]", "found no matching overload for '@sortByAssociatedKeys' "
     "applied to 'list(int).(list(list(int)))'"),
])
def test_misused_macros_are_refused(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        compile_selector(expression).matches(ATTRS)


@pytest.mark.parametrize(("expression", "message"), [
    ("[1, 2].all(i, v, v)", "found no matching overload for '_&&_' applied to '(bool, int)'"),
    ("device.driver.exists(i, v, true)",
     "expression of type 'string' cannot be range of a comprehension (must be list, map, or dynamic)"),
    ("[1].transformMapEntry(i, v, v).size() == 1",
     "found no matching overload for 'cel.@mapInsert' applied to '(map(dyn, dyn), int)'"),
    ("optional.of(1).optFlatMap(x, x).hasValue()",
     "found no matching overload for '_?_:_' applied to '(bool, int, optional_type(dyn))'"),
])
def test_macro_type_errors_are_refused_when_stored(expression: str, message: str) -> None:
    assert message in _refused(expression)


@pytest.mark.parametrize(("expression", "cost"), [
    # as cel-go's one-variable forms: the range, 1, and per element the step and loop condition
    ("[1, 2, 3].all(i, v, i < v)", 29),
    ("[1, 2, 3].existsOne(i, v, i == 2 && v == 2)", 30),
    # transformList appends (12 per element), transformMap inserts (3 per element) into {} (30)
    ("[1, 2, 3].transformList(i, v, v).size() == 3", 62),
    ("[1, 2, 3].transformMap(i, v, v).size() == 3", 55),
    # sortBy: the bind (10), the list, its keys (a map), n² comparisons at 2 each
    ("[3, 1, 2].sortBy(x, x).size() == 3", 103),
    ("optional.of(1).optMap(x, x).hasValue()", 17),
])
def test_macro_costs_are_their_expansions(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


def test_library_calls_are_charged_at_run_time_as_cel_gos_trackers_charge_them() -> None:
    """lists.range's result has no size estimate, so the sort of it is estimated over the
    limit and runs with its steps charged: 111 for the range of 100, 20,011 for sorting it."""
    selector = compile_selector("lists.range(100).sort().size() == 100")
    assert selector.max_cost > 1_000_000
    with pytest.raises(CELError, match="^operation cancelled: actual cost limit exceeded$"):
        selector.matches(ATTRS, cost_limit=20_000)
    assert selector.matches(ATTRS, cost_limit=21_000)


@pytest.mark.parametrize("expression", [
    "device.attributes['gpu.example.com'].?model.orValue('') == 'a100'",
    "device.attributes['gpu.example.com'].?nosuch.orValue('none') == 'none'",
    "device.attributes[?'gpu.example.com'].?cores.value() == 108",
    # an unknown domain is an empty map (upstream's map proxy), so the chain ends at the name
    "device.attributes[?'other.example.com'].hasValue() && !device.attributes[?'other.example.com'].?model.hasValue()",
    "device.attributes[?'gpu.example.com'].mig.value() && device.attributes[?'gpu.example.com']['mig'].value()",
    "[1, 2][?1].value() == 2 && ![1, 2][?2].hasValue()",
    "!{'a': {'b': 1}}.?x.b.hasValue() && {'a': {'b': 1}}.?a.b.value() == 1",
])
def test_optional_field_and_index_syntax_reads_absent_values_as_none(expression: str) -> None:
    """cel-go's `.?field` and `[?key]` (the optional types the base environment enables): none
    when absent, and every selection after one stays optional."""
    assert compile_selector(expression).matches(ATTRS)


@pytest.mark.parametrize(("expression", "message"), [
    ("device.?nosuch.hasValue()", "undefined field 'nosuch'"),
    ("device.driver.?x.hasValue()", "type 'string' does not support field selection"),
    ("[1, 2][?'a'].hasValue()", "found no matching overload for '_[?_]' applied to '(list(int), string)'"),
    ("device.attributes['gpu.example.com'].?model",
     "must evaluate to bool or the unknown type, not optional_type(google.protobuf.Any)"),
    ("device.driver.?", "Syntax error"),
])
def test_optional_syntax_is_type_checked(expression: str, message: str) -> None:
    assert message in _refused(expression)


@pytest.mark.parametrize(("expression", "cost"), [
    # `_?._` and `_[?_]` are calls (1 and their operands); a selection of an optional adds nothing
    ("device.attributes['x'].?a.hasValue()", 5),
    ("device.attributes[?'x'].?a.hasValue()", 5),
    ("device.attributes[?'x'].a.hasValue()", 4),
])
def test_optional_syntax_costs_as_cel_gos_calls(expression: str, cost: int) -> None:
    assert compile_selector(expression).max_cost == cost


@pytest.mark.parametrize(("expression", "message"), [
    ("[1, 'a'].size() == 2", "ERROR: <input>:1:5: expected type 'int' but found 'string'"),
    ("[1, 2.0].size() == 2", "ERROR: <input>:1:5: expected type 'int' but found 'double'"),
    ("{'a': 1, 'b': 'c'}.size() == 2", "ERROR: <input>:1:15: expected type 'int' but found 'string'"),
    ("[[1], ['a']].size() == 2", "expected type 'list(int)' but found 'list(string)'"),
])
def test_literals_mixing_types_are_refused_as_the_base_environment_does(expression: str, message: str) -> None:
    """Kubernetes' base environment makes aggregate literals homogeneous (cel-go's
    HomogeneousAggregateLiterals): a list's elements, a map's keys and values each of one type."""
    assert message in _refused(expression)


@pytest.mark.parametrize("expression", [
    "[1, dyn('a')].size() == 2",
    "['a', device.attributes['gpu.example.com'].model].size() == 2",
    "[[1], []].size() == 2",
])
def test_dynamic_elements_join_any_type(expression: str) -> None:
    assert compile_selector(expression).matches(ATTRS)


@pytest.mark.parametrize("expression", [
    "'%s-%s'.format(['a', 'b']) == 'a-b' && '%%'.format([]) == '%'",
    "'%d GPUs'.format([dyn(device.attributes['gpu.example.com'].cores)]) == '108 GPUs'",
    "'%s'.format([[1, 2]]) == '[1, 2]' && '%s'.format([['a']]) == '[\"a\"]'",
    "'%s'.format([{'b': 1.5, 'a': 2.0}]) == '{\"a\":2.000000, \"b\":1.500000}'",
    "'%.2f'.format([1234.5]) == '1,234.50' && '%f'.format([1.0]) == '1.000000' && '%e'.format([1234.5]) == '1.234500e+03'",
    "'%b %o %x %X'.format([5, 8, 255, 255]) == '101 10 ff FF' && '%x'.format(['hi']) == '6869'",
    "'%s %s'.format([1.5, 1234567.0]) == '1.5 1.234567e+06' && '%s'.format([true]) == 'true'",
])
def test_string_format_runs_as_cel_gos(expression: str) -> None:
    assert compile_selector(expression).matches(ATTRS)


@pytest.mark.parametrize(("expression", "message"), [
    ("'%d'.format(['a']) == ''",
     "ERROR: <input>:1:14: error during formatting: decimal clause can only be used on integers, was given string"),
    ("'%s %s'.format(['a']) == ''", "ERROR: <input>:1:15: index 1 out of range"),
    ("'%q'.format(['a']) == ''", 'could not parse formatting clause: unrecognized formatting clause "q"'),
    ("'%s'.format(['a', 'b']) == ''", "too many arguments supplied to string.format (expected 1, got 2)"),
    # an attribute value is google.protobuf.Any, which no clause takes until it is made dyn
    ("'%s'.format([device.attributes['gpu.example.com'].model]) == 'a100'", "was given google.protobuf.Any"),
])
def test_a_literal_format_is_checked_when_stored(expression: str, message: str) -> None:
    assert message in _refused(expression)


def test_a_format_error_at_run_time_keeps_cel_gos_words() -> None:
    with pytest.raises(CELError, match="^error during formatting: decimal clause can only be used on integers, "
                                       "was given string$"):
        compile_selector("'%d'.format([dyn('a')]) == ''").matches(ATTRS)


def test_exists_one_is_also_spelled_exists_one_in_camel_case() -> None:
    """cel-go's standard macros have `existsOne(x, p)` beside `exists_one(x, p)`, expanded alike."""
    for spelling in ("existsOne", "exists_one"):
        selector = compile_selector(f"device.attributes['gpu.example.com'].{spelling}(k, k == 'model')")
        assert selector.max_cost == 133
        assert selector.matches(ATTRS)
        assert "found no matching overload for '_?_:_' applied to '(int, int, int)'" in _refused(
            f"[1].{spelling}(x, x)")
