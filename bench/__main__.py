"""`make bench`: scheduling throughput of the scheduler_perf workloads; never part of `make test`."""

from __future__ import annotations

import argparse
import compileall
import math
import os
import resource
import time

from rich.console import Console
from rich.table import Table

from bench.descheduler import run_pass
from bench.endtoend import end_to_end_table, scale_table
from bench.loading import load_times
from bench.serve_load import serve_and_create_pods, serve_and_load
from bench.timeline import timeline_table
from bench.workloads import WORKLOADS, Workload
from kubesched.cluster.cluster import Cluster


def run(w: Workload) -> tuple[int, float, int, int]:
    cluster = Cluster()
    for obj in w.nodes():
        cluster.create(obj)
    for obj in w.initial():
        cluster.create(obj)
    cluster.run()
    measured = w.measured()
    names = {obj["metadata"]["name"] for obj in measured}
    start = time.perf_counter()
    for obj in measured:
        cluster.create(obj)
    cluster.run()
    elapsed = time.perf_counter() - start
    scheduled = sum(1 for h in cluster.recorder.pods.values()
                    if h.obj["spec"].get("nodeName") and h.obj["metadata"]["name"] in names)
    return scheduled, elapsed, len(measured), len(cluster.recorder.preemptions)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("names", nargs="*", help="workloads to run (default: all; Descheduler for the pass, Serve for the API server load, "
                        "Loading for reading a large input, EndToEnd, Timeline and Scale for runs of the CLI)")
    args = parser.parse_args()
    # The runs of the CLI are timed as an installed kubesched runs: pip byte-compiles what it
    # installs, while an editable checkout is compiled on each run when PYTHONDONTWRITEBYTECODE is
    # set (as in a container image often), about half a second that no user pays.
    compileall.compile_dir(os.path.join(os.path.dirname(__file__), "..", "kubesched"), quiet=1)
    console = Console()
    if not console.is_terminal:  # a log file: room for every column rather than rich's 80
        console.width = 160
    def progress(what: str) -> None:
        console.print(f"[dim]running {what} ...[/dim]")

    # The runs of the CLI come first: a child's peak RSS counts the process it was forked from, so
    # they start while this one is small, before the workloads run in it below grow it.
    for name, make in (("EndToEnd", end_to_end_table), ("Timeline", timeline_table), ("Scale", scale_table)):
        if not args.names or name in args.names:
            console.print(make(progress))
    if not args.names or "Trace" in args.names:
        from bench.trace import replay_times

        replays = Table(title="Trace replay: Alibaba GPU trace 2023 (Weng et al., ATC'23), 1523 nodes, 8152 pods")
        for col in ("variant", "convert s", "replay s (wall)", "replay s (CPU)", "target s", "completed"):
            replays.add_column(col, justify="right")
        targets = {"plain": 5, "gpuspec33": 10, "saturated": 60}  # none yet for dra
        for r in replay_times():
            replays.add_row(r.variant, f"{r.convert_seconds:.1f}", f"{r.replay_seconds:.1f}", f"{r.cpu_seconds:.1f}",
                            str(targets.get(r.variant, "-")), "yes" if r.ok else "no")
        console.print(replays)
    table = Table(title="scheduler_perf workloads")
    table.add_column("workload", no_wrap=True)
    for col in ("measured pods", "scheduled", "preemptions", "seconds", "pods/s", "k8s CI threshold",
                "peak RSS so far"):
        table.add_column(col, justify="right")
    for w in WORKLOADS:
        if args.names and w.name not in args.names:
            continue
        scheduled, elapsed, total, preemptions = run(w)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        table.add_row(w.name, str(total), str(scheduled), str(preemptions), f"{elapsed:.1f}", f"{scheduled / elapsed:.0f}",
                      str(w.threshold or "-"), f"{rss} MiB")
    if table.row_count:
        console.print(table)
    if not args.names or "Descheduler" in args.names:
        passes = Table(title="Descheduler: one pass after a scale-up (pass: process CPU)")
        for col in ("nodes", "pods", "evicted", "refused by budgets", "pass seconds", "replacements placed in"):
            passes.add_column(col, justify="right")
        rows = [run_pass(0.5), run_pass(1.0)]
        for r in rows:
            passes.add_row(str(r.nodes), str(r.pods), str(r.evicted), str(r.refused), f"{r.pass_seconds:.2f}",
                           f"{r.replacements_seconds:.2f} s")
        small, large = rows
        passes.caption = (f"growth: n^{math.log(large.pass_seconds / small.pass_seconds) / math.log(large.nodes / small.nodes):.2f}"
                          " (n: nodes and pods, scaled together)")
        console.print(passes)
    if not args.names or "Loading" in args.names:
        times = load_times()
        loading = Table(title="Loading SchedulingBasic's objects (parse and validate)")
        for col in ("objects", "YAML seconds", "JSON seconds"):
            loading.add_column(col, justify="right")
        loading.add_row(str(times.objects), f"{times.yaml_seconds:.2f}", f"{times.json_seconds:.2f}")
        console.print(loading)
    if not args.names or "Serve" in args.names:
        load = serve_and_load()
        served = Table(title="kubesched serve: ConfigMaps, 50 clients on loopback (SQLite, durable when acknowledged)")
        for col in ("writes", "watchers", "seconds", "writes/s", "p50 ms", "p99 ms", "lost", "duplicated"):
            served.add_column(col, justify="right")
        served.add_row(str(load.writes), str(load.watchers), f"{load.seconds:.1f}", f"{load.throughput:.0f}",
                       f"{load.percentile(50):.1f}", f"{load.percentile(99):.1f}", str(load.missing),
                       str(load.duplicated))
        console.print(served)
        created = Table(title="kubesched serve: pods created on 50 nodes (SQLite, durable when acknowledged)")
        for col in ("writers", "pods", "creates/s", "p50 ms", "p99 ms", "all Running s", "server CPU ms/pod",
                    "watchers", "events/watcher", "lost", "duplicated"):
            created.add_column(col, justify="right")
        pods = serve_and_create_pods()
        created.add_row("32 keep-alive (aiohttp)", str(pods.created), f"{pods.throughput:.0f}",
                        f"{pods.percentile(50):.1f}", f"{pods.percentile(99):.1f}", f"{pods.running_seconds:.1f}",
                        f"{pods.server_cpu / pods.created * 1000:.2f}", str(pods.watchers), str(pods.events),
                        str(pods.missing), str(pods.duplicated + pods.out_of_order + pods.diverged))
        pods = serve_and_create_pods(pods=2000, official=True)
        created.add_row("4 processes (official client)", str(pods.created), f"{pods.throughput:.0f}",
                        f"{pods.percentile(50):.1f}", f"{pods.percentile(99):.1f}", "-",
                        f"{pods.server_cpu / pods.created * 1000:.2f}", "0", "-", "-", "-")
        console.print(created)


if __name__ == "__main__":
    main()
