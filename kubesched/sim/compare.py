"""`kubesched compare`: the same input run under two or more KubeSchedulerConfigurations, and what
differs — where pods land, which stay pending, what gets preempted, how evenly the nodes are
loaded and how fragmented their free room is.

Each `--config` file replaces every KubeSchedulerConfiguration of the input, so each run is the
input's own cluster, timeline and seed under one configuration; nothing else changes between runs.
The measures are taken when each run ends:

- utilisation spread, per resource: the mean and (population) standard deviation over nodes of
  requested / allocatable, and the number of nodes used (holding a pod no DaemonSet owns);
- fragmentation, per resource R: of the free R (allocatable - requested, summed over schedulable
  nodes), the share a pod of the workload asking for R could not use because it no longer fits on
  the node holding it — any of its requests, or the pod count — averaged over the workload's pod
  shapes weighted by how many pods have each (the idea of Alibaba's FGD, on requests only; taints
  and affinity are not considered). 0 % means any such pod could use all the free R; 100 % that
  none of it is usable by any of them.
- devices (Dynamic Resource Allocation), per driver: published and allocated, and of the free
  devices the share on nodes with fewer free devices of that driver than the largest number a
  pod of the workload asks for through its claims (each request's `count`; the driver as its
  class's selector names it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from kubesched.api.duration import format_duration
from kubesched.api.errors import InputError, Problem
from kubesched.api.objects import controller_of, get_condition
from kubesched.api.quantity import format_amount, format_memory, resource_amount
from kubesched.api.resources import pod_requests

if TYPE_CHECKING:
    from kubesched.api.features import FeatureGates
    from kubesched.api.loader import LoadedObject
    from kubesched.cluster.recorder import PodHistory
    from kubesched.input.scenario import Scenario
    from kubesched.scheduler.types import NodeInfo
    from kubesched.sim.runner import SimResult

BASE_RESOURCES = ("cpu", "memory")
# Allocatable entries that are not room for requests worth measuring here.
_NOT_MEASURED = {"pods", "ephemeral-storage"}


@dataclass
class Run:
    """One configuration's run: `label` names it in every output (the --config file's name)."""

    label: str
    config: str
    result: SimResult


# --- input --------------------------------------------------------------------------------------------

def labels(paths: list[str]) -> list[str]:
    """Each run is named by its file's name; by the path as given when two names clash, and
    numbered when the same path is given twice."""
    names = [os.path.basename(p) for p in paths]
    chosen = [n if names.count(n) == 1 else p for n, p in zip(names, paths, strict=True)]
    seen: Counter[str] = Counter()
    unique = []
    for label in chosen:
        seen[label] += 1
        unique.append(label if chosen.count(label) == 1 else f"{label} #{seen[label]}")
    return unique


def load_config(path: str, strict: bool = False) -> tuple[list[LoadedObject], list[Problem]]:
    """The KubeSchedulerConfiguration documents of a --config file and its warnings, validated
    exactly as those inside a scenario are; a file with anything else in it is refused, as the runs
    must differ in their scheduler configuration only."""
    from kubesched.sim.runner import load

    loaded = load([path], strict=strict)
    others = len(loaded.objects) + len(loaded.actions) + sum(
        x is not None for x in (loaded.kubelet_config, loaded.descheduler_policy, loaded.scenario_origin))
    if not loaded.scheduler_configs:
        raise InputError([Problem(path, None, "", "no KubeSchedulerConfiguration "
                                  "(apiVersion kubescheduler.config.k8s.io/v1) in it")])
    if others:
        raise InputError([Problem(path, None, "", "a --config file holds KubeSchedulerConfiguration documents "
                                  f"only; {others} other object(s) found")])
    return loaded.scheduler_configs, loaded.warnings


def load_all(paths: list[str], configs: list[str], strict: bool = False, until: float | None = None,
             feature_gates: FeatureGates | None = None) -> tuple[Scenario, list[list[LoadedObject]]]:
    """The input and every configuration, all checked before anything runs: one InputError
    carries every problem found in any of them."""
    from kubesched.sim.runner import load

    problems: list[Problem] = []
    scenario = None
    try:
        scenario = load(paths, strict=strict, until=until, feature_gates=feature_gates)
    except InputError as e:
        problems.extend(e.problems)
    chosen: list[list[LoadedObject]] = []
    warnings: list[Problem] = []
    for path in configs:
        try:
            docs, noticed = load_config(path, strict)
        except InputError as e:
            problems.extend(e.problems)
            continue
        chosen.append(docs)
        warnings.extend(noticed)
    if problems:
        raise InputError(problems)
    assert scenario is not None
    scenario.warnings.extend(warnings)
    return scenario, chosen


def run_all(scenario: Scenario, configs: list[str], loaded: list[list[LoadedObject]],
            progress: Console | None = None) -> list[Run]:
    """Run the input once per configuration. Expectations are left out: they are written for one
    configuration, and telling how the others differ is this command's job."""
    from kubesched.sim.runner import simulate

    runs = []
    for label, path, docs in zip(labels(configs), configs, loaded, strict=True):
        variant = dataclasses.replace(scenario, scheduler_configs=docs, expects=[])
        runs.append(Run(label, path, simulate(variant, progress=progress)))
    return runs


# --- what each run ended with -------------------------------------------------------------------------

def _pods(result: SimResult) -> dict[str, PodHistory]:
    """The latest pod of each namespace/name (a replacement with the same name wins), in the order
    they first appeared."""
    pods: dict[str, PodHistory] = {}
    for h in result.recorder.pods.values():
        meta = h.obj["metadata"]
        pods[f"{meta.get('namespace')}/{meta['name']}"] = h
    return pods


def _outcome(h: PodHistory | None) -> dict[str, Any] | None:
    if h is None:
        return None
    spec, status = h.obj.get("spec") or {}, h.obj.get("status") or {}
    node = spec.get("nodeName") or h.node
    pending = not node and not h.deleted
    cond = get_condition(h.obj, "PodScheduled") if pending else None
    return {"nodeName": node, "phase": "Deleted" if h.deleted else status.get("phase"), "deleted": h.deleted,
            "reason": h.reason if h.deleted else None,
            "message": (cond or {}).get("message") if pending else None}


def _pending(outcome: dict[str, Any] | None) -> bool:
    return outcome is not None and not outcome["nodeName"] and not outcome["deleted"]


def placement(outcome: dict[str, Any] | None) -> str:
    """A pod's outcome in a few words, for a table cell."""
    if outcome is None:
        return "- (not in this run)"
    node = outcome["nodeName"]
    if outcome["deleted"]:
        return f"{outcome['reason'] or 'Deleted'} (was on {node})" if node else outcome["reason"] or "Deleted"
    if not node:
        return "pending"
    return f"{node} ({outcome['phase']})" if outcome["phase"] in ("Succeeded", "Failed") else node


def _daemon(pod: dict[str, Any]) -> bool:
    owner = controller_of(pod)
    return owner is not None and owner.get("kind") == "DaemonSet"


def _nodes(result: SimResult) -> list[NodeInfo]:
    cluster = result.cluster
    infos = (cluster.scheduler.node_info(n["metadata"]["name"]) for n in cluster.store.list("Node"))
    return [ni for ni in infos if ni is not None]


def measured_resources(runs: list[Run]) -> list[str]:
    """cpu, memory, and the extended resources (GPUs...) some node offers."""
    extended = {name for run in runs for ni in _nodes(run.result) for name, amount in ni.allocatable.items()
                if amount > 0 and name not in BASE_RESOURCES and name not in _NOT_MEASURED
                and not name.startswith(("hugepages-", "attachable-volumes-"))}
    return [*BASE_RESOURCES, *sorted(extended)]


def utilisation(nodes: list[NodeInfo], resources: list[str]) -> dict[str, Any]:
    """Per resource, requested / allocatable over the nodes offering it: mean and spread."""
    out: dict[str, Any] = {}
    for name in resources:
        ratios = [ni.requested.get(name, 0) / ni.allocatable[name] for ni in nodes if ni.allocatable.get(name, 0) > 0]
        out[name] = {"mean": round(statistics.fmean(ratios), 4) if ratios else 0.0,
                     "stddev": round(statistics.pstdev(ratios), 4) if ratios else 0.0,
                     "nodes": len(ratios)}
    return out


def shapes(runs: list[Run]) -> Counter[tuple[tuple[str, int], ...]]:
    """The workload's pod shapes (their requests) and how many pods have each, over every pod any
    run saw (by namespace/name, so a pod counts once), DaemonSet pods aside: they never look for room."""
    seen: dict[str, tuple[tuple[str, int], ...]] = {}
    for run in runs:
        for key, h in _pods(run.result).items():
            if key not in seen and not _daemon(h.obj):
                seen[key] = tuple(sorted(pod_requests(h.obj.get("spec") or {}).items()))
    return Counter(seen.values())


def fragmentation(nodes: list[NodeInfo], resources: list[str],
                  workload: Counter[tuple[tuple[str, int], ...]]) -> dict[str, Any]:
    """Per resource: the free amount on schedulable nodes, the share of it that the pods asking for
    that resource could not use, weighted by how many pods have each shape (see the module's
    docstring), and the most of it on one node (the biggest request that could still fit). One
    shape-by-node fit matrix serves every resource, so a large trace's thousands of shapes stay cheap."""
    import numpy as np

    open_nodes = [ni for ni in nodes if not ni.unschedulable]
    names = list(dict.fromkeys([*resources, *(name for shape in workload for name, _ in shape)]))
    column = {name: i for i, name in enumerate(names)}
    free = np.array([[max(ni.allocatable.get(n, 0) - ni.requested.get(n, 0), 0) for n in names] for ni in open_nodes],
                    dtype=np.int64).reshape(len(open_nodes), len(names))
    slots = np.array([len(ni.pods) < ni.allocatable.get("pods", 0) for ni in open_nodes], dtype=bool)
    asks = np.zeros((len(workload), len(names)), dtype=np.int64)
    for i, shape in enumerate(workload):
        for name, amount in shape:
            asks[i, column[name]] = amount
    counts = np.array(list(workload.values()), dtype=np.float64)
    fits = (free[None, :, :] >= asks[:, None, :]).all(axis=2) & slots[None, :]  # shapes x nodes
    # stranded[s, r]: the free r on the nodes where shape s does not fit.
    stranded = (~fits).astype(np.float64) @ free.astype(np.float64)
    out: dict[str, Any] = {}
    for name in resources:
        r = column[name]
        total = int(free[:, r].sum())
        weights = counts * (asks[:, r] > 0)
        share = float(weights @ stranded[:, r]) / (weights.sum() * total) if weights.sum() and total else 0.0
        largest = int(free[:, r].argmax()) if open_nodes else None
        out[name] = {"free": format_amount(name, total), "fragmented": round(share, 4),
                     "largestFree": format_amount(name, int(free[largest, r]) if largest is not None else 0),
                     "largestFreeNode": open_nodes[largest].name if largest is not None else None}
    return out


def _class_driver(cls: dict[str, Any]) -> str | None:
    """The driver a DeviceClass selects, when its selector says `device.driver == '...'`."""
    for sel in (cls.get("spec") or {}).get("selectors") or ():
        expression = ((sel or {}).get("cel") or {}).get("expression", "")
        match = re.search(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]", expression)
        if match:
            return match.group(1)
    return None


def device_asks(runs: list[Run]) -> dict[str, int]:
    """Per driver, the most devices one pod of the workload asks for through its claims."""
    largest: dict[str, int] = {}
    for run in runs:
        store = run.result.cluster.store
        drivers = {c["metadata"]["name"]: _class_driver(c) for c in store.list("DeviceClass")}
        templates = {(t["metadata"].get("namespace", ""), t["metadata"]["name"]): (t.get("spec") or {}).get("spec") or {}
                     for t in store.list("ResourceClaimTemplate")}
        for h in _pods(run.result).values():
            pod = h.obj
            asked: Counter[str] = Counter()
            for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
                spec = templates.get((pod["metadata"].get("namespace", "default"), ref.get("resourceClaimTemplateName")))
                if spec is None and ref.get("resourceClaimName"):
                    claim = store.get("ResourceClaim", pod["metadata"].get("namespace", "default"), ref["resourceClaimName"])
                    spec = (claim or {}).get("spec")
                for request in ((spec or {}).get("devices") or {}).get("requests") or ():
                    exact = request.get("exactly") or {}
                    driver = drivers.get(exact.get("deviceClassName", ""))
                    if driver and exact.get("allocationMode", "ExactCount") == "ExactCount":
                        asked[driver] += int(exact.get("count") or 1)
            for driver, n in asked.items():
                largest[driver] = max(largest.get(driver, 0), n)
    return largest


def device_fragmentation(result: SimResult, asks: dict[str, int]) -> dict[str, Any]:
    from kubesched.sim.results import node_devices

    open_nodes = {ni.name for ni in _nodes(result) if not ni.unschedulable}
    per_driver: dict[str, dict[str, int]] = {}
    for node, drivers in node_devices(result.cluster).items():
        for driver, (used, total) in drivers.items():
            d = per_driver.setdefault(driver, {"published": 0, "allocated": 0, "free": 0, "stranded": 0})
            d["published"] += total
            d["allocated"] += used
            if node in open_nodes:
                d["free"] += total - used
                if total - used < asks.get(driver, 1):
                    d["stranded"] += total - used
    return {driver: {"published": d["published"], "allocated": d["allocated"], "free": d["free"],
                     "fragmented": round(d["stranded"] / d["free"], 4) if d["free"] else 0.0}
            for driver, d in sorted(per_driver.items())}


def _preemptions(result: SimResult) -> list[dict[str, Any]]:
    from kubesched.sim.summary import preemptions

    return [{"time": p["time"], "preemptor": p["preemptor"], "priority": p["priority"], "node": p["node"],
             "victims": [v["pod"] for v in p["victims"]]} for p in preemptions(result.recorder)]


def compare(runs: list[Run]) -> dict[str, Any]:
    """The comparison as JSON: each run's summary, then the pods whose outcome differs."""
    resources = measured_resources(runs)
    workload = shapes(runs)
    asks = device_asks(runs)
    per_run = [_pods(run.result) for run in runs]
    summaries = []
    for run, pods in zip(runs, per_run, strict=True):
        nodes = _nodes(run.result)
        outcomes = [_outcome(h) for h in pods.values()]
        used = [ni.name for ni in nodes if any(not _daemon(p.obj) for p in ni.pods.values())]
        summaries.append({
            "label": run.label, "config": run.config, "time": float(run.result.cluster.now()),
            "pods": len(pods), "pending": sum(_pending(o) for o in outcomes),
            "nodes": len(nodes), "nodesUsed": len(used), "usedNodes": used,
            "utilisation": utilisation(nodes, resources),
            "fragmentation": fragmentation(nodes, resources, workload),
            "preemptions": _preemptions(run.result),
        })
        devices = device_fragmentation(run.result, asks)
        if devices:
            summaries[-1]["devices"] = devices
    keys = list(dict.fromkeys(key for pods in per_run for key in pods))
    placed, pending = [], []
    for key in keys:
        outcomes = [_outcome(pods.get(key)) for pods in per_run]
        if len({json.dumps(o, sort_keys=True) for o in (_identity(o) for o in outcomes)}) == 1:
            continue
        entry = {"pod": key, "runs": {run.label: o for run, o in zip(runs, outcomes, strict=True)}}
        (pending if any(_pending(o) for o in outcomes) else placed).append(entry)
    return {"resources": resources, "runs": summaries, "placedDifferently": placed, "pendingDiffers": pending}


def _identity(outcome: dict[str, Any] | None) -> Any:
    """What makes two outcomes different: where the pod is (or was) and whether it is gone; not the
    wording of a pending message."""
    return None if outcome is None else (outcome["nodeName"], outcome["deleted"], outcome["reason"])


# --- rendering -----------------------------------------------------------------------------------------

def human(name: str, quantity: str) -> str:
    """A quantity for people: cpu in cores, memory in Gi or Mi, counts as they are."""
    amount = resource_amount(name, quantity)
    if name == "cpu":
        return f"{round(amount / 1000, 2):g}"
    if name == "memory":
        return format_memory(amount)
    return quantity


def _percent(x: float) -> str:
    return f"{x * 100:.0f}%"


def _fragmentation_cell(name: str, f: dict[str, Any]) -> str:
    largest = f" ({human(name, f['largestFree'])} on {f['largestFreeNode']})" if f["largestFreeNode"] else ""
    return f"{_percent(f['fragmented'])} of {human(name, f['free'])} free{largest}"


def render(data: dict[str, Any], console: Console) -> None:
    runs = data["runs"]
    labels_ = [r["label"] for r in runs]
    summary = Table(title="Summary (when each run ends)", title_justify="left")
    summary.add_column("")
    for r in runs:
        summary.add_column(r["label"], overflow="fold")
    summary.add_row("pods / pending", *(f"{r['pods']} / {r['pending']}" for r in runs))
    summary.add_row("preemptions", *(str(len(r["preemptions"])) for r in runs))
    summary.add_row("nodes used", *(f"{r['nodesUsed']} of {r['nodes']}" for r in runs))
    for name in data["resources"]:
        summary.add_row(f"{name} utilisation (mean ± sd)", *(
            f"{_percent(r['utilisation'][name]['mean'])} ± {_percent(r['utilisation'][name]['stddev'])}" for r in runs))
    for name in data["resources"]:
        summary.add_row(f"{name} fragmentation", *(
            _fragmentation_cell(name, r["fragmentation"][name]) for r in runs))
    for driver in sorted({d for r in runs for d in r.get("devices") or {}}):
        summary.add_row(f"{driver} devices (allocated of published)", *(
            f"{r['devices'][driver]['allocated']} of {r['devices'][driver]['published']}" if driver in r.get("devices", {})
            else "-" for r in runs))
        summary.add_row(f"{driver} fragmentation", *(
            f"{_percent(r['devices'][driver]['fragmented'])} of {r['devices'][driver]['free']} free"
            if driver in r.get("devices", {}) else "-" for r in runs))
    console.print(summary)

    placed = Table(title=f"Placed differently: {len(data['placedDifferently'])} pod(s)", title_justify="left")
    placed.add_column("pod", no_wrap=True)
    for label in labels_:
        placed.add_column(label, overflow="fold")
    for entry in data["placedDifferently"]:
        placed.add_row(entry["pod"], *(placement(entry["runs"][label]) for label in labels_))
    console.print(placed)

    if data["pendingDiffers"]:
        pending = Table(title=f"Pending under some configurations only: {len(data['pendingDiffers'])} pod(s)",
                        title_justify="left")
        pending.add_column("pod", no_wrap=True)
        for label in labels_:
            pending.add_column(label, overflow="fold")
        for entry in data["pendingDiffers"]:
            cells = []
            for label in labels_:
                o = entry["runs"][label]
                cells.append(f"pending: {o['message']}" if _pending(o) and o["message"] else placement(o))
            pending.add_row(entry["pod"], *cells)
        console.print(pending)

    if any(r["preemptions"] for r in runs):
        pre = Table(title="Preemptions", title_justify="left")
        for col in ("configuration", "time", "preemptor", "node", "victims"):
            pre.add_column(col, no_wrap=col in ("preemptor", "configuration"))
        for r in runs:
            for p in r["preemptions"]:
                pre.add_row(r["label"], format_duration(p["time"]), f"{p['preemptor']} ({p['priority']})", p["node"],
                            ", ".join(p["victims"]))
        console.print(pre)
    else:
        console.print("No preemptions under any configuration.")
