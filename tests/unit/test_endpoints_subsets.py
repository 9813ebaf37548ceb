"""How the Endpoints controller lays out a Service's addresses: RepackSubsets' grouping and the
1000-address cap, as kube-controller-manager's endpoint controller writes them."""

from __future__ import annotations

from kubesched.controllers.endpoints import MAX_CAPACITY, repack, truncate


def _address(i: int) -> dict:
    return {"ip": f"10.0.{i // 250}.{i % 250}", "nodeName": "n1",
            "targetRef": {"kind": "Pod", "namespace": "default", "name": f"p{i}", "uid": f"u{i:05d}"}}


HTTP = {"name": "http", "port": 8080, "protocol": "TCP"}
ADMIN = {"name": "admin", "port": 9000, "protocol": "TCP"}


def test_addresses_offering_the_same_ports_share_a_subset_and_not_ready_wins() -> None:
    a, b, c = _address(2), _address(1), _address(3)
    subsets = repack([(a, True, HTTP), (a, True, ADMIN), (b, True, HTTP), (b, False, ADMIN), (c, True, HTTP)])
    # b is not ready on admin only, so the ports no longer share one set of addresses.
    assert subsets == [
        {"addresses": [a], "notReadyAddresses": [b], "ports": [ADMIN]},
        {"addresses": [b, a, c], "ports": [HTTP]},
    ]
    assert repack([(a, True, None)]) == [{"addresses": [a]}]  # a headless Service without ports


def test_beyond_a_thousand_addresses_ready_ones_are_kept_first() -> None:
    ready = [_address(i) for i in range(900)]
    not_ready = [_address(i) for i in range(900, 1300)]
    subsets = [{"addresses": ready[:600], "notReadyAddresses": not_ready[:100], "ports": [HTTP]},
               {"addresses": ready[600:], "notReadyAddresses": not_ready[100:], "ports": [ADMIN]}]
    assert truncate(subsets)
    assert [len(s["addresses"]) for s in subsets] == [600, 300]  # every ready address stays
    # the 100 places left go to the not-ready ones in proportion: 100*100/400 and 100*300/400
    assert [len(s["notReadyAddresses"]) for s in subsets] == [25, 75]
    assert sum(len(s["addresses"]) + len(s["notReadyAddresses"]) for s in subsets) == MAX_CAPACITY

    many = [{"addresses": [_address(i) for i in range(1200)], "notReadyAddresses": [_address(1500)]}]
    assert truncate(many) and len(many[0]["addresses"]) == MAX_CAPACITY and "notReadyAddresses" not in many[0]
    assert not truncate([{"addresses": ready}])
