"""Which fields the built-in kinds have, from the official Kubernetes client's generated models.

kube-apiserver knows every field of every kind and warns about the others (`kubectl apply` prints
`Warning: unknown field "spec.nodeSelecter"`; with strict field validation it refuses them).
kubesched keeps objects in their JSON form, so without this a misspelt field would be dropped
silently and the simulation would quietly differ from the cluster. The `kubernetes` package's
models (`V1Pod.openapi_types` / `attribute_map`) are generated from the same OpenAPI schema.

Importing those models costs about 0.3 s on every run, a tenth of reading a large input, so their
fields are kept in `fields.json`, a table of {model: {JSON field: type}} written from the client
by `python -m kubesched.api.fieldschema` (a test checks that it matches the installed client).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from kubesched.api.kinds import model_name
from kubesched.api.loader import type_name
from kubesched.api.objects import parse_time
from kubesched.api.served import is_custom_group

# The model of each kind kubesched reads.
MODELS = {
    "Namespace": "V1Namespace",
    "Node": "V1Node",
    "Pod": "V1Pod",
    "PriorityClass": "V1PriorityClass",
    "PodDisruptionBudget": "V1PodDisruptionBudget",
    "RuntimeClass": "V1RuntimeClass",
    "ReplicaSet": "V1ReplicaSet",
    "Deployment": "V1Deployment",
    "DaemonSet": "V1DaemonSet",
}

# A field's type: ("model", name), ("list", item type), ("map", value type) or ("scalar", name), a
# scalar being "str", "int", "bool", "float", "datetime", or "object" (free-form JSON like `fieldsV1`,
# and int-or-string). The generator writes `List[X]` and `Dict[str, X]` (older clients: `list[X]`
# and `dict(str, X)`, and "ResourceQuantity", no model, for quantities).
_Type = tuple[str, Any]
_LIST = re.compile(r"[Ll]ist\[(.*)\]")
_MAP = re.compile(r"Dict\[str, (.*)\]|dict\(str, (.*)\)")
_SCALARS = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float), "datetime": (str,)}
_NAMES = {"str": "a string", "int": "an integer", "bool": "a boolean", "float": "a number",
          "datetime": "a string"}
# A null list item or map value decodes to the zero value of its type.
_ZERO: dict[str, Any] = {"str": "", "int": 0, "bool": False, "float": 0}
_INT64 = 2**63
_STRING = ("scalar", "str")
TIME_MSG = "must be an RFC 3339 time, e.g. 2026-01-01T00:00:00Z"
# A field path, built only when something is reported: (parent, key), with int keys for list items.
_Path = tuple[Any, str | int] | None


TABLE = Path(__file__).with_name("fields.json")


@cache
def _table() -> dict[str, dict[str, str]]:
    """{model: {JSON field: the client's type text}}, as written by `client_table`."""
    return json.loads(TABLE.read_text())


def client_table() -> dict[str, dict[str, str]]:
    """The table, read from the installed client's models (slow: it imports all of them)."""
    from kubernetes.client import models

    table = {}
    for name in sorted(n for n in dir(models) if n[:1].isupper()):
        cls = getattr(models, name)
        if hasattr(cls, "openapi_types"):
            table[name] = {cls.attribute_map[attr]: text for attr, text in cls.openapi_types.items()}
    return table


def _parse(type_text: str) -> _Type:
    if m := _LIST.fullmatch(type_text):
        return "list", _parse(m.group(1))
    if m := _MAP.fullmatch(type_text):
        return "map", _parse(m.group(1) or m.group(2))
    if type_text[:1].isupper() and type_text in _table():
        return "model", type_text
    return "scalar", type_text if type_text in _SCALARS else "object"


@cache
def _fields(model: str) -> dict[str, _Type]:
    """{JSON field: type} of one model."""
    return {field: _parse(text) for field, text in _table()[model].items()}


def model_fields(model: str) -> dict[str, _Type]:
    """{JSON field: type} of a model of the table (a type as the comment on _Type says)."""
    return _fields(model)


def model_of(api_version: str, kind: str) -> str | None:
    """The client's model of a built-in kind at a group/version, if it has one."""
    return None if is_custom_group(api_version) else _model_of(api_version, kind)


def decode(kind: str, obj: dict[str, Any], patch: bool = False,
           prune: bool = False) -> list[tuple[str, str | None]]:
    """Read `obj` as kube-apiserver decodes an object of `kind`, and say what it would not accept.

    In place, as decoding does: a null field is dropped (it is the field's zero value, which the API
    server omits) and a null list item or map value becomes its type's zero value, so no component
    meets a null where it expects a mapping or a list. Returns (path, message) for each value of
    the wrong type and (path, None) for each field the kind does not have; nothing for kinds
    without a model. A merge `patch` keeps its null fields and map values: they delete. With
    `prune` the fields the kind does not have are dropped too, as decoding into Go structs drops
    them (the API server's way); without it they stay, for a simulation that reports them.
    """
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and is_custom_group(api_version):
        return []  # a custom resource, though its kind may be a built-in one's: its CRD has its schema
    model = MODELS.get(kind) or (_model_of(api_version, kind) if isinstance(api_version, str) else None)
    if model is None:
        return []
    decoder = _Decoder(patch, prune)
    decoder.value(("model", model), obj, None)
    return [(_render(path), message) for path, message in decoder.found]


@cache
def _model_of(api_version: str, kind: str) -> str | None:
    """The client's model for a kind kubesched only stores (a Service, a Job...), if it has one. A
    kind two groups have (core's and events.k8s.io's Event, a container's and resource.k8s.io's
    ResourceClaim) is named after its group too: ResourceV1ResourceClaim, CoreV1Event."""
    name = model_name(api_version, kind)
    if name in _table():
        return name
    group = api_version.rpartition("/")[0].split(".")[0] or "core"
    qualified = group[:1].upper() + group[1:] + name
    return qualified if qualified in _table() else None


def decode_model(model: str, value: Any, path: str = "", many: bool = False) -> list[tuple[str, str | None]]:
    """`decode` for a value of one `model` (e.g. "V1NodeAffinity"), or a list of them when `many`,
    its paths under `path`."""
    decoder = _Decoder(patch=False)
    typ: _Type = ("model", model)
    decoder.value(("list", typ) if many else typ, value, (None, path) if path else None)
    return [(_render(where), message) for where, message in decoder.found]


class _Decoder:
    """One walk of a value against its type, collecting (path, message or None) in `found`."""

    def __init__(self, patch: bool, prune: bool = False) -> None:
        self.patch = patch
        self.prune = prune
        self.found: list[tuple[_Path, str | None]] = []

    def value(self, typ: _Type, value: Any, path: _Path, quantity: bool = False) -> None:
        form, arg = typ
        if form == "scalar":
            if value is not None and arg != "object":
                self.scalar(arg, value, path, quantity)
        elif form == "model":
            self.model(arg, value, path)
        elif not isinstance(value, list if form == "list" else dict):
            expected = "a list" if form == "list" else "a mapping"
            self.found.append((path, f"expected {expected}, got {type_name(value)}"))
        elif arg == _STRING and _only_strings(value):
            return  # labels, annotations, resource lists...: nothing to decode or report
        else:
            # A null item decodes to its zero value; in a merge patch a null map value deletes.
            zero = arg[1] in _ZERO or arg[0] != "scalar"
            if form == "map" and self.patch:
                zero = False
            quantity = arg == _STRING and form == "map"  # resource maps' values may be numbers
            of_model = arg[0] == "model"
            for key, item in list(enumerate(value) if form == "list" else value.items()):
                if item is None and zero:
                    value[key] = item = _ZERO.get(arg[1], [] if arg[0] == "list" else {})
                if of_model:  # lists of models (containers, tolerations...) without the dispatch
                    self.model(arg[1], item, (path, key))
                else:
                    self.value(arg, item, (path, key), quantity)

    def model(self, model: str, value: Any, path: _Path) -> None:
        if not isinstance(value, dict):
            self.found.append((path, f"expected a mapping, got {type_name(value)}"))
            return
        fields = _fields(model)
        if not self.patch and None in value.values():
            for key in [k for k, v in value.items() if v is None and k in fields]:
                del value[key]
        unknown: list[str] | None = None  # to prune, after the walk
        for key, item in value.items():
            typ = fields.get(key)
            if typ is None:
                self.found.append(((path, key), None))
                if self.prune:
                    unknown = unknown or []
                    unknown.append(key)
            elif type(item) is str and typ == _STRING or item is None and typ[0] == "scalar":
                continue  # the most common cases, without a call
            elif typ[0] == "model":
                self.model(typ[1], item, (path, key))
            else:
                self.value(typ, item, (path, key))
        for key in unknown or ():
            del value[key]

    def scalar(self, name: str, value: Any, path: _Path, quantity: bool) -> None:
        allowed = (str, int, float) if quantity else _SCALARS[name]
        if not isinstance(value, allowed) or isinstance(value, bool) is not (name == "bool"):
            self.found.append((path, f"expected {_NAMES[name]}, got {type_name(value)}"))
        elif name == "int" and not -_INT64 <= value < _INT64:
            self.found.append((path, f"expected a 64-bit integer, got {value}"))
        elif name == "datetime" and not _is_time(value):
            shown = json.dumps(value, ensure_ascii=False)
            self.found.append((path, f"Invalid value: {shown}: {TIME_MSG}"))


_STR_TYPE = {str}


def _only_strings(value: list[Any] | dict[str, Any]) -> bool:
    """Whether every item is a string, in one pass in C: string maps (labels, requests) are most
    of an object's maps, and checking their items one call each is much of decoding's cost."""
    return set(map(type, value.values() if isinstance(value, dict) else value)) <= _STR_TYPE


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "a mapping", list: "a list"}


def check(value: Any, schema: Any, path: str = "") -> Iterator[tuple[str, str | None]]:
    """Like `decode`, for the component configurations the client has no models for, against a
    schema written by hand: a mapping of field -> schema, [item schema] for a list, a Python type,
    None for any value, or a model name ("V1NodeAffinity"; "[V1..." for a list of them) for a
    part that is a Kubernetes type. As in `decode`, a null field is unset and dropped, in place;
    a null list item is reported."""
    if value is None or schema is None:
        return
    if isinstance(schema, str):
        yield from decode_model(schema.lstrip("["), value, path, many=schema.startswith("["))
        return
    expected = _python_type(schema)
    if not isinstance(value, expected) or isinstance(value, bool) is not (expected is bool):
        yield path, f"expected {_TYPE_NAMES[expected]}, got {type_name(value)}"
    elif expected is int and not -_INT64 <= value < _INT64:
        yield path, f"expected a 64-bit integer, got {value}"
    elif isinstance(schema, list):
        for i, item in enumerate(value):
            if item is None:
                yield f"{path}[{i}]", f"expected {_TYPE_NAMES[_python_type(schema[0])]}, got null"
            yield from check(item, schema[0], f"{path}[{i}]")
    elif isinstance(schema, dict):
        for key in [k for k, v in value.items() if v is None and k in schema]:
            del value[key]
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key in schema:
                yield from check(item, schema[key], where)
            else:
                yield where, None


def _python_type(schema: Any) -> type:
    return list if isinstance(schema, list) else dict if isinstance(schema, (dict, str)) else schema


def _is_time(text: str) -> bool:
    try:
        return parse_time(text).tzinfo is not None
    except ValueError:
        return False


def _render(path: _Path) -> str:
    keys: list[str | int] = []
    while path is not None:
        path, key = path
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text = f"{text}[{key}]" if isinstance(key, int) else f"{text}.{key}" if text else key
    return text


if __name__ == "__main__":
    TABLE.write_text(json.dumps(client_table(), indent=0, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {TABLE}\n")
