"""Which objects a list or watch returns: label and field selectors, and `limit`/`continue` pages.

Field selectors work on the fields each kind's registry makes selectable upstream (its
`GetAttrs`); any other field is refused as kube-apiserver refuses it (`field label not
supported`). Lists are ordered by namespace and name, as etcd keys order them, so a
`continue` token is simply the last key served.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.apiserver.errors import BadRequest

Obj = dict[str, Any]


def _get(path: str) -> Callable[[Obj], str]:
    keys = path.split(".")

    def read(obj: Obj) -> str:
        value: Any = obj
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return read


_COMMON = ("metadata.name", "metadata.namespace")
_FIELDS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    "Node": ("spec.unschedulable",),
    "Event": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
              "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
              "reason", "reportingComponent", "source", "type"),
    "Namespace": ("status.phase",),
    "Secret": ("type",),
    "ReplicaSet": ("status.replicas",),
    "ReplicationController": ("status.replicas",),
    "Job": ("status.successful",),
    "Service": ("spec.clusterIP", "spec.type"),
    "ResourceSlice": ("spec.nodeName", "spec.driver"),  # what a kubelet's DRA manager lists by
}
# Field names of events.k8s.io/v1 Events, on the core/v1 form they are stored in.
EVENTS_V1_FIELDS = {"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
                    "regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
                    "regarding.apiVersion": "involvedObject.apiVersion",
                    "regarding.resourceVersion": "involvedObject.resourceVersion",
                    "regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
                    "deprecatedSource": "source"}
_READERS = {"source": _get("source.component")}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    equal: bool
    read: Callable[[Obj], str]

    def matches(self, obj: Obj) -> bool:
        return (self.read(obj) == self.value) == self.equal


def _split(text: str) -> Iterable[str]:
    """Split on unescaped commas (fields.ParseSelector's escaping: backslash)."""
    part, escaped = [], False
    for ch in text:
        if escaped:
            part.append(ch)
            escaped = False
        elif ch == "\\":
            part.append(ch)
            escaped = True
        elif ch == ",":
            yield "".join(part)
            part = []
        else:
            part.append(ch)
    yield "".join(part)


def _unescape(text: str) -> str:
    out, escaped = [], False
    for ch in text:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out)


def parse_field_selector(text: str, kind: str, renames: dict[str, str] | None = None,
                         selectable: tuple[str, ...] = ()) -> list[FieldRequirement]:
    """Parse `spec.nodeName=n1,status.phase!=Failed` for objects of `kind`; BadRequest on a
    malformed selector or a field the kind does not select on (`selectable`: the fields a custom
    resource's definition makes selectable)."""
    reqs: list[FieldRequirement] = []
    for part in _split(text):
        if not part.strip():
            continue
        op = next((o for o in ("!=", "==", "=") if o in part), None)
        if op is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        field, _, value = part.partition(op)
        equal = op != "!="
        field = field.strip()
        field = (renames or {}).get(field, field)
        if field not in _COMMON and field not in _FIELDS.get(kind, ()) and field not in selectable:
            raise BadRequest(f'field label not supported: {field}')
        reqs.append(FieldRequirement(field, _unescape(value), equal, _READERS.get(field) or _get(field)))
    return reqs


def parse_label_selector(text: str) -> LabelSelector:
    try:
        return LabelSelector.parse(text)
    except SelectorError as e:
        raise BadRequest(f"unable to parse requirement: {e.message}") from None


@dataclass
class Selection:
    """One request's selectors, applied to each candidate object."""

    labels: LabelSelector | None = None
    fields: tuple[FieldRequirement, ...] = ()
    namespace: str | None = None

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels") or {}):
            return False
        return all(r.matches(obj) for r in self.fields)


def sort_key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def encode_continue(last: tuple[str, str], rv: int) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(last)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_continue(token: str) -> tuple[tuple[str, str], int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        ns, name = data["start"]
        return (str(ns), str(name)), int(data["rv"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise BadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)") \
            from None


def page(objs: list[Obj], limit: int, token: str | None, rv: int) -> tuple[list[Obj], str | None, int | None]:
    """The page after `token` of at most `limit` objects (0: all), the next token and how many
    remain after it (upstream's remainingItemCount). `objs` must be in `sort_key` order."""
    if token:
        last, _ = decode_continue(token)
        objs = [o for o in objs if sort_key(o) > last]
    if limit <= 0 or len(objs) <= limit:
        return objs, None, None
    chunk = objs[:limit]
    return chunk, encode_continue(sort_key(chunk[-1]), rv), len(objs) - limit
