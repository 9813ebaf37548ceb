"""Extended resources backed by DRA (DRAExtendedResource): the claim the scheduler makes for a
pod's `example.com/gpu` requests, what the pod's status says of it, which class serves a name,
and that NodeResourcesFit leaves the resource to DynamicResources only where no device plugin
publishes it."""

from __future__ import annotations

from typing import Any

from kubesched.api.dra.claims import allocation, reserved_for
from kubesched.api.dra.extended import CLAIM_ANNOTATION, device_class_mapping, quota_usage
from kubesched.api.features import FeatureGates
from kubesched.cluster.cluster import Cluster

Obj = dict[str, Any]
ON = FeatureGates({"DRAExtendedResource": True})


def device_class(name: str, extended: str | None = None, created: str = "2025-01-01T00:00:00Z") -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def node(name: str, **extra: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110", **extra}}}


def gpus(node_name: str, count: int) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": "gpu.example.com", "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(count)]}}


def pod(name: str, containers: list[Obj], init: list[Obj] | None = None) -> Obj:
    spec: Obj = {"containers": containers, "terminationGracePeriodSeconds": 0}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def container(name: str, **limits: str) -> Obj:
    return {"name": name, "image": "app", "resources": {"limits": {"cpu": "100m", **limits}}}


def run(objects: list[Obj], gates: FeatureGates = ON, until: float = 60) -> Cluster:
    cluster = Cluster(feature_gates=gates)
    for obj in objects:
        cluster.create(obj)
    cluster.run(until=until)
    return cluster


def extended_claims(cluster: Cluster) -> list[Obj]:
    return [c for c in cluster.store.list("ResourceClaim")
            if (c["metadata"].get("annotations") or {}).get(CLAIM_ANNOTATION) == "true"]


def test_the_claim_is_made_for_the_pod_with_a_request_per_container_and_resource() -> None:
    cluster = run([device_class("gpu", "example.com/gpu"), device_class("fpga"), node("n1"), gpus("n1", 4),
                   pod("train", [container("main", **{"example.com/gpu": "2", "memory": "1Gi"}),
                                 container("side", **{"deviceclass.resource.kubernetes.io/fpga": "1"})],
                       init=[container("setup", **{"example.com/gpu": "1"})])])
    p = cluster.store.get("Pod", "default", "train")
    assert p["spec"]["nodeName"] == "n1"
    [claim] = extended_claims(cluster)
    meta = claim["metadata"]
    assert meta["name"].startswith("train-extended-resources-")
    assert meta["generateName"] == "train-extended-resources-"
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == \
        ("Pod", "train", p["metadata"]["uid"], True, True)
    # container index over initContainers + containers; request index among the container's sorted names
    requests = {r["name"]: r["exactly"] for r in claim["spec"]["devices"]["requests"]}
    assert requests == {
        "container-0-request-1": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
        "container-1-request-1": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2},
        "container-2-request-1": {"deviceClassName": "fpga", "allocationMode": "ExactCount", "count": 1},
    }
    assert sorted(r["request"] for r in allocation(claim)["devices"]["results"]) == \
        ["container-0-request-1", "container-1-request-1", "container-1-request-1", "container-2-request-1"]
    assert [r["name"] for r in reserved_for(claim)] == ["train"]
    assert p["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": meta["name"],
        "requestMappings": [
            {"containerName": "setup", "resourceName": "example.com/gpu", "requestName": "container-0-request-1"},
            {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-1-request-1"},
            {"containerName": "side", "resourceName": "deviceclass.resource.kubernetes.io/fpga",
             "requestName": "container-2-request-1"},
        ]}
    assert p["status"]["phase"] == "Running"


def test_a_node_publishing_the_resource_is_served_by_its_device_plugin() -> None:
    cluster = run([device_class("gpu", "example.com/gpu"), node("plugin", **{"example.com/gpu": "2"}),
                   pod("a", [container("c", **{"example.com/gpu": "2"})]),
                   pod("b", [container("c", **{"example.com/gpu": "1"})])])
    assert cluster.store.get("Pod", "default", "a")["spec"]["nodeName"] == "plugin"
    assert not extended_claims(cluster)
    b = cluster.store.get("Pod", "default", "b")
    assert not b["spec"].get("nodeName")
    # published, even as zero, means the device plugin's: Fit judges it, DRA does not step in
    assert "1 Insufficient example.com/gpu" in b["status"]["conditions"][0]["message"]


def test_a_node_publishing_zero_is_not_left_to_dra() -> None:
    cluster = run([device_class("gpu", "example.com/gpu"), node("n1", **{"example.com/gpu": "0"}), gpus("n1", 2),
                   pod("a", [container("c", **{"example.com/gpu": "1"})])])
    a = cluster.store.get("Pod", "default", "a")
    assert not a["spec"].get("nodeName")
    assert "1 Insufficient example.com/gpu" in a["status"]["conditions"][0]["message"]


def test_the_claim_goes_with_its_pod_and_frees_the_devices() -> None:
    cluster = Cluster(feature_gates=ON)
    for obj in (device_class("gpu", "example.com/gpu"), node("n1"), gpus("n1", 1),
                pod("a", [container("c", **{"example.com/gpu": "1"})]),
                pod("b", [container("c", **{"example.com/gpu": "1"})])):
        cluster.create(obj)
    cluster.clock.call_at(20, lambda: cluster.api.delete("Pod", "default", "a"))
    cluster.run(until=120)
    assert cluster.store.get("Pod", "default", "a") is None
    [claim] = extended_claims(cluster)
    assert claim["metadata"]["ownerReferences"][0]["name"] == "b"
    assert cluster.store.get("Pod", "default", "b")["spec"]["nodeName"] == "n1"


def test_the_gate_off_leaves_extended_resources_to_allocatable() -> None:
    cluster = run([device_class("gpu", "example.com/gpu"), node("n1"), gpus("n1", 2),
                   pod("a", [container("c", **{"example.com/gpu": "1"})])], gates=FeatureGates())
    a = cluster.store.get("Pod", "default", "a")
    assert not a["spec"].get("nodeName") and not extended_claims(cluster)
    assert "extendedResourceClaimStatus" not in a["status"]


def test_each_class_serves_its_implicit_name_and_the_newest_class_an_explicit_one() -> None:
    classes = [device_class("old", "example.com/gpu", "2025-01-01T00:00:00Z"),
               device_class("new", "example.com/gpu", "2025-02-01T00:00:00Z"),
               device_class("b-twin", "example.com/tpu"), device_class("a-twin", "example.com/tpu")]
    assert device_class_mapping(classes) == {
        "example.com/gpu": "new", "example.com/tpu": "a-twin",
        "deviceclass.resource.kubernetes.io/old": "old", "deviceclass.resource.kubernetes.io/new": "new",
        "deviceclass.resource.kubernetes.io/a-twin": "a-twin", "deviceclass.resource.kubernetes.io/b-twin": "b-twin"}


def test_quota_counts_a_claim_once_in_each_name_the_pod_does_not_count_already() -> None:
    classes = {"gpu": device_class("gpu", "example.com/gpu")}
    p = pod("train", [container("main", **{"deviceclass.resource.kubernetes.io/gpu": "2"})],
            init=[container("setup", **{"deviceclass.resource.kubernetes.io/gpu": "3"})])
    p["metadata"]["uid"] = "u1"
    objects = {("DeviceClass", ""): classes, ("Pod", "default"): {"train": p}}

    def get(kind: str, namespace: str, name: str) -> Obj | None:
        return objects.get((kind, namespace), {}).get(name)

    claim = {"metadata": {"name": "train-extended-resources-abcde", "namespace": "default",
                          "annotations": {CLAIM_ANNOTATION: "true"},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "train", "uid": "u1",
                                               "controller": True}]}}
    # the pod counts 3 in the implicit name (2 for main, 1 more for setup): the claim's requests
    # for 2 and 1 are its own, so they count only in the explicit name; a third is not
    assert quota_usage(claim, [("gpu", 2), ("gpu", 1), ("gpu", 4)], get) == {
        "requests.example.com/gpu": 7, "requests.deviceclass.resource.kubernetes.io/gpu": 4}
    # a claim of the user's (or one whose pod is gone) counts in both
    claim["metadata"]["ownerReferences"][0]["uid"] = "other"
    assert quota_usage(claim, [("gpu", 2)], get) == {
        "requests.example.com/gpu": 2, "requests.deviceclass.resource.kubernetes.io/gpu": 2}


def test_fit_judges_published_nodes_and_leaves_the_others_to_dra_node_by_node() -> None:
    busy = pod("busy", [container("c", **{"example.com/gpu": "1"})])
    busy["spec"]["nodeName"] = "plugin-full"
    cluster = run([device_class("gpu", "example.com/gpu"), node("plugin-zero", **{"example.com/gpu": "0"}),
                   node("plugin-full", **{"example.com/gpu": "1"}), node("dra-empty"), busy,
                   pod("a", [container("c", **{"example.com/gpu": "1"})])])
    a = cluster.store.get("Pod", "default", "a")
    assert not a["spec"].get("nodeName")
    message = a["status"]["conditions"][0]["message"]
    assert message.startswith("0/3 nodes are available: 1 cannot allocate all claims, 2 Insufficient example.com/gpu.")
    # preemption could only help where the device plugin's GPU is taken
    assert message.endswith("preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
                            "2 Preemption is not helpful for scheduling.")
