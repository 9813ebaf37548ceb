"""The resources CustomResourceDefinitions add to `serve`'s API: one REST resource per served
version of each definition, read from the store on every request, so a definition's resources
are routed, discovered and described the moment it is written, and gone when it is.

A custom resource is a `Resource` like the built-in ones (discovery, routing and OpenAPI treat
both alike) that also carries its definition: the version's schema, printer columns and
subresources."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.crd import definition as d
from kubesched.api.restmapping import Resource
from kubesched.api.served import resource_kind
from kubesched.store.base import Store

Obj = dict[str, Any]


@dataclass(frozen=True)
class CustomResource(Resource):
    crd: Obj = field(default_factory=dict, compare=False, hash=False)
    list_kind: str = ""

    @property
    def store_kind(self) -> str:
        return resource_kind({"apiVersion": self.api_version, "kind": self.kind})

    @property
    def storage_version(self) -> str:
        return d.storage_version(self.crd)

    @property
    def schema(self) -> Obj:
        return d.schema(self.crd, self.version)

    @property
    def printer_columns(self) -> list[Obj]:
        return d.printer_columns(self.crd, self.version)

    @property
    def selectable_fields(self) -> tuple[str, ...]:
        """The fields `selectableFields` lets field selectors use (`spec.color`)."""
        return tuple(str(f.get("jsonPath", "")).lstrip(".") for f in d.version(self.crd, self.version).get(
            "selectableFields") or () if isinstance(f, dict))

    @property
    def deprecation_warning(self) -> str | None:
        """What every request to a deprecated version is warned with, as upstream words it."""
        version = d.version(self.crd, self.version)
        if not version.get("deprecated"):
            return None
        return str(version.get("deprecationWarning") or f"{self.api_version} {self.kind} is deprecated")

    @property
    def scale(self) -> Obj:
        scale = d.subresources(self.crd, self.version).get("scale")
        return scale if isinstance(scale, dict) else {}


def resources_of(crd: Obj) -> list[CustomResource]:
    """One resource per served version of a definition."""
    names = d.names(crd)
    out = []
    for version in d.served_versions(crd):
        subs = d.subresources(crd, version)
        out.append(CustomResource(
            d.kind(crd), d.group(crd), version, d.plural(crd), namespaced=d.namespaced(crd),
            short_names=tuple(str(n) for n in names.get("shortNames") or ()),
            categories=tuple(str(c) for c in names.get("categories") or ()),
            subresources=tuple(s for s in ("status", "scale") if isinstance(subs.get(s), dict)),
            singular=str(names.get("singular") or d.kind(crd).lower()), crd=crd,
            list_kind=str(names.get("listKind") or d.kind(crd) + "List")))
    return out


class CustomResources:
    """The store's definitions as REST resources."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def all(self) -> list[CustomResource]:
        return [r for crd in sorted(self.store.list(d.KIND), key=lambda c: c["metadata"]["name"])
                for r in resources_of(crd)]

    def lookup(self, group: str, version: str, plural: str) -> CustomResource | None:
        crd = self.store.get(d.KIND, "", f"{plural}.{group}")
        if crd is None:
            return None
        return next((r for r in resources_of(crd) if r.version == version), None)


# ---- printer columns -------------------------------------------------------------------------------

_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*[\"']([^\"']*)[\"']\)\]|"
                   r"\[[\"']([^\"']+)[\"']\]")


def json_path(obj: Any, path: str) -> list[Any]:
    """The values a printer column's simple JSONPath (`.spec.replicas`, `.items[0].name`,
    `.status.conditions[?(@.type=="Ready")].status`) finds."""
    values = [obj]
    pos = 0
    path = path.strip().removeprefix("{").removesuffix("}")
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return []
        pos = m.end()
        key, index, filter_key, filter_value, quoted = m.groups()
        found: list[Any] = []
        for v in values:
            if key is not None or quoted is not None:
                if isinstance(v, dict) and (key or quoted) in v:
                    found.append(v[key or quoted])
            elif index is not None and isinstance(v, list):
                found.extend(v if index == "*" else v[int(index):int(index) + 1])
            elif filter_key is not None and isinstance(v, list):
                found.extend(item for item in v if [str(x) for x in json_path(item, "." + filter_key)][:1]
                             == [filter_value])
        values = found
    return values


def column_cell(obj: Obj, column: Obj) -> Any:
    """A printer column's cell: the first value found, as its type prints it (`date` as an age,
    left for the caller), None when the path finds nothing."""
    found = json_path(obj, str(column.get("jsonPath") or ""))
    if not found:
        return None
    value = found[0]
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    ctype = column.get("type")
    if ctype == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    return value
