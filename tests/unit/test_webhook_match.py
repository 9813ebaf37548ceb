"""Which requests a webhook's rules, selectors and match conditions take, as kube-apiserver's
webhook predicates decide: what a configuration author relies on to keep a webhook off the
requests it must not see."""

from __future__ import annotations

import pytest

from kubesched.api.objects import Obj
from kubesched.apiserver.errors import NotFoundError
from kubesched.server.webhookmatch import (
    GVR,
    ConditionError,
    conditions_match,
    namespace_matches,
    object_matches,
    rules_match,
)
from kubesched.store.memory import MemoryStore

PODS = GVR("", "v1", "pods", "Pod", True)
NAMESPACES = GVR("", "v1", "namespaces", "Namespace", False)
DEPLOYMENTS = GVR("apps", "v1", "deployments", "Deployment", True)


def _hook(resources: list[str], scope: str = "*", **more: object) -> Obj:
    return {"rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["", "apps"], "apiVersions": ["v1"],
                       "resources": resources, "scope": scope}], **more}


@pytest.mark.parametrize(("resources", "subresource", "matches"), [
    (["pods"], "", True),
    (["pods"], "status", False),
    (["pods/status"], "status", True),
    (["pods/status"], "", False),
    (["pods/*"], "status", True),
    (["*"], "", True),
    (["*"], "status", False),
    (["*/status"], "status", True),
    (["*/*"], "status", True),
    (["deployments"], "", False),
])
def test_resources_and_subresources(resources: list[str], subresource: str, matches: bool) -> None:
    assert rules_match(_hook(resources), "CREATE", PODS, subresource, "default") is matches


def test_operations_groups_and_versions() -> None:
    hook = _hook(["*"])
    assert not rules_match(hook, "DELETE", PODS, "", "default")
    assert rules_match(hook, "UPDATE", DEPLOYMENTS, "", "default")
    assert not rules_match(hook, "UPDATE", GVR("batch", "v1", "jobs", "Job", True), "", "default")
    assert not rules_match(hook, "UPDATE", GVR("apps", "v1beta1", "deployments", "Deployment", True), "", "default")


def test_scope_counts_a_namespace_as_cluster_scoped() -> None:
    assert rules_match(_hook(["*"], "Namespaced"), "CREATE", PODS, "", "default")
    assert not rules_match(_hook(["*"], "Namespaced"), "CREATE", NAMESPACES, "", "team-a")
    assert rules_match(_hook(["*"], "Cluster"), "CREATE", NAMESPACES, "", "team-a")
    assert not rules_match(_hook(["*"], "Cluster"), "CREATE", PODS, "", "default")


def _labelled(name: str, labels: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def test_namespace_selector() -> None:
    store = MemoryStore()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "guarded", "labels": {"guard": "on"}}})
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "open"}})
    hook = {"namespaceSelector": {"matchLabels": {"guard": "on"}}}
    pod = _labelled("p", {})
    assert namespace_matches(hook, PODS, "", "guarded", pod, None, store)
    assert not namespace_matches(hook, PODS, "", "open", pod, None, store)
    # A Namespace's own request is judged by its labels; other cluster-scoped objects always match.
    assert namespace_matches(hook, NAMESPACES, "", "new", _labelled("new", {"guard": "on"}), None, store)
    assert not namespace_matches(hook, NAMESPACES, "", "new", _labelled("new", {}), None, store)
    assert namespace_matches(hook, GVR("", "v1", "nodes", "Node", False), "", "", _labelled("n", {}), None, store)
    assert namespace_matches({"namespaceSelector": {}}, PODS, "", "open", pod, None, store)
    with pytest.raises(NotFoundError, match='namespaces "missing" not found'):
        namespace_matches(hook, PODS, "", "missing", pod, None, store)


def test_object_selector_takes_the_new_or_the_old_object() -> None:
    hook = {"objectSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}}
    assert object_matches(hook, _labelled("a", {"tier": "web"}), None)
    assert object_matches(hook, _labelled("a", {}), _labelled("a", {"tier": "web"}))
    assert object_matches(hook, None, _labelled("a", {"tier": "web"}))
    assert not object_matches(hook, _labelled("a", {"tier": "db"}), None)


def test_match_conditions() -> None:
    request = {"operation": "CREATE", "userInfo": {"username": "alice"}}
    bad = {"matchConditions": [{"name": "bad", "expression": "object.metadata.name.startsWith('bad')"}]}
    assert conditions_match(bad, _labelled("bad-1", {}), None, request)
    assert not conditions_match(bad, _labelled("good", {}), None, request)
    alice = {"matchConditions": [{"name": "who", "expression": "request.userInfo.username == 'alice'"}]}
    assert conditions_match(alice, _labelled("x", {}), None, request)
    # One false condition skips the webhook even where another fails; a failure alone is raised.
    broken = {"name": "broken", "expression": "object.spec.missing == 1"}
    assert not conditions_match({"matchConditions": [broken, *bad["matchConditions"]]}, _labelled("ok", {}), None,
                                request)
    with pytest.raises(ConditionError, match="broken"):
        conditions_match({"matchConditions": [broken]}, _labelled("ok", {}), None, request)
    with pytest.raises(ConditionError, match="must evaluate to bool"):
        conditions_match({"matchConditions": [{"name": "n", "expression": "1 + 1"}]}, _labelled("ok", {}), None,
                         request)
