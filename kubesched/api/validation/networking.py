"""networking.k8s.io/v1: Ingresses' paths and backends (pkg/apis/networking/validation), the rules
every ingress controller relies on. kubesched only stores Ingresses.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.validation.checker import Checker, subpath

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _backend(c: Checker, backend: Any, path: str) -> None:
    backend = c.typed(backend, path, dict)
    if backend is None:
        return
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        c.invalid(path, "", "cannot set both resource and service backends")
    elif service is None and resource is None:
        c.invalid(path, "", "resource or service backend is required")
    elif isinstance(service, dict):
        service_path = subpath(path, "service")
        if not service.get("name"):
            c.required(subpath(service_path, "name"))
        port: dict[str, Any] = service["port"] if isinstance(service.get("port"), dict) else {}
        if port.get("name") and port.get("number"):
            c.invalid(path, "", "cannot set both port name & port number")
        elif not port.get("name") and not port.get("number"):
            c.required(subpath(service_path, "port"), "port name or number is required")


def _ingress(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    rules = c.get(spec, "rules", spec_path, list) or []
    if spec.get("defaultBackend") is None and not rules:
        c.invalid(spec_path, "", "either `defaultBackend` or `rules` must be specified")
    if spec.get("defaultBackend") is not None:
        _backend(c, spec["defaultBackend"], subpath(spec_path, "defaultBackend"))
    for i, rule in enumerate(rules):
        http = rule.get("http") if isinstance(rule, dict) else None
        if not isinstance(http, dict):
            continue
        http_path = f"{spec_path}.rules[{i}].http"
        paths = http.get("paths")
        if not paths:
            c.required(subpath(http_path, "paths"))
        for j, item in enumerate(paths if isinstance(paths, list) else []):
            item_path = f"{http_path}.paths[{j}]"
            if not isinstance(item, dict):
                continue
            kind = item.get("pathType")
            if kind is None:
                c.required(subpath(item_path, "pathType"), "pathType must be specified")
            elif kind not in PATH_TYPES:
                c.unsupported(subpath(item_path, "pathType"), kind, PATH_TYPES)
            elif kind != "ImplementationSpecific" and not str(item.get("path", "")).startswith("/"):
                c.invalid(subpath(item_path, "path"), item.get("path", ""), "must be an absolute path")
            _backend(c, item.get("backend"), subpath(item_path, "backend"))
