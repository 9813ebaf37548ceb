"""events.k8s.io/v1 Events are the core/v1 Events in their newer shape, as kube-apiserver
converts them (pkg/apis/events/v1/conversion.go): one stored object, two views. The live
scheduler writes events.k8s.io/v1; `kubectl describe` reads core/v1."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

# events.k8s.io/v1 field -> core/v1 field
_RENAMED = {"regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
            "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
            "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count"}
_SAME = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related", "type")


def to_events_v1(core: Obj) -> Obj:
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for key in _SAME:
        if core.get(key) is not None:
            out[key] = core[key]
    for new, old in _RENAMED.items():
        if core.get(old) not in (None, {}, ""):
            out[new] = core[old]
    return out


def to_core(event: Obj) -> Obj:
    out: Obj = {"apiVersion": "v1", "kind": "Event"}
    for key in _SAME:
        if event.get(key) is not None:
            out[key] = event[key]
    for new, old in _RENAMED.items():
        if event.get(new) is not None:
            out[old] = event[new]
    out.setdefault("involvedObject", {})
    out.setdefault("source", {"component": event.get("reportingController", "")})
    return out
