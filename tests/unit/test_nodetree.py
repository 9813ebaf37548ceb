"""Zone-interleaved node order (backend/cache/node_tree.go, component-helpers GetZoneKey)."""

from __future__ import annotations

from typing import Any

from kubesched.api.nodetree import NodeTree, zone_key
from kubesched.scheduler.cache import Cache

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def node(name: str, zone: str | None = None, region: str | None = None, **labels: str) -> dict[str, Any]:
    all_labels = dict(labels)
    if zone is not None:
        all_labels[ZONE] = zone
    if region is not None:
        all_labels[REGION] = region
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": all_labels},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}}}


def tree_of(*nodes: dict[str, Any]) -> NodeTree:
    tree = NodeTree()
    for n in nodes:
        tree.add(n)
    return tree


def test_the_documented_two_zone_example() -> None:
    # kubernetes.io docs: zone 1 has nodes 1-4, zone 2 nodes 5-6 -> 1, 5, 2, 6, 3, 4.
    tree = tree_of(*(node(f"node-{i}", "zone-1") for i in range(1, 5)),
                   *(node(f"node-{i}", "zone-2") for i in range(5, 7)))
    assert tree.ordered() == ["node-1", "node-5", "node-2", "node-6", "node-3", "node-4"]
    assert len(tree) == 6


def test_arrival_order_of_zones_and_of_nodes_within_a_zone_decides() -> None:
    tree = tree_of(node("b1", "b"), node("a1", "a"), node("b2", "b"), node("c1", "c"), node("a2", "a"),
                   node("a3", "a"))
    assert tree.ordered() == ["b1", "a1", "c1", "b2", "a2", "a3"]


def test_nodes_without_zone_labels_share_one_zone() -> None:
    tree = tree_of(node("x"), node("z1", "z"), node("y"), node("z2", "z"))
    assert tree.ordered() == ["x", "z1", "y", "z2"]


def test_adding_a_node_twice_is_ignored() -> None:
    tree = tree_of(node("a", "z1"), node("a", "z2"), node("b", "z1"))
    assert tree.ordered() == ["a", "b"]
    assert len(tree) == 2


def test_removal_keeps_the_rest_in_order_and_an_emptied_zone_disappears() -> None:
    tree = tree_of(*(node(f"node-{i}", "zone-1") for i in range(1, 5)),
                   *(node(f"node-{i}", "zone-2") for i in range(5, 7)))
    tree.remove("node-5")
    assert tree.ordered() == ["node-1", "node-6", "node-2", "node-3", "node-4"]
    tree.remove("node-6")
    assert tree.ordered() == ["node-1", "node-2", "node-3", "node-4"]
    tree.add(node("node-7", "zone-2"))  # zone-2 is new again: it now comes after zone-1
    tree.add(node("node-8", "zone-0"))
    assert tree.ordered() == ["node-1", "node-7", "node-8", "node-2", "node-3", "node-4"]
    tree.remove("missing")  # harmless
    assert len(tree) == 6


def test_a_zone_change_moves_the_node_to_the_end_of_its_new_zone() -> None:
    tree = tree_of(node("a1", "a"), node("b1", "b"), node("a2", "a"), node("b2", "b"))
    assert tree.update(node("a1", "a"), node("a1", "b"))
    assert tree.ordered() == ["a2", "b1", "b2", "a1"]
    assert not tree.update(node("a2", "a", team="x"), node("a2", "a", team="y"))  # same zone: nothing


def test_zone_key_combines_region_and_zone() -> None:
    assert zone_key(node("n")) == ""
    assert zone_key(node("n", zone="z")) == ":\x00:z"
    assert zone_key(node("n", region="r")) == "r:\x00:"
    assert zone_key(node("n", zone="z", region="r")) == "r:\x00:z"


def test_the_same_zone_name_in_two_regions_is_two_zones() -> None:
    tree = tree_of(node("r1-a", "z", "r1"), node("r1-b", "z", "r1"), node("r2-a", "z", "r2"))
    assert tree.ordered() == ["r1-a", "r2-a", "r1-b"]


def test_zone_key_prefers_the_deprecated_beta_labels() -> None:
    beta = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "labels": {BETA_ZONE: "old", BETA_REGION: "r", ZONE: "new"}}}
    assert zone_key(beta) == "r:\x00:old"
    only_beta = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "m", "labels": {BETA_ZONE: "z"}}}
    assert zone_key(only_beta) == ":\x00:z"


# --- the cache's iteration order (snapshot nodeInfoList) ------------------------------------------

def cache_order(cache: Cache) -> list[str]:
    nodes, slots = cache.ordered()
    assert [n.slot for n in nodes] == slots.tolist()
    return [n.name for n in nodes]


def test_cache_iterates_in_node_tree_order() -> None:
    cache = Cache()
    for n in (node("a1", "a"), node("b1", "b"), node("a2", "a"), node("b2", "b"), node("a3", "a")):
        cache.add_node(n)
    assert cache_order(cache) == ["a1", "b1", "a2", "b2", "a3"]
    cache.remove_node("b1")
    assert cache_order(cache) == ["a1", "b2", "a2", "a3"]


def test_a_zone_label_change_alone_does_not_reorder_the_snapshot() -> None:
    cache = Cache()
    for n in (node("a1", "a"), node("b1", "b"), node("a2", "a")):
        cache.add_node(n)
    assert cache_order(cache) == ["a1", "b1", "a2"]
    cache.update_node(node("a1", "b"))
    assert cache_order(cache) == ["a1", "b1", "a2"]
    cache.add_node(node("c1", "c"))  # now the list is rebuilt from the tree: a:[a2] b:[b1 a1] c:[c1]
    assert cache_order(cache) == ["a2", "b1", "c1", "a1"]
