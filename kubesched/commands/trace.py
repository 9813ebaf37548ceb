"""`kubesched trace`: production traces converted into scenarios `kubesched simulate` replays."""

from __future__ import annotations

import click
from rich.console import Console

from kubesched.input.commandline import bad_input_exits


@click.group()
def trace() -> None:
    """Convert a production trace into a scenario for `kubesched simulate`."""


@trace.command("alibaba-gpu", short_help="The Alibaba GPU trace of 2023 (Weng et al., ATC'23) as a scenario.")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--output", "-o", "output", required=True, metavar="FILE",
              help="Scenario to write: .json (fastest to load) or multi-document .yaml.")
@click.option("--pods", default="default", show_default=True, metavar="NAME|FILE",
              help="Pod list: default, gpuspec33 (openb_pod_list_NAME.csv in DIRECTORY), or a CSV path.")
@click.option("--saturated", is_flag=True,
              help="Pods never end (the paper's setting): the workload is offered until the cluster is full.")
@click.option("--preempt/--no-preempt", default=None,
              help="Whether higher QoS classes preempt lower ones (default: only with --saturated).")
@click.option("--interval", type=click.IntRange(min=0), metavar="SECONDS",
              help="With --saturated: seconds between arrivals, in trace order (default 1).")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Only the first N pods (by creation time).")
@click.option("--gpus", type=click.Choice(["extended", "dra", "dra-shared"]), default="extended", show_default=True,
              help="Whole GPUs as the extended resource nvidia.com/gpu, or as DRA devices in ResourceSlices "
                   "that pods claim through ResourceClaimTemplates; dra-shared: GPU shares split a device "
                   "(consumable capacity, alpha gate DRAConsumableCapacity on).")
def alibaba_gpu(directory: str, output: str, pods: str, saturated: bool, preempt: bool | None,
                interval: int | None, limit: int | None, gpus: str) -> None:
    """Convert the Alibaba GPU trace of 2023 in DIRECTORY (Weng et al., USENIX ATC 2023) into a
    scenario: nodes with their GPUs and models, pods with their requests, creation times and
    durations, QoS classes as PriorityClasses, GPU shares as milli-GPUs. What the scenario cannot
    express is printed here and written into it.

    Exit codes: 0 written, 2 bad input.
    """
    from kubesched.trace.alibaba import Options, convert, dump

    err = Console(stderr=True)
    with bad_input_exits():
        conv = convert(directory, Options(pods=pods, saturated=saturated, preempt=preempt, limit=limit,
                                          interval=interval, gpus=gpus))
    dump(conv, output)
    kinds = {k: sum(1 for o in conv.objects if o["kind"] == k) for k in ("Node", "Pod", "PriorityClass", "ResourceSlice")}
    slices = f", {kinds['ResourceSlice']} resource slices" if kinds["ResourceSlice"] else ""
    err.print(f"wrote {output}: {kinds['Node']} nodes, {kinds['Pod']} pods, {kinds['PriorityClass']} priority classes"
              f"{slices}", markup=False, highlight=False, soft_wrap=True)
    err.print("not expressed:", markup=False, highlight=False)
    for note in conv.notes:
        err.print(f"- {note}", markup=False, highlight=False, soft_wrap=True)
