"""kube-apiserver's checks of a CustomResourceDefinition (apiextensions validation): names, scope,
versions with exactly one storage version, structural schemas, subresources and printer columns.

Each problem is `path: message` in the API server's words, so `kubectl apply` prints what a real
cluster would."""

from __future__ import annotations

import json
import re
from typing import Any

from kubesched.api.crd import definition as d
from kubesched.api.crd.cel import compile_error
from kubesched.api.crd.definition import as_dict
from kubesched.api.names import dns_1035_label_errors, dns_subdomain_errors

Obj = dict[str, Any]
_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
# Groups of the Kubernetes project: a definition in one says which API review approved it.
_PROTECTED_GROUPS = ("k8s.io", "kubernetes.io")
_APPROVED = "api-approved.kubernetes.io"
_STRUCTURE_KEYS = ("type", "additionalProperties", "default", "nullable", "description", "title",
                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                   "x-kubernetes-int-or-string")
_JSON_PATH = re.compile(r"^\.[A-Za-z0-9_.\[\]'\"-]*$")


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Problems(list[str]):
    def required(self, path: str, detail: str = "") -> None:
        self.append(f"{path}: Required value: {detail}" if detail else f"{path}: Required value")

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.append(f"{path}: Invalid value: {_show(value)}: {detail}")

    def forbidden(self, path: str, detail: str) -> None:
        self.append(f"{path}: Forbidden: {detail}")

    def unsupported(self, path: str, value: Any, supported: tuple[str, ...]) -> None:
        values = ", ".join(f'"{s}"' for s in supported)
        self.append(f"{path}: Unsupported value: {_show(value)}: supported values: {values}")


def crd_problems(crd: Obj, old: Obj | None = None) -> list[str]:
    """Every problem of `crd` (and of changing `old` into it), `path: message`."""
    p = _Problems()
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        p.required("spec")
        return p
    name = str((crd.get("metadata") or {}).get("name") or "")
    required = f"{d.plural(crd)}.{d.group(crd)}"
    if name and name != required:
        p.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
    _group(p, spec.get("group"))
    group = str(spec.get("group") or "")
    annotations = as_dict(as_dict(crd.get("metadata")).get("annotations"))
    if any(group == g or group.endswith("." + g) for g in _PROTECTED_GROUPS) and _APPROVED not in annotations:
        p.required(f"metadata.annotations[{_APPROVED}]", f'protected groups must have approval annotation "{_APPROVED}", '
                   "see https://github.com/kubernetes/enhancements/pull/1111")
    scope = spec.get("scope")
    if not scope:
        p.required("spec.scope")
    elif scope not in d.SCOPES:
        p.unsupported("spec.scope", scope, d.SCOPES)
    _names(p, spec.get("names"), "spec.names", required_fields=True)
    _versions(p, crd)
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy") if isinstance(conversion, dict) else None
    if strategy not in ("None", "Webhook"):
        p.unsupported("spec.conversion.strategy", strategy, ("None", "Webhook"))
    elif strategy == "Webhook" and not conversion.get("webhook"):
        p.required("spec.conversion.webhook", "required when strategy is set to Webhook")
    if spec.get("preserveUnknownFields") is True:
        p.invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                  "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")
    if old is not None:
        _update(p, crd, old)
    return p


def _group(p: _Problems, group: Any) -> None:
    if not group:
        p.required("spec.group")
    elif not isinstance(group, str) or (errs := dns_subdomain_errors(group)):
        p.invalid("spec.group", group, ",".join(errs) if isinstance(group, str) else "must be a string")
    elif "." not in group:
        p.invalid("spec.group", group, "should be a domain with at least one dot")


def _names(p: _Problems, names: Any, path: str, required_fields: bool) -> None:
    names = names if isinstance(names, dict) else {}
    if required_fields:
        for key in ("plural", "singular", "kind", "listKind"):
            if not names.get(key):
                p.required(f"{path}.{key}")
    for key in ("plural", "singular"):
        value = names.get(key)
        if isinstance(value, str) and value and (errs := dns_1035_label_errors(value)):
            p.invalid(f"{path}.{key}", value, ",".join(errs))
    for key in ("kind", "listKind"):
        value = names.get(key)
        if isinstance(value, str) and value and (errs := dns_1035_label_errors(value.lower())):
            p.invalid(f"{path}.{key}", value, "may have mixed case, but should otherwise match: " + ",".join(errs))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        p.invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same")
    for key in ("shortNames", "categories"):
        for i, value in enumerate(names.get(key) or ()):
            if not isinstance(value, str) or (errs := dns_1035_label_errors(value)):
                p.invalid(f"{path}.{key}[{i}]", value, ",".join(errs) if isinstance(value, str) else "must be a string")


def _versions(p: _Problems, crd: Obj) -> None:
    raw = d.spec(crd).get("versions")
    if not isinstance(raw, list) or not raw:
        p.invalid("spec.versions", raw if raw is not None else [], "must have exactly one version marked as "
                  "storage version")
        return
    seen: set[str] = set()
    storage = 0
    for i, v in enumerate(raw):
        path = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            p.invalid(path, v, "must be an object")
            continue
        name = v.get("name")
        if not isinstance(name, str) or not name:
            p.required(f"{path}.name")
        elif errs := dns_1035_label_errors(name):
            p.invalid(f"{path}.name", name, ",".join(errs))
        if name in seen:
            p.invalid("spec.versions", [x.get("name") for x in raw if isinstance(x, dict)],
                      "must contain unique version names")
        seen.add(str(name))
        storage += bool(v.get("storage"))
        _version(p, v, path)
    if storage != 1:
        p.invalid("spec.versions", [x.get("name") for x in raw if isinstance(x, dict)],
                  "must have exactly one version marked as storage version")
    if not any(isinstance(v, dict) and v.get("served") for v in raw):
        p.invalid("spec.versions", [x.get("name") for x in raw if isinstance(x, dict)],
                  "must have at least one version marked as served")


def _version(p: _Problems, v: Obj, path: str) -> None:
    schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(v.get("schema"), dict) else None
    subresources = as_dict(v.get("subresources"))
    if not isinstance(schema, dict):
        p.required(f"{path}.schema.openAPIV3Schema", "schemas are required")
    else:
        _structural(p, schema, f"{path}.schema.openAPIV3Schema")
    scale = subresources.get("scale")
    if isinstance(scale, dict):
        sp = f"{path}.subresources.scale"
        spec_path = scale.get("specReplicasPath")
        if not spec_path:
            p.required(f"{sp}.specReplicasPath")
        elif not str(spec_path).startswith(".spec.") or not _JSON_PATH.match(str(spec_path)):
            p.invalid(f"{sp}.specReplicasPath", spec_path, "should be a json path under .spec")
        status_path = scale.get("statusReplicasPath")
        if not status_path:
            p.required(f"{sp}.statusReplicasPath")
        elif not str(status_path).startswith(".status.") or not _JSON_PATH.match(str(status_path)):
            p.invalid(f"{sp}.statusReplicasPath", status_path, "should be a json path under .status")
        selector = scale.get("labelSelectorPath")
        if selector and (not re.match(r"^\.(spec|status)\.", str(selector)) or not _JSON_PATH.match(str(selector))):
            p.invalid(f"{sp}.labelSelectorPath", selector, "should be a json path under either .spec or .status")
    for i, column in enumerate(v.get("additionalPrinterColumns") or ()):
        cp = f"{path}.additionalPrinterColumns[{i}]"
        if not isinstance(column, dict):
            p.invalid(cp, column, "must be an object")
            continue
        if not column.get("name"):
            p.required(f"{cp}.name")
        ctype = column.get("type")
        if not ctype:
            p.required(f"{cp}.type")
        elif ctype not in _COLUMN_TYPES:
            p.unsupported(f"{cp}.type", ctype, _COLUMN_TYPES)
        fmt = column.get("format")
        if fmt and fmt not in _COLUMN_FORMATS:
            p.unsupported(f"{cp}.format", fmt, _COLUMN_FORMATS)
        json_path = column.get("jsonPath")
        if not json_path:
            p.required(f"{cp}.JSONPath")
        elif not str(json_path).startswith("."):
            p.invalid(f"{cp}.JSONPath", json_path, "must be a simple json path starting with .")


def _structural(p: _Problems, schema: Obj, path: str) -> None:
    """The structural-schema rules (apiextensions' structural schema and its OpenAPI checks): every
    field has a type, the root is an object, `metadata` says at most name and generateName, a
    list has items, a map has either properties or additionalProperties."""
    root_type = schema.get("type")
    if not root_type:
        p.required(f"{path}.type", "must not be empty at the root")
    elif root_type != "object":
        p.invalid(f"{path}.type", root_type, "must be object at the root")
    meta = as_dict(schema.get("properties")).get("metadata")
    if isinstance(meta, dict) and _says_more_than_names(meta):
        p.forbidden(f"{path}.properties[metadata]", "must not specify anything other than name and generateName, "
                    "but metadata is implicitly specified")
    _node(p, schema, path, root=True)


def _says_more_than_names(meta: Obj) -> bool:
    """Whether a root `metadata` schema restricts more than the name and generateName (its type
    and description say nothing)."""
    allowed = {"type", "description", "properties"}
    return bool(set(meta) - allowed) or bool(set(as_dict(meta.get("properties"))) - {"name", "generateName"})


def _node(p: _Problems, s: Any, path: str, root: bool = False, where: str = "") -> None:
    if not isinstance(s, dict):
        p.invalid(path, s, "must be an object")
        return
    t = s.get("type")
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    if preserve is False:
        p.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined")
    if t is not None and t not in _TYPES:
        p.unsupported(f"{path}.type", t, _TYPES)
    if not root and not t and not int_or_string and not preserve and where:
        p.required(f"{path}.type", f"must not be empty for specified {where}")
    if int_or_string and t:
        p.forbidden(f"{path}.type", "must be empty if x-kubernetes-int-or-string is true")
    if s.get("x-kubernetes-embedded-resource") is True and t != "object":
        p.invalid(f"{path}.type", t or "", "must be object if x-kubernetes-embedded-resource is true")
    if s.get("uniqueItems") is True:
        p.forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since the runtime complexity "
                    "becomes quadratic")
    if "$ref" in s:
        p.forbidden(f"{path}.$ref", "$ref is not supported")
    props = s.get("properties")
    extra = s.get("additionalProperties")
    if isinstance(props, dict) and props and extra is not None and extra is not True:
        p.forbidden(f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive")
    if isinstance(props, dict):
        for key, child in props.items():
            _node(p, child, f"{path}.properties[{key}]", where="object fields")
    if isinstance(extra, dict):
        _node(p, extra, f"{path}.additionalProperties", where="additionalProperties")
    if t == "array":
        items = s.get("items")
        if items is None:
            p.required(f"{path}.items", "must be specified")
        elif isinstance(items, dict):
            _node(p, items, f"{path}.items", where="array items")
        else:
            p.forbidden(f"{path}.items", "items must be a schema object and not an array")
    list_type = s.get("x-kubernetes-list-type")
    if list_type is not None:
        if list_type not in ("atomic", "map", "set"):
            p.unsupported(f"{path}.x-kubernetes-list-type", list_type, ("atomic", "map", "set"))
        elif t != "array":
            p.invalid(f"{path}.type", t or "", "must be array if x-kubernetes-list-type is specified")
        elif list_type == "map" and not s.get("x-kubernetes-list-map-keys"):
            p.required(f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map")
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and map_type not in ("atomic", "granular"):
        p.unsupported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular"))
    # Value validations only constrain what the structure says: they may not say more of it.
    branches = [(f"{path}.{key}[{i}]", child) for key in ("allOf", "anyOf", "oneOf")
                for i, child in enumerate(s.get(key) or ())]
    if isinstance(s.get("not"), dict):
        branches.append((f"{path}.not", s["not"]))
    for where_, child in branches:
        for key in _STRUCTURE_KEYS:
            if isinstance(child, dict) and key in child:
                p.forbidden(f"{where_}.{key}", "must be empty to be structural")
    for i, rule in enumerate(s.get("x-kubernetes-validations") or ()):
        rp = f"{path}.x-kubernetes-validations[{i}]"
        if not isinstance(rule, dict) or not rule.get("rule"):
            p.required(f"{rp}.rule")
        elif (error := compile_error(str(rule["rule"]))) is not None:
            p.invalid(f"{rp}.rule", rule["rule"], error)
        elif isinstance(rule.get("messageExpression"), str) and \
                (error := compile_error(rule["messageExpression"])) is not None:
            p.invalid(f"{rp}.messageExpression", rule["messageExpression"], error)


def _update(p: _Problems, crd: Obj, old: Obj) -> None:
    """What may not change once written: the group and plural (they make the name), and once the
    definition is established, its scope and kind."""
    for label, new_value, old_value in (("spec.group", d.group(crd), d.group(old)),
                                        ("spec.names.plural", d.plural(crd), d.plural(old))):
        if new_value != old_value:
            p.invalid(label, new_value, "field is immutable")
    if d.established(old):
        if d.spec(crd).get("scope") != d.spec(old).get("scope"):
            p.invalid("spec.scope", d.spec(crd).get("scope"), "field is immutable")
        if d.kind(crd) != d.kind(old):
            p.invalid("spec.names.kind", d.kind(crd), "field is immutable")
    stored = ((crd.get("status") or {}).get("storedVersions") or []) if isinstance(crd.get("status"), dict) else []
    names = {v.get("name") for v in d.versions(crd)}
    for i, v in enumerate(stored):
        if v not in names:
            p.invalid(f"status.storedVersions[{i}]", v, "must appear in spec.versions")
