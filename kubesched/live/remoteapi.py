"""The API as components call it, answered by a real API server: the live mode's `APIServer`.

The scheduler, its preemption and the descheduler were written against `apiserver.APIServer`
(`bind`, `update_status`, `delete`, `evict`, `record_event`, ...) and read the store it writes;
here the same calls become REST requests, and the store is the informers' mirror. A write's answer
is applied to the mirror at once (as the scheduler's cache assumes a pod it has bound), so the
next cycle sees it without waiting for the watch, which then brings the same version again and
is ignored.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote

from kubesched.api.objects import deep_copy, namespaced, parse_time
from kubesched.api.restmapping import Resource, of_stored
from kubesched.apiserver.reads import StoreReads
from kubesched.live.connection import Connection
from kubesched.live.informer import collection_path
from kubesched.live.mirror import MirrorStore
from kubesched.runtime.observer import NULL_OBSERVER, Observer
from kubesched.store.base import DELETED, MODIFIED

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"
# What the scheduler's events say it was doing (events.k8s.io/v1 `action`), by reason.
ACTIONS = {"Scheduled": "Binding", "FailedScheduling": "Scheduling", "Preempted": "Preempting",
           "NotTriggerScaleUp": "Scheduling"}


def _resource(kind: str) -> Resource:
    resource = of_stored(kind)
    assert resource is not None, kind
    return resource


def merge_diff(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns `old` into `new`."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out: dict[str, Any] = {k: None for k in old if k not in new}
    for k, v in new.items():
        if k not in old:
            out[k] = v
        elif old[k] != v:
            out[k] = merge_diff(old[k], v)
    return out


class RemoteAPI(StoreReads):
    store: MirrorStore

    def __init__(self, conn: Connection, store: MirrorStore, now: Callable[[], float], epoch: datetime,
                 component: str, observer: Observer = NULL_OBSERVER) -> None:
        self.conn = conn
        self.store = store
        self.now = now
        self.epoch = epoch
        self.instance = f"{component}-{socket.gethostname()}"
        self.observer = observer  # told of every eviction request and its answer, as APIServer's is
        self._event_seq = 0

    # ---- writes: the server ---------------------------------------------------------------------

    def _path(self, kind: str, namespace: str, name: str | None = None, sub: str | None = None) -> str:
        res = _resource(kind)
        path = collection_path(res)
        if res.namespaced:
            path = path.replace(f"/{res.plural}", f"/namespaces/{quote(namespace)}/{res.plural}", 1)
        if name is not None:
            path += f"/{quote(name)}"
        if sub:
            path += f"/{sub}"
        return path

    def _seen(self, answer: Obj, kind: str) -> Obj:
        res = _resource(kind)
        obj = {"apiVersion": res.api_version, "kind": kind, **answer}
        self.store.observe(MODIFIED, obj)
        return obj

    def create(self, obj: Obj) -> Obj:
        kind = obj["kind"]
        ns = (obj.get("metadata") or {}).get("namespace", "default")
        return self._seen(self.conn.request("POST", self._path(kind, ns), obj), kind)

    def update(self, obj: Obj, *, status_only: bool = False) -> Obj:
        meta = obj["metadata"]
        path = self._path(obj["kind"], meta.get("namespace", ""), meta["name"], "status" if status_only else None)
        return self._seen(self.conn.request("PUT", path, obj), obj["kind"])

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, *, status_only: bool = False) -> Obj:
        path = self._path(kind, namespace, name, "status" if status_only else None)
        return self._seen(self.conn.request("PATCH", path, patch, content_type=MERGE), kind)

    def update_status(self, kind: str, namespace: str, name: str, mutate: Callable[[Obj], Any]) -> Obj:
        """Read-modify-write of .status, sent as the merge patch of the change (as the scheduler
        patches a pod's status upstream)."""
        current = self.get(kind, namespace, name)
        status = deep_copy(current.get("status") or {})
        if mutate(status) is False:
            return current
        diff = merge_diff(current.get("status") or {}, status)
        if not diff:
            return current
        return self.patch(kind, namespace, name, {"status": diff}, status_only=True)

    def bind(self, namespace: str, name: str, node_name: str) -> Obj:
        """POST pods/binding; the pod is then assumed bound in the mirror until the watch says so."""
        pod = self.get("Pod", namespace, name)
        self.conn.request("POST", self._path("Pod", namespace, name, "binding"), {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}})
        bound = {**pod, "spec": {**pod["spec"], "nodeName": node_name}}
        self.store.observe(MODIFIED, bound, assumed=True)
        return bound

    def delete(self, kind: str, namespace: str, name: str, grace_period: int | None = None,
               propagation_policy: str | None = None) -> Obj | None:
        query: dict[str, Any] = {}
        if grace_period is not None:
            query["gracePeriodSeconds"] = grace_period
        if propagation_policy is not None:
            query["propagationPolicy"] = propagation_policy
        answer = self.conn.request("DELETE", self._path(kind, namespace, name), query=query)
        if answer.get("kind") == kind and (answer.get("metadata") or {}).get("deletionTimestamp"):
            return self._seen(answer, kind)
        current = self.store.get(kind, namespace if namespaced(kind) else "", name)
        if current is not None:
            self.store.observe(DELETED, current)
        return None

    def evict(self, namespace: str, name: str, eviction: Obj | None = None, requester: str = "") -> Obj:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", **(eviction or {}),
                "metadata": {"name": name, "namespace": namespace}}
        entry: dict[str, Any] = {"time": self.now(), "pod": f"{namespace}/{name}", "requester": requester}
        pod = self.store.get("Pod", namespace, name)
        entry["uid"] = (pod or {}).get("metadata", {}).get("uid")
        try:
            answer = self.conn.request("POST", self._path("Pod", namespace, name, "eviction"), body, retry=False)
        except Exception as e:
            entry.update(code=getattr(e, "code", 500), reason=getattr(e, "reason", ""), message=str(e),
                         causes=list(getattr(e, "causes", [])), pdb=None)
            self.observer.eviction(entry)
            raise
        entry.update(code=200, reason="", message="", causes=[], dryRun=False)
        self.observer.eviction(entry)
        return answer

    def record_event(self, involved: Obj, etype: str, reason: str, message: str,
                     source: str = "default-scheduler") -> Obj:
        """An events.k8s.io/v1 Event, as kube-scheduler's event recorder writes it."""
        self._event_seq += 1
        meta = involved["metadata"]
        ns = meta.get("namespace") or "default"
        now = self.timestamp()
        event = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{int(parse_time(now).timestamp() * 1e9) + self._event_seq:x}",
                         "namespace": ns},
            "eventTime": now.replace("Z", ".000000Z"),
            "reportingController": source, "reportingInstance": self.instance,
            "action": ACTIONS.get(reason, reason), "reason": reason, "type": etype, "note": message[:1024],
            "regarding": {"apiVersion": involved.get("apiVersion", "v1"), "kind": involved["kind"],
                          "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta.get("uid"),
                          "resourceVersion": meta.get("resourceVersion")},
        }
        try:
            return self.conn.request("POST", f"/apis/events.k8s.io/v1/namespaces/{quote(ns)}/events", event)
        except Exception:  # an event that cannot be written is dropped, as the broadcaster drops it
            return event
