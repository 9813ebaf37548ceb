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


# Why a write to an object that changed since it was read is refused, in the words of
# storage.NewResourceVersionConflictsError (the `why` apierrors.NewConflict is given).
OBJECT_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def conflict(resource: str, name: str, why: str = OBJECT_MODIFIED) -> ConflictError:
    """apierrors.NewConflict: `Operation cannot be fulfilled on <resource> "<name>": <why>`
    (`resource` qualified by its group, `deployments.apps`)."""
    return ConflictError(f'Operation cannot be fulfilled on {resource} "{name}": {why}')


class Invalid(APIError):
    code = 422
    reason = "Invalid"

    def __init__(self, message: str, causes: list[str] | None = None) -> None:
        super().__init__(message, causes)
        # Set by `of`: the object's kind, group and name and each problem's field, which the
        # Status details carry and kubectl prints.
        self.kind = self.group = self.name = ""
        self.fields: list[tuple[str, str]] = []

    @classmethod
    def of(cls, kind: str, group: str, name: str, problems: list[str]) -> Invalid:
        """kube-apiserver's NewInvalid: `Kind.group "name" is invalid: <problems>` from
        `path: message` problems."""
        detail = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        qualified = f"{kind}.{group}" if group else kind
        error = cls(f'{qualified} "{name}" is invalid: {detail}')
        error.kind, error.group, error.name = kind, group, name
        error.fields = [(field, message) if message else ("", field)
                        for field, _, message in (p.partition(": ") for p in problems)]
        return error


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
