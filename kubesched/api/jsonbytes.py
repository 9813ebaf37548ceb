"""Objects to JSON bytes, compact, on the paths that encode every write (the store's rows, the
API's answers, watch events).

orjson is several times faster than the standard library's encoder; it writes non-ASCII text as
UTF-8 rather than as escapes, which every JSON reader takes alike. What it refuses (integers past
64 bits, keys that are not strings) the standard encoder writes as before.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_fallback = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return _fallback(value).encode()


# The object the store encoded last, with its bytes (see `encode_stored`).
_stored: tuple[Any, bytes] = (None, b"")


def encode_stored(obj: Any) -> bytes:
    """`dumps(obj)` for an object the store is writing, kept until its next write: that write's
    watch events and its answer show this very object (a stored object is replaced, never
    changed), so `dumps_object` hands them these bytes instead of encoding the object again, one
    encoding where a pod's create took three and its binding and status two each."""
    global _stored
    data = dumps(obj)
    _stored = (obj, data)
    return data


def dumps_object(value: Any) -> bytes:
    """`dumps(value)`, the store's own bytes when `value` is the object it wrote last."""
    obj, data = _stored
    return data if value is obj else dumps(value)


_sorted_fallback = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False).encode


def canonical(value: Any) -> bytes:
    """`value` as compact JSON with sorted keys: equal values give equal bytes, so it keys a
    cache of what was found about a value (the standard encoder, built per call, costs twenty
    times as much). orjson writes NaN and infinities as null, so whatever it writes a null in is
    written by the standard encoder, which tells them apart."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return _sorted_fallback(value).encode()
    return text if b"null" not in text else _sorted_fallback(value).encode()
