"""CEL as admission policies use it (ValidatingAdmissionPolicy's validations, messageExpressions,
matchConditions and variables): the variables `object`, `oldObject`, `request`, `params`,
`namespaceObject`, `variables` and `authorizer`, with Kubernetes' CEL libraries (quantities,
semantic versions, authorization checks, the strings, lists and regex extensions policies use
most).

Evaluated by cel-python, as custom resources' rules are (api/crd/cel.py). Without cel-go's type
checker, what is caught when a policy is written is a syntax error and a name that is no
variable, function or macro variable (`undeclared reference`), as upstream's checker reports
them; a type error shows when the expression runs. cel-go's cost budget is not reproduced."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import celpy
import lark
from celpy import celtypes

from kubesched.api.dra.cel import LIBRARY_FUNCTIONS

VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_TYPES = {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "duration",
          "timestamp", "dyn"}


class PolicyCELError(ValueError):
    """An expression that does not compile or fails while it runs, in upstream's words."""


def _string(x: Any) -> str:
    if not isinstance(x, str):
        raise PolicyCELError(f"no such overload: {type(x).__name__}")
    return x


def _index_of(x: Any, item: Any, *rest: Any) -> celtypes.IntType:
    if isinstance(x, str):
        return celtypes.IntType(x.find(_string(item), int(rest[0]) if rest else 0))
    return celtypes.IntType(next((i for i, v in enumerate(x) if v == item), -1))


def _last_index_of(x: Any, item: Any) -> celtypes.IntType:
    if isinstance(x, str):
        return celtypes.IntType(x.rfind(_string(item)))
    return celtypes.IntType(next((i for i in range(len(x) - 1, -1, -1) if x[i] == item), -1))


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> celtypes.ListType:
    found = [celtypes.StringType(m.group(0)) for m in re.finditer(_string(pattern), _string(text))]
    return celtypes.ListType(found if int(limit) < 0 else found[:int(limit)])


def _find(text: Any, pattern: Any) -> celtypes.StringType:
    m = re.search(_string(pattern), _string(text))
    return celtypes.StringType(m.group(0) if m else "")


def _split(text: Any, sep: Any, limit: Any = -1) -> celtypes.ListType:
    n = int(limit)
    if n == 0:
        return celtypes.ListType([])
    parts = _string(text).split(_string(sep), n - 1) if n > 0 else _string(text).split(_string(sep))
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType:
    s = _string(text)
    b, e = int(start), len(s) if end is None else int(end)
    if not 0 <= b <= e <= len(s):
        raise PolicyCELError(f"index out of range: {e if e > len(s) else b}")
    return celtypes.StringType(s[b:e])


def _sum(items: Any) -> Any:
    total: Any = celtypes.IntType(0)
    for i, v in enumerate(items):
        total = v if i == 0 else total + v
    return total


# An authorization question: the attributes of authorizer.Attributes (user, groups, verb, group,
# resource, subresource, namespace, name, path, resource_request); the answer is (allowed, reason).
Authorize = Callable[[dict[str, Any]], tuple[bool, str]]


class Authorizer:
    """`authorizer` (k8s.io/apiserver/pkg/cel/library/authz.go): asks the API server's authorizer
    about the request's user, or a ServiceAccount's, and what it may do."""

    def __init__(self, authorize: Authorize | None, user: Mapping[str, Any]) -> None:
        self.authorize = authorize
        self.user = user


class _Check:
    """A path or resource check being built (`authorizer.group('apps').resource('deployments')`)."""

    def __init__(self, authz: Authorizer, **fields: Any) -> None:
        self.authz = authz
        self.fields = fields

    def with_(self, key: str, value: Any) -> _Check:
        return _Check(self.authz, **{**self.fields, key: _string(value)})


class _Decision:
    def __init__(self, allowed: bool, reason: str) -> None:
        self.allowed = allowed
        self.reason = reason


def _check(check: _Check, verb: Any) -> _Decision:
    authz = check.authz
    if authz.authorize is None:
        return _Decision(False, "")
    user = authz.user
    attributes = {"user": str(user.get("username", "")), "groups": list(user.get("groups") or ()),
                  "verb": _string(verb), **check.fields}
    return _Decision(*authz.authorize(attributes))


def _service_account(authz: Authorizer, namespace: Any, name: Any) -> Authorizer:
    ns = _string(namespace)
    return Authorizer(authz.authorize, {"username": f"system:serviceaccount:{ns}:{_string(name)}",
                                        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]})


_AUTHZ_FUNCTIONS: dict[str, Any] = {
    "path": lambda a, p: _Check(a, resource_request=False, path=_string(p)),
    "group": lambda a, g: _Check(a, resource_request=True, group=_string(g)),
    "serviceAccount": _service_account,
    "resource": lambda c, v: c.with_("resource", v),
    "subresource": lambda c, v: c.with_("subresource", v),
    "namespace": lambda c, v: c.with_("namespace", v),
    "name": lambda c, v: c.with_("name", v),
    "check": _check,
    "allowed": lambda d: celtypes.BoolType(d.allowed),
    "reason": lambda d: celtypes.StringType(d.reason),
    "errored": lambda d: celtypes.BoolType(False),
    "error": lambda d: celtypes.StringType(""),
}

_FUNCTIONS: dict[str, Any] = {
    **LIBRARY_FUNCTIONS,
    **_AUTHZ_FUNCTIONS,
    "lowerAscii": lambda s: celtypes.StringType(_string(s).lower()),
    "upperAscii": lambda s: celtypes.StringType(_string(s).upper()),
    "trim": lambda s: celtypes.StringType(_string(s).strip()),
    "replace": lambda s, a, b, n=-1: celtypes.StringType(_string(s).replace(_string(a), _string(b), int(n))),
    "split": _split,
    "substring": _substring,
    "charAt": lambda s, i: celtypes.StringType(_string(s)[int(i)] if int(i) < len(_string(s)) else ""),
    "join": lambda items, sep="": celtypes.StringType(_string(sep).join(_string(x) for x in items)),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "find": _find,
    "findAll": _find_all,
    "isSorted": lambda items: celtypes.BoolType(all(a <= b for a, b in zip(items, list(items)[1:], strict=False))),
    "sum": _sum,
    "min": lambda items: min(items),
    "max": lambda items: max(items),
}
_KNOWN = set(VARIABLES) | set(_FUNCTIONS) | _TYPES | {"has"} | {
    name for name in celpy.evaluation.base_functions if name[0].isalpha()}  # size, matches, ...


@functools.cache
def _env() -> celpy.Environment:
    """Built on first use: its parser takes a noticeable part of a second to build."""
    return celpy.Environment()


def _undeclared(tree: lark.Tree, known: set[str] = _KNOWN) -> lark.Token | None:
    """The first identifier that names nothing: no variable, function, type or macro variable."""
    bound: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and str(node.children[1]) in _MACROS:
            args = node.children[2]
            if isinstance(args, lark.Tree) and args.children:
                bound.update(str(t) for t in args.children[0].scan_values(lambda v: isinstance(v, lark.Token)))
    for node in tree.iter_subtrees_topdown():
        if node.data in ("ident", "ident_arg"):
            token = node.children[0]
            if isinstance(token, lark.Token) and str(token) not in known | bound:
                return token
    return None


@functools.lru_cache(maxsize=1024)
def _compiled(expression: str) -> tuple[Any, str | None]:
    """(program, None) or (None, why it does not compile)."""
    try:
        tree = _env().compile(expression)
    except celpy.CELParseError as e:
        line, column = getattr(e, "line", None) or 1, getattr(e, "column", None) or 1
        text = expression.splitlines()[line - 1] if expression.splitlines() else ""
        return None, (f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: unexpected input\n"
                      f" | {text}\n | {'.' * (column - 1)}^")
    token = _undeclared(tree)
    if token is not None:
        return None, _undeclared_reference(token)
    return _env().program(tree, functions=_FUNCTIONS), None


def parsed(expression: str) -> lark.Tree | None:
    """The parse tree of an expression that compiles (for type checking), else None."""
    return _env().compile(expression) if _compiled(expression)[0] is not None else None


def _undeclared_reference(token: lark.Token) -> str:
    return (f"compilation failed: ERROR: <input>:{token.line}:{token.column}: undeclared reference to '{token}' "
            "(in container '')")


def compile_error(expression: str, params: bool = True) -> str | None:
    """Why `expression` cannot be stored in a policy, or None. Without `params` (a policy with no
    paramKind) the variable is not declared, as upstream compiles such a policy's expressions."""
    why = _compiled(expression)[1]
    if why is None and not params and (token := _undeclared(_env().compile(expression), _KNOWN - {"params"})):
        return _undeclared_reference(token)
    return why


def _detail(error: BaseException) -> str:
    """An evaluation error in cel-go's words where cel-python's differ."""
    text = str(error.args[0]) if error.args else str(error)
    text = text.split(" (in activation", 1)[0]
    if m := re.match(r"no such member in mapping: '(.*)'$", text):
        return f"no such key: {m[1]}"
    if "does not support field selection" in text and text.startswith("None"):
        return "no such key"  # a field of null, as cel-go reports selecting from a missing value
    return text


def evaluate(expression: str, activation: Mapping[str, Any]) -> Any:
    """The value of `expression`; a PolicyCELError, worded as upstream's filter words it, when it
    does not compile or fails while it runs."""
    program, why = _compiled(expression)
    if program is None:
        raise PolicyCELError(why)
    try:
        result = program.evaluate(dict(activation))
    except (celpy.CELEvalError, TypeError, ValueError, KeyError, ZeroDivisionError, re.error) as e:
        raise PolicyCELError(f"expression '{expression}' resulted in error: {_detail(e)}") from None
    if isinstance(result, celpy.CELEvalError):
        raise PolicyCELError(f"expression '{expression}' resulted in error: {_detail(result)}")
    return result


_TYPE_NAMES = ((celtypes.BoolType, "bool"), (celtypes.IntType, "int"), (celtypes.UintType, "uint"),
               (celtypes.DoubleType, "double"), (celtypes.StringType, "string"), (celtypes.BytesType, "bytes"),
               (celtypes.ListType, "list"), (celtypes.MapType, "map"),
               (celtypes.TimestampType, "google.protobuf.Timestamp"), (celtypes.DurationType, "google.protobuf.Duration"))


def type_name(value: Any) -> str:
    """The CEL type of a result, as cel-go names it in messages."""
    if value is None:
        return "null_type"
    return next((name for typ, name in _TYPE_NAMES if isinstance(value, typ)), type(value).__name__)


def is_bool(value: Any, expected: bool) -> bool:
    """Whether a result is the CEL boolean `expected` (not merely a value Python finds truthy)."""
    return isinstance(value, celtypes.BoolType) and bool(value) is expected


def to_cel(value: Any) -> Any:
    """A JSON value (an object, the request) as CEL sees it; null stays null."""
    return None if value is None else celpy.json_to_cel(value)


class Variables(celtypes.MapType):
    """`variables`: each of a policy's spec.variables, evaluated when an expression first reads it
    and then kept for the rest of the request (upstream's lazy composition). A variable that fails
    fails the expression that reads it."""

    def __init__(self, expressions: Iterable[tuple[str, str]], activation: Callable[[], dict[str, Any]]) -> None:
        super().__init__()
        self._expressions = dict(expressions)
        self._activation = activation
        self._values: dict[str, Any] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._expressions

    def __getitem__(self, key: Any) -> Any:
        name = str(key)
        if name not in self._expressions:
            raise KeyError(key)
        if name not in self._values:
            try:
                self._values[name] = evaluate(self._expressions[name], self._activation())
            except PolicyCELError as e:
                self._values[name] = celpy.CELEvalError(str(e), PolicyCELError, None)
        return self._values[name]
