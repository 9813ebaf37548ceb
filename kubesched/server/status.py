"""`Status` objects: how kube-apiserver answers an error (and some successes) over HTTP.

Clients branch on `code` and `reason` (client-go's `IsNotFound`, `IsConflict`, kubectl drain's
retry on 429), so both are exactly upstream's; `details.kind` is the resource (`pods`), as
upstream's `qualifiedResource` names it.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.restmapping import Resource
from kubesched.apiserver.errors import APIError


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


def from_error(e: APIError, resource: Resource | None = None, name: str | None = None) -> dict[str, Any]:
    details = details_of(resource, name)
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


MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def bad_request(message: str) -> dict[str, Any]:
    return status(400, "BadRequest", message)


def method_not_allowed() -> dict[str, Any]:
    return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
