"""Request bodies in the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`),
turned into the JSON form of the same object for the REST layer.

kubectl's generators (`kubectl create deployment|namespace|secret ...`) and client-go clients
configured for protobuf send their bodies this way, and client-go never retries in JSON on a 415.
The body is `k8s\\x00` then a `runtime.Unknown`: the object's apiVersion and kind, and its own
message as raw bytes. The JSON built here is what Go's encoder writes for the decoded struct:
names and key order of the JSON tags, zero values left out where the field is `omitempty` (kept
for pointers and required fields), non-pointer structs always written (`"status": {}`,
`"creationTimestamp": null`). Repeated and map fields with no entries are left out (Go writes
`null` for the few without `omitempty`). Unknown field numbers are skipped, as gogo-protobuf does.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from kubesched.apiserver.errors import BadRequest, UnsupportedMediaType
from kubesched.server.protobuf_schema import KINDS, MESSAGES

MAGIC = b"k8s\x00"
UNSUPPORTED = ("the body of the request was in an unknown format - accepted media types include: "
               "application/json, application/yaml")

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5
_ZERO: dict[str, Any] = {"string": "", "bytes": "", "bool": False, "int32": 0, "int64": 0}
_NUMERIC = ("bool", "int32", "int64")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Span = tuple[int, int]  # a length-delimited value: where it starts and ends in the body
Wires = dict[int, tuple[int | None, str]]  # field number -> (the wire type it must come in, its name)


def decode_body(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries, in its JSON form (kind and apiVersion first).
    Raises BadRequest on a malformed body, UnsupportedMediaType (415, what kube-apiserver answers
    a body it has no decoder for) for a kind without a wire layout here."""
    if not body:
        raise BadRequest("empty data")
    if not body.startswith(MAGIC):
        raise BadRequest("provided data does not appear to be a protobuf message, expected prefix "
                         f"[{' '.join(str(b) for b in MAGIC)}]")
    if len(body) == len(MAGIC):
        raise BadRequest("empty body")
    api_version = kind = ""
    raw: Span = (0, 0)
    unknown: Wires = {1: (BYTES, "typeMeta"), 2: (BYTES, "raw"), 3: (BYTES, "contentEncoding"),
                      4: (BYTES, "contentType")}
    for number, _, value in _scan(body, (len(MAGIC), len(body)), "runtime.Unknown", unknown):
        if number == 1:
            for n, _, v in _scan(body, value, "runtime.TypeMeta", {1: (BYTES, "apiVersion"), 2: (BYTES, "kind")}):
                if n == 1:
                    api_version = _text(body, v)
                elif n == 2:
                    kind = _text(body, v)
        elif number == 2:
            raw = value
    type_meta = f'runtime.TypeMeta{{APIVersion:"{api_version}", Kind:"{kind}"}}'
    if not kind:
        raise BadRequest(f"Object 'Kind' is missing in '{type_meta}'")
    if not api_version:
        raise BadRequest(f"Object 'apiVersion' is missing in '{type_meta}'")
    message = KINDS.get(f"{api_version}/{kind}") or KINDS.get(kind)
    if message is None:
        raise UnsupportedMediaType(UNSUPPORTED)
    return {"kind": kind, "apiVersion": api_version, **_message(body, raw, message)}


# ---- the schema ----------------------------------------------------------------------------------

class _Field:
    __slots__ = ("number", "name", "type", "repeated", "map", "pointer", "required", "inline")

    def __init__(self, number: int, name: str, type_: str, flags: str) -> None:
        self.number, self.name, self.type = number, name, type_
        self.repeated, self.map, self.pointer = "r" in flags, "m" in flags, "p" in flags
        self.required, self.inline = "q" in flags, "i" in flags

    @property
    def scalar(self) -> bool:
        return self.type in _ZERO

    @property
    def wire(self) -> int | None:
        """The wire type the field comes in; None for a repeated number, packed or not."""
        if self.repeated and self.type in _NUMERIC:
            return None
        return VARINT if self.type in _NUMERIC and not self.map else BYTES


@cache
def _layout(message: str) -> tuple[tuple[_Field, ...], dict[int, _Field], Wires]:
    ordered = tuple(_Field(*f) for f in MESSAGES[message])
    return ordered, {f.number: f for f in ordered}, {f.number: (f.wire, f.name) for f in ordered}


# ---- the wire ------------------------------------------------------------------------------------

def _varint(buf: bytes, pos: int, end: int, where: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise BadRequest(f"proto: {where}: unexpected EOF")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= 64:
            raise BadRequest(f"proto: {where}: integer overflow")


def _scan(buf: bytes, span: Span, where: str, wires: Wires) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of the message at `span`: an int for
    varints and fixed-size values, the Span of a length-delimited one."""
    pos, end = span
    while pos < end:
        key, pos = _varint(buf, pos, end, where)
        number, wire = key >> 3, key & 7
        if number <= 0:
            raise BadRequest(f"proto: {where}: illegal tag {number} (wire type {wire})")
        value: Any
        if wire == VARINT:
            value, pos = _varint(buf, pos, end, where)
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if pos + size > end:
                raise BadRequest(f"proto: {where}: unexpected EOF")
            value, pos = int.from_bytes(buf[pos:pos + size], "little"), pos + size
        elif wire == BYTES:
            length, pos = _varint(buf, pos, end, where)
            if pos + length > end:
                raise BadRequest(f"proto: {where}: unexpected EOF")
            value, pos = (pos, pos + length), pos + length
        else:
            raise BadRequest(f"proto: {where}: illegal wireType {wire} for field {number}")
        expected, name = wires.get(number, (None, ""))
        if expected is not None and wire != expected:
            raise BadRequest(f"proto: wrong wireType = {wire} for field {name} of {where}")
        yield number, wire, value


def _text(buf: bytes, span: Span) -> str:
    # Go keeps invalid UTF-8 in a string; its JSON encoder writes U+FFFD for it
    return buf[span[0]:span[1]].decode("utf-8", errors="replace")


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar(type_: str, buf: bytes, value: Any) -> Any:
    if type_ == "string":
        return _text(buf, value)
    if type_ == "bytes":
        return base64.b64encode(buf[value[0]:value[1]]).decode()
    if type_ == "bool":
        return value != 0
    return _signed(value, 32 if type_ == "int32" else 64)


# ---- messages ------------------------------------------------------------------------------------

def _message(buf: bytes, span: Span, message: str) -> dict[str, Any]:
    ordered, by_number, wires = _layout(message)
    singles: dict[int, Any] = {}
    parts: dict[int, list[bytes]] = {}  # a message field given twice is merged, as protobuf does
    many: dict[int, list[Any]] = {}
    maps: dict[int, dict[str, Any]] = {}
    for number, wire, value in _scan(buf, span, message, wires):
        f = by_number.get(number)
        if f is None:
            continue
        if f.map:
            key, item = _map_entry(buf, value, f, message)
            maps.setdefault(number, {})[key] = item
        elif f.repeated and f.type in _NUMERIC:
            if wire == BYTES:  # packed
                pos, stop = value
                while pos < stop:
                    v, pos = _varint(buf, pos, stop, message)
                    many.setdefault(number, []).append(_scalar(f.type, buf, v))
            elif wire == VARINT:
                many.setdefault(number, []).append(_scalar(f.type, buf, value))
            else:
                raise BadRequest(f"proto: wrong wireType = {wire} for field {f.name} of {message}")
        elif f.repeated:
            many.setdefault(number, []).append(_value(f.type, buf, value, message))
        elif f.scalar:
            singles[number] = _scalar(f.type, buf, value)
        else:
            parts.setdefault(number, []).append(buf[value[0]:value[1]])
    out: dict[str, Any] = {}
    for f in ordered:
        n = f.number
        if f.map or f.repeated:
            found = maps.get(n) if f.map else many.get(n)
            if found:
                out[f.name] = found
        elif not f.scalar:
            if n not in parts and f.pointer:
                continue
            joined = b"".join(parts.get(n, ()))
            v = _value(f.type, joined, (0, len(joined)), message)
            if f.inline:
                out.update(v)
            else:
                out[f.name] = v
        elif n in singles:
            if singles[n] or f.pointer or f.required:
                out[f.name] = singles[n]
        elif f.required:
            out[f.name] = _ZERO[f.type]
    return out


def _value(type_: str, buf: bytes, span: Span, where: str) -> Any:
    """A length-delimited value of `type_` (a string, bytes, or a message) in its JSON form."""
    if type_ in _ZERO:
        return _scalar(type_, buf, span)
    special = _SPECIAL.get(type_)
    if special is not None:
        return special(buf, span)
    return _message(buf, span, type_)


def _map_entry(buf: bytes, span: Span, f: _Field, message: str) -> tuple[str, Any]:
    """A map entry: key 1, value 2; either may be missing and is then the zero value."""
    where = f"{message}.{f.name}"
    key, value = "", (0, 0)
    for number, _, v in _scan(buf, span, where, {1: (BYTES, "key"), 2: (BYTES, "value")}):
        if number == 1:
            key = _text(buf, v)
        elif number == 2:
            value = v
    return key, _value(f.type, buf, value, where)


# ---- the types with a JSON form of their own -----------------------------------------------------

def _timestamp(buf: bytes, span: Span, where: str) -> datetime | None:
    """metav1.Time and MicroTime: seconds and nanos since the epoch. No bytes at all is the zero
    time, which JSON writes as null."""
    if span[0] == span[1]:
        return None
    seconds = nanos = 0
    for number, _, value in _scan(buf, span, where, {1: (VARINT, "seconds"), 2: (VARINT, "nanos")}):
        if number == 1:
            seconds = _signed(value, 64)
        elif number == 2:
            nanos = _signed(value, 32)
    micros = -(-nanos // 1000) if nanos < 0 else nanos // 1000  # truncated toward zero, as Go does
    try:
        return _EPOCH + timedelta(seconds=seconds, microseconds=micros)
    except OverflowError:
        raise BadRequest(f"{where}.MarshalJSON: year outside of range [0,9999]") from None


def _rfc3339(moment: datetime) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment:%H:%M:%S}"


def _time(buf: bytes, span: Span) -> str | None:
    moment = _timestamp(buf, span, "Time")
    return None if moment is None else _rfc3339(moment) + "Z"  # Time keeps whole seconds only


def _micro_time(buf: bytes, span: Span) -> str | None:
    moment = _timestamp(buf, span, "MicroTime")
    return None if moment is None else f"{_rfc3339(moment)}.{moment.microsecond:06d}Z"


def _quantity(buf: bytes, span: Span) -> str:
    text = "0"
    for number, _, value in _scan(buf, span, "resource.Quantity", {1: (BYTES, "string")}):
        if number == 1:
            text = _text(buf, value)
    if not text:
        raise BadRequest("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return text


def _int_or_string(buf: bytes, span: Span) -> int | str:
    kind = number_value = 0
    text = ""
    wires: Wires = {1: (VARINT, "type"), 2: (VARINT, "intVal"), 3: (BYTES, "strVal")}
    for number, _, value in _scan(buf, span, "intstr.IntOrString", wires):
        if number == 1:
            kind = _signed(value, 64)
        elif number == 2:
            number_value = _signed(value, 32)
        elif number == 3:
            text = _text(buf, value)
    if kind not in (0, 1):
        raise BadRequest(f"impossible IntOrString.Type {kind}")
    return number_value if kind == 0 else text


def _raw_json(where: str) -> Callable[[bytes, Span], Any]:
    """runtime.RawExtension and metav1.FieldsV1: JSON carried as bytes (none is null)."""
    def decode(buf: bytes, span: Span) -> Any:
        raw = b""
        for number, _, value in _scan(buf, span, where, {1: (BYTES, "raw")}):
            if number == 1:
                raw = buf[value[0]:value[1]]
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise BadRequest(f"{where}: the raw bytes are not JSON: {e}") from None
    return decode


_SPECIAL: dict[str, Callable[[bytes, Span], Any]] = {
    "Time": _time, "MicroTime": _micro_time, "Quantity": _quantity, "IntOrString": _int_or_string,
    "RawExtension": _raw_json("runtime.RawExtension"), "FieldsV1": _raw_json("metav1.FieldsV1")}
