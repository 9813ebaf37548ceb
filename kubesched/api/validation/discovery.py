"""discovery.k8s.io/v1: an EndpointSlice's address type (pkg/apis/discovery/validation), which
consumers read every address by.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.validation.checker import Checker

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")


def _endpoint_slice(c: Checker, obj: dict[str, Any], path: str) -> None:
    if c.need(obj, "addressType", path, str) is not None:
        c.enum(obj, "addressType", path, ADDRESS_TYPES)
