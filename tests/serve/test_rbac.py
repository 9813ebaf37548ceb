"""RBAC in `serve`, driven by kubectl and the official client as an operator author would: a
ServiceAccount's token, a Role that lists pods but may not delete them, impersonation, the
access reviews, an aggregated ClusterRole, and what anonymous requests may read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.serve.harness import Served, wait_for

SA = "system:serviceaccount:default:bot"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("rbac"), ["--token", "s3cret"]).start()
    server.kubectl("create", "serviceaccount", "bot")
    server.kubectl("create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods")
    server.kubectl("create", "rolebinding", "bot", "--role=pod-reader", "--serviceaccount=default:bot")
    try:
        yield server
    finally:
        server.kill()


def _as_token(served: Served, token: str) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(served.kubeconfig, client_configuration=cfg)
    cfg.api_key = {"authorization": f"Bearer {token}"}
    cfg.refresh_api_key_hook = None  # the kubeconfig's token would come back otherwise
    return client.ApiClient(cfg)


def test_service_account_token_and_role(secured: Served) -> None:
    token = secured.kubectl("create", "token", "bot").strip()
    out = secured.kubectl("--token", token, "auth", "whoami")
    assert SA in out and "system:serviceaccounts:default" in out
    assert "No resources found" in secured.kubectl("--token", token, "get", "pods", check=False)
    denied = secured.kubectl("--token", token, "delete", "pod", "web", check=False)
    assert ('Error from server (Forbidden): pods "web" is forbidden: User "system:serviceaccount:default:bot" '
            'cannot delete resource "pods" in API group "" in the namespace "default"') in denied
    denied = secured.kubectl("--token", token, "get", "nodes", check=False)
    assert ('nodes is forbidden: User "system:serviceaccount:default:bot" cannot list resource "nodes" '
            'in API group "" at the cluster scope') in denied
    core = client.CoreV1Api(_as_token(secured, token))
    assert core.list_namespaced_pod("default").items == []
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod("kube-system")
    assert e.value.status == 403
    # A token dies with its ServiceAccount, and a made-up one is no one's.
    secured.kubectl("create", "serviceaccount", "gone")
    gone = secured.kubectl("create", "token", "gone").strip()
    secured.kubectl("delete", "serviceaccount", "gone")
    assert "Unauthorized" in secured.kubectl("--token", gone, "get", "pods", check=False)
    assert "Unauthorized" in secured.kubectl("--token", token[:-2] + "xx", "get", "pods", check=False)


def test_can_i_and_impersonation(secured: Served) -> None:
    assert secured.kubectl("auth", "can-i", "list", "pods", f"--as={SA}").strip() == "yes"
    assert secured.kubectl("auth", "can-i", "delete", "pods", f"--as={SA}", check=False).startswith("no")
    assert secured.kubectl("auth", "can-i", "list", "pods", "-n", "kube-system", f"--as={SA}",
                           check=False).startswith("no")
    listed = secured.kubectl("auth", "can-i", "--list", f"--as={SA}")
    assert "pods" in listed and "selfsubjectaccessreviews.authorization.k8s.io" in listed
    assert "alice" in secured.kubectl("auth", "whoami", "--as=alice", "--as-group=devs")
    # The ServiceAccount may not impersonate anyone.
    token = secured.kubectl("create", "token", "bot").strip()
    denied = secured.kubectl("--token", token, "get", "pods", "--as=alice", check=False)
    assert ('users "alice" is forbidden: User "system:serviceaccount:default:bot" cannot impersonate resource '
            '"users" in API group "" at the cluster scope') in denied
    review = client.AuthorizationV1Api(_as_token(secured, "s3cret")).create_subject_access_review(
        {"spec": {"user": SA, "resourceAttributes": {"namespace": "default", "verb": "watch", "resource": "pods"}}})
    assert review.status.allowed
    assert review.status.reason == ('RBAC: allowed by RoleBinding "bot/default" of Role "pod-reader" '
                                    'to ServiceAccount "bot/default"')


def test_aggregated_cluster_role(secured: Served) -> None:
    secured.kubectl("apply", "-f", "-", input="""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-viewer, labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list, watch]}
""")
    # view, then edit and admin (which aggregate view) hold the new rule.
    for role in ("view", "edit", "admin"):
        wait_for(lambda role=role: "widgets" in secured.kubectl("get", "clusterrole", role, "-o", "yaml"),
                 what=f"{role} aggregating widget-viewer")
    secured.kubectl("create", "rolebinding", "carol-edit", "--clusterrole=edit", "--user=carol")
    api = client.AuthorizationV1Api(_as_token(secured, "s3cret"))

    def can(verb: str, resource: str, group: str = "") -> bool:
        return api.create_subject_access_review({"spec": {"user": "carol", "resourceAttributes": {
            "namespace": "default", "verb": verb, "group": group, "resource": resource}}}).status.allowed

    assert can("list", "widgets", "example.com") and can("delete", "pods") and can("create", "deployments", "apps")
    assert not can("create", "roles", "rbac.authorization.k8s.io") and not can("delete", "widgets", "example.com")


def test_anonymous_reads_health_only(secured: Served) -> None:
    import ssl
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    for path in ("/healthz", "/readyz", "/livez", "/version"):
        assert urllib.request.urlopen(secured.url + path, context=ctx).status == 200
    with pytest.raises(urllib.request.HTTPError) as e:
        urllib.request.urlopen(secured.url + "/api/v1/namespaces", context=ctx)
    assert e.value.code == 403


def test_open_server_is_admin_unless_a_service_account_token(tmp_path: Path) -> None:
    served = Served(tmp_path).start()
    try:
        assert "kubernetes-admin" in served.kubectl("auth", "whoami")
        served.kubectl("create", "serviceaccount", "bot")
        token = served.kubectl("create", "token", "bot").strip()
        core = client.CoreV1Api(_as_token(served, token))  # plain HTTP: the client still sends it
        with pytest.raises(ApiException) as e:
            core.list_namespaced_pod("default")
        assert e.value.status == 403
        assert client.CoreV1Api(_as_token(served, "anything")).list_namespaced_pod("default").items == []
    finally:
        served.kill()
