"""Type checking of a ValidatingAdmissionPolicy's expressions against the kinds it matches, as
kube-apiserver's type-checking controller does (admission/plugin/policy/validating/typechecking.go)
to fill `status.typeChecking.expressionWarnings`: `object`, `oldObject` and `params` are typed by
the schema of each kind, and a field selection the kind does not have is reported as cel-go
reports it (`undefined field 'replicas'`).

What is checked is field selection, the mistake type checking catches in practice: through
fields, list and map indexing, and the variables that list macros (`all`, `exists`, `map`, ...)
bind to elements. Everything else (function signatures, operand types) is left to evaluation,
which reports it when the expression runs. A warning never changes what the policy does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import lark

from kubesched.api.fieldschema import model_fields

Obj = dict[str, Any]
# A type: ("model", client model name), ("schema", an OpenAPI v3 schema), ("list", item type),
# ("map", value type), ("scalar", name); DYN when nothing is known.
Type = tuple[str, Any]
DYN: Type = ("dyn", None)
STRING: Type = ("scalar", "str")
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
# What every object has, whatever its schema says (a custom resource's root).
_OBJECT_META: Type = ("model", "V1ObjectMeta")
_ROOT_FIELDS: dict[str, Type] = {"apiVersion": STRING, "kind": STRING, "metadata": _OBJECT_META}


def model_type(model: str) -> Type:
    return "model", model


def schema_type(schema: Obj) -> Type:
    """A custom resource's root: its schema, with apiVersion, kind and metadata."""
    return "root", schema


def _schema(schema: Any) -> Type:
    if not isinstance(schema, dict) or schema.get("x-kubernetes-int-or-string"):
        return DYN
    if schema.get("type") == "array":
        return "list", _schema(schema.get("items"))
    if schema.get("type") == "object" or "properties" in schema or "additionalProperties" in schema:
        return "schema", schema
    return "scalar", schema.get("type") or "object"


def _field(typ: Type, name: str) -> Type | None:
    """The type of field `name` of a value of `typ`; None when it has no such field."""
    form, what = typ
    if form == "model":
        fields = model_fields(what)
        if name not in fields:
            return None
        found: Type = fields[name]
        return DYN if found == ("scalar", "object") else found
    if form == "root":
        if name in _ROOT_FIELDS:
            return _ROOT_FIELDS[name]
        return _field(("schema", what), name)
    if form == "schema":
        properties = what.get("properties")
        if isinstance(properties, dict) and name in properties:
            return _schema(properties[name])
        extra = what.get("additionalProperties")
        if isinstance(extra, dict):
            return _schema(extra)
        if extra is True or what.get("x-kubernetes-preserve-unknown-fields") or not isinstance(properties, dict):
            return DYN
        return None
    if form == "map":
        return what  # a map's key, selected as a field
    return DYN


def _element(typ: Type) -> Type:
    """What indexing a value of `typ` gives (a list's item, a map's value)."""
    form, what = typ
    if form in ("list", "map"):
        return what
    if form == "schema" and isinstance(what.get("additionalProperties"), dict):
        return _schema(what["additionalProperties"])
    return DYN


def _iterated(typ: Type) -> Type:
    """What a macro's variable ranges over: a list's items, a map's keys."""
    form, _ = typ
    if form == "list":
        return typ[1]
    if form in ("map", "schema"):
        return STRING
    return DYN


@dataclass
class _Checker:
    text: str
    scope: dict[str, Type]
    issues: list[str] = field(default_factory=list)

    def report(self, token: lark.Token) -> None:
        """cel-go's issue, placed at the selection's dot."""
        line = int(token.line or 1)
        column = max(int(token.column or 1) - 1, 1)
        source = self.text.splitlines()[line - 1] if self.text.splitlines() else ""
        self.issues.append(f"ERROR: <input>:{line}:{column}: undefined field '{token}'\n | {source}\n"
                           f" | {'.' * (column - 1)}^")

    def type_of(self, node: Any, scope: dict[str, Type]) -> Type:
        if not isinstance(node, lark.Tree):
            return DYN
        kind, children = node.data, node.children
        if kind in ("member", "primary") and len(children) == 1:
            return self.type_of(children[0], scope)
        if kind == "ident" and isinstance(children[0], lark.Token):
            return scope.get(str(children[0]), DYN)
        if kind == "member_dot" and isinstance(name := children[1], lark.Token):
            base = self.type_of(children[0], scope)
            if base == DYN:
                return DYN
            found = _field(base, str(name))
            if found is None:
                self.report(name)
                return DYN
            return found
        if kind == "member_index":
            base = self.type_of(children[0], scope)
            self.type_of(children[1], scope)
            return _element(base)
        if kind == "member_dot_arg":
            base = self.type_of(children[0], scope)
            args = [a for a in (children[2].children if len(children) > 2 and isinstance(children[2], lark.Tree)
                                else ())]
            if str(children[1]) in MACROS and len(args) >= 2:
                bound = _macro_variable(args[0])
                inner = {**scope, bound: _iterated(base)} if bound else scope
                for arg in args[1:]:
                    self.type_of(arg, inner)
                return DYN
            for arg in args:
                self.type_of(arg, scope)
            return DYN
        for child in children:
            self.type_of(child, scope)
        return DYN


def _macro_variable(arg: Any) -> str | None:
    """The name a macro binds (its first argument, a bare identifier)."""
    names = [t for t in arg.scan_values(lambda v: isinstance(v, lark.Token))] if isinstance(arg, lark.Tree) else []
    return str(names[0]) if len(names) == 1 else None


def check(tree: lark.Tree, text: str, object_type: Type, params_type: Type | None) -> str | None:
    """cel-go's issues for the field selections of a compiled expression (`tree`, from `text`)
    when `object` and `oldObject` are of `object_type`; None when there are none."""
    scope = {"object": object_type, "oldObject": object_type}
    if params_type is not None:
        scope["params"] = params_type
    checker = _Checker(text, scope)
    checker.type_of(tree, scope)
    return "\n".join(checker.issues) or None
