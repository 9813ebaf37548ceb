from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.quantity import (
    QuantityError,
    format_amount,
    milli_value,
    parse_quantity,
    resource_amount,
    value,
)

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Fraction(1, 10)),
        ("0.5", Fraction(1, 2)),
        ("1Gi", 2**30),
        ("1G", 10**9),
        ("1e3", 1000),
        ("2k", 2000),
        ("512Ki", 512 * 1024),
        ("1.5Gi", 3 * 2**29),
        ("-1", -1),
        ("+1", 1),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("1.G", 10**9),
        ("1E-3", Fraction(1, 1000)),
        ("1e+3", 1000),
        ("1E", 10**18),
        ("007", 7),
        ("0", 0),
        ("-0", 0),
        ("0Gi", 0),
        ("12e-3", Fraction(12, 1000)),
        ("99999999999999999999", 99999999999999999999),
    ],
)
def test_parse_valid(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "1.5x",
        "Gi",
        "1 Gi",
        "1KiB",
        "--1",
        "1.2.3",
        "",
        "true",
        ".",
        "+",
        " 1",
        "1 ",
        "1i",
        ".5i",
        "0.1mi",
        "0.1am",
        "1e",
        "1e+",
        "-3.01e-",
        "1e3k",
        "1E3Ki",
        "1e+-3",
        "1ki",
        "1K",
        "1,5",
        "0x10",
        "Inf",
        "aoeu",
        "1e9223372036854775808",
    ],
)
def test_parse_invalid_message(text):
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert str(err.value) == f'"{text}" is not a quantity'


def test_yaml_scalars():
    assert parse_quantity(2) == 2
    assert parse_quantity(0.5) == Fraction(1, 2)
    assert parse_quantity(0.1) == Fraction(1, 10)
    assert parse_quantity(1e-05) == Fraction(1, 100000)
    with pytest.raises(QuantityError, match='"true" is not a quantity'):
        parse_quantity(True)
    with pytest.raises(QuantityError):
        parse_quantity(float("nan"))


def test_sub_nano_rounds_up_and_binary_caps():
    assert parse_quantity("0.1n") == Fraction(1, 10**9)
    assert parse_quantity("-0.1n") == Fraction(-1, 10**9)
    assert parse_quantity("1e-30") == Fraction(1, 10**9)
    assert parse_quantity("0.000000000001Ki") == Fraction(2, 10**9)  # 1.024n -> 2n
    assert parse_quantity("9223372036854775807Ki") == 2**63 - 1
    assert parse_quantity("8Ei") == 2**63 - 1


def test_int_conversions_round_away_from_zero():
    assert milli_value(parse_quantity("0.1m")) == 1
    assert milli_value(parse_quantity("1.5")) == 1500
    assert value(parse_quantity("1m")) == 1
    assert value(parse_quantity("1.5")) == 2
    assert value(parse_quantity("-1.5")) == -2
    assert value(parse_quantity("2Gi")) == 2 * 2**30


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("cpu", "100m", 100),
        ("cpu", "2", 2000),
        ("cpu", 0.5, 500),
        ("cpu", "1n", 1),
        ("memory", "1m", 1),
        ("memory", "1Gi", 2**30),
        ("memory", "1.5Gi", 1610612736),
        ("ephemeral-storage", "10G", 10**10),
        ("pods", "110", 110),
        ("hugepages-2Mi", "4Mi", 4 * 2**20),
        ("nvidia.com/gpu", 2, 2),
    ],
)
def test_resource_amount(name, raw, expected):
    assert resource_amount(name, raw) == expected


@pytest.mark.parametrize(
    ("name", "amount", "expected"),
    [
        ("cpu", 10000, "10"),
        ("cpu", 2500, "2500m"),
        ("cpu", 0, "0"),
        ("memory", 0, "0"),
        ("memory", 32 * 2**30, "32Gi"),
        ("memory", 500 * 2**20, "500Mi"),
        ("memory", 1536 * 1024, "1536Ki"),
        ("memory", 10**9, "1G"),
        ("memory", 5000, "5k"),
        ("memory", 1001, "1001"),
        ("ephemeral-storage", 2**40, "1Ti"),
        ("hugepages-1Gi", 2 * 2**30, "2Gi"),
        ("pods", 110000, "110000"),
        ("nvidia.com/gpu", 4096, "4096"),
    ],
)
def test_format_amount(name, amount, expected):
    assert format_amount(name, amount) == expected
    assert resource_amount(name, expected) == amount


@given(st.integers(min_value=-(10**12), max_value=10**12), st.sampled_from(sorted({**BINARY, **DECIMAL})))
def test_suffix_parse_is_exact(n, suffix):
    expected = n * {**BINARY, **DECIMAL}[suffix]
    if suffix in BINARY and abs(expected) > 2**63 - 1:  # binary quantities saturate at int64
        expected = (2**63 - 1) * (1 if n > 0 else -1)
    assert parse_quantity(f"{n}{suffix}") == expected


@given(
    st.integers(min_value=-(2**62), max_value=2**62),
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "pods", "example.com/foo"]),
)
def test_format_round_trip(n, name):
    assert resource_amount(name, format_amount(name, n)) == n


@given(st.decimals(allow_nan=False, allow_infinity=False, places=9, min_value=-(10**9), max_value=10**9))
def test_decimal_text_matches_decimal(d):
    text = format(d, "f")
    assert parse_quantity(text) == Fraction(Decimal(text))
