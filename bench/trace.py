"""Replaying the Alibaba GPU trace (Weng et al., USENIX ATC 2023): `kubesched trace alibaba-gpu`
then `kubesched simulate`, each variant in its own process, as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

TRACE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "alibaba-gpu-v2023")
# name, the converter's options
VARIANTS = (("plain", ()), ("gpuspec33", ("--pods", "gpuspec33")), ("saturated", ("--saturated",)),
            ("dra", ("--gpus", "dra")))


@dataclass
class Replay:
    variant: str
    convert_seconds: float
    replay_seconds: float  # wall time of `kubesched simulate`, loading included
    cpu_seconds: float  # user + system time of that process
    ok: bool


def replay_times(variants: tuple[str, ...] = (), directory: str = TRACE_DIR, timeout: float = 1800) -> list[Replay]:
    """Convert and replay each variant (all by default); a replay that fails or outlasts `timeout`
    is reported with ok False and the time it took."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in VARIANTS:
            if variants and name not in variants:
                continue
            scenario = os.path.join(tmp, f"{name}.json")
            convert = _timed([sys.executable, "-m", "kubesched.commands.cli", "trace", "alibaba-gpu", directory, "-o", scenario,
                              *options], timeout)
            replay = _timed([sys.executable, "-m", "kubesched.commands.cli", "simulate", scenario, "-o", "json"], timeout)
            out.append(Replay(name, convert[0], replay[0], replay[1], convert[2] and replay[2]))
    return out


def _timed(command: list[str], timeout: float) -> tuple[float, float, bool]:
    """Wall seconds, CPU seconds and success of `command`, its output discarded."""
    before = os.times()
    start = time.perf_counter()
    try:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        ok = done.returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), ok
