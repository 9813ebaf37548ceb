"""The descheduler framework (kubernetes-sigs/descheduler pkg/framework), run in cluster time.

A profile enables plugins at four extension points. Deschedule and Balance plugins look at the
nodes and pick pods to move; Filter plugins say whether a pod may be evicted at all (strategies
ask while choosing), PreEvictionFilter plugins check again right before the eviction (nodeFit
lives there). Every eviction goes through the API server's Eviction subresource, so budgets
are enforced by the API, never here; the PodEvictor only adds the policy's per-node,
per-namespace and per-pass limits, counted anew at every pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from kubesched.api.objects import Obj, get_condition, is_terminating
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.eviction import EVICTED_BY_API, guarding_budgets
from kubesched.descheduler.nodes import ready_nodes
from kubesched.store.base import MODIFIED, WatchEvent

if TYPE_CHECKING:
    from kubesched.apiserver.interface import API
    from kubesched.descheduler.placement import Placement
    from kubesched.kubelet.usage import UsageTracker
    from kubesched.store.base import Store
    from kubesched.store.podindex import PodsByNode

DESCHEDULE, BALANCE, FILTER, PRE_EVICTION_FILTER = "deschedule", "balance", "filter", "preEvictionFilter"
EXTENSION_POINTS = (DESCHEDULE, BALANCE, FILTER, PRE_EVICTION_FILTER)
REQUESTER = "descheduler"


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's answer (the framework's *Status): a Filter or PreEvictionFilter refusal with
    why, or the error a Deschedule or Balance run ended with. Those return None on success, as
    upstream's return nil."""

    ok: bool = True
    reason: str = ""

    @classmethod
    def refused(cls, reason: str) -> Status:
        return cls(False, reason)


ALLOWED = Status()


class EvictionLimitError(Exception):
    """A policy limit stops the eviction before any API call (upstream's typed errors)."""

    message: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.message


class NodeLimitError(EvictionLimitError):
    message = "maximum number of evicted pods per node reached"


class NamespaceLimitError(EvictionLimitError):
    message = "maximum number of evicted pods per namespace reached"


class TotalLimitError(EvictionLimitError):
    message = "maximum number of evicted pods per a descheduling cycle reached"


class EvictionFailed(Exception):
    """The eviction did not happen: the API refused it (429 budget, 404 gone, 500 several budgets),
    or a filter asked again at eviction time said no (code 0)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class EvictionAttempt:
    """One eviction a strategy asked for, with what became of it."""

    time: float
    pod: str  # namespace/name
    uid: str
    node: str | None
    profile: str
    strategy: str
    result: str  # Evicted, Refused, or the limit that stopped it
    code: int | None = None
    message: str = ""
    pdb: str | None = None
    landing: str | None = None  # where the replacement would likely go (our scheduler's choice)

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "pod": self.pod, "node": self.node, "profile": self.profile,
                "strategy": self.strategy, "result": self.result, "code": self.code,
                "message": self.message, "pdb": self.pdb, "landing": self.landing}


@dataclass
class Limits:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


class PodEvictor:
    """Counts a pass's evictions against the policy's limits, calls the Eviction API and keeps
    every attempt."""

    def __init__(self, api: API, limits: Limits, grace_period: int | None = None) -> None:
        self.api = api
        self.limits = limits
        self.grace_period = grace_period
        self.attempts: list[EvictionAttempt] = []
        self.placement: Placement | None = None
        self.reset()

    def reset(self) -> None:
        """A new pass: fresh counters, and a fresh list of attempts for the pass's record."""
        self.attempts = []
        self.per_node: dict[str, int] = {}
        self.per_namespace: dict[str, int] = {}
        self.total = 0

    def note(self, pod: Obj, profile: str, strategy: str, result: str, message: str = "") -> EvictionAttempt:
        meta = pod["metadata"]
        attempt = EvictionAttempt(self.api.now(), f"{meta.get('namespace', 'default')}/{meta['name']}",
                                  meta.get("uid", ""), pod["spec"].get("nodeName"), profile, strategy, result,
                                  message=message)
        self.attempts.append(attempt)
        return attempt

    def evict(self, pod: Obj, profile: str, strategy: str, reason: str = "",
              hooks: Iterable[Callable[[Obj, EvictionAttempt], None]] = ()) -> EvictionAttempt:
        """EvictPod: raise an EvictionLimitError or EvictionFailed unless the pod was evicted."""
        meta = pod["metadata"]
        ns, node = meta.get("namespace", "default"), pod["spec"].get("nodeName")
        limit_error: EvictionLimitError | None = None
        if self.limits.total is not None and self.total + 1 > self.limits.total:
            limit_error = TotalLimitError()
        elif node and self.limits.per_node is not None and self.per_node.get(node, 0) + 1 > self.limits.per_node:
            limit_error = NodeLimitError()
        elif self.limits.per_namespace is not None and self.per_namespace.get(ns, 0) + 1 > self.limits.per_namespace:
            limit_error = NamespaceLimitError()
        if limit_error is not None:
            self.note(pod, profile, strategy, "LimitReached", limit_error.message)
            raise limit_error
        body: Obj = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": meta["name"], "namespace": ns}}
        if self.grace_period is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": self.grace_period}
        current = self.api.store.get("Pod", ns, meta["name"])
        try:
            self.api.evict(ns, meta["name"], body, requester=REQUESTER)
        except APIError as e:
            message = " ".join([e.message, *e.causes])
            attempt = self.note(pod, profile, strategy, "Refused", message)
            attempt.code, attempt.pdb = e.code, e.pdb
            raise EvictionFailed(e.code, message) from None
        attempt = self.note(pod, profile, strategy, "Evicted")
        # The budget an accepted eviction debited, looked up again: the API's answer does not name
        # it (a refusal's does), nor does a remote kube-apiserver's in live mode.
        budgets = guarding_budgets(self.api.store, current) if current is not None else []
        attempt.code, attempt.pdb = 200, budgets[0]["metadata"]["name"] if len(budgets) == 1 else None
        if node:
            self.per_node[node] = self.per_node.get(node, 0) + 1
        self.per_namespace[ns] = self.per_namespace.get(ns, 0) + 1
        self.total += 1
        for hook in hooks:  # before the landing is worked out: a hook may steer it
            hook(pod, attempt)
        if not is_active(pod):
            attempt.message = "the pod had finished: nothing to place again"
        elif self.placement is not None:
            attempt.landing = self.placement.move(pod)
        self.api.record_event(pod, "Normal", reason or strategy or "NotSet",
                              f"pod evicted from {node} node by sigs.k8s.io/descheduler", source="descheduler")
        return attempt


class Evictor:
    """What a plugin may do about evictions: ask the profile's filters, and evict."""

    def __init__(self, profile: str, pod_evictor: PodEvictor) -> None:
        self.profile = profile
        self.pod_evictor = pod_evictor
        self.filter_plugins: list[Plugin] = []
        self.pre_eviction_plugins: list[Plugin] = []
        # Run after each accepted eviction (PreferAvoidPods marks the node the pod left).
        self.hooks: list[Callable[[Obj, EvictionAttempt], None]] = []

    def filter(self, pod: Obj) -> bool:
        return all(pl.filter(pod).ok for pl in self.filter_plugins)

    def pre_eviction_filter(self, pod: Obj, strategy: str = "") -> bool:
        """PreEvictionFilter; a refusal is kept as a "Filtered" attempt, with the plugin's reason."""
        for pl in self.pre_eviction_plugins:
            status = pl.pre_eviction_filter(pod)
            if not status.ok:
                self.pod_evictor.note(pod, self.profile, strategy, "Filtered", f"{pl.name}: {status.reason}")
                return False
        return True

    def evict(self, pod: Obj, strategy: str, reason: str = "") -> None:
        # Some strategies run PreEvictionFilter over all their candidates before evicting any;
        # filters whose answer depends on this pass's earlier evictions are asked again here.
        for pl in self.pre_eviction_plugins:
            if not pl.recheck_at_eviction:
                continue
            status = pl.pre_eviction_filter(pod)
            if not status.ok:
                attempt = self.pod_evictor.note(pod, self.profile, strategy, "Filtered", f"{pl.name}: {status.reason}")
                raise EvictionFailed(0, attempt.message)
        self.pod_evictor.evict(pod, self.profile, strategy, reason, self.hooks)


class EvictionHistory:
    """When pods guarded by each budget were evicted, as the descheduler's pod informer sees it:
    a pod gaining the Eviction API's DisruptionTarget condition was evicted then, debiting the one
    budget that guarded it. Every requester counts (a drain, another descheduler), as the budget's
    own debits do; dry runs mark nothing."""

    def __init__(self, store: Store, now: Callable[[], float]) -> None:
        self._store = store
        self._now = now
        self._times: dict[tuple[str, str], list[float]] = {}  # (namespace, budget) -> eviction times
        store.watch(self._on_pod, {"Pod"})

    def _on_pod(self, ev: WatchEvent) -> None:
        if ev.type != MODIFIED or ev.old is None or not _evicted(ev.obj) or _evicted(ev.old):
            return
        budgets = guarding_budgets(self._store, ev.old)
        if len(budgets) == 1:
            meta = budgets[0]["metadata"]
            self._times.setdefault((meta.get("namespace", "default"), meta["name"]), []).append(self._now())

    def count(self, namespace: str, budget: str, since: float) -> int:
        """Evictions debiting `budget` after `since`."""
        return sum(1 for t in self._times.get((namespace, budget), ()) if t > since)


def _evicted(pod: Obj) -> bool:
    return (get_condition(pod, "DisruptionTarget") or {}).get("reason") == EVICTED_BY_API


@dataclass
class Handle:
    """What plugins reach: the API (reads), the pods on each node, the evictor, and the
    what-if placement our scheduler would make."""

    api: API
    pods_by_node: PodsByNode
    evictor: Evictor
    placement: Placement
    node_selector: str | None = None
    # The metrics API's view of actual usage (the kubelets' usage model): .pods[uid].total(key),
    # .node_totals(node); None when the cluster has no kubelets.
    metrics: UsageTracker | None = None
    evictions: EvictionHistory | None = None  # the descheduler's, over the whole run
    _ready: dict[str | None, frozenset[str]] = field(default_factory=dict)

    def now(self) -> float:
        return self.api.now()

    def ready_node_names(self, selector: str | None) -> frozenset[str]:
        """ReadyNodes by `selector`, once per pass (the handle lives for one pass)."""
        names = self._ready.get(selector)
        if names is None:
            names = self._ready[selector] = frozenset(n["metadata"]["name"]
                                                      for n in ready_nodes(self.api.store, selector))
        return names

    def pods_on_node(self, node: str, keep: Callable[[Obj], bool] | None = None) -> list[Obj]:
        """ListPodsOnANode: every pod bound to `node` (any phase) that `keep` accepts."""
        pods = self.pods_by_node.pods(node)
        return [p for p in pods if keep(p)] if keep is not None else pods

    def evictable_pods_on_node(self, node: str, extra: Callable[[Obj], bool] | None = None) -> list[Obj]:
        """Pods on `node` the profile's Filter plugins accept (and `extra`, a strategy's own test)."""
        ev = self.evictor
        return self.pods_on_node(node, lambda p: ev.filter(p) and (extra is None or extra(p)))


class Plugin:
    """A descheduler plugin. `points` lists the extension points it implements; `defaults`
    and `validate` are its argument defaulting and validation (exit 2 on errors)."""

    name: ClassVar[str] = ""
    points: ClassVar[frozenset[str]] = frozenset()
    fields: ClassVar[frozenset[str]] = frozenset()  # argument names the plugin accepts
    recheck_at_eviction: ClassVar[bool] = False  # PreEvictionFilter asked again right at eviction

    def __init__(self, handle: Handle, args: dict[str, Any]) -> None:
        self.handle = handle
        self.args = args

    @classmethod
    def defaults(cls, args: dict[str, Any]) -> dict[str, Any]:
        return dict(args)

    @classmethod
    def validate(cls, args: dict[str, Any]) -> list[str]:
        return []

    def prepare(self) -> None:
        """Called once at the start of each pass, before any plugin runs (kubesched's hook)."""

    def deschedule(self, nodes: list[Obj]) -> Status | None:
        """Evict what the strategy finds; an error Status is reported in the pass."""
        raise NotImplementedError

    def balance(self, nodes: list[Obj]) -> Status | None:
        """Evict what the strategy finds; an error Status is reported in the pass."""
        raise NotImplementedError

    def filter(self, pod: Obj) -> Status:
        return ALLOWED

    def pre_eviction_filter(self, pod: Obj) -> Status:
        return ALLOWED


def try_evict(handle: Handle, pod: Obj, strategy: str, reason: str = "") -> str:
    """One eviction, as the strategies' loops make it: "evicted", "skip" (refused or filtered),
    "node" (this node's limit is reached) or "stop" (the pass's total limit is reached)."""
    ev = handle.evictor
    if not ev.pre_eviction_filter(pod, strategy):
        return "skip"
    try:
        ev.evict(pod, strategy, reason)
    except NodeLimitError:
        return "node"
    except TotalLimitError:
        return "stop"
    except (NamespaceLimitError, EvictionFailed):
        return "skip"
    return "evicted"


def evict_violators(handle: Handle, nodes: list[Obj], keep: Callable[[Obj], bool],
                    violates: Callable[[Obj, Obj], bool], strategy: str) -> None:
    """The Deschedule loop of the node-property strategies: node by node, each evictable pod
    (`keep`) that `violates` its node goes; a node's limit moves on, the total limit ends it."""
    for node in nodes:
        for pod in handle.evictable_pods_on_node(node["metadata"]["name"], keep):
            if not violates(pod, node):
                continue
            outcome = try_evict(handle, pod, strategy)
            if outcome == "node":
                break
            if outcome == "stop":
                return


def is_active(pod: Obj) -> bool:
    """Bound, not finished and not terminating: a pod that occupies its node."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not is_terminating(pod)
