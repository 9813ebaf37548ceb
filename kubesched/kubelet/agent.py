"""Simulated node agents: start bound pods, run them for their duration, terminate them gracefully,
evict pods under node pressure and let the OOM killer act.

No containers run. A pod bound to a node becomes Running at once; `sim.kubesched.io/duration`
makes it Succeed after that long (or, with `sim.kubesched.io/exit-code`, fail or restart); a deleted pod stops at once unless `sim.kubesched.io/shutdown`
says it takes longer (never longer than its grace period) and is then removed with a zero-grace
delete, as the kubelet confirms termination to the API server. Its containers are started and
Ready when their startup and readiness probes say (kubelet/prober.py); the pod is Ready when all
of them are. A pod already running in a snapshot keeps the readiness its status reports.

What pods and nodes use (kubelet/usage.py) drives node-pressure eviction (kubelet/eviction.py):
an evicted pod gets an `Evicted` event (and, for node pressure, a DisruptionTarget condition) at
once, stops like a deleted pod (within its eviction grace period) and then ends Failed with reason
`Evicted` and the eviction message, its resources freed. PodDisruptionBudgets are not
consulted. When usage exceeds a memory limit (a container's, the pods' cgroup, the node) the OOM
killer ends a container at once (kubelet/oom.py): its status records OOMKilled; under
restartPolicy Always or OnFailure it restarts immediately (CrashLoopBackOff delays are not
modelled) with restartCount + 1, under Never it stays terminated and the pod fails when no
container is left. A killed container starts again with no memory and no processes in use, until
a `usage` event says otherwise.
"""

from __future__ import annotations

import functools
import zlib
from typing import Any

from kubesched.api.dra.claims import extended_claim_name
from kubesched.api.dra.extended import is_dra_extended_resource_name
from kubesched.api.objects import (
    Obj,
    Shared,
    controller_of,
    get_condition,
    is_pod_ready,
    is_terminating,
    set_condition,
    shared_condition,
)
from kubesched.api.podlife import DURATION_ANNOTATION, annotation_seconds, exit_code, shutdown_time
from kubesched.api.quantity import QuantityError, resource_amount
from kubesched.api.resources import pod_requests
from kubesched.apiserver.errors import BadRequest, NotFoundError
from kubesched.apiserver.server import APIServer
from kubesched.kubelet import config as eviction_config
from kubesched.kubelet.dra import FAILED_PREPARE, claim_keys, prepare_problem
from kubesched.kubelet.eviction import REASON, EvictionManager
from kubesched.kubelet.oom import victim
from kubesched.kubelet.prober import Timeline, timelines
from kubesched.kubelet.usage import (
    USAGE_KEYS,
    ContainerUsage,
    PodUsage,
    UsageTracker,
    amount,
    usage_annotations,
)
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.store.base import ADDED, DELETED, WatchEvent

DEFAULT_MAX_PODS = 110  # kubelet --max-pods
MAX_SHAPES = 4096  # pod shapes whose requests are kept


def insufficient(resource: str, requested: int, used: int, capacity: int) -> str:
    """InsufficientResourceError's text; cpu in millicores, memory and storage in bytes."""
    return f"Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"


def _node_figures(node: Obj) -> tuple[Any, ...]:
    """What a node's eviction signals are computed from."""
    status = node.get("status") or {}
    return status.get("capacity"), status.get("allocatable"), node["metadata"].get("annotations")


def _container_statuses(pod: Obj, status: Obj, sidecar: bool, started: str) -> list[Obj]:
    """The pod's containerStatuses (or its sidecars' initContainerStatuses), made running since
    `started` when the kubelet has not reported them yet."""
    key = "initContainerStatuses" if sidecar else "containerStatuses"
    statuses = status.get(key)
    if statuses is None:
        spec = pod.get("spec") or {}
        running = [x for x in spec.get("initContainers") or () if x.get("restartPolicy") == "Always"] \
            if sidecar else spec.get("containers") or ()
        statuses = status[key] = [_running_status(x.get("name", ""), x.get("image", ""), started) for x in running]
    return statuses


_NO_STATE = Shared()


@functools.lru_cache(maxsize=1024)
def _running_status(name: str, image: str, started: str) -> Shared:
    """A container's status from its start until something changes it, kept once for every
    container of that name and image started at that instant (a workload's replicas): a change
    replaces it in its pod's list."""
    return Shared(name=name, image=image, imageID="", containerID="", ready=True, started=True, restartCount=0,
                  state=_running_since(started), lastState=_NO_STATE)


@functools.lru_cache(maxsize=256)
def _running_since(started: str) -> Shared:
    """The container state of every container started at that instant, kept once for all."""
    return Shared(running=Shared(startedAt=started))


def _pod_ip(uid: str) -> str:
    """An address in 10.0.0.0/8 that stays the pod's (there is no network to allocate from)."""
    digest = zlib.crc32(uid.encode())
    return f"10.{digest >> 16 & 0xFF}.{digest >> 8 & 0xFF}.{digest & 0xFF or 1}"


def _not_ready(status: Obj, reason: str, stamp: str, message: str | None = None) -> bool:
    changed = False
    for ctype in ("Ready", "ContainersReady"):
        cond = {"type": ctype, "status": "False", "reason": reason, "lastProbeTime": None, "lastTransitionTime": stamp}
        if message is not None:
            cond["message"] = message
        changed = set_condition(status, cond) or changed
    return changed


def _requests_shape(spec: Obj) -> tuple[Any, ...] | None:
    """All that pod_requests reads of a spec without init containers, overhead or pod-level
    resources: each container's requests and limits as written, in order. None for another spec."""
    if spec.get("initContainers") or spec.get("overhead") or spec.get("resources") is not None:
        return None
    shape: list[Any] = []
    for container in spec.get("containers") or ():
        resources = container.get("resources")
        if not resources:
            shape.append(None)
            continue
        requests, limits = resources.get("requests"), resources.get("limits")
        shape.append((tuple(requests.items()) if requests else None, tuple(limits.items()) if limits else None))
    return tuple(shape)


_CHECKED = ("cpu", "memory", "ephemeral-storage")  # what admission checks besides extended resources
_CHECKED_SET = frozenset(_CHECKED)


class _NodeFacts:
    """What the kubelet reads of its Node for every pod it starts, kept for one version of it: the
    allocatable, parsed, and the node's InternalIP with the hostIPs list that every pod running
    there reports (one list for all of them, as stored objects are never changed in place)."""

    __slots__ = ("allocatable", "host_ip", "host_ips", "version")

    def __init__(self, node: Obj) -> None:
        self.version: str = node["metadata"].get("resourceVersion", "")
        status = node.get("status") or {}
        raw = status.get("allocatable") or status.get("capacity") or {}
        self.allocatable = {k: resource_amount(k, v) for k, v in raw.items()}
        addresses = status.get("addresses") or ()
        self.host_ip: str | None = next(
            (a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
        self.host_ips = [Shared(ip=self.host_ip)] if self.host_ip else []


class _Admitted:
    """The pods one kubelet runs and the sum of their requests, which admission checks a new pod
    against without adding them up again."""

    __slots__ = ("pods", "totals")

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, int]] = {}  # uid -> requests
        self.totals: dict[str, int] = {}

    def add(self, uid: str, requests: dict[str, int]) -> None:
        self.pop(uid)
        self.pods[uid] = requests
        for name, value in requests.items():
            self.totals[name] = self.totals.get(name, 0) + value

    def pop(self, uid: str) -> None:
        requests = self.pods.pop(uid, None)
        if requests is not None:
            for name, value in requests.items():
                self.totals[name] -= value


class Kubelets:
    """All simulated kubelets at once; each pod is handled by the agent of the node it is bound to."""

    def __init__(self, api: APIServer, clock: Clock, config: Obj | None = None,
                 observer: Observer = NULL_OBSERVER) -> None:
        self.api = api
        self.clock = clock
        self.config = config or {}
        self._finish: dict[str, Timer] = {}  # uid -> duration timer
        self._terminate: dict[str, Timer] = {}  # uid -> end of graceful shutdown
        self._evicting: dict[str, Timer] = {}  # uid -> end of an eviction's grace period
        self._probing: dict[str, Timer] = {}  # uid -> the next change of a container's readiness
        self._started: dict[str, dict[str, float]] = {}  # uid -> container -> when it (re)started
        self._admitted: dict[str, _Admitted] = {}  # by node
        self._nodes: dict[str, _NodeFacts] = {}  # what admission and a pod's start read of each node
        self._by_shape: dict[tuple[Any, ...], dict[str, int]] = {}  # pod requests by _requests_shape
        self.usage = UsageTracker()
        self._pending_usage: dict[str, list[tuple[dict[str, int], str | None]]] = {}  # uid -> before it runs
        # Pods whose claims cannot be prepared yet: uid -> (namespace, name, the claims they wait
        # on, the last problem reported).
        self._claims_wait: dict[str, tuple[str, str, set[tuple[str, str]], str]] = {}
        self.eviction = EvictionManager(api, clock, eviction_config.parse(config), self.usage, self._evict,
                                        observer)

    def start(self) -> None:
        for node in self.api.store.list("Node"):
            self._on_node(WatchEvent(ADDED, "Node", node, None))
        self.api.store.watch(self._on_node, {"Node"})
        for pod in self.api.store.list("Pod"):
            self._on_pod(WatchEvent(ADDED, "Pod", pod, None))
        self.api.store.watch(self._on_pod, {"Pod"})
        self.api.store.watch(self._on_claim, {"ResourceClaim"})

    def _on_claim(self, ev: WatchEvent) -> None:
        """A claim changed: the pods waiting to prepare it try again."""
        key = (ev.obj["metadata"].get("namespace", "default"), ev.obj["metadata"]["name"])
        for uid, (ns, name, keys, _) in list(self._claims_wait.items()):
            if key in keys and uid not in self._finish:
                self._finish[uid] = self.clock.call_soon(functools.partial(self._start_pod, ns, name, uid))

    def _on_node(self, ev: WatchEvent) -> None:
        name = ev.obj["metadata"]["name"]
        if ev.type == DELETED:
            self.eviction.node_removed(name)
            return
        if ev.type == ADDED:
            self.eviction.node_added(name)
        elif ev.old is not None and not _node_ready(ev.old) and _node_ready(ev.obj):
            self._pods_ready_again(name)
        if ev.type != ADDED and ev.old is not None and _node_figures(ev.old) == _node_figures(ev.obj):
            return  # conditions, taints, labels: nothing the signals read
        self._check_oom(name)
        self.eviction.touch(name)

    def _pods_ready_again(self, node: str) -> None:
        """The node reports again: its running pods (marked not ready by the node lifecycle
        controller while it was silent) are as ready as their probes say once more, as the
        kubelet's status sync reports."""
        now = self.api.timestamp()
        for pod in self.api.store.list("Pod"):
            if pod.get("spec", {}).get("nodeName") != node or pod.get("status", {}).get("phase") != "Running" \
                    or pod["metadata"].get("deletionTimestamp") or is_pod_ready(pod):
                continue
            meta = pod["metadata"]
            self.api.update_status("Pod", meta.get("namespace", "default"), meta["name"],
                                   functools.partial(self._readiness, pod, timelines(pod), stamp=now))

    def _admitted_on(self, node: str) -> _Admitted:
        admitted = self._admitted.get(node)
        if admitted is None:
            admitted = self._admitted[node] = _Admitted()
        return admitted

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        node = pod.get("spec", {}).get("nodeName")
        phase = pod.get("status", {}).get("phase")
        if ev.type == DELETED or phase in ("Succeeded", "Failed"):
            admitted = self._admitted.get(node or "")
            if admitted is not None:
                admitted.pop(uid)
            if self.usage.remove(uid) is not None:
                self.eviction.touch(node or "")
            self._stop_probing(uid)
        if ev.type == DELETED:
            for timers in (self._finish, self._terminate, self._evicting):
                t = timers.pop(uid, None)
                if t is not None:
                    t.cancel()
            self._pending_usage.pop(uid, None)
            self._claims_wait.pop(uid, None)
            return
        if not node:
            return
        if phase == "Running":
            admitted = self._admitted_on(node)
            requests = admitted.pods.get(uid)
            if requests is None:
                if not pod["metadata"].get("deletionTimestamp"):
                    self._run_for_duration(pod)  # running already when the kubelet first saw it (a snapshot)
                    self._probe_snapshot(pod)
                requests = self._requests(pod.get("spec", {}))
                admitted.add(uid, requests)
            self._track(ev, node, requests)
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if uid not in self._terminate:
                self._begin_termination(pod)
            return
        if phase == "Pending" and uid not in self._finish:
            ns, name = meta.get("namespace", "default"), meta["name"]
            self._finish[uid] = self.clock.call_soon(lambda: self._start_pod(ns, name, uid))

    def set_usage(self, ns: str, name: str, amounts: dict[str, str], container: str | None = None) -> None:
        """A `usage` scenario event: what the pod (or one container) uses from now on. A pod that
        has not started yet uses it from its start; one that has finished is not affected."""
        pod = self.api.store.get("Pod", ns, name)
        if pod is None:
            raise NotFoundError(f'pods "{name}" not found')
        spec = pod.get("spec") or {}
        names = [c.get("name") for c in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ()))]
        if container is not None and container not in names:
            raise BadRequest(f'container "{container}" is not valid for pod "{name}"')
        try:
            parsed = {key: amount(key, raw) for key, raw in amounts.items() if key in USAGE_KEYS}
        except QuantityError as e:
            raise BadRequest(str(e)) from None
        uid = pod["metadata"].get("uid", "")
        pu = self.usage.pods.get(uid)
        if pu is not None:
            self._apply_usage(pu, parsed, container)
        elif pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            self._pending_usage.setdefault(uid, []).append((parsed, container))

    # ---- usage and the OOM killer -------------------------------------------------------------

    def _track(self, ev: WatchEvent, node: str, requests: dict[str, int]) -> None:
        """Start accounting a running pod's usage; follow its usage annotations if they change."""
        pod = ev.obj
        uid = pod["metadata"].get("uid", "")
        pu = self.usage.pods.get(uid)
        if pu is None:
            pu = self.usage.add(pod, node, requests)
            for parsed, container in self._pending_usage.pop(uid, ()):
                self._set(pu, parsed, container)
            self._usage_changed(pu)
            return
        if ev.old is None or ev.old["metadata"].get("annotations") is pod["metadata"].get("annotations"):
            return  # a status write keeps the annotations it had: no usage changed
        now, before = usage_annotations(pod), usage_annotations(ev.old)
        changed = {}
        for key, raw in now.items():
            if before.get(key) != raw:
                try:
                    changed[key] = amount(key, raw)
                except QuantityError:
                    continue
        if changed:
            self._apply_usage(pu, changed, None)

    def _set(self, pu: PodUsage, parsed: dict[str, int], container: str | None) -> None:
        target = pu.container(container) if container is not None else None
        if container is not None and (target is None or target.terminated):
            return  # an init container that is not running alongside, or one that has ended
        self.usage.update(pu, parsed, target)

    def _apply_usage(self, pu: PodUsage, parsed: dict[str, int], container: str | None) -> None:
        self._set(pu, parsed, container)
        self._usage_changed(pu)

    def _usage_changed(self, pu: PodUsage) -> None:
        self._check_oom(pu.node, pu)
        self.eviction.touch(pu.node)

    def _check_oom(self, node: str, changed: PodUsage | None = None) -> None:
        """Kill until every memory cgroup is within its limit: the changed pod's containers and
        pod, then the pods' cgroup and the node."""
        res = self.eviction.resources(node)
        capacity = res.memory_capacity if res is not None else None
        if changed is not None and changed.base is None:  # at its requests it is within its limits
            for c in changed.containers:
                if c.memory_limit is not None and c.usage.get("memory", 0) > c.memory_limit:
                    self._oom_kill(changed, c, system=False)
            limit = changed.pod_memory_limit
            while limit is not None and changed.uid in self.usage.pods and changed.total("memory") > limit:
                picked = victim([changed], limit, capacity or limit)
                if picked is None:
                    break
                self._oom_kill(*picked, system=False)
        if res is None or capacity is None:
            return
        while True:
            used = self.usage.node_totals(node)["memory"]
            if res.system["memory"] + used > capacity:
                limit, system = capacity, True
            elif res.pods_memory_limit is not None and used > res.pods_memory_limit:
                limit, system = res.pods_memory_limit, False
            else:
                return
            picked = victim(self.usage.on_node(node), limit, capacity)
            if picked is None:
                return
            self._oom_kill(*picked, system=system)

    def _oom_kill(self, pu: PodUsage, c: ContainerUsage, system: bool) -> None:
        """The kernel kills the container; the kubelet records OOMKilled and restarts it (or not)."""
        self.usage.update(pu, {"memory": 0, "pids": 0}, c)
        restart = c.sidecar or pu.restart_policy in ("Always", "OnFailure")
        c.terminated = not restart
        pod = self._current(pu.namespace, pu.name, pu.uid)
        if pod is None:
            return
        stamp = self.api.timestamp()
        failed = all(x.terminated for x in pu.containers)

        def record(status: Obj) -> None:
            started = status.get("startTime") or stamp
            statuses = _container_statuses(pod, status, c.sidecar, started)
            i = next((i for i, x in enumerate(statuses) if x["name"] == c.name), None)
            if i is None:
                return
            cs = statuses[i]
            began = (cs.get("state") or {}).get("running", {}).get("startedAt", started)
            ended = {"exitCode": 137, "reason": "OOMKilled", "startedAt": began, "finishedAt": stamp}
            if restart:
                statuses[i] = {**cs, "restartCount": cs.get("restartCount", 0) + 1, "lastState": {"terminated": ended},
                               "state": {"running": {"startedAt": stamp}}}
                self._started.setdefault(pu.uid, {})[c.name] = self.clock.now()
            else:
                statuses[i] = {**cs, "state": {"terminated": ended}, "ready": False, "started": False}
            if failed:
                status["phase"] = "Failed"
                _not_ready(status, "PodFailed", stamp)
            else:
                self._readiness(pod, lines, status, stamp)

        lines = timelines(pod)
        self.api.update_status("Pod", pu.namespace, pu.name, record)
        if not failed:
            self._probe_later(pod, lines)
        if system:
            node = self.api.store.get("Node", "", pu.node)
            if node is not None:
                self.api.record_event(node, "Warning", "SystemOOM",
                                      f"System OOM encountered, victim process: {c.name}", source="kubelet")

    # ---- node-pressure eviction -----------------------------------------------------------------

    def _evict(self, pu: PodUsage, grace: int, message: str, disruption: bool) -> float:
        """Start evicting a pod (the eviction manager chose it): it is told at once (with a
        DisruptionTarget condition for a node-pressure eviction), and it ends Failed/Evicted when
        its grace period (or its own shorter shutdown) is over. Returns then."""
        now = self.clock.now()
        pod = self._current(pu.namespace, pu.name, pu.uid)
        if pod is None:
            return now
        self.api.record_event(pod, "Warning", REASON, message, source="kubelet")
        stamp = self.api.timestamp()
        if disruption:
            self.api.update_status("Pod", pu.namespace, pu.name, lambda status: set_condition(status, {
                "type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message,
                "lastProbeTime": None, "lastTransitionTime": stamp}))
        finish = self._finish.pop(pu.uid, None)
        if finish is not None:
            finish.cancel()
        delay = shutdown_time(pod, float(grace))
        ns, name, uid = pu.namespace, pu.name, pu.uid
        self._evicting[uid] = self.clock.call_later(delay, lambda: self._evicted(ns, name, uid, message))
        return now + delay

    def _evicted(self, ns: str, name: str, uid: str, message: str) -> None:
        self._evicting.pop(uid, None)
        pod = self._current(ns, name, uid)
        if pod is None or pod["status"].get("phase") in ("Succeeded", "Failed"):
            return
        stamp = self.api.timestamp()

        def failed(status: Obj) -> None:
            status.update(phase="Failed", reason=REASON, message=message)
            _not_ready(status, "PodFailed", stamp)

        self.api.update_status("Pod", ns, name, failed)
        if is_terminating(pod):  # already being deleted: the kubelet now confirms it is gone
            t = self._terminate.pop(uid, None)
            if t is not None:
                t.cancel()
            self._remove(ns, name, uid)

    def _current(self, ns: str, name: str, uid: str) -> Obj | None:
        pod = self.api.store.get("Pod", ns, name)
        return pod if pod is not None and pod["metadata"].get("uid") == uid else None

    def _requests(self, spec: Obj) -> dict[str, int]:
        """pod_requests, worked out once for the pods of one shape (a workload's replicas): the
        dict is shared, and read only, by the admission totals and the usage records."""
        shape = _requests_shape(spec)
        try:
            requests = self._by_shape.get(shape) if shape is not None else None
        except TypeError:  # a malformed amount (a list, a map) in a spec validation let through
            return pod_requests(spec)
        if requests is None:
            requests = pod_requests(spec)
            if shape is not None:
                if len(self._by_shape) >= MAX_SHAPES:
                    self._by_shape.clear()
                self._by_shape[shape] = requests
        return requests

    def _node_facts(self, node_name: str) -> _NodeFacts | None:
        """The node's allocatable and addresses, read again only when the node has changed."""
        node = self.api.store.get("Node", "", node_name)
        if node is None:
            return None
        facts = self._nodes.get(node_name)
        if facts is None or facts.version != node["metadata"].get("resourceVersion", ""):
            facts = self._nodes[node_name] = _NodeFacts(node)
        return facts

    def _start_pod(self, ns: str, name: str, uid: str) -> None:
        pod = self._current(ns, name, uid)
        self._finish.pop(uid, None)
        if pod is None or pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Pending":
            return
        node = pod["spec"]["nodeName"]
        if (pod["spec"].get("resourceClaims") or extended_claim_name(pod)) and not self._claims_prepared(pod):
            return
        requests = self._requests(pod["spec"])
        facts = self._node_facts(node)
        refusal = self.eviction.admit(pod, node) or self._admit(node, facts, requests)
        if refusal is not None:
            self._reject(pod, *refusal)
            return
        self._admitted_on(node).add(uid, requests)
        now = self.api.timestamp()
        lines = timelines(pod)
        if not all(line.at_once for line in lines.values()):  # otherwise when they started matters to nothing
            self._started[uid] = dict.fromkeys(lines, self.clock.now())

        def running(status: Obj) -> None:
            status["phase"] = "Running"
            status["startTime"] = now
            set_condition(status, shared_condition("Initialized", "True", now))
            # What `kubectl get pods` shows: READY 1/1, the pod's and its node's addresses.
            _container_statuses(pod, status, False, now)
            if any(x.get("restartPolicy") == "Always" for x in pod["spec"].get("initContainers") or ()):
                _container_statuses(pod, status, True, now)
            self._readiness(pod, lines, status, now)
            host_ip = facts.host_ip if facts is not None else None
            if facts is not None and host_ip:
                status["hostIP"] = host_ip
                status["hostIPs"] = facts.host_ips
            pod_ip = host_ip if pod["spec"].get("hostNetwork") else _pod_ip(uid)
            status["podIP"] = pod_ip
            status["podIPs"] = [{"ip": pod_ip}]

        self.api.update_status("Pod", ns, name, running)
        self._probe_later(pod, lines)
        self._run_for_duration(pod)

    def _claims_prepared(self, pod: Obj) -> bool:
        """PrepareResources: False (and an Event when the reason changes) while a claim of the
        pod is missing or not allocated and reserved for it; the pod then waits for its claims."""
        uid = pod["metadata"].get("uid", "")
        problem = prepare_problem(self.api.store, pod)
        if problem is None:
            self._claims_wait.pop(uid, None)
            return True
        before = self._claims_wait.get(uid)
        meta = pod["metadata"]
        self._claims_wait[uid] = (meta.get("namespace", "default"), meta["name"], claim_keys(pod), problem)
        if before is None or before[3] != problem:
            self.api.record_event(pod, "Warning", FAILED_PREPARE, f"Failed to prepare dynamic resources: {problem}",
                                  source="kubelet")
        return False

    def _run_for_duration(self, pod: Obj) -> None:
        """`sim.kubesched.io/duration`: the pod's containers exit that long after it started (at
        once if a snapshot shows it started longer ago than that)."""
        duration = annotation_seconds(pod, DURATION_ANNOTATION)
        if duration is None:
            return
        meta = pod["metadata"]
        ns, name, uid = meta.get("namespace", "default"), meta["name"], meta.get("uid", "")
        started = (pod.get("status") or {}).get("startTime")
        now = self.clock.now()
        start = self.api.seconds(started) if started else now
        self._finish[uid] = self.clock.call_at(max(start + duration, now), lambda: self._exit(ns, name, uid))

    def _exit(self, ns: str, name: str, uid: str) -> None:
        """The containers exit with `sim.kubesched.io/exit-code` (default 0): with 0 the pod
        Succeeds; otherwise it Fails under restartPolicy Never, and under OnFailure or Always the
        containers restart in place (CrashLoopBackOff delays are not modelled) and run again."""
        self._finish.pop(uid, None)
        pod = self._current(ns, name, uid)
        if pod is None or pod["status"].get("phase") != "Running":
            return
        code = exit_code(pod)
        if code == 0:
            self._succeed(ns, name)
            return
        stamp = self.api.timestamp()
        restart = (pod.get("spec") or {}).get("restartPolicy", "Always") != "Never"

        lines = timelines(pod)
        starts = self._started.setdefault(uid, {})

        def exited(status: Obj) -> None:
            statuses = _container_statuses(pod, status, False, status.get("startTime") or stamp)
            for i, cs in enumerate(statuses):
                began = ((cs.get("state") or {}).get("running") or {}).get("startedAt", stamp)
                ended = {"exitCode": code, "reason": "Error", "startedAt": began, "finishedAt": stamp}
                if restart:
                    statuses[i] = {**cs, "restartCount": cs.get("restartCount", 0) + 1,
                                   "lastState": {"terminated": ended}, "state": {"running": {"startedAt": stamp}}}
                    starts[cs["name"]] = self.clock.now()
                else:
                    statuses[i] = {**cs, "state": {"terminated": ended}, "ready": False, "started": False}
            if restart:
                self._readiness(pod, lines, status, stamp)
            else:
                status["phase"] = "Failed"
                _not_ready(status, "PodFailed", stamp)

        self.api.update_status("Pod", ns, name, exited)
        if restart:
            self._probe_later(pod, lines)
        duration = annotation_seconds(pod, DURATION_ANNOTATION)
        if restart and duration is not None:
            # Restarts repeat forever unless someone counts them (a Job's backoffLimit under
            # OnFailure): only then do they keep a run going.
            counted = (controller_of(pod) or {}).get("kind") == "Job"
            self._finish[uid] = self.clock.call_at(self.clock.now() + duration, lambda: self._exit(ns, name, uid),
                                                   daemon=not counted)

    # ---- probes -----------------------------------------------------------------------------------

    def _readiness(self, pod: Obj, lines: dict[str, Timeline], status: Obj, stamp: str) -> bool:
        """Each probed container's started and ready as its probes say now, and the pod's
        ContainersReady and Ready from them (GenerateContainersReadyCondition: sidecars first, then
        the app containers, in spec order). Returns whether anything changed."""
        now = self.clock.now()
        starts = self._started.get(pod["metadata"].get("uid", "")) or {}
        since = status.get("startTime") or stamp
        _container_statuses(pod, status, False, since)
        if any(x.get("restartPolicy") == "Always" for x in (pod.get("spec") or {}).get("initContainers") or ()):
            _container_statuses(pod, status, True, since)
        unready: list[str] = []
        changed = False
        for key in ("initContainerStatuses", "containerStatuses"):
            statuses = status.get(key) or []
            for i, cs in enumerate(statuses):
                name = cs.get("name", "")
                line = lines.get(name)
                if line is None:
                    continue  # an init container that ran to completion
                start = starts.get(name)
                running = "running" in (cs.get("state") or {})
                started, ready = line.state(now - start) if running and start is not None else (running, running)
                if cs.get("started") != started or cs.get("ready") != ready:
                    statuses[i] = {**cs, "started": started, "ready": ready}
                    changed = True
                if not ready:
                    unready.append(name)
        if unready:
            message = f"containers with unready status: [{' '.join(unready)}]"
            return _not_ready(status, "ContainersNotReady", stamp, message) or changed
        for ctype in ("Ready", "ContainersReady"):
            changed = set_condition(status, shared_condition(ctype, "True", stamp)) or changed
        return changed

    def _probe_snapshot(self, pod: Obj) -> None:
        """A pod found running (a snapshot's): the readiness its status reports stands until its
        probes next change it; one whose status does not say (a bound pod given without status)
        is as Ready as its probes say by now."""
        lines = timelines(pod)
        uid = pod["metadata"].get("uid", "")
        self._started[uid] = self._snapshot_starts(pod, lines)
        if get_condition(pod, "Ready") is None and lines:
            meta = pod["metadata"]
            stamp = self.api.timestamp()
            self.api.update_status("Pod", meta.get("namespace", "default"), meta["name"],
                                   lambda status: self._readiness(pod, lines, status, stamp))
        self._probe_later(pod, lines)

    def _snapshot_starts(self, pod: Obj, lines: dict[str, Timeline]) -> dict[str, float]:
        """When the containers of a pod found running started, by its status (the pod's startTime
        for a container it reports nothing of)."""
        status = pod.get("status") or {}
        reported = {cs.get("name", ""): ((cs.get("state") or {}).get("running") or {}).get("startedAt")
                    for cs in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ()))}
        starts = {}
        for name in lines:
            since = reported[name] if name in reported else status.get("startTime")
            if since:
                try:
                    starts[name] = self.api.seconds(since)
                except (ValueError, OverflowError):
                    continue
        return starts

    def _probe_later(self, pod: Obj, lines: dict[str, Timeline]) -> None:
        """Wake up at the next change of a container's readiness after now, if there is one: what
        a snapshot's pod reports now stands until then."""
        uid = pod["metadata"].get("uid", "")
        self._stop_probing(uid, forget=False)
        starts = self._started.get(uid)
        if not starts:  # its containers are Ready at once (see _start_pod): nothing to wait for
            return
        now = self.clock.now()
        upcoming = [starts[name] + t for name, line in lines.items() if name in starts
                    for t in line.changes() if starts[name] + t > now]
        if upcoming:
            ns, name = pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]
            self._probing[uid] = self.clock.call_at(min(upcoming), lambda: self._probe(ns, name, uid))

    def _probe(self, ns: str, name: str, uid: str) -> None:
        self._probing.pop(uid, None)
        pod = self._current(ns, name, uid)
        if pod is None or pod["status"].get("phase") != "Running":
            return
        lines = timelines(pod)
        node = self.api.store.get("Node", "", pod["spec"].get("nodeName", ""))
        if node is None or _node_ready(node):  # a silent kubelet reports nothing (its node comes back: it does)
            stamp = self.api.timestamp()
            self.api.update_status("Pod", ns, name, lambda status: self._readiness(pod, lines, status, stamp))
        self._probe_later(pod, lines)

    def _stop_probing(self, uid: str, forget: bool = True) -> None:
        t = self._probing.pop(uid, None)
        if t is not None:
            t.cancel()
        if forget:
            self._started.pop(uid, None)

    def _admit(self, node_name: str, facts: _NodeFacts | None, requests: dict[str, int]) -> tuple[str, str] | None:
        """The kubelet's own resource check at admission (GeneralPredicates): the pods it already
        runs (terminating ones too) plus this one must fit the node's allocatable. A scheduler that
        raced another one, or a pod bound by hand, can fail it. Returns (reason, message)."""
        if facts is None:
            return None
        alloc = facts.allocatable
        running = self._admitted.get(node_name) or _Admitted()
        max_pods = alloc.get("pods", DEFAULT_MAX_PODS)
        if len(running.pods) + 1 > max_pods:
            return "OutOfpods", insufficient("pods", 1, len(running.pods), max_pods)
        names = _CHECKED if requests.keys() <= _CHECKED_SET else \
            (*_CHECKED, *sorted(k for k in requests if "/" in k))
        for name in names:
            want = requests.get(name, 0)
            if not want or (is_dra_extended_resource_name(name) and name not in alloc):
                continue  # removeMissingExtendedResources: a resource the node does not publish is not its to count
            used = running.totals.get(name, 0)
            if used + want > alloc.get(name, 0):
                return f"OutOf{name}", insufficient(name, want, used, alloc.get(name, 0))
        return None

    def _reject(self, pod: Obj, reason: str, message: str) -> None:
        meta = pod["metadata"]

        def failed(status: Obj) -> None:
            status.update(phase="Failed", reason=reason, message=f"Pod was rejected: {message}")

        self.api.update_status("Pod", meta.get("namespace", "default"), meta["name"], failed)
        self.api.record_event(pod, "Warning", reason, message, source="kubelet")

    def _succeed(self, ns: str, name: str) -> None:
        now = self.api.timestamp()

        def done(status: Obj) -> None:
            status["phase"] = "Succeeded"
            for ctype in ("Ready", "ContainersReady"):
                set_condition(status, {"type": ctype, "status": "False", "reason": "PodCompleted",
                                       "lastProbeTime": None, "lastTransitionTime": now})

        self.api.update_status("Pod", ns, name, done)

    def _begin_termination(self, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        t = self._finish.pop(uid, None)
        if t is not None:
            t.cancel()
        delay = shutdown_time(pod, float(meta.get("deletionGracePeriodSeconds", 0)))
        ns, name = meta.get("namespace", "default"), meta["name"]
        self._terminate[uid] = self.clock.call_later(delay, lambda: self._remove(ns, name, uid))

    def _remove(self, ns: str, name: str, uid: str) -> None:
        self._terminate.pop(uid, None)
        if self._current(ns, name, uid) is not None:
            self.api.delete("Pod", ns, name, grace_period=0)


def _node_ready(node: Obj) -> bool:
    """A node without a Ready condition counts as ready (simulated nodes need not report one)."""
    cond = get_condition(node, "Ready")
    return cond is None or cond.get("status") == "True"
