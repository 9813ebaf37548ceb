"""Loading a large input: how long `kubesched simulate` takes to read and check SchedulingBasic's
objects before simulating anything, from YAML and from JSON (the same objects in each)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass

import yaml

from bench.workloads import WORKLOADS
from kubesched.sim.runner import load


@dataclass
class LoadTimes:
    objects: int
    yaml_seconds: float
    json_seconds: float


def load_times(workload: str = "SchedulingBasic") -> LoadTimes:
    """Write the workload's objects as one YAML stream and as one JSON List, then time `load` of
    each; the first load also pays for importing the client's models, so it is not timed."""
    w = next(w for w in WORKLOADS if w.name == workload)
    objs = w.nodes() + w.initial() + w.measured()
    with tempfile.TemporaryDirectory() as tmp:
        yaml_path, json_path = os.path.join(tmp, "input.yaml"), os.path.join(tmp, "input.json")
        with open(yaml_path, "w") as f:
            yaml.safe_dump_all(objs, f)
        with open(json_path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
        load([json_path])
        return LoadTimes(len(objs), _timed(yaml_path), _timed(json_path))


def _timed(path: str) -> float:
    start = time.perf_counter()
    load([path])
    return time.perf_counter() - start
