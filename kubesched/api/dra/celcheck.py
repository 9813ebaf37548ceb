"""Type checking and worst-case cost of a CEL device selector, as cel-go's checker does them.

kube-apiserver compiles every selector when a DeviceClass or claim is written: cel-go's checker
types it against DRA's environment (one variable, `device`, a `kubernetes.DRADevice` with
`driver` string, `allowMultipleAllocations` bool, `attributes` a map of maps of attribute
values, `capacity` a map of maps of quantities) and refuses a type error with its message, and
`checker.Cost` estimates the worst-case cost with the sizes DRA declares (a driver name is at
most 63 characters, a domain 63, an identifier 32, an attribute value 64, a device has at most 32
attributes and capacities). Validation refuses an estimate over 1,000,000.

cel-python has neither, so both are done here over its parse tree, in one walk. The costs follow
cel-go's rules for the operations selectors use: 1 for an identifier, a field selection on a map
or object, an index and an O(1) call; 10 to build a list, 30 a map; string traversal at 0.1 a
character (comparisons of strings, `+` of strings, `startsWith`, `contains`, ...), `matches` and
`find` at the product of the string's and a quarter of the pattern's length; the macros as their
expansion into comprehensions costs, the body once per element of the range; `&&`, `||` and
`?:` cost their operands only; the libraries as Kubernetes' estimator (library.CostEstimator) and
cel-go's extensions estimate them: quantity, semver and IP/CIDR parsers 0.1 a character and
their accessors 1, the lists library 1 a compared element (plus a traversal of string elements),
`join` a traversal of what it builds, the lists extension (version 3) 1 for the call, 10 for a
new list and 1 an element of it (n² comparisons for `distinct`, `sort` and `sortBy`), `url` a
traversal and its accessors 1, a format's `validate` a regular expression of 128 characters over
the string, `containsIP` and `containsCIDR` a comparison of two 4-16 byte addresses; the sets
extension, optional values and the rest of CEL's functions 1 a call. The macros cel-python lacks
(celmacros) and the optional syntax (celparse) are typed and costed as their expansions are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import lark

from kubesched.api.dra.celformat import CLAUSE_ERRORS, CLAUSE_TYPES, FormatError, walk
from kubesched.api.dra.celmacros import macro_of

U64 = 2**64 - 1
MAX_COST = 1_000_000  # CELSelectorExpressionMaxCost
MAX_NAME_FORMAT_REGEX_SIZE, MAX_FORMAT_SIZE = 128, 64  # k8s.io/apiserver/pkg/cel's limits

# Types: a name, or a tuple (kind, parameters...) for list, map and type.
Type = str | tuple[Any, ...]
DYN = "dyn"
ANY = "google.protobuf.Any"  # an attribute value: any of bool, int, string, semver
ERROR = "*error*"
QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
IP, CIDR = "net.IP", "net.CIDR"  # Kubernetes' IP and CIDR libraries' opaque types
URL, FORMAT = "kubernetes.URL", "kubernetes.NamedFormat"
FORMAT_NAMES = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
                "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date",
                "datetime")
DEVICE = "kubernetes.DRADevice"
STR, INT, UINT, DOUBLE, BOOL, BYTES = "string", "int", "uint", "double", "bool", "bytes"
NUMBERS = (INT, UINT, DOUBLE)


def _list(elem: Type) -> Type:
    return ("list", elem)


def _map(key: Type, value: Type) -> Type:
    return ("map", key, value)


def _optional(value: Type) -> Type:
    return ("optional_type", value)


ATTRIBUTES = _map(STR, _map(STR, ANY))
CAPACITY = _map(STR, _map(STR, QUANTITY))
DEVICE_FIELDS: dict[str, Type] = {"driver": STR, "allowMultipleAllocations": BOOL, "attributes": ATTRIBUTES,
                                  "capacity": CAPACITY}


def fmt(t: Type) -> str:
    """A type as cel-go prints it in messages."""
    if isinstance(t, tuple):
        return f"{t[0]}({', '.join(fmt(p) for p in t[1:])})"
    return t


# The sizes DRA declares for what `device` holds (its sizeEstimator), as a tree walked by path.
@dataclass(frozen=True)
class _Decl:
    max_elements: int
    fields: dict[str, _Decl] = field(default_factory=dict)
    key: _Decl | None = None
    elem: _Decl | None = None


_ATTR = _Decl(64)  # DeviceAttributeMaxValueLength
_QTY = _Decl(0)
_DOMAIN, _ID = _Decl(63), _Decl(32)
_DEVICE_DECL = _Decl(0, fields={
    "driver": _Decl(63),
    "allowMultipleAllocations": _Decl(1),
    "attributes": _Decl(32, key=_DOMAIN, elem=_Decl(32, key=_ID, elem=_ATTR)),
    "capacity": _Decl(32, key=_DOMAIN, elem=_Decl(32, key=_ID, elem=_QTY)),
})


def _size_from_path(path: tuple[str, ...] | None) -> tuple[int, int] | None:
    if not path or path[0] != "device":
        return None
    node = _DEVICE_DECL
    for name in path[1:]:
        nxt: _Decl | None
        if name in ("@items", "@values"):
            nxt = node.elem
        elif name == "@keys":
            nxt = node.key
        else:
            nxt = node.fields.get(name)
            if nxt is None and node.elem is _ATTR:
                nxt = _ATTR
        if nxt is None:
            return None
        node = nxt
    return (0, node.max_elements)


# Cost arithmetic, saturating at MaxUint64 as cel-go's does.
Est = tuple[int, int]
ZERO: Est = (0, 0)
ONE: Est = (1, 1)
UNKNOWN: Est = (0, U64)


def _add(a: Est, b: Est) -> Est:
    return (min(a[0] + b[0], U64), min(a[1] + b[1], U64))


def _mul(a: Est, b: Est) -> Est:
    return (min(a[0] * b[0], U64), min(a[1] * b[1], U64))


def _union(a: Est, b: Est) -> Est:
    return (min(a[0], b[0]), max(a[1], b[1]))


def _factor(size: Est, f: float) -> Est:
    return (min(int(math.ceil(float(size[0]) * f)), U64), min(int(math.ceil(float(size[1]) * f)), U64))


@dataclass
class _N:
    """A checked expression: its type, estimated cost, size where computed, and field path."""

    type: Type
    cost: Est
    size: Est | None = None
    path: tuple[str, ...] | None = None
    literal: int | None = None  # an int literal's value

    def size_or_unknown(self) -> Est:
        if self.size is not None:
            return self.size
        return _size_from_path(self.path) or UNKNOWN


# Overloads: (id, member?, parameter types, result type). "?A"/"?B" are type parameters.
_A, _B = "?A", "?B"
_Overload = tuple[str, bool, tuple[Type, ...], Type]


def _ov(oid: str, params: tuple[Type, ...], result: Type, member: bool = False) -> _Overload:
    return (oid, member, params, result)


def _numeric_pairs() -> Iterator[tuple[Type, Type]]:
    for a in NUMBERS:
        for b in NUMBERS:
            yield a, b


_TIMESTAMP, _DURATION = "google.protobuf.Timestamp", "google.protobuf.Duration"
_COMPARABLE = (*NUMBERS, BOOL, STR, BYTES, _TIMESTAMP, _DURATION)  # what the lists library orders


_REL = [_ov(f"rel_{a}_{b}", (a, b), BOOL) for a, b in _numeric_pairs()] + [
    _ov("rel_string", (STR, STR), BOOL), _ov("rel_bytes", (BYTES, BYTES), BOOL), _ov("rel_bool", (BOOL, BOOL), BOOL),
    _ov("rel_timestamp", ("google.protobuf.Timestamp",) * 2, BOOL),
    _ov("rel_duration", ("google.protobuf.Duration",) * 2, BOOL)]
_ARITH = [_ov(f"arith_{t}", (t, t), t) for t in NUMBERS]
_STRING_FN = (STR,)

FUNCTIONS: dict[str, list[_Overload]] = {
    "_==_": [_ov("equals", (_A, _A), BOOL)],
    "_!=_": [_ov("not_equals", (_A, _A), BOOL)],
    "_<_": _REL, "_<=_": _REL, "_>_": _REL, "_>=_": _REL,
    "@in": [_ov("in_list", (_A, _list(_A)), BOOL), _ov("in_map", (_A, _map(_A, _B)), BOOL)],
    "_+_": _ARITH + [_ov("add_string", (STR, STR), STR), _ov("add_bytes", (BYTES, BYTES), BYTES),
                     _ov("add_list", (_list(_A), _list(_A)), _list(_A))],
    "_-_": list(_ARITH), "_*_": list(_ARITH), "_/_": list(_ARITH),
    "_%_": [_ov("modulo_int64", (INT, INT), INT), _ov("modulo_uint64", (UINT, UINT), UINT)],
    "-_": [_ov("negate_int64", (INT,), INT), _ov("negate_double", (DOUBLE,), DOUBLE)],
    "!_": [_ov("logical_not", (BOOL,), BOOL)],
    "_&&_": [_ov("logical_and", (BOOL, BOOL), BOOL)],
    "_||_": [_ov("logical_or", (BOOL, BOOL), BOOL)],
    "_?_:_": [_ov("conditional", (BOOL, _A, _A), _A)],
    "_[_]": [_ov("index_list", (_list(_A), INT), _A), _ov("index_map", (_map(_A, _B), _A), _B),
             _ov("optional_list_index_int", (_optional(_list(_A)), INT), _optional(_A)),
             _ov("optional_map_index_value", (_optional(_map(_A, _B)), _A), _optional(_B))],
    "_[?_]": [_ov("list_optindex_optional_int", (_list(_A), INT), _optional(_A)),
              _ov("optional_list_optindex_optional_int", (_optional(_list(_A)), INT), _optional(_A)),
              _ov("map_optindex_optional_value", (_map(_A, _B), _A), _optional(_B)),
              _ov("optional_map_optindex_optional_value", (_optional(_map(_A, _B)), _A), _optional(_B))],
    "size": [_ov(f"size_{k}", (t,), INT, m) for m in (False, True)
             for k, t in (("string", STR), ("bytes", BYTES), ("list", _list(_A)), ("map", _map(_A, _B)))],
    "contains": [_ov("contains_string", (STR, STR), BOOL, True)],
    "startsWith": [_ov("starts_with_string", (STR, STR), BOOL, True)],
    "endsWith": [_ov("ends_with_string", (STR, STR), BOOL, True)],
    "matches": [_ov("matches_string", (STR, STR), BOOL, True), _ov("matches", (STR, STR), BOOL)],
    "int": [_ov("to_int", (t,), INT) for t in (INT, UINT, DOUBLE, STR, "google.protobuf.Timestamp")],
    "uint": [_ov("to_uint", (t,), UINT) for t in (INT, UINT, DOUBLE, STR)],
    "double": [_ov("to_double", (t,), DOUBLE) for t in (INT, UINT, DOUBLE, STR)],
    "string": [_ov("to_string", (t,), STR) for t in (INT, UINT, DOUBLE, STR, BOOL, "google.protobuf.Timestamp",
                                                      "google.protobuf.Duration")]
    + [_ov("bytes_to_string", (BYTES,), STR), _ov("ip_to_string", (IP,), STR), _ov("cidr_to_string", (CIDR,), STR)],
    "bool": [_ov("to_bool", (t,), BOOL) for t in (BOOL, STR)],
    "bytes": [_ov("to_bytes", (BYTES,), BYTES), _ov("string_to_bytes", (STR,), BYTES)],
    "dyn": [_ov("to_dyn", (_A,), DYN)],
    "type": [_ov("type", (_A,), ("type", _A))],
    "duration": [_ov("to_duration", (STR,), "google.protobuf.Duration")],
    "timestamp": [_ov("to_timestamp", (STR,), "google.protobuf.Timestamp")],
    # k8s.io/apiserver/pkg/cel/library: quantity and semver (the DRA environment loads both).
    "quantity": [_ov("quantity", (STR,), QUANTITY)],
    "isQuantity": [_ov("isQuantity", (STR,), BOOL)],
    "sign": [_ov("quantity_sign", (QUANTITY,), INT, True)],
    "isInteger": [_ov("quantity_isInteger", (QUANTITY,), BOOL, True)],
    "asInteger": [_ov("quantity_asInteger", (QUANTITY,), INT, True)],
    "asApproximateFloat": [_ov("quantity_asApproximateFloat", (QUANTITY,), DOUBLE, True)],
    "add": [_ov("quantity_add", (QUANTITY, QUANTITY), QUANTITY, True),
            _ov("quantity_add_int", (QUANTITY, INT), QUANTITY, True)],
    "sub": [_ov("quantity_sub", (QUANTITY, QUANTITY), QUANTITY, True),
            _ov("quantity_sub_int", (QUANTITY, INT), QUANTITY, True)],
    "isLessThan": [_ov("quantity_isLessThan", (QUANTITY, QUANTITY), BOOL, True),
                   _ov("semver_isLessThan", (SEMVER, SEMVER), BOOL, True)],
    "isGreaterThan": [_ov("quantity_isGreaterThan", (QUANTITY, QUANTITY), BOOL, True),
                      _ov("semver_isGreaterThan", (SEMVER, SEMVER), BOOL, True)],
    "compareTo": [_ov("quantity_compareTo", (QUANTITY, QUANTITY), INT, True),
                  _ov("semver_compareTo", (SEMVER, SEMVER), INT, True)],
    "semver": [_ov("semver", (STR,), SEMVER), _ov("semver_normalize", (STR, BOOL), SEMVER)],
    "isSemver": [_ov("isSemver", (STR,), BOOL), _ov("isSemver_normalize", (STR, BOOL), BOOL)],
    "major": [_ov("semver_major", (SEMVER,), INT, True)],
    "minor": [_ov("semver_minor", (SEMVER,), INT, True)],
    "patch": [_ov("semver_patch", (SEMVER,), INT, True)],
    # cel-go's strings extension and Kubernetes' regex library, typed where selectors use them.
    "lowerAscii": [_ov("lower_ascii", _STRING_FN, STR, True)],
    "upperAscii": [_ov("upper_ascii", _STRING_FN, STR, True)],
    "trim": [_ov("trim", _STRING_FN, STR, True)],
    "substring": [_ov("substring", (STR, INT), STR, True), _ov("substring_range", (STR, INT, INT), STR, True)],
    "replace": [_ov("replace", (STR, STR, STR), STR, True), _ov("replace_n", (STR, STR, STR, INT), STR, True)],
    "split": [_ov("split", (STR, STR), _list(STR), True), _ov("split_n", (STR, STR, INT), _list(STR), True)],
    "join": [_ov("join", (_list(STR),), STR, True), _ov("join_sep", (_list(STR), STR), STR, True)],
    "charAt": [_ov("char_at", (STR, INT), STR, True)],
    "indexOf": [_ov("index_of", (STR, STR), INT, True), _ov("index_of_from", (STR, STR, INT), INT, True),
                _ov("list_index_of", (_list(_A), _A), INT, True)],
    "lastIndexOf": [_ov("last_index_of", (STR, STR), INT, True), _ov("last_index_of_from", (STR, STR, INT), INT, True),
                    _ov("list_last_index_of", (_list(_A), _A), INT, True)],
    "find": [_ov("find", (STR, STR), STR, True)],
    "findAll": [_ov("find_all", (STR, STR), _list(STR), True), _ov("find_all_n", (STR, STR, INT), _list(STR), True)],
    "strings.quote": [_ov("strings_quote", (STR,), STR)],
    "format": [_ov("string_format", (STR, _list(DYN)), STR, True)],
    # Kubernetes' lists library and cel-go's lists extension.
    "isSorted": [_ov(f"list_{fmt(t)}_is_sorted", (_list(t),), BOOL, True) for t in _COMPARABLE],
    "sum": [_ov(f"list_{fmt(t)}_sum", (_list(t),), t, True) for t in (INT, UINT, DOUBLE, _DURATION)],
    "min": [_ov(f"list_{fmt(t)}_min", (_list(t),), t, True) for t in _COMPARABLE],
    "max": [_ov(f"list_{fmt(t)}_max", (_list(t),), t, True) for t in _COMPARABLE],
    "slice": [_ov("list_slice", (_list(_A), INT, INT), _list(_A), True)],
    "flatten": [_ov("list_flatten", (_list(_list(_A)),), _list(_A), True),
                _ov("list_flatten_int", (_list(DYN), INT), _list(DYN), True)],
    "distinct": [_ov("list_distinct", (_list(_A),), _list(_A), True)],
    "sort": [_ov(f"list_{fmt(t)}_sort", (_list(t),), _list(t), True) for t in _COMPARABLE],
    "reverse": [_ov("list_reverse", (_list(_A),), _list(_A), True)],
    "lists.range": [_ov("lists_range", (INT,), _list(INT))],
    # cel-go's sets extension.
    "sets.contains": [_ov("list_sets_contains_list", (_list(_A), _list(_A)), BOOL)],
    "sets.equivalent": [_ov("list_sets_equivalent_list", (_list(_A), _list(_A)), BOOL)],
    "sets.intersects": [_ov("list_sets_intersects_list", (_list(_A), _list(_A)), BOOL)],
    # Kubernetes' IP and CIDR libraries.
    "ip": [_ov("string_to_ip", (STR,), IP), _ov("cidr_ip", (CIDR,), IP, True)],
    "isIP": [_ov("is_ip", (STR,), BOOL)],
    "ip.isCanonical": [_ov("ip_is_canonical", (STR,), BOOL)],
    "family": [_ov("ip_family", (IP,), INT, True)],
    **{fn: [_ov(oid, (IP,), BOOL, True)] for fn, oid in (
        ("isUnspecified", "ip_is_unspecified"), ("isLoopback", "ip_is_loopback"),
        ("isLinkLocalMulticast", "ip_is_link_local_multicast"), ("isLinkLocalUnicast", "ip_is_link_local_unicast"),
        ("isGlobalUnicast", "ip_is_global_unicast"))},
    "cidr": [_ov("string_to_cidr", (STR,), CIDR)],
    "isCIDR": [_ov("is_cidr", (STR,), BOOL)],
    "containsIP": [_ov("cidr_contains_ip_string", (CIDR, STR), BOOL, True),
                   _ov("cidr_contains_ip_ip", (CIDR, IP), BOOL, True)],
    "containsCIDR": [_ov("cidr_contains_cidr_string", (CIDR, STR), BOOL, True),
                     _ov("cidr_contains_cidr", (CIDR, CIDR), BOOL, True)],
    "masked": [_ov("cidr_masked", (CIDR,), CIDR, True)],
    "prefixLength": [_ov("cidr_prefix_length", (CIDR,), INT, True)],
    # Kubernetes' URL library.
    "url": [_ov("string_to_url", (STR,), URL)],
    "isURL": [_ov("is_url_string", (STR,), BOOL)],
    **{fn: [_ov(oid, (URL,), STR, True)] for fn, oid in (
        ("getScheme", "url_get_scheme"), ("getHost", "url_get_host"), ("getHostname", "url_get_hostname"),
        ("getPort", "url_get_port"), ("getEscapedPath", "url_get_escaped_path"))},
    "getQuery": [_ov("url_get_query", (URL,), _map(STR, _list(STR)), True)],
    # Kubernetes' format library.
    **{f"format.{name}": [_ov(f"format.{name}", (), FORMAT)] for name in FORMAT_NAMES},
    "format.named": [_ov("format-named", (STR,), _optional(FORMAT))],
    "validate": [_ov("format-validate", (FORMAT, STR), _optional(_list(STR)), True)],
    # cel-go's optional types.
    "optional.of": [_ov("optional_of", (_A,), _optional(_A))],
    "optional.ofNonZeroValue": [_ov("optional_ofNonZeroValue", (_A,), _optional(_A))],
    "optional.none": [_ov("optional_none", (), _optional(_A))],
    "hasValue": [_ov("optional_hasValue", (_optional(_A),), BOOL, True)],
    "value": [_ov("optional_value", (_optional(_A),), _A, True)],
    "or": [_ov("optional_or_optional", (_optional(_A), _optional(_A)), _optional(_A), True)],
    "orValue": [_ov("optional_orValue_value", (_optional(_A), _A), _A, True)],
}
# Other functions the Kubernetes CEL environment declares (timestamps' accessors): known, typed
# dyn, costing 1 a call.
_UNTYPED = {
    "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
    "getMinutes", "getSeconds", "getMilliseconds",
}  # not base64 nor math: cel-go's encoders and math extensions are not in Kubernetes' base environment
_MACROS = {"all", "exists", "exists_one", "existsOne", "map", "filter"}


class _Unify:
    """Type parameter bindings for one overload's check."""

    def __init__(self) -> None:
        self.bound: dict[str, Type] = {}

    def assignable(self, param: Type, arg: Type) -> bool:
        if arg in (DYN, ANY, ERROR):
            if isinstance(param, str) and param.startswith("?") and param not in self.bound:
                self.bound[param] = DYN if arg == ERROR else arg
            return True
        if isinstance(param, str) and param.startswith("?"):
            if param not in self.bound:
                self.bound[param] = arg
                return True
            return self.assignable(self.bound[param], arg)
        if param in (DYN, ANY):
            return True
        if isinstance(param, tuple) or isinstance(arg, tuple):
            return (isinstance(param, tuple) and isinstance(arg, tuple) and param[0] == arg[0]
                    and len(param) == len(arg) and all(self.assignable(p, a) for p, a in zip(param[1:], arg[1:], strict=True)))
        return param == arg

    def substitute(self, t: Type) -> Type:
        if isinstance(t, tuple):
            return (t[0], *(self.substitute(p) for p in t[1:]))
        if t.startswith("?"):
            return self.bound.get(t, DYN)
        return t


@dataclass
class Issue:
    offset: int
    message: str


@dataclass
class Checked:
    """What the checker found: the output type and the worst-case cost, or the issues."""

    output: Type
    max_cost: int
    issues: list[Issue]


class _Checker:
    def __init__(self, text: str, fields: dict[str, Type]) -> None:
        self.text = text
        self.fields = fields
        self.issues: list[Issue] = []
        self.scopes: list[dict[str, _N]] = []

    # -- positions: cel-go reports an operator at its token, a call at its '(', a select at its '.'
    def _after(self, start: int, token: str) -> int:
        at = self.text.find(token, start)
        return at if at >= 0 else start

    def _before(self, end: int, token: str) -> int:
        at = self.text.rfind(token, 0, end)
        return at if at >= 0 else end

    def error(self, offset: int, message: str) -> None:
        self.issues.append(Issue(offset, message))

    # -- the walk
    def check(self, node: Any) -> _N:
        while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data in (
                "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                "member", "primary", "paren_expr"):
            node = node.children[0]
        handler = getattr(self, f"_{node.data}", None)
        if handler is None:
            return _N(DYN, ONE)
        result: _N = handler(node)
        return result

    def _expr(self, node: Any) -> _N:
        cond, then, other = (self.check(c) for c in node.children)
        offset = self._after(node.children[0].meta.end_pos, "?")
        t = self.resolve("_?_:_", offset, [cond.type, then.type, other.type], False)
        size = _union(then.size_or_unknown(), other.size_or_unknown())
        return _N(t, _add(cond.cost, _union(then.cost, other.cost)), size)

    def _logical(self, node: lark.Tree, op: str, fn: str) -> _N:
        lhs, rhs = self.check(node.children[0]), self.check(node.children[1])
        offset = self._after(node.children[0].meta.end_pos, op)
        t = self.resolve(fn, offset, [lhs.type, rhs.type], False)
        return _N(t, (lhs.cost[0], _add(lhs.cost, rhs.cost)[1]))

    def _conditionalor(self, node: Any) -> _N:
        return self._logical(node, "||", "_||_")

    def _conditionaland(self, node: Any) -> _N:
        return self._logical(node, "&&", "_&&_")

    def _binary(self, node: Any) -> _N:
        op_node, rhs_node = node.children
        left_node = op_node.children[0]
        lhs, rhs = self.check(left_node), self.check(rhs_node)
        op = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=", "relation_eq": "==",
              "relation_ne": "!=", "relation_in": "in", "addition_add": "+", "addition_sub": "-",
              "multiplication_mul": "*", "multiplication_div": "/", "multiplication_mod": "%"}[op_node.data]
        fn = "@in" if op == "in" else f"_{op}_"
        offset = self._after(left_node.meta.end_pos, op)
        return self.call(fn, offset, None, [lhs, rhs])

    _relation = _addition = _multiplication = _binary

    def _unary(self, node: Any) -> _N:
        op, operand = node.children
        arg = self.check(operand)
        fn = "!_" if op.data == "unary_not" else "-_"
        return self.call(fn, node.meta.start_pos, None, [arg])

    def _literal(self, node: Any) -> _N:
        token = node.children[0]
        kind = token.type
        text = str(token)
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return _N(STR, ZERO, (len(_unquote(text)),) * 2)
        if kind == "BYTES_LIT":
            return _N(BYTES, ZERO, (len(_unquote(text[1:]).encode()),) * 2)
        t = {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "BOOL_LIT": BOOL, "NULL_LIT": "null_type"}[kind]
        return _N(t, ZERO, ONE, literal=int(text, 0) if kind == "INT_LIT" else None)

    def _ident(self, node: Any) -> _N:
        token = node.children[0]
        name = str(token)
        for scope in reversed(self.scopes):
            if name in scope:
                local = scope[name]
                return _N(local.type, ONE, local.size, local.path)
        if name == "device":
            return _N(DEVICE, ONE, None, ("device",))
        if name in ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"):
            return _N(("type", name), ONE)
        self.error(token.start_pos, f"undeclared reference to '{name}' (in container '')")
        return _N(ERROR, ONE)

    def _list_lit(self, node: Any) -> _N:
        nodes = list(node.children[0].children) if node.children and node.children[0] else []
        items = [self.check(c) for c in nodes]
        cost = (10, 10)
        for i in items:
            cost = _add(cost, i.cost)
        return _N(_list(self._join(nodes, items)), cost, (len(items),) * 2)

    def _map_lit(self, node: Any) -> _N:
        nodes = list(node.children[0].children) if node.children and node.children[0] else []
        parts = [self.check(c) for c in nodes]
        cost = (30, 30)
        for p in parts:
            cost = _add(cost, p.cost)
        key, value = self._join(nodes[0::2], parts[0::2]), self._join(nodes[1::2], parts[1::2])
        return _N(_map(key, value), cost, (len(parts) // 2,) * 2)

    def _join(self, nodes: list[Any], items: list[_N]) -> Type:
        """The element type of a literal, as cel-go joins them with homogeneous aggregate literals
        (the base environment's): one type, or dyn where one is dyn; any other mix is refused at
        the element that breaks it."""
        joined: Type | None = None
        for node, item in zip(nodes, items, strict=True):
            if joined is None:
                joined = item.type
            elif _Unify().assignable(joined, item.type):
                joined = joined if joined in (DYN, ANY) or item.type in (ERROR,) else \
                    item.type if item.type in (DYN, ANY) else joined
            else:
                self.error(self._range_offset(node), f"expected type '{fmt(joined)}' but found '{fmt(item.type)}'")
                joined = ERROR
        return DYN if joined is None else joined

    def _member_dot(self, node: Any) -> _N:
        target_node, name_token = node.children
        name = str(name_token)
        target = self.check(target_node)
        offset = self._before(name_token.start_pos, ".")
        t = target.type
        cost = target.cost
        result: Type
        if isinstance(t, tuple) and t[0] == "map":
            result, cost = t[2], _add(cost, ONE)
        elif t == DEVICE:
            cost = _add(cost, ONE)
            if name in self.fields:
                result = self.fields[name]
            else:
                self.error(offset, f"undefined field '{name}'")
                result = ERROR
        elif t in (QUANTITY, SEMVER, URL, FORMAT):
            cost = _add(cost, ONE)
            self.error(offset, f"undefined field '{name}'")
            result = ERROR
        elif t in (DYN, ANY, ERROR):
            result = DYN
        else:
            self.error(offset, f"type '{fmt(t)}' does not support field selection")
            result = DYN
        return _N(result, cost, None, target.path + (name,) if target.path else None)

    # cel-go's optional selection (`_?._`) and index (`_[?_]`): a call, 1 and its operands; a
    # selection or index of an optional value is optional as well (celparse).
    def _member_dot_opt(self, node: Any) -> _N:
        target_node, name_token = node.children
        target = self.check(target_node)
        offset = self._before(name_token.start_pos, ".")
        return _N(_optional(self._opt_select(target.type, str(name_token), offset)), _add(target.cost, ONE))

    def _optional_member_dot(self, node: Any) -> _N:
        target_node, name_token = node.children
        target = self.check(target_node)
        offset = self._before(name_token.start_pos, ".")
        return _N(_optional(self._opt_select(target.type, str(name_token), offset)), target.cost)

    def _opt_select(self, t: Type, name: str, offset: int) -> Type:
        if isinstance(t, tuple) and t[0] == "optional_type":
            t = t[1]
        if isinstance(t, tuple) and t[0] == "map":
            return t[2]
        if t == DEVICE:
            if name in self.fields:
                return self.fields[name]
            self.error(offset, f"undefined field '{name}'")
            return ERROR
        if t not in (DYN, ANY, ERROR):
            self.error(offset, f"type '{fmt(t)}' does not support field selection")
        return DYN

    def _member_index_opt(self, node: Any) -> _N:
        target_node, index_node = node.children
        target, index = self.check(target_node), self.check(index_node)
        return self.call("_[?_]", self._after(target_node.meta.end_pos, "["), None, [target, index])

    def _member_index(self, node: Any) -> _N:  # (an optional operand's too: `_[_]` has overloads for it)
        target_node, index_node = node.children
        target, index = self.check(target_node), self.check(index_node)
        offset = self._after(target_node.meta.end_pos, "[")
        return self.call("_[_]", offset, None, [target, index])

    _optional_member_index = _member_index

    def _member_dot_arg(self, node: Any) -> _N:
        target_node, name_token = node.children[0], node.children[1]
        args_node = node.children[2] if len(node.children) > 2 else None
        arg_nodes = list(args_node.children) if isinstance(args_node, lark.Tree) else []
        name = str(name_token)
        offset = self._after(name_token.end_pos, "(")
        qualified = _qualified(target_node)
        if qualified == "cel" and name == "bind" and len(arg_nodes) == 3:
            return self._bind(arg_nodes)
        extended = macro_of(node)
        if extended is not None and (extended[0], len(extended[1])) != ("existsOne", 2):
            return self._extended_macro(extended[0], target_node, extended[1], offset)
        if name in _MACROS and len(arg_nodes) in (2, 3) and _ident_name(arg_nodes[0]) is not None:
            return self._macro(name, target_node, arg_nodes, offset)
        if qualified is not None and f"{qualified}.{name}" in _UNTYPED:
            return self._untyped([self.check(a) for a in arg_nodes])
        if qualified is not None and f"{qualified}.{name}" in FUNCTIONS:
            return self.call(f"{qualified}.{name}", offset, None, [self.check(a) for a in arg_nodes])
        target = self.check(target_node)
        args = [self.check(a) for a in arg_nodes]
        if name == "format" and len(arg_nodes) == 1 and target.type == STR:
            self._check_format(target_node, arg_nodes[0], args[0], offset)
        return self.call(name, offset, target, args)

    def _check_format(self, template_node: Any, list_node: Any, listed: _N, offset: int) -> None:
        """cel-go's string.format validator: a literal format string over a literal list has its
        clauses checked against the types of the elements they format."""
        template, elements = _literal_string(template_node), _list_elements(list_node)
        if template is None or elements is None:
            return
        reported = len(self.issues)
        element_types = [self.check(e).type for e in elements]
        del self.issues[reported:]  # (the list was checked already; its own errors are reported)
        used = 0

        def clause(index: int, verb: str, precision: int | None) -> str:
            nonlocal used
            used += 1
            t = element_types[index]
            ok = _formats_as_string(t) if verb == "s" else t in (DYN, ERROR) or _kind(t) in CLAUSE_TYPES[verb]
            if not ok:
                self.error(self._range_offset(elements[index]),
                           "error during formatting: " + CLAUSE_ERRORS[verb].format(_kind(t)))
            return ""
        try:
            walk(template, len(elements), clause)
        except FormatError as e:
            self.error(offset, str(e))
            return
        if len(elements) > used:
            self.error(offset, f"too many arguments supplied to string.format (expected {used}, got {len(elements)})")

    def _ident_arg(self, node: Any) -> _N:
        name_token = node.children[0]
        args_node = node.children[1] if len(node.children) > 1 else None
        arg_nodes = list(args_node.children) if isinstance(args_node, lark.Tree) else []
        name = str(name_token)
        if name == "has" and len(arg_nodes) == 1:
            # A presence test costs its operand and 1 for the test, as the select it wraps would.
            return _N(BOOL, self.check(arg_nodes[0]).cost)
        offset = self._after(name_token.end_pos, "(")
        return self.call(name, offset, None, [self.check(a) for a in arg_nodes])

    def _untyped(self, args: list[_N]) -> _N:
        cost = ONE
        for a in args:
            cost = _add(cost, a.cost)
        return _N(DYN, cost)

    def _bind(self, arg_nodes: list[Any]) -> _N:
        var = _ident_name(arg_nodes[0]) or ""
        init = self.check(arg_nodes[1])
        self.scopes.append({var: _N(init.type, ONE, init.size, init.path)})  # cel-go's local vars keep sizes
        body = self.check(arg_nodes[2])
        self.scopes.pop()
        # cel-go's costBind: the empty range list it expands to, the initialiser once, the body.
        return _N(body.type, _add(_add((10, 10), init.cost), body.cost), body.size, body.path)

    def _macro(self, name: str, target_node: Any, arg_nodes: list[Any], offset: int) -> _N:
        if name == "existsOne":  # cel-go's newer spelling of exists_one, the same expansion
            name = "exists_one"
        rng = self.check(target_node)
        t = rng.type
        var_type: Type
        step_path: tuple[str, ...] | None = None
        if isinstance(t, tuple) and t[0] == "list":
            var_type, step = t[1], "@items"
        elif isinstance(t, tuple) and t[0] == "map":
            var_type, step = t[1], "@keys"
        elif t in (DYN, ERROR):
            var_type, step = DYN, ""
        else:
            self.error(self._range_offset(target_node),
                       f"expression of type '{fmt(t)}' cannot be range of a comprehension "
                       "(must be list, map, or dynamic)")
            var_type, step = ERROR, ""
        if rng.path and step:
            step_path = rng.path + (step,)
        var = _ident_name(arg_nodes[0]) or ""
        self.scopes.append({var: _N(var_type, ONE, None, step_path)})
        body = [self.check(a) for a in arg_nodes[1:]]
        self.scopes.pop()
        count = rng.size_or_unknown()
        p = body[0]
        predicate = name in ("all", "exists", "filter", "exists_one") or (name == "map" and len(body) == 2)
        if predicate and p.type not in (BOOL, DYN, ANY, ERROR):
            fn = {"all": "_&&_", "exists": "_||_"}.get(name, "_?_:_")
            rest = "int, int" if name == "exists_one" else "list(dyn), list(dyn)"  # its accumulator's type
            sig = f"(bool, {fmt(p.type)})" if fn != "_?_:_" else f"({fmt(p.type)}, {rest})"
            self.error(offset, f"found no matching overload for '{fn}' applied to '{sig}'")
        # Each macro's cost is its expansion's (cel-go's costComprehension): the range, the
        # accumulator's initial value and the result once, the loop condition and step per element.
        result_type: Type = BOOL
        size: Est | None = ONE
        if name == "all" or name == "exists":
            loop = (2, 2) if name == "all" else (3, 3)
            step_cost = (1, _add(ONE, p.cost)[1])
            fixed = _add(rng.cost, ONE)
        elif name == "exists_one":
            loop, step_cost = ZERO, _add(p.cost, (1, 2))
            fixed = _add(rng.cost, (2, 2))
        elif name == "filter":
            loop, step_cost = ZERO, _add(p.cost, _union((13, 13), ONE))
            fixed, result_type, size = _add(rng.cost, (11, 11)), _list(var_type), count
        else:  # map, with or without a filter
            f = body[-1]
            append = _add((12, 12), f.cost)
            loop = ZERO
            step_cost = append if len(body) == 1 else _add(p.cost, _union(append, ONE))
            fixed, result_type, size = _add(rng.cost, (11, 11)), _list(f.type), count
        cost = _add(fixed, _mul(count, _add(step_cost, loop)))
        return _N(result_type, cost, size)

    def _extended_macro(self, name: str, target_node: Any, arg_nodes: list[Any], offset: int) -> _N:
        """The macros cel-python lacks (celmacros), typed and costed as their expansions are."""
        rng = self.check(target_node)
        if name in ("optMap", "optFlatMap"):
            return self._opt_macro(name, rng, arg_nodes, offset)
        t = rng.type
        first: _N
        second: _N
        if isinstance(t, tuple) and t[0] == "list":
            first, second = _N(INT, ONE), _N(t[1], ONE, None, rng.path + ("@items",) if rng.path else None)
        elif isinstance(t, tuple) and t[0] == "map":
            first = _N(t[1], ONE, None, rng.path + ("@keys",) if rng.path else None)
            second = _N(t[2], ONE, None, rng.path + ("@values",) if rng.path else None)
        else:
            if t not in (DYN, ERROR):
                self.error(self._range_offset(target_node), f"expression of type '{fmt(t)}' cannot be range of a "
                           "comprehension (must be list, map, or dynamic)")
            first, second = _N(DYN, ONE), _N(DYN, ONE)
        count = rng.size_or_unknown()
        if name == "sortBy":
            return self._sort_by(rng, second, arg_nodes, offset)
        names = [_ident_name(a) or "" for a in arg_nodes[:2]]
        self.scopes.append(dict(zip(names, (first, second), strict=True)))
        body = [self.check(a) for a in arg_nodes[2:]]
        self.scopes.pop()
        last = body[-1]
        predicate = body[0] if name in ("all", "exists", "existsOne", "exists_one") or len(body) == 2 else None
        if predicate is not None and predicate.type not in (BOOL, DYN, ANY, ERROR):
            fn = {"all": "_&&_", "exists": "_||_"}.get(name, "_?_:_")
            sig = f"(bool, {fmt(predicate.type)})" if fn != "_?_:_" else f"({fmt(predicate.type)}, dyn, dyn)"
            self.error(offset, f"found no matching overload for '{fn}' applied to '{sig}'")
        result_type: Type = BOOL
        size: Est | None = ONE
        if name in ("all", "exists"):
            loop = (2, 2) if name == "all" else (3, 3)
            cost = _add(_add(rng.cost, ONE), _mul(count, _add((1, _add(ONE, last.cost)[1]), loop)))
            return _N(BOOL, cost, size)
        if name in ("existsOne", "exists_one"):
            cost = _add(_add(rng.cost, (2, 2)), _mul(count, _add(last.cost, (1, 2))))
            return _N(BOOL, cost, size)
        # transformList appends to a list (1 for `+`, 10 for the one-element list, 1 for the
        # accumulator); the map transforms insert into one (cel.@mapInsert: 1, its operands).
        step, fixed = {"transformList": ((12, 12), (11, 11)), "transformMap": ((3, 3), (31, 31)),
                       "transformMapEntry": ((2, 2), (31, 31))}[name]
        step = _add(step, last.cost)
        if len(body) == 2:
            step = _add(body[0].cost, _union(step, ONE))
        if name == "transformList":
            result_type = _list(last.type)
        elif name == "transformMap":
            result_type = _map(first.type, last.type)
        elif isinstance(last.type, tuple) and last.type[0] == "map" or last.type in (DYN, ERROR):
            result_type = last.type if last.type != ERROR else _map(DYN, DYN)
        else:
            self.error(offset, f"found no matching overload for 'cel.@mapInsert' applied to "
                       f"'(map(dyn, dyn), {fmt(last.type)})'")
            result_type = ERROR
        return _N(result_type, _add(_add(rng.cost, fixed), _mul(count, step)), count)

    def _sort_by(self, rng: _N, element: _N, arg_nodes: list[Any], offset: int) -> _N:
        """sortBy expands to a bind of the list and `@sortByAssociatedKeys` of it and its keys
        (a map over it): the list's elements squared at 2 each (2.1 for string or bytes keys)."""
        count = rng.size_or_unknown()
        self.scopes.append({_ident_name(arg_nodes[0]) or "": element})
        key = self.check(arg_nodes[1])
        self.scopes.pop()
        if not isinstance(rng.type, tuple) or rng.type[0] != "list":
            if rng.type not in (DYN, ERROR):
                self.error(offset, f"found no matching overload for '@sortByAssociatedKeys' applied to "
                           f"'{fmt(rng.type)}.(list({fmt(key.type)}))'")
            return _N(DYN, rng.cost)
        if key.type not in (*_COMPARABLE, DYN, ANY, ERROR):
            self.error(offset, f"found no matching overload for '@sortByAssociatedKeys' applied to "
                       f"'{fmt(rng.type)}.(list({fmt(key.type)}))'")
        keys = _add(_add((1, 1), (11, 11)), _mul(count, _add((12, 12), key.cost)))
        factor = 2.1 if key.type in (STR, BYTES, DYN, ANY) else 2.0
        sort = _add(_factor(_mul(count, count), factor), (11, 11))
        cost = _add(_add(_add((10, 10), rng.cost), ONE), _add(keys, sort))
        return _N(rng.type, cost, _mul(count, count))

    def _opt_macro(self, name: str, target: _N, arg_nodes: list[Any], offset: int) -> _N:
        """optMap / optFlatMap: `t.hasValue() ? [optional.of](cel.bind(v, t.value(), body))
        : optional.none()`."""
        t = target.type
        value_type: Type = t[1] if isinstance(t, tuple) and t[0] == "optional_type" else DYN
        if not (isinstance(t, tuple) and t[0] == "optional_type") and t not in (DYN, ERROR):
            self.error(offset, f"found no matching overload for 'hasValue' applied to '{fmt(t)}.()'")
        self.scopes.append({_ident_name(arg_nodes[0]) or "": _N(value_type, ONE)})
        body = self.check(arg_nodes[1])
        self.scopes.pop()
        bound = _add(_add((10, 10), _add(target.cost, ONE)), body.cost)
        if name == "optMap":
            result, then = _optional(body.type), _add(bound, ONE)
        else:
            result, then = body.type, bound
            if not (isinstance(body.type, tuple) and body.type[0] == "optional_type") and \
                    body.type not in (DYN, ERROR):
                self.error(offset, f"found no matching overload for '_?_:_' applied to "
                           f"'(bool, {fmt(body.type)}, optional_type(dyn))'")
        return _N(result, _add(_add(target.cost, ONE), _union(then, ONE)))

    def _range_offset(self, node: Any) -> int:
        while isinstance(node, lark.Tree) and len(node.children) == 1:
            node = node.children[0]
        kids: list[Any] = list(node.children) if isinstance(node, lark.Tree) else []
        if isinstance(node, lark.Tree) and node.data == "member_dot":
            return self._before(kids[1].start_pos, ".")
        if isinstance(node, lark.Tree) and node.data == "member_index":
            return self._after(kids[0].meta.end_pos, "[")
        if isinstance(node, lark.Tree):
            return int(node.meta.start_pos)
        return int(getattr(node, "start_pos", 0))

    # -- calls
    def resolve(self, name: str, offset: int, args: list[Type], member: bool) -> Type:
        """The result type of `name` applied to `args` (a member call's target first), as cel-go's
        overload resolution finds it; an error is reported when no overload takes them."""
        return self._resolve(name, offset, args, member)[0]

    def _resolve(self, name: str, offset: int, args: list[Type], member: bool) -> tuple[Type, list[str]]:
        overloads = FUNCTIONS.get(name)
        if overloads is None:
            if name in _UNTYPED:
                return DYN, ["untyped"]
            self.error(offset, f"undeclared reference to '{name}' (in container '')")
            return ERROR, []
        matched: list[tuple[str, Type]] = []
        for oid, is_member, params, result in overloads:
            if is_member != member or len(params) != len(args):
                continue
            u = _Unify()
            if all(u.assignable(p, a) for p, a in zip(params, args, strict=True)):
                matched.append((oid, u.substitute(result)))
        if not matched:
            if ERROR not in args:
                sig = ", ".join(fmt(a) for a in (args[1:] if member else args))
                shown = f"{fmt(args[0])}.({sig})" if member else f"({sig})"
                self.error(offset, f"found no matching overload for '{name}' applied to '{shown}'")
            return ERROR, []
        result_type = matched[0][1]
        if any(r != result_type for _, r in matched):
            result_type = DYN
        return result_type, [oid for oid, _ in matched]

    def call(self, name: str, offset: int, target: _N | None, args: list[_N]) -> _N:
        types = ([target.type] if target else []) + [a.type for a in args]
        result_type, oids = self._resolve(name, offset, types, target is not None)
        arg_sum = target.cost if target else ZERO
        for a in args:
            arg_sum = _add(arg_sum, a.cost)
        if not oids:
            return _N(result_type, arg_sum)
        fn_cost: Est = (U64, 0)
        size: Est | None = None
        path: tuple[str, ...] | None = None
        for oid in oids:
            est, result_size = _call_cost(name, oid, target, args)
            fn_cost = _union(fn_cost, est)
            if result_size is not None:
                size = result_size if size is None else _union(size, result_size)
            if oid == "index_list" and args[0].path:
                path = args[0].path + ("@items",)
            elif oid == "index_map" and args[0].path:
                path = args[0].path + ("@values",)
        return _N(result_type, _add(arg_sum, fn_cost), size, path)


def _call_cost(name: str, oid: str, target: _N | None, args: list[_N]) -> tuple[Est, Est | None]:
    """One overload's own cost (cel-go's functionCost and Kubernetes' library estimates), and its
    result's size where that is known."""
    tgt = target.size_or_unknown() if target else UNKNOWN
    if name in ("quantity", "isQuantity", "semver", "isSemver") and args:
        return _factor(args[0].size_or_unknown(), 0.1), None
    if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target:
        if not (isinstance(target.type, tuple) and target.type[0] == "list"):
            return _factor(tgt, 0.1), None  # a string's indexOf / lastIndexOf
        # 1 per element compared, plus a traversal of each when they are strings or bytes.
        element: Est = ONE
        if target.type[1] in (STR, BYTES):
            element = _add(ONE, _factor(_element_size(target), 0.1))
        return _mul(tgt, element), None
    if name == "join" and target:
        elements = _mul(tgt, _element_size(target))
        if args:
            separators = (max(tgt[0] - 1, 0), max(tgt[1] - 1, 0))
            elements = _add(elements, _mul(args[0].size_or_unknown(), separators))
        return _factor(elements, 0.1), elements
    if oid == "string_format" and target:
        return _factor(tgt, 0.1), None
    if name in ("lowerAscii", "upperAscii", "substring", "trim") and target:
        return _factor(tgt, 0.1), tgt
    if name == "replace" and target:
        return _factor(tgt, 0.2), None
    if name == "split" and target:
        return _factor(tgt, 0.2), (0, tgt[1])
    if name in ("find", "findAll") and target and args:
        strcost = _factor(_add(tgt, ONE), 0.1)
        return _mul(strcost, _factor(args[0].size_or_unknown(), 0.25)), (0, tgt[1])
    if oid in _LIST_ESTIMATES and target:
        return _LIST_ESTIMATES[oid](target, args)
    if name == "url":
        size = args[0].size_or_unknown()
        return _factor(size, 0.1), size
    if name == "validate" and args:
        # a regular expression's cost on the string, with the longest name format's pattern (128)
        return _factor(_factor(args[0].size_or_unknown(), 0.1), MAX_NAME_FORMAT_REGEX_SIZE * 0.25), None
    if oid == "equals" and args[0].type == args[1].type == FORMAT:
        return _factor((1, MAX_FORMAT_SIZE), 0.1), None
    if oid == "equals" and args[0].type == args[1].type == URL:
        size = args[1].size if args[1].size is not None else ONE  # (upstream compares the right side with itself)
        return _factor((1, size[1]), 0.1), None
    if name in ("cidr", "isIP", "isCIDR") or oid == "string_to_ip":
        return _factor(args[0].size_or_unknown(), 0.1), None  # parsing: a traversal
    if name == "ip.isCanonical":
        return _factor(args[0].size_or_unknown(), 0.2), None  # parsed, then compared to the text
    if name in ("containsIP", "containsCIDR"):
        # Kubernetes' estimate: compare two addresses of 4 to 16 bytes (containsCIDR once more,
        # plus 1), and parse a string argument.
        address: Est = (4, 16)
        cost = _factor(_add(address, address), 0.1)
        if name == "containsCIDR":
            cost = _add(_add(cost, _factor(address, 0.1)), ONE)
        if oid.endswith("_string"):
            cost = _add(cost, _factor(args[0].size_or_unknown(), 0.1))
        return cost, None
    if oid == "equals" and args[0].type in (IP, CIDR) and args[0].type == args[1].type:
        return ONE, None  # O(1) in Kubernetes' estimator (`!=` keeps cel-go's unknown size)
    if oid in ("starts_with_string", "ends_with_string"):
        return _factor(args[0].size_or_unknown(), 0.1), None
    if oid == "in_list":
        return _factor(args[1].size_or_unknown(), 1), None
    if oid == "matches_string" and target:
        strcost = _factor(_add(tgt, ONE), 0.1)
        return _mul(strcost, _factor(args[0].size_or_unknown(), 0.25)), None
    if oid == "contains_string" and target:
        return _mul(_factor(tgt, 0.1), _factor(args[0].size_or_unknown(), 0.1)), None
    if oid in ("add_string", "add_bytes", "add_list"):
        size = _add(args[0].size_or_unknown(), args[1].size_or_unknown())
        return (ONE if oid == "add_list" else _factor(size, 0.1)), size
    if oid in ("equals", "not_equals", "rel_string", "rel_bytes"):
        smallest = min(args[0].size_or_unknown()[1], args[1].size_or_unknown()[1])
        return _factor((1 if smallest > 0 else 0, smallest), 0.1), None
    if oid in ("string_to_bytes", "bytes_to_string"):
        return _factor(args[0].size_or_unknown(), 0.1), None
    return ONE, None


def _literal_uint(node: _N, default: int) -> int:
    """An int literal argument's value (negative as 0), else `default`: cel-go's nodeAsUintValue."""
    return default if node.literal is None else max(node.literal, 0)


def _allocating(factor: float, size: Est) -> tuple[Est, Est]:
    """cel-go's lists extension: `factor` per element of the result, 1 for the call and 10 for the
    new list; the result has `size` elements."""
    return _add(_factor(size, factor), (11, 11)), size


def _slice_estimate(target: _N, args: list[_N]) -> tuple[Est, Est | None]:
    start = _literal_uint(args[0], 0)
    end = _literal_uint(args[1], target.size_or_unknown()[1])
    count = (end - start) % 2**64  # unsigned, as cel-go subtracts
    return _allocating(1, (count, count))


def _flatten_estimate(target: _N, args: list[_N]) -> tuple[Est, Est | None]:
    depth = _literal_uint(args[0], U64) if args else 1
    return _allocating(depth, target.size_or_unknown())


def _square_estimate(factor: float) -> Callable[[_N, list[_N]], tuple[Est, Est | None]]:
    """distinct and sort: O(n²) comparisons at `factor` each; the result's size is estimated as n²
    too, as cel-go does."""
    def estimate(target: _N, args: list[_N]) -> tuple[Est, Est | None]:
        size = target.size_or_unknown()
        return _allocating(factor, _mul(size, size))
    return estimate


# cel-go's lists extension (version 3) estimates its own calls by overload; lists.range's
# estimator never applies (cel-go hands every call a target), so it costs 1.
_LIST_ESTIMATES: dict[str, Callable[[_N, list[_N]], tuple[Est, Est | None]]] = {
    "list_slice": _slice_estimate, "list_flatten": _flatten_estimate, "list_flatten_int": _flatten_estimate,
    "list_reverse": lambda target, args: _allocating(1, target.size_or_unknown()),
    "list_distinct": _square_estimate(2.0),
    **{f"list_{fmt(t)}_sort": _square_estimate(2.0 + (0.1 if t in (STR, BYTES) else 0)) for t in _COMPARABLE},
}


def _kind(t: Type) -> str:
    """A type's kind as cel-go's messages name it (`list`, not `list(int)`)."""
    return t[0] if isinstance(t, tuple) else t


def _formats_as_string(t: Type) -> bool:
    """What the %s clause takes: lists and maps of them, scalars, timestamps, durations, types."""
    if isinstance(t, tuple) and t[0] in ("list", "map"):
        return all(_formats_as_string(p) for p in t[1:])
    return t in (DYN, ERROR, INT, UINT, DOUBLE, BOOL, STR, BYTES, _TIMESTAMP, _DURATION, "null_type") or \
        _kind(t) == "type"


def _literal_string(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type in ("STRING_LIT", "MLSTRING_LIT") and node[:1] not in "bBrR":
        return _unquote(str(node))
    return None


def _list_elements(node: Any) -> list[Any] | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "list_lit":
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "list_lit":
        return list(node.children[0].children) if node.children and node.children[0] else []
    return None


def _element_size(lst: _N) -> Est:
    """The size of a list's elements, known only where DRA's declarations give it by path."""
    return (_size_from_path(lst.path + ("@items",)) if lst.path else None) or UNKNOWN


def _qualified(node: Any) -> str | None:
    """`a.b.c` when a member target is a plain dotted name (a namespace such as `cel` or `math`)."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data in ("member", "primary"):
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    if isinstance(node, lark.Tree) and node.data == "member_dot":
        inner = _qualified(node.children[0])
        return f"{inner}.{node.children[1]}" if inner is not None else None
    return None


def _ident_name(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type == "IDENT":
        return str(node)
    return None


def _unquote(text: str) -> str:
    """A string literal's value, near enough to count its characters (escapes as one)."""
    raw = text[:1] in "rR"
    body = text[1:] if raw else text
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    inner = body[len(quote):len(body) - len(quote)]
    if raw:
        return inner
    out, i = [], 0
    while i < len(inner):
        if inner[i] == "\\" and i + 1 < len(inner):
            nxt = inner[i + 1]
            skip = {"x": 4, "u": 6, "U": 10}.get(nxt, 4 if nxt.isdigit() else 2)
            out.append("?")
            i += skip
        else:
            out.append(inner[i])
            i += 1
    return "".join(out)


def check(tree: lark.Tree, text: str, consumable_capacity: bool = True) -> Checked:
    """Type-check and cost a parsed selector; issues are sorted as cel-go reports them. Without
    `consumable_capacity`, `device` is v1.31's, without `allowMultipleAllocations` (the
    environment of a new expression while DRAConsumableCapacity is off)."""
    fields = DEVICE_FIELDS if consumable_capacity else {
        k: v for k, v in DEVICE_FIELDS.items() if k != "allowMultipleAllocations"}
    checker = _Checker(text, fields)
    top = checker.check(tree)
    issues = sorted(checker.issues, key=lambda i: i.offset)
    return Checked(top.type, top.cost[1], issues)


def display(text: str, issues: list[Issue]) -> str:
    """cel-go's issues.String(): each error with its line and column and the source line marked."""
    lines = text.split("\n")
    out = []
    for issue in issues:
        line = text.count("\n", 0, issue.offset) + 1
        col = issue.offset - (text.rfind("\n", 0, issue.offset) + 1)
        snippet = lines[line - 1].replace("\t", " ")
        out.append(f"ERROR: <input>:{line}:{col + 1}: {issue.message}\n | {snippet}\n | {'.' * col}^")
    return "\n".join(out)
