"""CEL device selectors, as DeviceClasses and claim requests write them (resource.k8s.io).

A selector sees one variable, `device`: its `driver`, `allowMultipleAllocations` (consumable
capacity's: whether the device can be shared), and its `attributes` and `capacity` keyed by
domain then name, where a name without a domain takes the driver's (so a driver's own `model` is
`device.attributes['gpu.example.com'].model`). An unknown domain reads as an empty map; a missing
name in a known one is a runtime error, as upstream's map proxy makes it. Capacities are
quantities (`quantity('40Gi')`, `compareTo`, `isGreaterThan`, ...) and version attributes semantic
versions (`semver('1.2.3')`), the Kubernetes CEL libraries DRA's environment loads.

The expressions are Google's CEL, evaluated by cel-python; `cel.bind` (cel-go's Bindings
extension) is run as the equivalent one-element `map`, the other macros cel-python lacks by
celmacros, and cel-go's optional syntax parsed by celparse. cel-python has no static type checker
nor cost estimator: celcheck does both as cel-go's checker does, so a type error is refused
when the selector is stored, with cel-go's message, and the worst-case cost is known; a selector
whose estimate is over the limit (validation refuses it, so only one stored some other way) runs
with its steps charged and stops at the runtime limit as cel-go's does. The 10 KiB length limit
holds.
"""

from __future__ import annotations

import collections
import functools
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy
import lark
from celpy import celtypes

from kubesched.api.dra import cellib
from kubesched.api.dra.celcheck import ANY, BOOL, MAX_COST, check, display, fmt
from kubesched.api.dra.celformat import format_string
from kubesched.api.dra.celmacros import MacroEvaluator
from kubesched.api.dra.celparse import parse
from kubesched.api.quantity import QuantityError, parse_quantity

MAX_EXPRESSION_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


class CELError(ValueError):
    """An expression that does not compile, or fails while it runs; the text is upstream's kind of message."""


@total_ordering
class Quantity:
    """A resource.Quantity inside CEL: exact, compared by value."""

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


def _semver_error(text: str) -> str:
    """Why blang/semver's Parse refuses `text`, in its words."""
    if not text:
        return "Version string empty"
    parts = text.split(".", 2)
    if len(parts) != 3:
        return "No Major.Minor.Patch elements found"
    patch = re.split(r"[-+]", parts[2], maxsplit=1)[0]
    for name, part in (("major", parts[0]), ("minor", parts[1]), ("patch", patch)):
        if not part.isascii() or not part.isdigit():
            return f"Invalid character(s) found in {name} number {json.dumps(part)}"
        if len(part) > 1 and part[0] == "0":
            return f"{name.capitalize()} number must not contain leading zeroes {json.dumps(part)}"
    rest = parts[2][len(patch):]
    pre, _, build = rest[1:].partition("+") if rest.startswith("-") else ("", "", rest[1:])
    if "+" in rest and not re.fullmatch(r"[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*", build):
        return f"Invalid character(s) found in build meta data {json.dumps(build)}"
    return f"Invalid character(s) found in prerelease {json.dumps(pre)}"


def _normalized(text: str) -> str:
    """Kubernetes' semver normalisation (semver(s, true)): no leading 'v', no leading zeros, a
    missing minor or patch number as 0."""
    parts = text.removeprefix("v").split(".", 2)
    parts = [("0" + p.lstrip("0") if not p.lstrip("0")[:1].isdigit() else p.lstrip("0")) if len(p) > 1 else p
             for p in parts]
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise CELError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def _semver(text: Any, normalize: Any = False) -> Semver:
    return Semver(_normalized(str(text)) if normalize else str(text))


@total_ordering
class Semver:
    """A semantic version inside CEL, ordered as semver 2.0.0 orders them (build metadata ignored)."""

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if m is None:
            raise CELError(_semver_error(text))
        self.text = text
        self.core = (int(m[1]), int(m[2]), int(m[3]))
        self.pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in (m[4] or "").split(".") if p)

    def _key(self) -> tuple[Any, ...]:
        return self.core, (1,) if not self.pre else (0, self.pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class _Domains(celtypes.MapType):
    """device.attributes / device.capacity: an unknown domain is an empty map, never an error."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def _compare(a: Any, b: Any) -> celtypes.IntType:
    if type(a) is not type(b) or not isinstance(a, (Quantity, Semver)):
        raise CELError(f"no such overload: compareTo({type(a).__name__}, {type(b).__name__})")
    return celtypes.IntType(0 if a == b else (-1 if a < b else 1))


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(str(text)))
    except QuantityError as e:
        raise CELError(f"quantities must match the regular expression: {e}") from None


def _q(x: Any) -> Quantity:
    if not isinstance(x, Quantity):
        raise CELError(f"no such overload for {type(x).__name__}")
    return x


_FUNCTIONS: dict[str, Any] = {
    **cellib.FUNCTIONS,
    "format": format_string,
    "quantity": _quantity,
    "isQuantity": cellib.valid(lambda text: parse_quantity(str(text)), QuantityError),
    "semver": _semver,
    "isSemver": cellib.valid(_semver, CELError),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) < 0),
    "sign": lambda a: celtypes.IntType((_q(a).value > 0) - (_q(a).value < 0)),
    "isInteger": lambda a: celtypes.BoolType(_q(a).value.denominator == 1),
    "asInteger": lambda a: celtypes.IntType(int(_q(a).value)),
    "asApproximateFloat": lambda a: celtypes.DoubleType(float(_q(a).value)),
    "add": lambda a, b: Quantity(_q(a).value + (_q(b).value if isinstance(b, Quantity) else int(b))),
    "sub": lambda a, b: Quantity(_q(a).value - (_q(b).value if isinstance(b, Quantity) else int(b))),
    "major": lambda v: celtypes.IntType(v.core[0]),
    "minor": lambda v: celtypes.IntType(v.core[1]),
    "patch": lambda v: celtypes.IntType(v.core[2]),
}
# Kubernetes' quantity and semver CEL libraries and the extensions of its base environment, which
# the admission policies' environment loads too.
LIBRARY_FUNCTIONS: dict[str, Any] = _FUNCTIONS
@functools.cache
def _env() -> celpy.Environment:
    """The CEL environment, built on first use: its parser takes a noticeable part of a second to
    build, which a run that meets no CEL should not pay."""
    return celpy.Environment()
def _rewrite_binds(tree: lark.Tree) -> None:
    """cel.bind(v, init, body) (cel-go's ext.Bindings, which DRA's environment loads) as the
    equivalent `[init].map(v, body)[0]`, which cel-python runs: the body sees `v` bound to `init`."""
    for node in tree.iter_subtrees():  # bottom-up: an inner bind is rewritten first
        if node.data != "member" or len(node.children) != 1:
            continue
        call = node.children[0]
        if not (isinstance(call, lark.Tree) and call.data == "member_dot_arg" and str(call.children[1]) == "bind"):
            continue
        target, method, args = call.children
        if not (isinstance(target, lark.Tree) and [str(t) for t in target.scan_values(lambda v: True)] == ["cel"]):
            continue
        exprs = args.children if isinstance(args, lark.Tree) else []
        if len(exprs) != 3:
            continue
        var, init, body = exprs
        listed: lark.Tree[Any] = lark.Tree("member", [lark.Tree("primary", [lark.Tree("list_lit", [
            lark.Tree("exprlist", [init])])])])
        mapped: lark.Tree[Any] = lark.Tree("member", [lark.Tree("member_dot_arg", [
            listed, lark.Token(str(getattr(method, "type", "IDENT")), "map"), lark.Tree("exprlist", [var, body])])])
        node.children = [lark.Tree("member_index", [mapped, _env().compile("0")])]


class _CostLimitExceeded(Exception):
    """The runtime cost limit was reached: evaluation stops at once."""


# What evaluating a node costs at run time, as cel-go's cost tracker charges it: 1 for a variable,
# a field, an index, an operator or a call, 10 to build a list, 30 a map; `&&`, `||` and `?:`
# nothing of their own.
_RUNTIME_COSTS = {"ident": 1, "member_dot": 1, "member_index": 1, "member_dot_arg": 1, "ident_arg": 1,
                  "relation": 1, "addition": 1, "multiplication": 1, "unary": 1, "list_lit": 10, "map_lit": 30}
_OPERATORS = {"relation", "addition", "multiplication", "unary"}


class _CostedEvaluator(MacroEvaluator):
    """cel-python's evaluator charging each step to a budget shared with the evaluators of macro
    bodies, so that a selector stops when its actual cost passes the limit, as cel-go's
    `cel.CostLimit` stops it. Only a selector whose estimate is over the limit can get there (the
    estimate bounds the actual cost), so only those run here."""

    def __init__(self, ast: lark.Tree, activation: Any, budget: list[int]) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def charge(self, cost: int) -> None:
        self.budget[0] -= cost
        if self.budget[0] < 0:
            raise _CostLimitExceeded

    def visit(self, tree: lark.Tree) -> Any:
        cost = _RUNTIME_COSTS.get(tree.data)
        if cost and (tree.data not in _OPERATORS or len(tree.children) > 1):
            self.charge(cost)
        return super().visit(tree)

    def sub_evaluator(self, ast: lark.Tree) -> celpy.evaluation.Evaluator:
        return _CostedEvaluator(ast, self.activation, self.budget)

    def set_activation(self, values: Any) -> celpy.evaluation.Evaluator:
        self.charge(3)  # a macro's loop condition and accumulator, once per element
        return super().set_activation(values)


def _size(value: Any) -> int:
    """cel-go's actualSize: a string's characters, a list's or map's elements, else 1."""
    return len(value) if isinstance(value, (str, bytes, list, dict)) else 1


def _traversal(value: Any) -> int:
    """Kubernetes' traversalCost: 0.1 a character of each string (truncated), 1 a scalar."""
    if isinstance(value, (str, bytes)):
        return int(len(value) * 0.1)
    if isinstance(value, dict):
        return sum(_traversal(k) + _traversal(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_traversal(v) for v in value)
    return 1


def _ceil(size: int, factor: float) -> int:
    return math.ceil(size * factor)


def _self_compare(items: Any) -> int:
    """The lists extension's O(n²) tracker (distinct, sort, sortBy's keys): 2 a comparison, 2.1
    for strings and bytes, plus the call and the new list."""
    n = _size(items)
    factor = 2.1 if n and isinstance(items[0], (str, bytes)) else 2.0
    return int(n * n * factor) + 11


# What cel-go's cost tracker charges for a library call instead of the 1 of any other call:
# Kubernetes' CallCost and the lists extension's trackers, given the arguments and the result.
_CALL_COSTS: dict[str, Callable[[tuple[Any, ...], Any], int]] = {
    **dict.fromkeys(("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"),
                    lambda a, r: _traversal(a[0])),
    **dict.fromkeys(("url", "format", "lowerAscii", "upperAscii", "substring", "trim", "cidr", "isIP", "isCIDR", "quantity",
                     "isQuantity", "semver", "isSemver"), lambda a, r: _ceil(_size(a[0]), 0.1)),
    "ip": lambda a, r: 1 if isinstance(a[0], cellib.CIDR) else _ceil(_size(a[0]), 0.1),
    **dict.fromkeys(("replace", "split", "ip.isCanonical"), lambda a, r: _ceil(_size(a[0]), 0.2)),
    "join": lambda a, r: _ceil(_size(r), 0.2),
    **dict.fromkeys(("find", "findAll"),
                    lambda a, r: _ceil(1 + _size(a[0]), 0.1) * _ceil(_size(a[1]), 0.25)),
    "containsIP": lambda a, r: 1 + (_ceil(_size(a[1]), 0.1) if isinstance(a[1], str) else 0),
    "containsCIDR": lambda a, r: 3 + (_ceil(_size(a[1]), 0.1) if isinstance(a[1], str) else 0),
    "validate": lambda a, r: _ceil(1 + _size(a[1]), 0.1) * _ceil(a[0].max_regex_size, 0.25),
    **dict.fromkeys(("slice", "reverse", "lists.range"), lambda a, r: _size(r) + 11),
    "flatten": lambda a, r: int(_size(a[0]) * (int(a[1]) if len(a) > 1 else 1)) + 11,
    **dict.fromkeys(("distinct", "sort"), lambda a, r: _self_compare(a[0])),
}


def _charged(activation: Any, budget: list[int]) -> Any:
    """The activation with each library function charging its cost to `budget` (the evaluator
    has charged 1 for the call already)."""
    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        cost = _CALL_COSTS[name]

        def charged(*args: Any) -> Any:
            result = fn(*args)
            budget[0] -= cost(args, result) - 1
            if budget[0] < 0:
                raise _CostLimitExceeded
            return result
        return charged
    activation.functions = collections.ChainMap(
        {name: wrap(name, fn) for name, fn in _FUNCTIONS.items() if name in _CALL_COSTS}, activation.functions)
    return activation


@dataclass(frozen=True)
class Selector:
    """A compiled selector; `matches` runs it on one device's CEL view."""

    expression: str
    program: Any
    max_cost: int  # the checker's worst-case estimate; validation refuses one over MAX_COST

    def matches(self, device: celtypes.MapType, cost_limit: int = MAX_COST) -> bool:
        """The verdict on one device; `cost_limit` is the runtime limit (upstream's Options.CostLimit)."""
        try:
            if self.max_cost > cost_limit:
                budget = [cost_limit]
                result = _CostedEvaluator(self.program.ast, _charged(self.program.new_activation(), budget),
                                          budget).evaluate(
                    {"device": device})
            else:
                result = MacroEvaluator(self.program.ast, self.program.new_activation()).evaluate({"device": device})
        except _CostLimitExceeded:
            raise CELError("operation cancelled: actual cost limit exceeded") from None
        except celpy.CELEvalError as e:
            raise CELError(_message(e)) from None
        if isinstance(result, celpy.CELEvalError):
            raise CELError(_message(result))
        if not isinstance(result, celtypes.BoolType):
            name = "null_type" if result is None else type(result).__name__.removesuffix("Type").lower()
            raise CELError(f"CEL result of type {name} could not be converted to bool")
        return bool(result)


def _message(error: celpy.CELEvalError) -> str:
    """The evaluation error's message: a library function's own, else cel-python's."""
    args = error.args
    if len(args) > 2 and isinstance(args[1], type) and issubclass(args[1], (cellib.LibraryError, CELError)) and args[2]:
        return str(args[2][0])
    return str(args[0]) if args else str(error)


_compiled: dict[tuple[str, bool], Selector] = {}


def compile_selector(expression: str, consumable_capacity: bool = True) -> Selector:
    """Compile once (the cache is unbounded: a cluster has few distinct selectors); a CELError
    says why an expression cannot be stored. `consumable_capacity` declares
    `device.allowMultipleAllocations`, as every stored expression's environment does and a new
    one's only with DRAConsumableCapacity on."""
    found = _compiled.get((expression, consumable_capacity))
    if found is not None:
        return found
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CELError(f"must be no more than {MAX_EXPRESSION_LENGTH} bytes")
    try:
        tree = parse(_env(), expression)
    except celpy.CELParseError as e:
        detail = str(e).splitlines()[0] if str(e) else "syntax error"
        raise CELError(f"compilation failed: ERROR: <input>: Syntax error: {detail}") from None
    checked = check(tree, expression, consumable_capacity)
    if checked.issues:
        raise CELError("compilation failed: " + display(expression, checked.issues))
    if checked.output not in (BOOL, ANY):
        raise CELError(f"must evaluate to bool or the unknown type, not {fmt(checked.output)}")
    _rewrite_binds(tree)
    cellib.namespaced(tree)
    selector = Selector(expression, _env().program(tree, functions=_FUNCTIONS), checked.max_cost)
    _compiled[expression, consumable_capacity] = selector
    return selector


def _attribute_value(value: dict[str, Any]) -> Any:
    if "int" in value:
        return celtypes.IntType(int(value["int"]))
    if "bool" in value:
        return celtypes.BoolType(bool(value["bool"]))
    if "string" in value:
        return celtypes.StringType(str(value["string"]))
    if "version" in value:
        return Semver(str(value["version"]))
    raise CELError("unsupported attribute value")


def split_name(name: str, driver: str) -> tuple[str, str]:
    """A qualified name's domain and identifier; no domain means the driver's."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_view(driver: str, attributes: dict[str, Any] | None, capacity: dict[str, Any] | None,
                shared: bool = False) -> celtypes.MapType:
    """The `device` variable for one device of a ResourceSlice (v1 field names);
    `allowMultipleAllocations` is consumable capacity's."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, value in (attributes or {}).items():
        domain, ident = split_name(name, driver)
        attrs.setdefault(domain, {})[celtypes.StringType(ident)] = _attribute_value(value or {})
    caps: dict[str, dict[str, Any]] = {}
    for name, value in (capacity or {}).items():
        domain, ident = split_name(name, driver)
        caps.setdefault(domain, {})[celtypes.StringType(ident)] = _quantity((value or {}).get("value", "0"))
    return celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(shared),
        celtypes.StringType("attributes"): _Domains({celtypes.StringType(d): celtypes.MapType(v) for d, v in attrs.items()}),
        celtypes.StringType("capacity"): _Domains({celtypes.StringType(d): celtypes.MapType(v) for d, v in caps.items()}),
    })


def compile_errors(expressions: Iterable[str]) -> list[str]:
    """The compile error of each expression that has one (validation's helper)."""
    out = []
    for expression in expressions:
        try:
            compile_selector(expression)
        except CELError as e:
            out.append(str(e))
    return out
