"""Consumable capacity over random clusters (DRAConsumableCapacity on): nodes publishing GPUs that
allow multiple allocations, with and without request policies, beside GPUs that do not; pods
asking for slices of GPU memory through templates, some pods deleted part way so that shares are
given back and given out again. Whatever happens, no shared device's capacity is ever consumed
beyond what it publishes, each share consumes what its policy admits, a device not shared is held
by one claim alone, and a running pod's claim is allocated."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.dra.claims import allocation, reserved_for
from kubesched.api.features import FeatureGates
from kubesched.api.quantity import parse_quantity
from kubesched.cluster.cluster import Cluster

Obj = dict[str, Any]
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GATES = FeatureGates({"DRAConsumableCapacity": True})
POLICIES: list[Obj | None] = [
    None,
    {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}},
    {"default": "8Gi", "validRange": {"min": "4Gi", "max": "24Gi", "step": "4Gi"}},
    {"default": "16Gi", "validValues": ["8Gi", "16Gi", "32Gi"]},
]
ASKS = [None, "1Gi", "5Gi", "10Gi", "12Gi", "20Gi", "33Gi"]


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.sampled_from(range(len(POLICIES)))),
                          min_size=1, max_size=3))
    pods = draw(st.lists(st.tuples(st.sampled_from(range(len(ASKS))), st.integers(1, 2), st.booleans()),
                         min_size=1, max_size=12))
    return {"nodes": nodes, "pods": pods}


def objects(c: dict[str, Any]) -> list[Obj]:
    out: list[Obj] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                       "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}]
    for i, ask in enumerate(ASKS):
        for count in (1, 2):
            exactly: Obj = {"deviceClassName": "gpu", "count": count}
            if ask is not None:
                exactly["capacity"] = {"requests": {"memory": ask}}
            out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": f"ask{i}-{count}", "namespace": "default"},
                        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}})
    for n, (shared, whole, policy) in enumerate(c["nodes"]):
        node = f"n{n}"
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
                    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}})
        memory: Obj = {"value": "40Gi"}
        if POLICIES[policy] is not None:
            memory["requestPolicy"] = POLICIES[policy]
        devices = [{"name": f"shared-{d}", "allowMultipleAllocations": True, "capacity": {"memory": memory}}
                   for d in range(shared)]
        devices += [{"name": f"whole-{d}", "capacity": {"memory": {"value": "40Gi"}}} for d in range(whole)]
        if devices:
            out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": node},
                        "spec": {"driver": "gpu.example.com", "nodeName": node,
                                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                 "devices": devices}})
    return out


def pod(i: int, ask: int, count: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "100m"}}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": f"ask{ask}-{count}"}]}}


def admitted(amount: Fraction, policy: Obj | None) -> bool:
    if policy is None or amount == parse_quantity(policy["default"]):
        return True
    if "validValues" in policy:
        return amount in {parse_quantity(v) for v in policy["validValues"]}
    valid = policy["validRange"]
    low, step = parse_quantity(valid["min"]), parse_quantity(valid["step"])
    return low <= amount <= parse_quantity(valid.get("max", "40Gi")) and (amount - low) % step == 0


@PROPS
@given(clusters())
def test_shared_devices_are_never_consumed_beyond_their_capacity(c: dict[str, Any]) -> None:
    cluster = Cluster(feature_gates=GATES)
    for obj in objects(c):
        cluster.create(obj)
    for i, (ask, count, deleted) in enumerate(c["pods"]):
        cluster.create(pod(i, ask, count))
        if deleted:
            cluster.clock.call_at(30, lambda i=i: cluster.api.delete("Pod", "default", f"p{i}"))
    cluster.run(until=120)
    assert not cluster.recorder.rejected
    policies = {f"n{n}": POLICIES[policy] for n, (_, _, policy) in enumerate(c["nodes"])}
    consumed: dict[tuple[str, str], Fraction] = {}
    whole: dict[tuple[str, str], str] = {}
    shares: set[str] = set()
    for claim in cluster.store.list("ResourceClaim"):
        name = claim["metadata"]["name"]
        for r in ((allocation(claim) or {}).get("devices") or {}).get("results") or ():
            device = (r["pool"], r["device"])
            if r["device"].startswith("shared-"):
                assert r["shareID"] not in shares
                shares.add(r["shareID"])
                amount = parse_quantity(r["consumedCapacity"]["memory"])
                assert admitted(amount, policies[r["pool"]]), f"{name} consumes {amount} of {device}"
                consumed[device] = consumed.get(device, Fraction(0)) + amount
            else:
                assert "shareID" not in r and device not in whole, f"{device} held by {whole.get(device)} and {name}"
                whole[device] = name
    for device, amount in consumed.items():
        assert amount <= 40 * 2**30, f"{device} consumed {amount / 2**30}Gi of 40Gi"
    claims = {c["metadata"]["name"]: c for c in cluster.store.list("ResourceClaim")}
    for p in cluster.store.list("Pod"):
        if p["spec"].get("nodeName"):
            statuses = (p.get("status") or {}).get("resourceClaimStatuses") or ()
            claim = claims[statuses[0]["resourceClaimName"]]
            assert allocation(claim) is not None
            assert p["metadata"]["uid"] in {r.get("uid") for r in reserved_for(claim)}
