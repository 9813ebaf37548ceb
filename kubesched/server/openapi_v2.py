"""`/openapi/v2` as kubectl reads it: the Swagger 2.0 definitions in gnostic's protobuf encoding.

kubectl validates what it cannot leave to the server from this document: `kubectl apply -f`
of a `kind: List` (what `kubectl get -o yaml` exports) is checked client-side, against the v2
definitions, and client-go asks for them only as protobuf
(`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`). The document carries the
definitions with their `x-kubernetes-*` extensions (validation finds a kind by its
`x-kubernetes-group-version-kind`); paths are left out, as nothing that reads v2 needs them
once v3 is served.

The encoding is written out here (field numbers of gnostic's openapiv2/OpenAPIv2.proto) rather
than taken from a generated protobuf module: the message set is small and fixed.
"""

from __future__ import annotations

import json
import struct
from functools import cache
from typing import Any

import yaml

from kubesched.server.openapi import component_schemas
from kubesched.server.schema import KUBERNETES_VERSION

# What kube-openapi answers with (the "@" of what clients ask for is not valid in a media type).
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V3_REF = "#/components/schemas/"


# ---- protobuf wire format -------------------------------------------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _string(field: int, text: str) -> bytes:
    return _bytes(field, text.encode()) if text else b""


def _double(field: int, value: float) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<d", value)


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML text (field 2)."""
    return _string(2, yaml.safe_dump(value, default_flow_style=False).rstrip("\n")
                   if not isinstance(value, str) else json.dumps(value))


def _named_any(name: str, value: Any) -> bytes:
    return _string(1, name) + _bytes(2, _any(value))


# ---- messages -------------------------------------------------------------------------------------

def _schema(s: dict[str, Any]) -> bytes:
    """A v3-form schema node as gnostic's Schema message (Swagger 2.0 keywords only)."""
    ref = s.get("$ref")
    all_of = s.get("allOf")
    if ref is None and isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        ref = all_of[0]["$ref"]  # v3's way of putting a description beside a reference
    out = bytearray()
    if isinstance(ref, str):
        out += _string(1, "#/definitions/" + ref.removeprefix(_V3_REF))
    out += _string(2, s.get("format", "") if isinstance(s.get("format"), str) else "")
    out += _string(4, s.get("description", "") if isinstance(s.get("description"), str) else "")
    if "default" in s:
        out += _bytes(5, _any(s["default"]))
    for key, field in (("maximum", 7), ("minimum", 9)):
        if isinstance(s.get(key), int | float) and not isinstance(s.get(key), bool):
            out += _double(field, float(s[key]))
    for name in s.get("required") or ():
        out += _string(19, name)
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        out += _bytes(21, _bytes(1, _schema(extra)))
    elif isinstance(extra, bool):
        out += _bytes(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00"))
    typ = s.get("type")
    if isinstance(typ, str) and ref is None:
        out += _bytes(22, _string(1, typ))
    if isinstance(s.get("items"), dict):
        out += _bytes(23, _bytes(1, _schema(s["items"])))
    props = s.get("properties")
    if isinstance(props, dict):
        out += _bytes(25, b"".join(_bytes(1, _string(1, name) + _bytes(2, _schema(p))) for name, p in props.items()))
    for key, value in s.items():
        if key.startswith("x-"):
            out += _bytes(31, _named_any(key, value))
    return bytes(out)


@cache
def document() -> bytes:
    """The whole v2 document, encoded once."""
    info = _string(1, "Kubernetes") + _string(2, KUBERNETES_VERSION)
    return _string(1, "2.0") + _bytes(2, info) + _definitions(component_schemas())


def _definitions(schemas: dict[str, dict[str, Any]]) -> bytes:
    return _bytes(9, b"".join(_bytes(1, _string(1, name) + _bytes(2, _schema(s)))
                              for name, s in sorted(schemas.items())))


def with_custom(schemas: dict[str, dict[str, Any]]) -> bytes:
    """The document with custom resources' definitions too. A message field given twice is
    merged by protobuf readers, so theirs follow the cached built-in ones as a second field."""
    return document() + _definitions(schemas) if schemas else document()
