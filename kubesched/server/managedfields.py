"""Field ownership, as the API server's field manager keeps it in `metadata.managedFields`.

`record_update` is what every create, update and patch does: the fields the write changed become
the writer's (operation Update), and leave whoever held them before. `apply` is server-side apply:
the applied configuration is merged into the live object, the applier owns exactly what it applied,
fields it applied last time and no longer applies go unless someone else holds them, and changing
a field another manager owns is a conflict unless forced.

Both follow the field manager's layers in kube-apiserver (managedfields/internal and
structured-merge-diff's Updater): managed fields taken from the request or the live object, an
object never tracked stays untracked until its first apply (which attributes what exists to
`before-first-apply`), the request version in the entry, the status (or, on the status
subresource, the spec) never owned, type and identity metadata never owned, at most ten Update
entries (older ones folded into `ancient-changes`), and `kubectl`'s upgrade path from client-side
apply (the last-applied annotation).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from kubesched.apiserver.errors import BadRequest, ConflictError, ServerError
from kubesched.server import fieldset as fs
from kubesched.server import typed
from kubesched.server.fieldset import FieldSet
from kubesched.server.typed import MISSING, ZERO, Type

# A custom resource's type and whether its status is a subresource (None: a built-in kind).
Custom = tuple[Type, bool] | None
# An object as another version of its kind shows it.
Convert = Callable[[dict[str, Any], str], dict[str, Any]]
# What a write added, modified and removed, in a version's field paths.
Changes = Callable[[str], tuple[FieldSet, FieldSet, FieldSet]]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"

# What a create's writer owns, canonical and encoded, by the created object's shape (see _shape):
# every pod of a Deployment, every create of a load test has the same one. Bounded: shapes that
# vary without end (labels named after each object) would otherwise grow it for good.
_CREATED: dict[tuple[Any, ...], bytes] = {}
_CREATED_MAX = 4096

# Type and identity fields nobody owns.
_STRIPPED: FieldSet = {"f:apiVersion": {}, "f:kind": {}, "f:metadata": {
    ".": {}, "f:name": {}, "f:namespace": {}, "f:creationTimestamp": {}, "f:selfLink": {}, "f:uid": {},
    "f:clusterName": {}, "f:generation": {}, "f:managedFields": {}, "f:resourceVersion": {}}}


class ApplyConflict(ConflictError):
    """409 of a server-side apply; `conflicts` holds (field path, "conflict with ...") for the
    Status causes, which upstream gives type FieldManagerConflict."""

    def __init__(self, message: str, conflicts: list[tuple[str, str]]) -> None:
        super().__init__(message, [f"{path}: {who}" for path, who in conflicts])
        self.conflicts = conflicts


@dataclass(frozen=True)
class Entry:
    manager: str
    operation: str  # "Apply" | "Update"
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet
    stored: dict[str, Any] | None = None  # the entry as read, re-emitted while nothing changes

    @property
    def ident(self) -> str:
        """The manager identifier of the field manager: an applier is one manager whatever the
        version it applies with."""
        out = {"manager": self.manager, "operation": self.operation}
        if self.operation == "Update" and self.api_version:
            out["apiVersion"] = self.api_version
        if self.subresource:
            out["subresource"] = self.subresource
        return json.dumps(out, separators=(",", ":"))

    def with_fields(self, fields: FieldSet, time: str | None = None) -> Entry:
        return replace(self, fields=fields, time=time or self.time, stored=None)

    def encode(self, canonical: bool = False) -> dict[str, Any]:
        """The entry as stored; `canonical`: its fields are in the order they are written already."""
        if self.stored is not None:
            return self.stored
        out: dict[str, Any] = {}
        if self.manager:
            out["manager"] = self.manager
        out["operation"] = self.operation
        out["apiVersion"] = self.api_version
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields if canonical else fs.canonical(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def who(self) -> str:
        """How a conflict names the manager."""
        out = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            out += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            out += f" using {self.api_version}"
        return out


Managed = dict[str, Entry]

FIELD_MANAGER_MAX_LENGTH = 128


def manager_name(field_manager: str, user_agent: str) -> str:
    """The manager a write is recorded under: the `fieldManager` parameter, else the User-Agent
    up to its first "/" (`kubectl-client-side-apply`, `OpenAPI-Generator` for the Python
    client), printable characters only, at most 128 bytes."""
    if field_manager:
        return field_manager
    return _agent_name(user_agent)


@lru_cache(maxsize=256)
def _agent_name(user_agent: str) -> str:
    """A client sends the same User-Agent on every request: cut once."""
    out = ""
    for ch in user_agent.split("/", 1)[0]:
        if not ch.isprintable():
            continue
        if len((out + ch).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += ch
    return out


def decode(entries: Any) -> Managed | None:
    """The stored entries by manager identifier; None when one of them is malformed."""
    if not isinstance(entries, list):
        return None
    out: Managed = {}
    for raw in entries:
        if not isinstance(raw, dict) or raw.get("operation") not in ("Apply", "Update") \
                or not raw.get("apiVersion") or raw.get("fieldsType") != "FieldsV1":
            return None
        fields = raw.get("fieldsV1") or {}
        if not isinstance(fields, dict):
            return None
        entry = Entry(str(raw.get("manager") or ""), raw["operation"], str(raw["apiVersion"]),
                      str(raw.get("subresource") or ""), raw.get("time"), fields, raw)
        out[entry.ident] = entry
    return out


def encode(managed: Managed) -> list[dict[str, Any]]:
    """Entries sorted as the API server sorts them: operation, time, manager, version, subresource."""
    entries = sorted(managed.values(), key=lambda e: (e.operation, _seconds(e.time), e.manager, e.api_version,
                                                      e.subresource))
    return [e.encode() for e in entries]


def _seconds(stamp: str | None) -> float:
    if not stamp:
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def reset_fields(api_version: str, kind: str, subresource: str, custom: Custom = None) -> FieldSet:
    """What a write through this endpoint never owns, because the registry resets it: the status
    on the main resource, the spec on the status subresource (and, for pods, the deletion
    timestamp and owners). A custom resource (`custom`: its type and whether its definition has a
    status subresource) resets them only with a status subresource."""
    if custom is not None:
        if not custom[1]:
            return {}
        return {"f:spec": {}} if subresource == "status" else {} if subresource else {"f:status": {}}
    if not typed.has_schema(api_version, kind):
        return {}
    if subresource == "status":
        if kind == "Pod" and api_version == "v1":
            return {"f:spec": {}, "f:metadata": {"f:deletionTimestamp": {}, "f:ownerReferences": {}}}
        return {"f:spec": {}}
    if not subresource and typed.type_for(api_version, kind).declares("status"):
        return {"f:status": {}}
    return {}


def _is_reset(meta: dict[str, Any]) -> bool:
    """A client empties managedFields by sending an empty list (or a list of one empty entry)."""
    if "managedFields" not in meta:
        return False
    value = meta["managedFields"]
    return value == [] or value == [{}]


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def record_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str,
                  subresource: str = "", custom: Custom = None, api_version: str = "",
                  convert: Convert | None = None) -> dict[str, Any]:
    """`new` (what a create, update or patch is about to store over `old`, None for a create) with
    its managedFields brought up to date for an Update by `manager`. `new` is not modified.

    A kind served in several versions (autoscaling/v1 and v2 HPAs) keeps each entry in the version
    its manager wrote in, as the field manager does: the writer's entry in the request's
    `api_version`, and each entry loses what changed as its own version shows the objects;
    `convert` gives a stored object in another version."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return new
    managed: Managed | None = None
    if not subresource:
        # The request's own managedFields win when usable, so a client can edit or clear them.
        managed = {} if _is_reset(meta) else decode(meta.get("managedFields")) or None
    if managed is None:
        managed = (decode((old.get("metadata") or {}).get("managedFields")) if old else None) or {}
    result = _without_managed_fields(new)
    if not managed and old is not None:
        return result  # never tracked: tracking starts at the first apply
    stored_version, kind = str(new.get("apiVersion") or ""), str(new.get("kind") or "")
    version = api_version or stored_version
    if old is None and not managed and version == stored_version:
        t = custom[0] if custom is not None else typed.type_for(stored_version, kind)
        own = _created(result, stored_version, subresource, t, reset_fields(stored_version, kind, subresource, custom),
                       custom is None)
        if not own:
            return result
        entry = Entry(manager or "unknown", "Update", stored_version, subresource, now, own)
        return {**result, "metadata": {**result["metadata"], "managedFields": [entry.encode(canonical=True)]}}
    base = _without_managed_fields(old) if old is not None else ZERO
    seen: dict[str, tuple[FieldSet, FieldSet, FieldSet]] = {}

    def changes(version: str) -> tuple[FieldSet, FieldSet, FieldSet]:
        if convert is None:
            version = stored_version  # one version: every entry's paths are the stored object's
        if version not in seen:
            t = custom[0] if custom is not None else typed.type_for(version, kind)
            ignored = reset_fields(version, kind, subresource, custom)
            before, after = base, result
            if version != stored_version and convert is not None:
                before = base if base is ZERO else convert(base, version)
                after = convert(result, version)
            seen[version] = _changes(before, after, t, ignored)
        return seen[version]

    ignored = reset_fields(version, kind, subresource, custom)
    managed = _update(changes, managed, manager or "unknown", version, subresource, now, ignored)
    if managed:
        result = {**result, "metadata": {**result["metadata"], "managedFields": encode(managed)}}
    return result


def _update(changes: Changes, managed: Managed, manager: str, api_version: str, subresource: str, now: str,
            ignored: FieldSet) -> Managed:
    """`changes(version)`: what the write added, modified and removed, in that version's paths."""
    added, modified, removed = changes(api_version)
    changed = fs.union(modified, added)
    out = _release_versions(managed, "", api_version, changed, removed, changes)
    own = fs.difference(fs.recursive_difference(fs.difference(changed, removed), ignored), _STRIPPED)
    if own:
        entry = Entry(manager, "Update", api_version, subresource, now, own)
        previous = out.get(entry.ident)
        out[entry.ident] = entry if previous is None else entry.with_fields(fs.union(own, previous.fields), now)
    return _cap_updaters(out)


def _created(new: dict[str, Any], api_version: str, subresource: str, t: Type, ignored: FieldSet,
             built_in: bool) -> FieldSet:
    """What the writer of a create owns, canonical: `_update`'s answer from nothing, computed
    once per shape of a built-in kind's object (its type and reset fields follow from version,
    kind and subresource), since the walk costs a create more than the rest of its field
    manager. A fresh copy each time: the sets end up in stored objects."""
    key = None
    if built_in:
        with contextlib.suppress(TypeError):  # what orjson cannot encode has no shape: the walk
            key = (api_version, new.get("kind"), subresource, _shape(new))
    encoded = _CREATED.get(key) if key is not None else None
    if encoded is None:
        added, modified, removed = _changes(ZERO, new, t, ignored)
        changed = fs.union(modified, added)
        own = fs.canonical(fs.difference(fs.recursive_difference(fs.difference(changed, removed), ignored),
                                         _STRIPPED))
        if key is None:
            return own
        if len(_CREATED) >= _CREATED_MAX:
            _CREATED.clear()
        encoded = _CREATED[key] = orjson.dumps(own)
    return orjson.loads(encoded)


def _shape(value: Any) -> Any:
    """What the fields an object sets depend on, and nothing else: every map key, whether a
    value is null, a map, a list or which kind of scalar, and the whole of every list (items are
    told apart by their keys or values). Scalars' values in maps never matter: the walk from
    nothing only asks whether a field is there and whether it is null. Raises TypeError for a
    list orjson would write ambiguously (a non-finite float comes out as null)."""
    if isinstance(value, dict):
        return tuple([(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        encoded = orjson.dumps(value)
        if b"null" in encoded:  # a null, or a NaN written as one: no shape
            raise TypeError("ambiguous list")
        return encoded
    return None if value is None else type(value)


def _changes(base: Any, new: Any, t: Type, ignored: FieldSet) -> tuple[FieldSet, FieldSet, FieldSet]:
    added, modified, removed = typed.compare(base, new, t)
    if ignored:
        added, modified, removed = (fs.recursive_difference(s, ignored) for s in (added, modified, removed))
    return added, modified, removed


def _release_versions(managed: Managed, skip: str, api_version: str, changed: FieldSet, removed: FieldSet,
                      changes: Changes) -> Managed:
    """`_release`, each entry losing what changed as its own version shows the objects
    (`changes(version)`: added, modified, removed); `changed` and `removed` are `api_version`'s."""
    versions = {e.api_version for e in managed.values()} - {api_version}
    out = _release({i: e for i, e in managed.items() if e.api_version == api_version} if versions else managed,
                   skip, changed, removed)
    for version in versions:
        their_added, their_modified, their_removed = changes(version)
        out.update(_release({i: e for i, e in managed.items() if e.api_version == version}, skip,
                            fs.union(their_modified, their_added), their_removed))
    return out


def _release(managed: Managed, skip: str, changed: FieldSet, removed: FieldSet) -> Managed:
    """Every other manager loses what was changed (taken over) or removed."""
    out: Managed = {}
    for ident, entry in managed.items():
        if ident == skip:
            continue
        fields = fs.difference(fs.difference(entry.fields, changed), removed)
        if fields is entry.fields or fields == entry.fields:
            out[ident] = entry
        elif fields:
            out[ident] = entry.with_fields(fields)
    return out


def _cap_updaters(managed: Managed) -> Managed:
    """Fold the oldest Update entries into one `ancient-changes` entry per version, beyond ten."""
    updaters = [e for e in managed.values() if e.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    out = dict(managed)
    updaters.sort(key=lambda e: (_seconds(e.time), e.ident))
    first_of_version: dict[str, Entry] = {}
    count = len(updaters)
    for entry in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        bucket = Entry(ANCIENT_CHANGES, "Update", entry.api_version, "", entry.time, {})
        first = first_of_version.get(entry.api_version)
        if first is None:
            first_of_version[entry.api_version] = entry
            continue
        held = out.pop(bucket.ident, None)
        if held is None:
            held = out.pop(first.ident)
        out.pop(entry.ident, None)
        out[bucket.ident] = bucket.with_fields(fs.union(entry.fields, held.fields), entry.time)
        count -= 1
    return out


class _Conflicts(Exception):
    def __init__(self, conflicts: list[tuple[Entry, tuple[str, ...]]]) -> None:
        super().__init__("conflicts")
        self.conflicts = conflicts


def apply(live: dict[str, Any] | None, applied: dict[str, Any], manager: str, force: bool, now: str,
          subresource: str = "", custom: Custom = None, convert: Convert | None = None) -> dict[str, Any]:
    """Server-side apply of `applied` (the body of an application/apply-patch+yaml request) onto
    `live` (None: the apply creates the object), both in the request's version. Returns the object
    to store, managedFields included; raises ApplyConflict (409) naming every conflict unless
    `force`. Entries kept in another version are compared as `convert` shows the objects in it."""
    _check_applied(applied)
    api_version, kind = applied["apiVersion"], applied["kind"]
    t = custom[0] if custom is not None else typed.type_for(api_version, kind)
    if custom is None and typed.has_schema(api_version, kind):
        errors = typed.schema_errors(applied, t)
        if errors:
            meta = applied["metadata"]
            detail = errors[0] if len(errors) == 1 else "errors:\n" + "\n".join("  " + e for e in errors)
            raise ServerError(f"failed to create typed patch object ({meta.get('namespace', '')}/{meta['name']}; "
                              f"{_gvk(api_version, kind)}): {detail}")
    ignored = reset_fields(api_version, kind, subresource, custom)
    base: Any = _without_managed_fields(live) if live is not None else {}
    managed = (decode((live.get("metadata") or {}).get("managedFields")) if live is not None else None) or {}
    args = (base, applied, managed, manager or "unknown", api_version, subresource, now, t, ignored, convert)
    try:
        result, managed = _apply(*args, force)
    except _Conflicts as e:
        remaining = e.conflicts
        if manager == "kubectl" and live is not None:
            allowed = _client_side_applied(base, api_version, t)
            remaining = [(entry, path) for entry, path in e.conflicts if allowed is None or not fs.has(allowed, path)]
        if remaining:
            raise _conflict_error(remaining) from None
        result, managed = _apply(*args, True)
    result = typed.drop_nulls(result)
    if manager == "kubectl":
        _sync_last_applied(result, applied)
    result = _keep_reset_fields(result, live, ignored)
    meta = dict(result.get("metadata") or {})
    meta.pop("managedFields", None)
    if managed:
        meta["managedFields"] = encode(managed)
    return {**result, "metadata": meta}


def _check_applied(applied: Any) -> None:
    if not isinstance(applied, dict):
        raise BadRequest("error decoding YAML: the body is not an object")
    api_version, kind = applied.get("apiVersion"), applied.get("kind")
    if not api_version or not kind or not isinstance(api_version, str) or not isinstance(kind, str):
        raise BadRequest(f"invalid object type: {_gvk(str(api_version or ''), str(kind or ''))}")
    meta = applied.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise BadRequest("the name of the object () does not match the name on the URL")
    if meta.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil")


def _gvk(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _apply(base: Any, config: dict[str, Any], managed: Managed, manager: str, api_version: str, subresource: str,
           now: str, t: Type, ignored: FieldSet, convert: Convert | None, force: bool) -> tuple[Any, Managed]:
    if not managed and base:
        # The object predates tracking: what it holds becomes before-first-apply's.
        existing = _changes(ZERO, base, t, ignored)
        managed = _update(lambda _: existing, {}, BEFORE_FIRST_APPLY, api_version, subresource, now, ignored)
    entry = Entry(manager, "Apply", api_version, subresource, None, {})
    previous = managed.get(entry.ident)
    merged = typed.merge(base if base else MISSING, config, t)
    applied_set = fs.recursive_difference(typed.to_set(config, t), ignored)
    everyone = {**managed, entry.ident: entry.with_fields(applied_set)}
    if previous is not None:
        merged = _prune(merged, previous.fields, everyone, t)
    added, modified, removed = _changes(base if base else ZERO, merged, t, ignored)
    changed = fs.union(modified, added)
    seen: dict[str, tuple[FieldSet, FieldSet, FieldSet]] = {api_version: (added, modified, removed)}

    def changes(version: str) -> tuple[FieldSet, FieldSet, FieldSet]:
        if convert is None:
            return added, modified, removed
        if version not in seen:
            kind = str(config.get("kind") or "")
            seen[version] = _changes(convert(base, version) if base else ZERO, convert(merged, version),
                                     typed.type_for(version, kind), reset_fields(version, kind, subresource))
        return seen[version]

    def changed_in(version: str) -> FieldSet:
        return changed if version == api_version or convert is None else fs.union(*changes(version)[:2])

    conflicts = [(other, path) for ident, other in sorted(managed.items()) if ident != entry.ident
                 for path in fs.paths(fs.intersection(other.fields, changed_in(other.api_version)))]
    if conflicts and not force:
        raise _Conflicts(conflicts)
    out = _release_versions(managed, entry.ident, api_version, changed, removed, changes)
    own = fs.difference(applied_set, _STRIPPED)
    unchanged = merged == base
    if own:
        time = previous.time if unchanged and previous is not None else (None if unchanged else now)
        out[entry.ident] = entry.with_fields(own, time)
    return (base if unchanged else merged), out


def _prune(merged: Any, last: FieldSet, everyone: Managed, t: Type) -> Any:
    """Remove what the applier applied last time, does not apply now and nobody else holds
    (structured-merge-diff's prune, with its two add-backs)."""
    last_named = typed.named_members(last, t)
    merged_set = typed.to_set(merged, t, named=True)
    pruned = typed.remove(merged, last_named, t)
    held = typed.named_members(fs.union_all([e.fields for e in everyone.values()]), t)
    orphaned = fs.difference(merged_set, fs.union(typed.to_set(pruned, t, named=True), held))
    pruned = typed.remove(merged, orphaned, t)
    gone = fs.intersection(fs.difference(merged_set, typed.to_set(pruned, t, named=True)), last_named)
    return typed.remove(merged, gone, t)


def _conflict_error(conflicts: list[tuple[Entry, tuple[str, ...]]]) -> ApplyConflict:
    details = [(fs.path_string(path), f"conflict with {entry.who()}") for entry, path in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.who()}: {fs.path_string(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        who: dict[str, str] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.ident, []).append(fs.path_string(path))
            who[entry.ident] = entry.who()
        lines = []
        for ident in sorted(by_manager):
            lines.append(f"conflicts with {who[ident]}:")
            lines.extend(f"- {p}" for p in by_manager[ident])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApplyConflict(message, details)


def _client_side_applied(live: dict[str, Any], api_version: str, t: Type) -> FieldSet | None:
    """What the last-applied annotation set and the live object still holds as set: the fields a
    switch from `kubectl apply` to `kubectl apply --server-side` may take over without conflict."""
    annotation = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not annotation:
        return None
    try:
        last = json.loads(annotation)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    added, modified, removed = typed.compare(last, live, t)
    return fs.difference(fs.difference(fs.difference(typed.to_set(last, t), modified), added), removed)


def _sync_last_applied(result: dict[str, Any], applied: dict[str, Any]) -> None:
    """`kubectl apply --server-side` keeps an existing last-applied annotation in step with what it
    applied, so a later client-side apply diffs against the right thing."""
    annotations = (result.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED):
        return
    config = dict(applied)
    config_meta = dict(config.get("metadata") or {})
    config_annotations = {k: v for k, v in (config_meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if config_annotations:
        config_meta["annotations"] = config_annotations
    else:
        config_meta.pop("annotations", None)
    config["metadata"] = config_meta
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # Go's encoder escapes what HTML would read.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"
    result["metadata"] = {**result["metadata"], "annotations": {**annotations, LAST_APPLIED: text}}


def _keep_reset_fields(result: dict[str, Any], live: dict[str, Any] | None, ignored: FieldSet) -> dict[str, Any]:
    """What the endpoint does not write keeps its live value (a create starts without it), as the
    registry's strategy resets it."""
    out = dict(result)
    for pe in ignored:
        name = pe[2:]
        if fs.is_member(ignored[pe]):
            if live is not None and name in live:
                out[name] = live[name]
            else:
                out.pop(name, None)
    return out
