"""What kube-apiserver does to a custom object with its version's structural schema: drop nulls the
schema does not allow, fill in `default`s, prune the fields the schema does not specify (unless
`x-kubernetes-preserve-unknown-fields`), then validate what is left with kube-openapi's rules
and messages (type, required, enum, bounds, pattern, lengths, formats, the `x-kubernetes-*`
extensions).

Paths are written as kube-apiserver writes them (`spec.ports[0].name`); problems are
`path: message`, ready for a 422."""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import re
import uuid
from datetime import datetime
from typing import Any

from kubesched.api.crd.definition import as_dict, json_type_name
from kubesched.api.duration import DurationError, parse_duration
from kubesched.api.names import dns_subdomain_errors

Obj = dict[str, Any]
_ROOT_KEYS = ("apiVersion", "kind", "metadata")


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---- defaulting and pruning ----------------------------------------------------------------------


def default_and_prune(obj: Obj, schema: Obj, defaults: bool = True) -> list[str]:
    """Default (unless not `defaults`) and prune `obj` in place (root-level apiVersion, kind and
    metadata are kept, as for every object); returns the paths of the fields pruned, for
    fieldValidation."""
    pruned: list[str] = []
    _walk(obj, schema, "", pruned, defaults, root=True)
    return pruned


def _walk(value: Any, s: Obj, path: str, pruned: list[str], defaults: bool, root: bool = False) -> None:
    if isinstance(value, dict):
        props = as_dict(s.get("properties"))
        extra = s.get("additionalProperties")
        embedded = root or s.get("x-kubernetes-embedded-resource") is True
        for key, child in props.items():
            if isinstance(child, dict) and key in value and value[key] is None and not child.get("nullable"):
                del value[key]
            if defaults and isinstance(child, dict) and "default" in child and key not in value:
                value[key] = copy.deepcopy(child["default"])
        keep_all = s.get("x-kubernetes-preserve-unknown-fields") is True or extra is True
        for key in list(value):
            if embedded and key in _ROOT_KEYS:
                # Every object's own: its metadata is ObjectMeta whatever the schema says.
                if key == "metadata" and not root and isinstance(value[key], dict):
                    _prune_embedded_metadata(value[key], _join(path, key), pruned)
                continue
            if key in props:
                if isinstance(props[key], dict):
                    _walk(value[key], props[key], _join(path, key), pruned, defaults)
            elif isinstance(extra, dict):
                _walk(value[key], extra, _join(path, key), pruned, defaults)
            elif not keep_all:
                pruned.append(_join(path, key))
                del value[key]
    elif isinstance(value, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _walk(item, items, f"{path}[{i}]", pruned, defaults)


_OBJECT_META = ("annotations", "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "finalizers",
                "generateName", "generation", "labels", "managedFields", "name", "namespace", "ownerReferences",
                "resourceVersion", "selfLink", "uid")


def _prune_embedded_metadata(meta: Obj, path: str, pruned: list[str]) -> None:
    """An embedded resource's metadata keeps the fields ObjectMeta has."""
    for key in list(meta):
        if key not in _OBJECT_META:
            pruned.append(_join(path, key))
            del meta[key]


# ---- validation ----------------------------------------------------------------------------------


def object_problems(obj: Obj, schema: Obj, old: Obj | None = None) -> list[str]:
    """The schema's problems with `obj` (its metadata's name too, which every custom object
    must have as a DNS subdomain). On an update (`old`: the object before it), a value left as it
    was is not checked again (validation ratcheting, on since v1.30): a schema made stricter does
    not lock its objects against unrelated changes."""
    problems: list[str] = []
    meta = as_dict(obj.get("metadata"))
    name = meta.get("name")
    if isinstance(name, str) and name and (errs := dns_subdomain_errors(name)):
        problems.append(f"metadata.name: Invalid value: {_show(name)}: {'; '.join(errs)}")
    body = {k: v for k, v in obj.items() if k not in _ROOT_KEYS}
    before = {k: v for k, v in old.items() if k not in _ROOT_KEYS} if old is not None else _NEW
    top = {**schema, "properties": {k: v for k, v in (schema.get("properties") or {}).items() if k not in _ROOT_KEYS}}
    _validate(body, top, "", problems, before)
    return problems


class _New:
    """No old value to ratchet against: the object, field or list item is new."""


_NEW: Any = _New()


def _validate(value: Any, s: Obj, path: str, out: list[str], old: Any = _NEW) -> None:
    if old is not _NEW and old == value:
        return  # unchanged: ratcheted
    if value is None:
        if not s.get("nullable") and (s.get("type") or s.get("x-kubernetes-int-or-string")):
            out.append(_type_error(path, value, s))
        return
    if s.get("x-kubernetes-int-or-string") is True:
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            out.append(f'{path}: Invalid value: "{json_type_name(value)}": {path} in body must be of type '
                       f'integer,string: "{json_type_name(value)}"')
            return
    elif t := s.get("type"):
        actual = json_type_name(value)
        if not (actual == t or (t == "number" and actual == "integer")):
            out.append(_type_error(path, value, s))
            return
    if "enum" in s and isinstance(s["enum"], list) and value not in s["enum"]:
        supported = ", ".join(json.dumps(e if isinstance(e, str) else _show(e)) for e in s["enum"])
        out.append(f"{path}: Unsupported value: {_show(value)}: supported values: {supported}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _numeric(value, s, path, out)
    elif isinstance(value, str):
        _string(value, s, path, out)
    elif isinstance(value, list):
        _array(value, s, path, out, old)
    elif isinstance(value, dict):
        _object(value, s, path, out, old)
    _combinators(value, s, path, out)


def _type_error(path: str, value: Any, s: Obj) -> str:
    actual = json_type_name(value)
    return f'{path}: Invalid value: "{actual}": {path} in body must be of type {s.get("type")}: "{actual}"'


def _numeric(value: float, s: Obj, path: str, out: list[str]) -> None:
    def bound(v: Any) -> Any:
        return int(v) if isinstance(v, float) and v.is_integer() else v

    if "minimum" in s:
        low = s["minimum"]
        if s.get("exclusiveMinimum") and value <= low:
            out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be greater than {bound(low)}")
        elif value < low:
            out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be greater than or equal "
                       f"to {bound(low)}")
    if "maximum" in s:
        high = s["maximum"]
        if s.get("exclusiveMaximum") and value >= high:
            out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be less than {bound(high)}")
        elif value > high:
            out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be less than or equal "
                       f"to {bound(high)}")
    step = s.get("multipleOf")
    if isinstance(step, (int, float)) and step and (value / step) != int(value / step):
        out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be a multiple of {bound(step)}")


def _string(value: str, s: Obj, path: str, out: list[str]) -> None:
    if isinstance(s.get("maxLength"), int) and len(value) > s["maxLength"]:
        out.append(f"{path}: Too long: may not be more than {s['maxLength']} byte{'s' if s['maxLength'] != 1 else ''}")
    if isinstance(s.get("minLength"), int) and len(value) < s["minLength"]:
        out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should be at least {s['minLength']} "
                   "chars long")
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True  # a pattern Go's RE2 takes and Python's does not: not ours to refuse
        if not matched:
            out.append(f"{path}: Invalid value: {_show(value)}: {path} in body should match '{pattern}'")
    fmt = s.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS and not _FORMATS[fmt](value):
        out.append(f'{path}: Invalid value: {_show(value)}: {path} in body must be of type {fmt}: {_show(value)}')


def _array(value: list[Any], s: Obj, path: str, out: list[str], old: Any) -> None:
    if isinstance(s.get("maxItems"), int) and len(value) > s["maxItems"]:
        out.append(f"{path}: Too many: {len(value)}: must have at most {s['maxItems']} items")
    if isinstance(s.get("minItems"), int) and len(value) < s["minItems"]:
        out.append(f"{path}: Invalid value: {len(value)}: {path} in body should have at least {s['minItems']} items")
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}[{i}]", out, _old_item(item, old, list_type, s))
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                out.append(f"{path}[{i}]: Duplicate value: {_show(item)}")
            seen.append(item)
    elif list_type == "map":
        keys = [k for k in s.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
        found: list[Obj] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = {k: item.get(k) for k in keys}
            if key in found:
                out.append(f"{path}[{i}]: Duplicate value: {_show(key)}")
            found.append(key)


def _old_item(item: Any, old: Any, list_type: Any, s: Obj) -> Any:
    """The old value of a list item, where items correlate: a `set` item with itself, a `map` item
    with the one of the same keys; an atomic list's items do not."""
    if not isinstance(old, list):
        return _NEW
    if list_type == "set":
        return item if item in old else _NEW
    if list_type == "map" and isinstance(item, dict):
        keys = [k for k in s.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
        return next((o for o in old if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys)), _NEW)
    return _NEW


def _object(value: Obj, s: Obj, path: str, out: list[str], old: Any) -> None:
    for key in s.get("required") or ():
        if key not in value:
            out.append(f"{_join(path, key)}: Required value")
    if isinstance(s.get("maxProperties"), int) and len(value) > s["maxProperties"]:
        out.append(f"{path}: Too many: {len(value)}: must have at most {s['maxProperties']} items")
    if isinstance(s.get("minProperties"), int) and len(value) < s["minProperties"]:
        out.append(f"{path}: Invalid value: {len(value)}: {path} in body should have at least "
                   f"{s['minProperties']} properties")
    if s.get("x-kubernetes-embedded-resource") is True:
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                out.append(f"{_join(path, key)}: Required value: must not be empty")
    props = as_dict(s.get("properties"))
    extra = s.get("additionalProperties")
    for key, child in value.items():
        before = old.get(key, _NEW) if isinstance(old, dict) else _NEW
        if key in props and isinstance(props[key], dict):
            _validate(child, props[key], _join(path, key), out, before)
        elif isinstance(extra, dict):
            _validate(child, extra, _join(path, key), out, before)


def _combinators(value: Any, s: Obj, path: str, out: list[str]) -> None:
    def passes(sub: Any) -> bool:
        found: list[str] = []
        if isinstance(sub, dict):
            _validate(value, sub, path, found)
        return not found

    for sub in s.get("allOf") or ():
        if isinstance(sub, dict):
            _validate(value, sub, path, out)
    if (any_of := s.get("anyOf")) and not any(passes(sub) for sub in any_of):
        out.append(f"{path}: Invalid value: {_show(value)}: {path} in body must validate at least one schema "
                   "(anyOf)")
    if (one_of := s.get("oneOf")) and sum(passes(sub) for sub in one_of) != 1:
        out.append(f"{path}: Invalid value: {_show(value)}: {path} in body must validate one and only one schema "
                   "(oneOf)")
    if isinstance(s.get("not"), dict) and passes(s["not"]):
        out.append(f"{path}: Invalid value: {_show(value)}: {path} in body must not validate the schema (not)")


# ---- formats: those kube-openapi's strfmt registry checks ------------------------------------------


def _ip(version: int) -> Any:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False
    return check


def _cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return len(text) == 36


def _datetime(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in text.upper()


def _date(text: str) -> bool:
    try:
        datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        return False
    return True


def _duration(text: str) -> bool:
    try:
        parse_duration(text)
    except (DurationError, ValueError):
        return False
    return True


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}"
                       r"[A-Za-z0-9])?)*$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$")

_FORMATS = {
    "ipv4": _ip(4), "ipv6": _ip(6), "cidr": _cidr, "uuid": _uuid, "date-time": _datetime, "date": _date,
    "duration": _duration, "byte": _byte, "hostname": lambda t: bool(_HOSTNAME.match(t)),
    "email": lambda t: bool(_EMAIL.match(t)), "mac": lambda t: bool(_MAC.match(t)), "uri": lambda t: bool(_URI.match(t)),
}
