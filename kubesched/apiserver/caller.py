"""Who makes a write and what it asks for beyond the object, as admission sees a request: the
user that authentication and impersonation settled on, a dry run, and the warnings admission
adds to the answer (the HTTP server sends them as `Warning` headers).

The components inside the process (scheduler, kubelets, controllers) write without one: their
requests carry no user, and no authorizer answers for them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Caller:
    user: dict[str, Any] = field(default_factory=dict)  # authentication.k8s.io/v1 UserInfo
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    subresource: str = ""  # the subresource written through (scale), when not the object or its status
    # What a subresource request carries instead of the object (the Scale of a scale write), new and old.
    views: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None
    # The server's authorizer (RBAC), asked what a user may do: policies' `authorizer` variable.
    authorize: Callable[[dict[str, Any]], tuple[bool, str]] | None = None
