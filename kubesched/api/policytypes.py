"""Type checking of a ValidatingAdmissionPolicy's expressions against the kinds it matches, as
kube-apiserver's type-checking controller does (admission/plugin/policy/validating/typechecking.go)
to fill `status.typeChecking.expressionWarnings`: `object` and `oldObject` are typed by the schema
of each kind, `params` by its paramKind's, `request` and `namespaceObject` as upstream declares
them, and each of `variables` by its expression. Issues are worded and placed as cel-go's checker
words them (`undefined field 'replica'`, `found no matching overload for '_+_' applied to
'(string, int)'`).

Types follow the schemas as Kubernetes' CEL declares them: integers, numbers, strings (quantities
among them), booleans, date-times (google.protobuf.Timestamp), lists, maps and objects; an
int-or-string or a field preserved unknown is `dyn`, which matches anything. Checked are field
selection, the operators, indexing, `in`, the conditional, the list macros and the standard
library's functions and conversions; the rest of Kubernetes' libraries (quantities, URLs, IPs,
semantic versions, authorizer) give `dyn`. An overload mismatch involving an object is not
reported: upstream names those types with a generated, varying name. A warning never changes what
the policy does, so what is not known is never reported; the work is one walk of the expression
per matched kind (at most ten).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import lark

from kubesched.api.fieldschema import model_fields

Obj = dict[str, Any]
# A type: ("prim", CEL name), ("list", item type), ("map", (key type, value type)), ("model",
# client model name), ("schema", an OpenAPI v3 schema), ("root", a custom resource's schema),
# ("object", (name, {field: type})) for the types upstream declares by hand; DYN when unknown.
Type = tuple[str, Any]
DYN: Type = ("dyn", None)
INT: Type = ("prim", "int")
UINT: Type = ("prim", "uint")
DOUBLE: Type = ("prim", "double")
STRING: Type = ("prim", "string")
BOOL: Type = ("prim", "bool")
BYTES: Type = ("prim", "bytes")
NULL: Type = ("prim", "null_type")
TIMESTAMP: Type = ("prim", "google.protobuf.Timestamp")
DURATION: Type = ("prim", "google.protobuf.Duration")
TYPE: Type = ("prim", "type")
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_NUMBERS = (INT, UINT, DOUBLE)
_ORDERED = (*_NUMBERS, STRING, BYTES, BOOL, TIMESTAMP, DURATION)
# What every object has, whatever its schema says (a custom resource's root).
_OBJECT_META: Type = ("model", "V1ObjectMeta")
_ROOT_FIELDS: dict[str, Type] = {"apiVersion": STRING, "kind": STRING, "metadata": _OBJECT_META}
_SCALARS = {"str": STRING, "int": INT, "bool": BOOL, "float": DOUBLE, "datetime": TIMESTAMP}


def _object(type_name: str, /, **fields: Type) -> Type:
    return "object", (type_name, fields)


_GVK = _object("kubernetes.GroupVersionKind", group=STRING, version=STRING, kind=STRING)
_GVR = _object("kubernetes.GroupVersionResource", group=STRING, version=STRING, resource=STRING)
_STRINGS: Type = ("list", STRING)
_LABELS: Type = ("map", (STRING, STRING))
# plugin/cel's BuildRequestType: the AdmissionRequest a policy's `request` is (without uid).
REQUEST = _object("kubernetes.AdmissionRequest", kind=_GVK, resource=_GVR, subResource=STRING, requestKind=_GVK,
                  requestResource=_GVR, requestSubResource=STRING, name=STRING, namespace=STRING,
                  operation=STRING, dryRun=BOOL, options=DYN,
                  userInfo=_object("kubernetes.UserInfo", username=STRING, uid=STRING, groups=_STRINGS,
                                   extra=("map", (STRING, _STRINGS))))
# BuildNamespaceType: the Namespace `namespaceObject` is, with the fields it declares.
NAMESPACE = _object(
    "kubernetes.Namespace",
    metadata=_object("kubernetes.NamespaceMetadata", name=STRING, generateName=STRING, namespace=STRING,
                     labels=_LABELS, annotations=_LABELS, UID=STRING, creationTimestamp=TIMESTAMP,
                     deletionGracePeriodSeconds=INT, deletionTimestamp=TIMESTAMP, generation=INT,
                     resourceVersion=STRING, finalizers=_STRINGS),
    spec=_object("kubernetes.NamespaceSpec", finalizers=_STRINGS),
    status=_object("kubernetes.NamespaceStatus", phase=STRING, conditions=("list", _object(
        "kubernetes.NamespaceCondition", status=STRING, type=STRING, lastTransitionTime=TIMESTAMP, message=STRING,
        reason=STRING))))
# Binary operators: the CEL function each is, and its overloads (argument types, result).
_ARITHMETIC = {
    "_+_": [((INT, INT), INT), ((UINT, UINT), UINT), ((DOUBLE, DOUBLE), DOUBLE), ((STRING, STRING), STRING),
            ((BYTES, BYTES), BYTES), ((TIMESTAMP, DURATION), TIMESTAMP), ((DURATION, TIMESTAMP), TIMESTAMP),
            ((DURATION, DURATION), DURATION)],
    "_-_": [((INT, INT), INT), ((UINT, UINT), UINT), ((DOUBLE, DOUBLE), DOUBLE), ((TIMESTAMP, TIMESTAMP), DURATION),
            ((TIMESTAMP, DURATION), TIMESTAMP), ((DURATION, DURATION), DURATION)],
    "_*_": [((INT, INT), INT), ((UINT, UINT), UINT), ((DOUBLE, DOUBLE), DOUBLE)],
    "_/_": [((INT, INT), INT), ((UINT, UINT), UINT), ((DOUBLE, DOUBLE), DOUBLE)],
    "_%_": [((INT, INT), INT), ((UINT, UINT), UINT)],
}
_OPERATORS = {"addition_add": ("_+_", "+"), "addition_sub": ("_-_", "-"), "multiplication_mul": ("_*_", "*"),
              "multiplication_div": ("_/_", "/"), "multiplication_mod": ("_%_", "%"),
              "relation_lt": ("_<_", "<"), "relation_le": ("_<=_", "<="), "relation_gt": ("_>_", ">"),
              "relation_ge": ("_>=_", ">="), "relation_eq": ("_==_", "=="), "relation_ne": ("_!=_", "!="),
              "relation_in": ("@in", "in")}
# Functions of the standard library and the strings and regex extensions: receiver type (None for a
# global call) and argument types per overload, and the result.
_STR_FUNCTIONS: dict[str, list[tuple[Type | None, tuple[Type, ...], Type]]] = {
    "contains": [(STRING, (STRING,), BOOL)], "startsWith": [(STRING, (STRING,), BOOL)],
    "endsWith": [(STRING, (STRING,), BOOL)],
    "matches": [(STRING, (STRING,), BOOL), (None, (STRING, STRING), BOOL)],
    "lowerAscii": [(STRING, (), STRING)], "upperAscii": [(STRING, (), STRING)], "trim": [(STRING, (), STRING)],
    "charAt": [(STRING, (INT,), STRING)],
    "indexOf": [(STRING, (STRING,), INT), (STRING, (STRING, INT), INT)],
    "lastIndexOf": [(STRING, (STRING,), INT), (STRING, (STRING, INT), INT)],
    "replace": [(STRING, (STRING, STRING), STRING), (STRING, (STRING, STRING, INT), STRING)],
    "split": [(STRING, (STRING,), ("list", STRING)), (STRING, (STRING, INT), ("list", STRING))],
    "substring": [(STRING, (INT,), STRING), (STRING, (INT, INT), STRING)],
    "find": [(STRING, (STRING,), STRING)],
    "findAll": [(STRING, (STRING,), ("list", STRING)), (STRING, (STRING, INT), ("list", STRING))],
    "int": [(None, (t,), INT) for t in (INT, UINT, DOUBLE, STRING, TIMESTAMP, DURATION)],
    "uint": [(None, (t,), UINT) for t in (INT, UINT, DOUBLE, STRING)],
    "double": [(None, (t,), DOUBLE) for t in (INT, UINT, DOUBLE, STRING)],
    "string": [(None, (t,), STRING) for t in (INT, UINT, DOUBLE, BOOL, BYTES, STRING, TIMESTAMP, DURATION)],
    "bytes": [(None, (t,), BYTES) for t in (BYTES, STRING)],
    "bool": [(None, (t,), BOOL) for t in (BOOL, STRING)],
    "timestamp": [(None, (t,), TIMESTAMP) for t in (STRING, INT, TIMESTAMP)],
    "duration": [(None, (t,), DURATION) for t in (STRING, DURATION)],
}


def model_type(model: str) -> Type:
    return "model", model


def schema_type(schema: Obj) -> Type:
    """A custom resource's root: its schema, with apiVersion, kind and metadata."""
    return "root", schema


def _schema(schema: Any) -> Type:
    """The type of a value an OpenAPI v3 schema describes (SchemaDeclType)."""
    if not isinstance(schema, dict) or schema.get("x-kubernetes-int-or-string"):
        return DYN
    kind = schema.get("type")
    if kind == "array":
        return "list", _schema(schema.get("items"))
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        if schema.get("x-kubernetes-embedded-resource"):
            return "root", schema
        extra = schema.get("additionalProperties")
        if not isinstance(schema.get("properties"), dict) and isinstance(extra, dict):
            return "map", (STRING, _schema(extra))
        return "schema", schema
    if kind == "string":
        return {"date-time": TIMESTAMP, "datetime": TIMESTAMP, "date": TIMESTAMP, "duration": DURATION,
                "byte": BYTES}.get(str(schema.get("format")), STRING)
    return {"integer": INT, "number": DOUBLE, "boolean": BOOL}.get(str(kind), DYN)


def _from_model(found: tuple[str, Any]) -> Type:
    """A client model's field type as CEL sees it (free-form JSON and int-or-string are dyn)."""
    form, what = found
    if form == "list":
        return "list", _from_model(what)
    if form == "map":
        return "map", (STRING, _from_model(what))
    if form == "model":
        return found
    return _SCALARS.get(what, DYN)


def _field(typ: Type, name: str) -> Type | None:
    """The type of field `name` of a value of `typ`; None when it has no such field."""
    form, what = typ
    if form == "model":
        fields = model_fields(what)
        return _from_model(fields[name]) if name in fields else None
    if form == "object":
        return what[1].get(name)
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
        return what[1]  # a map's key, selected as a field
    return DYN


def name_of(typ: Type) -> str | None:
    """The type's name in cel-go's messages; None for an object type (upstream's generated name)."""
    form, what = typ
    if form == "prim":
        return str(what)
    if form == "dyn":
        return "dyn"
    if form == "list":
        item = name_of(what)
        return f"list({item})" if item is not None else None
    if form == "map":
        key, value = name_of(what[0]), name_of(what[1])
        return f"map({key}, {value})" if key is not None and value is not None else None
    if form == "object":
        return str(what[0])
    return None


def _matches(expected: Type, actual: Type) -> bool:
    return actual == DYN or expected in (DYN, actual)


def _unify(a: Type, b: Type) -> Type:
    """The type of values of either type: the type itself when they agree, else dyn."""
    return a if a == b else DYN


def _is_object(typ: Type) -> bool:
    return typ[0] in ("model", "schema", "root", "object")


@dataclass
class _Checker:
    text: str
    issues: list[tuple[int, str]] = field(default_factory=list)  # (offset, message)

    def report(self, offset: int, message: str) -> None:
        self.issues.append((offset, message))

    def render(self) -> str | None:
        """cel-go's issues, in the order of their places: `ERROR: <input>:line:column: ...`, the
        source line, and a caret under the place."""
        out = []
        lines = self.text.splitlines() or [""]
        for offset, message in sorted(self.issues, key=lambda issue: issue[0]):
            line = self.text.count("\n", 0, offset) + 1
            column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
            out.append(f"ERROR: <input>:{line}:{column}: {message}\n | {lines[min(line, len(lines)) - 1]}\n"
                       f" | {'.' * (column - 1)}^")
        return "\n".join(out) or None

    def between(self, left: Any, right: Any, symbol: str) -> int:
        """Where the operator `symbol` stands between two operands."""
        start = _end(left)
        found = self.text.find(symbol, start, _start(right))
        return found if found >= 0 else start

    def overload(self, function: str, offset: int, args: tuple[Type, ...],
                 overloads: Sequence[tuple[tuple[Type, ...], Type]]) -> Type:
        """The result of the overload the arguments select; an issue when none can be."""
        candidates = [result for params, result in overloads
                      if len(params) == len(args) and all(_matches(p, a) for p, a in zip(params, args, strict=True))]
        if candidates:
            return candidates[0] if all(c == candidates[0] for c in candidates) else DYN
        self.no_overload(function, offset, args)
        return DYN

    def no_overload(self, function: str, offset: int, args: tuple[Type, ...]) -> None:
        names = [name_of(a) for a in args]
        if all(n is not None for n in names):  # an object's type has no name to report it by
            self.report(offset, f"found no matching overload for '{function}' applied to '({', '.join(map(str, names))})'")

    # ---- the walk ------------------------------------------------------------------------------

    def type_of(self, node: Any, scope: dict[str, Type]) -> Type:
        if not isinstance(node, lark.Tree):
            return DYN
        kind, children = node.data, node.children
        method = getattr(self, f"_{kind}", None)
        if method is not None:
            return method(node, scope)
        if len(children) == 1:  # a rule that only passes its one operand on
            return self.type_of(children[0], scope)
        for child in children:
            self.type_of(child, scope)
        return DYN

    def _expr(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        if len(node.children) == 1:
            return self.type_of(node.children[0], scope)
        condition, yes, no = node.children
        types = (self.type_of(condition, scope), self.type_of(yes, scope), self.type_of(no, scope))
        offset = self.between(condition, yes, "?")
        if not _matches(BOOL, types[0]) or (types[1] != types[2] and DYN not in types[1:] and NULL not in types[1:]
                                            and not (_is_object(types[1]) or _is_object(types[2]))):
            self.no_overload("_?_:_", offset, types)
            return DYN
        return _unify(types[1], types[2])

    def _logical(self, node: lark.Tree, scope: dict[str, Type], function: str, symbol: str) -> Type:
        if len(node.children) == 1:
            return self.type_of(node.children[0], scope)
        left, right = node.children
        types = (self.type_of(left, scope), self.type_of(right, scope))
        if not all(_matches(BOOL, t) for t in types):
            self.no_overload(function, self.between(left, right, symbol), types)
            return DYN
        return BOOL

    def _conditionalor(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        return self._logical(node, scope, "_||_", "||")

    def _conditionaland(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        return self._logical(node, scope, "_&&_", "&&")

    def _binary(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        """relation, addition, multiplication: `[op-node] operand`, the op-node holding the left."""
        if len(node.children) == 1:
            return self.type_of(node.children[0], scope)
        op_node, right = node.children
        function, symbol = _OPERATORS[op_node.data]
        left_type = self.type_of(op_node.children[0], scope)
        right_type = self.type_of(right, scope)
        offset = _end(op_node) - len(symbol)
        args = (left_type, right_type)
        if function in _ARITHMETIC:
            if left_type[0] == "list" and right_type[0] in ("list", "dyn") and function == "_+_":
                return left_type if left_type == right_type else ("list", DYN)
            return self.overload(function, offset, args, _ARITHMETIC[function])
        if function == "@in":
            form, what = right_type
            element = what if form == "list" else what[0] if form == "map" else None
            if form not in ("list", "map", "dyn") or (element is not None and not _comparable(left_type, element)):
                self.no_overload(function, offset, args)
                return DYN
            return BOOL
        if function in ("_==_", "_!=_"):
            if not _comparable(left_type, right_type):
                self.no_overload(function, offset, args)
                return DYN
            return BOOL
        if DYN in args or (left_type in _ORDERED and right_type in _ORDERED and (
                left_type == right_type or (left_type in _NUMBERS and right_type in _NUMBERS))):
            return BOOL  # cross-type numeric comparisons are on in Kubernetes' environment
        self.no_overload(function, offset, args)
        return DYN

    _relation = _addition = _multiplication = _binary

    def _unary(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        if len(node.children) == 1:
            return self.type_of(node.children[0], scope)
        op, operand = node.children
        typ = self.type_of(operand, scope)
        function, symbol, allowed = ("!_", "!", (BOOL,)) if op.data == "unary_not" else ("-_", "-", (INT, DOUBLE))
        if typ == DYN or typ in allowed:
            return typ
        self.no_overload(function, self.text.find(symbol, _start(node)), (typ,))
        return DYN

    def _ident(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        return scope.get(str(node.children[0]), DYN)

    def _literal(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        token = node.children[0]
        return {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING, "MLSTRING_LIT": STRING,
                "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL}.get(getattr(token, "type", ""), DYN)

    def _list_lit(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        items = [self.type_of(e, scope) for e in _args(node.children[0] if node.children else None)]
        element = items[0] if items and all(i == items[0] for i in items) else DYN
        return "list", element

    def _map_lit(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        inits = node.children[0].children if node.children and isinstance(node.children[0], lark.Tree) else []
        types = [self.type_of(e, scope) for e in inits]
        keys, values = types[0::2], types[1::2]
        key = keys[0] if keys and all(k == keys[0] for k in keys) else DYN
        value = values[0] if values and all(v == values[0] for v in values) else DYN
        return "map", (key, value)

    def _paren_expr(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        return self.type_of(node.children[0], scope)

    def _member_dot(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        base_node, name = node.children
        base = self.type_of(base_node, scope)
        dot = self.text.rfind(".", 0, _start(name))
        if base == DYN:
            return DYN
        if base[0] in ("prim", "list"):
            if (type_name := name_of(base)) is not None:
                self.report(dot, f"type '{type_name}' does not support field selection")
            return DYN
        found = _field(base, str(name))
        if found is None:
            self.report(dot, f"undefined field '{name}'")
            return DYN
        return found

    def _member_index(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        base_node, index_node = node.children
        base, index = self.type_of(base_node, scope), self.type_of(index_node, scope)
        form, what = base
        if base == DYN:
            return DYN
        if form == "list" and (index == DYN or index in (INT, UINT)):
            return what
        if form == "map" and _comparable(index, what[0]):
            return what[1]
        if _is_object(base):
            return DYN  # not reported: upstream's message would name the object's type
        self.no_overload("_[_]", self.between(base_node, index_node, "["), (base, index))
        return DYN

    def _member_dot_arg(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        base_node, name = node.children[0], str(node.children[1])
        args = _args(node.children[2] if len(node.children) > 2 else None)
        base = self.type_of(base_node, scope)
        if name in MACROS and len(args) >= 2:
            return self._macro(name, base, args, scope)
        arg_types = tuple(self.type_of(a, scope) for a in args)
        return self._call(name, base, arg_types, _end(node.children[1]), scope)

    def _ident_arg(self, node: lark.Tree, scope: dict[str, Type]) -> Type:
        name = str(node.children[0])
        args = _args(node.children[1] if len(node.children) > 1 else None)
        if name == "has":
            for a in args:
                self.type_of(a, scope)
            return BOOL
        arg_types = tuple(self.type_of(a, scope) for a in args)
        return self._call(name, None, arg_types, _end(node.children[0]), scope)

    def _call(self, name: str, receiver: Type | None, args: tuple[Type, ...], after_name: int,
              scope: dict[str, Type]) -> Type:
        """A function's result: the standard library's checked, the others dyn."""
        offset = self.text.find("(", after_name)
        if name == "size":
            subject = args if receiver is None else (receiver, *args)
            if len(subject) == 1 and (subject[0] == DYN or subject[0] in (STRING, BYTES)
                                      or subject[0][0] in ("list", "map")):
                return INT
            if len(subject) == 1 and not _is_object(subject[0]):
                self.no_overload("size", offset, subject)
            return INT
        if name in ("dyn", "type") and receiver is None:
            return DYN if name == "dyn" else TYPE
        overloads = _STR_FUNCTIONS.get(name)
        if overloads is None or (receiver is not None and receiver[0] in ("list", "map")):
            return DYN  # the lists extension, Kubernetes' libraries: not checked
        wanted = [((r, *params) if r is not None else params, result) for r, params, result in overloads
                  if (r is None) == (receiver is None)]
        if not wanted:
            return DYN
        return self.overload(name, offset, args if receiver is None else (receiver, *args), wanted)

    def _macro(self, name: str, base: Type, args: list[Any], scope: dict[str, Type]) -> Type:
        """all, exists, exists_one, map, filter: the variable bound to the items (a map's keys)."""
        bound = _macro_variable(args[0])
        form, what = base
        item = what if form == "list" else what[0] if form == "map" else DYN
        inner = {**scope, bound: item} if bound else scope
        results = [self.type_of(a, inner) for a in args[1:]]
        if name == "map":
            return "list", results[-1]
        if name == "filter":
            return "list", item
        return BOOL


def _comparable(a: Type, b: Type) -> bool:
    """Whether `_==_` takes values of both types: the same type, dyn or null on either side, any
    two objects (their names are not compared here), or two lists or maps of comparable items."""
    if DYN in (a, b) or NULL in (a, b) or a == b or (_is_object(a) and _is_object(b)):
        return True
    if a[0] == b[0] == "list":
        return _comparable(a[1], b[1])
    if a[0] == b[0] == "map":
        return _comparable(a[1][0], b[1][0]) and _comparable(a[1][1], b[1][1])
    return a in _NUMBERS and b in _NUMBERS  # heterogeneous numeric equality is left to evaluation


def _start(node: Any) -> int:
    return int(getattr(node, "start_pos", None) or getattr(getattr(node, "meta", None), "start_pos", 0) or 0)


def _end(node: Any) -> int:
    return int(getattr(node, "end_pos", None) or getattr(getattr(node, "meta", None), "end_pos", 0) or 0)


def _args(exprlist: Any) -> list[Any]:
    return list(exprlist.children) if isinstance(exprlist, lark.Tree) else []


def _macro_variable(arg: Any) -> str | None:
    """The name a macro binds (its first argument, a bare identifier)."""
    names = [t for t in arg.scan_values(lambda v: isinstance(v, lark.Token))] if isinstance(arg, lark.Tree) else []
    return str(names[0]) if len(names) == 1 else None


@dataclass
class Environment:
    """The variables an expression of a policy is checked with, for one matched kind: `object`
    and `oldObject` of that kind, `params` (when the paramKind's schema is known), `request`,
    `namespaceObject`, and `variables` typed by their expressions in order, as upstream's
    composition environment declares each from its compiled output type."""

    object_type: Type
    params_type: Type | None = None
    variables: list[tuple[str, lark.Tree | None]] = field(default_factory=list)
    scope: dict[str, Type] = field(init=False)

    def __post_init__(self) -> None:
        declared: dict[str, Type] = {}
        self.scope = {"object": self.object_type, "oldObject": self.object_type, "request": REQUEST,
                      "namespaceObject": NAMESPACE, "variables": _object("kubernetes.variables")}
        for name in ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"):
            self.scope[name] = TYPE
        if self.params_type is not None:
            self.scope["params"] = self.params_type
        for name, tree in self.variables:
            declared[name] = _Checker("").type_of(tree, self.scope) if tree is not None else DYN
            self.scope["variables"] = ("object", ("kubernetes.variables", dict(declared)))

    def check(self, tree: lark.Tree, text: str) -> str | None:
        """cel-go's issues for a compiled expression (`tree`, from `text`); None when there are none."""
        checker = _Checker(text)
        checker.type_of(tree, self.scope)
        return checker.render()

