"""What every `kubesched` command does with bad input, warnings and JSON output, so that they all
answer alike: each problem on a line of its own on stderr and exit code 2 (never a traceback),
each warning prefixed `warning:`."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import click
import orjson

from kubesched.api.errors import InputError, Problem
from kubesched.api.features import FeatureGateError, FeatureGates

if TYPE_CHECKING:
    from rich.console import Console


@contextlib.contextmanager
def bad_input_exits() -> Iterator[None]:
    """Inside it, an InputError is told, a problem a line, and the command exits 2."""
    try:
        yield
    except InputError as e:
        fail(e.problems)


def fail(problems: Iterable[Problem]) -> NoReturn:
    for p in problems:
        click.echo(str(p), err=True)
    sys.exit(2)


def warn(warnings: Iterable[object], prefix: str = "") -> None:
    for w in warnings:
        click.echo(f"warning: {prefix}{w}", err=True)


def option(raw: str | None, name: str, parse: Callable[[str], Any]) -> Any:
    """A command-line value parsed by `parse`; a bad one is a problem named after its option."""
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError as e:
        raise InputError([Problem("command line", None, name, f"{raw!r}: {e}")]) from None


def _feature_gates(_ctx: click.Context, _param: click.Parameter, value: str | None) -> FeatureGates | None:
    if value is None:
        return None
    try:
        return FeatureGates.parse(value)
    except FeatureGateError as e:
        fail([Problem("command line", None, "--feature-gates", str(e))])


# kube-scheduler's --feature-gates, with its syntax and messages; a bad value is bad input (exit 2).
feature_gates_option = click.option(
    "--feature-gates", "feature_gates", metavar="NAME=BOOL,...", callback=_feature_gates,
    help="kube-scheduler's feature gates (e.g. DRAPrioritizedList=true); unset ones keep their v1.35 default. "
         "Overrides the Scenario's featureGates. A value other than the default is refused unless kubesched "
         "implements it.")


def results_only() -> None:
    """Called once a command's runs are over and it only reads their results: what the runs left
    (millions of long-lived objects) is frozen out of the cyclic collector's sight, which would
    otherwise walk it again while the output is built, for nothing. The command's end thaws it, so
    that a caller in the same process (a test) gets its garbage collected as usual."""
    gc.freeze()
    click.get_current_context().call_on_close(gc.unfreeze)


def echo_json(data: Any) -> None:
    """`data` as JSON laid out as `json.dumps(indent=2)` lays it out, on stdout. orjson encodes it
    piece by piece: a top-level dict key by key and a list in it item by item, so the whole text of
    a large run's results is never held at once, and a list given as an iterator is encoded as its
    items come (`to_json(stream=True)`) without being built first."""
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    write: Callable[[bytes], Any] = buffer.write if buffer is not None else lambda b: out.write(b.decode())
    if not isinstance(data, dict) or not data:
        write(_encoded(data, 0) + b"\n")
        return
    batch: list[bytes] = [b"{\n"]
    for i, (key, value) in enumerate(data.items()):
        batch.append(b'%s  %s: ' % (b",\n" if i else b"", orjson.dumps(str(key))))
        if not isinstance(value, (list, Iterator)):
            batch.append(_encoded(value, 1))
            continue
        items = iter(value)
        first = next(items, _NOTHING)
        if first is _NOTHING:
            batch.append(b"[]")
            continue
        batch.append(b"[\n    " + _encoded(first, 2))
        for item in items:
            batch.append(b",\n    " + _encoded(item, 2))
            if len(batch) >= 4096:
                write(b"".join(batch))
                batch.clear()
        batch.append(b"\n  ]")
    batch.append(b"\n}\n")
    write(b"".join(batch))
    if buffer is not None:
        buffer.flush()


_NOTHING = object()


def _encoded(value: Any, depth: int) -> bytes:
    """`value` indented by two a level, as if it stood `depth` levels down. What orjson cannot
    encode (an integer past 64 bits) the standard library does; numpy numbers are written as numbers."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except orjson.JSONEncodeError:
        text = json.dumps(value, indent=2, ensure_ascii=False).encode()
    return text.replace(b"\n", b"\n" + b"  " * depth) if depth else text


def exit_at_once(code: int) -> NoReturn:
    """End the process with `code` once its output is flushed, without freeing what the run built
    object by object: for a large run that teardown is a third of a second spent on a process that
    is ending anyway. Where stdout is not the process's own (a test's runner calling the command),
    or cannot be flushed, it exits as usual."""
    if sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def output_console() -> Console:
    """The console a command draws its tables on (stdout). On a terminal, as wide as it is (cells
    fold); piped, wide enough for any row, so that a name is never cut and a row stays one line
    that grep and awk can read."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 1 << 20)
