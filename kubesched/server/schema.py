"""The v1.35 API's OpenAPI definitions, as the kubernetes-validate package ships them.

One source serves three needs: the OpenAPI documents kubectl reads (`explain`, client-side
apply), the patch metadata of strategic merge patch (`x-kubernetes-patch-merge-key`,
`x-kubernetes-patch-strategy`) and the list and map types of server-side apply
(`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`). References stay as the package writes
them (`#/$defs/<name>`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

KUBERNETES_VERSION = "v1.35.0"
_REF_PREFIX = "#/$defs/"


@cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition by its OpenAPI name (`io.k8s.api.core.v1.Pod`)."""
    path = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"{KUBERNETES_VERSION}-local" / \
        "_definitions.json"
    return json.loads(path.read_text())["$defs"]


@cache
def _by_gvk() -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            out.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return out


def definition_name(api_version: str, kind: str) -> str | None:
    """The definition of `kind` in `api_version` (`apps/v1`, `v1`), or None for a kind the
    API does not have (a custom resource)."""
    group, _, version = api_version.rpartition("/")
    return _by_gvk().get((group, version, kind))


def ref_name(schema: dict[str, Any]) -> str | None:
    """The definition a `$ref` schema points at (array items and the like are not followed)."""
    ref = schema.get("$ref")
    return ref[len(_REF_PREFIX):] if isinstance(ref, str) and ref.startswith(_REF_PREFIX) else None


def resolve(schema: dict[str, Any] | None) -> dict[str, Any]:
    """`schema` with a top-level `$ref` replaced by its definition (the property's own keys,
    such as its description or patch strategy, kept on top)."""
    if not schema:
        return {}
    name = ref_name(schema)
    if name is None:
        return schema
    return {**definitions().get(name, {}), **{k: v for k, v in schema.items() if k != "$ref"}}


def property_schema(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """The schema of field `key` of an object schema, resolved; {} for an unknown field (or a
    free-form map's value, returned as the map's `additionalProperties`)."""
    schema = resolve(schema)
    props = schema.get("properties") or {}
    if key in props:
        return resolve(props[key])
    extra = schema.get("additionalProperties")
    return resolve(extra) if isinstance(extra, dict) else {}


def items_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a list's elements, resolved."""
    return resolve(resolve(schema).get("items") or {})
