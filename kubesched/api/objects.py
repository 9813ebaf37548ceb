"""Small helpers over Kubernetes objects in their JSON form (plain dicts)."""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from yaml.representer import Representer, SafeRepresenter

from kubesched.api.kinds import CLUSTER_SCOPED

Obj = dict[str, Any]


# Virtual time 0 is this instant unless the input says otherwise (see Cluster.epoch).
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"  # a static pod's mirror in the API
DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
# The last instant an RFC 3339 timestamp can name (its year has four digits): virtual time stops here.
LAST_TIME = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


class Shared(dict):
    """A JSON object that many stored objects hold as one dict: the default tolerations every pod
    is given, a condition or container state its kubelet wrote at the same instant on many pods.
    At scale those copies are a good part of the memory. Stored objects are never changed in place
    (the Store's rule), so one copy is enough: `deep_copy` passes it on as it is, a copy by `dict()`
    or `{**x}` is an ordinary dict, and changing it in place raises instead of changing every pod."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a shared object is read-only: change a copy of it")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore

    def __reduce_ex__(self, protocol: Any) -> Any:  # copy.deepcopy and pickle give an ordinary dict
        return dict, (dict(self),)


for _representer in (SafeRepresenter, Representer):  # what every YAML dumper, safe or not, C or not, uses
    _representer.add_representer(Shared, SafeRepresenter.represent_dict)

_ATOMS = frozenset({str, int, float, bool, type(None), Shared})  # values shared as they are, without a call


@functools.lru_cache(maxsize=4096)
def shared_condition(ctype: str, status: str, when: str) -> Shared:
    """A condition with no reason or message that changed at `when`: what a kubelet or the binding
    writes on every pod that gets there at that instant, kept once for all of them."""
    return Shared(type=ctype, status=status, lastProbeTime=None, lastTransitionTime=when)


def deep_copy(value: Any) -> Any:
    """Copy JSON-shaped data; several times faster than copy.deepcopy for dict/list trees."""
    if isinstance(value, dict):
        return {k: v if type(v) in _ATOMS else deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _ATOMS else deep_copy(v) for v in value]
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (what `kubectl patch --type merge` sends); returns a new value."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def namespaced(kind: str) -> bool:
    return kind not in CLUSTER_SCOPED


def ref(obj: Obj) -> str:
    """`Kind/namespace/name` or `Kind/name`: how results and messages name an object."""
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{obj.get('kind')}/{ns}/{meta.get('name')}" if ns else f"{obj.get('kind')}/{meta.get('name')}"


def format_time(epoch: datetime, seconds: float) -> str:
    """RFC 3339 with second precision, as metav1.Time serialises. Every write within one second of
    virtual time stamps the same text, so the last answer is kept for that second."""
    global _last_time
    epoch_last, seconds_last, key_last, text = _last_time
    if seconds == seconds_last and epoch is epoch_last:
        return text
    delta = timedelta(seconds=seconds)
    # The whole seconds of `delta` decide the text when the epoch has no fraction of a second.
    key: Any = delta.days * 86400 + delta.seconds if not epoch.microsecond else delta
    if key != key_last or epoch is not epoch_last:
        if epoch.microsecond:
            t = epoch + delta  # formatted by hand: strftime costs twice as much
            text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"
        else:  # the time of day from whole seconds, the date from the few days a run spans
            day, second = divmod(epoch.hour * 3600 + epoch.minute * 60 + epoch.second + key, 86400)
            date = _dates.get((epoch, day))
            if date is None:
                if len(_dates) >= 1024:
                    _dates.clear()
                d = epoch + timedelta(days=day)
                date = _dates[epoch, day] = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T"
            hour, second = divmod(second, 3600)
            minute, second = divmod(second, 60)
            text = f"{date}{hour:02d}:{minute:02d}:{second:02d}Z"
    _last_time = epoch, seconds, key, text
    return text


_last_time: tuple[datetime | None, float, Any, str] = (None, math.nan, None, "")
_dates: dict[tuple[datetime, int], str] = {}  # (epoch, days after it) -> "YYYY-MM-DDT"


# time.Parse(time.RFC3339, ...) as metav1.Time reads it: a `T`, seconds, an optional fraction (Go
# also takes a comma), then `Z` or an offset; Go's range checks take offsets up to 24:60.
_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?:Z|([+-])(\d\d):(\d\d))")


@functools.lru_cache(maxsize=4096)
def parse_time(value: str) -> datetime:
    """An RFC 3339 time as the API server reads it, in UTC (as it writes it back). What Go refuses
    (no zone, a space for the `T`, a lower-case `z`, minutes without seconds) or Python cannot hold
    (year 0000, beyond 9999 once in UTC) is a ValueError."""
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise ValueError("not an RFC 3339 time, e.g. 2026-01-01T00:00:00Z")
    fraction = (m[7] or "")[:6].ljust(6, "0")
    try:
        t = datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(fraction), tzinfo=UTC)
        if m[8] is not None:
            hours, minutes = int(m[9]), int(m[10])
            if hours > 24 or minutes > 60:
                raise ValueError("time zone offset out of range")
            offset = timedelta(hours=hours, minutes=minutes)
            t = t - offset if m[8] == "+" else t + offset
    except OverflowError:
        raise ValueError("out of the range of times (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC)") from None
    return t


def is_terminal(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def get_condition(obj: Obj, ctype: str) -> Obj | None:
    for c in obj.get("status", {}).get("conditions", ()) or ():
        if c.get("type") == ctype:
            return c
    return None


def set_condition(status: Obj, condition: Obj) -> bool:
    """Insert or replace a condition by type; keep lastTransitionTime if the status did not change.

    Returns whether anything changed, so callers can skip no-op writes as the real components do.
    """
    conditions = status.setdefault("conditions", [])
    for i, c in enumerate(conditions):
        if c.get("type") == condition["type"]:
            same_status = c.get("status") == condition.get("status")
            if same_status:
                condition = {**condition, "lastTransitionTime": c.get("lastTransitionTime")}
                if c.get("reason") == condition.get("reason") and c.get("message") == condition.get("message"):
                    return False
            conditions[i] = condition
            return True
    conditions.append(condition)
    return True


def controller_of(obj: Obj) -> Obj | None:
    """The ownerReference with `controller: true` (metav1.GetControllerOf), if any."""
    for owner in obj.get("metadata", {}).get("ownerReferences") or ():
        if owner.get("controller"):
            return owner
    return None


def is_pod_ready(pod: Obj) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    cond = get_condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def is_terminating(obj: Obj) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))
