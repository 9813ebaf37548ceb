"""DynamicResources, as far as pods without resource claims see it.

v1.35 always runs the DRA plugin. Resource claims are not simulated, so every pod is claim-less
and the plugin's only visible effect is its PostFilter verdict, which comes before
DefaultPreemption's in every FailedScheduling message.
"""

from __future__ import annotations

from kubesched.scheduler.framework import CycleState, PostFilterPlugin, PostFilterResult
from kubesched.scheduler.types import Code, PodInfo, Status

NAME = "DynamicResources"


class DynamicResources(PostFilterPlugin):
    name = NAME
    _nothing = Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",), NAME)

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        return None, self._nothing
