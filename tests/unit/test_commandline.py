"""`echo_json` writes what `json.dumps(indent=2)` would, byte for byte, whether the long lists come
as lists or as iterators (the CLI streams a large run's pods and events that way)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from kubesched.input.commandline import echo_json

CASES: list[Any] = [
    {"time": 12.5, "pods": [{"name": "a", "nodeName": None, "deleted": False, "conditions": []}],
     "nodes": [], "events": [{"time": 0.0, "message": 'quote " and \\ and\nnewline'}], "summary": {"counts": {}}},
    {"nested": {"a": [1, [2, [3, {}]]], "b": {"c": {"d": [None, True, 1e-05, -3]}}}, "empty": {}},
    {"big": 2**70, "list": [2**65, 1]},  # past what orjson encodes
    {},
    [],
    [1, {"a": [2]}],
    "text",
    None,
]


@pytest.mark.parametrize("data", CASES)
def test_output_is_the_standard_indented_json(data: Any, capsys: pytest.CaptureFixture[str]) -> None:
    echo_json(data)
    out = capsys.readouterr().out
    assert json.loads(out) == data
    if not _has_float_exponent(data):
        assert out == json.dumps(data, indent=2) + "\n"


def test_iterators_are_written_as_the_lists_they_yield(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"name": f"p{i}", "phase": "Running"} for i in range(10_000)]
    echo_json({"pods": iter(rows), "events": iter(()), "summary": {"pods": len(rows)}})
    assert capsys.readouterr().out == json.dumps({"pods": rows, "events": [], "summary": {"pods": 10_000}},
                                                 indent=2) + "\n"


def test_text_beyond_ascii_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    data = {"message": "nœud « gpu-ü » 节点"}
    echo_json(data)
    assert json.loads(capsys.readouterr().out) == data


def _has_float_exponent(data: Any) -> bool:
    """Floats written with an exponent are spelled differently (1e-05 and 0.00001), the same number."""
    return "e-" in json.dumps(data) or "e+" in json.dumps(data)


def test_numpy_numbers_are_written_as_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    echo_json({"utilization": {"average": np.float64(0.375), "nodes": np.int64(3)}})
    assert json.loads(capsys.readouterr().out) == {"utilization": {"average": 0.375, "nodes": 3}}
