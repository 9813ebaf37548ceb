"""ImageLocality: prefer nodes that already hold the pod's images, weighted by how widespread they are.

An image's size is the cluster's one figure for it (the first node to report the image), not
each node's own, and its spread is the number of nodes the snapshot counted (cache.ordered)."""

from __future__ import annotations

import numpy as np

from kubesched.scheduler.cache import NodeTable
from kubesched.scheduler.framework import MAX_NODE_SCORE, CycleState, ScorePlugin
from kubesched.scheduler.types import NodeInfo, PodInfo

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add the implicit `:latest` tag; registries and digests are left as written (as upstream does)."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


class ImageLocality(ScorePlugin):
    name = "ImageLocality"
    normalized_in_range = True  # sizes clamped to the thresholds, then scaled between them

    def _images(self, pod: PodInfo) -> list[str]:
        cached = pod.extra.get(self.name)
        if cached is None:
            cached = pod.extra[self.name] = [normalized_image_name(i) for i in pod.images]
        return cached

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        total_nodes = len(self.handle.cache.nodes)
        total = 0
        for image in self._images(pod):
            state = node.image_states.get(image)
            if state is not None:
                size, num_nodes = state
                total += int(float(size) * (float(num_nodes) / float(total_nodes)))
        containers = len(pod.obj["spec"].get("initContainers") or ()) + len(pod.obj["spec"].get("containers") or ())
        max_threshold = MAX_CONTAINER_THRESHOLD * containers
        total = min(max(total, MIN_THRESHOLD), max_threshold)
        return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)

    def uniform(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not self._anywhere(pod)

    def _anywhere(self, pod: PodInfo) -> bool:
        """Whether some node has one of the pod's images: if not, every node scores 0."""
        states = self.handle.cache.image_states
        return bool(states) and any(image in states for image in self._images(pod))

    def score_many(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], slots: np.ndarray,
                   table: NodeTable) -> np.ndarray | None:
        if not self._anywhere(pod):
            return np.zeros(len(nodes), dtype=np.int64)
        return None
