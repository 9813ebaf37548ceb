"""Bad input never gives a traceback (issue 12, "Bad input found by fuzzing").

Two nets: the regression corpus (tests/fuzz_corpus/, each file a minimised reproducer of a crash
that fuzzing found, its header saying which) run through the CLI as a user runs it, and a
hypothesis property driving random mutations of the valid inputs (tests/mutations.py, which also
runs long exploratory fuzzing outside the suite) through the loader and the validator.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import mutations
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.errors import InputError
from kubesched.input.scenario import Scenario
from kubesched.sim.runner import load

CORPUS = Path(__file__).parent / "fuzz_corpus"
REPRODUCERS = sorted(p.name for p in CORPUS.glob("*.yaml"))
# Reproducers that are good input once nulls are read as unset: they run; every other one is refused.
RUNS = {"pod-nulls-are-unset.yaml", "pod-spread-constraint-nulls.yaml", "patch-null-container-status.yaml",
        "scheduler-nulls-are-unset.yaml", "scheduler-resource-spec-nulls.yaml", "bound-pods-sum-past-int64.yaml",
        "no-nodes-pod.yaml", "no-nodes-deployment.yaml", "time-epoch-9999-runs-to-the-end.yaml",
        "time-zones-and-fractions.yaml", "deployment-complete-once-never-times-out.yaml"}
# "<file> doc <n>: <field path>: <message>", "<file>: <message>", or kubectl's line for no objects.
PROBLEM = re.compile(r"^[\w.-]+\.yaml( doc \d+)?: .+$|^error: no objects passed$")
TIME_LIMIT = 60  # seconds of wall time for one reproducer, generous for a loaded machine: each takes ~1 s


def _simulate(name: str) -> subprocess.CompletedProcess[str] | None:
    """The CLI on one reproducer; None if it did not end within TIME_LIMIT."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    try:
        return subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", name], cwd=CORPUS, env=env,
                              capture_output=True, text=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture(scope="module")
def corpus_runs() -> dict[str, subprocess.CompletedProcess[str] | None]:
    """Every reproducer, a few at a time: each is mostly interpreter start-up."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(REPRODUCERS, pool.map(_simulate, REPRODUCERS), strict=True))


@pytest.mark.parametrize("name", REPRODUCERS)
def test_reproducer_ends_cleanly(corpus_runs: dict[str, subprocess.CompletedProcess[str] | None],
                                 name: str) -> None:
    proc = corpus_runs[name]
    assert proc is not None, f"{name} did not end within {TIME_LIMIT}s"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode in (0, 1, 2)
    if name in RUNS:
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 2 and proc.stdout == "", "bad input: nothing runs"
    lines = proc.stderr.splitlines()
    assert lines and all(PROBLEM.match(line) for line in lines), proc.stderr


SOURCES = mutations.sources()


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_inputs_load_or_are_refused(data: st.DataObject) -> None:
    """Any mutation of a valid input either loads as a Scenario or is refused with problems that
    each name a source and say what is wrong; no other exception escapes the loader and validator."""
    _name, docs = data.draw(st.sampled_from(SOURCES))
    mutated = mutations.mutate(docs, lambda n: data.draw(st.integers(0, n - 1)), data.draw(st.integers(1, 3)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "fuzz.yaml")
        path.write_text(mutations.dump(mutated))
        try:
            scenario = load([str(path)])
        except InputError as e:
            assert e.problems
            assert all(p.source and p.message and len(str(p).splitlines()) == 1 for p in e.problems)
        else:
            assert isinstance(scenario, Scenario)
