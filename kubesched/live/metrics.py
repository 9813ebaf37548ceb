"""The live scheduler's Prometheus metrics, named, labelled and bucketed as kube-scheduler v1.35's,
and the small HTTP server that exposes them on /metrics beside /healthz.

Dashboards and alerts written for kube-scheduler match on these names, label values and `le`
bounds, so they follow pkg/scheduler/metrics and client-go's leader-election metric exactly,
HELP texts with component-base's stability prefix included. kube-scheduler serves them over HTTPS
on 10259; we serve plain HTTP on the port the command is given.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.exposition import generate_latest

from kubesched.runtime.observer import NullObserver

# kube-scheduler exposes no `_created` series; prometheus_client only turns them off process-wide.
disable_created_metrics()

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_PORT = 10259
RESULTS = ("scheduled", "unschedulable", "error")
QUEUES = ("active", "backoff", "unschedulable", "gated")
MAX_ATTEMPTS_LABEL = 15  # the SLI histogram's attempts label is capped at "15+"

# prometheus_client writes integral bounds as "64.0"; Go's client writes "64", and le matchers are exact.
_INTEGRAL_LE = re.compile(r'le="(\d+)\.0"')


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Upper bounds start, start*factor, ... (`count` of them), multiplied step by step as Go's
    ExponentialBuckets does so the floats, and hence the printed bounds, are the same."""
    bounds = [start]
    for _ in range(count - 1):
        bounds.append(bounds[-1] * factor)
    return bounds


class SchedulerMetrics(NullObserver):
    """kube-scheduler's metrics on a registry of their own; the scheduler reports through the
    methods below and never touches prometheus_client."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._attempts = Counter(
            "scheduler_schedule_attempts_total",
            "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.", ["result", "profile"], registry=r)
        self._attempt_latency = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)", ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._algorithm_latency = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds", "[ALPHA] Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._e2e = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
            "might involve multiple scheduling attempts.", ["attempts"],
            buckets=exponential_buckets(0.01, 2, 20), registry=r)
        self._pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts", "[STABLE] Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5), registry=r)
        self._pending = Gauge(
            "scheduler_pending_pods",
            "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
            "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
            "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of "
            "unschedulable pods that the scheduler never attempted to schedule because they are gated.",
            ["queue"], registry=r)
        self._preemption_attempts = Counter(
            "scheduler_preemption_attempts_total", "[STABLE] Total preemption attempts in the cluster till now",
            registry=r)
        self._victims = Histogram(
            "scheduler_preemption_victims", "[STABLE] Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7), registry=r)
        self._leader = Gauge(
            "leader_election_master_status",
            "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by "
            "name.", ["name"], registry=r)
        self.pending(0, 0, 0, 0)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended (`seconds` covers the algorithm and, when scheduled, binding)."""
        if result not in RESULTS:
            raise ValueError(f"unknown scheduling result {result!r}; expected one of {RESULTS}")
        self._attempts.labels(result, profile).inc()
        self._attempt_latency.labels(result, profile).observe(seconds)

    def algorithm(self, seconds: float) -> None:
        """The scheduling algorithm (filter and score) ran for `seconds` in one attempt."""
        self._algorithm_latency.observe(seconds)

    def pod_scheduled(self, attempts: int, seconds: float) -> None:
        """A pod was bound after `attempts` attempts, `seconds` after it first entered the queue."""
        self._pod_attempts.observe(attempts)
        label = f"{MAX_ATTEMPTS_LABEL}+" if attempts >= MAX_ATTEMPTS_LABEL else str(attempts)
        self._e2e.labels(label).observe(seconds)

    def pending(self, active: int, backoff: int, unschedulable: int, gated: int) -> None:
        """The scheduling queue's current lengths."""
        for queue, count in zip(QUEUES, (active, backoff, unschedulable, gated), strict=True):
            self._pending.labels(queue).set(count)

    def preemption(self, victims: int | None) -> None:
        """A preemption attempt ran (PostFilter); `victims` is how many pods the chosen candidate
        evicts, None when no candidate was found (upstream then observes no victims)."""
        self._preemption_attempts.inc()
        if victims is not None:
            self._victims.observe(victims)

    def preempted(self, record: Mapping[str, Any]) -> None:
        """The schedulers' Observer report of a preemption (the rest they report is not a metric)."""
        self.preemption(len(record["victims"]))

    def leader(self, is_leader: bool, name: str = "kube-scheduler") -> None:
        """Whether this replica holds the lease `name` (client-go sets 0 when a candidate starts)."""
        self._leader.labels(name).set(1 if is_leader else 0)

    def render(self) -> bytes:
        return render(self.registry)


def render(registry: CollectorRegistry) -> bytes:
    """The registry in the Prometheus text format 0.0.4."""
    return _INTEGRAL_LE.sub(r'le="\1"', generate_latest(registry).decode()).encode()


def make_app(registry: CollectorRegistry, healthy: Callable[[], bool]) -> web.Application:
    """/metrics and /healthz; /healthz answers as kube-scheduler's: `ok`, or 500 when a check fails."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=render(registry), headers={"Content-Type": CONTENT_TYPE})

    async def healthz(_: web.Request) -> web.Response:
        if healthy():
            return web.Response(text="ok", headers={"X-Content-Type-Options": "nosniff"})
        return web.Response(text="healthz check failed\n", status=500,
                            headers={"X-Content-Type-Options": "nosniff"})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    return app


async def serve_health_and_metrics(host: str, port: int, registry: CollectorRegistry,
                                   healthy: Callable[[], bool]) -> web.AppRunner:
    """Serve /metrics and /healthz on host:port in the running event loop; `await runner.cleanup()` stops it."""
    runner = web.AppRunner(make_app(registry, healthy), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


class BackgroundServer:
    """serve_health_and_metrics on an event loop of its own in a daemon thread, for the commands
    that run synchronously (the official client is blocking)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry, healthy: Callable[[], bool]) -> None:
        self._args = (host, port, registry, healthy)
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="metrics-server", daemon=True)

    def start(self) -> BackgroundServer:
        """Bind and start serving; a bind failure (port in use) is raised here."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(serve_health_and_metrics(*self._args), self._loop)
        try:
            self._runner = future.result(timeout=30)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
            raise
        return self

    @property
    def port(self) -> int:
        """The bound port (the one chosen when started with port 0)."""
        assert self._runner is not None
        return self._runner.addresses[0][1]

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
