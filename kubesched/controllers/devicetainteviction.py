"""The device taint eviction controller: evicts pods whose allocated devices carry a NoExecute taint
their claim does not tolerate (DRADeviceTaints, alpha in v1.35; pkg/controller/devicetainteviction).

A claim's eviction time is, over the NoExecute taints of its allocated devices (the drivers' own in
the newest generation of each pool, and with DRADeviceTaintRules those of the rules selecting the
device), the earliest `timeAdded` plus the smallest `tolerationSeconds` among the allocation's
tolerations of that taint with effect NoExecute; a taint such a toleration tolerates without
`tolerationSeconds` never evicts. A pod is evicted at the earliest time of the claims reserved for
it: a "Marking for deletion" event (DeviceTaintManagerEviction), the DisruptionTarget condition
(DeletionByDeviceTaintManager), then an ordinary delete with the pod's grace period. A pending
eviction that no longer applies is cancelled with a "Cancelling deletion" event.

Each DeviceTaintRule gets an EvictionInProgress condition in its status: at once when it is made or
its spec changes, then ten seconds after its evictions, as upstream paces it. With effect None the
condition tells what NoExecute would do.

Where upstream keeps indexes up to date event by event, this controller works every eviction out
again after a change to claims, slices, rules or the pods' claims or nodes: the same answers, and a
burst of changes costs one pass. It runs only with DRADeviceTaints on, as kube-controller-manager
starts it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from kubesched.api.dra import taintrules
from kubesched.api.dra.claims import (
    ClaimNameError,
    allocation,
    claim_name,
    is_for_pod,
    pod_claims,
    reserved_for,
)
from kubesched.api.dra.taints import NO_EXECUTE, tolerates
from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.objects import Obj, is_terminating, set_condition
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock, Timer
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, MODIFIED, WatchEvent

SOURCE = "device-taint-eviction-controller"
EVENT_REASON = "DeviceTaintManagerEviction"
DISRUPTION_REASON = "DeletionByDeviceTaintManager"
DISRUPTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"
CONDITION = "EvictionInProgress"
RULE_STATUS_PERIOD = 10.0  # ruleStatusPeriod
SYNC = "sync"
PodKey = tuple[str, str]


@dataclass
class Eviction:
    """When a claim's (or pod's) users must go, and the rules among the reasons."""

    when: float
    rules: set[str] = field(default_factory=set)


class DeviceTaintEvictionController:
    def __init__(self, api: APIServer, clock: Clock, features: FeatureGates = DEFAULT_FEATURE_GATES) -> None:
        self.api = api
        self.clock = clock
        self.enabled = features.enabled("DRADeviceTaints")
        self.rules_enabled = features.enabled("DRADeviceTaintRules")
        self._queue = WorkQueue(clock, self._sync)
        self._due: dict[PodKey, tuple[str, Eviction, Timer]] = {}  # pod -> (uid, eviction, timer)
        self._evicted: set[str] = set()  # pod uids
        self._evictions_by_rule: dict[str, int] = {}  # rule uid -> pods evicted for it

    def start(self) -> None:
        if not self.enabled:
            return
        kinds = {"Pod", "ResourceClaim", "ResourceSlice"} | ({"DeviceTaintRule"} if self.rules_enabled else set())
        self.api.store.watch(self._on_event, kinds)
        self._queue.add(SYNC)

    # ---- watch handlers ---------------------------------------------------------------------

    def _on_event(self, ev: WatchEvent) -> None:
        if self._relevant(ev):
            self._queue.add(SYNC)

    def _relevant(self, ev: WatchEvent) -> bool:
        old, new = ev.old, ev.obj
        if ev.kind == "Pod":
            if ev.type == DELETED:
                return (new["metadata"].get("namespace", ""), new["metadata"]["name"]) in self._due
            if ev.type != MODIFIED or old is None:
                return bool((new.get("spec") or {}).get("nodeName"))
            return (old.get("spec") or {}).get("nodeName") != (new.get("spec") or {}).get("nodeName") or \
                (old.get("status") or {}).get("resourceClaimStatuses") != \
                (new.get("status") or {}).get("resourceClaimStatuses")
        if ev.kind == "ResourceClaim":
            before = old if ev.type == MODIFIED else None
            if allocation(new) is None and (before is None or allocation(before) is None):
                return False
            return before is None or ev.type == DELETED or allocation(before) != allocation(new) or \
                reserved_for(before) != reserved_for(new)
        if ev.kind == "ResourceSlice":
            return _has_no_execute(old) or _has_no_execute(new)
        # A DeviceTaintRule: made, deleted or its spec changed (not the status this controller writes).
        return ev.type != MODIFIED or old is None or old.get("spec") != new.get("spec")

    # ---- the pass ---------------------------------------------------------------------------

    def _sync(self, key: object) -> None:
        if key != SYNC:
            self._update_rule_status(str(key))
            return
        rules = self._rules()
        due = self._pods_due(self._device_taints(), [r for r in rules if _effect(r) == NO_EXECUTE])
        for rule in rules:
            condition = _condition(rule)
            if condition is None or condition.get("observedGeneration") != rule["metadata"].get("generation", 1):
                self._update_rule_status(rule["metadata"]["name"])  # a new rule or spec: at once, before evicting
            elif any(rule["metadata"]["name"] in e.rules for _, e in due.values()):
                self._queue.add_after(rule["metadata"]["name"], RULE_STATUS_PERIOD)
        for pod_key in [k for k in self._due if k not in due or due[k][0] != self._due[k][0]
                        or due[k][1].when != self._due[k][1].when]:
            uid, _, stale = self._due.pop(pod_key)
            stale.cancel()
            pod = self.api.store.get("Pod", *pod_key)
            if pod_key not in due and pod is not None and pod["metadata"].get("uid") == uid:
                self._event(pod_key, uid, "Cancelling deletion")  # none for a pod that is gone
        now = self.clock.now()
        for pod_key, (uid, eviction) in due.items():
            if pod_key in self._due:
                self._due[pod_key] = (uid, eviction, self._due[pod_key][2])  # the same time, its reasons now
            else:
                self._due[pod_key] = (uid, eviction, self.clock.call_at(max(eviction.when, now), self._firing(pod_key)))

    def _rules(self) -> list[Obj]:
        return list(self.api.store.list("DeviceTaintRule")) if self.rules_enabled else []

    def _published(self) -> list[tuple[str, str, Obj]]:
        """(driver, pool, device) of every device in the newest generation of its pool."""
        slices = [(s.get("spec") or {}) for s in self.api.store.list("ResourceSlice")]
        newest: dict[tuple[str, str], int] = {}
        for spec in slices:
            pool = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))
            newest[pool] = max(newest.get(pool, -1), _generation(spec))
        return [(spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""), device) for spec in slices
                if _generation(spec) == newest[(spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))]
                for device in spec.get("devices") or ()]

    def _device_taints(self) -> dict[tuple[str, str, str], list[Obj]]:
        """The drivers' NoExecute taints per device."""
        taints: dict[tuple[str, str, str], list[Obj]] = {}
        for driver, pool, device in self._published():
            found = [t for t in device.get("taints") or () if t.get("effect") == NO_EXECUTE]
            if found:
                taints[(driver, pool, device.get("name", ""))] = found
        return taints

    def _claim_eviction(self, claim: Obj, taints: dict[tuple[str, str, str], list[Obj]],
                        rules: list[Obj]) -> Eviction | None:
        """claimEvictionTime."""
        found: Eviction | None = None
        for result in ((allocation(claim) or {}).get("devices") or {}).get("results") or ():
            device = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            sources = [(t, None) for t in taints.get(device, ())] + \
                [(taintrules.taint(r), r["metadata"]["name"]) for r in rules if taintrules.matches(r, *device)]
            for taint, rule in sources:
                when = self._taint_eviction(taint, result.get("tolerations") or [])
                if when is None:
                    continue
                if found is None:
                    found = Eviction(when)
                found.when = min(found.when, when)
                if rule is not None:
                    found.rules.add(rule)
        return found

    def _taint_eviction(self, taint: Obj, tolerations: list[Obj]) -> float | None:
        """When one NoExecute taint evicts under an allocation's tolerations (None: never)."""
        added = self.api.seconds(taint["timeAdded"]) if taint.get("timeAdded") else self.clock.now()
        seconds: float | None = None
        for toleration in tolerations:
            if toleration.get("effect") == NO_EXECUTE and tolerates(toleration, taint):
                if toleration.get("tolerationSeconds") is None:
                    return None  # tolerated for good
                limit = max(float(toleration["tolerationSeconds"]), 0.0)
                seconds = limit if seconds is None else min(seconds, limit)
        return added + (seconds or 0.0)

    def _pods_due(self, taints: dict[tuple[str, str, str], list[Obj]], rules: list[Obj]
                  ) -> dict[PodKey, tuple[str, Eviction]]:
        """podEvictionTime for every pod a tainted claim is reserved for."""
        due: dict[PodKey, tuple[str, Eviction]] = {}
        for claim in self.api.store.list("ResourceClaim"):
            if allocation(claim) is None:
                continue
            eviction = self._claim_eviction(claim, taints, rules)
            if eviction is None:
                continue
            namespace = claim["metadata"].get("namespace", "")
            for consumer in reserved_for(claim):
                if consumer.get("resource") != "pods" or consumer.get("apiGroup"):
                    continue
                pod = self.api.store.get("Pod", namespace, consumer.get("name", ""))
                if pod is None or pod["metadata"].get("uid") != consumer.get("uid") \
                        or not self._uses(pod, claim) or pod["metadata"]["uid"] in self._evicted:
                    continue
                key = (namespace, pod["metadata"]["name"])
                have = due.get(key)
                if have is None:
                    due[key] = (pod["metadata"]["uid"], Eviction(eviction.when, set(eviction.rules)))
                else:
                    have[1].when = min(have[1].when, eviction.when)
                    have[1].rules |= eviction.rules
        return due

    @staticmethod
    def _uses(pod: Obj, claim: Obj) -> bool:
        """A scheduled pod whose claims include this one (and, for a generated one, own it)."""
        if not (pod.get("spec") or {}).get("nodeName"):
            return False
        for pod_claim in pod_claims(pod):
            try:
                name, check_owner = claim_name(pod, pod_claim)
            except ClaimNameError:
                continue
            if name == claim["metadata"]["name"] and not (check_owner and is_for_pod(pod, claim) is not None):
                return True
        return False

    # ---- evictions --------------------------------------------------------------------------

    def _firing(self, key: PodKey) -> Callable[[], None]:
        return lambda: self._fire(key)

    def _fire(self, key: PodKey) -> None:
        uid, eviction, _timer = self._due.pop(key)
        pod = self.api.store.get("Pod", *key)
        if pod is None or pod["metadata"].get("uid") != uid:
            return
        self._evicted.add(uid)
        if is_terminating(pod):
            return
        self._event(key, uid, "Marking for deletion")
        cond = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                "lastTransitionTime": self.api.timestamp(), "reason": DISRUPTION_REASON,
                "message": DISRUPTION_MESSAGE}
        with contextlib.suppress(APIError):
            self.api.update_status("Pod", *key, lambda status: set_condition(status, cond))
            self.api.delete("Pod", *key)
        for name in sorted(eviction.rules):
            rule = self.api.store.get("DeviceTaintRule", "", name)
            if rule is not None:
                uid_ = rule["metadata"].get("uid", name)
                self._evictions_by_rule[uid_] = self._evictions_by_rule.get(uid_, 0) + 1
                self._queue.add_after(name, RULE_STATUS_PERIOD)

    def _event(self, key: PodKey, uid: str, message: str) -> None:
        ref = {"kind": "Pod", "metadata": {"namespace": key[0], "name": key[1], "uid": uid}}
        self.api.record_event(ref, "Normal", EVENT_REASON, message, source=SOURCE)

    # ---- rule status ------------------------------------------------------------------------

    def _update_rule_status(self, name: str) -> None:
        """maybeUpdateRuleStatus: the EvictionInProgress condition, at most every ten seconds
        while the rule's spec stays the same."""
        rule = self.api.store.get("DeviceTaintRule", "", name)
        if rule is None:
            return
        generation = rule["metadata"].get("generation", 1)
        existing = _condition(rule)
        now = self.clock.now()
        if existing is not None and existing.get("observedGeneration") == generation:
            since = now - self.api.seconds(existing.get("lastTransitionTime") or self.api.timestamp(0))
            if since < RULE_STATUS_PERIOD:
                self._queue.add_after(name, RULE_STATUS_PERIOD - since)
                return
        effect = _effect(rule)
        evicted = self._evictions_by_rule.get(rule["metadata"].get("uid", name), 0)
        condition = {"type": CONDITION, "status": "False", "observedGeneration": generation,
                     "reason": f"Effect{effect}", "message": ""}
        if effect == NO_EXECUTE:
            pods, namespaces = self._pending(rule)
            if pods:
                condition.update(status="True", reason="PodsPendingEviction",
                                 message=f"{_count(pods, 'pod needs', 'pods need')} to be evicted in "
                                         f"{_count(namespaces, 'namespace.', 'different namespaces.')}")
            else:
                condition["reason"] = "Completed" if evicted else "NotStarted"
        elif effect == "None":
            simulated = {**rule, "spec": {**rule["spec"], "taint": {**taintrules.taint(rule), "effect": NO_EXECUTE}}}
            pods, namespaces = self._pending(simulated)
            published, allocated = self._selected_devices(rule)
            condition.update(reason="NoEffect", message=(
                f"{_count(published, 'published device', 'published devices')} selected. "
                f"{_count(allocated, 'allocated device', 'allocated devices')} selected. "
                f"{_count(pods, 'pod', 'pods')} would be evicted in "
                f"{_count(namespaces, 'namespace', 'different namespaces')} if the effect was NoExecute. "
                "This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."))
        else:
            condition.update(reason="OtherEffect", message="Eviction only happens for the NoExecute effect.")
        if evicted:
            condition["message"] += (" " if condition["message"] else "") + \
                f"{_count(evicted, 'pod', 'pods')} evicted since starting the controller."
        if existing is not None and all(existing.get(k) == v for k, v in condition.items()):
            return
        condition["lastTransitionTime"] = self.api.timestamp()

        def write(status: Obj) -> None:
            kept = [c for c in status.get("conditions") or () if c.get("type") != CONDITION]
            status["conditions"] = [*kept, condition]
        with contextlib.suppress(APIError):
            self.api.update_status("DeviceTaintRule", "", name, write)

    def _pending(self, rule: Obj) -> tuple[int, int]:
        """countPendingPods: the pods this rule is a reason to evict, and their namespaces."""
        others = [r for r in self._rules() if _effect(r) == NO_EXECUTE and r["metadata"]["name"] != rule["metadata"]["name"]]
        due = self._pods_due(self._device_taints(), [*others, rule])
        keys = [k for k, (_, e) in due.items() if rule["metadata"]["name"] in e.rules
                and not is_terminating(self.api.store.get("Pod", *k) or {})]
        return len(keys), len({namespace for namespace, _ in keys})

    def _selected_devices(self, rule: Obj) -> tuple[int, int]:
        """countTaintedDevices: published devices (newest pool generations) and allocated ones the
        rule selects."""
        published = sum(1 for driver, pool, device in self._published()
                        if taintrules.matches(rule, driver, pool, device.get("name", "")))
        allocated = sum(1 for c in self.api.store.list("ResourceClaim")
                        for r in ((allocation(c) or {}).get("devices") or {}).get("results") or ()
                        if taintrules.matches(rule, r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
        return published, allocated


def _generation(spec: Obj) -> int:
    return int((spec.get("pool") or {}).get("generation") or 0)


def _has_no_execute(slice_: Obj | None) -> bool:
    return any(t.get("effect") == NO_EXECUTE for d in ((slice_ or {}).get("spec") or {}).get("devices") or ()
               for t in d.get("taints") or ())


def _effect(rule: Obj) -> str:
    return taintrules.taint(rule).get("effect", "")


def _condition(rule: Obj) -> Obj | None:
    return next((c for c in (rule.get("status") or {}).get("conditions") or () if c.get("type") == CONDITION), None)


def _count(n: int, one: str, many: str) -> str:
    return f"1 {one}" if n == 1 else f"{n} {many}"
