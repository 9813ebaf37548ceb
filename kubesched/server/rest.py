"""The REST verbs over the in-process API: what kube-apiserver's generic registry and its
handlers add around a store write (request decoding, preconditions, field validation, dry runs,
field managers, status and scale subresources), mapped onto `APIServer` calls.

Every method runs on the engine's one thread and returns (HTTP code, body). The components
(scheduler, kubelets, controllers) see the writes through the store's watch, exactly as they
see simulate's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
import yaml

from kubesched.api.crd import definition as crd_def
from kubesched.api.crd.objects import default_and_prune
from kubesched.api.fieldschema import decode
from kubesched.api.loader import read_yaml
from kubesched.api.objects import deep_copy, parse_time
from kubesched.api.restmapping import Resource
from kubesched.apiserver.caller import Caller
from kubesched.apiserver.customresources import view as custom_view
from kubesched.apiserver.defaults import set_defaults
from kubesched.apiserver.errors import (
    OBJECT_MODIFIED,
    AlreadyExists,
    APIError,
    BadRequest,
    ConflictError,
    Invalid,
    NotFoundError,
)
from kubesched.apiserver.scale import ScaleWrite, decoded, replicas_problem, scale_of
from kubesched.apiserver.server import APIServer
from kubesched.server import autoscalingv1, managedfields, typed
from kubesched.server import events as events_view
from kubesched.server import patch as patches
from kubesched.server import status as st
from kubesched.server.custom import CustomResource, column_cell
from kubesched.server.metrics import Metrics
from kubesched.server.selection import (
    EVENTS_V1_FIELDS,
    Selection,
    page,
    parse_field_selector,
    parse_label_selector,
    sort_key,
)
from kubesched.server.tables import custom_table, to_table

Obj = dict[str, Any]
Answer = tuple[int, Obj]

# Kinds whose status only the status subresource changes (their strategies reset it on update).
# Nodes keep a status given at creation (the kubelet registers with one); the rest start empty.
KEEPS_STATUS_ON_CREATE = frozenset({"Node", "Event"})
CREATE_ON_UPDATE = frozenset({"Lease", "Endpoints", "Event"})
# Set by the API server, never by a client's create.
SERVER_SET_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                   "selfLink")
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", APPLY)
# Custom resources have no patch strategies, so no strategic merge patch.
CUSTOM_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", APPLY)
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
WRITE_ATTEMPTS = 5


# The options kind each write verb decodes its query into.
_WRITE_OPTIONS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions",
                  "delete": "DeleteOptions", "deletecollection": "DeleteOptions"}


def _go_quote(text: str) -> str:
    """The inside of Go's %q of `text` (JSON's escapes are the same for what a query carries)."""
    return json.dumps(text)[1:-1]


def _loads(body: bytes) -> Any:
    """orjson reads a body several times faster; what it refuses (NaN, integers past 64 bits,
    bad input) json reads, or says what is wrong in the words clients are used to."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


@dataclass
class Request:
    """One REST request, parsed from its URL, query and headers."""

    verb: str  # get, list, watch, create, update, patch, delete, deletecollection
    resource: Resource
    namespace: str | None
    name: str | None = None
    subresource: str | None = None
    query: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = "application/json"
    user_agent: str = ""
    table: bool = False
    warnings: list[str] = field(default_factory=list)
    user: dict[str, Any] = field(default_factory=dict)  # the UserInfo authentication settled on
    authorize: Callable[[dict[str, Any]], tuple[bool, str]] | None = None  # the server's authorizer

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    @property
    def caller(self) -> Caller:
        """Who asks, as admission sees it; what admission warns of goes to this request's answer."""
        options: Obj = {}
        if dry_run := self.query.get("dryRun"):
            options["dryRun"] = [dry_run]
        if self.verb not in ("delete", "deletecollection") and (manager := self.query.get("fieldManager")):
            options["fieldManager"] = manager
        return Caller(self.user, self.dry_run, self.warnings, self.subresource or "", authorize=self.authorize,
                      resource=self.resource, options=options)

    def check_options(self) -> None:
        """A write's options as kube-apiserver validates them (ValidateCreateOptions and its kin)
        before anything is read or written: `dryRun` takes "All" alone."""
        kind = _WRITE_OPTIONS.get(self.verb)
        dry_run = self.query.get("dryRun")
        if kind is not None and dry_run is not None and dry_run != "All":
            raise Invalid.of(kind, "meta.k8s.io", "", [
                f'dryRun: Unsupported value: []string{{"{_go_quote(dry_run)}"}}: supported values: "All"'])

    @property
    def manager(self) -> str:
        """The field manager: `fieldManager`, else the client's name from its User-Agent."""
        return managedfields.manager_name(self.query.get("fieldManager", ""), self.user_agent)


class Rest:
    def __init__(self, api: APIServer, metrics: Metrics | None = None) -> None:
        self.api = api
        self.store = api.store
        self.metrics = metrics

    def _objects(self, req: Request, namespace: str | None) -> list[Obj]:
        """The objects of the request's resource: stored ones, or metrics computed now."""
        res = req.resource
        if res.stored:
            return list(self.store.list(res.store_kind, namespace))
        if self.metrics is None:
            return []
        if res.kind == "NodeMetrics":
            return self.metrics.nodes([n["metadata"]["name"] for n in self.store.list("Node")])
        return self.metrics.pods(namespace)

    # ---- helpers -----------------------------------------------------------------------------

    def now_time(self) -> Any:
        return parse_time(self.api.timestamp())

    def _decode_body(self, req: Request, patch: bool = False) -> Any:
        if not req.body:
            raise BadRequest("the body of the request was empty") if not patch else \
                BadRequest("the body of the request was in an unknown format - accepted media types include: "
                           + ", ".join(PATCH_TYPES))
        try:
            if "yaml" in req.content_type:
                return read_yaml(req.body)  # as sigs.k8s.io/yaml reads it: `=` and `y` as Go reads them
            return _loads(req.body)
        except (ValueError, yaml.YAMLError) as e:
            raise BadRequest(f"couldn't get version/kind; json parse error: {e}") from None

    def _object_body(self, req: Request) -> Obj:
        obj = self._decode_body(req)
        if not isinstance(obj, dict):
            raise BadRequest("couldn't get version/kind; json parse error: expected an object")
        res = req.resource
        if res.stored_as == "Event" and res.group == "events.k8s.io":
            obj = events_view.to_core({**obj, "apiVersion": "events.k8s.io/v1", "kind": "Event"})
        else:
            if obj.get("apiVersion") not in (None, res.api_version):
                raise BadRequest(f"the API version in the data ({obj.get('apiVersion')}) does not match the "
                                 f"expected API version ({res.api_version})")
            if obj.get("kind") not in (None, res.kind):
                raise BadRequest(f"the kind in the data ({obj.get('kind')}) does not match the expected kind "
                                 f"({res.kind})")
            obj = {**obj, "apiVersion": res.api_version, "kind": res.kind}
            if _is_v1_hpa(res):
                obj = autoscalingv1.to_v2(obj)
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata: expected an object")
        if res.namespaced:
            if meta.get("namespace") not in (None, "", req.namespace):
                raise BadRequest("the namespace of the provided object does not match the namespace sent on "
                                 "the request")
            meta["namespace"] = req.namespace
        self._check_fields(req, obj)
        return obj

    def _check_fields(self, req: Request, obj: Obj, patch: bool = False) -> None:
        """fieldValidation: Strict refuses unknown and duplicate fields, Warn (the default)
        answers with a warning header, Ignore says nothing."""
        mode = req.query.get("fieldValidation", "Warn")
        if mode not in ("Strict", "Warn", "Ignore"):
            raise BadRequest(f"fieldValidation: Unsupported value: {mode!r}: supported values: "
                             '"Ignore", "Strict", "Warn"')
        if isinstance(req.resource, CustomResource):
            # Unknown fields go as the request is decoded, before field managers see it.
            unknown = [f'unknown field "{path}"' for path in
                       default_and_prune(obj, req.resource.schema, defaults=False)]
            if mode == "Ignore":
                return
            if unknown and mode == "Strict":
                kind = req.resource.kind
                raise BadRequest(f'{kind} in version "{req.resource.version}" cannot be handled as a {kind}: '
                                 "strict decoding error: " + ", ".join(unknown))
            req.warnings.extend(unknown)
            return
        # Unknown fields of a built-in kind go as its Go struct decodes the request, whatever the mode.
        found = decode(obj.get("kind", ""), obj, patch, prune=True)
        unknown = [f'unknown field "{path}"' for path, message in found if message is None]
        wrong = [f"{path}: {message}" for path, message in found if message is not None]
        if wrong:
            raise BadRequest(f"{obj.get('kind')} in version \"{req.resource.version}\" cannot be handled as a "
                             f"{obj.get('kind')}: {wrong[0]}")
        if mode == "Ignore":
            return
        if unknown and mode == "Strict":
            message = "strict decoding error: " + ", ".join(unknown)
            if req.verb != "patch":  # a decoded body names its kind; a patched object does not
                message = f'{obj.get("kind")} in version "{req.resource.version}" cannot be handled as a ' \
                          f'{obj.get("kind")}: {message}'
            raise BadRequest(message)
        req.warnings.extend(unknown)

    def _get(self, req: Request, name: str | None = None) -> Obj:
        res, name = req.resource, name or req.name or ""
        if not res.stored:
            obj = next((o for o in self._objects(req, req.namespace) if o["metadata"]["name"] == name), None)
        else:
            obj = self.store.get(res.store_kind, req.namespace or "" if res.namespaced else "", name)
        if obj is None:
            raise _NotFound(res, name)
        return obj

    def _view(self, req: Request, obj: Obj) -> Obj:
        """The object as this resource shows it (events.k8s.io/v1's shape of an Event)."""
        res = req.resource
        if res.group == "events.k8s.io":
            return events_view.to_events_v1(obj)
        if _is_v1_hpa(res):
            return autoscalingv1.to_v1(obj)
        if isinstance(res, CustomResource):
            return custom_view(obj, res.crd, res.version)
        return obj

    def table(self, req: Request, objs: list[Obj], rv: str, token: str | None = None,
              remaining: int | None = None, no_headers: bool = False) -> Obj:
        """The Table kubectl asks for: the kind's printer, or a custom resource's columns."""
        include = req.query.get("includeObject", "Metadata")
        res = req.resource
        if isinstance(res, CustomResource):
            return custom_table(res.printer_columns, column_cell, objs, self.now_time(), include, rv, token,
                                no_headers, remaining)
        if _is_v1_hpa(res):  # printed from the stored shape
            objs = [autoscalingv1.to_v2(o) for o in objs]
        return to_table(res.kind, objs, self.now_time(), include, rv, token, no_headers, remaining)

    def _check_namespace(self, req: Request) -> None:
        """NamespaceLifecycle: objects are created only in namespaces that exist and are not
        being deleted."""
        if not req.resource.namespaced:
            return
        ns = self.store.get("Namespace", "", req.namespace or "")
        if ns is None:
            raise NotFoundError(f'namespaces "{req.namespace}" not found')
        if (ns.get("status") or {}).get("phase") == "Terminating" or ns["metadata"].get("deletionTimestamp"):
            raise _Forbidden(f'{req.resource.plural} "{req.name or ""}" is forbidden: unable to create new content '
                             f'in namespace {req.namespace} because it is being terminated')

    # ---- reads -------------------------------------------------------------------------------

    def get(self, req: Request) -> Answer:
        obj = self._view(req, self._get(req))
        if req.subresource == "scale":
            return 200, self._scale_of(req, obj)
        if req.table:
            return 200, self.table(req, [obj], obj["metadata"].get("resourceVersion", ""))
        return 200, obj

    def selection(self, req: Request) -> Selection:
        renames = EVENTS_V1_FIELDS if req.resource.group == "events.k8s.io" else None
        labels = req.query.get("labelSelector")
        fields = req.query.get("fieldSelector")
        selectable = req.resource.selectable_fields if isinstance(req.resource, CustomResource) else ()
        return Selection(parse_label_selector(labels) if labels else None,
                         tuple(parse_field_selector(fields, req.resource.store_kind, renames, selectable))
                         if fields else (),
                         req.namespace if req.resource.namespaced else None)

    def list(self, req: Request) -> Answer:
        sel = self.selection(req)
        res = req.resource
        rv = self.store.resource_version
        objs = sorted((o for o in self._objects(req, sel.namespace) if sel.matches(o)), key=sort_key)
        try:
            limit = int(req.query.get("limit") or 0)
        except ValueError:
            raise BadRequest(f"limit: invalid value {req.query.get('limit')!r}") from None
        items, token, remaining = page(objs, limit, req.query.get("continue"), rv)
        items = [self._view(req, o) for o in items]
        meta: Obj = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            meta["remainingItemCount"] = remaining
        if req.table:
            return 200, self.table(req, items, str(rv), token, remaining)
        return 200, {"kind": _list_kind(res), "apiVersion": res.api_version, "metadata": meta, "items": items}

    # ---- writes ------------------------------------------------------------------------------

    def create(self, req: Request) -> Answer:
        if req.subresource in ("binding", "eviction"):
            return self._pod_action(req)
        if req.resource.kind == "Binding":
            body = self._decode_body(req)
            pod = (body.get("metadata") or {}).get("name") if isinstance(body, dict) else None
            if not pod:
                raise BadRequest("Binding: metadata.name: Required value")
            return self._bind(req, pod, body)
        obj = self._object_body(req)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise BadRequest("resourceVersion should not be set on objects to be created")
        for key in SERVER_SET_META:
            meta.pop(key, None)
        kind = obj["kind"]
        custom = req.resource if isinstance(req.resource, CustomResource) else None
        if custom is not None:
            self._check_definition(custom)
        if kind not in KEEPS_STATUS_ON_CREATE and (custom is None or "status" in custom.subresources):
            obj.pop("status", None)
        if kind == "Namespace":
            obj["status"] = {"phase": "Active"}
            spec = obj.setdefault("spec", {})
            spec.setdefault("finalizers", ["kubernetes"])
        req.name = meta.get("name")
        self._check_namespace(req)
        set_defaults(obj)  # before managedFields: the writer owns what decoding defaulted
        obj = managedfields.record_update(None, obj, req.manager, self.api.timestamp(), custom=_typing(req),
                                          **_versions(req))
        try:  # decoded for this request alone: handed over, not copied
            return 201, self._view(req, self.api.create(obj, dry_run=req.dry_run, caller=req.caller, owned=True,
                                                        defaulted=True))
        except AlreadyExists:
            raise AlreadyExists(st.already_exists(req.resource, req.name or "")["message"]) from None

    def update(self, req: Request) -> Answer:
        return self._retrying(self._update, req)

    def _update(self, req: Request) -> Answer:
        res = req.resource
        if req.subresource == "scale":
            return self._update_scale(req, self._decode_body(req))
        obj = self._object_body(req)
        meta = obj["metadata"]
        if meta.get("name") != req.name:
            raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                             f"({req.name})")
        try:
            current = self._get(req)
        except _NotFound:
            if res.kind not in CREATE_ON_UPDATE:
                raise
            meta.pop("resourceVersion", None)
            return self.create(Request("create", res, req.namespace, req.name, None, req.query,
                                       json.dumps(obj).encode(), "application/json", req.user_agent,
                                       warnings=req.warnings, user=req.user, authorize=req.authorize))
        rv = meta.get("resourceVersion")
        if rv and rv != current["metadata"].get("resourceVersion"):
            raise _Conflict(res, req.name or "", OBJECT_MODIFIED)
        return 200, self._view(req, self._write(req, current, obj))

    def _write(self, req: Request, current: Obj, new: Obj) -> Obj:
        """Store `new` as the next version of `current`, keeping what a client may not change
        through this endpoint: the metadata the server sets, and the status (unless this is the
        status subresource) or everything but the status (if it is)."""
        meta = new["metadata"]
        cur_meta = current["metadata"]
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if key in cur_meta:
                meta[key] = cur_meta[key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = cur_meta.get("resourceVersion")
        if req.subresource == "status":
            new = {**current, "status": new.get("status") or {}, "metadata": {**cur_meta}}
        elif "status" in current or "status" in new:
            new["status"] = current.get("status", {}) if "status" in req.resource.subresources else \
                new.get("status", current.get("status"))
        if req.subresource != "status":
            set_defaults(new)
        new = managedfields.record_update(current, new, req.manager, self.api.timestamp(), req.subresource or "",
                                          _typing(req), **_versions(req))
        return self.api.update(new, status_only=req.subresource == "status", caller=req.caller, dry_run=req.dry_run)

    def patch(self, req: Request) -> Answer:
        return self._retrying(self._patch, req)

    @staticmethod
    def _retrying(write: Callable[[Request], Answer], req: Request) -> Answer:
        """An update or patch is made again to the object as it now is when the object changed
        while its admission waited on a webhook, as GuaranteedUpdate retries, unless the client
        made the resourceVersion a precondition."""
        attempts = 1
        while True:
            try:
                return write(req)
            except ConflictError:
                if attempts == WRITE_ATTEMPTS or b"resourceVersion" in req.body:
                    raise
                attempts += 1

    def _patch(self, req: Request) -> Answer:
        ctype = req.content_type.split(";", 1)[0].strip()
        accepted = CUSTOM_PATCH_TYPES if isinstance(req.resource, CustomResource) else PATCH_TYPES
        if ctype not in accepted:
            return 415, st.status(415, "UnsupportedMediaType",
                                  f'the body of the request was in an unknown format - accepted media types '
                                  f'include: {", ".join(accepted)}')
        body = self._decode_body(req, patch=True)
        if req.subresource == "scale":
            scale = self._scale_of(req, self._get(req))
            return self._update_scale(req, self._apply_patch(ctype, scale, body))
        res = req.resource
        if ctype == APPLY:
            code, obj = self._apply(req, body)
            return code, self._view(req, obj) if _is_v1_hpa(res) else obj
        current = self._view(req, self._get(req))
        new = self._apply_patch(ctype, current, body)
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise BadRequest("the patched object is not an object")
        if (new["metadata"].get("name") != req.name) or (res.namespaced and new["metadata"].get("namespace")
                                                          != req.namespace):
            raise BadRequest("metadata.name and metadata.namespace may not be changed by a patch")
        if res.group == "events.k8s.io":
            new = events_view.to_core(new)
        elif _is_v1_hpa(res):
            new = autoscalingv1.to_v2(new)
        rv = new["metadata"].get("resourceVersion")
        stored = self._get(req)
        if rv and rv != stored["metadata"].get("resourceVersion"):
            raise _Conflict(res, req.name or "", OBJECT_MODIFIED)
        self._check_fields(req, new)
        return 200, self._view(req, self._write(req, stored, new))

    @staticmethod
    def _apply_patch(ctype: str, current: Obj, body: Any) -> Obj:
        if ctype == "application/json-patch+json":
            return patches.json_patch(deep_copy(current), body)
        if not isinstance(body, dict):
            raise BadRequest("the body of the request is not a JSON object")
        if ctype == "application/merge-patch+json":
            return patches.merge_patch(current, body)
        return patches.strategic_merge_patch(current, body)

    def _apply(self, req: Request, body: Any) -> Answer:
        """Server-side apply: create the object if it is missing, else merge the manager's
        intent in, with conflicts unless `force`."""
        if "fieldManager" not in req.query:
            raise BadRequest("PATCH /apply requires fieldManager to be set")
        if not isinstance(body, dict):
            raise BadRequest("the body of an apply request must be an object")
        res = req.resource
        meta = body.get("metadata") or {}
        if meta.get("name") not in (None, req.name):
            raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                             f"({req.name})")
        body = {**body, "apiVersion": body.get("apiVersion", res.api_version), "kind": body.get("kind", res.kind),
                "metadata": {**meta, "name": req.name}}
        if res.namespaced:
            body["metadata"]["namespace"] = req.namespace
        self._check_fields(req, body)
        force = req.query.get("force") in ("true", "1")
        try:
            current: Obj | None = self._get(req)
        except _NotFound:
            current = None
        # Applied in the request's version (autoscaling/v1's view of a stored v2 HPA), then stored.
        live = self._view(req, current) if current is not None and _is_v1_hpa(res) else current
        new = managedfields.apply(live, body, req.manager, force, self.api.timestamp(), req.subresource or "",
                                  _typing(req), _versions(req).get("convert"))
        if _is_v1_hpa(res):
            new = autoscalingv1.to_v2(new)
        if current is None:
            self._check_namespace(req)
            for key in SERVER_SET_META:
                new["metadata"].pop(key, None)
            new["metadata"].pop("resourceVersion", None)
            if new["kind"] not in KEEPS_STATUS_ON_CREATE:
                new.pop("status", None)
            return 201, self.api.create(new, dry_run=req.dry_run, caller=req.caller)
        if req.subresource == "status":
            return 200, self.api.update({**current, "status": new.get("status") or {},
                                         "metadata": new["metadata"]}, status_only=True, caller=req.caller,
                                        dry_run=req.dry_run)
        if "status" in req.resource.subresources:
            new["status"] = current.get("status", {})
        new["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
        return 200, self.api.update(new, caller=req.caller, dry_run=req.dry_run)

    def delete(self, req: Request) -> Answer:
        options = self._delete_options(req)
        res = req.resource
        current = self._get(req)
        pre = options.get("preconditions") or {}
        meta = current["metadata"]
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise _Conflict(res, req.name or "", f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                            f"object meta: {meta.get('uid')}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise _Conflict(res, req.name or "", f"Precondition failed: ResourceVersion in precondition: "
                            f"{pre['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}")
        caller = req.caller
        caller.options.update({k: options[k] for k in ("gracePeriodSeconds", "propagationPolicy") if k in options})
        if req.dry_run or res.kind == "Namespace":  # admission alone: a dry run, or before the registry's own
            self.api.delete(res.store_kind, req.namespace or "", req.name or "", caller=caller, dry_run=True)
        if req.dry_run:
            return self._deleted(req, current, None)
        if res.kind == "Namespace":
            return 200, self._delete_namespace(current)
        if res.kind == crd_def.KIND and res.group == crd_def.GROUP:
            current = self._mark_crd_terminating(current)
        left = self.api.delete(res.store_kind, req.namespace or "", req.name or "",
                               grace_period=options.get("gracePeriodSeconds"),
                               propagation_policy=options.get("propagationPolicy") or (
                                   "Orphan" if options.get("orphanDependents") else None), caller=caller)
        return self._deleted(req, current, left)

    def _deleted(self, req: Request, current: Obj, left: Obj | None) -> Answer:
        """The answer to a DELETE, as each registry gives it: the object (202 while it is still
        terminating) for the kinds whose strategy returns it, else a Success Status naming it."""
        res = req.resource
        if res.delete_returns_object:
            return (200, self._view(req, current)) if left is None else (202, self._view(req, left))
        if left is not None:
            return 200, self._view(req, left)
        details = st.details_of(res, req.name)
        details["uid"] = current["metadata"].get("uid")
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def _mark_crd_terminating(self, crd: Obj) -> Obj:
        """The definition registry's delete: its cleanup finalizer and a Terminating condition first,
        so that the definition stays until the finalizer controller has deleted its objects."""
        meta = crd["metadata"]
        if crd_def.CLEANUP_FINALIZER in (meta.get("finalizers") or ()):
            return crd
        status = deep_copy(crd.get("status") or {})
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "Terminating"]
        conditions.append({"type": "Terminating", "status": "True", "reason": "InstanceDeletionPending",
                           "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will "
                                      "begin soon", "lastTransitionTime": self.api.timestamp()})
        status["conditions"] = conditions
        new = {**crd, "metadata": {**meta, "finalizers": [*(meta.get("finalizers") or ()),
                                                          crd_def.CLEANUP_FINALIZER]}, "status": status}
        return self.store.update(new)

    def _check_definition(self, res: CustomResource) -> None:
        """No new objects while the definition is being deleted."""
        crd = self.store.get(crd_def.KIND, "", res.crd["metadata"]["name"])
        if crd is None or crd_def.terminating(crd):
            raise _MethodNotAllowed("create not allowed while custom resource definition is terminating")

    def _delete_options(self, req: Request) -> Obj:
        options: Obj = {}
        if req.body:
            body = self._decode_body(req)
            if isinstance(body, dict):
                options.update(body)
        q = req.query
        if "gracePeriodSeconds" in q:
            try:
                options["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            except ValueError:
                raise BadRequest(f"gracePeriodSeconds: invalid value {q['gracePeriodSeconds']!r}") from None
        if "propagationPolicy" in q:
            options["propagationPolicy"] = q["propagationPolicy"]
        grace = options.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise BadRequest("gracePeriodSeconds: must be an integer")
        if grace is not None and grace < 0:
            options["gracePeriodSeconds"] = 1
        policy = options.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise Invalid(f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                          f'"{policy}": supported values: "Foreground", "Background", "Orphan", "nil"')
        return options

    def _delete_namespace(self, ns: Obj) -> Obj:
        """The namespace registry's delete: the namespace goes Terminating with a
        deletionTimestamp; the namespace controller deletes its content and then the namespace."""
        if ns["metadata"].get("deletionTimestamp"):
            return ns
        return self.store.update({**ns, "metadata": {**ns["metadata"], "deletionTimestamp": self.api.timestamp(),
                                                     "deletionGracePeriodSeconds": 0},
                                  "status": {**(ns.get("status") or {}), "phase": "Terminating"}})

    def deletecollection(self, req: Request) -> Answer:
        sel = self.selection(req)
        res = req.resource
        items = []
        for obj in sorted((o for o in self.store.list(res.store_kind, sel.namespace) if sel.matches(o)),
                          key=sort_key):
            sub = Request("delete", res, obj["metadata"].get("namespace"), obj["metadata"]["name"], None,
                          req.query, req.body, req.content_type, req.user_agent, warnings=req.warnings, user=req.user,
                          authorize=req.authorize)
            try:
                _, answer = self.delete(sub)
            except _NotFound:
                continue
            items.append(self._view(req, obj) if answer.get("kind") == "Status" else answer)
        return 200, {"kind": _list_kind(res), "apiVersion": res.api_version,
                     "metadata": {"resourceVersion": str(self.store.resource_version)}, "items": items}

    # ---- subresources ------------------------------------------------------------------------

    def _pod_action(self, req: Request) -> Answer:
        body = self._decode_body(req)
        if not isinstance(body, dict):
            raise BadRequest("the body of the request is not a JSON object")
        if req.subresource == "binding":
            return self._bind(req, req.name or "", body)
        self.api.evict(req.namespace or "", req.name or "", body, requester=req.manager, caller=req.caller)
        return 201, st.status(201, "", "")

    def _bind(self, req: Request, pod: str, body: Obj) -> Answer:
        target, meta = body.get("target") or {}, body.get("metadata") or {}
        if not isinstance(target, dict) or not isinstance(meta, dict) or not isinstance(target.get("name", ""), str):
            raise BadRequest("the body of the request is not a Binding object")  # as Go's decoding refuses it
        if not target.get("name"):
            raise Invalid(f'Binding "{pod}" is invalid: target.name: Required value')
        if meta.get("name") not in (None, pod):
            raise BadRequest("name in URL does not match name in Binding object")
        self.api.bind(req.namespace or "", pod, target["name"], req.caller)
        return 201, st.status(201, "", "")

    @staticmethod
    def _scale_of(req: Request, obj: Obj) -> Obj:
        return scale_of(obj, req.resource.scale if isinstance(req.resource, CustomResource) else None)

    def _update_scale(self, req: Request, scale: Any) -> Answer:
        """A Scale written (PUT, or the patched Scale of a PATCH): the object's replicas set from
        it; admission judges the Scale, as the registries' scaleUpdatedObjectInfo has it."""
        if not isinstance(scale, dict) or not all(isinstance(scale.get(k, {}), dict | None) for k in ("spec", "metadata")):
            raise BadRequest("the body of the request is not a Scale object")
        if problem := replicas_problem(scale):
            raise Invalid.of("Scale", "autoscaling", req.name or "", [problem])
        current = self._get(req)
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != current["metadata"].get("resourceVersion"):
            raise _Conflict(req.resource, req.name or "", OBJECT_MODIFIED)
        write = ScaleWrite(decoded(scale), req.resource.scale if isinstance(req.resource, CustomResource) else None)
        new = write.with_replicas(current, (scale.get("spec") or {}).get("replicas", 0))
        new = self.api.update(managedfields.record_update(current, new, req.manager, self.api.timestamp(), "scale",
                                                          _typing(req)), caller=replace(req.caller, scale=write),
                              dry_run=req.dry_run)
        return 200, write.of(new)


class _NotFound(NotFoundError):
    def __init__(self, resource: Resource, name: str) -> None:
        super().__init__(st.not_found(resource, name)["message"])
        self.resource = resource
        self.name = name


class _Conflict(APIError):
    code = 409
    reason = "Conflict"

    def __init__(self, resource: Resource, name: str, why: str) -> None:
        super().__init__(st.conflict(resource, name, why)["message"])


class _MethodNotAllowed(APIError):
    code = 405
    reason = "MethodNotAllowed"


def _typing(req: Request) -> managedfields.Custom:
    """What managed fields need of a custom resource: its type, and whether status is a subresource."""
    res = req.resource
    if not isinstance(res, CustomResource):
        return None
    return typed.custom_type(res.schema), "status" in res.subresources


def _versions(req: Request) -> dict[str, Any]:
    """For a kind served in two versions (HPAs): the request's, in which the writer's managed
    fields are kept, and how the stored object shows in the other."""
    res = req.resource
    if res.store_kind == "HorizontalPodAutoscaler" and res.group == "autoscaling":
        return {"api_version": res.api_version, "convert": autoscalingv1.in_version}
    return {}


def _is_v1_hpa(res: Resource) -> bool:
    """autoscaling/v1's view of the stored autoscaling/v2 HorizontalPodAutoscalers."""
    return res.stored_as == "HorizontalPodAutoscaler"


def _list_kind(res: Resource) -> str:
    return res.list_kind if isinstance(res, CustomResource) else f"{res.kind}List"


class _Forbidden(APIError):
    code = 403
    reason = "Forbidden"
