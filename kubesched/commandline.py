"""What every `kubesched` command does with bad input, warnings and JSON output, so that they all
answer alike: each problem on a line of its own on stderr and exit code 2 (never a traceback),
each warning prefixed `warning:`."""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

import click

from kubesched.api.errors import InputError, Problem


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


def results_only() -> None:
    """Called once a command's runs are over and it only reads their results: what the runs left
    (millions of long-lived objects) is frozen out of the cyclic collector's sight, which would
    otherwise walk it again while the output is built, for nothing. The command's end thaws it, so
    that a caller in the same process (a test) gets its garbage collected as usual."""
    gc.freeze()
    click.get_current_context().call_on_close(gc.unfreeze)


def echo_json(data: Any) -> None:
    """`data` as indented JSON on stdout, written in batches of the encoder's pieces as they come:
    the whole text of a large run's results (and the list of pieces that would make it, several
    times its size) is never held at once."""
    pieces = json.JSONEncoder(indent=2).iterencode(data)
    while batch := list(itertools.islice(pieces, 8192)):
        sys.stdout.write("".join(batch))
    sys.stdout.write("\n")


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
