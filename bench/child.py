"""Running `kubesched simulate` in a child process and reading what it cost: wall time, CPU time
and peak RSS from the child's own rusage (os.wait4: RUSAGE_CHILDREN for that one child, so a
large run before it does not mask a smaller one's peak)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KUBESCHED = str(Path(sys.executable).with_name("kubesched"))


@dataclass
class ChildRun:
    seconds: float  # wall
    cpu: float  # user + system
    rss_mib: int  # peak resident set
    returncode: int
    results: dict[str, Any]  # what `-o json` printed


def write_input(objs: list[dict[str, Any]], path: str) -> None:
    """One JSON List: the faster of the two formats `simulate` reads."""
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)


def simulate(objs: list[dict[str, Any]], *args: str) -> ChildRun:
    """`kubesched simulate FILE -o json` over `objs`, timed from process start to exit."""
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "input.json"), os.path.join(tmp, "results.json")
        write_input(objs, inp)
        with open(out, "w") as stdout:
            start = time.perf_counter()
            proc = subprocess.Popen([KUBESCHED, "simulate", inp, "-o", "json", *args], stdout=stdout)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        with open(out) as f:
            text = f.read()
    return ChildRun(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, proc.returncode,
                    json.loads(text) if text else {})
