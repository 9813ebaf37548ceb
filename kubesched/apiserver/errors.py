"""API errors with the HTTP status and reason Kubernetes uses, so `serve` can map them 1:1."""

from __future__ import annotations

from kubesched.api.objects import Obj
from kubesched.api.quota import guess_plural


class APIError(Exception):
    code = 500
    reason = "InternalError"

    def __init__(self, message: str, causes: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.causes = causes or []
        self.pdb: str | None = None  # the budget behind an eviction's refusal (for records, not the answer)


class BadRequest(APIError):
    code = 400
    reason = "BadRequest"


class Forbidden(APIError):
    code = 403
    reason = "Forbidden"


class NotFoundError(APIError):
    code = 404
    reason = "NotFound"


class AlreadyExists(APIError):
    code = 409
    reason = "AlreadyExists"


class ConflictError(APIError):
    code = 409
    reason = "Conflict"


class Invalid(APIError):
    code = 422
    reason = "Invalid"


class TooManyRequests(APIError):
    code = 429
    reason = "TooManyRequests"


class UnsupportedMediaType(APIError):
    code = 415
    reason = "UnsupportedMediaType"


class RequestEntityTooLarge(APIError):
    code = 413
    reason = "RequestEntityTooLarge"


class ServerError(APIError):
    """What the API server answers for an error it has no status for: 500, reason left empty."""

    code = 500
    reason = ""


class ObjectForbidden(Forbidden):
    """A 403 whose message names the object (`pods "web-7x2kq" is forbidden: ...`), as the
    validating admission plugins (LimitRanger's checks, ResourceQuota) word it: they run once the
    API server has generated the name, so a controller's event shows the pod's own name."""


def admission_forbidden(obj: Obj, cause: str) -> ObjectForbidden:
    """admission.NewForbidden: `<resource> "<name>" is forbidden: <cause>`."""
    api_version = str(obj.get("apiVersion") or "v1")
    group = api_version.rpartition("/")[0]
    resource = guess_plural(str(obj.get("kind"))) + (f".{group}" if group else "")
    name = (obj.get("metadata") or {}).get("name") or "Unknown"
    return ObjectForbidden(f'{resource} "{name}" is forbidden: {cause}')
