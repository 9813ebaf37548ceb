"""What users see of evictions and drains: the Disruptions, Eviction requests and Drain sections,
--explain on an evicted pod, and the JSON keys tools read."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.commands.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
EVICTIONS = str(SCENARIOS / "eviction-api-pdb.yaml")
DRAIN = str(SCENARIOS / "drain-basic.yaml")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["simulate", *args], env={"COLUMNS": "250"})
    return result.exit_code, result.output


def test_table_lists_disruptions_and_every_eviction_answer() -> None:
    code, out = run(EVICTIONS, "--explain", "default/web-2")
    assert code == 0
    disruptions = out[out.index("Disruptions"):out.index("Eviction requests")]
    assert "default/web-1" in disruptions and "EvictionAPI" in disruptions and "Eviction API: evicting" in disruptions
    requests = out[out.index("Eviction requests"):out.index("Timeline")]
    assert "200 evicted (budget web-pdb)" in requests
    assert "429 Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web-pdb " \
           "needs 2 healthy pods and has 3 currently" in requests
    assert "default/web-2 was removed from n1 at 50s: EvictionAPI" in out
    assert "eviction asked by scenario at 10s: refused 429" in out


def test_drain_log_and_json() -> None:
    code, out = run(DRAIN)
    assert code == 0
    assert "Drain of n1: Drained" in out and "node/n1 cordoned" in out and "node/n1 drained" in out
    code, out = run(DRAIN, "--output", "json")
    data = json.loads(out)
    [drain] = data["drains"]
    assert (drain["node"], drain["status"], drain["started"], drain["finished"]) == ("n1", "Drained", 10.0, 55.0)
    assert drain["evicted"] == ["default/bare", "default/scratch", "default/slow"]
    assert {(d["pod"], d["cause"], d["time"]) for d in data["disruptions"]} == {
        ("default/bare", "Drained", 10.0), ("default/scratch", "Drained", 10.0), ("default/slow", "Drained", 10.0)}
    assert {e["requester"] for e in data["evictions"]} == {"drain/n1"}
    assert all(e["code"] == 200 for e in data["evictions"])
    assert [p for p in data["pods"] if p["name"] == "slow"][0]["reason"] == "Drained"
