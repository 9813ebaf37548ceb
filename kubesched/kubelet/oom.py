"""The kernel OOM killer, as the kubelet's oom_score_adj steers it.

Memory usage can outrun the eviction manager's 10 s look: when a cgroup's limit is exceeded the
kernel kills at once. Three limits are modelled: a container's own memory limit (and a pod-level
one) kills in that container or pod; the pods' cgroup (kubepods: allocatable plus the hard memory
threshold) and the node's capacity kill the container with the highest oom_score among all pods.

oom_score = usage share of the cgroup's memory x 1000 + oom_score_adj, where the kubelet sets the
adjustment by QoS (pkg/kubelet/qos/policy.go): Guaranteed and system-node-critical -997, BestEffort
1000, Burstable 1000 - 1000 x request / machine memory, kept between 3 (= 1000 - 997: above any
Guaranteed container) and 999 (below BestEffort). Sidecars get no more than the pod's smallest
regular container would. Equal scores: the kernel keeps the last process it scans, here the
newest container.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.qos import BEST_EFFORT, GUARANTEED
from kubesched.kubelet.usage import ContainerUsage, PodUsage

GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000
SYSTEM_NODE_CRITICAL = "system-node-critical"


def _burstable_adj(request: int, memory_capacity: int) -> int:
    return 1000 - (1000 * request) // memory_capacity


def oom_score_adj(pod: PodUsage, container: ContainerUsage, memory_capacity: int) -> int:
    """GetContainerOOMScoreAdjust."""
    if pod.critical and pod.priority_class == SYSTEM_NODE_CRITICAL:
        return GUARANTEED_OOM_SCORE_ADJ
    if pod.qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if pod.qos == BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    extra = 0
    if pod.pod_memory_request is not None:  # pod-level requests: the unassigned part is shared out
        assigned = sum(c.request_amounts.get("memory", 0) for c in pod.containers)
        extra = max(pod.pod_memory_request - assigned, 0) // len(pod.containers)
    adj = _burstable_adj(container.request_amounts.get("memory", 0) + extra, memory_capacity)
    if container.sidecar:
        smallest = min((c.request_amounts.get("memory", 0) for c in pod.containers if not c.sidecar), default=0)
        adj = min(adj, _burstable_adj(smallest + extra, memory_capacity))
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    return adj - 1 if adj == BEST_EFFORT_OOM_SCORE_ADJ else adj


def victim(pods: Iterable[PodUsage], cgroup_limit: int, memory_capacity: int) -> tuple[PodUsage, ContainerUsage] | None:
    """The container the OOM killer picks in a cgroup of `cgroup_limit` bytes: the highest
    usage x 1000 / limit + adjustment, compared exactly; only containers holding memory can free it."""
    best, best_key = None, None
    for pod in pods:
        for i, c in enumerate(pod.containers):
            used = c.usage.get("memory", 0)
            if used <= 0:
                continue
            key = (used * 1000 + oom_score_adj(pod, c, memory_capacity) * cgroup_limit, pod.seq, i)
            if best_key is None or key > best_key:
                best, best_key = (pod, c), key
    return best
