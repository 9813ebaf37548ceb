"""The ClusterRoles and ClusterRoleBindings kube-apiserver creates at start (its bootstrap
policy): who may reach discovery and the health endpoints, the superuser role, and the
user-facing `admin`, `edit` and `view`, which aggregate the `system:aggregate-to-*` roles (and
any role an operator labels the same way)."""

from __future__ import annotations

from typing import Any

RBAC = "rbac.authorization.k8s.io"
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _role(name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None,
          aggregate: str | None = None) -> dict[str, Any]:
    role: dict[str, Any] = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                            "metadata": {"name": name, "annotations": dict(AUTOUPDATE),
                                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})}},
                            "rules": rules}
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"{RBAC}/aggregate-to-{aggregate}": "true"}}]}
    return role


def _binding(role: str, groups: list[str]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "annotations": dict(AUTOUPDATE),
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups]}


def _to(*roles: str) -> dict[str, str]:
    return {f"{RBAC}/aggregate-to-{r}": "true" for r in roles}


_VIEW = [
    _rule(READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                       "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                       "services/status"]),
    _rule(READ, [""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                       "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"]),
    _rule(READ, [""], ["namespaces"]),
    _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(READ, ["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                           "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
                           "statefulsets", "statefulsets/scale", "statefulsets/status"]),
    _rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _rule(READ, ["extensions"], ["daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                                 "deployments/status", "ingresses", "ingresses/status", "networkpolicies",
                                 "replicasets", "replicasets/scale", "replicasets/status",
                                 "replicationcontrollers/scale"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT = [
    _rule(READ, [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"]),
    _rule(["impersonate"], [""], ["serviceaccounts"]),
    _rule(WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    _rule(["create"], [""], ["pods/eviction"]),
    _rule(WRITE, [""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                        "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"]),
    _rule(["create"], [""], ["serviceaccounts/token"]),
    _rule(WRITE, ["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                            "replicasets/scale", "statefulsets", "statefulsets/scale"]),
    _rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
    _rule(WRITE, ["extensions"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
                                  "networkpolicies", "replicasets", "replicasets/scale",
                                  "replicationcontrollers/scale"]),
    _rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    _rule([*WRITE, *READ], ["coordination.k8s.io"], ["leases"]),
]

_ADMIN = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule([*WRITE, *READ], [RBAC], ["rolebindings", "roles"]),
]

_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
                   "/version", "/version/"]
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

CLUSTER_ROLES: list[dict[str, Any]] = [
    _role("cluster-admin", [_rule(["*"], ["*"], ["*"]), {"verbs": ["*"], "nonResourceURLs": ["*"]}]),
    _role("admin", [], aggregate="admin"),
    _role("edit", [], _to("admin"), aggregate="edit"),
    _role("view", [], _to("admin", "edit"), aggregate="view"),
    _role("system:aggregate-to-admin", _ADMIN, _to("admin")),
    _role("system:aggregate-to-edit", _EDIT, _to("edit")),
    _role("system:aggregate-to-view", _VIEW, _to("view")),
    _role("system:discovery", [{"verbs": ["get"], "nonResourceURLs": _DISCOVERY_URLS}]),
    _role("system:auth-delegator", [_rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                                    _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"])]),
    _role("system:basic-user", [_rule(["create"], ["authorization.k8s.io"],
                                      ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                                _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])]),
    _role("system:public-info-viewer", [{"verbs": ["get"], "nonResourceURLs": _PUBLIC_URLS}]),
]

CLUSTER_ROLE_BINDINGS: list[dict[str, Any]] = [
    _binding("cluster-admin", ["system:masters"]),
    _binding("system:discovery", ["system:authenticated"]),
    _binding("system:basic-user", ["system:authenticated"]),
    _binding("system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]),
]
