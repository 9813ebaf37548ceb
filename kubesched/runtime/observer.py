"""The observer components report to: what they did that no object in the store records.

Results are told, never pulled out of a component's internals after the run: the scheduler tells
of each preemption (its candidates and criterion live only in the scheduler), the Eviction API of
each request and its answer (including the budget that refused it), kubectl of each drain, the
kubelet of the signal and threshold behind a node-pressure eviction, the descheduler of each pass.
A component keeps no log for others to read; the composition root hands every component the same
observer (simulation's results recorder; serve and live give theirs, or NULL_OBSERVER).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Observer(Protocol):
    """What components report. Records are passed as they are made; a drain and a descheduler
    pass are live records their component keeps updating until they end."""

    def preempted(self, record: Mapping[str, Any]) -> None:
        """A scheduler chose victims for a preemptor: time, preemptor, priority, node, decidedBy,
        victims, reprieved."""

    def eviction(self, record: Mapping[str, Any]) -> None:
        """An Eviction API request with its answer: time, pod, uid, requester, code, reason,
        message, causes, pdb (the budget that admitted or refused it), dryRun. Told before an
        accepted eviction deletes the pod, so a watcher of the deletion knows who asked."""

    def pressure_evicted(self, uid: str, record: Mapping[str, Any]) -> None:
        """A kubelet evicts the pod with `uid` under node pressure or over its storage limits:
        node, time, pod, signal and (for a threshold) threshold, available, hard; or message.
        Told before the pod fails, for the same reason."""

    # A drain (kubesched.kubectl.drain.Drain) and a descheduler pass
    # (kubesched.descheduler.descheduler.PassRecord) are types of layers above this one.
    def drain_started(self, drain: Any) -> None:
        """kubectl drain began on a node; the record is updated as the drain goes on."""

    def descheduler_pass(self, record: Any) -> None:
        """The descheduler ran a pass: when, over how many nodes, its attempts and errors."""


class NullObserver:
    """Keeps nothing: for a cluster whose results nobody reads (serve, live, benchmarks)."""

    def preempted(self, record: Mapping[str, Any]) -> None:
        pass

    def eviction(self, record: Mapping[str, Any]) -> None:
        pass

    def pressure_evicted(self, uid: str, record: Mapping[str, Any]) -> None:
        pass

    def drain_started(self, drain: Any) -> None:
        pass

    def descheduler_pass(self, record: Any) -> None:
        pass


NULL_OBSERVER: Observer = NullObserver()
