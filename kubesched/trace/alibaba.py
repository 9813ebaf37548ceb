"""The Alibaba GPU cluster trace of 2023 ("openb", Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023) as a
kubesched scenario.

The trace is three CSV files: nodes (cpu, memory, GPU count and model) and pods (requests, GPU
count or GPU share, allowed GPU models, QoS class, phase, and creation, scheduled and deletion
times in seconds). Kubernetes has no GPU sharing, so the share is modelled as an extended
resource counting milli-GPUs per node; what that and the rest of the mapping cannot say is kept
in `Conversion.notes`, which the command prints and writes into the scenario. With
`gpus="dra"` GPUs are devices published in ResourceSlices and claimed through
ResourceClaimTemplates instead, and a share, which a device cannot be without DRA's alpha
consumable capacity, takes a whole GPU; with `gpus="dra-shared"` that gate is on, every GPU
allows multiple allocations of its 1000 milli-GPUs, and a share claims its part of one GPU.
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from kubesched.api.errors import InputError, Problem
from kubesched.api.loader import CDumper

NODE_FILE = "openb_node_list_all_node.csv"
POD_FILE = "openb_pod_list_{}.csv"
# Trace second 0; the trace does not say when it began, so any fixed moment serves.
EPOCH = datetime(2023, 1, 1, tzinfo=UTC)
# What the kubelet admits by default (KubeletConfiguration maxPods).
MAX_PODS = 110
GPU = "nvidia.com/gpu"
# The label NVIDIA's GPU feature discovery puts on a node; values are the trace's model names.
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
# Thousandths of a GPU; a node has 1000 per GPU. The trace's own simulator calls the quantity
# alibabacloud.com/gpu-milli, but counts it per device through a plugin; this is a plain sum.
GPU_MILLI = "kubesched.io/gpu-milli"
QOS_LABEL = "alibaba.com/qos"
NOTES_ANNOTATION = "kubesched.io/trace-notes"
NAMESPACE = "default"
# Whole GPUs as DRA devices: the driver name NVIDIA's DRA driver publishes them under.
DRA_DRIVER = "gpu.nvidia.com"
DEVICE_CLASS = DRA_DRIVER
GPU_MODELS = ("extended", "dra", "dra-shared")
# With consumable capacity: what a shared GPU publishes, in thousandths, for shares to consume.
GPU_SHARE_CAPACITY = "milli"
# The pod claim, and the request in its template, that asks for a pod's GPUs.
GPU_CLAIM = "gpus"


@dataclass(frozen=True)
class QoSClass:
    name: str
    value: int
    description: str


# Values sit in the bands of Koordinator, Alibaba's open-source colocation scheduler: production
# (9000-9999), mid (7000-7999), batch (5000-5999). LS and Guaranteed are both production and do
# not preempt each other.
QOS_CLASSES = {
    "LS": QoSClass("alibaba-ls", 9000, "Latency-sensitive production pods (trace QoS LS)."),
    "Guaranteed": QoSClass("alibaba-guaranteed", 9000, "Production pods with guaranteed resources (trace QoS Guaranteed)."),
    "Burstable": QoSClass("alibaba-burstable", 7000, "Burstable pods (trace QoS Burstable)."),
    "BE": QoSClass("alibaba-be", 5000, "Best-effort batch pods (trace QoS BE)."),
}

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


@dataclass(frozen=True)
class Options:
    """`pods`: a pod list's name in the trace directory (`default`, `gpuspec33`) or a CSV path.
    `saturated`: pods never end, as in the paper's experiments. `preempt`: whether higher classes
    preempt lower ones (default: only when saturated; the trace itself records no preemption).
    `limit`: only the first N pods (by creation time). `interval`: with `saturated`, pods arrive
    this many seconds apart in trace order instead of at their trace times (see SATURATED_INTERVAL).
    `gpus`: GPUs as the extended resources nvidia.com/gpu and milli-GPUs (`extended`), or as DRA
    devices (`dra`), where a share is rounded up to a whole GPU, or as DRA devices that shares
    split through consumable capacity (`dra-shared`)."""

    pods: str = "default"
    saturated: bool = False
    preempt: bool | None = None
    limit: int | None = None
    interval: int | None = None
    gpus: str = "extended"


# When pods never end, their arrival times only order them; spread over the trace's 149 days,
# every pod the full cluster cannot take would be retried at each 5-minute flush of the scheduling
# queue (about 43,000 of them) for nothing. One second apart keeps the trace's order and gives
# each pod its own scheduling cycle, as the paper's simulator submits them one by one.
SATURATED_INTERVAL = 1


@dataclass
class Conversion:
    objects: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    unplaceable: list[str] = field(default_factory=list)  # pods no node can hold, even an empty one
    claim_counts: set[int] = field(default_factory=set)  # with DRA, the GPU counts pods claim
    share_millis: set[int] = field(default_factory=set)  # with shared GPUs, the shares pods claim


def pod_file(directory: str, pods: str) -> str:
    return pods if pods.endswith(".csv") else os.path.join(directory, POD_FILE.format(pods))


def convert(directory: str, options: Options = Options()) -> Conversion:
    """The scenario replaying DIR's trace: a Scenario, the PriorityClasses, the nodes, the pods."""
    if options.interval is not None and not options.saturated:
        raise InputError([Problem("command line", None, "--interval", "only with --saturated: pods that end "
                                  "keep their trace times")])
    if options.gpus not in GPU_MODELS:
        raise InputError([Problem("command line", None, "--gpus", f"{options.gpus!r}: expected one of "
                                  f"{', '.join(GPU_MODELS)}")])
    dra = options.gpus != "extended"
    shared = options.gpus == "dra-shared"
    nodes = _rows(os.path.join(directory, NODE_FILE), NODE_COLUMNS)
    pods = _rows(pod_file(directory, options.pods), POD_COLUMNS)
    pods.sort(key=lambda row: _int(row, "creation_time"))  # the trace's are sorted already; keep ties in file order
    # The trace ends at its last deletion: a pod deleted then was still running (of all the pods, not the limited few).
    trace_end = max((_seconds(r, "deletion_time") or 0 for r in pods), default=0)
    if options.limit is not None:
        pods = pods[: options.limit]
    preempt = options.saturated if options.preempt is None else options.preempt
    conv = Conversion([])
    node_objs = [o for row in nodes for o in _node(row, dra, shared, conv)]
    shapes = {(_int(r, "cpu_milli"), _int(r, "memory_mib"), _int(r, "gpu"), r["model"]) for r in nodes}
    events: list[dict[str, Any]] = []
    interval = options.interval if options.interval is not None else SATURATED_INTERVAL
    pod_objs = []
    for i, row in enumerate(pods):
        arrival = i * interval if options.saturated else _int(row, "creation_time")
        pod_objs.append(_pod(row, arrival, options.saturated, dra, shared, trace_end, events, conv))
        if not _fits_somewhere(row, shapes):
            conv.unplaceable.append(row["name"])
            if not options.saturated and row["scheduled_time"] != "":
                _delete_at(row, _int(row, "deletion_time"), events)
    conv.notes = _notes(conv, options.saturated, preempt, interval, dra, shared)
    used = [q for key, q in QOS_CLASSES.items() if conv.counts[f"qos {key}"]]
    devices = [_device_class(), *(_claim_template(n) for n in sorted(conv.claim_counts)),
               *(_share_template(m) for m in sorted(conv.share_millis))] if dra else []
    conv.objects = [_scenario(options, events, conv.notes), *(_priority_class(q, preempt) for q in used),
                    *devices, *node_objs, *pod_objs]
    return conv


def _rows(path: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or ())]
            if missing:
                raise InputError([Problem(path, None, "", f"missing column(s) {', '.join(missing)}")])
            return list(reader)
    except OSError as e:
        raise InputError([Problem(path, None, "", e.strerror or str(e))]) from None


def _int(row: dict[str, str], key: str) -> int:
    try:
        return int(row[key])
    except ValueError:
        raise InputError([Problem(row.get("name") or row.get("sn") or "?", None, key,
                                  f"{row[key]!r} is not an integer")]) from None


def _seconds(row: dict[str, str], key: str) -> int | None:
    return _int(row, key) if row[key] != "" else None


def _node(row: dict[str, str], dra: bool, shared: bool, conv: Conversion) -> list[dict[str, Any]]:
    """The node and, with DRA, the ResourceSlice its GPUs are published in."""
    name, gpus, model = row["sn"], _int(row, "gpu"), row["model"]
    amounts = {"cpu": f"{_int(row, 'cpu_milli')}m", "memory": f"{_int(row, 'memory_mib')}Mi", "pods": str(MAX_PODS)}
    labels = {"kubernetes.io/hostname": name}
    slices = []
    if gpus:
        if dra:
            slices.append(_resource_slice(name, gpus, model, shared))
        else:
            amounts[GPU] = str(gpus)
            amounts[GPU_MILLI] = str(gpus * 1000)
        labels[GPU_COUNT] = str(gpus)
        if model:
            labels[GPU_PRODUCT] = model
        conv.counts["gpu nodes"] += 1
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": amounts, "allocatable": dict(amounts)}}
    return [node, *slices]


def _resource_slice(node: str, gpus: int, model: str, shared: bool) -> dict[str, Any]:
    """The node's whole GPUs as a DRA driver publishes them: one pool named after the node, in
    one slice; `shared`, each GPU can be split into shares of its 1000 milli-GPUs."""
    devices = []
    for i in range(gpus):
        attributes: dict[str, Any] = {"index": {"int": i}}
        if model:
            attributes["model"] = {"string": model}
        device: dict[str, Any] = {"name": f"gpu-{i}", "attributes": attributes}
        if shared:
            device["allowMultipleAllocations"] = True
            device["capacity"] = {GPU_SHARE_CAPACITY: {"value": "1000"}}
        devices.append(device)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRA_DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def _device_class() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DEVICE_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRA_DRIVER}'"}}]}}


def _claim_template_name(gpus: int) -> str:
    return f"gpus-{gpus}"


def _claim_template(gpus: int) -> dict[str, Any]:
    """What every pod asking for `gpus` whole GPUs claims: that many devices of the class."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": _claim_template_name(gpus), "namespace": NAMESPACE},
            "spec": {"spec": {"devices": {"requests": [
                {"name": GPU_CLAIM, "exactly": {"deviceClassName": DEVICE_CLASS, "count": gpus}}]}}}}


def _share_template_name(milli: int) -> str:
    return f"gpu-share-{milli}"


def _share_template(milli: int) -> dict[str, Any]:
    """What every pod asking for `milli` thousandths of one GPU claims: a share of one device."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": _share_template_name(milli), "namespace": NAMESPACE},
            "spec": {"spec": {"devices": {"requests": [
                {"name": GPU_CLAIM, "exactly": {"deviceClassName": DEVICE_CLASS,
                                                "capacity": {"requests": {GPU_SHARE_CAPACITY: str(milli)}}}}]}}}}


def _pod(row: dict[str, str], arrival: int, saturated: bool, dra: bool, shared: bool, trace_end: int,
         events: list[dict[str, Any]], conv: Conversion) -> dict[str, Any]:
    name, qos, phase = row["name"], row["qos"], row["pod_phase"]
    if qos not in QOS_CLASSES:
        raise InputError([Problem(name, None, "qos", f"{qos!r}: expected one of {', '.join(QOS_CLASSES)}")])
    conv.counts[f"qos {qos}"] += 1
    gpus, milli = _int(row, "num_gpu"), _int(row, "gpu_milli")
    requests = {"cpu": f"{_int(row, 'cpu_milli')}m", "memory": f"{_int(row, 'memory_mib')}Mi"}
    limits: dict[str, str] = {}
    sharing = gpus == 1 and 0 < milli < 1000
    if sharing:
        conv.counts["sharing"] += 1
    claimed = gpus if dra else 0  # whole GPUs asked for through a claim; a share takes one
    template = _claim_template_name(claimed)
    if claimed and sharing and shared:
        conv.share_millis.add(milli)
        template = _share_template_name(milli)
    elif claimed:
        conv.claim_counts.add(claimed)
    elif sharing:
        limits[GPU_MILLI] = str(milli)
    elif gpus:
        limits[GPU] = str(gpus)
        limits[GPU_MILLI] = str(gpus * 1000)
    requests.update(limits)  # extended resources cannot be overcommitted: requests equal limits
    container: dict[str, Any] = {"name": "main", "image": "trace", "resources": {"requests": requests}}
    if limits:
        container["resources"]["limits"] = limits
    if claimed:
        container["resources"]["claims"] = [{"name": GPU_CLAIM}]
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": {QOS_LABEL: qos},
                            "creationTimestamp": _stamp(arrival)}
    spec: dict[str, Any] = {"priorityClassName": QOS_CLASSES[qos].name, "restartPolicy": "Never",
                            "containers": [container]}
    if claimed:
        spec["resourceClaims"] = [{"name": GPU_CLAIM, "resourceClaimTemplateName": template}]
    models = sorted(set(filter(None, row["gpu_spec"].split("|"))))
    if models:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_PRODUCT, "operator": "In", "values": models}]}]}}}
        conv.counts["gpu_spec"] += 1
    if not saturated:
        _lifetime(row, phase, trace_end, meta, events, conv)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _lifetime(row: dict[str, str], phase: str, trace_end: int, meta: dict[str, Any],
              events: list[dict[str, Any]], conv: Conversion) -> None:
    """How long the pod runs: from when it is scheduled until the trace deleted it (run time, not
    wall-clock end: a pod our scheduler starts later ends later). A pod the trace never scheduled
    waited until its deletion and is deleted then; one still there when the trace ends never ends."""
    scheduled, deleted = _seconds(row, "scheduled_time"), _seconds(row, "deletion_time")
    if scheduled is None:
        conv.counts["never scheduled"] += 1
        if deleted is not None:
            _delete_at(row, deleted, events)
        return
    if deleted is None or deleted >= trace_end:
        conv.counts["never ended"] += 1
        return
    annotations = {"sim.kubesched.io/duration": f"{max(deleted - scheduled, 0)}s"}
    if phase == "Failed":
        annotations["sim.kubesched.io/exit-code"] = "1"
        conv.counts["failed"] += 1
    meta["annotations"] = annotations


def _delete_at(row: dict[str, str], seconds: int, events: list[dict[str, Any]]) -> None:
    events.append({"at": f"{max(seconds, _int(row, 'creation_time'))}s",
                   "delete": {"kind": "Pod", "namespace": NAMESPACE, "name": row["name"]}})


def _fits_somewhere(row: dict[str, str], shapes: set[tuple[int, int, int, str]]) -> bool:
    """Whether some node, empty, could hold the pod (gpuspec33 gives a few pods GPU models whose
    nodes are too small for them)."""
    models = set(filter(None, row["gpu_spec"].split("|")))
    cpu, memory, gpus = _int(row, "cpu_milli"), _int(row, "memory_mib"), _int(row, "num_gpu")
    return any(cpu <= c and memory <= m and gpus <= g and (not models or model in models)
               for c, m, g, model in shapes)


def _stamp(seconds: int) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _priority_class(q: QoSClass, preempt: bool) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": q.name},
            "value": q.value, "globalDefault": False, "description": q.description,
            "preemptionPolicy": "PreemptLowerPriority" if preempt else "Never"}


def _scenario(options: Options, events: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    name = "alibaba-gpu-" + os.path.basename(options.pods).removesuffix(".csv").removeprefix("openb_pod_list_")
    events.sort(key=lambda e: int(e["at"][:-1]))
    spec: dict[str, Any] = {"startTime": _stamp(0)}
    if options.gpus == "dra-shared":
        spec["featureGates"] = {"DRAConsumableCapacity": True}
    if events:
        spec["events"] = events
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario",
            "metadata": {"name": name + ("-saturated" if options.saturated else ""),
                         "annotations": {NOTES_ANNOTATION: "\n".join(notes)}},
            "spec": spec}


def _notes(conv: Conversion, saturated: bool, preempt: bool, interval: int, dra: bool, shared: bool) -> list[str]:
    """What the scenario cannot say about the trace, with how many pods it touches."""
    counts = conv.counts
    sharing = (
        f"GPU sharing: {counts['sharing']} pods ask for part of one GPU; GPUs are DRA devices of driver "
        f"{DRA_DRIVER} (a ResourceSlice per GPU node) that allow multiple allocations of their "
        f"{GPU_SHARE_CAPACITY} capacity of 1000, with DRA's alpha consumable capacity on "
        "(DRAConsumableCapacity): a share claims its thousandths of one GPU (ResourceClaimTemplates "
        "gpu-share-M), a whole GPU all of it (gpus-N), so shares are packed per GPU as the trace's own "
        "scheduler packs them."
    ) if shared else (
        f"GPU sharing: {counts['sharing']} pods ask for part of one GPU; GPUs are DRA devices of driver "
        f"{DRA_DRIVER} (a ResourceSlice per GPU node, ResourceClaimTemplates gpus-N), which cannot be shared "
        "without DRA's alpha consumable capacity, so a share takes a whole GPU: placements are pessimistic."
    ) if dra else (
        f"GPU sharing: {counts['sharing']} pods ask for part of one GPU; every GPU pod requests {GPU_MILLI} "
        f"(1000 per GPU on a node), so shares are summed per node. Which GPU a share sits on is lost: "
        "a node fits a share or a whole GPU whenever its total is free, as if shares could always be "
        "packed onto as few GPUs as possible, so per-GPU fragmentation (the trace paper's subject) "
        "never shows and placements are optimistic.")
    notes = [
        sharing,
        "QoS classes are PriorityClasses (LS and Guaranteed 9000, Burstable 7000, BE 5000, preemptionPolicy "
        f"{'PreemptLowerPriority' if preempt else 'Never'}); what they mean at run time (CPU "
        "overcommit of best-effort pods, isolation) is not modelled.",
        "GPU models are the trace's own (anonymised) names in the node label "
        f"{GPU_PRODUCT}; a pod's gpu_spec is required node affinity on it.",
    ]
    if dra and preempt:
        notes.append("Preemption never frees a GPU: the scheduler's DRA rejections are unresolvable, as upstream's.")
    if saturated:
        notes.append(f"Saturated: pods never end and none is deleted; they arrive {interval}s apart in the trace's "
                     "order, and its times and phases are not used.")
    else:
        notes += [
            "Durations are the trace's deletion minus scheduled times, counted from when this scheduler "
            "starts the pod; the trace scheduler's own delays are not replayed.",
            f"{counts['failed']} pods the trace records as Failed exit with code 1 at the end of their "
            "duration (restartPolicy Never); pods it deleted while Running end Succeeded.",
            f"{counts['never scheduled']} pods the trace never scheduled are deleted at their trace deletion "
            "time; this scheduler may run them meanwhile.",
            f"{counts['never ended']} pods still running when the trace ends never end.",
        ]
    if conv.unplaceable:
        shown = ", ".join(conv.unplaceable[:10]) + (", ..." if len(conv.unplaceable) > 10 else "")
        fate = "stay pending" if saturated else "are deleted at their trace deletion time (else the scheduler " \
            "would retry them at every pod's end for the rest of the trace)"
        notes.append(f"{len(conv.unplaceable)} pods fit no node of their allowed GPU models even on an empty "
                     f"cluster ({shown}); they {fate}.")
    return notes


def dump(conv: Conversion, path: str) -> None:
    """Write the scenario: a JSON List for `.json` (the fastest to load), else multi-document YAML
    with the notes as a leading comment."""
    with open(path, "w") as f:
        if path.endswith(".json"):
            json.dump({"apiVersion": "v1", "kind": "List", "items": conv.objects}, f, separators=(",", ":"))
            f.write("\n")
            return
        f.write("# Alibaba GPU trace (Weng et al., USENIX ATC 2023) converted by `kubesched trace alibaba-gpu`.\n")
        f.write("# What the scenario cannot express:\n")
        for note in conv.notes:
            f.write(f"# - {note}\n")
        yaml.dump_all(conv.objects, f, Dumper=CDumper, sort_keys=False, default_flow_style=None, width=1 << 16)
