"""The resource-quota controller (pkg/controller/resourcequota): keeps every quota's status true.

status.hard follows spec.hard, and status.used is recounted from what the namespace holds: the
pods still charged (not finished, not stuck terminating past their grace period), services,
claims and object counts, each as kubesched.api.quota evaluates it, restricted to the quota's
scopes. The admission plugin charges each new object as it admits it; the controller gives back
what goes away: it recounts a namespace's quotas when an object they track is deleted, a pod
finishes, or a service's or claim's usage changes (upstream's replenishment), when a quota's
spec changes, and every five minutes (--resource-quota-sync-period), which is what frees a pod
left terminating on a lost node. A refused create is retried by its controller; with this
controller's watch registered before theirs, the recount comes first at the same instant.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesched.api.objects import Obj
from kubesched.api.quota import (
    ZERO,
    ResourceList,
    add,
    evaluated,
    mask,
    matching_resources,
    pod_charged,
    printable,
    resource_list,
    scope_matches,
    scope_selectors,
    usage,
)
from kubesched.apiserver.errors import NotFoundError
from kubesched.apiserver.resourcequota import count_name
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import ADDED, DELETED, MODIFIED, WatchEvent
from kubesched.store.podindex import object_key

RESYNC_PERIOD = 300.0  # --resource-quota-sync-period
IGNORED = frozenset({"Event"})  # never counted (quota admission ignores events too)


class ResourceQuotaController:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.clock = clock
        self.queue = WorkQueue(clock, self._sync)
        self._quotas: Counter[str] = Counter()  # namespace -> how many quotas it has
        self._kinds: dict[str, None] = {}  # every kind stored so far, in order (what a count/ name may count)
        self._resync_timer: Timer | None = None

    def start(self) -> None:
        store = self.api.store
        for quota in store.list("ResourceQuota"):
            self._quotas[quota["metadata"].get("namespace", "")] += 1
            self.queue.add(object_key(quota))
        store.watch(self._on_quota, {"ResourceQuota"})
        store.watch(self._on_object)
        self._schedule_resync()

    def _schedule_resync(self) -> None:
        """The periodic recount, kept only while there are quotas (a cluster without any keeps no timer)."""
        if self._resync_timer is None and any(n > 0 for n in self._quotas.values()):
            self._resync_timer = self.clock.call_at(self.clock.now() + RESYNC_PERIOD, self._resync, daemon=True)

    def _resync(self) -> None:
        self._resync_timer = None
        for quota in self.api.store.list("ResourceQuota"):
            self.queue.add(object_key(quota))
        self._schedule_resync()

    def _on_quota(self, ev: WatchEvent) -> None:
        namespace = ev.obj["metadata"].get("namespace", "")
        if ev.type == ADDED:
            self._quotas[namespace] += 1
            self._schedule_resync()
        elif ev.type == DELETED:
            self._quotas[namespace] -= 1
            return
        elif ((ev.old or {}).get("spec") or {}).get("hard") == (ev.obj.get("spec") or {}).get("hard"):
            return  # its status: written here or by admission, nothing to recount
        self.queue.add(object_key(ev.obj))

    def _on_object(self, ev: WatchEvent) -> None:
        """Replenishment: recount the quotas an object's going, finishing or shrinking frees."""
        if ev.kind in IGNORED:
            return
        if ev.type == ADDED:
            self._kinds.setdefault(ev.kind, None)
        namespace = ev.obj["metadata"].get("namespace")
        if not self._quotas.get(namespace or ""):
            return
        if ev.type == MODIFIED and not self._frees(ev):
            return
        if ev.type in (DELETED, MODIFIED):
            count = count_name(ev.obj, self.api.store)
            for quota in self.api.store.list("ResourceQuota", namespace):
                hard = (quota.get("status") or {}).get("hard") or {}
                if matching_resources(ev.kind, count, hard, self.api.dra_extended_resource):
                    self.queue.add(object_key(quota))

    def _frees(self, ev: WatchEvent) -> bool:
        """An update that can free quota: a pod stops being charged, a service's or a claim's usage changes."""
        old, new = ev.old or {}, ev.obj
        if ev.kind == "Pod":
            now, seconds = self.clock.now(), self.api.seconds
            return pod_charged(old, now, seconds) and not pod_charged(new, now, seconds)
        if ev.kind in ("Service", "PersistentVolumeClaim"):
            return usage(old, "", True) != usage(new, "", True)
        return False

    def _sync(self, key: tuple[str, str]) -> None:
        """syncResourceQuota: status.hard from spec.hard, status.used recounted; written when changed."""
        namespace, name = key
        quota = self.api.store.get("ResourceQuota", namespace, name)
        if quota is None:
            return
        hard = resource_list((quota.get("spec") or {}).get("hard"))
        status = quota.get("status") or {}
        used = mask({**resource_list(status.get("used")), **self._usage(quota, list(hard))}, hard)
        new = {"hard": printable(hard), "used": printable(used)}
        if status.get("hard") is not None and status.get("used") is not None and \
                _values(status["hard"]) == _values(new["hard"]) and _values(status["used"]) == _values(new["used"]):
            return
        try:
            self.api.update_status("ResourceQuota", namespace, name, lambda st: _replace(st, new))
        except NotFoundError:
            return

    def _usage(self, quota: Obj, hard: list[str]) -> ResourceList:
        """CalculateUsage: every tracked resource some evaluator knows, summed over the objects in
        the quota's scopes (each starting at zero)."""
        namespace = quota["metadata"].get("namespace", "")
        scopes = scope_selectors(quota)
        now, seconds = self.clock.now(), self.api.seconds
        dra_extended = self.api.dra_extended_resource
        total: ResourceList = dict.fromkeys(evaluated(hard, dra_extended), ZERO)  # CalculateUsageStats starts each at zero
        get = self.api.store.get if dra_extended else None
        for kind in self._kinds:
            for obj in self.api.store.list(kind, namespace):
                count = count_name(obj, self.api.store)
                tracked = matching_resources(kind, count, hard, dra_extended)
                if not tracked:
                    break  # the kind's evaluator tracks none of them (every object of a kind shares its count name)
                if all(scope_matches(obj, s) for s in scopes):
                    charged = kind != "Pod" or pod_charged(obj, now, seconds)
                    total = add(total, mask(usage(obj, count, charged, get), tracked))
        return total


def _values(resources: dict[str, Any]) -> dict[str, Any]:
    """A resource list's amounts, whatever their spelling (quota.Equals compares values)."""
    return {name: value.value for name, value in resource_list(resources).items()}


def _replace(status: Obj, new: Obj) -> None:
    status.clear()
    status.update(new)
