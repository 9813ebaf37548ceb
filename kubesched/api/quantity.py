"""Kubernetes ``resource.Quantity`` parsing and formatting, exact.

The scheduler's arithmetic is only as faithful as its quantities: ``0.1`` CPU must be exactly 100
millicores, not 99.99999 after a float round-trip, and ``1.5Gi`` must be exactly 1610612736 bytes.
So values are parsed into :class:`fractions.Fraction` following the grammar of
k8s.io/apimachinery/pkg/api/resource (sign, digits with an optional decimal point, then a binary
``Ki..Ei``, decimal SI ``n..E`` or ``e<int>`` exponent suffix), including two of its value rules:
non-zero amounts finer than 1n round up (away from zero) to 1n, and binary-suffixed amounts are
capped at 2^63-1.

Integer conversions mirror ``Quantity.MilliValue`` / ``Quantity.Value``: they round away from
zero, so ``1m`` of memory is one byte. Parsing is cached because manifests repeat the same
handful of strings ("100m", "128Mi") across thousands of pods.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "QuantityError",
    "canonical",
    "format_amount",
    "milli_value",
    "parse_quantity",
    "quantity_format",
    "quantity_string",
    "resource_amount",
    "value",
]


class QuantityError(ValueError):
    """A value the API server would refuse to decode as a quantity."""


_QUANTITY_RE = re.compile(
    r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?[0-9]+))?"
)
_BINARY_BITS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_INT64 = 2**63 - 1
_NANOS_PER_UNIT = 10**9
# Upstream truncates exponents to int32, so 1e2147483647 is "valid"; materialising such a number
# exactly is impractical and no resource is that large, so scales beyond this are rejected.
_MAX_SCALE = 10_000

_BINARY_SUFFIXES = tuple((s, 1 << b) for s, b in sorted(_BINARY_BITS.items(), key=lambda kv: -kv[1]))
_DECIMAL_SUFFIXES = tuple(
    (s, 10**e) for s, e in sorted(_DECIMAL_EXPONENT.items(), key=lambda kv: -kv[1]) if e > 0
)
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage"})


def _error(text: str) -> QuantityError:
    return QuantityError(f'"{text}" is not a quantity')


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a quantity given as a manifest string or a YAML int/float.

    Floats are read through their ``repr`` (``0.1`` -> ``"0.1"`` -> 1/10) because that is the
    decimal text the user wrote; booleans are rejected as the API server rejects them.
    """
    if isinstance(value, bool):
        raise _error(str(value).lower())
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return _parse_text(repr(value))
    if isinstance(value, str):
        return _parse_text(value)
    raise _error(str(value))


@lru_cache(maxsize=65536)
def _parse_text(text: str) -> Fraction:
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise _error(text)
    sign, whole, frac, binary, decimal, exponent = match.groups()
    frac = frac or ""
    if not whole and not frac:
        raise _error(text)
    magnitude = int(whole + frac)
    scale = -len(frac)
    if binary:
        magnitude <<= _BINARY_BITS[binary]
    elif decimal:
        scale += _DECIMAL_EXPONENT[decimal]
    elif exponent is not None:
        exp = int(exponent)
        if not -(2**63) <= exp <= _MAX_INT64:
            raise _error(text)
        scale += (exp + 2**31) % 2**32 - 2**31  # Go's int32(parsed)
    if magnitude == 0:
        return Fraction(0)
    if scale > _MAX_SCALE:
        raise _error(text)
    if scale >= 0:
        result = Fraction(magnitude * 10**scale)
    elif scale >= -9:
        result = Fraction(magnitude, 10**-scale)
    else:
        result = Fraction(_nanos_rounded_up(magnitude, -scale - 9), _NANOS_PER_UNIT)
    if binary and result > _MAX_INT64:
        result = Fraction(_MAX_INT64)
    return -result if sign == "-" else result


def _nanos_rounded_up(magnitude: int, shift: int) -> int:
    """ceil(magnitude / 10**shift) without building a huge power when the answer is plainly 1."""
    if shift > len(str(magnitude)):
        return 1
    return -(-magnitude // 10**shift)


def _round_away(x: Fraction) -> int:
    """Round to an integer away from zero, as Quantity's ScaledValue does."""
    n, d = x.numerator, x.denominator
    if d == 1:
        return n
    up = -(-abs(n) // d)
    return up if n > 0 else -up


def milli_value(q: Fraction | int) -> int:
    """``Quantity.MilliValue``: q*1000 rounded away from zero (``0.1m`` -> 1)."""
    return _round_away(Fraction(q) * 1000)


def value(q: Fraction | int) -> int:
    """``Quantity.Value``: q rounded away from zero (``1m`` -> 1)."""
    return _round_away(Fraction(q))


@lru_cache(maxsize=65536, typed=True)
def _millis(raw: str | int | float) -> int:
    """Integer millis of a raw quantity, rounded up to milli scale.

    The API server's ResourceList defaulting rounds every stored quantity up to milli precision,
    so sums over containers must be taken on these values, not on the raw text.
    """
    return milli_value(parse_quantity(raw))


def _millis_to_units(millis: int) -> int:
    up = -(-abs(millis) // 1000)
    return up if millis >= 0 else -up


def resource_amount(name: str, raw: str | int | float) -> int:
    """The int64 the scheduler keeps for ``name``: millicores for cpu, ``Value()`` otherwise."""
    millis = _millis(raw)
    return millis if name == "cpu" else _millis_to_units(millis)


def format_amount(name: str, amount: int) -> str:
    """Render a scheduler integer (as from :func:`resource_amount`) back as a quantity string.

    cpu is shown in cores when whole, else millicores; byte-sized resources use the largest binary
    suffix that divides exactly, then the largest decimal one; counts stay plain integers.
    """
    if name == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if amount == 0 or not (name in _BYTE_RESOURCES or name.startswith("hugepages-")):
        return str(amount)
    for suffixes in (_BINARY_SUFFIXES, _DECIMAL_SUFFIXES):
        for suffix, multiplier in suffixes:
            if amount % multiplier == 0:
                return f"{amount // multiplier}{suffix}"
    return str(amount)


def format_memory(amount: int) -> str:
    """Bytes for people, in binary units as `kubectl top` shows them: Gi to two decimals from 1Gi,
    else whole Mi (or Ki)."""
    if amount >= 1 << 30:
        return f"{amount / (1 << 30):.2f}".rstrip("0").rstrip(".") + "Gi"
    if amount >= 1 << 20:
        return f"{round(amount / (1 << 20))}Mi"
    return f"{round(amount / 1024)}Ki" if amount >= 1024 else str(amount)


# --- printing as Quantity.String() does -----------------------------------------------------------

_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+$")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def canonical(value: Fraction | int, fmt: str = "BinarySI") -> str:
    """Quantity.String() of a value in `fmt` (BinarySI, DecimalSI or DecimalExponent)."""
    value = Fraction(value)
    if value == 0:
        return "0"
    sign, value = ("-" if value < 0 else ""), abs(value)
    if fmt == "BinarySI" and value >= 1024 and value.denominator == 1:
        number, exp = int(value), 0
        while number % 1024 == 0 and exp < len(_BINARY) - 1:
            number, exp = number // 1024, exp + 1
        return f"{sign}{number}{_BINARY[exp]}"
    nanos, exp = -(-value * 10**9 // 1), -9  # upstream keeps nano precision, rounding up
    while nanos % 1000 == 0 and exp < 18:
        nanos, exp = nanos // 1000, exp + 3
    suffix = (f"e{exp}" if exp else "") if fmt == "DecimalExponent" else _DECIMAL[exp]
    return f"{sign}{nanos}{suffix}"


def quantity_format(raw: str | int | float) -> str:
    """The format a quantity keeps from how it was written: its suffix decides (a YAML number is
    DecimalSI), and sums and copies print in it."""
    if not isinstance(raw, str):
        return "DecimalSI"
    return "DecimalExponent" if _EXPONENT.search(raw) else "BinarySI" if raw.endswith("i") else "DecimalSI"


def quantity_string(raw: str | int | float) -> str:
    """How Kubernetes prints a quantity written as `raw` (its format follows the suffix)."""
    return canonical(parse_quantity(raw), quantity_format(raw))
