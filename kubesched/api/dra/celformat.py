"""cel-go's `string.format` (the strings extension, version 2 in DRA's environment), run on
cel-python's values, and the check kube-apiserver makes of a literal format string's clauses.

`'%s has %d GPUs'.format([name, count])`: `%s` any value as a string (a list or map as a CEL
literal, its strings quoted), `%d` an integer, `%f` and `%.Nf` a double in fixed point (grouped
in thousands, as cel-go's en-US printer groups them), `%e` scientific, `%b`, `%o`, `%x`, `%X` an
integer (or a bool in binary, a string or bytes in hex), `%%` a percent sign. A clause given the
wrong kind of value is an error in cel-go's words; one whose format string and list of arguments
are literals is checked when the selector is stored.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
from collections.abc import Callable
from typing import Any

from celpy import celtypes

from kubesched.api.dra.cellib import LibraryError

DEFAULT_PRECISION = 6
# What each clause takes, as type names the checker knows; an argument of another type is refused.
CLAUSE_TYPES = {
    "d": ("int", "uint"), "f": ("double", "string"), "e": ("double", "string"), "b": ("int", "uint", "bool"),
    "x": ("int", "uint", "string", "bytes"), "X": ("int", "uint", "string", "bytes"), "o": ("int", "uint"),
}
CLAUSE_ERRORS = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
         "and timestamps, was given {}",
    "d": "decimal clause can only be used on integers, was given {}",
    "f": "fixed-point clause can only be used on doubles, was given {}",
    "e": "scientific clause can only be used on doubles, was given {}",
    "b": "only integers and bools can be formatted as binary, was given {}",
    "x": "only integers, byte buffers, and strings can be formatted as hex, was given {}",
    "o": "octal clause can only be used on integers, was given {}",
}
CLAUSE_ERRORS["X"] = CLAUSE_ERRORS["x"]


class FormatError(LibraryError):
    """A format string that cel-go's parser or one of its clauses refuses."""


def walk(text: str, count: int, clause: Callable[[int, str, int | None], str]) -> str:
    """cel-go's parseFormatString: `text` with each clause replaced by `clause(argument index,
    verb, precision)`, for `count` arguments; a FormatError in cel-go's words, in the order cel-go
    meets them, for a clause it cannot parse or an argument that is missing."""
    out: list[str] = []
    i = index = 0
    while i < len(text):
        if text[i] != "%":
            out.append(text[i])
            i += 1
            continue
        if text[i + 1:i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if index >= count:
            raise FormatError(f"index {index} out of range")
        if i + 1 >= len(text):
            raise FormatError("unexpected end of string")
        i += 1
        precision: int | None = None
        if text[i] == ".":
            j = i + 1
            while j < len(text) and text[j].isascii() and text[j].isdigit():
                j += 1
            if j >= len(text):
                raise FormatError("could not parse formatting clause: error while parsing precision: "
                                  "could not find end of precision specifier")
            if j == i + 1:
                raise FormatError("could not parse formatting clause: error while parsing precision: error while "
                                  'converting precision to integer: strconv.Atoi: parsing "": invalid syntax')
            precision, i = int(text[i + 1:j]), j
        verb = text[i]
        if verb not in "sdfebxXo":
            raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
        out.append(clause(index, verb, precision))
        index += 1
        i += 1
    return "".join(out)


def type_name(value: Any) -> str:
    """A value's CEL type name, as cel-go's messages give it."""
    for kind, name in ((celtypes.BoolType, "bool"), (celtypes.UintType, "uint"), (celtypes.IntType, "int"),
                       (celtypes.DoubleType, "double"), (celtypes.StringType, "string"), (celtypes.BytesType, "bytes"),
                       (celtypes.ListType, "list"), (celtypes.MapType, "map"),
                       (celtypes.TimestampType, "google.protobuf.Timestamp"),
                       (celtypes.DurationType, "google.protobuf.Duration"), (celtypes.TypeType, "type")):
        if isinstance(value, kind):
            return name
    return "null_type" if value is None else type(value).__name__


def go_float(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), how CEL's string() prints a double: the shortest
    digits, in exponent form when the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1, value) < 0 else ""
    if value == 0:
        return sign + "0"
    _, digit_tuple, exponent = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # where the decimal point goes in `digits`
    digits = digits.rstrip("0")
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_quote(text: str) -> str:
    """Go's %q of a string: double-quoted, with Go's escapes."""
    return json.dumps(text, ensure_ascii=False).replace("\\u007f", "\\x7f")


def _as_string(value: Any, nested: bool = False) -> str:
    """The %s clause (and an element inside a list or map: quoted, a double at 6 places)."""
    if isinstance(value, celtypes.ListType):
        return "[" + ", ".join(_as_string(v, True) for v in value) + "]"
    if isinstance(value, celtypes.MapType):
        pairs = sorted((_key(k), _as_string(v, True)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"
    if isinstance(value, celtypes.BoolType):
        return "true" if value else "false"
    if isinstance(value, celtypes.DoubleType):
        if nested:
            text = f"{float(value):.{DEFAULT_PRECISION}f}"
            return json.dumps(go_float(value)) if math.isinf(value) or math.isnan(value) else text
        return go_float(float(value))
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return str(int(value))
    if isinstance(value, celtypes.StringType):
        return _go_quote(str(value)) if nested else str(value)
    if isinstance(value, celtypes.BytesType):
        text = bytes(value).decode("utf-8", "replace")
        return "b" + _go_quote(text) if nested else text
    if isinstance(value, celtypes.TimestampType):
        text = value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")
        return f"timestamp({json.dumps(text)})" if nested else text
    if isinstance(value, celtypes.DurationType):
        text = f"{value.total_seconds():g}s"
        return f"duration({json.dumps(text)})" if nested else text
    if value is None:
        return "null"
    if isinstance(value, celtypes.TypeType):
        return str(value)
    raise FormatError("error during formatting: " + CLAUSE_ERRORS["s"].format(type_name(value)))


def _key(value: Any) -> str:
    if isinstance(value, (celtypes.StringType, celtypes.BoolType, celtypes.IntType, celtypes.UintType)):
        return _as_string(value, True)
    raise FormatError(f"error during formatting: no formatting function for map key of type {type_name(value)}")


def _grouped(text: str) -> str:
    """en-US digit grouping of a fixed-point number's integer part."""
    sign = "-" if text.startswith("-") else ""
    whole, dot, frac = text.lstrip("-").partition(".")
    return f"{sign}{int(whole):,}{dot}{frac}" if whole.isdigit() else text


def _float_arg(verb: str, value: Any) -> float:
    if isinstance(value, celtypes.StringType) and str(value) in ("NaN", "Infinity", "-Infinity"):
        return float(str(value).replace("Infinity", "inf"))
    if not isinstance(value, celtypes.DoubleType):
        raise FormatError("error during formatting: " + CLAUSE_ERRORS[verb].format(type_name(value)))
    return float(value)


def _integer(verb: str, value: Any, base: Callable[[int], str]) -> str:
    if isinstance(value, celtypes.BoolType) and verb == "b":
        return "1" if value else "0"
    if isinstance(value, (celtypes.IntType, celtypes.UintType)) and not isinstance(value, celtypes.BoolType):
        n = int(value)
        return ("-" if n < 0 else "") + base(abs(n))
    if verb in "xX" and isinstance(value, (celtypes.StringType, celtypes.BytesType)):
        data = str(value).encode() if isinstance(value, celtypes.StringType) else bytes(value)
        return data.hex().upper() if verb == "X" else data.hex()
    raise FormatError("error during formatting: " + CLAUSE_ERRORS[verb].format(type_name(value)))


def _clause(verb: str, precision: int | None, value: Any) -> str:
    if verb == "s":
        return _as_string(value)
    if verb == "d":
        return _integer(verb, value, str)
    if verb == "f":
        x = _float_arg(verb, value)
        if math.isnan(x) or math.isinf(x):
            return "NaN" if math.isnan(x) else ("∞" if x > 0 else "-∞")
        return _grouped(f"{x:.{DEFAULT_PRECISION if precision is None else precision}f}")
    if verb == "e":
        x = _float_arg(verb, value)
        # cel-go writes the precision as a width (`%6e`), so six digits after the point always
        return f"{x:{DEFAULT_PRECISION if precision is None else precision}e}"
    bases: dict[str, Callable[[int], str]] = {"b": lambda n: f"{n:b}", "o": lambda n: f"{n:o}",
                                              "x": lambda n: f"{n:x}", "X": lambda n: f"{n:X}"}
    return _integer(verb, value, bases[verb])


def format_string(template: Any, args: Any) -> celtypes.StringType:
    """`template.format(args)`."""
    if not isinstance(template, str) or not isinstance(args, list):
        raise TypeError("no such overload: format")
    return celtypes.StringType(walk(str(template), len(args), lambda i, verb, p: _clause(verb, p, args[i])))
