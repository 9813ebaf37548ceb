"""`kubesched descheduler`: the descheduler's passes against a real cluster.

The policy is a descheduler/v1alpha2 DeschedulerPolicy, as for `simulate`; its
`deschedulingInterval` (absent: one pass and exit, as the descheduler without
--descheduling-interval) paces the passes. Every eviction goes through the Eviction API, so a
budget's 429 is respected and reported, never forced. `--dry-run` takes a snapshot and prints the
plan `kubesched deschedule` would print for it: which pods the next pass would evict and where
they would likely land, changing nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kubesched.input.commandline import bad_input_exits, output_console
from kubesched.runtime.observer import NullObserver

if TYPE_CHECKING:
    from kubesched.descheduler.descheduler import PassRecord

log = logging.getLogger("kubesched.live")
# What the descheduler's strategies, its evictor and its placement what-ifs read.
DESCHEDULER_KINDS = ["Node", "Pod", "Namespace", "PodDisruptionBudget", "PriorityClass", "ReplicaSet", "Deployment",
                     "StatefulSet", "ReplicationController", "DaemonSet", "Job", "Service", "PersistentVolume",
                     "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment"]


def _policy(path: str) -> dict[str, Any]:
    from kubesched.sim.runner import load

    obj = load([path]).descheduler_policy
    if obj is None:
        raise click.UsageError(f"{path}: no DeschedulerPolicy (apiVersion descheduler/v1alpha2) in it")
    return obj


@click.command("descheduler")
@click.option("--kubeconfig", default=None, metavar="FILE",
              help="The cluster (default: $KUBECONFIG, ~/.kube/config, or the pod's service account).")
@click.option("--policy", "policy_path", required=True, metavar="FILE", help="A DeschedulerPolicy.")
@click.option("--dry-run", is_flag=True, help="Print the next pass's plan from a snapshot; evict nothing.")
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", help="With --dry-run.")
def descheduler(kubeconfig: str | None, policy_path: str, dry_run: bool, output: str) -> None:
    """Run the descheduler's passes against a real cluster through the Eviction API."""
    from kubesched.live.connection import Connection

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with bad_input_exits():
        policy_obj = _policy(policy_path)
    conn = Connection(kubeconfig)
    try:
        if dry_run:
            _plan(conn, policy_obj, output)
        else:
            asyncio.run(LiveDescheduler(conn, policy_obj).run())
    finally:
        conn.close()


def _plan(conn: Any, policy_obj: dict[str, Any], output: str) -> None:
    """The plan of `kubesched deschedule`, for a snapshot taken now."""
    import json

    from kubesched.live.snapshot import render, take
    from kubesched.sim.planner import plan, render_plan
    from kubesched.sim.runner import load

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.yaml"
        path.write_text(render(take(conn, warn=lambda m: log.warning("%s", m)), "yaml"))
        scenario = load([str(path)])
    scenario.descheduler_policy = policy_obj
    result = plan(scenario, "the live cluster")
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        render_plan(result, output_console())


class PassLog(NullObserver):
    """Logs each descheduling pass as it ends: every attempt, error and the number evicted."""

    def __init__(self) -> None:
        self.count = 0

    def descheduler_pass(self, record: PassRecord) -> None:
        self.count += 1
        for a in record.attempts:
            log.info("pass %d: %s %s on %s by %s%s", record.number, a.result, a.pod, a.node, a.strategy,
                     f": {a.message}" if a.message else "")
        for error in record.errors:
            log.warning("pass %d: %s", record.number, error)
        log.info("pass %d: %d evicted", record.number, record.evicted)


class LiveDescheduler:
    def __init__(self, conn: Any, policy_obj: dict[str, Any]) -> None:
        from kubesched.descheduler.policy import load_policy
        from kubesched.live.engine import LiveEngine
        from kubesched.sim.runner import check_config

        self.engine = LiveEngine(conn, "descheduler", DESCHEDULER_KINDS)
        self.policy = load_policy(policy_obj)
        self.configs = [check_config(None, None)]
        self.stop = asyncio.Event()

    async def run(self) -> None:
        from kubesched.descheduler.descheduler import Descheduler
        from kubesched.descheduler.framework import REQUESTER

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop.set)
        engine = self.engine
        engine.sync()
        passes = PassLog()
        component = Descheduler(engine.api, engine.clock, self.policy, self.configs, observer=passes)
        component.start()
        engine.watch(loop)
        engine.driver.start()
        log.info("descheduling as %s, %s", REQUESTER,
                 f"every {self.policy.interval:g}s" if self.policy.interval > 0 else "one pass")
        while not self.stop.is_set():
            if passes.count and self.policy.interval <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=0.5)
        engine.stop()
        await engine.driver.stop()

