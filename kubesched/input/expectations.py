"""The vocabulary of a Scenario's `expect` entries: one class per kind of entry, holding the fields
it may carry and how they are checked when the Scenario loads. How an entry is judged against a run
lives with the run (kubesched.sim.expect, one check per class here, each subclassing it), so the
loader knows every field the check reads and reads no cluster to know it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.validation.checker import (
    NONNEGATIVE_MSG,
    POSITIVE_MSG,
    Checker,
    check_resource_list,
    check_shape,
    check_string_map,
    subpath,
)
from kubesched.api.validation.core import POD_PHASES, PV_PHASES, PVC_PHASES, check_taints

# Fields an `expect` entry may set to null, to check that the pod has no node, nomination or reason.
EXPECT_UNSET = ("nodeName", "nominatedNodeName", "reason", "replacement", "notReplaced", "volumeName", "selectedNode",
                "claim")
DESCHEDULED_RESULTS = ("Evicted", "Refused", "Filtered", "LimitReached", "None")
DRAIN_STATUSES = ("Drained", "Failed", "TimedOut", "InProgress")
CONDITION_STATUSES = ("True", "False", "Unknown")
CONTAINER_CHECKS = {"ready": bool, "started": bool, "restartCount": int}  # a pod entry's `containers: {name: ...}`


def _subject(c: Checker, value: Any, path: str, parts: int) -> None:
    """An expect subject: "namespace/name" for pods, a bare name for nodes."""
    text = c.typed(value, path, str)
    if text is None:
        return
    pieces = text.split("/")
    if len(pieces) != parts or not all(pieces):
        c.invalid(path, text, 'must be "namespace/name"' if parts == 2 else "must be a node name")


def _message_check(c: Checker, entry: dict[str, Any], path: str) -> None:
    c.get(entry, "message", path, str)
    c.get(entry, "messageContains", path, str)
    if entry.get("message") is not None and entry.get("messageContains") is not None:
        c.err(path, "Invalid value: specify message or messageContains, not both")


def _conditions_check(c: Checker, entry: dict[str, Any], path: str) -> None:
    """`conditions: {Type: "True"|"False"|"Unknown"}`."""
    for ctype, status in (c.get(entry, "conditions", path, dict) or {}).items():
        if status not in CONDITION_STATUSES:
            c.unsupported(subpath(subpath(path, "conditions"), ctype), status, CONDITION_STATUSES)


def _event_check(c: Checker, entry: dict[str, Any], path: str) -> None:
    """`event: {reason, message|messageContains}`."""
    event = c.get(entry, "event", path, dict)
    if event is None:
        return
    event_path = subpath(path, "event")
    for key in event:
        if key not in ("reason", "message", "messageContains", "count"):
            c.err(subpath(event_path, key), f'unknown field "{key}" for an event expectation')
    if not event:
        c.required(event_path, "at least one of reason, message, messageContains, count")
    c.get(event, "reason", event_path, str)
    count = c.get(event, "count", event_path, int)
    if count is not None and count < 0:
        c.invalid(subpath(event_path, "count"), count, NONNEGATIVE_MSG)
    _message_check(c, event, event_path)


class Expectation:
    """One kind of `expect` entry, named by its subject key (`pod: ns/name`, `node: name`, ...)."""

    subject: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]  # what the entry may check, besides its subject and `at`

    needs_a_check: ClassVar[bool] = True  # `rejected: Kind/ns/name` alone is a check; a pod alone is not

    def validate(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        """Check the entry's fields (the subject key, `at`, unknown fields and nulls are checked for
        every kind by the Scenario's validation before this)."""
        if self.needs_a_check:
            if not any(key in entry for key in self.fields):
                c.required(path, f"at least one of {', '.join(self.fields)}")
            _conditions_check(c, entry, path)
        self.validate_fields(c, entry, path)

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        raise NotImplementedError


class PodExpectation(Expectation):
    subject = "pod"
    fields = ("nodeName", "phase", "deleted", "reason", "nominatedNodeName", "priority", "event", "score",
              "message", "messageContains", "conditions", "restartCount", "replaced", "containers")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["pod"], subpath(path, "pod"), 2)
        for key in ("nodeName", "nominatedNodeName", "reason"):
            c.get(entry, key, path, str)
        _message_check(c, entry, path)
        c.get(entry, "restartCount", path, int)
        c.get(entry, "replaced", path, bool)
        containers_path = subpath(path, "containers")
        for name, want in (c.get(entry, "containers", path, dict) or {}).items():
            check_shape(c, want, subpath(containers_path, name), CONTAINER_CHECKS)
            for key in want if isinstance(want, dict) else ():
                if key not in CONTAINER_CHECKS:
                    c.err(subpath(subpath(containers_path, name), key), f'unknown field "{key}" for a container expectation')
        c.enum(entry, "phase", path, POD_PHASES)
        c.get(entry, "deleted", path, bool)
        c.get(entry, "priority", path, int, 32)
        _event_check(c, entry, path)
        score = c.get(entry, "score", path, dict)
        if score is not None:
            score_path = subpath(path, "score")
            for key in score:
                if key not in ("node", "plugin", "raw", "normalized", "total"):
                    c.err(subpath(score_path, key), f'unknown field "{key}" for a score expectation')
            if c.get(score, "node", score_path, str) is None:
                c.required(subpath(score_path, "node"), "the node whose score is checked")
            c.get(score, "plugin", score_path, str)
            for key in ("raw", "normalized", "total"):
                c.get(score, key, score_path, int)


class NodeExpectation(Expectation):
    subject = "node"
    fields = ("requested", "allocatable", "unschedulable", "taints", "conditions")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["node"], subpath(path, "node"), 1)
        for key in ("requested", "allocatable"):
            check_resource_list(c, entry.get(key), subpath(path, key))
        c.get(entry, "unschedulable", path, bool)
        check_taints(c, entry.get("taints"), subpath(path, "taints"))


class RejectedExpectation(Expectation):
    subject = "rejected"
    fields = ("message", "messageContains")
    needs_a_check = False

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        text = c.typed(entry["rejected"], subpath(path, "rejected"), str)
        pieces = text.split("/") if text is not None else []
        if text is not None and (len(pieces) not in (2, 3) or not all(pieces)):
            c.invalid(subpath(path, "rejected"), text, 'must be "Kind/namespace/name" or "Kind/name"')
        _message_check(c, entry, path)  # any kind: every kind loads, and a quota may refuse any


class _PodScoped(Expectation):
    """Eviction and budget entries: a "namespace/name" subject and typed fields of their own."""

    strings: ClassVar[tuple[str, ...]] = ("message", "messageContains", "cause", "requester")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry[self.subject], subpath(path, self.subject), 2)
        for key in self.fields:
            if key in self.strings:
                c.get(entry, key, path, str)
            elif key == "disruptedPods":
                for i, item in enumerate(c.get(entry, key, path, list) or []):
                    c.typed(item, f"{path}.{key}[{i}]", str)
            elif key == "event":
                _event_check(c, entry, path)
            elif key != "conditions":
                c.get(entry, key, path, int)
        _message_check(c, entry, path)


class EvictionExpectation(_PodScoped):
    subject = "eviction"
    fields = ("attempt", "code", "message", "messageContains", "cause", "requester")


class PodDisruptionBudgetExpectation(_PodScoped):
    subject = "pdb"
    fields = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods", "disruptedPods",
              "observedGeneration", "conditions", "event")


class DrainExpectation(Expectation):
    subject = "drain"
    fields = ("status", "evicted", "notEvicted", "message", "messageContains")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["drain"], subpath(path, "drain"), 1)
        c.enum(entry, "status", path, DRAIN_STATUSES)
        for key in ("evicted", "notEvicted"):
            for i, item in enumerate(c.get(entry, key, path, list) or []):
                c.typed(item, f"{path}.{key}[{i}]", str)
        _message_check(c, entry, path)


class DescheduledExpectation(Expectation):
    subject = "descheduled"
    fields = ("result", "strategy", "pass", "landing", "fromNode", "message", "messageContains")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["descheduled"], subpath(path, "descheduled"), 2)
        c.enum(entry, "result", path, DESCHEDULED_RESULTS)
        for key in ("strategy", "landing", "fromNode"):
            c.get(entry, key, path, str)
        c.get(entry, "pass", path, int)
        _message_check(c, entry, path)


class DeschedulerPassExpectation(Expectation):
    subject = "deschedulerPass"
    fields = ("evicted", "message", "messageContains")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        c.get(entry, "deschedulerPass", path, int)
        c.get(entry, "evicted", path, int)
        _message_check(c, entry, path)


class _VolumeExpectation(Expectation):
    """Claims ("namespace/name") and volumes (a bare name) share their checks."""

    parts: ClassVar[int]

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry[self.subject], subpath(path, self.subject), self.parts)
        c.enum(entry, "phase", path, PVC_PHASES if self.parts == 2 else PV_PHASES)
        for key in ("volumeName", "storageClassName", "selectedNode", "claim"):
            c.get(entry, key, path, str)
        c.get(entry, "deleted", path, bool)
        for key in ("volumeNodeAffinity", "nodeAffinity"):
            check_shape(c, entry.get(key), subpath(path, key), {"*": [str]})
        _event_check(c, entry, path)


class PersistentVolumeClaimExpectation(_VolumeExpectation):
    subject = "pvc"
    parts = 2
    fields = ("phase", "volumeName", "storageClassName", "selectedNode", "volumeNodeAffinity", "deleted", "event")


class PersistentVolumeExpectation(_VolumeExpectation):
    subject = "pv"
    parts = 1
    fields = ("phase", "claim", "nodeAffinity", "deleted", "event")


class ResourceClaimExpectation(Expectation):
    """A ResourceClaim by "namespace/name", or the claim a pod's template made: the pod's
    "namespace/name" with `podClaim`, the pod claim's name (generated names end in random letters),
    or with `extendedResources: true`, the claim the scheduler made for the pod's extended
    resources backed by DRA."""

    subject = "resourceClaim"
    fields = ("podClaim", "extendedResources", "allocated", "reservedFor", "deleted", "event")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["resourceClaim"], subpath(path, "resourceClaim"), 2)
        c.get(entry, "podClaim", path, str)
        c.get(entry, "extendedResources", path, bool)
        if entry.get("podClaim") is not None and entry.get("extendedResources"):
            c.err(path, "Invalid value: specify podClaim or extendedResources, not both")
        for key in ("allocated", "reservedFor"):
            check_shape(c, entry.get(key), subpath(path, key), [str])
        for i, device in enumerate(entry.get("allocated") or ()):
            if isinstance(device, str) and (len(device.split("/")) < 3 or not all(device.split("/"))):
                c.invalid(subpath(path, f"allocated[{i}]"), device, 'must be "driver/pool/device"')
        c.get(entry, "deleted", path, bool)
        _event_check(c, entry, path)


class ObjectExpectation(Expectation):
    subject = "object"
    fields = ("exists", "status", "annotations", "conditions", "event")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        text = c.typed(entry["object"], subpath(path, "object"), str)
        if text is not None and (len(text.split("/")) not in (2, 3) or not all(text.split("/"))):
            c.invalid(subpath(path, "object"), text, 'must be "Kind/namespace/name" or "Kind/name"')
        c.get(entry, "exists", path, bool)
        c.get(entry, "status", path, dict)
        check_string_map(c, entry.get("annotations"), subpath(path, "annotations"))
        _event_check(c, entry, path)


class DisruptionExpectation(Expectation):
    subject = "disruption"
    fields = ("cause", "fromNode", "replacement", "notReplaced", "occurrence")

    def validate_fields(self, c: Checker, entry: dict[str, Any], path: str) -> None:
        _subject(c, entry["disruption"], subpath(path, "disruption"), 2)
        for key in ("cause", "fromNode"):
            c.get(entry, key, path, str)
        if entry.get("replacement") is not None:
            _subject(c, entry["replacement"], subpath(path, "replacement"), 2)
        occurrence = c.get(entry, "occurrence", path, int)
        if occurrence is not None and occurrence < 1:
            c.invalid(subpath(path, "occurrence"), occurrence, POSITIVE_MSG)


# In the order error messages list them.
EXPECTATIONS: dict[str, Expectation] = {e.subject: e for e in (
    PodExpectation(), NodeExpectation(), RejectedExpectation(), EvictionExpectation(),
    PodDisruptionBudgetExpectation(), DrainExpectation(), DescheduledExpectation(), DeschedulerPassExpectation(),
    PersistentVolumeClaimExpectation(), PersistentVolumeExpectation(), ResourceClaimExpectation(), ObjectExpectation(),
    DisruptionExpectation())}


EXPECT_SUBJECTS = {subject: e.fields for subject, e in EXPECTATIONS.items()}
