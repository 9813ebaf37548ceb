"""The ServiceAccounts controller in serve: each namespace has its `default` ServiceAccount, and
a token can be issued for it at once, as on a real cluster."""

from __future__ import annotations

from tests.serve.harness import Served, wait_for


def _has_default(served: Served, namespace: str) -> bool:
    return "serviceaccount/default" in served.kubectl("get", "serviceaccounts", "-n", namespace, "-o", "name", check=False)


def test_every_namespace_has_its_default_service_account(served: Served) -> None:
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
        wait_for(lambda namespace=namespace: _has_default(served, namespace), what=f"default in {namespace}")
    served.kubectl("create", "namespace", "team-a")
    wait_for(lambda: _has_default(served, "team-a"), what="default in team-a")
    assert served.kubectl("create", "token", "default", "-n", "team-a").strip().count(".") == 2  # a JWT

    served.kubectl("delete", "serviceaccount", "default", "-n", "team-a")
    wait_for(lambda: _has_default(served, "team-a"), what="default made again")
