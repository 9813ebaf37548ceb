"""Zone-interleaved node order (backend/cache/node_tree.go).

The scheduler walks nodes zone by zone — first node of each zone, then the second of each —
so that a partial scan (percentageOfNodesToScore) still sees every zone. Zones keep the order
in which their first node arrived; nodes keep arrival order within a zone.
"""

from __future__ import annotations

from kubesched.api.objects import Obj

REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"


def zone_key(node: Obj) -> str:
    """Region and zone joined as upstream's GetZoneKey does; "" when the node has neither."""
    labels = node.get("metadata", {}).get("labels") or {}
    region = labels.get(BETA_REGION_LABEL) or labels.get(REGION_LABEL, "")
    zone = labels.get(BETA_ZONE_LABEL) or labels.get(ZONE_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._zone_of)

    def add(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if name in self._zone_of:
            return
        zone = zone_key(node)
        self._zones.setdefault(zone, []).append(name)
        self._zone_of[name] = zone

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def update(self, old: Obj, new: Obj) -> bool:
        """Move the node if its zone changed; returns whether the order changed."""
        if zone_key(old) == zone_key(new):
            return False
        self.remove(old["metadata"]["name"])
        self.add(new)
        return True

    def ordered(self) -> list[str]:
        zones = list(self._zones.values())
        out: list[str] = []
        depth = 0
        while len(out) < len(self._zone_of):
            for names in zones:
                if depth < len(names):
                    out.append(names[depth])
            depth += 1
        return out
