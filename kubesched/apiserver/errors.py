"""API errors with the HTTP status and reason Kubernetes uses, so `serve` can map them 1:1."""

from __future__ import annotations


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
