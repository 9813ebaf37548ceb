"""Parsing a selector: cel-python's grammar, and cel-go's optional syntax when one uses it.

v1.35's base environment enables cel-go's optional types, whose syntax cel-python's grammar
lacks: `m.?f` and `m[?k]` read a field or key that may be absent, giving an optional value
(none when it is), and a selection or index on an optional value keeps it optional
(`m.?f.g` is none when `f` is absent). An expression is parsed with cel-python's own parser;
only one it refuses that has `.?` or `[?` in it is parsed again with the grammar extended by the
two forms, so that every other expression costs no second parser.

After that parse, a plain selection or index whose operand is optional is renamed
(`optional_member_dot`, `optional_member_index`) so the evaluator chains it without a check on
every selection.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy.celparser import CELParseError, CELParser

_OPTIONAL_SYNTAX = re.compile(r"\.\s*\?|\[\s*\?")
_MEMBER = "member         : member_dot | member_dot_arg | member_index | member_object | primary"
OPTIONAL_NODES = frozenset({"member_dot_opt", "member_index_opt", "optional_member_dot", "optional_member_index"})


@functools.cache
def _optional_parser() -> lark.Lark:
    """cel-python's grammar with `member "." "?" IDENT` and `member "[" "?" expr "]"`, built with
    cel-python's parser settings."""
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    if _MEMBER not in grammar:
        raise RuntimeError("cel-python's grammar changed: its member rule is not where DRA's parser extends it")
    grammar = grammar.replace(_MEMBER, _MEMBER.replace("| primary", "| member_dot_opt | member_index_opt | primary")
                              + '\nmember_dot_opt : member "." "?" IDENT\nmember_index_opt : member "[" "?" expr "]"')
    return lark.Lark(grammar, parser="lalr", start="expr", g_regex_flags=re.M,
                     lexer_callbacks={"IDENT": CELParser.ambiguous_literals}, propagate_positions=True,
                     maybe_placeholders=False, priority="invert")


def parse(environment: celpy.Environment, text: str) -> lark.Tree:
    """The parse tree of `text`; a CELParseError, cel-python's, when neither grammar takes it."""
    try:
        return environment.compile(text)
    except CELParseError as e:
        if not _OPTIONAL_SYNTAX.search(text):
            raise
        original = e
    try:
        tree = _optional_parser().parse(text)
    except lark.exceptions.LarkError:
        raise original from None
    _chain(tree)
    return tree


def _chain(tree: lark.Tree) -> None:
    """Rename the selections and indexes of an optional operand, innermost first."""
    for node in tree.iter_subtrees():  # bottom-up
        if node.data in ("member_dot", "member_index") and _optional(node.children[0]):
            node.data = lark.Token("RULE", f"optional_{node.data}")


def _optional(node: Any) -> bool:
    while isinstance(node, lark.Tree) and node.data == "member" and len(node.children) == 1:
        node = node.children[0]
    return isinstance(node, lark.Tree) and node.data in OPTIONAL_NODES
