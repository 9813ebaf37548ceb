"""admissionregistration.k8s.io/v1 webhook configurations: the rules of
pkg/apis/admissionregistration/validation that decide whether `serve` can call a webhook at all
(where it is, over https only; which AdmissionReview versions it reads; its side effects, since
dry runs depend on them; its timeout and policies)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kubesched.api.crd.cel import compile_error
from kubesched.api.validation.checker import Checker, subpath

REVIEW_VERSIONS = ("v1", "v1beta1")
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
URL_FORM = "; desired format: https://host[/path]"


def _url(c: Checker, url: Any, path: str) -> None:
    if not isinstance(url, str):
        c.invalid(path, url, "must be a string")
        return
    parts = urlsplit(url)
    if parts.scheme != "https":
        c.invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + URL_FORM)
    if not parts.netloc:
        c.invalid(path, parts.netloc, "host must be specified" + URL_FORM)
    if "@" in parts.netloc:
        c.invalid(path, "<omitted>", "user information is not permitted in the URL")
    if parts.fragment:
        c.invalid(path, parts.fragment, "fragments are not permitted in the URL")
    if parts.query:
        c.invalid(path, parts.query, "query parameters are not permitted in the URL")


def _service(c: Checker, service: Any, path: str) -> None:
    service = c.typed(service, path, dict) or {}
    for key in ("name", "namespace"):
        if not service.get(key):
            c.required(subpath(path, key), f"service {key} is required")
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        c.invalid(subpath(path, "port"), port, "port is not valid: must be between 1 and 65535, inclusive")
    if (svc_path := service.get("path")) is not None and not str(svc_path).startswith("/"):
        c.invalid(subpath(path, "path"), svc_path, "must start with a '/'")


def _hook(c: Checker, hook: dict[str, Any], path: str, mutating: bool) -> None:
    name = hook.get("name")
    if not name:
        c.required(subpath(path, "name"))
    elif not isinstance(name, str) or len(name.split(".")) < 3:
        c.invalid(subpath(path, "name"), name, "should be a domain with at least three segments separated by dots")
    config = hook.get("clientConfig")
    config = config if isinstance(config, dict) else {}
    if ("url" in config) == ("service" in config):
        c.required(subpath(path, "clientConfig"), "exactly one of url or service is required")
    elif "url" in config:
        _url(c, config["url"], subpath(subpath(path, "clientConfig"), "url"))
    else:
        _service(c, config["service"], subpath(subpath(path, "clientConfig"), "service"))
    effects = hook.get("sideEffects")
    if effects is None:
        c.required(subpath(path, "sideEffects"), "must specify one of " + ", ".join(NO_SIDE_EFFECTS))
    elif effects not in NO_SIDE_EFFECTS:
        c.unsupported(subpath(path, "sideEffects"), effects, NO_SIDE_EFFECTS)
    versions = hook.get("admissionReviewVersions")
    versions_path = subpath(path, "admissionReviewVersions")
    if not versions:
        c.required(versions_path, "must specify one of " + ", ".join(REVIEW_VERSIONS))
    elif not isinstance(versions, list) or not any(v in REVIEW_VERSIONS for v in versions):
        shown = ", ".join(f'"{v}"' for v in versions) if isinstance(versions, list) else str(versions)
        c.err(versions_path, f"Invalid value: []string{{{shown}}}: must include at least one of "
              + ", ".join(REVIEW_VERSIONS))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or not 1 <= timeout <= 30):
        c.invalid(subpath(path, "timeoutSeconds"), timeout, "the timeout value must be between 1 and 30 seconds")
    for i, condition in enumerate(c.get(hook, "matchConditions", path, list) or ()):
        condition_path = f"{subpath(path, 'matchConditions')}[{i}]"
        condition = c.typed(condition, condition_path, dict) or {}
        if not condition.get("name"):
            c.required(subpath(condition_path, "name"))
        expression = condition.get("expression")
        if not isinstance(expression, str) or not expression:
            c.required(subpath(condition_path, "expression"))
        elif (error := compile_error(expression)) is not None:
            c.invalid(subpath(condition_path, "expression"), expression, error)
    c.enum(hook, "failurePolicy", path, ("Fail", "Ignore"))
    c.enum(hook, "matchPolicy", path, ("Equivalent", "Exact"))
    if mutating:
        c.enum(hook, "reinvocationPolicy", path, ("IfNeeded", "Never"))


def _configuration(c: Checker, obj: dict[str, Any], path: str, mutating: bool) -> None:
    hooks = c.get(obj, "webhooks", path, list) or []
    seen: set[str] = set()
    for i, hook in enumerate(hooks):
        hook_path = f"{subpath(path, 'webhooks')}[{i}]"
        if not isinstance(hook, dict):
            c.typed(hook, hook_path, dict)
            continue
        _hook(c, hook, hook_path, mutating)
        if isinstance(hook.get("name"), str) and hook["name"]:
            if hook["name"] in seen:
                c.err(subpath(hook_path, "name"), f'Duplicate value: "{hook["name"]}"')
            seen.add(hook["name"])


def _mutating_webhook_configuration(c: Checker, obj: dict[str, Any], path: str) -> None:
    _configuration(c, obj, path, mutating=True)


def _validating_webhook_configuration(c: Checker, obj: dict[str, Any], path: str) -> None:
    _configuration(c, obj, path, mutating=False)
