"""`kubesched scheduler`: kubesched's scheduler scheduling a real cluster's pods.

It schedules the pods whose `spec.schedulerName` its profiles name (`kubesched` by default, so
it runs beside kube-scheduler), with the same queue, plugins and preemption as `simulate`, bound
through `pods/binding`, nominated and marked through `pods/status`, victims deleted with their
grace period, and events written as kube-scheduler writes them (events.k8s.io/v1). With
`--leader-elect`, replicas take a coordination.k8s.io Lease and only its holder schedules;
SIGTERM releases it. `/metrics` and `/healthz` are served on `--port`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import socket
import sys
import threading
from typing import Any

import click

from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.input.commandline import bad_input_exits, feature_gates_option

log = logging.getLogger("kubesched.live")

DEFAULT_SCHEDULER = "kubesched"
# What the scheduler's plugins read (each an informer).
SCHEDULER_KINDS = ["Node", "Pod", "Namespace", "PodDisruptionBudget", "PriorityClass", "Service", "ReplicaSet",
                   "StatefulSet", "ReplicationController", "PersistentVolume", "PersistentVolumeClaim",
                   "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment", "ResourceClaim", "ResourceSlice",
                   "DeviceClass"]


def _configs(path: str | None) -> list[Any]:
    from kubesched.sim.runner import check_config, load

    if path is None:
        return [check_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                              "profiles": [{"schedulerName": DEFAULT_SCHEDULER}]}, None)]
    scenario = load([path])
    if not scenario.scheduler_configs:
        raise click.UsageError(f"{path}: no KubeSchedulerConfiguration in it")
    return [check_config(lo.obj, lo) for lo in scenario.scheduler_configs]


@click.command("scheduler")
@click.option("--kubeconfig", default=None, metavar="FILE",
              help="The cluster (default: $KUBECONFIG, ~/.kube/config, or the pod's service account).")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help="A KubeSchedulerConfiguration; default: one profile, schedulerName kubesched.")
@click.option("--leader-elect/--no-leader-elect", default=False,
              help="Take a coordination.k8s.io Lease first, so that only one replica schedules.")
@click.option("--lease-name", default=DEFAULT_SCHEDULER, show_default=True)
@click.option("--lease-namespace", default="kube-system", show_default=True)
@click.option("--lease-duration", default=15.0, show_default=True, type=float)
@click.option("--renew-deadline", default=10.0, show_default=True, type=float)
@click.option("--retry-period", default=2.0, show_default=True, type=float)
@click.option("--host", default="0.0.0.0", show_default=True, help="Where /metrics and /healthz listen.")
@click.option("--port", default=10259, show_default=True, type=int, help="Port for /metrics and /healthz (0: off).")
@feature_gates_option
def scheduler(kubeconfig: str | None, config_path: str | None, leader_elect: bool, lease_name: str,
              lease_namespace: str, lease_duration: float, renew_deadline: float, retry_period: float, host: str,
              port: int, feature_gates: FeatureGates | None) -> None:
    """Schedule a real cluster's pods with kubesched's scheduler (pods naming it in schedulerName)."""
    from kubesched.live.connection import Connection

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with bad_input_exits():
        configs = _configs(config_path)
    conn = Connection(kubeconfig)
    identity = f"{socket.gethostname()}_{os.getpid()}_{random.getrandbits(32):08x}"
    runner = LiveScheduler(conn, configs, identity, feature_gates or DEFAULT_FEATURE_GATES)
    election = None
    if leader_elect:
        election = dict(namespace=lease_namespace, name=lease_name, lease_duration=lease_duration,
                        renew_deadline=renew_deadline, retry_period=retry_period)
    asyncio.run(runner.run(election, host, port))


class LiveScheduler:
    def __init__(self, conn: Any, configs: list[Any], identity: str,
                 feature_gates: FeatureGates = DEFAULT_FEATURE_GATES) -> None:
        from kubesched.live.engine import LiveEngine
        from kubesched.live.metrics import SchedulerMetrics

        self.conn = conn
        self.configs = configs
        self.identity = identity
        self.feature_gates = feature_gates
        # DeviceTaintRules are read only with their gate on: a cluster serves them only then.
        rules = ["DeviceTaintRule"] if feature_gates.enabled("DRADeviceTaintRules") else []
        self.engine = LiveEngine(conn, DEFAULT_SCHEDULER, [*SCHEDULER_KINDS, *rules])
        self.metrics = SchedulerMetrics()
        self.schedulers: list[Any] = []
        self.leading = threading.Event()
        self.stop = asyncio.Event()

    def _start_scheduling(self) -> None:
        """Caches synced (and the lease held): the schedulers start from the whole cluster."""
        from kubesched.scheduler.scheduler import Scheduler

        engine = self.engine
        engine.sync()
        self.schedulers = [Scheduler(engine.api, engine.clock, cfg, random.getrandbits(32), observer=self.metrics,
                                     features=self.feature_gates) for cfg in self.configs]
        for s in self.schedulers:
            s.metrics = self.metrics
            s.start()
        engine.watch(asyncio.get_running_loop())
        engine.driver.start()
        asyncio.get_running_loop().create_task(self._gauges())
        log.info("scheduling pods of %s", ", ".join(sorted({n for s in self.schedulers for n in s.profiles})))

    async def _gauges(self) -> None:
        """The queue gauges (preemptions are told to the metrics as they happen)."""
        while not self.stop.is_set():
            totals: dict[str, int] = {}
            for s in self.schedulers:
                for where, n in s.queue.pending().items():
                    totals[where] = totals.get(where, 0) + n
            self.metrics.pending(**totals)
            await asyncio.sleep(1)

    async def run(self, election: dict[str, Any] | None, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop.set)
        elector = None
        if election is not None:
            from kubesched.live.leaderelection import LeaderElector

            elector = LeaderElector(self.conn.client, identity=self.identity, **election)
        site = None
        if port:
            from kubesched.live.metrics import serve_health_and_metrics

            # Unhealthy once leadership has lapsed without being given up (upstream's check).
            site = await serve_health_and_metrics(host, port, self.metrics.registry,
                                                  elector.healthy if elector is not None else lambda: True)
        stop_election = threading.Event()
        lost = False
        if elector is None or election is None:
            self._start_scheduling()
        else:
            self.metrics.leader(False, name=election["name"])

            def started() -> None:
                self.metrics.leader(True, name=election["name"])
                loop.call_soon_threadsafe(self._start_scheduling)

            def stopped() -> None:
                # Leadership lost: another replica may be scheduling now; upstream exits here.
                nonlocal lost
                self.metrics.leader(False, name=election["name"])
                if not stop_election.is_set():
                    log.error("leader election lost")
                    lost = True
                    loop.call_soon_threadsafe(self.stop.set)

            thread = threading.Thread(target=elector.run, args=(started, stopped, stop_election), daemon=True)
            thread.start()
        await self.stop.wait()
        log.info("stopping")
        stop_election.set()
        self.engine.stop()
        await self.engine.driver.stop()
        if election is not None:
            thread.join(timeout=10)
        if site is not None:
            await site.cleanup()
        self.conn.close()
        if lost:
            sys.exit(1)
