"""Server-side apply and managedFields as kube-apiserver v1.35 keeps them: what `kubectl apply
--server-side`, controllers' updates and `kubectl get -o yaml --show-managed-fields` rely on."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubesched.apiserver.errors import BadRequest, ServerError
from kubesched.server.managedfields import LAST_APPLIED, ApplyConflict, apply, manager_name, record_update

T0, T1, T2, T3 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"


def config(replicas: int | None = 3, image: str = "nginx:1.25") -> dict[str, Any]:
    """What a user keeps in deploy.yaml."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}}, "spec": spec}


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """What the registry adds when it stores an object."""
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("uid", "uid-1")
    out["metadata"]["resourceVersion"] = str(int(out["metadata"].get("resourceVersion", "0")) + 1)
    return out


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def fields(obj: dict[str, Any], manager: str, operation: str) -> dict[str, Any]:
    return entries(obj)[(manager, operation)]["fieldsV1"]


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def test_apply_creates_the_object_and_records_exactly_what_was_applied() -> None:
    out = apply(None, config(), "kubectl", False, T0)
    assert {k: v for k, v in out.items() if k != "metadata"} == {k: v for k, v in config().items() if k != "metadata"}
    assert out["metadata"]["labels"] == {"app": "web"}
    assert out["metadata"]["managedFields"] == [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0, "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {'k:{"name":"web"}': {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                    }}},
                },
            },
        },
    }]


def test_reapplying_without_a_field_removes_it_and_reapplying_the_same_changes_nothing() -> None:
    live = stored(apply(None, config(), "kubectl", False, T0))
    again = apply(live, config(), "kubectl", False, T1)
    assert again == live, "an apply that changes nothing keeps even the entry's time"
    out = apply(live, config(replicas=None), "kubectl", False, T1)
    assert "replicas" not in out["spec"]
    assert "f:replicas" not in fields(out, "kubectl", "Apply")["f:spec"]
    assert entries(out)[("kubectl", "Apply")]["time"] == T1


def test_a_field_dropped_from_the_config_stays_when_another_manager_also_owns_it() -> None:
    live = stored(apply(None, config(), "kubectl", False, T0))
    live = stored(apply(live, {"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 3}},
                        "hpa-sync", False, T1))
    assert fields(live, "hpa-sync", "Apply") == {"f:spec": {"f:replicas": {}}}
    out = apply(live, config(replicas=None), "kubectl", False, T2)
    assert out["spec"]["replicas"] == 3


def test_changing_a_field_another_manager_owns_is_a_conflict() -> None:
    """The documented case: an object created by client-side apply, then applied server-side
    under another field manager with a different replica count."""
    live = stored(record_update(None, stored(config()), "kubectl-client-side-apply", T0))
    with pytest.raises(ApplyConflict) as err:
        apply(live, config(replicas=5), "deploy-tool", False, T1)
    assert err.value.code == 409 and err.value.reason == "Conflict"
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                                 "using apps/v1: .spec.replicas")
    assert err.value.conflicts == [(".spec.replicas", 'conflict with "kubectl-client-side-apply" using apps/v1')]

    with pytest.raises(ApplyConflict) as err:
        apply(live, config(replicas=5, image="nginx:2"), "deploy-tool", False, T1)
    assert err.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using apps/v1:\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="web"].image')


def test_conflicts_with_several_managers_are_listed_per_manager() -> None:
    live = stored(apply(None, config(), "alpha", False, T0))
    live = stored(record_update(live, {**live, "spec": {**live["spec"], "paused": True}}, "beta", T1))
    change = config(replicas=4)
    change["spec"]["paused"] = False
    with pytest.raises(ApplyConflict) as err:
        apply(live, change, "gamma", False, T2)
    assert err.value.message == ('Apply failed with 2 conflicts: conflicts with "alpha":\n- .spec.replicas\n'
                                 'conflicts with "beta" using apps/v1:\n- .spec.paused')


def test_force_takes_ownership_and_the_same_value_is_shared() -> None:
    live = stored(record_update(None, stored(config()), "kubectl-client-side-apply", T0))
    out = apply(live, config(replicas=5), "deploy-tool", True, T1)
    assert out["spec"]["replicas"] == 5
    assert "f:replicas" in fields(out, "deploy-tool", "Apply")["f:spec"]
    assert "f:replicas" not in fields(out, "kubectl-client-side-apply", "Update")["f:spec"]
    # Setting what another manager set, to the same value, is no conflict: both own it.
    shared = apply(live, config(), "deploy-tool", False, T1)
    assert "f:replicas" in fields(shared, "deploy-tool", "Apply")["f:spec"]
    assert "f:replicas" in fields(shared, "kubectl-client-side-apply", "Update")["f:spec"]


def test_kubectl_moving_to_server_side_apply_takes_over_its_client_side_fields() -> None:
    """`kubectl apply --server-side` on an object `kubectl apply` made: fields the last-applied
    annotation set and the object still holds are taken over without conflict, and the
    annotation follows the new config."""
    csa = stored(config())
    csa["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(config(), sort_keys=True) + "\n"}
    live = stored(record_update(None, csa, "kubectl-client-side-apply", T0))
    out = apply(live, config(replicas=5), "kubectl", False, T1)
    assert out["spec"]["replicas"] == 5
    synced = json.loads(out["metadata"]["annotations"][LAST_APPLIED])
    assert synced == config(replicas=5)
    with pytest.raises(ApplyConflict):
        apply(live, config(replicas=5), "someone-else", False, T1)


def test_associative_lists_merge_by_their_keys() -> None:
    live = stored(apply(None, config(), "team-a", False, T0))
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"template": {"spec": {"containers": [
                   {"name": "web", "ports": [{"containerPort": 80, "protocol": "UDP"}]},
                   {"name": "proxy", "image": "envoy:1.30"}]}}}}
    live = stored(apply(live, sidecar, "team-b", False, T1))
    assert [c["name"] for c in containers(live)] == ["web", "proxy"]
    assert containers(live)[0]["ports"] == [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}]
    assert 'k:{"containerPort":80,"protocol":"UDP"}' in \
        fields(live, "team-b", "Apply")["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']["f:ports"]
    # team-a changes its image: team-b's container and port are untouched.
    out = apply(live, config(image="nginx:1.26"), "team-a", False, T2)
    assert containers(out)[0]["image"] == "nginx:1.26"
    assert containers(out)[1] == {"name": "proxy", "image": "envoy:1.30"}
    assert {"containerPort": 80, "protocol": "UDP"} in containers(out)[0]["ports"]
    # team-b stops applying its container: it goes, team-a's stays.
    sidecar["spec"]["template"]["spec"]["containers"] = sidecar["spec"]["template"]["spec"]["containers"][:1]
    out = apply(stored(out), sidecar, "team-b", False, T3)
    assert [c["name"] for c in containers(out)] == ["web"]


def test_atomic_lists_are_replaced_and_sets_merged() -> None:
    base = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                              "finalizers": ["a.example.com/f"]},
            "spec": {"containers": [{"name": "c", "image": "x"}], "tolerations": [{"key": "a", "operator": "Exists"}]}}
    live = stored(apply(None, base, "one", False, T0))
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                               "finalizers": ["b.example.com/f"]},
             "spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}
    with pytest.raises(ApplyConflict) as err:
        apply(live, other, "two", False, T1)
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "one": .spec.tolerations'
    out = apply(live, other, "two", True, T1)
    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    assert out["metadata"]["finalizers"] == ["a.example.com/f", "b.example.com/f"]
    assert fields(out, "two", "Apply")["f:metadata"] == {"f:finalizers": {'v:"b.example.com/f"': {}}}


def test_status_is_not_applied_through_the_main_resource() -> None:
    live = stored(apply(None, config(), "kubectl", False, T0))
    live["status"] = {"replicas": 3}
    with_status = config()
    with_status["status"] = {"replicas": 99}
    out = apply(live, with_status, "kubectl", False, T1)
    assert out["status"] == {"replicas": 3}
    assert "f:status" not in fields(out, "kubectl", "Apply")


def test_apply_to_an_object_never_tracked_starts_with_before_first_apply() -> None:
    untracked = stored(config())
    with pytest.raises(ApplyConflict) as err:
        apply(untracked, config(replicas=2), "kubectl", False, T1)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: '
                                 ".spec.replicas")
    out = apply(untracked, config(), "kubectl", False, T1)
    assert set(entries(out)) == {("kubectl", "Apply"), ("before-first-apply", "Update")}


def test_custom_resources_have_granular_maps_and_atomic_lists() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
              "spec": {"size": 3, "tags": ["a", "b"], "limits": {"cpu": "1"}}}
    live = stored(apply(None, widget, "operator", False, T0))
    assert fields(live, "operator", "Apply") == {"f:spec": {"f:limits": {".": {}, "f:cpu": {}}, "f:size": {},
                                                            "f:tags": {}}}
    mine = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
            "spec": {"limits": {"memory": "1Gi"}, "tags": ["c"]}}
    out = apply(live, mine, "user", True, T1)
    assert out["spec"] == {"size": 3, "tags": ["c"], "limits": {"cpu": "1", "memory": "1Gi"}}


def test_apply_refuses_malformed_configurations() -> None:
    with pytest.raises(BadRequest) as bad:
        apply(None, {"metadata": {"name": "x"}}, "m", False, T0)
    assert bad.value.message == "invalid object type: /, Kind="
    with pytest.raises(BadRequest) as bad:
        apply(None, {**config(), "metadata": {"name": "web", "managedFields": []}}, "m", False, T0)
    assert bad.value.message == "metadata.managedFields must be nil"
    wrong = config()
    wrong["spec"]["replica"] = 3
    containers(wrong).append({"name": "web", "image": "other"})
    with pytest.raises(ServerError) as err:
        apply(None, wrong, "m", False, T0)
    assert err.value.code == 500
    assert err.value.message == (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n"
        '  .spec.template.spec.containers: duplicate entries for key [name="web"]\n'
        "  .spec.replica: field not declared in schema")


# --- updates ---------------------------------------------------------------------------------


def defaulted_deployment() -> dict[str, Any]:
    """`kubectl create deployment web --image=nginx` after the API server's defaulting."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}],
                                           "restartPolicy": "Always", "securityContext": {}}}},
            "status": {}}


def test_create_records_an_update_entry_shaped_as_upstream_records_it() -> None:
    out = record_update(None, defaulted_deployment(), "kubectl-create", T0)
    (entry,) = out["metadata"]["managedFields"]
    assert {k: v for k, v in entry.items() if k != "fieldsV1"} == {
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
        "fieldsType": "FieldsV1"}
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {'k:{"name":"nginx"}': {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}},
                    "f:restartPolicy": {},
                    "f:securityContext": {},
                },
            },
        },
    }


def test_an_update_moves_ownership_of_what_it_changed() -> None:
    live = stored(record_update(None, defaulted_deployment(), "kubectl-create", T0))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 4
    out = record_update(live, scaled, "kubectl-scale", T1, subresource="scale")
    assert fields(out, "kubectl-scale", "Update") == {"f:spec": {"f:replicas": {}}}
    assert entries(out)[("kubectl-scale", "Update")]["subresource"] == "scale"
    assert "f:replicas" not in fields(out, "kubectl-create", "Update")["f:spec"]
    assert entries(out)[("kubectl-create", "Update")]["time"] == T0
    # A write that changes nothing adds no entry and touches no time.
    same = record_update(stored(out), copy.deepcopy(stored(out)), "kube-controller-manager", T2)
    assert set(entries(same)) == {("kubectl-create", "Update"), ("kubectl-scale", "Update")}


def test_status_writes_own_status_only_and_main_writes_never_own_status() -> None:
    live = stored(record_update(None, defaulted_deployment(), "kubectl-create", T0))
    live["status"] = {"replicas": 1}
    reported = {**live, "status": {"replicas": 1, "readyReplicas": 1}}
    out = record_update(live, reported, "kube-controller-manager", T1, subresource="status")
    assert fields(out, "kube-controller-manager", "Update") == {"f:status": {"f:readyReplicas": {}}}
    assert entries(out)[("kube-controller-manager", "Update")]["subresource"] == "status"
    sneaky = {**stored(out), "status": {"replicas": 7}}
    after = record_update(stored(out), sneaky, "someone", T2)
    assert ("someone", "Update") not in entries(after)


def test_apply_then_update_takes_the_field_from_the_applier() -> None:
    live = stored(apply(None, config(), "kubectl", False, T0))
    edited = copy.deepcopy(live)
    containers(edited)[0]["image"] = "nginx:edited"
    out = record_update(live, edited, "kubectl-edit", T1)
    assert fields(out, "kubectl-edit", "Update") == {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"web"}': {"f:image": {}}}}}}}
    applier = fields(out, "kubectl", "Apply")["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert "f:image" not in applier and "f:name" in applier
    # The applier now conflicts on the image it no longer owns.
    with pytest.raises(ApplyConflict) as err:
        apply(stored(out), config(), "kubectl", False, T2)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: '
                                 '.spec.template.spec.containers[name="web"].image')


def test_untracked_objects_stay_untracked_and_clients_may_clear_managed_fields() -> None:
    untracked = stored(defaulted_deployment())
    changed = {**untracked, "spec": {**untracked["spec"], "replicas": 2}}
    assert "managedFields" not in record_update(untracked, changed, "m", T1)["metadata"]
    live = stored(record_update(None, defaulted_deployment(), "kubectl-create", T0))
    cleared = copy.deepcopy(live)
    cleared["metadata"]["managedFields"] = []
    assert "managedFields" not in record_update(live, cleared, "m", T1)["metadata"]
    # Without managedFields in the request, the stored ones are kept and updated.
    no_fields = copy.deepcopy(live)
    del no_fields["metadata"]["managedFields"]
    no_fields["spec"]["replicas"] = 2
    kept = record_update(live, no_fields, "m", T1)
    assert set(entries(kept)) == {("kubectl-create", "Update"), ("m", "Update")}


def test_more_than_ten_updaters_fold_into_ancient_changes() -> None:
    live = stored(record_update(None, defaulted_deployment(), "creator", "2026-01-01T00:00:00Z"))
    for i in range(11):
        new = copy.deepcopy(live)
        new["metadata"]["labels"][f"l{i}"] = "x"
        live = stored(record_update(live, new, f"writer-{i:02d}", f"2026-01-01T00:{i + 1:02d}:00Z"))
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert "creator" not in managers and "writer-00" not in managers and "ancient-changes" in managers
    ancient = next(e for e in live["metadata"]["managedFields"] if e["manager"] == "ancient-changes")
    assert "f:l0" in ancient["fieldsV1"]["f:metadata"]["f:labels"]
    assert "f:replicas" in ancient["fieldsV1"]["f:spec"]


def test_entries_are_sorted_apply_first_then_by_time() -> None:
    live = stored(record_update(None, defaulted_deployment(), "zeta", T0))
    live = stored(apply(live, {"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"paused": True}}, "applier", False, T2))
    new = copy.deepcopy(live)
    new["spec"]["minReadySeconds"] = 5
    out = record_update(live, new, "alpha", T1)
    assert [(e["operation"], e["manager"]) for e in out["metadata"]["managedFields"]] == \
        [("Apply", "applier"), ("Update", "zeta"), ("Update", "alpha")]


def test_the_manager_comes_from_the_field_manager_or_the_user_agent() -> None:
    assert manager_name("", "kubectl/v1.35.0 (linux/amd64) kubernetes/66452049") == "kubectl"
    assert manager_name("kubectl-client-side-apply", "kubectl/v1.35.0 (linux/amd64) kubernetes/66452049") == \
        "kubectl-client-side-apply"
    assert manager_name("", "OpenAPI-Generator/31.0.0/python") == "OpenAPI-Generator"
    assert manager_name("my-operator", "kopf/1.37") == "my-operator"
    assert manager_name("", "x" * 200 + "/1") == "x" * 128
