"""Reading a CustomResourceDefinition: its names, versions, schemas and subresources, and the
defaults kube-apiserver fills in when one is written (SetDefaults_CustomResourceDefinition)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
GROUP = "apiextensions.k8s.io"
KIND = "CustomResourceDefinition"
# Added on the first delete; the finalizer controller removes it once every object is gone.
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
SCOPES = ("Cluster", "Namespaced")


def is_crd(obj: Obj) -> bool:
    return obj.get("kind") == KIND and str(obj.get("apiVersion", "")).startswith(GROUP + "/")


def as_dict(value: Any) -> Obj:
    """`value` if it is a mapping, else an empty one (a definition is read before it is validated)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def spec(crd: Obj) -> Obj:
    return as_dict(crd.get("spec"))


def names(crd: Obj) -> Obj:
    return as_dict(spec(crd).get("names"))


def group(crd: Obj) -> str:
    return str(spec(crd).get("group") or "")


def kind(crd: Obj) -> str:
    return str(names(crd).get("kind") or "")


def plural(crd: Obj) -> str:
    return str(names(crd).get("plural") or "")


def namespaced(crd: Obj) -> bool:
    return spec(crd).get("scope") != "Cluster"


def versions(crd: Obj) -> list[Obj]:
    return [v for v in _list(spec(crd).get("versions")) if isinstance(v, dict)]


def served_versions(crd: Obj) -> list[str]:
    return [str(v.get("name")) for v in versions(crd) if v.get("served")]


def storage_version(crd: Obj) -> str:
    return next((str(v.get("name")) for v in versions(crd) if v.get("storage")), "")


def version(crd: Obj, name: str) -> Obj:
    return next((v for v in versions(crd) if v.get("name") == name), {})


def schema(crd: Obj, name: str) -> Obj:
    """The version's openAPIV3Schema ({} when it has none)."""
    return as_dict(as_dict(version(crd, name).get("schema")).get("openAPIV3Schema"))


def subresources(crd: Obj, name: str) -> Obj:
    return as_dict(version(crd, name).get("subresources"))


def printer_columns(crd: Obj, name: str) -> list[Obj]:
    return [c for c in _list(version(crd, name).get("additionalPrinterColumns")) if isinstance(c, dict)]


def condition(crd: Obj, ctype: str) -> Obj | None:
    return next((c for c in _list(as_dict(crd.get("status")).get("conditions"))
                 if isinstance(c, dict) and c.get("type") == ctype), None)


def established(crd: Obj) -> bool:
    return (condition(crd, "Established") or {}).get("status") == "True"


def terminating(crd: Obj) -> bool:
    return bool(as_dict(crd.get("metadata")).get("deletionTimestamp"))


def default(crd: Obj) -> None:
    """What kube-apiserver defaults in a definition it is given: the singular and list kind from the
    kind, and the `None` conversion."""
    s = crd.get("spec")
    if not isinstance(s, dict):
        return
    n = s.get("names")
    if isinstance(n, dict) and isinstance(n.get("kind"), str):
        n.setdefault("singular", n["kind"].lower())
        n.setdefault("listKind", n["kind"] + "List")
    if not isinstance(s.get("conversion"), dict):
        s["conversion"] = {"strategy": "None"}


def initial_status(crd: Obj) -> Obj:
    """PrepareForCreate's status: no names accepted yet, the storage version recorded as stored."""
    stored = storage_version(crd)
    return {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": [stored] if stored else []}


def json_type_name(value: Any) -> str:
    """A JSON value's type as OpenAPI schemas name it, for kube-apiserver's messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
