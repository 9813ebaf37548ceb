"""Sets of field paths in the shape `metadata.managedFields[].fieldsV1` stores them.

A set is a trie of path elements written the FieldsV1 way: `f:<field>`, `k:<JSON of a list
item's keys>`, `v:<JSON of a set item>`, `i:<index>`. A node is itself in the set when it is an
empty dict or holds `"."`; other keys are its children. Keeping the stored shape as the working
shape means an entry nobody touched is never decoded or re-encoded, which matters because every
write of the server goes through the field manager.

The set operations take and return *children dicts* (the root of a set, or a node's dict minus
its `"."`). Inputs are never mutated; outputs may share unchanged subtrees with the inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

FieldSet = dict[str, Any]
MEMBER = "."


def is_member(node: FieldSet) -> bool:
    return not node or MEMBER in node


def children(node: FieldSet) -> FieldSet:
    if MEMBER not in node:
        return node
    return {k: v for k, v in node.items() if k != MEMBER}


def _node(member: bool, below: FieldSet) -> FieldSet | None:
    """The node for a path with these children; None when the path is not in the set at all."""
    if not below:
        return {} if member else None
    return {MEMBER: {}, **below} if member else below


def member_node(below: FieldSet | None = None) -> FieldSet:
    """The node of a path that is itself in the set, with what lies below it."""
    return {MEMBER: {}, **below} if below else {}


def union(a: FieldSet, b: FieldSet) -> FieldSet:
    if not a:
        return b
    if not b:
        return a
    out = dict(a)
    for k, bv in b.items():
        if k == MEMBER:
            continue
        av = a.get(k)
        if av is None:
            out[k] = bv
        elif av is not bv:
            out[k] = _node(is_member(av) or is_member(bv), union(children(av), children(bv))) or {}
    return out


def difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """Paths of `a` not in `b`; a path of `b` takes out only itself, not what lies below it."""
    if not a or not b:
        return a
    out: FieldSet = {}
    for k, av in a.items():
        if k == MEMBER:
            continue
        bv = b.get(k)
        if bv is None:
            out[k] = av
            continue
        node = _node(is_member(av) and not is_member(bv), difference(children(av), children(bv)))
        if node is not None:
            out[k] = node
    return out


def recursive_difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """Paths of `a` neither in `b` nor below a path of `b` (how reset fields are taken out)."""
    if not a or not b:
        return a
    out: FieldSet = {}
    for k, av in a.items():
        if k == MEMBER:
            continue
        bv = b.get(k)
        if bv is None:
            out[k] = av
        elif not is_member(bv):
            node = _node(is_member(av), recursive_difference(children(av), bv))
            if node is not None:
                out[k] = node
    return out


def intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    if not a or not b:
        return {}
    out: FieldSet = {}
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    for k, sv in small.items():
        if k == MEMBER:
            continue
        lv = large.get(k)
        if lv is None:
            continue
        node = _node(is_member(sv) and is_member(lv), intersection(children(sv), children(lv)))
        if node is not None:
            out[k] = node
    return out


def union_all(sets: list[FieldSet]) -> FieldSet:
    out: FieldSet = {}
    for s in sets:
        out = union(out, s)
    return out


def has(s: FieldSet, path: tuple[str, ...]) -> bool:
    node: FieldSet = s
    for pe in path:
        child = node.get(pe)
        if child is None:
            return False
        node = child
    return bool(path) and is_member(node)


def paths(s: FieldSet, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every path of the set, in the order structured-merge-diff lists them: at each level the
    members first, then what lies below each child, both sorted."""
    keys = sorted(k for k in s if k != MEMBER)
    for k in keys:
        if is_member(s[k]):
            yield (*prefix, k)
    for k in keys:
        below = children(s[k])
        if below:
            yield from paths(below, (*prefix, k))


def canonical(s: FieldSet) -> FieldSet:
    """The set as the API server serialises it: `"."` first, then fields by name, then items by
    key (one node never mixes fields and items, so plain string order is that order)."""
    return {k: canonical(v) if v else v for k, v in sorted(s.items())}


def field(name: str) -> str:
    return "f:" + name


def key_element(keys: dict[str, Any]) -> str:
    """`k:{"containerPort":80,"protocol":"TCP"}`: the key fields sorted by name."""
    return "k:" + _json({k: keys[k] for k in sorted(keys)})


def value_element(value: Any) -> str:
    return "v:" + _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def path_string(path: tuple[str, ...]) -> str:
    """`.spec.template.spec.containers[name="nginx"].image`, as fieldpath.Path prints."""
    out = []
    for pe in path:
        kind, text = pe[:2], pe[2:]
        if kind == "f:":
            out.append("." + text)
        elif kind == "k:":
            keys = json.loads(text)
            out.append("[" + ",".join(f"{k}={_json(v)}" for k, v in keys.items()) + "]")
        elif kind == "v:":
            out.append(f"[={text}]")
        else:
            out.append(f"[{text}]")
    return "".join(out)
