"""A snapshot of a healthy cluster simulates as that cluster behaves (issue 12): nothing moved,
evicted, preempted, deleted or rejected, and what was off in the export said in a warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

EXPORT = Path(__file__).parent / "scenarios" / "snapshot-realistic-export.yaml"


def test_a_realistic_export_runs_for_an_hour_without_anything_moving() -> None:
    proc = subprocess.run([sys.executable, "-m", "kubesched.commands.cli", "simulate", str(EXPORT), "-o", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    result = json.loads(proc.stdout)
    assert result["time"] == 3600
    assert result["rejected"] == []
    assert not result.get("disruptions") and not result.get("evictions") and not result.get("preemptions")
    exported = {(p["metadata"]["namespace"], p["metadata"]["name"]): p
                for p in next(yaml.safe_load_all(EXPORT.read_text()))["items"] if p["kind"] == "Pod"}
    got = {(p["namespace"], p["name"]): p for p in result["pods"]}
    assert got.keys() == exported.keys()
    for key, pod in exported.items():
        assert (got[key]["nodeName"], got[key]["phase"], got[key]["deleted"]) == (
            pod["spec"]["nodeName"], pod["status"]["phase"], False), key
    assert result["warnings"] == [
        "Pod/shop/web-5d9c7b8f4-aaaaa: kept running as exported, though admission would refuse it today: "
        'pod rejected: RuntimeClass "gvisor" not found']
    assert proc.stderr.startswith("warning: Pod/shop/web-5d9c7b8f4-aaaaa: kept running as exported")
