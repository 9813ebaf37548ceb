"""The live scheduler's /metrics as a Prometheus scraper and a kube-scheduler dashboard read it:
kube-scheduler's names, types, label values and bucket bounds; and /healthz."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.live.metrics import BackgroundServer, SchedulerMetrics, serve_health_and_metrics

ATTEMPT_BOUNDS = ["0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "0.512",
                  "1.024", "2.048", "4.096", "8.192", "16.384", "+Inf"]
SLI_BOUNDS = ["0.01", "0.02", "0.04", "0.08", "0.16", "0.32", "0.64", "1.28", "2.56", "5.12", "10.24", "20.48",
              "40.96", "81.92", "163.84", "327.68", "655.36", "1310.72", "2621.44", "5242.88", "+Inf"]
VICTIM_BOUNDS = ["1", "2", "4", "8", "16", "32", "64", "+Inf"]
POD_ATTEMPT_BOUNDS = ["1", "2", "4", "8", "16", "+Inf"]


def _samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _bounds(text: str, series: str, **labels: str) -> list[str]:
    """The `le` values of one histogram's buckets, as written (dashboards match them as strings)."""
    out = []
    for line in text.splitlines():
        if line.startswith(series + "_bucket{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            out.append(line.split('le="', 1)[1].split('"', 1)[0])
    return out


def _scheduled_run() -> SchedulerMetrics:
    m = SchedulerMetrics()
    m.attempt("scheduled", "default-scheduler", 0.003)
    m.attempt("scheduled", "default-scheduler", 0.02)
    m.attempt("unschedulable", "default-scheduler", 0.5)
    m.attempt("error", "batch", 0.001)
    m.algorithm(0.002)
    m.pod_scheduled(1, 0.015)
    m.pod_scheduled(3, 2.0)
    m.pod_scheduled(40, 100.0)
    m.pending(active=3, backoff=2, unschedulable=1, gated=4)
    m.preemption(victims=2)
    m.preemption(victims=70)
    m.preemption(victims=None)  # attempted, no candidate: counted, no victims observed
    m.leader(True)
    return m


def test_names_types_and_help_are_kube_schedulers() -> None:
    text = _scheduled_run().render().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {name: f.type for name, f in families.items()} == {
        "scheduler_schedule_attempts": "counter",
        "scheduler_scheduling_attempt_duration_seconds": "histogram",
        "scheduler_scheduling_algorithm_duration_seconds": "histogram",
        "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
        "scheduler_pod_scheduling_attempts": "histogram",
        "scheduler_pending_pods": "gauge",
        "scheduler_preemption_attempts": "counter",
        "scheduler_preemption_victims": "histogram",
        "leader_election_master_status": "gauge",
    }
    assert "# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods, by the result." in text
    assert "# HELP scheduler_pod_scheduling_sli_duration_seconds [BETA] E2e latency for a pod being scheduled" in text
    assert "# HELP leader_election_master_status [ALPHA] Gauge of if the reporting system is master" in text
    assert "_created" not in text  # kube-scheduler has no creation-time series


def test_values_and_labels() -> None:
    s = _samples(_scheduled_run().render().decode())

    def get(series: str, **labels: str) -> float:
        return s[(series, frozenset(labels.items()))]

    assert get("scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler") == 2
    assert get("scheduler_schedule_attempts_total", result="unschedulable", profile="default-scheduler") == 1
    assert get("scheduler_schedule_attempts_total", result="error", profile="batch") == 1
    assert get("scheduler_scheduling_attempt_duration_seconds_bucket", result="scheduled",
               profile="default-scheduler", le="0.004") == 1
    assert get("scheduler_scheduling_attempt_duration_seconds_count", result="scheduled",
               profile="default-scheduler") == 2
    assert get("scheduler_scheduling_attempt_duration_seconds_sum", result="scheduled",
               profile="default-scheduler") == pytest.approx(0.023)
    assert get("scheduler_scheduling_algorithm_duration_seconds_count") == 1
    # The SLI histogram is split by attempts, capped at "15+".
    assert get("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 1
    assert get("scheduler_pod_scheduling_sli_duration_seconds_bucket", attempts="3", le="2.56") == 1
    assert get("scheduler_pod_scheduling_sli_duration_seconds_bucket", attempts="3", le="1.28") == 0
    assert get("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="15+") == 1
    assert get("scheduler_pod_scheduling_attempts_bucket", le="2") == 1
    assert get("scheduler_pod_scheduling_attempts_bucket", le="16") == 2
    assert get("scheduler_pod_scheduling_attempts_count") == 3
    assert {q: get("scheduler_pending_pods", queue=q) for q in ("active", "backoff", "unschedulable", "gated")} == {
        "active": 3, "backoff": 2, "unschedulable": 1, "gated": 4}
    assert get("scheduler_preemption_attempts_total") == 3
    assert get("scheduler_preemption_victims_count") == 2
    assert get("scheduler_preemption_victims_bucket", le="2") == 1
    assert get("scheduler_preemption_victims_bucket", le="64") == 1  # 70 victims land in [64, +Inf)
    assert get("leader_election_master_status", name="kube-scheduler") == 1


def test_bucket_bounds_are_written_as_go_writes_them() -> None:
    text = _scheduled_run().render().decode()
    assert _bounds(text, "scheduler_scheduling_attempt_duration_seconds", result="error") == ATTEMPT_BOUNDS
    assert _bounds(text, "scheduler_scheduling_algorithm_duration_seconds") == ATTEMPT_BOUNDS
    assert _bounds(text, "scheduler_pod_scheduling_sli_duration_seconds", attempts="1") == SLI_BOUNDS
    assert _bounds(text, "scheduler_pod_scheduling_attempts") == POD_ATTEMPT_BOUNDS
    assert _bounds(text, "scheduler_preemption_victims") == VICTIM_BOUNDS


def test_fresh_registry_shows_empty_queues_and_no_leader_series() -> None:
    m = SchedulerMetrics()
    s = _samples(m.render().decode())
    assert s[("scheduler_pending_pods", frozenset({("queue", "gated")}))] == 0
    assert not [k for k in s if k[0] == "leader_election_master_status"]
    m.leader(False)  # a candidate that has not acquired yet reports 0, as client-go does at start
    m.pending(1, 0, 0, 0)
    m.pending(0, 0, 0, 0)  # queue gauges follow the latest lengths, not a sum
    s = _samples(m.render().decode())
    assert s[("leader_election_master_status", frozenset({("name", "kube-scheduler")}))] == 0
    assert s[("scheduler_pending_pods", frozenset({("queue", "active")}))] == 0
    with pytest.raises(ValueError, match="unknown scheduling result"):
        m.attempt("bound", "default-scheduler", 0.1)


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def test_background_server_serves_metrics_and_health() -> None:
    m = _scheduled_run()
    state = {"healthy": True}
    server = BackgroundServer("127.0.0.1", 0, m.registry, lambda: state["healthy"]).start()
    port = server.port
    try:
        base = f"http://127.0.0.1:{port}"
        code, ctype, body = _get(base + "/metrics")
        assert code == 200 and ctype == "text/plain; version=0.0.4; charset=utf-8"
        assert 'scheduler_pending_pods{queue="gated"} 4.0' in body
        m.pending(0, 0, 0, 9)  # each scrape reads the current values
        assert 'scheduler_pending_pods{queue="gated"} 9.0' in _get(base + "/metrics")[2]
        assert _get(base + "/healthz")[::2] == (200, "ok")
        state["healthy"] = False
        code, _, body = _get(base + "/healthz")
        assert code == 500 and "healthz check failed" in body
        assert _get(base + "/nope")[0] == 404
        # The port is taken while this server runs: a second one fails to start, loudly.
        with pytest.raises(OSError):
            BackgroundServer("127.0.0.1", port, m.registry, lambda: True).start()
    finally:
        server.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # stopped: nothing listens any more


def test_serve_in_a_running_event_loop() -> None:
    async def scrape() -> tuple[int, str, int]:
        m = SchedulerMetrics()
        m.attempt("scheduled", "default-scheduler", 0.01)
        runner = await serve_health_and_metrics("127.0.0.1", 0, m.registry, lambda: True)
        port = runner.addresses[0][1]
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/metrics") as r:
                    metrics = (r.status, await r.text())
                async with session.get(f"http://127.0.0.1:{port}/healthz") as r:
                    health = r.status
        finally:
            await runner.cleanup()
        return metrics[0], metrics[1], health

    code, body, health = asyncio.run(scrape())
    assert code == 200 and health == 200
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in body
