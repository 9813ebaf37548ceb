"""Leader election on a Lease held in a real `kubesched serve`: one leader at a time, a released
lease taken over at the next retry, an abandoned one only once it expires, and a leader that
cannot renew stepping down."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
import yaml
from kubernetes import config

from kubesched.live.leaderelection import JITTER_FACTOR, LeaderElector
from tests.serve.harness import Served, wait_for

LEASE = "kube-scheduler"
DURATION, DEADLINE, RETRY = 2.0, 1.5, 0.3
# The longest a waiting candidate sleeps between two tries.
MAX_RETRY_WAIT = RETRY * (1 + JITTER_FACTOR)


@dataclass
class Candidate:
    """An elector running in its own thread, with what its callbacks saw."""

    elector: LeaderElector
    stop: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    stopped: threading.Event = field(default_factory=threading.Event)
    stopped_on_request: bool | None = None
    thread: threading.Thread | None = None

    def start(self) -> Candidate:
        def on_stopped() -> None:
            self.stopped_on_request = self.stop.is_set()
            self.stopped.set()

        self.thread = threading.Thread(target=self.elector.run, args=(self.started.set, on_stopped, self.stop),
                                       daemon=True)
        self.thread.start()
        return self

    def halt(self) -> None:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()


@pytest.fixture
def candidates(served: Served) -> Iterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(identity: str, release: bool = True) -> Candidate:
        api = config.new_client_from_config(config_file=served.kubeconfig)
        elector = LeaderElector(api, "kube-system", LEASE, identity, lease_duration=DURATION,
                                renew_deadline=DEADLINE, retry_period=RETRY, release_on_cancel=release)
        made.append(Candidate(elector))
        return made[-1]

    yield make
    for c in made:
        c.stop.set()
    for c in made:
        if c.thread is not None:
            c.thread.join(timeout=10)
        c.elector.api_client.close()


class OverlapWatch:
    """Samples the candidates' is_leader() until stopped and remembers any moment two led at once."""

    def __init__(self, *members: Candidate) -> None:
        self.members, self.overlaps, self.done = members, 0, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(0.005):
            if sum(m.elector.is_leader() for m in self.members) > 1:
                self.overlaps += 1

    def finish(self) -> int:
        self.done.set()
        self.thread.join()
        return self.overlaps


def _lease(served: Served) -> dict:
    return yaml.safe_load(served.kubectl("get", "lease", "-n", "kube-system", LEASE, "-o", "yaml"))


def _leader(*members: Candidate) -> Candidate | None:
    leading = [m for m in members if m.elector.is_leader()]
    assert len(leading) <= 1
    return leading[0] if leading else None


def test_one_leader_and_prompt_handover_on_release(served: Served, candidates) -> None:
    a, b = candidates("a"), candidates("b")
    watch = OverlapWatch(a, b)
    a.start(), b.start()  # both race to create the Lease: the API server lets exactly one win
    first = wait_for(lambda: _leader(a, b), timeout=10, what="a leader")
    other = b if first is a else a
    assert first.started.wait(5)

    # The other candidate keeps seeing a live, renewed lease and never takes it.
    time.sleep(DURATION + 2 * RETRY)
    assert not other.elector.is_leader() and not other.started.is_set()
    assert other.elector.get_leader() == first.elector.identity

    spec = _lease(served)["spec"]
    assert spec["holderIdentity"] == first.elector.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] < spec["renewTime"]  # renewed since acquired; the acquire time is kept
    acquired = spec["acquireTime"]
    renewed = spec["renewTime"]
    time.sleep(2 * RETRY)
    spec = _lease(served)["spec"]
    assert spec["acquireTime"] == acquired and spec["renewTime"] > renewed

    # A stop releases the lease (no holder, one second) and the other candidate takes it at its next try.
    released_at = time.monotonic()
    first.halt()
    assert first.stopped.is_set() and first.stopped_on_request
    wait_for(lambda: other.elector.is_leader(), timeout=5, interval=0.01, what="handover")
    assert time.monotonic() - released_at < MAX_RETRY_WAIT + 0.5
    assert other.started.wait(5)
    spec = _lease(served)["spec"]
    assert spec["holderIdentity"] == other.elector.identity and spec["leaseTransitions"] == 1
    assert spec["acquireTime"] > acquired

    # The last leader's release leaves the lease free.
    other.halt()
    spec = _lease(served)["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1 and spec["leaseTransitions"] == 1
    assert watch.finish() == 0


def test_abandoned_lease_is_taken_only_after_it_expires(served: Served, candidates) -> None:
    a = candidates("a", release=False).start()
    wait_for(a.elector.is_leader, timeout=10, what="a leads")
    b = candidates("b").start()
    watch = OverlapWatch(a, b)
    time.sleep(3 * RETRY)
    assert not b.elector.is_leader()

    # Stopping without release is a crash as far as the lease can tell: it keeps naming a.
    gone_at = time.monotonic()
    a.halt()
    assert _lease(served)["spec"]["holderIdentity"] == "a"
    wait_for(b.elector.is_leader, timeout=10, interval=0.01, what="b takes over")
    waited = time.monotonic() - gone_at
    # b waits out a full lease duration from a's last renewal it saw (at most a retry period before the stop).
    assert DURATION - RETRY - 0.2 <= waited <= DURATION + 2 * MAX_RETRY_WAIT + 0.5, waited
    spec = _lease(served)["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert watch.finish() == 0


def test_leader_that_cannot_renew_steps_down(served: Served, candidates) -> None:
    a = candidates("a").start()
    wait_for(a.elector.is_leader, timeout=10, what="a leads")
    assert a.elector.healthy()
    lost_at = time.monotonic()
    served.kill()
    assert a.stopped.wait(DEADLINE + 2 * RETRY + 5)
    held = time.monotonic() - lost_at
    assert held >= DEADLINE - RETRY, held  # kept trying for the renew deadline before giving up
    assert a.stopped_on_request is False and not a.elector.is_leader()
    a.thread.join(timeout=10)
    assert not a.thread.is_alive()  # a lost lease ends run(); the process is expected to exit


def test_rejects_timings_client_go_rejects(served: Served) -> None:
    api = config.new_client_from_config(config_file=served.kubeconfig)
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaderElector(api, "kube-system", LEASE, "a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="renewDeadline must be greater than retryPeriod\\*JitterFactor"):
        LeaderElector(api, "kube-system", LEASE, "a", lease_duration=15, renew_deadline=2.4, retry_period=2)
    with pytest.raises(ValueError, match="Lock identity is empty"):
        LeaderElector(api, "kube-system", LEASE, "")
    api.close()
