"""Gang scheduling as an out-of-tree kubesched plugin (the Permit extension point's classic use).

Pods labelled `pod-group.scheduling.example/name: <group>` with the annotation
`pod-group.scheduling.example/min-available: "<n>"` are held at Permit until n pods of the group
have been placed, then all are bound together; if the group is not complete within the timeout,
every waiting member is rejected and retried later.

Enable it in a KubeSchedulerConfiguration by file path (or as `module:Gang` if importable):

    profiles:
    - schedulerName: default-scheduler
      plugins:
        permit:
          enabled: [{name: "examples/plugins/gang.py:Gang"}]
      pluginConfig:
      - name: Gang
        args: {timeoutSeconds: 30}
"""

from __future__ import annotations

from kubesched.scheduler.framework import CycleState, PermitPlugin
from kubesched.scheduler.types import SUCCESS, Code, PodInfo, Status

GROUP_LABEL = "pod-group.scheduling.example/name"
MIN_AVAILABLE = "pod-group.scheduling.example/min-available"


class Gang(PermitPlugin):
    name = "Gang"

    def _group(self, pod: PodInfo) -> tuple[str, int] | None:
        """(group, pods needed); needed is 0 when the annotation is not a positive integer."""
        group = pod.labels.get(GROUP_LABEL)
        if not group:
            return None
        raw = (pod.obj["metadata"].get("annotations") or {}).get(MIN_AVAILABLE, "1")
        need = int(raw) if raw.isdigit() else 0
        return f"{pod.namespace}/{group}", need

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        group = self._group(pod)
        if group is None:
            return SUCCESS, 0
        key, need = group
        if need < 1:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          (f"annotation {MIN_AVAILABLE} must be a positive integer",), self.name), 0
        waiting = [wp for wp in self.handle.waiting_pods.values() if self._group(wp.pod) == group]
        bound = sum(1 for ni in self.handle.cache.nodes.values() for p in ni.pods.values()
                    if p.uid != pod.uid and self._group(p) == group
                    and p.uid not in self.handle.waiting_pods)
        if bound + len(waiting) + 1 >= need:
            for wp in waiting:  # this pod completes the gang: release everyone
                wp.allow(self.name)
            return SUCCESS, 0
        return Status(Code.WAIT, (f"waiting for {need} pods of group {key}",), self.name), float(
            self.args.get("timeoutSeconds", 30))
