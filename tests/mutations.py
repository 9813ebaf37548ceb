"""A small mutation fuzzer for kubesched's input: valid scenarios, made wrong the ways people (and
exports) make them wrong.

`mutate(docs, choose)` changes a few places of a list of YAML documents: a value of another type
(string, integer, list, mapping, null), huge or negative numbers, quantities and durations such as
`1e400`, absurd times (year 99999), a deleted field, deep nesting, a misspelt or unknown field.
`choose(n)` picks one of n options, so hypothesis (which shrinks what it drew) and a seeded
`random.Random` drive the same mutations.

Run directly for a long exploratory run outside the test suite; each case is loaded, validated and
simulated in-process with a short `until` under a wall-clock alarm, and every input that ends in
anything but InputError or a finished run is written out for the regression corpus:

    .venv/bin/python tests/mutations.py --cases 5000 --out /tmp/crashes
"""

from __future__ import annotations

import argparse
import copy
import glob
import os
import random
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
Choose = Callable[[int], int]

# Replacement values, by what they try: the wrong type, out-of-range numbers, text that is almost a
# quantity, a duration or a time, and shapes nobody expects.
STRANGE_VALUES: list[Any] = [
    None, "", "x", "-", "%", "0", "-1", 0, 1, -1, -(2**31) - 1, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1,
    10**30, 10**400, 1.5, -0.5, 1e308, float("inf"), float("-inf"), float("nan"), True, False,
    "1e400", "1e18", "-1e400", "9223372036854775807", "1e-400", "0.000000001m", "99999999999Ei", "1.5x",
    "1Ki1",
    "100%", "101%", "-5%", "1e400%", "1e400s", "99999999999h", "-5m", "0.5ns", "2562048h", "1m1m",
    "99999-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:00",
    "2026-01-01T00:00:00+99:00", "not-a-time", "a/b/c", "UPPER", "x" * 300, "\n", "*", ":", "default/",
    [], [None], ["x"], [1, "two", None], [[]], {}, {"": ""}, {"x": None}, {"name": 5}, {"matchLabels": "x"},
]
KEYS = ["name", "kind", "apiVersion", "metadata", "spec", "status", "containers", "resources", "requests",
        "cpu", "memory", "nodeName", "at", "until", "replicas", "selector", "template", "x-unknown"]


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document (mapping keys and list indexes), the root included, down to a
    depth real objects have (deeper ones are a mutation's nesting)."""
    found = [path]
    if len(path) > 30:
        return found
    if isinstance(value, dict):
        for k, v in value.items():
            found += _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _places(v, (*path, i))
    return found


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _nest(value: Any, depth: int, choose: Choose) -> Any:
    for _ in range(depth):
        value = [value] if choose(2) else {"a": value}
    return value


# Values of the same kind as the one replaced, at the edges of what is valid: these get past
# validation and into the simulation.
EDGE_INTS = [0, 1, 2**31 - 1, 2**63 - 1, 10**6]
EDGE_AMOUNTS = ["9223372036854775807", "9223372036854775807m", "8Ei", "9E", "0", "1n", "999999999999999",
                "2562047h", "2562047h47m16s", "876000h", "100y", "0s", "1ns", "100%", "0%"]
EDGE_TIMES = ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z",
              "2026-01-01T00:00:00.999999Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
              "2026-01-01T00:00:00.123456789+05:30", "2026-01-01T00:00:00-23:59", "2026-01-01 00:00:00Z",
              "2026-01-01T00:00Z", "20260101T000000Z", "2026-01-01T00:00:00,5Z", "9999-12-31T23:00:00-23:59"]


def _edge(old: Any, choose: Choose) -> Any:
    """A value of the same kind as `old`, at an edge of what is valid."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return EDGE_INTS[choose(len(EDGE_INTS))]
    if isinstance(old, str) and old[:1].isdigit():
        edges = EDGE_TIMES if "T" in old and ":" in old else EDGE_AMOUNTS
        return edges[choose(len(edges))]
    return old


def _mutant(old: Any, choose: Choose) -> Any:
    """A new value for a place that held `old`."""
    how = choose(10)
    if how >= 8:
        return _edge(old, choose)
    if how == 0 and isinstance(old, (int, float)) and not isinstance(old, bool):
        huge = old * 10**400 if isinstance(old, int) else old * 1e300
        return [old * 10**12, -old, old + 2**63, huge][choose(4)]
    if how == 1 and isinstance(old, str):
        return [old + "x", old * 50, "-" + old, old + "e400", old.upper(), old[:-1], ""][choose(7)]
    if how == 2:
        return _nest(old, [3, 60, 400][choose(3)], choose)
    if how == 3 and isinstance(old, dict) and old:
        return [old, [old], list(old.values())][choose(3)]
    if how == 4 and isinstance(old, list) and old:
        return [old * 3, old[0], {str(i): v for i, v in enumerate(old)}][choose(3)]
    # A copy: later mutations of the same case edit values in place, and the shared list must stay
    # as it is for the next example (hypothesis replays a case and expects the same draws).
    return copy.deepcopy(STRANGE_VALUES[choose(len(STRANGE_VALUES))])


def mutate(docs: list[Any], choose: Choose, count: int) -> list[Any]:
    """`count` mutations of (a deep copy of) `docs`, each at a place chosen anew."""
    docs = copy.deepcopy(docs)
    for _ in range(count):
        doc = choose(len(docs))
        places = _places(docs[doc])
        path = places[choose(len(places))]
        if not path:
            docs[doc] = _mutant(docs[doc], choose)
            continue
        parent, last = _get(docs[doc], path[:-1]), path[-1]
        action = choose(5)
        if action == 0 and isinstance(parent, dict):
            del parent[last]  # a required field, maybe
        elif action == 1 and isinstance(parent, dict):
            misspelt = KEYS[choose(len(KEYS))] if choose(2) else last + "x"
            parent[misspelt] = parent.pop(last)
        elif action == 2 and isinstance(parent, list):
            parent.append(parent[last])  # a duplicate item
        else:
            parent[last] = _mutant(parent[last], choose)
    return docs


def sources() -> list[tuple[str, list[Any]]]:
    """The valid inputs mutated: each scenario, and each example directory's files as one input."""
    found = [(p, _documents(p)) for p in sorted(glob.glob(str(ROOT / "tests" / "scenarios" / "*.yaml")))]
    for directory in sorted(glob.glob(str(ROOT / "examples" / "*" / ""))):
        docs = [d for p in sorted(glob.glob(directory + "*.yaml")) for d in _documents(p)]
        if docs:
            found.append((directory, docs))
    return found


def _documents(path: str) -> list[Any]:
    return list(yaml.load_all(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def dump(docs: list[Any]) -> str:
    """The YAML a user would have written; PyYAML's writer recurses, so deep nesting needs room here
    (kubesched then reads it at the usual recursion limit)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return yaml.safe_dump_all(docs, sort_keys=False, width=4096)
    finally:
        sys.setrecursionlimit(limit)


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout


def run_case(path: str, seconds: int, until: float | None) -> str | None:
    """Load, validate and (when valid) simulate one file in-process; None if that went as it must,
    else what went wrong (a traceback, or a run that did not end within `seconds` of wall time)."""
    from kubesched.api.errors import InputError
    from kubesched.sim.runner import load, simulate

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        scenario = load([path])
        if until is not None:
            scenario.until = until if scenario.until is None else min(scenario.until, until)
        simulate(scenario)
    except InputError as e:
        if not e.problems or not all(p.source and p.message for p in e.problems):
            return f"InputError without a source and message: {e.problems!r}"
    except _Timeout:
        return f"did not end within {seconds}s"
    except Exception:  # noqa: BLE001 - every other exception is what the fuzzer looks for
        return traceback.format_exc()
    finally:
        signal.alarm(0)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--until", type=float, default=None,
                        help="virtual seconds each run may last at most (default: as long as its input asks)")
    parser.add_argument("--timeout", type=int, default=60, help="wall-clock seconds each case may take")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "kubesched-fuzz"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    inputs = sources()
    failures: dict[str, int] = {}
    for case in range(args.cases):
        name, docs = inputs[rng.randrange(len(inputs))]
        text = dump(mutate(docs, rng.randrange, 1 + rng.randrange(3)))
        path = os.path.join(args.out, f"case-{args.seed}-{case}.yaml")
        Path(path).write_text(text)
        failure = run_case(path, args.timeout, args.until)
        if failure is None:
            os.remove(path)
            continue
        last = failure.strip().splitlines()[-1]
        failures[last] = failures.get(last, 0) + 1
        print(f"{path} (from {os.path.relpath(name, ROOT)}): {last}", flush=True)
    print(f"{args.cases} cases, {sum(failures.values())} failures, {len(failures)} distinct", file=sys.stderr)
    for last, n in sorted(failures.items(), key=lambda kv: -kv[1]):
        print(f"{n:5}  {last}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
