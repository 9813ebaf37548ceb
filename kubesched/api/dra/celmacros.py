"""The macros of DRA's CEL environment that cel-python does not expand, run on its parse tree.

v1.35's base environment loads cel-go's two-variable comprehensions (`all`, `exists`,
`existsOne` with an index or key and a value; `transformList`, `transformMap`,
`transformMapEntry`), the lists extension's `sortBy`, the optional types' `optMap` and
`optFlatMap`, and `existsOne(x, ...)`, cel-go's newer spelling of `exists_one`. cel-go expands each into a comprehension when it parses; here an evaluator runs
them directly, with the same results and errors: a list is walked as (index, element), a map as
(key, value); `all` is false as soon as one element is false and an error only when none is,
`exists` the reverse; `existsOne` and the transforms evaluate every element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from kubesched.api.dra.cellib import NONE, LibraryError, Optional

# The two-variable macros and how many arguments each takes after its two variables.
TWO_VARIABLE = {"all": (1,), "exists": (1,), "existsOne": (1,), "exists_one": (1,), "transformList": (1, 2),
                "transformMap": (1, 2), "transformMapEntry": (1, 2)}
_COMPARABLE = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType, celtypes.BoolType, celtypes.StringType,
               celtypes.BytesType, celtypes.TimestampType, celtypes.DurationType)


def variable(node: Any) -> str | None:
    """The name a macro argument binds, when it is a plain identifier."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type == "IDENT":
        return str(node)
    return None


def macro_of(tree: lark.Tree) -> tuple[str, list[Any]] | None:
    """(name, argument trees) when a member call is one of the macros here."""
    name = str(tree.children[1])
    args_node = tree.children[2] if len(tree.children) > 2 else None
    args = list(args_node.children) if isinstance(args_node, lark.Tree) else []
    if name in TWO_VARIABLE and len(args) - 2 in TWO_VARIABLE[name] and variable(args[0]) and variable(args[1]):
        return name, args
    if name in ("sortBy", "optMap", "optFlatMap", "existsOne") and len(args) == 2 and variable(args[0]):
        return name, args
    return None


def _error(message: str, tree: lark.Tree) -> CELEvalError:
    return CELEvalError(message, LibraryError, (message,), tree=tree)


def _pairs(target: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(target, celtypes.MapType):
        return iter(target.items())
    return ((celtypes.IntType(i), v) for i, v in enumerate(target))


class MacroEvaluator(celpy.evaluation.Evaluator):
    """cel-python's evaluator with the macros above."""

    def sub_evaluator(self, ast: lark.Tree) -> celpy.evaluation.Evaluator:
        return MacroEvaluator(ast, self.activation)

    def charge(self, cost: int) -> None:
        """A macro's own work at run time, which only an evaluator keeping a budget counts."""

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        found = macro_of(tree)
        if found is None:
            return super().member_dot_arg(tree)
        name, args = found
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        try:
            if name in ("optMap", "optFlatMap"):
                return self._optional(name, target, args)
            if not isinstance(target, (celtypes.ListType, celtypes.MapType)):
                return _error(f"no such overload: {name}", tree)
            if name == "sortBy":
                return self._sort_by(target, args, tree)
            if len(args) == 2:  # existsOne(x, p): cel-go's newer spelling of exists_one
                holds = self._bound([variable(args[0]) or ""], args[1])
                return celtypes.BoolType(sum(1 for x in target if bool(holds(x))) == 1)
            return self._two_variable(name, target, args, tree)
        except CELEvalError as e:
            return e

    # cel-go's optional selection and index (celparse): an absent field, key or index is none,
    # and once an operand is optional every later selection or index of it is optional too.
    def member_dot_opt(self, tree: lark.Tree) -> Any:
        return self._maybe(tree, self.visit(tree.children[0]), celtypes.StringType(str(tree.children[1])))

    def member_index_opt(self, tree: lark.Tree) -> Any:
        return self._maybe(tree, self.visit(tree.children[0]), self.visit(tree.children[1]))

    optional_member_dot = member_dot_opt
    optional_member_index = member_index_opt

    def _maybe(self, tree: lark.Tree, target: Any, key: Any) -> Any:
        for value in (target, key):
            if isinstance(value, CELEvalError):
                return value
        if isinstance(target, Optional):
            if not target.present:
                return NONE
            target = target.value
        if isinstance(target, celtypes.MapType):
            try:
                return Optional(target[key], True)  # (device.attributes gives an unknown domain as {})
            except KeyError:
                return NONE
        if isinstance(target, celtypes.ListType) and isinstance(key, int) and not isinstance(key, bool):
            return Optional(target[key], True) if 0 <= key < len(target) else NONE
        return _error(f"no such overload: {type(target).__name__}[?{type(key).__name__}]", tree)

    def _bound(self, names: list[str], body: lark.Tree) -> Callable[..., Any]:
        evaluator = self.sub_evaluator(body)
        return lambda *values: evaluator.evaluate(dict(zip(names, values, strict=True)))

    def _two_variable(self, name: str, target: Any, args: list[Any], tree: lark.Tree) -> Any:
        names = [variable(args[0]) or "", variable(args[1]) or ""]
        body = [self._bound(names, a) for a in args[2:]]
        if name in ("all", "exists"):
            decisive = name == "exists"  # the value that settles it: true for exists, false for all
            error: CELEvalError | None = None
            for key, value in _pairs(target):
                try:
                    if bool(body[0](key, value)) == decisive:
                        return celtypes.BoolType(decisive)
                except CELEvalError as e:
                    error = error or e
            if error is not None:
                return error
            return celtypes.BoolType(not decisive)
        pairs = [(k, v) for k, v in _pairs(target) if len(body) == 1 or bool(body[0](k, v))]
        if name in ("existsOne", "exists_one"):
            return celtypes.BoolType(sum(1 for k, v in pairs if bool(body[-1](k, v))) == 1)
        if name == "transformList":
            return celtypes.ListType([body[-1](k, v) for k, v in pairs])
        out = celtypes.MapType({})
        for key, value in pairs:
            entries = {key: body[-1](key, value)} if name == "transformMap" else body[-1](key, value)
            if not isinstance(entries, celtypes.MapType | dict):
                return _error("no such overload: cel.@mapInsert", tree)
            for k, v in entries.items():
                if k in out:
                    return _error("insert failed: key " + str(k) + " already exists", tree)
                out[k] = v
        return out

    def _sort_by(self, target: Any, args: list[Any], tree: lark.Tree) -> Any:
        """The lists extension's sortBy: the elements ordered by their keys, which must all be of
        one comparable type."""
        key_of = self._bound([variable(args[0]) or ""], args[1])
        items = list(target)
        keys = [key_of(item) for item in items]
        if not keys:
            return celtypes.ListType([])
        if not isinstance(keys[0], _COMPARABLE):
            return _error("list elements must be comparable", tree)
        if any(type(k) is not type(keys[0]) for k in keys):
            return _error("list elements must have the same type", tree)
        # the lists extension's tracker: n² comparisons of the keys, 2 each (2.1 for strings)
        self.charge(int(len(keys) ** 2 * (2.1 if isinstance(keys[0], (str, bytes)) else 2.0)) + 11)
        order = sorted(range(len(items)), key=lambda i: keys[i])
        return celtypes.ListType([items[i] for i in order])

    def _optional(self, name: str, target: Any, args: list[Any]) -> Any:
        """optMap: optional.of(body) with the value bound, none stays none; optFlatMap: the body
        is itself an optional."""
        if not isinstance(target, Optional):
            raise _error(f"no such overload: {name}", args[0])
        if not target.present:
            return NONE
        result = self._bound([variable(args[0]) or ""], args[1])(target.value)
        return Optional(result, True) if name == "optMap" else result
