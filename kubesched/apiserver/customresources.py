"""apiextensions-apiserver inside the API: the CustomResourceDefinitions the store holds, and what
the API server does when a definition or one of its objects is written.

A definition is defaulted, validated and given its initial status (PrepareForCreate); its objects
are defaulted, pruned and validated with the schema of the version they are written in (CEL rules
included), then stored in the storage version (conversion `None` rewrites only `apiVersion`).
Reads answer in the version asked for (`view`)."""

from __future__ import annotations

from typing import Any

from kubesched.api.crd import cel
from kubesched.api.crd import definition as d
from kubesched.api.crd.objects import default_and_prune, object_problems
from kubesched.api.crd.validation import crd_problems
from kubesched.api.objects import deep_copy
from kubesched.api.served import is_custom_group
from kubesched.apiserver.errors import Invalid
from kubesched.store.base import Store

Obj = dict[str, Any]


class CustomResources:
    """The definitions in the store, looked up by what requests and objects name."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def by_kind(self, group: str, kind: str) -> Obj | None:
        return next((c for c in self.store.list(d.KIND) if d.group(c) == group and d.kind(c) == kind), None)

    def definition_of(self, obj: Obj) -> Obj | None:
        """The definition serving `obj`'s apiVersion and kind, if one does."""
        api_version = obj.get("apiVersion")
        if not isinstance(api_version, str) or not is_custom_group(api_version):
            return None
        group, _, version = api_version.rpartition("/")
        crd = self.by_kind(group, str(obj.get("kind")))
        return crd if crd is not None and version in d.served_versions(crd) else None

    # ---- the definitions themselves --------------------------------------------------------

    @staticmethod
    def prepare_definition(crd: Obj, old: Obj | None) -> None:
        """Default and validate a definition being written; a new one starts with no names
        accepted (the naming controller accepts them), an update adds its storage version to
        `status.storedVersions`."""
        d.default(crd)
        problems = crd_problems(crd, old)
        if problems:
            raise Invalid.of(d.KIND, d.GROUP, crd["metadata"].get("name", ""), problems)
        if old is None:
            crd["status"] = d.initial_status(crd)
            return
        status = crd["status"] = deep_copy(old.get("status") or {})
        stored = status.setdefault("storedVersions", [])
        if (storage := d.storage_version(crd)) and storage not in stored:
            stored.append(storage)

    # ---- custom objects --------------------------------------------------------------------

    @staticmethod
    def prepare(obj: Obj, crd: Obj, old: Obj | None) -> None:
        """Default, prune and validate a custom object in the version it was written in, then
        move it to the storage version; raises Invalid."""
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        schema = d.schema(crd, version)
        default_and_prune(obj, schema)
        old_view = view(old, crd, version) if old is not None else None
        problems = object_problems(obj, schema, old_view) + cel.rule_problems(obj, old_view, schema)
        if problems:
            raise Invalid.of(d.kind(crd), group, obj["metadata"].get("name", ""), problems)
        obj["apiVersion"] = f"{group}/{d.storage_version(crd)}"

    @staticmethod
    def bump_generation(crd: Obj, current: Obj, new: Obj) -> None:
        """A custom object's generation counts changes to anything but its metadata and, when the
        status is a subresource, its status."""
        skip = {"metadata", "status"} if "status" in d.subresources(crd, d.storage_version(crd)) else {"metadata"}
        if any(current.get(k) != new.get(k) for k in set(current) | set(new) if k not in skip):
            new["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1


def view(obj: Obj, crd: Obj, version: str) -> Obj:
    """`obj` as `version` shows it: conversion `None` rewrites its apiVersion, nothing else."""
    api_version = f"{d.group(crd)}/{version}"
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}
