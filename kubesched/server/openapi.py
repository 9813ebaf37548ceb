"""The OpenAPI v3 documents kube-apiserver serves at `/openapi/v3` and `/openapi/v3/<path>`.

kubectl reads them for `explain` (it finds a resource's kind through the
`x-kubernetes-group-version-kind` of the operations on its paths, then the schema carrying that
kind), for `apply`'s field validation (whether the PATCH operations of a kind take the
`fieldValidation` parameter) and for client-side apply's strategic merge patch (whether PATCH
accepts `application/strategic-merge-patch+json`, then the schemas' patch strategies).

The schemas come from the v1.35 definitions kubernetes-validate ships (schema.py), turned back
into what kube-openapi emits: nullable type unions become the plain type, references with
siblings are wrapped in `allOf`, the `apiVersion`/`kind` enums the package adds are dropped, and
Quantity and IntOrString get their upstream `oneOf` forms. The package lost upstream's `default`
values and field enums, so those are absent here too.

Each document is built once and its bytes cached; its hash (upstream's: SHA-512 of the bytes, hex)
goes into the index so clients can cache documents by URL.

kubectl v1.32 still asks `/openapi/v2` (as protobuf) where these documents leave it without an
answer: to validate a `kind: List` manifest on the client, and for `explain --output
plaintext-openapiv2`; openapi_v2.py builds that document from `component_schemas()`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from typing import Any

from kubesched.api.restmapping import AGGREGATED_GROUPS, Resource, in_group_version
from kubesched.server.discovery import GROUPS, SUBRESOURCES, versions
from kubesched.server.schema import KUBERNETES_VERSION, definition_name, definitions

_REF = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_STATUS = _META + "Status"
_WATCH_EVENT = _META + "WatchEvent"

# Quantity and IntOrString as kube-openapi writes them in v3 (the package has its own forms).
_SCALAR_UNIONS: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": (
            "Quantity is a fixed-point representation of a number. It provides convenient "
            "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() "
            "accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= "
            "<signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in "
            "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | "
            "<digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | "
            ".<digits> <sign>            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> "
            "<suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= "
            "Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; See: "
            "http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | k | M | G "
            "| T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n"
            "<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> ```\n\nNo matter which of the "
            "three exponent forms is used, no quantity may represent a number greater than 2^63-1 in "
            "magnitude, nor may it have more than 3 decimal places. Numbers larger or more precise "
            "will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended in "
            "the future if we require larger or smaller quantities."
        ),
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": (
            "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
            "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
            "to have, for example, a JSON field that can accept a name or number."
        ),
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
}

# ---- schemas -------------------------------------------------------------------------------------


def _type(value: Any) -> Any:
    """`["string", "null"]` -> `"string"`: kube-openapi marks no field nullable this way."""
    if isinstance(value, list):
        kept = [t for t in value if t != "null"]
        return kept[0] if len(kept) == 1 else kept
    return value


def _schema(s: dict[str, Any]) -> dict[str, Any]:
    """One JSON-schema node in kube-openapi's v3 form; follows only the keywords that hold
    schemas, so a property that happens to be called `$ref` stays a property."""
    out: dict[str, Any] = {}
    for key, value in s.items():
        if key == "$ref":
            continue
        if key == "type":
            out[key] = _type(value)
        elif key == "properties":
            out[key] = {name: _schema(p) for name, p in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _schema(value)
        elif key in ("allOf", "oneOf", "anyOf"):
            out[key] = [_schema(v) for v in value]
        else:
            out[key] = value
    ref = s.get("$ref")
    if isinstance(ref, str):
        target = {"$ref": _REF + ref.rsplit("/", 1)[-1]}
        return {"allOf": [target], **out} if out else target
    return out


@cache
def component_schemas() -> dict[str, dict[str, Any]]:
    """Every definition by name in the v3 form (documents take the part they reference)."""
    out: dict[str, dict[str, Any]] = {}
    for name, definition in definitions().items():
        converted = _SCALAR_UNIONS.get(name) or _schema(definition)
        if "x-kubernetes-group-version-kind" in definition:
            for field in ("apiVersion", "kind"):
                prop = converted.get("properties", {}).get(field)
                if prop is not None:
                    prop.pop("enum", None)
        out[name] = converted
    return out


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            found.add(ref[len(_REF):])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _closure(paths: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The schemas `paths` reference, directly or through other schemas, sorted by name."""
    schemas = component_schemas()
    todo: set[str] = set()
    _refs(paths, todo)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        _refs(schemas[name], todo)
    return {name: schemas[name] for name in sorted(seen)}


# ---- parameters ----------------------------------------------------------------------------------

_PARAMS: dict[str, tuple[str, str]] = {  # name -> (schema type, description), as upstream words them
    "allowWatchBookmarks": (
        "boolean",
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not "
        "implement bookmarks may ignore this flag and bookmarks are sent at the server's "
        "discretion. Clients should not assume bookmarks are returned at any specific interval, "
        "nor may they assume the server will send any BOOKMARK event during a session. If this is "
        "not a watch, this field is ignored."),
    "continue": (
        "string",
        "The continue option should be set when retrieving more results from the server. Since "
        "this value is server defined, clients may only use the continue value from a previous "
        "query result with identical query parameters (except for the value of continue) and the "
        "server may reject a continue value it does not recognize. If the specified continue value "
        "is no longer valid whether due to expiration (generally five to fifteen minutes) or a "
        "configuration change on the server, the server will respond with a 410 ResourceExpired "
        "error together with a continue token. If the client needs a consistent list, it must "
        "restart their list without the continue field. Otherwise, the client may send another "
        "list request with the token received with the 410 error, the server will respond with a "
        "list starting from the next key, but from the latest snapshot, which is inconsistent from "
        "the previous list results - objects that are created, modified, or deleted after the "
        "first list request will be included in the response, as long as their keys are after the "
        "\"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch "
        "from the last resourceVersion value returned by the server and not miss any modifications."),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted. An invalid or "
        "unrecognized dryRun directive will result in an error response and no further processing "
        "of the request. Valid values are: - All: all dry run stages will be processed"),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes. "
        "The value must be less than or 128 characters long, and only contain printable "
        "characters, as defined by https://golang.org/pkg/unicode/#IsPrint."),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to "
        "everything."),
    "fieldValidation": (
        "string",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This "
        "will ignore any unknown fields that are silently dropped from the object, and will ignore "
        "all but the last duplicate field that the decoder encounters. This is the default "
        "behavior prior to v1.23. - Warn: This will send a warning via the standard warning "
        "response header for each unknown field that is dropped from the object, and for each "
        "duplicate field that is encountered. The request will still succeed if there are no other "
        "errors, and will only persist the last of any duplicate fields. This is the default in "
        "v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields "
        "would be dropped from the object, or if any duplicate fields are present. The error "
        "returned from the server will contain all unknown and duplicate fields encountered."),
    "force": (
        "boolean",
        "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting "
        "fields owned by other people. Force flag must be unset for non-apply patch requests."),
    "gracePeriodSeconds": (
        "integer",
        "The duration in seconds before the object should be deleted. Value must be non-negative "
        "integer. The value zero indicates delete immediately. If this value is nil, the default "
        "grace period for the specified type will be used. Defaults to a per object value if not "
        "specified. zero means delete immediately."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal "
        "deletion flow fails with a corrupt object error. A resource is considered corrupt if it "
        "can not be retrieved from the underlying storage successfully because of a) its data can "
        "not be transformed e.g. decryption failure, or b) it fails to decode into an object. "
        "NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and "
        "removes the object from the storage. WARNING: This may potentially break the cluster if "
        "the workload associated with the resource being unsafe-deleted relies on normal deletion "
        "flow. Use only if you REALLY know what you are doing. The default value is false, and the "
        "user must opt in to enable it"),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to "
        "everything."),
    "limit": (
        "integer",
        "limit is a maximum number of responses to return for a list call. If more items exist, "
        "the server will set the `continue` field on the list metadata to a value that can be used "
        "with the same initial query to retrieve the next set of results. Setting a limit may "
        "return fewer than the requested amount of items (up to zero items) in the event all "
        "requested objects are filtered out and clients should only use the presence of the "
        "continue field to determine whether more results are available. Servers may choose not to "
        "support the limit argument and will return all of the available results. If limit is "
        "specified and the continue field is empty, clients may assume that no more results are "
        "available. This field is not supported if watch is true.\n\nThe server guarantees that the "
        "objects returned when using continue will be identical to issuing a single list call "
        "without a limit - that is, no objects created, modified, or deleted after the first "
        "request is issued will be included in any subsequent continued requests. This is "
        "sometimes referred to as a consistent snapshot, and ensures that a client that is using "
        "limit to receive smaller chunks of a very large result can ensure they see all possible "
        "objects. If objects are updated during a chunked list the version of the object that was "
        "present at the time the first list result was calculated is returned."),
    "orphanDependents": (
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. "
        "Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be "
        "added to/removed from the object's finalizers list. Either this field or "
        "PropagationPolicy may be set, but not both."),
    "pretty": (
        "string",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent "
        "indicates a browser or command-line HTTP tool (curl and wget)."),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed. Either this field or "
        "OrphanDependents may be set, but not both. The default policy is decided by the existing "
        "finalizer set in the metadata.finalizers and the resource-specific default policy. "
        "Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage "
        "collector to delete the dependents in the background; 'Foreground' - a cascading policy "
        "that deletes all dependents in the foreground."),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. "
        "See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
        "details.\n\nDefaults to unset"),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is "
        "highly recommended that resourceVersionMatch be set for list calls where resourceVersion "
        "is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions "
        "for details.\n\nDefaults to unset"),
    "sendInitialEvents": (
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch "
        "stream will begin with synthetic events to produce the current state of objects in the "
        "collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be "
        "sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of "
        "objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, "
        "the watch stream will proceed as usual, sending watch events corresponding to changes "
        "(subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we "
        "require `resourceVersionMatch` option to also be set. The semantic of the watch request "
        "is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at "
        "least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the "
        "state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the "
        "ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" "
        "and the\n  bookmark event is send when the state is synced at least to the moment\n  when "
        "request started being processed.\n- `resourceVersionMatch` set to any other value or "
        "unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or "
        "`resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise."),
    "timeoutSeconds": (
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any "
        "activity or inactivity."),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, "
        "and remove notifications. Specify resourceVersion."),
}
_PATCH_FIELD_MANAGER = (
    _PARAMS["fieldManager"][1] + " This field is required for apply requests (application/apply-patch) but "
    "optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).")

_LIST = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
         "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_DELETE = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
           "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION = ("continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
                      "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit",
                      "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
                      "sendInitialEvents", "timeoutSeconds")
_WRITE = ("dryRun", "fieldManager", "fieldValidation")


def _query(name: str, description: str | None = None) -> dict[str, Any]:
    kind, text = _PARAMS[name]
    return {"description": description or text, "in": "query", "name": name,
            "schema": {"type": kind, "uniqueItems": True}}


def _queries(names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [_query(n) for n in names]


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "in": "path", "name": name, "required": True,
            "schema": {"type": "string", "uniqueItems": True}}


_NAMESPACE = _path_param("namespace", "object name and auth scope, such as for teams and projects")


def _hoist(item: dict[str, Any], shared: list[dict[str, Any]]) -> dict[str, Any]:
    """A path item whose operations all take `shared`: the parameters every operation takes move
    to the path, as kube-openapi does (all of them, for a path with one operation); both lists are
    sorted by name."""
    ops = list(item.values())
    for op in ops:
        op["parameters"] = op.get("parameters", []) + shared
    common = [p for p in ops[0]["parameters"] if all(p in op["parameters"] for op in ops[1:])]
    for op in ops:
        own = sorted((p for p in op["parameters"] if p not in common), key=lambda p: p["name"])
        if own:
            op["parameters"] = own
        else:
            del op["parameters"]
    item["parameters"] = sorted(common, key=lambda p: p["name"])
    return item


# ---- operations ----------------------------------------------------------------------------------

_READ_TYPES = ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")
_LIST_TYPES = ("application/json", "application/json;stream=watch", "application/vnd.kubernetes.protobuf",
               "application/vnd.kubernetes.protobuf;stream=watch", "application/yaml")
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json")
_CODES = {"200": "OK", "201": "Created", "202": "Accepted"}


def _content(schema_name: str, types: tuple[str, ...] = ("*/*",)) -> dict[str, Any]:
    return {t: {"schema": {"$ref": _REF + schema_name}} for t in types}


def _responses(schema_name: str, *codes: str, types: tuple[str, ...] = _READ_TYPES) -> dict[str, Any]:
    out: dict[str, Any] = {c: {"content": _content(schema_name, types), "description": _CODES[c]}
                           for c in codes or ("200",)}
    out["401"] = {"description": "Unauthorized"}
    return out


def _article(noun: str) -> str:
    """`a `/`an ` before a kind, nothing before a plural one (`create Endpoints`), as upstream words it."""
    if noun.endswith("s") and not noun.endswith("ss"):
        return ""
    return "an " if noun[0].lower() in "aeiou" else "a "


def _group_word(group: str) -> str:
    """The group as operation ids and tags spell it: `rbacAuthorization`, `core`."""
    words = (group.removesuffix(".k8s.io") or "core").replace("-", ".").split(".")
    return words[0] + "".join(w.title() for w in words[1:])


def _gv_words(group: str, version: str) -> tuple[str, str]:
    """The group/version in operation ids (`RbacAuthorizationV1`) and in tags (`rbacAuthorization_v1`)."""
    word = _group_word(group)
    return word[0].upper() + word[1:] + version[:1].upper() + version[1:], f"{word}_{version}"


class _Kind:
    """Writes the operations on one kind's paths: operation ids, tags, and the kind they act on."""

    def __init__(self, group: str, version: str, gvk: tuple[str, str, str], name: str) -> None:
        self.gv_id, self.tag = _gv_words(group, version)
        self.gvk = {"group": gvk[0], "kind": gvk[2], "version": gvk[1]}
        self.name = name  # what follows the verb and group/version in operation ids
        api_version = f"{gvk[0]}/{gvk[1]}" if gvk[0] else gvk[1]
        self.schema = definition_name(api_version, gvk[2]) or custom_schema_name(gvk[0], gvk[1], gvk[2])

    def op(self, verb: str, action: str, description: str, params: list[dict[str, Any]],
           responses: dict[str, Any], body: dict[str, Any] | None = None,
           name: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"description": description,
                               "operationId": f"{verb}{self.gv_id}{self.name if name is None else name}"}
        if params:
            out["parameters"] = params
        if body is not None:
            out["requestBody"] = {"content": body}
        out.update(responses=responses, tags=[self.tag])
        out["x-kubernetes-action"] = action
        out["x-kubernetes-group-version-kind"] = self.gvk
        return out

    def read(self, description: str) -> dict[str, Any]:
        return self.op("read", "get", description, [], _responses(self.schema))

    def create(self, description: str) -> dict[str, Any]:
        return self.op("create", "post", description, _queries(_WRITE),
                       _responses(self.schema, "200", "201", "202"), _content(self.schema))

    def replace(self, description: str) -> dict[str, Any]:
        return self.op("replace", "put", description, _queries(_WRITE), _responses(self.schema, "200", "201"),
                       _content(self.schema))

    def patch(self, description: str) -> dict[str, Any]:
        params = [_query("dryRun"), _query("fieldManager", _PATCH_FIELD_MANAGER), _query("fieldValidation"),
                  _query("force")]
        return self.op("patch", "patch", description, params, _responses(self.schema, "200", "201"),
                       _content(_META + "Patch", _PATCH_TYPES))

    def watch_list(self, name: str) -> dict[str, Any]:
        kind = self.gvk["kind"]
        return self.op("watch", "watchlist", f"watch individual changes to a list of {kind}. deprecated: use "
                       "the 'watch' parameter with a list operation instead.",
                       _queries(_LIST), _responses(_WATCH_EVENT, types=_LIST_TYPES), name=name)


def _resource_paths(group: str, version: str, r: Resource) -> dict[str, dict[str, Any]]:
    """Every path of one resource and of its subresources, with their operations."""
    kind, prefix = r.kind, f"/apis/{group}/{version}" if group else f"/api/{version}"
    scope, ns = ("Namespaced", "/namespaces/{namespace}") if r.namespaced else ("", "")
    k = _Kind(group, version, (r.group, r.version, kind), scope + kind)
    listed = definition_name(r.api_version, kind + "List") or custom_schema_name(r.group, r.version,
                                                                                 _list_kind(r))
    shared = [_query("pretty"), *([_NAMESPACE] if r.namespaced else [])]
    named = [_path_param("name", f"name of the {kind}"), *shared]
    collection, item, paths = {}, {}, {}
    if "deletecollection" in r.verbs:
        collection["delete"] = k.op("delete", "deletecollection", f"delete collection of {kind}",
                                    _queries(_DELETE_COLLECTION), _responses(_STATUS),
                                    _content(_META + "DeleteOptions"), name=f"Collection{scope}{kind}")
    if "list" in r.verbs:
        collection["get"] = k.op("list", "list", f"list or watch objects of kind {kind}", _queries(_LIST),
                                 _responses(listed, types=_LIST_TYPES))
    if "create" in r.verbs:
        collection["post"] = k.create(f"create {_article(kind)}{kind}")
    if "delete" in r.verbs:
        deleted = k.schema if r.delete_returns_object else _STATUS
        item["delete"] = k.op("delete", "delete", f"delete {_article(kind)}{kind}", _queries(_DELETE),
                              _responses(deleted, "200", "202"), _content(_META + "DeleteOptions"))
    if "get" in r.verbs:
        item["get"] = k.read(f"read the specified {kind}")
    if "patch" in r.verbs:
        item["patch"] = k.patch(f"partially update the specified {kind}")
    if "update" in r.verbs:
        item["put"] = k.replace(f"replace the specified {kind}")
    if collection:
        paths[f"{prefix}{ns}/{r.plural}"] = _hoist(collection, shared)
    if item:
        paths[f"{prefix}{ns}/{r.plural}/{{name}}"] = _hoist(item, named)
    if "watch" in r.verbs:
        paths[f"{prefix}/watch{ns}/{r.plural}"] = _hoist({"get": k.watch_list(f"{scope}{kind}List")}, shared)
        paths[f"{prefix}/watch{ns}/{r.plural}/{{name}}"] = _hoist({"get": k.op(
            "watch", "watch", f"watch changes to an object of kind {kind}. deprecated: use the 'watch' "
            "parameter with a list operation instead, filtered to a single item with the 'fieldSelector' "
            "parameter.", _queries(_LIST), _responses(_WATCH_EVENT, types=_LIST_TYPES))}, named)
    if r.namespaced and "list" in r.verbs:
        paths[f"{prefix}/{r.plural}"] = _hoist({"get": k.op(
            "list", "list", f"list or watch objects of kind {kind}", _queries(_LIST),
            _responses(listed, types=_LIST_TYPES), name=f"{kind}ForAllNamespaces")}, [_query("pretty")])
        if "watch" in r.verbs:
            paths[f"{prefix}/watch/{r.plural}"] = _hoist(
                {"get": k.watch_list(f"{kind}ListForAllNamespaces")}, [_query("pretty")])
    for sub in r.subresources:
        target, verbs = SUBRESOURCES[sub]
        sk = _Kind(group, version, target or (r.group, r.version, kind), f"{scope}{kind}{sub.title()}")
        ops: dict[str, Any] = {}
        if "create" in verbs:
            ops["post"] = sk.create(f"create {sub} of {_article(kind)}{kind}")
        if "get" in verbs:
            ops["get"] = sk.read(f"read {sub} of the specified {kind}")
        if "patch" in verbs:
            ops["patch"] = sk.patch(f"partially update {sub} of the specified {kind}")
        if "update" in verbs:
            ops["put"] = sk.replace(f"replace {sub} of the specified {kind}")
        sub_named = [_path_param("name", f"name of the {sk.gvk['kind']}"), *shared]
        paths[f"{prefix}{ns}/{r.plural}/{{name}}/{sub}"] = _hoist(ops, sub_named)
    return paths


def custom_schema_name(group: str, version: str, kind: str) -> str:
    """How kube-apiserver names a custom resource's schema: its group reversed, then version and
    kind (`com.example.v1.Widget`)."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _list_kind(r: Resource) -> str:
    return getattr(r, "list_kind", "") or r.kind + "List"


_OBJECT_META_DOC = ("Standard object's metadata. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_API_VERSION_DOC = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                    "api-conventions.md#resources")
_KIND_DOC = ("Kind is a string value representing the REST resource this object represents. Servers may infer "
             "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
             "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")


def custom_schemas(r: Resource, schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A custom resource's object and list schemas, as kube-apiserver builds them from the version's
    structural schema: apiVersion, kind and metadata added, the group/version/kind named."""
    gvk = [{"group": r.group, "kind": r.kind, "version": r.version}]
    props = dict(schema.get("properties") or {})
    props["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    props["kind"] = {"description": _KIND_DOC, "type": "string"}
    props["metadata"] = {"allOf": [{"$ref": _REF + _META + "ObjectMeta"}], "description": _OBJECT_META_DOC}
    obj = {**schema, "type": "object", "properties": dict(sorted(props.items())),
           "x-kubernetes-group-version-kind": gvk}
    list_kind = _list_kind(r)
    listed = {"description": f"{list_kind} is a list of {r.kind}", "type": "object", "required": ["items"],
              "properties": {
                  "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
                  "items": {"description": f"List of {r.plural}. More info: "
                            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                            "type": "array", "items": {"$ref": _REF + custom_schema_name(r.group, r.version, r.kind)}},
                  "kind": {"description": _KIND_DOC, "type": "string"},
                  "metadata": {"allOf": [{"$ref": _REF + _META + "ListMeta"}], "description": _OBJECT_META_DOC}},
              "x-kubernetes-group-version-kind": [{**gvk[0], "kind": list_kind}]}
    return {custom_schema_name(r.group, r.version, r.kind): obj,
            custom_schema_name(r.group, r.version, list_kind): listed}


def custom_document(group: str, version: str, resources: list[Any]) -> dict[str, Any]:
    """The document of a group/version CustomResourceDefinitions serve (`apis/example.com/v1`);
    `resources`: its resources, each with the `schema` of its version."""
    gv_id, tag = _gv_words(group, version)
    paths = _discovery_path(f"/apis/{group}/{version}/", f"get{gv_id}APIResources", "get available resources", tag,
                            _META + "APIResourceList")
    own: dict[str, dict[str, Any]] = {}
    for r in resources:
        paths.update(_resource_paths(group, version, r))
        own.update(custom_schemas(r, r.schema))
    doc = _document(paths)
    for name, schema in own.items():
        doc["components"]["schemas"][name] = schema
    _pull_in(doc["components"]["schemas"], own)
    doc["components"]["schemas"] = dict(sorted(doc["components"]["schemas"].items()))
    return doc


def _pull_in(schemas: dict[str, Any], own: dict[str, Any]) -> None:
    """Add the built-in schemas the custom ones reference (ObjectMeta and what it holds)."""
    builtin = component_schemas()
    todo: set[str] = set()
    _refs(own, todo)
    while todo:
        name = todo.pop()
        if name in schemas or name not in builtin:
            continue
        schemas[name] = builtin[name]
        _refs(builtin[name], todo)


def custom_document_bytes(doc: dict[str, Any]) -> tuple[bytes, str]:
    """A custom document's bytes and hash (built per request: definitions change at any time)."""
    data = json.dumps(doc, separators=(",", ":")).encode()
    return data, hashlib.sha512(data).hexdigest().upper()


def _discovery_path(path: str, op_id: str, description: str, tag: str, schema_name: str,
                    types: tuple[str, ...] = _READ_TYPES) -> dict[str, Any]:
    """A discovery endpoint's path: one GET, no kind."""
    return {path: {"get": {"description": description, "operationId": op_id,
                           "responses": _responses(schema_name, types=types), "tags": [tag]}}}


# ---- documents -----------------------------------------------------------------------------------


def _document(paths: dict[str, Any]) -> dict[str, Any]:
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
            "paths": dict(sorted(paths.items())), "components": {"schemas": _closure(paths)}}


def _group_version_document(group: str, version: str) -> dict[str, Any]:
    gv_id, tag = _gv_words(group, version)
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths = _discovery_path(f"{prefix}/", f"get{gv_id}APIResources", "get available resources", tag,
                            _META + "APIResourceList")
    for r in in_group_version(group, version):
        paths.update(_resource_paths(group, version, r))
    return _document(paths)


def _group_document(group: str) -> dict[str, Any]:
    word = _group_word(group)
    return _document(_discovery_path(f"/apis/{group}/", f"get{word[0].upper()}{word[1:]}APIGroup",
                                     "get information of a group", word, _META + "APIGroup"))


@cache
def _builders() -> dict[str, Callable[[], dict[str, Any]]]:
    """Every document path (as the index names it) and how to build its document."""
    out: dict[str, Callable[[], dict[str, Any]]] = {
        "api": lambda: _document(_discovery_path("/api/", "getCoreAPIVersions", "get available API versions",
                                                 "core", _META + "APIVersions")),
        "apis": lambda: _document(_discovery_path("/apis/", "getAPIVersions", "get available API versions",
                                                  "apis", _META + "APIGroupList")),
        "version": lambda: _document(_discovery_path("/version/", "getCodeVersion", "get the code version",
                                                     "version", "io.k8s.apimachinery.pkg.version.Info",
                                                     ("application/json",))),
    }
    for ver in versions(""):
        out[f"api/{ver}"] = lambda v=ver: _group_version_document("", v)
    for group in GROUPS:
        if group in AGGREGATED_GROUPS:
            continue
        out[f"apis/{group}"] = lambda g=group: _group_document(g)
        for ver in versions(group):
            out[f"apis/{group}/{ver}"] = lambda g=group, v=ver: _group_version_document(g, v)
    return out


@cache
def _serialised(path: str) -> tuple[bytes, str]:
    data = json.dumps(_builders()[path](), separators=(",", ":")).encode()
    return data, hashlib.sha512(data).hexdigest().upper()


def _found(path: str) -> tuple[bytes, str] | None:
    path = path.strip("/")
    return _serialised(path) if path in _builders() else None  # only known paths enter the cache


def openapi_v3_document(path: str) -> bytes | None:
    """The document at `/openapi/v3/<path>` (`api/v1`, `apis/apps/v1`, ...) as JSON bytes, or None.
    Upstream answers `application/json` (406 when the Accept header allows neither JSON nor its
    protobuf form) and, when the request's `hash` query differs from `openapi_v3_hash(path)`,
    redirects (301) to the current `server_relative_url(path)`; with a matching hash it adds
    `Cache-Control: public, immutable`."""
    found = _found(path)
    return found[0] if found else None


def openapi_v3_hash(path: str) -> str | None:
    """The document's hash (its ETag), or None for an unknown path."""
    found = _found(path)
    return found[1] if found else None


def server_relative_url(path: str) -> str:
    return f"/openapi/v3/{path}?hash={openapi_v3_hash(path)}"


def openapi_v3_index() -> dict[str, Any]:
    """`/openapi/v3`: every document's URL, carrying its hash so clients cache by URL."""
    return {"paths": {path: {"serverRelativeURL": server_relative_url(path)} for path in sorted(_builders())}}
