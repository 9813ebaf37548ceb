"""YAML reads as kubectl reads it: go-yaml v2 resolves each scalar, sigs.k8s.io/yaml converts to
JSON. Each row is what `kubectl apply -f` would send for the YAML (the value Go gives)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.errors import InputError
from kubesched.api.loader import CDumper, Dumper, load_paths, read_yaml


def _read(text: str, tmp_path: Path) -> object:
    path = tmp_path / "v.yaml"
    path.write_text(text)
    [obj] = load_paths([str(path)])
    return obj.obj


# (plain scalar as a value, the value in Kubernetes' JSON form)
SCALARS = [
    ("=", "="),                      # PyYAML's `value` tag: Go has none
    ("<<", "<<"),                    # a merge key only as a key
    ("y", True), ("Y", True), ("n", False), ("N", False),
    ("yes", True), ("No", False), ("on", True), ("OFF", False), ("True", True), ("FALSE", False),
    ("tRUE", "tRUE"), ("yES", "yES"),
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("", None), ("nUll", "nUll"),
    ("0755", 493), ("0o755", 493), ("0O755", 493), ("0x1F", 31), ("0X1f", 31), ("-0x10", -16),
    ("0b101", 5), ("0B101", 5), ("-0b101", -5), ("+12", 12), ("-0", 0),
    ("1_000", 1000), ("1__0", 10), ("0x_1F", 31), ("1_", 1), ("_1", "_1"),
    ("09", 9), ("08.5", 8.5),        # not octal: a float, which JSON writes as 9
    ("1e3", 1000), ("1E3", 1000), ("1.5e3", 1500), ("1e-3", 0.001), ("1e+3", 1000),
    (".5", 0.5), ("-.5", -0.5), ("+.5e1", 5), ("1.", 1), ("2.0", 2), ("1.5", 1.5), ("-0.0", 0),
    ("1e20", 100000000000000000000), ("1e21", 1e21), ("1.2345678901234567e20", 123456789012345670000),
    ("1e400", "1e400"), (".5e999", ".5e999"),  # ParseFloat overflows: a string
    ("9223372036854775807", 9223372036854775807),
    ("9223372036854775808", 9223372036854775808),      # uint64
    ("18446744073709551616", 18446744073709552000),    # past uint64: a float, written in full
    ("-9223372036854775809", -9223372036854776000),
    ("0x10000000000000000", 18446744073709551616),     # past 64 bits, no float: a big.Int
    ("-0x10000000000000000", "-0x10000000000000000"),
    ("1:30", "1:30"), ("190:20:30.15", "190:20:30.15"),  # no base 60 in Go
    ("2001-12-14", "2001-12-14"), ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"),
    ("0x", "0x"), ("0b", "0b"), ("0x_", "0x_"), ("+", "+"), (".", "."), ("0x1p3", "0x1p3"),
    ("1-2", "1-2"), ("3h", "3h"), ("100Mi", "100Mi"), ("1.5.1", "1.5.1"),
]


@pytest.mark.parametrize("alias", ["", "a: &a 1\nb: *a\n"])  # the one-pass builder and the general path
@pytest.mark.parametrize(("text", "expected"), SCALARS)
def test_plain_scalars_read_as_go_reads_them(text: str, expected: object, alias: str, tmp_path: Path) -> None:
    value = _read(f"{alias}v: {text}\n", tmp_path)
    assert value["v"] == expected  # type: ignore[index]
    assert type(value["v"]) is type(expected)  # type: ignore[index]  # 2 and 2.0 are equal in Python


TAGGED = [
    ("!!str 123", "123"), ("!!str yes", "yes"), ('!!int "0x1F"', 31), ("!!float 1", 1), ('!!float "1.5"', 1.5),
    ('!!bool "yes"', True), ('!!null ""', None), ("!!binary aGVsbG8=", "hello"),
    ("!!binary |\n  aGVs\n  bG8=", "hello"), ("!!binary /w==", "\ufffd"),
    ("!Ref web", "web"), ("! 12", 12), ("!!timestamp 2001-12-14", "2001-12-14"), ("'12'", "12"), ('"y"', "y"),
    ("!!set {a, b}", {"a": None, "b": None}), ("!!omap [{a: 1}]", [{"a": 1}]), ("!!str {a: 1}", {"a": 1}),
    ("!!map [1]", [1]), ("!!merge <<", "<<"),
]


@pytest.mark.parametrize(("text", "expected"), TAGGED)
def test_tags_read_as_go_reads_them(text: str, expected: object, tmp_path: Path) -> None:
    assert _read(f"v: {text}\n", tmp_path) == {"v": expected}


KEYS = [
    ("1", "1"), ("0x1F", "31"), ("true", "true"), ("y", "true"), ("off", "false"), ("1.5", "1.5"),
    ("1.0", "1"), ("1e3", "1000"), ("1e7", "1e+07"), ("0.1", "0.1"), ("0.00001", "1e-05"),
    ("3.14159265358979", "3.1415927"),  # a 32-bit float, as sigs.k8s.io/yaml writes float keys
    (".inf", ".inf"), ("-.inf", "-.inf"), (".nan", ".nan"), ("2001-01-01", "2001-01-01"),
    ("!!binary aGVsbG8=", "hello"), ("=", "="), ('"<<"', "<<"), ("!!str 1", "1"),
]


@pytest.mark.parametrize(("key", "expected"), KEYS)
def test_mapping_keys_become_the_strings_go_writes(key: str, expected: str, tmp_path: Path) -> None:
    assert _read(f"m:\n  {key}: x\n", tmp_path) == {"m": {expected: "x"}}


REFUSED = [
    ("v: .inf\n", "json: unsupported value: +Inf"),
    ("v: [-.Inf]\n", "json: unsupported value: -Inf"),
    ("v: {a: .nan}\n", "json: unsupported value: NaN"),
    ("v: !!int abc\n", "cannot decode !!str `abc` as a !!int"),
    ("v: !!bool 1\n", "cannot decode !!int `1` as a !!bool"),
    ("v: !!null x\n", "cannot decode !!str `x` as a !!null"),
    ("v: !!timestamp 12\n", "cannot decode !!int `12` as a !!timestamp"),
    ("v: !!binary '%%%'\n", "!!binary value contains invalid base64 data"),
    ("v: {~: a}\n", "unsupported map key: null"),
    ("v: {9223372036854775808: a}\n", "unsupported map key: 9223372036854775808"),
    ("m: {<<: 1}\n", "map merge requires map or sequence of maps as the value"),
    ("m: {<<: [{a: 1}, 2]}\n", "map merge requires map or sequence of maps as the value"),
    ("m: &m {a: 1, <<: *m}\n", "a merge key refers to a mapping that contains it"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_values_go_or_json_refuse_are_input_errors(text: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "v.yaml").write_text(text)
    with pytest.raises(InputError) as info:
        load_paths([str(tmp_path / "v.yaml")])
    [problem] = info.value.problems
    assert problem.message.startswith("invalid YAML value at line 1, column ")
    assert message in problem.message


def test_merge_keys_apply_in_order_as_go_yaml_v2_applies_them(tmp_path: Path) -> None:
    """go-yaml v2 sets merged keys where the `<<` stands: keys after it win, keys before it lose;
    in a list of mappings the first wins."""
    text = ("base: &base {a: 1, b: 2}\nmore: &more {b: 20, c: 30}\n"
            "after: {<<: *base, b: 3}\nbefore: {b: 3, <<: *base}\nlist: {<<: [*base, *more], c: 4}\n"
            "nested: {<<: {<<: *base, a: 10}}\nquoted: {'<<': *base}\n")
    value = _read(text, tmp_path)
    assert value["after"] == {"a": 1, "b": 3}  # type: ignore[index]
    assert value["before"] == {"a": 1, "b": 2}  # type: ignore[index]
    assert value["list"] == {"a": 1, "b": 2, "c": 4}  # type: ignore[index]
    assert value["nested"] == {"a": 10, "b": 2}  # type: ignore[index]
    assert value["quoted"] == {"<<": {"a": 1, "b": 2}}  # type: ignore[index]


def test_duplicate_keys_keep_the_last_value(tmp_path: Path) -> None:
    assert _read("a: 1\nb: 2\na: 3\n", tmp_path) == {"a": 3, "b": 2}


def test_a_kube_prometheus_crd_enum_with_a_plain_equals_sign_loads(tmp_path: Path) -> None:
    """The Prometheus operator's relabel `action`-like enums list `=` and `!=` unquoted."""
    text = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: alertmanagerconfigs.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        properties:
          matchType:
            enum:
            - '!='
            - =
            - =~
            - '!~'
            type: string
"""
    value = _read(text, tmp_path)
    enum = value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["matchType"]["enum"]  # type: ignore[index]
    assert enum == ["!=", "=", "=~", "!~"]


TOKENS = [text for text, _ in SCALARS] + [text for text, _ in KEYS] + ["<<", "=", "1:30", "2024-01-01", "-", "? x"]
STRINGS = st.sampled_from(TOKENS) | st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=8)
# Integers within 64 bits: beyond them go-yaml reads a float, as kubectl does.
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | STRINGS,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
                      max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(STRINGS, VALUES, max_size=4), st.sampled_from([Dumper, CDumper]))
def test_what_kubesched_writes_reads_back_as_written(value: dict[str, object], dumper: type) -> None:
    """Our YAML output (exports, -o yaml) quotes every string go-yaml would read as something
    else, so kubectl and kubesched read back exactly what was written."""
    text = yaml.dump(value, Dumper=dumper, sort_keys=False, allow_unicode=True)
    assert read_yaml(text.encode()) == value


@pytest.mark.parametrize("text", ["y", "n", "1e3", "0o17", "0B1", ".5e3", "08", "1_", "=", "<<"])
def test_strings_go_would_misread_are_quoted(text: str) -> None:
    assert yaml.dump({"label": text}, Dumper=Dumper) != f"label: {text}\n"
    assert read_yaml(yaml.dump({text: text}, Dumper=CDumper).encode()) == {text: text}
