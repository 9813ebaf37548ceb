"""SchedulingGates: a pod with spec.schedulingGates is held out of the active queue (PreEnqueue)."""

from __future__ import annotations

from kubesched.scheduler.framework import PreEnqueuePlugin
from kubesched.scheduler.types import SUCCESS, Code, PodInfo, Status


class SchedulingGates(PreEnqueuePlugin):
    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.obj.get("spec", {}).get("schedulingGates") or []
        if not gates:
            return SUCCESS
        names = [g.get("name") for g in gates]
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      (f"waiting for scheduling gates: [{' '.join(names)}]",), self.name)
