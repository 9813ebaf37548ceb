"""Invariants of Dynamic Resource Allocation over random clusters: nodes publishing GPUs and NICs,
pods asking through templates (counts, All, prioritized lists) and shared claims, some pods
deleted part way. Whatever happens, a device is never held by two claims, a running pod's claims
are allocated where it runs and reserved for it, a pending pod's own claim holds nothing, and
a pod the scheduler could not place left a message that says why."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.dra.claims import POD_CLAIM_NAME_ANNOTATION, allocation, owning_pod, reserved_for
from kubesched.api.selectors import NodeSelector
from kubesched.cluster.cluster import Cluster

Obj = dict[str, Any]
PROPS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DRIVERS = {"gpu": "gpu.example.com", "nic": "nic.example.com"}
TEMPLATES: dict[str, list[Obj]] = {
    "one": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}],
    "two": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}],
    "gpu-nic": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}},
                {"name": "nic", "exactly": {"deviceClassName": "nic"}}],
    "all-nics": [{"name": "nic", "exactly": {"deviceClassName": "nic", "allocationMode": "All"}}],
    "big-or-any": [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu", "count": 2,
         "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].index >= 2"}}]},
        {"name": "any", "deviceClassName": "gpu"}]}],
}


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2)), min_size=1, max_size=4))
    pods = draw(st.lists(st.tuples(st.sampled_from([*TEMPLATES, "shared"]), st.integers(0, 2), st.booleans()),
                         min_size=1, max_size=10))
    return {"nodes": nodes, "pods": pods}


def objects(c: dict[str, Any]) -> list[Obj]:
    out: list[Obj] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": cls},
                       "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]}}
                      for cls, driver in DRIVERS.items()]
    for name, requests in TEMPLATES.items():
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"spec": {"devices": {"requests": requests}}}})
    out += [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{i}"},
             "value": i * 100} for i in range(3)]
    out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "shared", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}]}}})
    for i, (gpus, nics) in enumerate(c["nodes"]):
        node = f"n{i}"
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
                    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}})
        for cls, count in (("gpu", gpus), ("nic", nics)):
            if count:
                out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                            "metadata": {"name": f"{node}-{cls}"},
                            "spec": {"driver": DRIVERS[cls], "nodeName": node,
                                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                     "devices": [{"name": f"{cls}-{d}", "attributes": {"index": {"int": d}}}
                                                 for d in range(count)]}})
    return out


def pod(i: int, how: str, priority: int) -> Obj:
    ref = {"name": "c", "resourceClaimName": "shared"} if how == "shared" else \
        {"name": "c", "resourceClaimTemplateName": how}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
            "spec": {"priorityClassName": f"p{priority}", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "100m"}}}],
                     "resourceClaims": [ref]}}


@PROPS
@given(clusters())
def test_devices_are_never_held_twice_and_running_pods_hold_theirs(c: dict[str, Any]) -> None:
    cluster = Cluster()
    for obj in objects(c):
        cluster.create(obj)
    for i, (how, priority, deleted) in enumerate(c["pods"]):
        cluster.create(pod(i, how, priority))
        if deleted:
            cluster.clock.call_at(30, lambda i=i: cluster.api.delete("Pod", "default", f"p{i}"))
    cluster.run(until=120)
    assert not cluster.recorder.rejected
    nodes = {n["metadata"]["name"]: n for n in cluster.store.list("Node")}
    held: dict[tuple[str, str, str], str] = {}
    for claim in cluster.store.list("ResourceClaim"):
        name = claim["metadata"]["name"]
        for r in ((allocation(claim) or {}).get("devices") or {}).get("results") or ():
            device = (r["driver"], r["pool"], r["device"])
            assert device not in held, f"{device} held by {held.get(device)} and {name}"
            held[device] = name
    for p in cluster.store.list("Pod"):
        meta = p["metadata"]
        mine = [cl for cl in cluster.store.list("ResourceClaim")
                if owning_pod(cl)[1] == meta["uid"] and (cl["metadata"].get("annotations") or {}).get(
                    POD_CLAIM_NAME_ANNOTATION)]
        node = p["spec"].get("nodeName")
        claims = mine or ([cluster.store.get("ResourceClaim", "default", "shared")]
                          if p["spec"]["resourceClaims"][0].get("resourceClaimName") else [])
        if node:
            assert claims, f"{meta['name']} runs without its claim"
            for cl in claims:
                alloc = allocation(cl)
                assert alloc is not None, f"{meta['name']} runs on {node} with {cl['metadata']['name']} unallocated"
                assert meta["uid"] in {r.get("uid") for r in reserved_for(cl)}
                selector = NodeSelector.compile(alloc["nodeSelector"])
                assert selector.matches(nodes[node]["metadata"].get("labels") or {}, node)
        else:
            for cl in mine:
                assert allocation(cl) is None, f"pending {meta['name']} holds {cl['metadata']['name']}"
            conditions = {x["type"]: x for x in (p.get("status") or {}).get("conditions") or ()}
            if "PodScheduled" in conditions:
                assert conditions["PodScheduled"]["message"].startswith(f"0/{len(nodes)} nodes are available")
