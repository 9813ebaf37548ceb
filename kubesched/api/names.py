"""Which names kube-apiserver takes for an object, kind by kind.

Each API group's validation picks a rule for `metadata.name` (pkg/apis/*/validation): most kinds
take an RFC 1123 subdomain, Namespaces an RFC 1123 label, Services an RFC 1035 label (their name
becomes a DNS label that must not start with a digit), RBAC objects any path segment
(`system:monitoring`), so that they can name users and groups. Custom resources take subdomains
(apiextensions-apiserver's customResourceValidator). Whatever the rule, a name is one segment of
the object's URL, so it may never be `.` or `..` nor hold `/` or `%`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

_DNS_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                  "and must start and end with an alphanumeric character")
_DNS_1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                       "start with an alphabetic character, and end with an alphanumeric character")
_DNS_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                      "'-' or '.', and must start and end with an alphanumeric character")

NameRule = Callable[[str], list[str]]


def dns_label_errors(value: str) -> list[str]:
    """Why `value` is not an RFC 1123 label (namespace names, container names), if it is not."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    return errs + ([] if _DNS_LABEL.fullmatch(value) else [_DNS_LABEL_MSG])


def dns_1035_label_errors(value: str) -> list[str]:
    """Why `value` is not an RFC 1035 label (Service names), if it is not."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    return errs + ([] if _DNS_1035_LABEL.fullmatch(value) else [_DNS_1035_LABEL_MSG])


def dns_subdomain_errors(value: str) -> list[str]:
    """Why `value` is not an RFC 1123 subdomain (most object names), if it is not."""
    errs = ["must be no more than 253 characters"] if len(value) > 253 else []
    return errs + ([] if _DNS_SUBDOMAIN.fullmatch(value) else [_DNS_SUBDOMAIN_MSG])


def path_segment_errors(value: str) -> list[str]:
    """Why `value` cannot be one segment of a URL path (apimachinery's IsValidPathSegmentName)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


# Kinds whose names follow another rule than the subdomain, by (group, kind).
_RULES: dict[tuple[str, str], NameRule] = {
    ("", "Namespace"): dns_label_errors,
    ("", "Service"): dns_1035_label_errors,
    # The core Event API validates no name for compatibility (events.k8s.io/v1 does): only the URL's rule.
    ("", "Event"): path_segment_errors,
    # "We don't care what you call your certificate requests."
    ("certificates.k8s.io", "CertificateSigningRequest"): path_segment_errors,
    **{("rbac.authorization.k8s.io", kind): path_segment_errors
       for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")},
}


def name_rule(group: str, kind: str, obj: dict[str, Any]) -> NameRule:
    """The rule kube-apiserver checks `metadata.name` of `obj`, a `kind` in `group` ("" for core),
    against. A CustomResourceDefinition is named after what it defines: `<plural>.<group>`."""
    if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
        required = f"{names.get('plural')}.{spec.get('group')}"
        return lambda name: dns_subdomain_errors(name) + (
            [] if name == required else ['must be spec.names.plural+"."+spec.group'])
    return _RULES.get((group, kind), dns_subdomain_errors)


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: "" (core) for "v1", "apps" for "apps/v1"."""
    return api_version.rpartition("/")[0]
