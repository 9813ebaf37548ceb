"""DynamicResources, as far as pods without resource claims see it.

v1.35 always runs the DRA plugin. Resource claims are not simulated, so every pod is claim-less
and the plugin's visible effects are its PreFilter (which records that the pod has no claims and
skips the rest of the cycle) and its PostFilter verdict, which comes before DefaultPreemption's in
every FailedScheduling message. When a PreFilter plugin ahead of it rejected the pod as
UnschedulableAndUnresolvable its PreFilter never ran, so its PostFilter finds no state and fails
with the cycle state's "not found", which ends the PostFilter phase (no preemption is tried).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.scheduler.framework import (
    CycleState,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.scheduler.types import SKIP, Code, NodeInfo, PodInfo, Status

NAME = "DynamicResources"
STATE_KEY = "DynamicResources"  # the claims PreFilter found: none, here
NOT_FOUND = "not found"  # framework.ErrNotFound, reading a key PreFilter never wrote


class DynamicResources(PreFilterPlugin, PostFilterPlugin):
    name = NAME
    _nothing = Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",), NAME)
    _no_state = Status(Code.ERROR, (NOT_FOUND,), NAME)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        state[STATE_KEY] = ()
        return None, SKIP

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
                    ) -> tuple[PostFilterResult | None, Status]:
        if STATE_KEY not in state:
            return None, self._no_state
        return None, self._nothing
