"""Who makes a write and what it asks for beyond the object, as admission sees a request: the
user that authentication and impersonation settled on, a dry run, the resource and options the
request named, and the warnings admission adds to the answer (the HTTP server sends them as
`Warning` headers). It is the one carrier of these facts: ValidatingAdmissionPolicy and the
admission webhooks read the same caller.

The components inside the process (scheduler, kubelets, controllers) write without one (None):
admission then sees the identity kube-apiserver's loopback client has, and no authorizer answers
for them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.restmapping import Resource
from kubesched.apiserver.scale import ScaleWrite

# Who serve's own components are to admission, as kube-apiserver's loopback client is.
LOOPBACK_USER: dict[str, Any] = {"username": "system:apiserver", "groups": ["system:authenticated", "system:masters"]}
# The scheduler's identity (its kubeconfig's), which its bindings carry.
SCHEDULER_USER: dict[str, Any] = {"username": "system:kube-scheduler", "groups": ["system:authenticated"]}
# The pod subresources whose requests carry an object of their own kind (a Binding, an Eviction):
# admission sees a CREATE of pods/<subresource> with that object.
POD_ACTIONS = frozenset({"binding", "eviction"})


@dataclass
class Caller:
    user: dict[str, Any] = field(default_factory=dict)  # authentication.k8s.io/v1 UserInfo
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    subresource: str = ""  # the subresource the request's URL names (status, scale, binding, eviction)
    # A write through the scale subresource: admission judges the Scale it carries, not the object.
    scale: ScaleWrite | None = None
    # The server's authorizer (RBAC), asked what a user may do: policies' `authorizer` variable.
    authorize: Callable[[dict[str, Any]], tuple[bool, str]] | None = None
    # The resource the request's URL names: a review's requestKind and requestResource, which
    # differ from the stored kind's when it is served at several group/versions.
    resource: Resource | None = None
    # The write's options as the request gave them (dryRun, fieldManager, gracePeriodSeconds,
    # propagationPolicy): a review's `options`, without kind and apiVersion.
    options: dict[str, Any] = field(default_factory=dict)
    # A write the server makes on behalf of one admitted already (an eviction's delete):
    # admission does not judge it again, as upstream's registries write without admission.
    admitted: bool = False
