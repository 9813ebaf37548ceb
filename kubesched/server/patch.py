"""The PATCH formats of the API server, as pure functions over objects in their JSON form.

`json_patch` (application/json-patch+json) follows the json-patch library kube-apiserver uses
(evanphx/json-patch v4), whose behaviour and messages differ from RFC 6902 implementations such
as the `jsonpatch` package (negative indices, how a missing parent is reported), so the
operations are done here. `merge_patch` (application/merge-patch+json) is RFC 7386 with the
server's checks on the body. `strategic_merge_patch` (application/strategic-merge-patch+json)
follows apimachinery's strategicpatch with the patch strategies and merge keys of the v1.35
OpenAPI definitions: lists merged by key, primitive lists merged as sets, the `$patch`,
`$retainKeys`, `$setElementOrder/` and `$deleteFromPrimitiveList/` directives, null deleting.
Errors carry the status and wording kube-apiserver answers with.
"""

from __future__ import annotations

import json
from typing import Any

from kubesched.api.objects import deep_copy
from kubesched.api.objects import merge_patch as rfc7386_merge
from kubesched.apiserver.errors import (
    BadRequest,
    Invalid,
    RequestEntityTooLarge,
    ServerError,
    UnsupportedMediaType,
)
from kubesched.server import schema

MAX_JSON_PATCH_OPERATIONS = 10000
_REJECTED = "the server rejected our request due to an error in our request"


class PatchRejected(Invalid):
    """422 with the API server's generic message, which is all it tells the client; `detail`
    keeps what went wrong (for logs and tests)."""

    def __init__(self, detail: str) -> None:
        super().__init__(_REJECTED)
        self.detail = detail


# --- JSON patch ------------------------------------------------------------------------------


class _OpFailed(Exception):
    pass


_MISSING = "missing value"
_BAD_INDEX = "invalid index referenced"


def json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply an RFC 6902 patch (the parsed body). A body that is not a list of operations is 400;
    an operation that does not apply (a failed `test` included) is 422."""
    if ops is None:
        ops = []
    if not isinstance(ops, list):
        raise BadRequest(f"json: cannot unmarshal {_json_kind(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if not isinstance(op, dict) and op is not None:
            raise BadRequest(f"json: cannot unmarshal {_json_kind(op)} into Go value of type jsonpatch.Operation")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestEntityTooLarge("Request entity too large: The allowed maximum operations in a JSON patch is "
                                    f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    root: list[Any] = [deep_copy(obj)]
    for op in ops:
        try:
            _apply_op(root, op or {})
        except _OpFailed as e:
            raise PatchRejected(str(e)) from None
    doc = root[0]
    if not isinstance(doc, dict):
        raise Invalid(f' "" is invalid: patch: Invalid value: "{_compact(doc)}": json: cannot unmarshal '
                      f"{_json_kind(doc)} into Go value of type map[string]interface {{}}")
    return doc


def _apply_op(root: list[Any], op: dict[str, Any]) -> None:
    kind = op.get("op")
    kind = kind if isinstance(kind, str) else "unknown"
    if kind == "add":
        path = _op_path(op, kind)
        parent, key = _find(root, path, f'add operation does not apply: doc is missing path: "{path}"')
        _add(parent, key, deep_copy(op.get("value")), f"error in add for path: '{path}'")
    elif kind == "remove":
        path = _op_path(op, kind)
        parent, key = _find(root, path, f'remove operation does not apply: doc is missing path: "{path}"')
        _remove(parent, key, f"error in remove for path: '{path}'")
    elif kind == "replace":
        path = _op_path(op, kind)
        if path == "":
            value = op.get("value")
            if not isinstance(value, dict | list):
                raise _OpFailed("replace operation value must be object or array")
            root[0] = deep_copy(value)
            return
        parent, key = _find(root, path, f"replace operation does not apply: doc is missing path: {path}")
        try:
            _get(parent, key)
        except _OpFailed:
            raise _OpFailed(f"replace operation does not apply: doc is missing key: {path}: {_MISSING}") from None
        _set(parent, key, deep_copy(op.get("value")))
    elif kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise _OpFailed(f"{kind} operation failed to decode from: operation, missing from field: {_MISSING}")
        parent, key = _find(root, source, f"{kind} operation does not apply: doc is missing from path: {source}")
        where = f"error in move for path: '{key}'" if kind == "move" else f"error in copy for from: '{source}'"
        value = _get(parent, key, where)
        if kind == "move":
            _remove(parent, key, where)
        else:
            value = deep_copy(value)
        path = _op_path(op, kind)
        dest, dest_key = _find(root, path, f"{kind} operation does not apply: doc is missing destination path: {path}")
        _add(dest, dest_key, value,
             f"error in move for path: '{path}'" if kind == "move" else "error while adding value during copy")
    elif kind == "test":
        _test(root, op)
    else:
        raise _OpFailed(f"Unexpected kind: {kind}")


def _op_path(op: dict[str, Any], kind: str) -> str:
    path = op.get("path")
    if not isinstance(path, str):
        # add, remove and copy report the bare cause, the others the accessor's message too.
        cause = _MISSING if kind in ("add", "remove", "copy") else f"operation missing path field: {_MISSING}"
        raise _OpFailed(f"{kind} operation failed to decode path: {cause}")
    return path


def _find(root: list[Any], path: str, failure: str) -> tuple[Any, str]:
    """The container holding the last token of `path`, and that token; a missing or scalar step
    on the way fails the operation with `failure`."""
    tokens = path.split("/")
    if len(tokens) < 2:
        raise _OpFailed(f"{failure}: {_MISSING}")
    node = root[0]
    for token in tokens[1:-1]:
        try:
            node = _get(node, _unescape(token))
        except _OpFailed:
            node = None
        if not isinstance(node, dict | list):
            raise _OpFailed(f"{failure}: {_MISSING}")
    return node, _unescape(tokens[-1])


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _index(items: list[Any], key: str, *, extra: int = 0) -> int:
    try:
        idx = int(key)
    except ValueError:
        raise _OpFailed(f'strconv.Atoi: parsing "{key}": invalid syntax') from None
    size = len(items) + extra
    if idx < -size or idx >= size:
        raise _OpFailed(f"Unable to access invalid index: {idx}: {_BAD_INDEX}")
    return idx + size if idx < 0 else idx


def _get(node: Any, key: str, where: str = "") -> Any:
    try:
        if isinstance(node, dict):
            if key not in node:
                raise _OpFailed(f"unable to get nonexistent key: {key}: {_MISSING}")
            return node[key]
        return node[_index(node, key)]
    except _OpFailed as e:
        if where:
            raise _OpFailed(f"{where}: {e}") from None
        raise


def _set(node: Any, key: str, value: Any) -> None:
    if isinstance(node, dict):
        node[key] = value
    else:
        node[_index(node, key)] = value


def _add(node: Any, key: str, value: Any, where: str) -> None:
    if isinstance(node, dict):
        node[key] = value
        return
    if key == "-":
        node.append(value)
        return
    try:
        int(key)
    except ValueError:
        raise _OpFailed(f"{where}: value was not a proper array index: '{key}': strconv.Atoi: parsing "
                        f'"{key}": invalid syntax') from None
    try:
        node.insert(_index(node, key, extra=1), value)
    except _OpFailed as e:
        raise _OpFailed(f"{where}: {e}") from None


def _remove(node: Any, key: str, where: str) -> None:
    if isinstance(node, dict):
        if key not in node:
            raise _OpFailed(f"{where}: unable to remove nonexistent key: {key}: {_MISSING}")
        del node[key]
        return
    try:
        del node[_index(node, key)]
    except _OpFailed as e:
        raise _OpFailed(f"{where}: {e}") from None


def _test(root: list[Any], op: dict[str, Any]) -> None:
    path = _op_path(op, "test")
    failed = f"testing value {path} failed: test failed"
    if path == "":
        if not _same(root[0], op.get("value")):
            raise _OpFailed(failed)
        return
    parent, key = _find(root, path, f"test operation does not apply: is missing path: {path}")
    try:
        value = _get(parent, key)
    except _OpFailed as e:
        if not str(e).endswith(_MISSING):
            raise _OpFailed(f"error in test for path: '{path}': {e}") from None
        value = None
    if value is None:
        if op.get("value") is not None:
            raise _OpFailed(failed)
    elif "value" not in op or not _same(value, op["value"]):
        raise _OpFailed(failed)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: objects and arrays by content, other values by their encoding (so 1 and 1.0
    differ, as do true and 1)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return _compact(a) == _compact(b)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"


# --- JSON merge patch ------------------------------------------------------------------------


def merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 7386 merge patch (the parsed body): null removes, objects merge, anything
    else replaces. A body that is not an object is refused as the API server refuses it."""
    if isinstance(patch, list):
        raise Invalid(f' "" is invalid: patch: Invalid value: "{_compact(patch)}": json: cannot unmarshal array '
                      "into Go value of type map[string]interface {}")
    if not isinstance(patch, dict):
        raise BadRequest("Invalid JSON Patch")
    return rfc7386_merge(obj, patch)


# --- strategic merge patch -------------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM = "$deleteFromPrimitiveList"
_SET_ORDER = "$setElementOrder"
_UNKNOWN_FORMAT = ("the body of the request was in an unknown format - accepted media types include: "
                   "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")


def strategic_merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a strategic merge patch (the parsed body) to a built-in kind, read through the
    schema of `obj`'s apiVersion and kind; a kind the API does not define (a custom resource)
    is 415, as the API server accepts only the other patch types for it."""
    name = schema.definition_name(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    if name is None:
        raise UnsupportedMediaType(_UNKNOWN_FORMAT)
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise BadRequest(f"json: cannot unmarshal {_json_kind(patch)} into Go value of type map[string]interface {{}}")
    root = schema.resolve({"$ref": "#/$defs/" + name})
    return _clean(_merge_map(obj, deep_copy(patch), root))


def _clean(value: Any) -> Any:
    """The patched object as decoding it into its type leaves it: directives and nulls gone."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None and not _is_directive(k)}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _is_directive(key: str) -> bool:
    return key in (_DIRECTIVE, _RETAIN_KEYS) or key.startswith((_DELETE_FROM + "/", _SET_ORDER + "/"))


def _field_meta(parent: dict[str, Any], key: str) -> tuple[dict[str, Any], str, str]:
    """(schema, patch strategy, merge key) of a field; `retainKeys` is a directive's business
    and is left out of the strategy."""
    field = schema.property_schema(parent, key)
    strategies = [s for s in str(field.get("x-kubernetes-patch-strategy") or "").split(",") if s]
    others = [s for s in strategies if s != "retainKeys"]
    if len(others) > 1 or len(strategies) > 2:
        raise ServerError(f"unexpected patch strategy: [{' '.join(strategies)}]")
    return field, (others[0] if others else ""), str(field.get("x-kubernetes-patch-merge-key") or "")


def _merge_map(original: Any, patch: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == "replace":
            return {k: v for k, v in patch.items() if k != _DIRECTIVE}
        if directive == "delete":
            return {}
        raise ServerError(f"unknown patch type: {_go(directive)} in map: {_go(patch)}")
    out = dict(original) if isinstance(original, dict) else {}
    patch = dict(patch)
    _retain_keys(out, patch)
    _ordered_lists(out, patch, s)
    for key, value in patch.items():
        delete_list = key.startswith(_DELETE_FROM)
        if delete_list:
            key = _directive_target(key, _DELETE_FROM, "invalid patch format of primitive list")
        if value is None:
            out.pop(key, None)
            continue
        if key not in out:
            out[key] = value
            continue
        current = out[key]
        if _json_type(current) is not _json_type(value):
            out[key] = value
        elif isinstance(value, dict):
            field, strategy, _ = _field_meta(s, key)
            out[key] = value if strategy == "replace" else _merge_map(current, value, field)
        elif isinstance(value, list):
            field, strategy, merge_key = _field_meta(s, key)
            out[key] = _merge_list(current, value, schema.items_schema(field), merge_key, delete_list) \
                if strategy == "merge" else value
        else:
            out[key] = value
    return out


def _directive_target(key: str, prefix: str, bad_format: str) -> str:
    head, sep, target = key.partition("/")
    if not sep or head != prefix:
        raise BadRequest(bad_format)
    return target


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """`$retainKeys`: the map keeps only the keys listed (and the patch may set no others)."""
    if _RETAIN_KEYS not in patch:
        return
    keep = patch.pop(_RETAIN_KEYS)
    if not isinstance(keep, list):
        raise BadRequest("invalid patch format of retainKeys")
    for k, v in patch.items():
        if v is not None and not k.startswith((_DELETE_FROM, _SET_ORDER)) and k not in keep:
            raise BadRequest("invalid patch format of retainKeys")
    for k in [k for k in original if k not in keep]:
        del original[k]


def _ordered_lists(original: dict[str, Any], patch: dict[str, Any], s: dict[str, Any]) -> None:
    """`$setElementOrder/<list>`: merge that list now and give it the order the client sent,
    items only the server has keeping their place relative to the others."""
    for directive in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(directive)
        if not isinstance(order, list):
            raise ServerError(f"expected a []interface {{}}, but received a {_go_type(order)}")
        key = _directive_target(directive, _SET_ORDER, "invalid patch format of setElementOrder list")
        current, patched = original.get(key), patch.get(key)
        for value, present in ((current, key in original), (patched, key in patch)):
            if present and not isinstance(value, list):
                raise ServerError(f"expected a []interface {{}}, but received a {_go_type(value)}")
        field, strategy, merge_key = _field_meta(s, key)
        _check_order(patched or [], order, merge_key)
        if key in original and key in patch:
            merged = _merge_list(current, patched, schema.items_schema(field), merge_key, False) \
                if strategy == "merge" else patched
        elif key in original or key in patch:
            merged = current if key in original else patched
        else:
            continue
        kind = _element_kind(current or [], patched or [], allow_empty=True)
        if kind is not None:
            in_order, server_only = _partition(merged, order, merge_key)
            merged = _normalize(in_order, server_only, order, current or [], merge_key, kind)
        original[key] = merged
        patch.pop(key, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    if not order or not patch_list:
        return
    items = [v for v in patch_list if not _is_delete(v)] if merge_key else patch_list
    pi = oi = 0
    while pi < len(items) and oi < len(order):
        if isinstance(items[pi], dict) and _DIRECTIVE in items[pi]:
            pi += 1
            continue
        if _key_equal(items[pi], order[oi], merge_key):
            pi += 1
        oi += 1
    if pi < len(items) and oi >= len(order):
        raise ServerError(f"The order in patch list:\n{_go(patch_list)}\n doesn't match {_SET_ORDER} list:\n"
                          f"{_go(order)}\n")


def _is_delete(item: Any) -> bool:
    if not isinstance(item, dict):
        raise ServerError(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
    return item.get(_DIRECTIVE) == "delete"


def _key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return left == right
    for item in (left, right):
        if not isinstance(item, dict):
            raise ServerError(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        if merge_key not in item:
            raise ServerError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
    return left[merge_key] == right[merge_key]


def _json_type(value: Any) -> type:
    """The JSON type of a value: a map shared between stored objects (`Shared`) is a map."""
    return dict if isinstance(value, dict) else type(value)


def _element_kind(*lists: list[Any], allow_empty: bool = False) -> str | None:
    """"map" or "scalar" for the items of the lists, which must all have one type."""
    seen: type | None = None
    for items in lists:
        for item in items:
            kind = _json_type(item)
            if seen is None:
                if isinstance(item, list):
                    raise PatchRejected("lists of lists are not supported")
                seen = kind
            elif kind is not seen:
                raise ServerError(f"list element types are not identical: [{' '.join(_go(x) for x in lists)}]")
    if seen is None:
        if allow_empty:
            return None
        raise ServerError("no elements in any of the given slices")
    return "map" if seen is dict else "scalar"


def _merge_list(original: list[Any], patch: list[Any], item_schema: dict[str, Any], merge_key: str,
                delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind == "scalar":
        if delete_list:
            return [v for v in original if v not in patch]
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise ServerError("cannot merge lists without merge key for type struct")
        original, patch = _special_items(original, patch, merge_key)
        merged = list(original)
        for item in patch:
            if merge_key not in item:
                raise ServerError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
            at = next((i for i, o in enumerate(merged) if o.get(merge_key) == item[merge_key] and merge_key in o), None)
            if at is None:
                merged.append(item)
            else:
                merged[at] = _merge_map(merged[at], item, item_schema)
    in_patch, server_only = _partition(merged, patch, merge_key)
    return _normalize(in_patch, server_only, patch, original, merge_key, kind)


def _special_items(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Items carrying `$patch`: `delete` drops the server's item with that key, `replace` makes
    the patch's other items the whole list."""
    plain = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise ServerError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
            original = [o for o in original if not (merge_key in o and o[merge_key] == item[merge_key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise ServerError("merging lists cannot yet be specified in the patch")
        else:
            raise ServerError(f"unknown patch type: {_go(directive)} in map: {_go(item)}")
    return (plain, []) if replace else (original, plain)


def _dedupe(items: list[Any]) -> list[Any]:
    """Drop repeated scalars the way strategicpatch does (moving the last item into the gap);
    the order is put right afterwards."""
    s = list(items)
    last = len(s) - 1
    i = 0
    while i < last:
        j = i + 1
        while j <= last:
            if s[i] == s[j]:
                s[j] = s[last]
                s = s[:last]
                last -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _partition(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    if not merge_key:
        wanted = {_compact(v) for v in by}
        inside = [v for v in items if _compact(v) in wanted]
        return inside, [v for v in items if _compact(v) not in wanted]
    keys = []
    for i, v in enumerate(by):
        if not isinstance(v, dict):
            raise ServerError(f"value for key {i} is not a map.")
        if merge_key in v:
            keys.append(v[merge_key])
    inside, outside = [], []
    for item in items:
        if merge_key not in item:
            raise ServerError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
        (inside if item[merge_key] in keys else outside).append(item)
    return inside, outside


def _position(order: list[Any], item: Any, merge_key: str, kind: str) -> int:
    probe = item.get(merge_key) if kind == "map" and isinstance(item, dict) else item
    for i, v in enumerate(order):
        other = v.get(merge_key) if kind == "map" and isinstance(v, dict) else v
        if other == probe:
            return i
    return -1


def _sorted_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    deletes = []
    if kind == "map":
        for v in [*items, *order]:
            if not isinstance(v, dict):
                raise ServerError(f"expected a map[string]interface {{}}, but received a {_go_type(v)}")
            if merge_key not in v:
                raise ServerError(f"map: {_go(v)} does not contain declared merge key: {merge_key}")
        deletes = [v for v in items if v.get(_DIRECTIVE) == "delete"]
        items = [v for v in items if v.get(_DIRECTIVE) != "delete"]
    positions = {id(v): _position(order, v, merge_key, kind) for v in items}
    ranked = sorted(items, key=lambda v: positions[id(v)] if positions[id(v)] >= 0 else len(order))
    return ranked + deletes


def _normalize(in_patch: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any],
               merge_key: str, kind: str) -> list[Any]:
    """The patch's items in the patch's order, the server's own items in the server's order, the
    two interleaved as the server's order places them."""
    right = _sorted_by(in_patch, patch_order, merge_key, kind)
    left = _sorted_by(server_only, server_order, merge_key, kind)
    out = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _position(server_order, left[i], merge_key, kind)
            ri = _position(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _go(value: Any) -> str:
    """A value as Go's %v prints the decoded JSON (for messages quoting a patch)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string"
