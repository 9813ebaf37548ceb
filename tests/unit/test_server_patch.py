"""PATCH bodies as kube-apiserver v1.35 applies them: strategic merge patch (what `kubectl apply`,
`kubectl patch`, `kubectl cordon` send), JSON merge patch (operators such as kopf) and JSON patch
(`kubectl patch --type json`), with the status codes and messages clients see."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubesched.api.objects import Shared, shared_condition
from kubesched.apiserver.errors import (
    BadRequest,
    Invalid,
    RequestEntityTooLarge,
    ServerError,
    UnsupportedMediaType,
)
from kubesched.server.patch import PatchRejected, json_patch, merge_patch, strategic_merge_patch

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def deployment() -> dict[str, Any]:
    """A Deployment as the API server stores it after defaulting."""
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "7", "generation": 1,
                     "labels": {"app": "web", "tier": "front"}, "finalizers": ["a.example.com/x", "b.example.com/y"]},
        "spec": {
            "replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": "nginx:1.24", "imagePullPolicy": "IfNotPresent",
                         "env": [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "info"}],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
                        {"name": "sidecar", "image": "busybox:1.36"},
                    ],
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
                    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                },
            },
        },
        "status": {"replicas": 3, "readyReplicas": 3},
    }


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


# --- strategic merge patch -------------------------------------------------------------------


def test_containers_merge_by_name_and_keep_what_the_patch_does_not_mention() -> None:
    live = deployment()
    out = strategic_merge_patch(live, {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:1.25"}]}}}})
    web, sidecar = containers(out)
    assert web["image"] == "nginx:1.25"
    assert web["imagePullPolicy"] == "IfNotPresent" and web["env"] == containers(live)[0]["env"]
    assert sidecar == {"name": "sidecar", "image": "busybox:1.36"}
    assert containers(live)[0]["image"] == "nginx:1.24", "the live object is left alone"


def test_new_container_is_appended_and_env_merges_by_name_inside_a_container() -> None:
    out = strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "env": [{"name": "LEVEL", "value": "debug"}, {"name": "TRACE", "value": "1"}]},
        {"name": "metrics", "image": "prom/exporter"}]}}}})
    names = [c["name"] for c in containers(out)]
    assert names == ["web", "metrics", "sidecar"]
    # The server's own items keep their place before the patch's items that followed them.
    assert containers(out)[0]["env"] == [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "debug"},
                                         {"name": "TRACE", "value": "1"}]


def test_patch_delete_directive_removes_one_list_item() -> None:
    out = strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "$patch": "delete"}]}}}})
    assert [c["name"] for c in containers(out)] == ["web"]


def test_patch_replace_directive_replaces_a_list_or_a_map() -> None:
    out = strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [
        {"$patch": "replace"}, {"name": "only", "image": "x"}]}}}})
    assert containers(out) == [{"name": "only", "image": "x"}]
    out = strategic_merge_patch(deployment(), {"metadata": {"labels": {"$patch": "replace", "new": "1"}}})
    assert out["metadata"]["labels"] == {"new": "1"}


def test_retain_keys_clears_the_fields_not_listed() -> None:
    """What kubectl sends when a Deployment's strategy becomes Recreate."""
    out = strategic_merge_patch(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_must_list_every_field_the_patch_sets() -> None:
    with pytest.raises(BadRequest) as err:
        strategic_merge_patch(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate",
                                                                   "rollingUpdate": {"maxSurge": 1}}}})
    assert err.value.code == 400 and err.value.message == "invalid patch format of retainKeys"


def test_set_element_order_reorders_a_merged_list() -> None:
    out = strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}]}}}})
    assert [c["name"] for c in containers(out)] == ["sidecar", "web"]
    assert containers(out)[1]["image"] == "nginx:1.24"


def test_finalizers_merge_as_a_set_and_leave_through_the_deletion_list() -> None:
    out = strategic_merge_patch(deployment(), {"metadata": {"finalizers": ["c.example.com/z", "a.example.com/x"]}})
    assert out["metadata"]["finalizers"] == ["c.example.com/z", "a.example.com/x", "b.example.com/y"]
    out = strategic_merge_patch(deployment(), {"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]}})
    assert out["metadata"]["finalizers"] == ["b.example.com/y"]


def test_primitive_list_order_additions_and_deletions_in_one_patch() -> None:
    """What kubectl sends when a finalizer list in the file is reordered, grown and shrunk."""
    out = strategic_merge_patch(deployment(), {"metadata": {
        "$setElementOrder/finalizers": ["b.example.com/y", "d.example.com/w"],
        "finalizers": ["d.example.com/w"],
        "$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]}})
    assert out["metadata"]["finalizers"] == ["b.example.com/y", "d.example.com/w"]


def test_retain_keys_in_a_volume_switches_its_source() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x"}],
                    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c1"}}]}}
    out = strategic_merge_patch(pod, {"spec": {"volumes": [
        {"$retainKeys": ["configMap", "name"], "name": "data", "configMap": {"name": "c2"}}]}})
    assert out["spec"]["volumes"] == [{"name": "data", "configMap": {"name": "c2"}},
                                      {"name": "cfg", "configMap": {"name": "c1"}}]


def test_a_list_without_merge_key_is_replaced() -> None:
    tol = [{"key": "gpu", "operator": "Exists"}]
    out = strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"tolerations": tol}}}})
    assert out["spec"]["template"]["spec"]["tolerations"] == tol


def test_null_deletes_a_field_and_a_map_key() -> None:
    out = strategic_merge_patch(deployment(), {"metadata": {"labels": {"tier": None}},
                                               "spec": {"progressDeadlineSeconds": None}})
    assert out["metadata"]["labels"] == {"app": "web"}
    assert "progressDeadlineSeconds" not in out["spec"]


def test_replicas_change_leaves_the_rest_of_the_spec() -> None:
    live = deployment()
    out = strategic_merge_patch(live, {"spec": {"replicas": 5}})
    assert out["spec"]["replicas"] == 5
    assert {k: v for k, v in out["spec"].items() if k != "replicas"} == \
        {k: v for k, v in live["spec"].items() if k != "replicas"}


def test_kubectl_client_side_apply_patch_for_an_image_change() -> None:
    """The three-way patch `kubectl apply` sends when only the image changed in the file: the
    new last-applied annotation, the container by its merge key with the new image, and the
    list's order."""
    live = deployment()
    applied = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
                   "metadata": {"labels": {"app": "web"}},
                   "spec": {"containers": [{"name": "web", "image": "nginx:1.25"},
                                           {"name": "sidecar", "image": "busybox:1.36"}]}}}}
    annotation = json.dumps(applied, sort_keys=True, separators=(",", ":")) + "\n"
    patch = {"metadata": {"annotations": {LAST_APPLIED: annotation}},
             "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
                                            "containers": [{"image": "nginx:1.25", "name": "web"}]}}}}
    out = strategic_merge_patch(live, patch)
    assert out["metadata"]["annotations"] == {LAST_APPLIED: annotation}
    assert [c["image"] for c in containers(out)] == ["nginx:1.25", "busybox:1.36"]
    assert containers(out)[0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "$setElementOrder/containers" not in out["spec"]["template"]["spec"]
    expected = copy.deepcopy(live)
    containers(expected)[0]["image"] = "nginx:1.25"
    expected["metadata"]["annotations"] = {LAST_APPLIED: annotation}
    assert out == expected


def test_kubectl_cordon_patch_on_a_node() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]}}
    out = strategic_merge_patch(node, {"spec": {"unschedulable": True}})
    assert out["spec"] == {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}],
                           "unschedulable": True}


def test_ports_merge_by_container_port() -> None:
    out = strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "ports": [{"containerPort": 443, "protocol": "TCP"}]}]}}}})
    assert containers(out)[0]["ports"] == [{"containerPort": 443, "protocol": "TCP"},
                                           {"containerPort": 80, "protocol": "TCP"}]


def test_strategic_merge_patch_on_a_custom_resource_is_unsupported_media_type() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
    with pytest.raises(UnsupportedMediaType) as err:
        strategic_merge_patch(widget, {"spec": {"size": 1}})
    assert err.value.code == 415 and err.value.reason == "UnsupportedMediaType"
    assert err.value.message == ("the body of the request was in an unknown format - accepted media types "
                                 "include: application/json-patch+json, application/merge-patch+json, "
                                 "application/apply-patch+yaml")


def test_strategic_merge_patch_errors() -> None:
    with pytest.raises(BadRequest) as bad:
        strategic_merge_patch(deployment(), ["not", "a", "map"])
    assert bad.value.message == "json: cannot unmarshal array into Go value of type map[string]interface {}"
    with pytest.raises(ServerError) as err:
        strategic_merge_patch(deployment(), {"metadata": {"labels": {"$patch": "sideways"}}})
    assert err.value.code == 500
    assert err.value.message == "unknown patch type: sideways in map: map[$patch:sideways]"
    with pytest.raises(ServerError) as err:
        strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}})
    assert err.value.message == "map: map[image:x] does not contain declared merge key: name"
    with pytest.raises(BadRequest) as bad:
        strategic_merge_patch(deployment(), {"metadata": {"$deleteFromPrimitiveList": ["a"]}})
    assert bad.value.message == "invalid patch format of primitive list"


# --- JSON merge patch ------------------------------------------------------------------------


def test_merge_patch_as_kopf_sends_it_to_a_custom_resource() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w", "annotations": {"kopf.zalando.org/last-handled-configuration": "{}"}},
              "spec": {"size": 1, "tags": ["a", "b"]}}
    out = merge_patch(widget, {"metadata": {"finalizers": ["kopf.zalando.org/KopfFinalizerMarker"],
                                            "annotations": {"kopf.zalando.org/last-handled-configuration": None}},
                               "spec": {"tags": ["c"]}, "status": {"phase": "Ready"}})
    assert out["metadata"] == {"name": "w", "annotations": {}, "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"]}
    assert out["spec"] == {"size": 1, "tags": ["c"]} and out["status"] == {"phase": "Ready"}


def test_merge_patch_body_must_be_an_object() -> None:
    with pytest.raises(BadRequest) as err:
        merge_patch(deployment(), None)
    assert err.value.message == "Invalid JSON Patch"
    with pytest.raises(Invalid):
        merge_patch(deployment(), [1, 2])


# --- JSON patch ------------------------------------------------------------------------------


def test_json_patch_operations() -> None:
    out = json_patch(deployment(), [
        {"op": "replace", "path": "/spec/replicas", "value": 5},
        {"op": "add", "path": "/metadata/annotations", "value": {}},
        {"op": "add", "path": "/metadata/annotations/example.com~1owner", "value": "team-a"},
        {"op": "remove", "path": "/metadata/labels/tier"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "c.example.com/z"},
        {"op": "remove", "path": "/metadata/finalizers/-3"},
        {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copy"},
        {"op": "move", "from": "/spec/revisionHistoryLimit", "path": "/spec/minReadySeconds"},
        {"op": "test", "path": "/spec/replicas", "value": 5},
    ])
    assert out["spec"]["replicas"] == 5 and out["spec"]["minReadySeconds"] == 10
    assert "revisionHistoryLimit" not in out["spec"]
    assert out["metadata"]["annotations"] == {"example.com/owner": "team-a"}
    assert out["metadata"]["labels"] == {"app": "web", "copy": "web"}
    assert out["metadata"]["finalizers"] == ["b.example.com/y", "c.example.com/z"]


def test_json_patch_failed_test_is_422_with_the_generic_message() -> None:
    with pytest.raises(PatchRejected) as err:
        json_patch(deployment(), [{"op": "test", "path": "/spec/replicas", "value": 2},
                                  {"op": "replace", "path": "/spec/replicas", "value": 9}])
    assert err.value.code == 422 and err.value.reason == "Invalid"
    assert err.value.message == "the server rejected our request due to an error in our request"
    assert err.value.detail == "testing value /spec/replicas failed: test failed"


@pytest.mark.parametrize(("op", "detail"), [
    ({"op": "add", "path": "/spec/nothing/here", "value": 1},
     'add operation does not apply: doc is missing path: "/spec/nothing/here": missing value'),
    ({"op": "remove", "path": "/metadata/labels/nope"},
     "error in remove for path: '/metadata/labels/nope': unable to remove nonexistent key: nope: missing value"),
    ({"op": "replace", "path": "/spec/paused", "value": True},
     "replace operation does not apply: doc is missing key: /spec/paused: missing value"),
    ({"op": "remove", "path": "/metadata/finalizers/7"},
     "error in remove for path: '/metadata/finalizers/7': Unable to access invalid index: 7: "
     "invalid index referenced"),
    ({"op": "move", "from": "/spec/nope", "path": "/spec/x"},
     "error in move for path: 'nope': unable to get nonexistent key: nope: missing value"),
    ({"op": "test", "path": "/spec/nothing/here", "value": 1},
     "test operation does not apply: is missing path: /spec/nothing/here: missing value"),
    ({"op": "frobnicate", "path": "/spec"}, "Unexpected kind: frobnicate"),
    ({"path": "/spec"}, "Unexpected kind: unknown"),
])
def test_json_patch_failures_say_what_the_api_server_says(op: dict[str, Any], detail: str) -> None:
    live = deployment()
    with pytest.raises(PatchRejected) as err:
        json_patch(live, [op])
    assert err.value.detail == detail
    assert live == deployment(), "a failed patch changes nothing"


def test_json_patch_body_must_be_a_list_of_operations() -> None:
    with pytest.raises(BadRequest) as err:
        json_patch(deployment(), {"op": "add"})
    assert err.value.message == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    with pytest.raises(RequestEntityTooLarge) as too_many:
        json_patch(deployment(), [{"op": "test", "path": "/kind", "value": "Deployment"}] * 10001)
    assert too_many.value.code == 413
    assert too_many.value.message == ("Request entity too large: The allowed maximum operations in a JSON patch "
                                      "is 10000, got 10001")


def test_maps_shared_between_stored_pods_patch_like_any_other_map() -> None:
    """The kubelet stores one condition and one container state for all the pods it starts at an
    instant (`Shared`): a patch gives what it gives the same pod built of plain maps, and never
    changes the shared values in place."""
    ready = shared_condition("Ready", "True", "2026-01-01T00:00:00Z")
    running = Shared(running=Shared(startedAt="2026-01-01T00:00:00Z"))

    def pod(condition: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "app"}]},
                "status": {"phase": "Running", "conditions": [condition],
                           "containerStatuses": [{"name": "c", "ready": True, "state": state}],
                           "extra": {"state": state}}}

    shared, plain = pod(ready, running), copy.deepcopy(pod(ready, running))
    assert type(plain["status"]["conditions"][0]) is dict
    body = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Probe"}],
                       "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
                       "extra": {"state": {"waiting": {"reason": "x"}}}}}
    for patched in (strategic_merge_patch, merge_patch):
        assert patched(shared, body) == patched(plain, body)
    assert strategic_merge_patch(shared, body)["status"]["extra"]["state"] == {
        "running": {"startedAt": "2026-01-01T00:00:00Z"}, "waiting": {"reason": "x"}}
    assert ready["status"] == "True" and dict(running) == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
