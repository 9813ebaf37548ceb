"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection with a LeaseLock.

Candidates never trust the timestamps in the Lease (another machine's clock wrote them): a lease
counts as expired once its record has not changed for `leaseDurationSeconds` of *this* process's
monotonic clock, measured from when this candidate saw it change. Writes carry the resourceVersion
last read, so of two candidates racing for an expired lease the API server lets exactly one win
(the other gets 409 Conflict and tries again a retry period later).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2  # client-go's: acquire retries wait retryPeriod * [1, 2.2)
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
# What a failed request raises: an error status, or the connection failing underneath it.
_REQUEST_ERRORS = (client.ApiException, urllib3.exceptions.HTTPError, OSError, ValueError)


def _micro_time() -> str:
    """Now as a metav1.MicroTime (RFC 3339, microseconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Record:
    """The election state a Lease's spec holds (client-go's LeaderElectionRecord)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Record:
        return cls(spec.get("holderIdentity") or "", int(spec.get("leaseDurationSeconds") or 0),
                   spec.get("acquireTime"), spec.get("renewTime"), int(spec.get("leaseTransitions") or 0))

    def to_spec(self) -> dict[str, Any]:
        return {"holderIdentity": self.holder_identity, "leaseDurationSeconds": self.lease_duration_seconds,
                "acquireTime": self.acquire_time, "renewTime": self.renew_time,
                "leaseTransitions": self.leader_transitions}


class LeaderElector:
    """One candidate for the Lease `namespace/name`.

    `run` blocks (give it its own thread): it retries acquiring every retry period (jittered) until
    it leads or `stop` is set; while leading it renews every retry period and gives leadership up
    when renewals keep failing for `renew_deadline`. Leading is never resumed within one `run`: as
    with kube-scheduler, a lost lease ends the term and the process is expected to exit.
    """

    def __init__(self, api_client: client.ApiClient, namespace: str, name: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 release_on_cancel: bool = True) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if lease_duration < 1:
            # The Lease stores whole seconds and the API server refuses zero.
            raise ValueError("leaseDuration must be at least one second")
        if retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")
        if not identity:
            raise ValueError("Lock identity is empty")
        self.api_client = api_client
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.release_on_cancel = release_on_cancel
        self._mutex = threading.Lock()
        self._observed = Record()
        self._observed_at = 0.0  # monotonic time the observed record last changed
        self._reported_leader = ""
        self._lease: dict[str, Any] | None = None  # last Lease read or written: its resourceVersion
        self._leading = False

    @property
    def description(self) -> str:
        return f"{self.namespace}/{self.name}"

    # ---- the public surface

    def run(self, on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None],
            stop: threading.Event) -> None:
        """Campaign, lead, and return when `stop` is set or the lease is lost.

        `on_started_leading` runs in a thread of its own (client-go starts it in a goroutine), so it
        may block for the whole term. `on_stopped_leading` is called once as `run` returns, whether
        or not this candidate ever led, as client-go's Run defers it; `stop.is_set()` tells a
        requested stop from a lost lease.
        """
        try:
            if not self._acquire(stop):
                return
            self._leading = True
            threading.Thread(target=on_started_leading, name=f"leading-{self.name}", daemon=True).start()
            self._renew(stop)
        finally:
            self._leading = False
            on_stopped_leading()

    def is_leader(self) -> bool:
        """Whether this candidate is leading now (acquired, and not yet given up or stopped)."""
        return self._leading and self._observed_is_me()

    def get_leader(self) -> str:
        """The holder this candidate last observed ('' when none or after a release)."""
        with self._mutex:
            return self._observed.holder_identity

    def healthy(self, max_tolerable_expired: float = 20.0) -> bool:
        """False while this candidate believes it leads but has not renewed for a lease duration
        plus `max_tolerable_expired` (a wedged renew loop); kube-scheduler feeds this to /healthz
        with 20 seconds."""
        if not self.is_leader():
            return True
        with self._mutex:
            return time.monotonic() - self._observed_at <= self.lease_duration + max_tolerable_expired

    # ---- the loops

    def _acquire(self, stop: threading.Event) -> bool:
        log.info("attempting to acquire leader lease %s...", self.description)
        while not stop.is_set():
            succeeded = self._try_acquire_or_renew(self.renew_deadline)
            self._report_transition()
            if succeeded:
                log.info("successfully acquired lease %s", self.description)
                return True
            log.debug("failed to acquire lease %s", self.description)
            stop.wait(self.retry_period * (1 + random.random() * JITTER_FACTOR))
        return False

    def _renew(self, stop: threading.Event) -> None:
        while not stop.is_set():
            renewed = self._renew_within(time.monotonic() + self.renew_deadline, stop)
            self._report_transition()
            if stop.is_set():
                break
            if not renewed:
                log.info("failed to renew lease %s: timed out waiting for the condition", self.description)
                break
            stop.wait(self.retry_period)
        self._leading = False
        if self.release_on_cancel:
            self._release()

    def _renew_within(self, deadline: float, stop: threading.Event) -> bool:
        """Try at once, then every retry period, until a renewal succeeds or the deadline passes."""
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._try_acquire_or_renew(remaining):
                return True
            stop.wait(min(self.retry_period, max(0.0, deadline - time.monotonic())))
        return False

    # ---- one attempt

    def _try_acquire_or_renew(self, timeout: float) -> bool:
        now = _micro_time()
        desired = Record(self.identity, int(self.lease_duration), now, now)

        # The leader's fast path: write over the Lease it last saw, assuming nobody else touched it.
        if self._observed_is_me() and self._lease_valid():
            with self._mutex:
                mine = replace(desired, acquire_time=self._observed.acquire_time,
                               leader_transitions=self._observed.leader_transitions)
            try:
                self._update(mine, timeout)
                self._set_observed(mine)
                return True
            except _REQUEST_ERRORS as e:
                log.error("Failed to update lock optimistically: %s, falling back to slow path", _why(e))

        try:
            current = self._get(timeout)
        except _REQUEST_ERRORS as e:
            if not (isinstance(e, client.ApiException) and e.status == 404):
                log.error("error retrieving resource lock %s: %s", self.description, _why(e))
                return False
            try:
                self._create(desired, timeout)
            except _REQUEST_ERRORS as e:
                log.error("error initially creating leader election record: %s", _why(e))
                return False
            self._set_observed(desired)
            return True

        old = Record.from_spec(current.get("spec") or {})
        with self._mutex:
            changed = old != self._observed
        if changed:
            self._set_observed(old)
        if old.holder_identity and self._lease_valid() and not self._observed_is_me():
            log.debug("lock is held by %s and has not yet expired", old.holder_identity)
            return False

        if self._observed_is_me():
            record = replace(desired, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
        else:
            record = replace(desired, leader_transitions=old.leader_transitions + 1)
        try:
            self._update(record, timeout)
        except _REQUEST_ERRORS as e:
            log.error("Failed to update lock: %s", _why(e))
            return False
        self._set_observed(record)
        return True

    def _release(self) -> bool:
        """Hand the lease back: no holder, one-second duration, so a candidate takes it at its next try."""
        if not self._observed_is_me():
            return True
        now = _micro_time()
        with self._mutex:
            record = Record("", 1, now, now, self._observed.leader_transitions)
        try:
            self._update(record, self.renew_deadline)
        except _REQUEST_ERRORS as e:
            log.error("Failed to release lock: %s", _why(e))
            return False
        self._set_observed(record)
        return True

    # ---- observed state

    def _set_observed(self, record: Record) -> None:
        with self._mutex:
            self._observed = record
            self._observed_at = time.monotonic()

    def _observed_is_me(self) -> bool:
        with self._mutex:
            return self._observed.holder_identity == self.identity

    def _lease_valid(self) -> bool:
        with self._mutex:
            return self._observed_at + self._observed.lease_duration_seconds > time.monotonic()

    def _report_transition(self) -> None:
        holder = self.get_leader()
        if holder != self._reported_leader:
            self._reported_leader = holder
            log.info("new leader of %s observed: %s", self.description, holder or "(none)")

    # ---- the LeaseLock: raw JSON over the official client's REST layer

    def _request(self, method: str, path: str, body: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        method, url, headers, data, _ = self.api_client.param_serialize(
            method, path, header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body, auth_settings=["BearerToken"])
        answer = self.api_client.call_api(method, url, header_params=headers, body=data,
                                          _request_timeout=max(timeout, 0.001))
        raw = answer.read()
        if not 200 <= answer.status < 300:
            raise client.ApiException(status=answer.status, reason=answer.reason, body=raw)
        return json.loads(raw)

    def _get(self, timeout: float) -> dict[str, Any]:
        self._lease = self._request("GET", f"{LEASES.format(namespace=self.namespace)}/{self.name}", None, timeout)
        return self._lease

    def _create(self, record: Record, timeout: float) -> None:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace}, "spec": record.to_spec()}
        self._lease = self._request("POST", LEASES.format(namespace=self.namespace), body, timeout)

    def _update(self, record: Record, timeout: float) -> None:
        if self._lease is None:
            raise ValueError("lease not initialized, call get or create first")
        body = {**self._lease, "spec": record.to_spec()}
        self._lease = self._request("PUT", f"{LEASES.format(namespace=self.namespace)}/{self.name}", body, timeout)


def _why(e: Exception) -> str:
    """A failed request in one line: the Status message when the server sent one."""
    if isinstance(e, client.ApiException):
        try:
            return json.loads(e.body or b"{}").get("message") or f"HTTP {e.status}"
        except ValueError:
            return f"HTTP {e.status}: {e.reason}"
    return f"{type(e).__name__}: {e}"
