"""RBAC's pure parts: the attributes a URL makes and which rules match them, as upstream's
RequestInfoFactory and rbac.RuleAllows decide."""

from __future__ import annotations

import pytest

from kubesched.server.rbac import aggregate, rule_allows
from kubesched.server.requestinfo import request_info
from kubesched.store.memory import MemoryStore


@pytest.mark.parametrize(("method", "path", "query", "verb", "ns", "resource", "sub", "name"), [
    ("GET", "/api/v1/namespaces/a/pods", {}, "list", "a", "pods", "", ""),
    ("GET", "/api/v1/namespaces/a/pods", {"watch": "true"}, "watch", "a", "pods", "", ""),
    ("GET", "/api/v1/watch/namespaces/a/pods", {}, "watch", "a", "pods", "", ""),
    ("GET", "/api/v1/pods", {"fieldSelector": "metadata.name=p"}, "list", "", "pods", "", "p"),
    ("GET", "/api/v1/namespaces/a", {}, "get", "a", "namespaces", "", "a"),
    ("PUT", "/api/v1/namespaces/a/finalize", {}, "update", "a", "namespaces", "finalize", "a"),
    ("PATCH", "/api/v1/namespaces/a/pods/p/status", {}, "patch", "a", "pods", "status", "p"),
    ("POST", "/api/v1/namespaces/a/pods/p/eviction", {}, "create", "a", "pods", "eviction", "p"),
    ("DELETE", "/apis/apps/v1/namespaces/a/deployments", {}, "deletecollection", "a", "deployments", "", ""),
    ("DELETE", "/apis/apps/v1/namespaces/a/deployments/d", {}, "delete", "a", "deployments", "", "d"),
])
def test_request_info(method: str, path: str, query: dict, verb: str, ns: str, resource: str, sub: str,
                      name: str) -> None:
    a = request_info(method, path, query)
    assert (a.resource_request, a.verb, a.namespace, a.resource, a.subresource, a.name) == \
        (True, verb, ns, resource, sub, name)


@pytest.mark.parametrize("path", ["/api", "/apis/apps", "/apis/apps/v1", "/healthz", "/openapi/v3"])
def test_discovery_and_health_are_non_resource(path: str) -> None:
    a = request_info("GET", path, {})
    assert not a.resource_request and a.verb == "get" and a.path == path


def test_rules() -> None:
    def allows(rule: dict, method: str, path: str) -> bool:
        return rule_allows(rule, request_info(method, path, {}))

    pods = {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}
    assert allows(pods, "GET", "/api/v1/namespaces/a/pods")
    assert not allows(pods, "GET", "/api/v1/namespaces/a/pods/p/status")  # a subresource is named apart
    assert not allows(pods, "DELETE", "/api/v1/namespaces/a/pods/p")
    assert not allows(pods, "GET", "/apis/apps/v1/namespaces/a/deployments")
    scale = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/scale"]}
    assert allows(scale, "PUT", "/apis/apps/v1/namespaces/a/deployments/d/scale")
    assert not allows(scale, "PUT", "/apis/apps/v1/namespaces/a/deployments/d")
    named = {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["c"]}
    assert allows(named, "GET", "/api/v1/namespaces/a/configmaps/c")
    assert not allows(named, "GET", "/api/v1/namespaces/a/configmaps")  # a list names no object
    urls = {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}
    assert allows(urls, "GET", "/healthz") and allows(urls, "GET", "/apis/apps")
    assert not allows(urls, "GET", "/healthz/etcd") and not allows(urls, "POST", "/healthz")


def test_aggregation_reaches_a_fixed_point() -> None:
    store = MemoryStore()
    rule = {"verbs": ["get"], "apiGroups": ["x"], "resources": ["y"]}
    label = "rbac.authorization.k8s.io/aggregate-to-"
    store.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                  "metadata": {"name": "leaf", "labels": {f"{label}view": "true"}}, "rules": [rule]})
    for name, selects, labels in (("view", "view", {f"{label}edit": "true"}), ("edit", "edit", {})):
        store.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": name, "labels": labels}, "rules": [],
                      "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {f"{label}{selects}": "true"}}]}})
    changed = {r["metadata"]["name"]: r["rules"] for r in aggregate(store)}
    assert changed == {"view": [rule], "edit": [rule]}
