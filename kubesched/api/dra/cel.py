"""CEL device selectors, as DeviceClasses and claim requests write them (resource.k8s.io).

A selector sees one variable, `device`: its `driver`, `allowMultipleAllocations` (consumable
capacity's: whether the device can be shared), and its `attributes` and `capacity` keyed by
domain then name, where a name without a domain takes the driver's (so a driver's own `model` is
`device.attributes['gpu.example.com'].model`). An unknown domain reads as an empty map; a missing
name in a known one is a runtime error, as upstream's map proxy makes it. Capacities are
quantities (`quantity('40Gi')`, `compareTo`, `isGreaterThan`, ...) and version attributes semantic
versions (`semver('1.2.3')`), the Kubernetes CEL libraries DRA's environment loads.

The expressions are Google's CEL, evaluated by cel-python. Two things upstream's Go environment
has and this one does not: the static type checker (a selector that is not boolean is caught when
it runs, not when it is stored) and the cost estimator; the 10 KiB length limit holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy
import lark
from celpy import celtypes

from kubesched.api.quantity import QuantityError, parse_quantity

MAX_EXPRESSION_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
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


@total_ordering
class Semver:
    """A semantic version inside CEL, ordered as semver 2.0.0 orders them (build metadata ignored)."""

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if m is None:
            raise CELError(f"invalid semver: {text}")
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


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _q(x: Any) -> Quantity:
    if not isinstance(x, Quantity):
        raise CELError(f"no such overload for {type(x).__name__}")
    return x


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": lambda s: Semver(str(s)),
    "isSemver": lambda s: celtypes.BoolType(_SEMVER.match(str(s)) is not None),
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
_ENV = celpy.Environment()
_KNOWN = {"device"} | set(_FUNCTIONS) | {"int", "uint", "double", "bool", "string", "bytes", "list", "map",
                                          "null_type", "type", "duration", "timestamp", "dyn"}


def _undeclared(tree: lark.Tree) -> lark.Token | None:
    """The first identifier that names no variable: `device`, a macro's own variable, or a type."""
    bound: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and str(node.children[1]) in _MACROS:
            args = node.children[2]
            if isinstance(args, lark.Tree) and args.children:
                bound.update(str(t) for t in args.children[0].scan_values(lambda v: isinstance(v, lark.Token)))
    for node in tree.iter_subtrees_topdown():
        if node.data == "ident":
            token = node.children[0]
            if isinstance(token, lark.Token) and str(token) not in _KNOWN | bound:
                return token
    return None


@dataclass(frozen=True)
class Selector:
    """A compiled selector; `matches` runs it on one device's CEL view."""

    expression: str
    program: Any

    def matches(self, device: celtypes.MapType) -> bool:
        try:
            result = self.program.evaluate({"device": device})
        except celpy.CELEvalError as e:
            raise CELError(str(e.args[0]) if e.args else str(e)) from None
        if isinstance(result, celpy.CELEvalError):
            raise CELError(str(result.args[0]) if result.args else str(result))
        if not isinstance(result, celtypes.BoolType):
            raise CELError(f"CEL result of type {type(result).__name__} could not be converted to bool")
        return bool(result)


_compiled: dict[str, Selector] = {}


def compile_selector(expression: str) -> Selector:
    """Compile once (the cache is unbounded: a cluster has few distinct selectors); a CELError
    says why an expression cannot be stored."""
    found = _compiled.get(expression)
    if found is not None:
        return found
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CELError(f"must be no more than {MAX_EXPRESSION_LENGTH} bytes")
    try:
        tree = _ENV.compile(expression)
    except celpy.CELParseError as e:
        detail = str(e).splitlines()[0] if str(e) else "syntax error"
        raise CELError(f"compilation failed: ERROR: <input>: Syntax error: {detail}") from None
    token = _undeclared(tree)
    if token is not None:
        raise CELError(f"compilation failed: ERROR: <input>:{token.line}:{token.column}: "
                       f"undeclared reference to '{token}' (in container '')")
    selector = Selector(expression, _ENV.program(tree, functions=_FUNCTIONS))
    _compiled[expression] = selector
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
