"""YAML scalars read as kubectl reads them: go-yaml v2 resolves each scalar, sigs.k8s.io/yaml
turns the result into JSON, and the API machinery reads that JSON back.

PyYAML follows YAML 1.1 more closely than go-yaml does, so its answers differ where users meet
them: `=` is a string to Go (PyYAML has no constructor for it), `y`/`n` are booleans, `1e3` and
`0o755` are numbers, `1:30` is a string (no base 60), and an unknown tag (`!Ref x`) keeps its text.
Timestamps stay strings, as go-yaml gives them to an interface{} as their text. The JSON step then
refuses NaN and infinities, turns whole floats into integers (`2.0` is written `2`) and turns
mapping keys into strings in Go's own words.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

PREFIX = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (PREFIX + t for t in ("str", "int", "float", "bool", "null"))
TIMESTAMP, BINARY, MERGE = PREFIX + "timestamp", PREFIX + "binary", PREFIX + "merge"
# Tags whose scalars go-yaml resolves from their text; any other tag leaves the text as it is.
RESOLVABLE = frozenset({STR, INT, FLOAT, BOOL, NULL, TIMESTAMP})

_WORDS: dict[str, tuple[str, Any]] = {
    **{w: (BOOL, True) for w in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{w: (BOOL, False) for w in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{w: (NULL, None) for w in ("", "~", "null", "Null", "NULL")},
    **{w: (FLOAT, math.nan) for w in (".nan", ".NaN", ".NAN")},
    **{w: (FLOAT, math.inf) for w in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{w: (FLOAT, -math.inf) for w in ("-.inf", "-.Inf", "-.INF")},
    "<<": (MERGE, "<<"),
}
# go-yaml looks a scalar up by its first character: only these may be anything but a string.
_WORD_START = frozenset("yYnNtTfFoO~")
_NUMBER_START = frozenset("+-0123456789")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_BASES = {"x": (16, "0123456789abcdefABCDEF"), "o": (8, "01234567"), "b": (2, "01")}
_INT64 = 2**63
_UINT64 = 2**64
# The layouts go-yaml accepts as timestamps (time.Parse with short date and time fields).
_TIMESTAMP = re.compile(r"(\d{4})-(\d\d?)-(\d\d?)(?:(?:([Tt])|( ))(\d\d?):(\d\d?):(\d\d?)(?:\.(\d+))?"
                        r"(Z|[+-]\d\d:\d\d)?)?")


class YAMLValueError(ValueError):
    """A scalar go-yaml or the JSON conversion refuses, in their words."""


def short_tag(tag: str) -> str:
    return "!!" + tag[len(PREFIX):] if tag.startswith(PREFIX) else tag


def _go_int(text: str) -> tuple[int | None, bool]:
    """strconv.ParseInt/ParseUint with base 0 on text without underscores: (value, in_range),
    value None when the text is no integer at all. The range is unsigned 64 bits for unsigned
    text, signed 64 bits for signed text."""
    sign = text[:1] if text[:1] in "+-" else ""
    digits = text[len(sign):]
    base, allowed = 10, "0123456789"
    if len(digits) > 1 and digits[0] == "0":
        prefix = digits[1].lower()
        if prefix in _BASES:
            base, allowed = _BASES[prefix]
            digits = digits[2:]
        else:
            base, allowed = 8, "01234567"
    if not digits or any(c not in allowed for c in digits):
        return None, False
    value = int(digits, base)
    if sign == "-":
        value = -value
    return value, (-_INT64 <= value < _INT64) if sign else value < _UINT64


def _go_number(text: str) -> tuple[str, Any]:
    """go-yaml's answer for a plain scalar starting with a digit or a sign."""
    plain = text.replace("_", "")
    value, in_range = _go_int(plain)
    if value is not None and in_range:
        return INT, value
    if _YAML_FLOAT.fullmatch(plain):
        number = float(plain)
        if not math.isinf(number):  # strconv.ParseFloat refuses what overflows
            return FLOAT, number
    if value is not None and plain[0] != "-" and plain[0] != "+":
        return INT, value  # past 64 bits, unsigned: go-yaml keeps it as a big.Int
    return STR, text


def _go_dot_float(text: str) -> tuple[str, Any]:
    """strconv.ParseFloat on a scalar starting with `.` (`.5`, `.5e3`)."""
    if "_" in text and not re.fullmatch(r"\.[0-9]+(_[0-9]+)*([eE][-+]?[0-9]+(_[0-9]+)*)?", text):
        return STR, text
    try:
        number = float(text)
    except ValueError:
        return STR, text
    return (STR, text) if math.isinf(number) else (FLOAT, number)


@lru_cache(maxsize=4096)
def plain_scalar(text: str) -> tuple[str, Any]:
    """(tag, Go value) of an untagged plain scalar, as go-yaml resolves it. Timestamps resolve to
    their text: that is what go-yaml puts in an interface{}."""
    first = text[:1]
    if first in _WORD_START or not first or first == "<":
        return _WORDS.get(text, (STR, text))
    if first in _NUMBER_START:
        found = _WORDS.get(text)
        return found if found is not None else _go_number(text)
    if first == ".":
        found = _WORDS.get(text)
        return found if found is not None else _go_dot_float(text)
    return STR, text


@lru_cache(maxsize=4096)
def plain_json(text: str) -> tuple[str, Any]:
    """(tag, value in the JSON form) of an untagged plain scalar; raises YAMLValueError for NaN
    and infinities. Cached: numbers and booleans repeat throughout a file."""
    tag, value = plain_scalar(text)
    return tag, json_value(value)


def tagged_scalar(tag: str, text: str) -> tuple[str, Any]:
    """(tag, Go value) of a scalar with an explicit tag (or a quoted one, `tag` STR). Text that
    does not fit its tag is refused as go-yaml refuses it; a tag go-yaml does not resolve keeps
    the text, except !!binary, which is base64."""
    if tag == BINARY:
        return STR, binary(text)
    if tag not in RESOLVABLE or tag == STR:
        return STR, text
    if tag == TIMESTAMP:
        if _is_timestamp(text):
            return STR, text
        found, _ = plain_scalar(text)
        raise YAMLValueError(f"cannot decode {short_tag(found)} `{text}` as a !!timestamp")
    found, value = plain_scalar(text)
    if found == tag:
        return found, value
    if tag == FLOAT and found == INT and -_INT64 <= value < _INT64:
        return FLOAT, float(value)
    if found == STR and _is_timestamp(text):
        found = TIMESTAMP
    raise YAMLValueError(f"cannot decode {short_tag(found)} `{text}` as a {short_tag(tag)}")


def _is_timestamp(text: str) -> bool:
    """Whether go-yaml reads `text` as a timestamp: a date, a date and time with `T` or `t` and a
    zone, or a date and time after a space without one."""
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        return False
    year, month, day, letter, space, hour, minute, second, _fraction, zone = m.groups()
    if (space and zone) or (letter and not zone):
        return False
    if zone and zone != "Z" and (int(zone[1:3]) > 24 or int(zone[4:6]) > 59):
        return False
    try:
        datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError:
        return False
    return True


def binary(text: str) -> str:
    """A !!binary scalar: base64 (line breaks ignored, as Go's decoder does), its bytes then read
    as JSON strings are encoded, each byte that is not UTF-8 becoming U+FFFD."""
    try:
        data = base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        raise YAMLValueError("!!binary value contains invalid base64 data") from None
    return re.sub("[\udc80-\udcff]", "\ufffd", data.decode("utf-8", "surrogateescape"))


def json_value(value: Any) -> Any:
    """A Go value as the API machinery reads it back from sigs.k8s.io/yaml's JSON: a whole float
    below 1e21 is written without a fraction, so it reads back as an integer; NaN and infinities
    have no JSON form."""
    if type(value) is not float:
        return value
    if math.isnan(value) or math.isinf(value):
        raise YAMLValueError(f"json: unsupported value: {_go_special(value)} (JSON has no NaN or infinity)")
    if value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))  # Go writes the shortest digits, then zeros
    return value


def _go_special(value: float) -> str:
    return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"


def json_key(value: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it: booleans and integers in Go's words, floats
    as 32-bit floats; a null key, or an integer beyond int64, has no JSON form there."""
    if isinstance(value, str):
        return value
    if value is None:
        raise YAMLValueError("unsupported map key: null (a JSON object's keys are strings)")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -_INT64 <= value < _INT64:
            return str(value)
        raise YAMLValueError(f"unsupported map key: {value} (beyond a 64-bit integer)")
    return _format_float32(value)


def _format_float32(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), with go-yaml's names for infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for digits in range(1, 10):  # the fewest digits that read back as the same 32-bit float
        text = f"{single:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    significant = mantissa.replace(".", "").lstrip("-").rstrip("0") or "0"
    sign = "-" if single < 0 else ""
    if exponent < -4 or exponent >= 6:
        body = significant[0] + ("." + significant[1:] if len(significant) > 1 else "")
        return f"{sign}{body}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{significant}"
    whole, fraction = significant[: exponent + 1], significant[exponent + 1:]
    return f"{sign}{whole.ljust(exponent + 1, '0')}{'.' + fraction if fraction else ''}"
