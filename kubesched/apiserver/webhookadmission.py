"""The seam through which the API server calls admission webhooks (MutatingAdmissionWebhook and
ValidatingAdmissionWebhook), in the places kube-apiserver's handlers run them: mutating webhooks
after the built-in mutating plugins and before validation, validating webhooks after validation
and before ResourceQuota and the store.

The API server only knows this protocol; `serve` plugs in the implementation that reads the
configurations and calls the webhooks over HTTPS (server.webhooks). `simulate` has none, so a
cluster's webhook configurations are stored there and never called.
"""

from __future__ import annotations

from typing import Protocol

from kubesched.api.objects import Obj
from kubesched.apiserver.caller import Caller


class WebhookAdmission(Protocol):
    """`caller` is who asks and how (None: a component inside the process); `subresource` the
    one written through (status, scale, binding, eviction). A scale write's objects are the
    Scales (apiserver/scale.py), of the resource `caller.resource` names."""

    def active(self) -> bool:
        """Whether any webhook is registered (a write without one skips admission's work)."""
        ...

    def mutate(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
               subresource: str = "") -> Obj | None:
        """The object as the matching mutating webhooks leave it (`obj` itself when none changed
        it); raises an APIError when one refuses the request or fails closed."""
        ...

    def validate(self, operation: str, obj: Obj | None, old: Obj | None, caller: Caller | None,
                 subresource: str = "") -> None:
        """Raises an APIError when a matching validating webhook refuses or fails closed."""
        ...
