"""apiextensions-apiserver's controllers of CustomResourceDefinitions, in one work queue.

- naming: accepts a definition's names (`status.acceptedNames`) unless another definition of its
  group has taken the plural or the kind already, and says so in the NamesAccepted condition;
- establishing: a definition whose names are accepted becomes Established;
- finalizer: a definition being deleted (the registry added its cleanup finalizer) loses every
  object it defines, then the finalizer, and with it goes.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.crd import definition as d
from kubesched.api.objects import deep_copy
from kubesched.api.served import resource_kind
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, NotFound, WatchEvent

Obj = dict[str, Any]


class DefinitionControllers:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        self.queue = WorkQueue(clock, self._sync)

    def start(self) -> None:
        for crd in self.api.store.list(d.KIND):
            self.queue.add(crd["metadata"]["name"])
        self.api.store.watch(self._on_definition, {d.KIND})

    def _on_definition(self, ev: WatchEvent) -> None:
        if ev.type == DELETED:
            # Its names are free again: a definition waiting for them may take them now.
            for crd in self.api.store.list(d.KIND):
                if d.group(crd) == d.group(ev.obj) and not _accepted(crd):
                    self.queue.add(crd["metadata"]["name"])
            return
        self.queue.add(ev.obj["metadata"]["name"])

    def _sync(self, name: str) -> None:
        crd = self.api.store.get(d.KIND, "", name)
        if crd is None:
            return
        if d.terminating(crd):
            self._finalize(crd)
            return
        conflict = self._conflict(crd)
        now = self.api.timestamp()

        def update(status: Obj) -> bool:
            before = deep_copy(status)
            if conflict is None:
                status["acceptedNames"] = deep_copy(d.names(crd))
                _set(status, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
                if (d.condition(crd, "Established") or {}).get("status") != "True":
                    _set(status, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted",
                         now)
            else:
                _set(status, "NamesAccepted", "False", conflict[0], conflict[1], now)
                if (d.condition(crd, "Established") or {}).get("status") != "True":
                    _set(status, "Established", "False", "NotAccepted", "not all names are accepted", now)
            return status != before

        try:
            self.api.update_status(d.KIND, "", name, update)
        except APIError:
            self.queue.add(name)

    def _conflict(self, crd: Obj) -> tuple[str, str] | None:
        """(reason, message) when another definition of the group has accepted the plural or kind."""
        names = d.names(crd)
        for other in self.api.store.list(d.KIND):
            if other["metadata"]["name"] == crd["metadata"]["name"] or d.group(other) != d.group(crd):
                continue
            taken = (other.get("status") or {}).get("acceptedNames") or {}
            if names.get("plural") and names.get("plural") == taken.get("plural"):
                return "PluralConflict", f'"{names["plural"]}" is already in use'
            if names.get("kind") and names.get("kind") == taken.get("kind"):
                return "KindConflict", f'"{names["kind"]}" is already in use'
        return None

    def _finalize(self, crd: Obj) -> None:
        meta = crd["metadata"]
        if d.CLEANUP_FINALIZER not in (meta.get("finalizers") or ()):
            return
        kind = resource_kind({"apiVersion": f"{d.group(crd)}/{d.storage_version(crd)}", "kind": d.kind(crd)})
        for obj in list(self.api.store.list(kind)):  # the group's own: the kind names it
            with contextlib.suppress(NotFound):
                self.api.store.delete(kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        current = self.api.store.get(d.KIND, "", meta["name"])
        if current is None:
            return
        finalizers = [f for f in current["metadata"].get("finalizers") or () if f != d.CLEANUP_FINALIZER]
        new = {**current, "metadata": {**current["metadata"], "finalizers": finalizers}}
        if not finalizers:
            new["metadata"].pop("finalizers")
        try:
            self.api.update(new, status_only=False)
        except APIError:
            self.queue.add(meta["name"])


def _accepted(crd: Obj) -> bool:
    return (d.condition(crd, "NamesAccepted") or {}).get("status") == "True"


def _set(status: Obj, ctype: str, value: str, reason: str, message: str, now: str) -> None:
    conditions = status.setdefault("conditions", [])
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    for c in conditions:
        if c.get("type") == ctype:
            if c.get("status") != value:
                c["lastTransitionTime"] = now
            c.update(status=value, reason=reason, message=message)
            return
    conditions.append({"type": ctype, "status": value, "reason": reason, "message": message,
                       "lastTransitionTime": now})
