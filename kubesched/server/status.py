"""`Status` objects: how kube-apiserver answers an error (and some successes) over HTTP.

Clients branch on `code` and `reason` (client-go's `IsNotFound`, `IsConflict`, kubectl drain's
retry on 429), so both are exactly upstream's; `details.kind` is the resource (`pods`), as
upstream's `qualifiedResource` names it.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.restmapping import Resource
from kubesched.apiserver.errors import APIError, Invalid


def status(code: int, reason: str, message: str, *, details: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Success" if code < 400 else "Failure", "message": message,
                           "reason": reason, "code": code}
    if code < 400 and not message:
        out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
    if details:
        out["details"] = details
    return out


def qualified(resource: Resource) -> str:
    """`pods`, `deployments.apps`: how messages name a resource."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def details_of(resource: Resource | None, name: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name:
        out["name"] = name
    if resource is not None:
        if resource.group:
            out["group"] = resource.group
        out["kind"] = resource.plural
    return out


# The cause reason of each field error type, by the words its message starts with.
_CAUSE_REASONS = (("Required value", "FieldValueRequired"), ("Duplicate value", "FieldValueDuplicate"),
                  ("Unsupported value", "FieldValueNotSupported"), ("Too many", "FieldValueTooMany"),
                  ("Too long", "FieldValueTooLong"), ("Forbidden", "FieldValueForbidden"),
                  ("Not found", "FieldValueNotFound"))


def _cause(field: str, message: str) -> dict[str, Any]:
    reason = next((r for words, r in _CAUSE_REASONS if message.startswith(words)), "FieldValueInvalid")
    return {"reason": reason, "message": message, "field": field} if field else {"reason": reason,
                                                                                  "message": message}


def from_error(e: APIError, resource: Resource | None = None, name: str | None = None) -> dict[str, Any]:
    if isinstance(e, Invalid) and e.fields:
        details: dict[str, Any] = {"name": e.name, "group": e.group, "kind": e.kind,
                                   "causes": [_cause(f, m) for f, m in e.fields]}
        for key in ("name", "group"):  # omitempty
            if not details[key]:
                del details[key]
        return status(e.code, e.reason, e.message, details=details)
    # A 400 names nothing: apimachinery's NewBadRequest carries only its message.
    details = details_of(resource, name) if e.code != 400 else {}
    if e.causes:
        reason = "DisruptionBudget" if e.code == 429 else "FieldValueInvalid"
        details["causes"] = [{"reason": reason, "message": c} for c in e.causes]
    return status(e.code, e.reason, e.message, details=details or None)


def not_found(resource: Resource, name: str) -> dict[str, Any]:
    return status(404, "NotFound", f'{qualified(resource)} "{name}" not found', details=details_of(resource, name))


def already_exists(resource: Resource, name: str) -> dict[str, Any]:
    return status(409, "AlreadyExists", f'{qualified(resource)} "{name}" already exists',
                  details=details_of(resource, name))


def conflict(resource: Resource, name: str, why: str) -> dict[str, Any]:
    return status(409, "Conflict", f'Operation cannot be fulfilled on {qualified(resource)} "{name}": {why}',
                  details=details_of(resource, name))


def bad_request(message: str) -> dict[str, Any]:
    return status(400, "BadRequest", message)


def method_not_allowed() -> dict[str, Any]:
    return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
