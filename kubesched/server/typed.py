"""Objects read through their OpenAPI schema, the way structured-merge-diff reads them.

Server-side apply and managed fields need three facts per field: is it a leaf (scalar, atomic map
or atomic list), is it a struct field or a free-form map key (a map key is a field of its own, a
struct field only holds what lies below it), and how the items of a list are told apart (by the
`x-kubernetes-list-map-keys`, by value for a set). `Type` compiles those facts lazily from
`schema.py`; the walks below (`to_set`, `compare`, `merge`, `remove`) are the four operations the
field manager is built from. Kinds without a schema (custom resources) get deduced types: maps
granular, lists atomic.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kubesched.server import fieldset as fs
from kubesched.server import schema
from kubesched.server.fieldset import FieldSet


class _Missing:
    """An absent field, as opposed to a field holding null."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


class _Zero:
    """A struct as Go's zero value holds it, the baseline a create is compared against: required
    fields present as null, value-typed structs present and empty, everything else absent."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ZERO"


MISSING: Any = _Missing()
ZERO: Any = _Zero()

# Key fields a list item may leave out because the schema defaults them (ports' protocol).
_KEY_DEFAULTS = {"protocol": "TCP"}
# Struct definitions Go embeds by value rather than by pointer (a heuristic on the name: the
# OpenAPI document does not say), which an empty object already holds.
_VALUE_STRUCT_SUFFIXES = ("Spec", "Status", "ObjectMeta", "Strategy", "ResourceRequirements")


class Type:
    __slots__ = ("kind", "atomic", "keys", "associative", "by_value", "required", "_props", "_extra",
                 "_items", "_fields", "_elem")

    def __init__(self, kind: str, *, atomic: bool = False, keys: tuple[str, ...] = (),
                 associative: bool = False, by_value: bool = False, required: frozenset[str] = frozenset(),
                 props: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
                 items: dict[str, Any] | None = None) -> None:
        self.kind = kind  # "scalar" | "struct" | "map" | "list" | "deduced"
        self.atomic = atomic
        self.keys = keys
        self.associative = associative
        self.by_value = by_value
        self.required = required
        self._props = props or {}
        self._extra = extra
        self._items = items
        self._fields: dict[str, Type] = {}
        self._elem: Type | None = None

    def declares(self, name: str) -> bool:
        return name in self._props

    def allows(self, name: str) -> bool:
        """Whether a struct may hold this key (a declared field, or any key when it also takes
        additional properties); other types take any key."""
        return self.kind != "struct" or name in self._props or self._extra is not None

    def field(self, name: str) -> Type:
        t = self._fields.get(name)
        if t is None:
            if name in self._props:
                t = compile_schema(self._props[name])
            elif self._extra is not None:
                t = self.elem
            else:
                t = DEDUCED
            self._fields[name] = t
        return t

    @property
    def elem(self) -> Type:
        if self._elem is None:
            raw = self._items if self.kind == "list" else self._extra
            self._elem = compile_schema(raw) if raw else DEDUCED
        return self._elem


DEDUCED = Type("deduced")


def compile_schema(raw: dict[str, Any]) -> Type:
    name = schema.ref_name(raw) or ""
    s = schema.resolve(raw)
    types = s.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    if "properties" in s:
        extra = s.get("additionalProperties")
        return Type("struct", atomic=s.get("x-kubernetes-map-type") == "atomic", props=s["properties"],
                    extra=extra if isinstance(extra, dict) else None, required=frozenset(s.get("required") or ()),
                    by_value=name.endswith(_VALUE_STRUCT_SUFFIXES))
    if isinstance(s.get("additionalProperties"), dict):
        return Type("map", atomic=s.get("x-kubernetes-map-type") == "atomic", extra=s["additionalProperties"])
    if "items" in s or "array" in types:
        keys, associative = _list_relationship(s)
        return Type("list", atomic=not associative, keys=keys, associative=associative,
                    items=s.get("items") or {})
    if "object" in types or not (types or "oneOf" in s or "format" in s):
        return DEDUCED
    return Type("scalar")


def _list_relationship(s: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
    """(map keys, associative) as the API server's schema conversion reads a list's extensions:
    `x-kubernetes-list-type` first, the patch strategy of older types second, atomic otherwise."""
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "map":
        return tuple(s.get("x-kubernetes-list-map-keys") or ()), True
    if list_type == "set":
        return (), True
    if list_type is None and s.get("x-kubernetes-patch-strategy") in ("merge", "merge,retainKeys"):
        key = s.get("x-kubernetes-patch-merge-key")
        return ((key,) if key else ()), True
    return (), False


_OBJECT_META = {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
_CUSTOM_RESOURCE = {"properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                   "metadata": _OBJECT_META, "spec": {}, "status": {}}}


@cache
def type_for(api_version: str, kind: str) -> Type:
    """The type of a whole object; a kind the API does not define is read as a custom resource."""
    name = schema.definition_name(api_version, kind)
    return compile_schema({"$ref": "#/$defs/" + name} if name else _CUSTOM_RESOURCE)


def custom_type(object_schema: dict[str, Any]) -> Type:
    """The type of a custom object whose version's structural schema is `object_schema`: its list
    and map types (`x-kubernetes-list-type`, `x-kubernetes-map-type`) are what apply merges by."""
    props = dict(object_schema.get("properties") or {})
    props.update(apiVersion={"type": "string"}, kind={"type": "string"}, metadata=_OBJECT_META)
    return compile_schema({**object_schema, "properties": props})


def has_schema(api_version: str, kind: str) -> bool:
    return schema.definition_name(api_version, kind) is not None


def _shape(value: Any, t: Type) -> str:
    """How a value is walked: "map", "list" (associative) or "leaf"."""
    kind = t.kind
    if kind == "deduced":
        return "map" if isinstance(value, dict) else "leaf"
    if kind in ("struct", "map"):
        return "leaf" if t.atomic else "map"
    if kind == "list":
        return "leaf" if t.atomic else "list"
    return "leaf"


def _pair_shape(lhs: Any, rhs: Any, t: Type) -> str:
    """How two values of one field are walked together; both empty is a leaf, so that an empty
    map or list and an absent one stay told apart."""
    if t.kind == "deduced":
        shapes = {_shape(v, t) for v in (lhs, rhs) if v is not MISSING and v is not None}
        shape = shapes.pop() if len(shapes) == 1 else "leaf"
    else:
        shape = _shape(None, t)
    if shape == "leaf" or not _fits(lhs, shape) or not _fits(rhs, shape) or (_empty(lhs) and _empty(rhs)):
        return "leaf"
    return shape


def _fits(value: Any, shape: str) -> bool:
    if value is MISSING or value is None:
        return True
    if shape == "map":
        return isinstance(value, dict) or value is ZERO
    return isinstance(value, list)


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or value is ZERO or not value


def item_element(item: Any, t: Type, index: int) -> str:
    """The path element of a list item: its keys, its value for a set, else its index."""
    if t.keys:
        if not isinstance(item, dict):
            return f"i:{index}"
        keys = {k: item[k] for k in t.keys if k in item}
        for k in t.keys:
            if k not in keys and k in _KEY_DEFAULTS and t.elem.declares(k):
                keys[k] = _KEY_DEFAULTS[k]
        return fs.key_element(keys)
    if t.associative:
        return fs.value_element(item)
    return f"i:{index}"


def _index(items: Any, t: Type) -> dict[str, Any]:
    """List items by path element; a repeated element keeps its first item."""
    out: dict[str, Any] = {}
    if isinstance(items, list):
        for i, item in enumerate(items):
            out.setdefault(item_element(item, t, i), item)
    return out


def to_set(value: Any, t: Type, named: bool = False) -> FieldSet:
    """What an object (or an applied configuration) sets: every leaf, list item and map key.
    With `named`, struct fields holding something count too (what pruning needs)."""
    shape = _shape(value, t)
    out: FieldSet = {}
    if shape == "map" and isinstance(value, dict):
        for k, v in value.items():
            ft = t.field(k)
            declared = t.declares(k)
            node = _entry(v, ft, declared, named)
            if node is not None:
                out[fs.field(k)] = node
    elif shape == "list" and isinstance(value, list):
        et = t.elem
        for i, item in enumerate(value):
            node = _entry(item, et, False, named)
            out[item_element(item, t, i)] = node if node is not None else {}
    return out


def _entry(value: Any, t: Type, declared: bool, named: bool) -> FieldSet | None:
    shape = _shape(value, t)
    if shape == "leaf" or not _fits(value, shape):
        return {}
    below = to_set(value, t, named)
    member = not declared or (named and bool(below))
    if not below:
        return {} if member else None
    return fs.member_node(below) if member else below


def compare(lhs: Any, rhs: Any, t: Type) -> tuple[FieldSet, FieldSet, FieldSet]:
    """(added, modified, removed) going from `lhs` to `rhs` (`ZERO` for a create)."""
    added, modified, removed = _compare(lhs, rhs, t)
    return added or {}, modified or {}, removed or {}


_NONE3: tuple[None, None, None] = (None, None, None)


def _compare(lhs: Any, rhs: Any, t: Type) -> tuple[FieldSet | None, FieldSet | None, FieldSet | None]:
    """The three sets below this node, or Nones for a leaf."""
    shape = _pair_shape(lhs, rhs, t)
    if shape == "leaf":
        return _NONE3
    added: FieldSet = {}
    modified: FieldSet = {}
    removed: FieldSet = {}
    if shape == "map":
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        zero = lhs is ZERO
        for k in (lm.keys() | rm.keys()) if lm and rm else (lm or rm):
            ft = t.field(k)
            lv = lm.get(k, MISSING)
            if zero and lv is MISSING:
                lv = ZERO if ft.by_value else (None if k in t.required else MISSING)
            _child(lv, rm.get(k, MISSING), ft, fs.field(k), added, modified, removed)
    else:
        li, ri = _index(lhs, t), _index(rhs, t)
        et = t.elem
        for pe in (li.keys() | ri.keys()):
            _child(li.get(pe, MISSING), ri.get(pe, MISSING), et, pe, added, modified, removed)
    return added, modified, removed


def _child(lv: Any, rv: Any, t: Type, pe: str, added: FieldSet, modified: FieldSet, removed: FieldSet) -> None:
    if lv is rv or (lv is not ZERO and lv == rv):
        return
    a, m, r = _compare(lv, rv, t)
    if a is None and m is None and r is None:
        # A leaf (or a walk that found the node itself changed).
        if lv is MISSING:
            added[pe] = {}
        elif rv is MISSING:
            removed[pe] = {}
        else:
            modified[pe] = {}
        return
    # A node walked into: it is itself added or removed when it is new or gone.
    if a:
        added[pe] = fs.member_node(a) if lv is MISSING else a
    elif lv is MISSING:
        added[pe] = {}
    if m:
        modified[pe] = m
    if r:
        removed[pe] = fs.member_node(r) if rv is MISSING else r
    elif rv is MISSING:
        removed[pe] = {}


def merge(lhs: Any, rhs: Any, t: Type) -> Any:
    """`lhs` with `rhs` merged in (an applied configuration onto the live object): leaves and
    atomic values from `rhs`, maps key by key, associative lists item by item in the order
    structured-merge-diff gives them. A null map or list in `rhs` leaves `lhs`'s alone."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING or lhs is None:
        return rhs
    shape = _pair_shape(lhs, rhs, t)
    if shape == "leaf":
        return rhs
    if rhs is None:
        return lhs
    if shape == "map":
        out = dict(lhs)
        for k, rv in rhs.items():
            out[k] = merge(lhs.get(k, MISSING), rv, t.field(k))
        return out
    return _merge_list(lhs, rhs, t)


def _merge_list(lhs: list[Any], rhs: list[Any], t: Type) -> list[Any]:
    """Items of both in one list: `rhs`'s order for the items it has, `lhs`'s other items kept
    where they stood relative to them."""
    li, ri = _index(lhs, t), _index(rhs, t)
    lorder, rorder = list(li), list(ri)
    shared = [pe for pe in rorder if pe in li]
    et = t.elem
    out: list[Any] = []
    si = l_i = r_i = 0
    ln, rn = len(lorder), len(rorder)
    while l_i < ln or r_i < rn:
        next_shared = shared[si] if si < len(shared) else None
        if l_i < ln and r_i < rn:
            pe = lorder[l_i]
            if pe == rorder[r_i]:
                out.append(merge(li[pe], ri[pe], et))
                l_i, r_i, si = l_i + 1, r_i + 1, si + 1
                continue
            if pe in ri and next_shared is not None and pe != next_shared:
                l_i += 1
                continue
        if l_i < ln and lorder[l_i] not in ri:
            out.append(li[lorder[l_i]])
            l_i += 1
            continue
        if r_i < rn:
            pe = rorder[r_i]
            out.append(merge(li.get(pe, MISSING), ri[pe], et))
            r_i += 1
            if pe == next_shared:
                si += 1
        else:
            l_i += 1  # an lhs item already taken with its rhs twin
    return out


def remove(value: Any, items: FieldSet, t: Type) -> Any:
    """`value` without the paths of `items` (a member path takes what lies below it along);
    a map or list left empty becomes null, as structured-merge-diff leaves it."""
    shape = _shape(value, t)
    if shape == "leaf":
        return value
    if not _fits(value, shape) or not value:
        return None
    if shape == "map":
        out = {}
        for k, v in value.items():
            node = items.get(fs.field(k))
            if node is None:
                out[k] = v
            elif not fs.is_member(node):
                out[k] = remove(v, node, t.field(k))
        return out or None
    et = t.elem
    kept = []
    for i, item in enumerate(value):
        node = items.get(item_element(item, t, i))
        if node is None:
            kept.append(item)
        elif not fs.is_member(node):
            kept.append(remove(item, node, et))
    return kept or None


def named_members(s: FieldSet, t: Type) -> FieldSet:
    """`s` with every struct field that holds something in the set made a member of it too."""
    out: FieldSet = {}
    for pe, node in s.items():
        if pe == fs.MEMBER:
            continue
        if pe.startswith("f:"):
            name = pe[2:]
            below = named_members(fs.children(node), t.field(name))
            member = fs.is_member(node) or t.declares(name)
        else:
            below = named_members(fs.children(node), t.elem if t.kind == "list" else DEDUCED)
            member = fs.is_member(node)
        out[pe] = (fs.member_node(below) if member else below) if below else {}
    return out


def drop_nulls(value: Any) -> Any:
    """Null fields removed: what converting to the typed object and back leaves of them."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def schema_errors(value: Any, t: Type, path: tuple[str, ...] = ()) -> list[str]:
    """What structured-merge-diff refuses in an applied configuration: fields the schema does not
    declare and list items sharing a key."""
    errors: list[str] = []
    shape = _shape(value, t)
    if shape == "map" and isinstance(value, dict):
        for k, v in value.items():
            sub = (*path, fs.field(k))
            if not t.allows(k):
                errors.append(f"{fs.path_string(sub)}: field not declared in schema")
            else:
                errors.extend(schema_errors(v, t.field(k), sub))
    elif shape == "list" and isinstance(value, list):
        seen: set[str] = set()
        for i, item in enumerate(value):
            pe = item_element(item, t, i)
            if pe in seen:
                errors.append(f"{fs.path_string(path)}: duplicate entries for key {fs.path_string((pe,))}")
                continue
            seen.add(pe)
            errors.extend(schema_errors(item, t.elem, (*path, pe)))
    return errors
