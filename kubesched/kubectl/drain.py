"""`kubectl drain`: cordon a node, then evict its pods through the Eviction API.

Follows staging/src/k8s.io/kubectl/pkg/drain (v1.35). Pods are sorted through kubectl's filters
in its order — DaemonSet pods, mirror pods, pods with emptyDir data, pods with no controller —
and any filter that is not overridden stops the drain before a single eviction (the node stays
cordoned). Every other pod is evicted at once; an eviction a disruption budget refuses (429) is
retried every 5 seconds, and the drain is complete when every evicted pod is gone. A timeout, if
given, ends the wait with what is left.

A scenario's drain defaults to `--ignore-daemonsets --delete-emptydir-data --force`: it evicts
every pod except DaemonSet and mirror pods. Set `force` or `deleteEmptydirData` to false to get
kubectl's refusals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.duration import go_duration
from kubesched.api.objects import MIRROR_ANNOTATION, Obj, controller_of, is_terminal
from kubesched.apiserver.errors import APIError, NotFoundError, TooManyRequests
from kubesched.apiserver.interface import API
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.store.base import DELETED, WatchEvent

RETRY_SECONDS = 5.0
DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"


@dataclass
class DrainOptions:
    force: bool = True
    ignore_daemonsets: bool = True
    delete_emptydir_data: bool = True
    disable_eviction: bool = False  # delete instead of evict (bypasses budgets)
    grace_period: int | None = None  # None: each pod's own
    timeout: float | None = None  # None: wait as long as it takes (kubectl's --timeout=0s)

    @classmethod
    def from_event(cls, body: dict[str, Any], parse_duration: Any) -> DrainOptions:
        grace = body.get("gracePeriod")
        return cls(force=body.get("force", True), ignore_daemonsets=body.get("ignoreDaemonsets", True),
                   delete_emptydir_data=body.get("deleteEmptydirData", True),
                   disable_eviction=body.get("disableEviction", False),
                   grace_period=None if grace is None or grace < 0 else grace,
                   timeout=parse_duration(body["timeout"]) if body.get("timeout") else None)


@dataclass
class Drain:
    """One `kubectl drain NODE` run and what it printed."""

    node: str
    started: float
    options: DrainOptions
    status: str = "InProgress"  # Drained, Failed, TimedOut, or still InProgress when the run ended
    finished: float | None = None
    evicted: list[str] = field(default_factory=list)  # accepted evictions, in order
    waiting: dict[str, str] = field(default_factory=dict)  # pod -> uid, evicted but not gone yet
    pending: dict[str, str] = field(default_factory=dict)  # pod -> last refusal, to be retried
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    log: list[tuple[float, str]] = field(default_factory=list)  # what kubectl printed, with times

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "started": self.started, "finished": self.finished, "status": self.status,
                "evicted": self.evicted, "notEvicted": dict(self.pending), "warnings": self.warnings,
                "errors": self.errors, "log": [{"time": t, "message": m} for t, m in self.log]}


class Drainer:
    """Runs drains against the API; a pod's deletion is seen through the watch, as kubectl polls for it."""

    def __init__(self, api: API, clock: Clock, observer: Observer = NULL_OBSERVER) -> None:
        self.api = api
        self.clock = clock
        self.observer = observer  # told of every drain as it starts
        # Every drain, finished or not: kubectl keeps printing what it waited for after a timeout.
        self._drains: list[Drain] = []
        self._timers: dict[int, Any] = {}  # id(drain) -> its timeout timer
        self._deleted_daemonsets: set[tuple[str, str]] = set()  # (namespace, name) deleted during the run
        self._retries: dict[tuple[int, str], Timer] = {}  # (id(drain), pod) -> its next eviction attempt
        api.store.watch(self._on_pod, {"Pod"})
        api.store.watch(self._on_daemonset, {"DaemonSet"})
        api.store.watch(self._on_budget, {"PodDisruptionBudget"})

    def drain(self, node: str, options: DrainOptions) -> Drain:
        d = Drain(node, self.clock.now(), options)
        self.observer.drain_started(d)
        self._drains.append(d)
        if self.api.store.get("Node", "", node) is None:
            self._finish(d, "Failed", f'nodes "{node}" not found')
            return d
        if not self.api.get("Node", "", node).get("spec", {}).get("unschedulable"):
            self.api.patch("Node", "", node, {"spec": {"unschedulable": True}})
            self._print(d, f"node/{node} cordoned")
        else:
            self._print(d, f"node/{node} already cordoned")
        to_evict = self._filter(d)
        if d.errors:
            self._finish(d, "Failed", f'unable to drain node "{node}" due to error: {", ".join(d.errors)}')
            return d
        if d.warnings:
            self._print(d, "Warning: " + "; ".join(d.warnings))
        if options.timeout is not None:
            self._timers[id(d)] = self.clock.call_at(d.started + options.timeout, lambda: self._timeout(d))
        for pod in to_evict:
            self._evict(d, pod["metadata"].get("namespace", "default"), pod["metadata"]["name"])
        self._check_done(d)
        return d

    def _filter(self, d: Drain) -> list[Obj]:
        """kubectl's pod filters; fills d.errors / d.warnings and returns the pods to evict."""
        fatal: dict[str, list[str]] = {}
        warned: dict[str, list[str]] = {}
        keep: list[Obj] = []
        for pod in sorted(self.api.store.list("Pod"), key=lambda p: (p["metadata"].get("namespace", ""),
                                                                     p["metadata"]["name"])):
            if pod.get("spec", {}).get("nodeName") != d.node:
                continue
            verdict = self._verdict(pod, d.options)
            name = f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
            if verdict is None:
                keep.append(pod)
                continue
            kind, message = verdict
            if kind == "skip-silent":
                continue
            if kind == "fatal":
                fatal.setdefault(message, []).append(name)
            else:
                warned.setdefault(message, []).append(name)
                if kind == "warn":
                    keep.append(pod)
        d.errors = [f"cannot delete {m}: {', '.join(p)}" for m, p in fatal.items()]
        d.warnings = [f"{m}: {', '.join(p)}" for m, p in warned.items()]
        return keep

    def _verdict(self, pod: Obj, o: DrainOptions) -> tuple[str, str] | None:
        """kubectl's filters in order: a pod stops at the first that keeps it ("skip", "fatal");
        a warning lets it through to the next filters, and the last warning is the one shown.
        None means evict it silently; ("warn", message) evicts it with a warning."""
        verdict = None
        for check in (self._daemonset_filter, self._mirror_filter, self._local_storage_filter,
                      self._unreplicated_filter):
            result = check(pod, o)
            if result is None:
                continue
            if result[0] != "warn":
                return result
            verdict = result
        return verdict

    def _daemonset_filter(self, pod: Obj, o: DrainOptions) -> tuple[str, str] | None:
        owner = controller_of(pod)
        if owner is None or owner.get("kind") != "DaemonSet" or is_terminal(pod):
            return None
        ns = pod["metadata"].get("namespace", "default")
        if (ns, owner.get("name", "")) in self._deleted_daemonsets \
                and self.api.store.get("DaemonSet", ns, owner.get("name", "")) is None:
            # An orphan of a DaemonSet deleted during the run: nothing would recreate it, so it may
            # go with --force. One the input never had is in the exported cluster still.
            missing = f'daemonsets.apps "{owner.get("name")}" not found'
            return ("warn", missing) if o.force else ("fatal", missing)
        return ("skip", DAEMONSET_WARNING) if o.ignore_daemonsets else ("fatal", DAEMONSET_FATAL)

    @staticmethod
    def _mirror_filter(pod: Obj, o: DrainOptions) -> tuple[str, str] | None:
        return ("skip-silent", "") if MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {}) else None

    @staticmethod
    def _local_storage_filter(pod: Obj, o: DrainOptions) -> tuple[str, str] | None:
        if is_terminal(pod) or not any("emptyDir" in v for v in pod.get("spec", {}).get("volumes") or ()):
            return None
        return ("warn", LOCAL_STORAGE_WARNING) if o.delete_emptydir_data else ("fatal", LOCAL_STORAGE_FATAL)

    @staticmethod
    def _unreplicated_filter(pod: Obj, o: DrainOptions) -> tuple[str, str] | None:
        if is_terminal(pod) or controller_of(pod) is not None:
            return None
        return ("warn", UNMANAGED_WARNING) if o.force else ("fatal", UNMANAGED_FATAL)

    def _evict(self, d: Drain, ns: str, name: str) -> None:
        if d.status != "InProgress":
            return
        key = f"{ns}/{name}"
        pod = self.api.store.get("Pod", ns, name)
        if pod is None:
            d.pending.pop(key, None)
            self._check_done(d)
            return
        uid = pod["metadata"].get("uid", "")
        try:
            if d.options.disable_eviction:
                self.api.delete("Pod", ns, name, grace_period=d.options.grace_period)
            else:
                body: Obj = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
                if d.options.grace_period is not None:
                    body["deleteOptions"] = {"gracePeriodSeconds": d.options.grace_period}
                self.api.evict(ns, name, body, requester=f"drain/{d.node}")
        except NotFoundError:
            d.pending.pop(key, None)
            self._check_done(d)
            return
        except TooManyRequests as e:
            d.pending[key] = e.message
            self._print(d, f'error when evicting pods/"{name}" -n "{ns}" (will retry after 5s): {e.message}')
            # A retry alone does not keep the run going: it only repeats unless a budget allows more
            # (see _on_budget).
            self._retries[(id(d), key)] = self.clock.call_at(
                self.clock.now() + RETRY_SECONDS, lambda: self._evict(d, ns, name), daemon=True)
            return
        except APIError as e:
            d.pending[key] = e.message
            d.errors.append(f'error when evicting pods/"{name}" -n "{ns}": {e.message}')
            self._print(d, d.errors[-1])
            return
        d.pending.pop(key, None)
        d.evicted.append(key)
        self._print(d, f"{'pod' if d.options.disable_eviction else 'evicting pod'} {key}")
        if self.api.store.get("Pod", ns, name) is not None:
            d.waiting[key] = uid
        else:
            self._print(d, f"pod/{name} evicted")
        self._check_done(d)

    def _on_budget(self, ev: WatchEvent) -> None:
        """A budget now allowing disruptions makes the refused evictions in its namespace worth
        retrying: their next attempt (still at kubectl's 5 s pace) keeps the run going."""
        if ev.type == DELETED or not ((ev.obj.get("status") or {}).get("disruptionsAllowed") or 0) > 0:
            return
        ns = ev.obj["metadata"].get("namespace", "default")
        for (drain_id, key), timer in list(self._retries.items()):
            if timer.cancelled or not timer.daemon or not key.startswith(f"{ns}/"):
                continue
            timer.cancel()
            self._retries[(drain_id, key)] = self.clock.call_at(timer.when, timer.fn)

    def _on_daemonset(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            meta = ev.obj["metadata"]
            self._deleted_daemonsets.add((meta.get("namespace", "default"), meta["name"]))

    def _on_pod(self, ev: WatchEvent) -> None:
        if ev.type != DELETED:
            return
        meta = ev.obj["metadata"]
        key = f"{meta.get('namespace', 'default')}/{meta['name']}"
        for d in self._drains:
            if d.waiting.get(key) == meta.get("uid"):
                del d.waiting[key]
                self._print(d, f"pod/{meta['name']} evicted")
                self._check_done(d)

    def _check_done(self, d: Drain) -> None:
        if d.status == "InProgress" and not d.waiting and not d.pending:
            if d.errors:
                self._finish(d, "Failed", f'unable to drain node "{d.node}" due to error: {", ".join(d.errors)}')
            else:
                self._finish(d, "Drained", f"node/{d.node} drained")

    def _timeout(self, d: Drain) -> None:
        if d.status == "InProgress":
            assert d.options.timeout is not None
            self._finish(d, "TimedOut", f"drain did not complete within {go_duration(d.options.timeout)}")

    def _finish(self, d: Drain, status: str, message: str) -> None:
        d.status = status
        d.finished = self.clock.now()
        timer = self._timers.pop(id(d), None)
        if timer is not None:
            timer.cancel()
        self._print(d, message if status == "Drained" else f"error: {message}")

    def _print(self, d: Drain, message: str) -> None:
        d.log.append((self.clock.now(), message))
