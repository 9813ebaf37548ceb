"""The API server's create-time checks on Kubernetes objects.

Bad input must never reach the simulation: every problem is collected (one line each, naming file,
document and field path, worded like the API server's own messages) and raised as one InputError.
Semantic rules the API server applies in admission (priority ceilings, `system-` names) live elsewhere;
so do the checks of what is not a Kubernetes object: the Scenario kind (kubesched.input.validation) and
component configurations (their components).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from kubesched.api.cron import Schedule, ScheduleError
from kubesched.api.duration import DurationError, parse_duration
from kubesched.api.errors import InputError, Problem
from kubesched.api.fieldschema import TIME_MSG, decode
from kubesched.api.loader import LoadedObject, type_name
from kubesched.api.names import dns_label_errors, dns_subdomain_errors, group_of, name_rule
from kubesched.api.objects import namespaced, parse_time
from kubesched.api.podlife import NEVER_READY_ANNOTATION, PROBE_FAILS_AFTER_ANNOTATION, parse_fails_after
from kubesched.api.quantity import (
    QuantityError,
    milli_value,
    parse_quantity,
    quantity_string,
    resource_amount,
)
from kubesched.api.quota import SCOPE_OPERATORS, SCOPES, is_extended_resource
from kubesched.api.selectors import LabelSelector, NodeSelector, SelectorError
from kubesched.api.served import is_custom_group, no_match, resource_kind
from kubesched.api.storage import (
    ACCESS_MODES,
    IMMEDIATE,
    READ_WRITE_ONCE_POD,
    VOLUME_MODES,
    WAIT_FOR_FIRST_CONSUMER,
)

API_VERSIONS: dict[str, tuple[str, ...]] = {
    "Namespace": ("v1",),
    "Node": ("v1",),
    "Pod": ("v1",),
    "PriorityClass": ("scheduling.k8s.io/v1",),
    "PodDisruptionBudget": ("policy/v1",),
    "RuntimeClass": ("node.k8s.io/v1",),
    "ReplicaSet": ("apps/v1",),
    "Deployment": ("apps/v1",),
    "DaemonSet": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
    "ReplicationController": ("v1",),
    "Job": ("batch/v1",),
    "CronJob": ("batch/v1",),
    "PersistentVolume": ("v1",),
    "PersistentVolumeClaim": ("v1",),
    "StorageClass": ("storage.k8s.io/v1",),
    "CSINode": ("storage.k8s.io/v1",),
    "CSIDriver": ("storage.k8s.io/v1",),
    "LimitRange": ("v1",),
    "ResourceQuota": ("v1",),
}
# Kinds that are cluster objects (have metadata; created, deleted and patched through the API).
OBJECT_KINDS = ("Namespace", "Node", "Pod", "PriorityClass", "PodDisruptionBudget", "RuntimeClass",
                "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "ReplicationController", "Job", "CronJob",
                "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "LimitRange",
                "ResourceQuota")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
PVC_PHASES = ("Pending", "Bound", "Lost")
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
# Simulation annotations: the kubelet's usage model (kubesched.kubelet.usage; the README lists them;
# tests/unit/test_kubelet_usage.py keeps these in step with it).
SIM_PREFIX = "sim.kubesched.io/"
SIM_USAGE_KEYS = ("cpu", "memory", "ephemeral-storage", "inodes", "pids", "writable-layer", "writable-layer-inodes")
SIM_NODE_AMOUNTS = ("inodes", "pid-max", "imagefs-capacity", "imagefs-inodes")
SIM_SYSTEM_USAGE_KEYS = ("memory", "ephemeral-storage", "inodes", "pids", "images", "images-inodes")
# Annotations the simulated kubelet reads as durations: how long a pod runs, how long it takes to stop.
SIM_DURATION_ANNOTATIONS = ("sim.kubesched.io/duration", "sim.kubesched.io/shutdown")
SIM_EXIT_CODE = "sim.kubesched.io/exit-code"  # how a pod's containers exit at the end of their duration
PROBE_FIELDS = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold")
# Container resources without a domain prefix must be one of these (or hugepages-<size>).
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_PERCENT = re.compile(r"[0-9]+%")

_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character")
_PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"
NONNEGATIVE_MSG = "must be greater than or equal to 0"
_MAX_INT64 = 2**63 - 1
MAX_REPLICAS = 1_000_000
POSITIVE_MSG = "must be greater than zero"

_EXPECTED = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}


# --- name and label rules (k8s.io/apimachinery/pkg/util/validation) ---------------------------------

def qualified_name_errors(value: str) -> list[str]:
    """Why `value` is not a qualified name (label and taint keys: optional DNS prefix, '/', name)."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _QUALIFIED_NAME_MSG + " with an optional DNS subdomain prefix and '/'"]
    errs = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in dns_subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + _QUALIFIED_NAME_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    """Why `value` is not a label value, if it is not."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    return errs + ([] if _LABEL_VALUE.fullmatch(value) else [_LABEL_VALUE_MSG])


# --- problem collection -------------------------------------------------------------------------------

def subpath(path: str, key: str) -> str:
    """The path of field `key` of the value at `path` ("" is the object itself)."""
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    """A value as the API server prints it in "Invalid value: ..." (JSON, strings quoted)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _is(value: Any, typ: type) -> bool:
    return isinstance(value, typ) and not (typ is int and isinstance(value, bool))


class Checker:
    """Collects problems for one loaded object; paths are relative to the object's document."""

    def __init__(self, lo: LoadedObject, problems: list[Problem], warnings: list[Problem] | None = None,
                 decoding: bool = False) -> None:
        self.lo = lo
        self.problems = problems
        self.warnings = warnings  # None: not wanted
        # Input is decoded as the API server decodes it. The API server's own checks at run time see
        # objects that the components made, or that were decoded when the input was checked.
        self.decoding = decoding

    def err(self, path: str, message: str) -> None:
        self.problems.append(self.lo.problem(path, message))

    def warn(self, path: str, message: str) -> None:
        if self.warnings is not None:
            self.warnings.append(self.lo.problem(path, message))

    def decode(self, kind: str, obj: dict[str, Any], patch: bool = False) -> list[tuple[str, str | None]]:
        return decode(kind, obj, patch) if self.decoding else []

    def decoded(self, findings: list[tuple[str, str | None]], path: str, reported: set[str]) -> None:
        """Report what decoding found in the object at `path`: a wrong type (unless a check
        reported that field already), and kubectl's field-validation warning for a field the kind
        does not have (the quoted path is the field's within the object)."""
        for field, message in findings:
            if message is None:
                self.warn(path, f'unknown field "{field}"')
            elif self.lo.problem(subpath(path, field), "").path not in reported:
                self.err(subpath(path, field), message)

    def required(self, path: str, detail: str = "") -> None:
        self.err(path, f"Required value: {detail}" if detail else "Required value")

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.err(path, f"Invalid value: {_show(value)}: {detail}")

    def unsupported(self, path: str, value: Any, supported: tuple[str, ...]) -> None:
        values = ", ".join(f'"{s}"' for s in sorted(supported))
        self.err(path, f"Unsupported value: {_show(value)}: supported values: {values}")

    def typed(self, value: Any, path: str, typ: type, int_bits: int = 64) -> Any:
        """`value` if it is of `typ` (None when absent or wrong, reporting the latter)."""
        if value is None:
            return None
        if not _is(value, typ):
            self.err(path, f"expected {_EXPECTED[typ]}, got {type_name(value)}")
            return None
        if typ is int and not -(2 ** (int_bits - 1)) <= value < 2 ** (int_bits - 1):
            self.err(path, f"expected a {int_bits}-bit integer, got {value}")
            return None
        return value

    def get(self, obj: dict[str, Any], key: str, path: str, typ: type, int_bits: int = 64) -> Any:
        """obj[key] checked to be of `typ`; None when absent, null or of the wrong type."""
        value = obj.get(key)
        if value is None:
            return None
        if type(value) is typ and typ is not int:  # the usual case, without building the path
            return value
        return self.typed(value, subpath(path, key), typ, int_bits)

    def need(self, obj: dict[str, Any], key: str, path: str, typ: type, int_bits: int = 64) -> Any:
        """Like get(), but a missing (or null) field is a problem too."""
        if obj.get(key) is None:
            self.required(subpath(path, key))
            return None
        return self.get(obj, key, path, typ, int_bits)

    def present(self, obj: dict[str, Any], key: str, path: str, typ: type) -> Any:
        """Like get(), for fields of our own kinds where a null is a mistake rather than "unset"."""
        if key in obj and obj[key] is None:
            self.err(subpath(path, key), f"expected {_EXPECTED[typ]}, got null")
        return self.get(obj, key, path, typ)

    def enum(self, obj: dict[str, Any], key: str, path: str, allowed: tuple[str, ...]) -> str | None:
        value = self.get(obj, key, path, str)
        if value is not None and value not in allowed:
            self.unsupported(subpath(path, key), value, allowed)
            return None
        return value

    def names(self, value: str, path: str, rule: Callable[[str], list[str]]) -> None:
        for msg in rule(value):
            self.invalid(path, value, msg)

    def duration(self, obj: dict[str, Any], key: str, path: str, required: bool = False) -> float | None:
        """A non-negative duration field, in seconds (None when absent; a null is a problem when
        `required`)."""
        if obj.get(key) is None and not required:
            return None
        try:
            seconds = parse_duration(obj[key])
        except DurationError as e:
            self.err(subpath(path, key), str(e))
            return None
        if seconds < 0:
            self.invalid(subpath(path, key), obj[key], NONNEGATIVE_MSG)
            return None
        return seconds


# A kind's check of one object at a path; a kind's accepted apiVersions and its check.
KindCheck = Callable[[Checker, dict[str, Any], str], None]
KindRule = tuple[tuple[str, ...], KindCheck]


# --- shared pieces ------------------------------------------------------------------------------------

def check_string_map(c: Checker, value: Any, path: str) -> dict[str, str]:
    """A map of strings to strings (annotations, and the shape of labels and node selectors)."""
    mapping = c.typed(value, path, dict) or {}
    good = {}
    for k, v in mapping.items():
        if c.typed(v, subpath(path, k), str) is not None or v is None:
            good[k] = v if v is not None else ""
    return good


def _labels(c: Checker, value: Any, path: str) -> dict[str, str]:
    """Labels or a node selector: qualified-name keys, label values (errors on the map, as upstream)."""
    labels = check_string_map(c, value, path)
    for k, v in labels.items():
        c.names(k, path, qualified_name_errors)
        c.names(v, path, label_value_errors)
    return labels


def _annotations(c: Checker, value: Any, path: str, pod: bool, node: bool = False, pod_spec: Any = None) -> None:
    annotations = check_string_map(c, value, path)
    for key in SIM_DURATION_ANNOTATIONS if pod else ():
        c.duration(annotations, key, path)
    for key, raw in annotations.items():
        if not key.startswith(SIM_PREFIX) or key in SIM_DURATION_ANNOTATIONS:
            continue
        name = key[len(SIM_PREFIX):]
        if pod and key == SIM_EXIT_CODE:
            if not (raw.isdigit() and int(raw) <= 255):
                c.invalid(subpath(path, key), raw, "must be an exit code, an integer from 0 to 255")
        elif pod and key in (NEVER_READY_ANNOTATION, PROBE_FAILS_AFTER_ANNOTATION):
            _probe_annotation(c, key, raw, subpath(path, key), pod_spec)
        elif pod and name.startswith("usage-") and name[len("usage-"):] in SIM_USAGE_KEYS or \
                node and (name in SIM_NODE_AMOUNTS or name.startswith("system-usage-")
                          and name[len("system-usage-"):] in SIM_SYSTEM_USAGE_KEYS):
            _quantity(c, raw, subpath(path, key), "cpu" if name == "usage-cpu" else "")
        elif pod or node:
            c.err(subpath(path, key), "unknown simulation annotation (see the README's list)")


def _probe_annotation(c: Checker, key: str, raw: str, path: str, pod_spec: Any) -> None:
    """`never-ready` names containers (app containers or sidecars) of the pod; `probe-fails-after`
    gives durations to containers that have a readiness probe."""
    spec = pod_spec if isinstance(pod_spec, dict) else {}
    probed = {ctr.get("name"): ctr for ctr in (*_dicts(spec.get("initContainers")), *_dicts(spec.get("containers")))
              if ctr in _dicts(spec.get("containers")) or ctr.get("restartPolicy") == "Always"}
    if key == NEVER_READY_ANNOTATION:
        items = [(name.strip(), None) for name in raw.split(",")]
    else:
        items = [(name, why) for name, _, why in parse_fails_after(raw)]
    if not any(name for name, _ in items):
        c.invalid(path, raw, "must name at least one container" if key == NEVER_READY_ANNOTATION
                  else "must be a comma-separated list of <container>=<duration>")
    seen: set[str] = set()
    for name, why in items:
        if why is not None:
            c.invalid(path, raw, why)
        elif name in seen:
            c.invalid(path, raw, f"container {_show(name)} is given twice")
        elif name and name not in probed:
            c.invalid(path, raw, f"no container or sidecar {_show(name)} in the pod")
        elif name and key == PROBE_FAILS_AFTER_ANNOTATION and not isinstance(probed[name].get("readinessProbe"), dict):
            c.invalid(path, raw, f"container {_show(name)} has no readinessProbe")
        seen.add(name)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _probes(c: Checker, ctr: dict[str, Any], path: str) -> None:
    """ValidateProbe: non-negative counts; liveness and startup probes succeed once (successThreshold 1)."""
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.get(ctr, kind, path, dict)
        if probe is None:
            continue
        probe_path = subpath(path, kind)
        for key in PROBE_FIELDS:
            value = c.get(probe, key, probe_path, int, 32)
            if value is not None and value < 0:
                c.invalid(subpath(probe_path, key), value, NONNEGATIVE_MSG)
        success = probe.get("successThreshold")
        if kind != "readinessProbe" and isinstance(success, int) and success > 1:
            c.invalid(subpath(probe_path, "successThreshold"), success, "must be 1")


def check_timestamp(c: Checker, obj: dict[str, Any], key: str, path: str) -> None:
    """An RFC 3339 time with a zone, as metav1.Time serialises (virtual time 0 is derived from these)."""
    value = c.get(obj, key, path, str)
    if value is None:
        return
    try:
        ok = parse_time(value).tzinfo is not None
    except ValueError:
        ok = False
    if not ok:
        c.invalid(subpath(path, key), value, TIME_MSG)


def _metadata(c: Checker, obj: dict[str, Any], kind: str, path: str) -> None:
    meta_path = subpath(path, "metadata")
    if obj.get("metadata") is None:
        c.required(subpath(meta_path, "name"))
        return
    meta = c.get(obj, "metadata", path, dict)
    if meta is None:
        return
    name = c.need(meta, "name", meta_path, str)
    if name is not None:
        api_version = obj.get("apiVersion")
        group = group_of(api_version) if isinstance(api_version, str) else ""
        c.names(name, subpath(meta_path, "name"), name_rule(group, kind, obj))
    if namespaced(kind):
        namespace = c.get(meta, "namespace", meta_path, str)
        if namespace:
            c.names(namespace, subpath(meta_path, "namespace"), dns_label_errors)
    if (labels := meta.get("labels")) is not None:
        _labels(c, labels, subpath(meta_path, "labels"))
    if (annotations := meta.get("annotations")) is not None:  # no annotations: nothing to check
        _annotations(c, annotations, subpath(meta_path, "annotations"), kind == "Pod", kind == "Node",
                     obj.get("spec"))
    check_timestamp(c, meta, "creationTimestamp", meta_path)
    for i, owner in enumerate(c.get(meta, "ownerReferences", meta_path, list) or []):
        owner_path = f"{meta_path}.ownerReferences[{i}]"
        if c.typed(owner, owner_path, dict) is not None:
            for key in ("apiVersion", "kind", "name", "uid"):
                c.need(owner, key, owner_path, str)
            c.get(owner, "controller", owner_path, bool)


def _quantity(c: Checker, value: Any, path: str, resource: str = "") -> Fraction | None:
    """A non-negative quantity of `resource`, small enough for the int64 the scheduler and the
    kubelet keep it in (`Quantity.Value()`, or `MilliValue()` for cpu): upstream accepts any size
    there and then computes with a wrapped-around number."""
    if type(value) is str and (amount := _fitting_amount(resource, value)) is not None:
        return amount
    try:
        amount = parse_quantity(value)
    except QuantityError as e:
        c.err(path, str(e))
        return None
    if amount < 0:
        c.invalid(path, str(value), NONNEGATIVE_MSG)
        return None
    if resource_amount(resource, value) > _MAX_INT64:
        unit = "m" if resource == "cpu" else ""
        c.invalid(path, str(value), f"must be less than or equal to {_MAX_INT64}{unit}")
        return None
    return amount


@lru_cache(maxsize=4096)
def _fitting_amount(resource: str, text: str) -> Fraction | None:
    """The amount of `text` when _quantity accepts it, else None. Inputs repeat the same few
    quantities thousands of times; parsing each once matters when loading large clusters."""
    try:
        amount = parse_quantity(text)
    except QuantityError:
        return None
    return amount if amount >= 0 and resource_amount(resource, text) <= _MAX_INT64 else None


def check_resource_list(c: Checker, value: Any, path: str, container: bool = False) -> dict[str, tuple[Any, Fraction]]:
    """Resource name -> (as written, amount); `container` applies the container resource-name rule."""
    good = {}
    for name, raw in (c.typed(value, path, dict) or {}).items():
        item_path = subpath(path, name)
        if container and "/" not in name and name not in STANDARD_CONTAINER_RESOURCES \
                and not name.startswith("hugepages-"):
            c.invalid(item_path, name, "must be a standard resource for containers")
            continue
        if raw is None:
            c.required(item_path)
            continue
        amount = _quantity(c, raw, item_path, name)
        if amount is not None:
            good[name] = (raw, amount)
    return good


def _resources(c: Checker, value: Any, path: str) -> None:
    res = c.typed(value, path, dict)
    if res is None:
        return
    requests: dict[str, tuple[Any, Fraction]] = {}
    limits: dict[str, tuple[Any, Fraction]] = {}
    if (listed := res.get("requests")) is not None:
        requests = check_resource_list(c, listed, subpath(path, "requests"), container=True)
    if (listed := res.get("limits")) is not None:
        limits = check_resource_list(c, listed, subpath(path, "limits"), container=True)
    for name, (raw, amount) in requests.items():
        if name in limits and amount > limits[name][1]:
            c.invalid(subpath(path, "requests"), str(raw), f"must be less than or equal to {name} limit of {limits[name][0]}")


# What the selector compilers index into; checked first so they only ever see well-typed input.
_REQUIREMENT_SHAPE = [{"key": str, "operator": str, "values": [str]}]
_LABEL_SELECTOR_SHAPE = {"matchLabels": {"*": str}, "matchExpressions": _REQUIREMENT_SHAPE}
_NODE_TERM_SHAPE = {"matchExpressions": _REQUIREMENT_SHAPE, "matchFields": _REQUIREMENT_SHAPE}


def _well_shaped(c: Checker, value: Any, path: str, shape: Any) -> bool:
    before = len(c.problems)
    check_shape(c, value, path, shape)
    return len(c.problems) == before


def _label_selector(c: Checker, value: Any, path: str) -> LabelSelector | None:
    if value is None or not _well_shaped(c, value, path, _LABEL_SELECTOR_SHAPE):
        return None
    try:
        return LabelSelector.compile(value)
    except SelectorError as e:
        c.err(subpath(path, e.path), e.message)
        return None


def _node_selector(c: Checker, value: Any, path: str) -> None:
    if value is None or not _well_shaped(c, value, path, {"nodeSelectorTerms": [_NODE_TERM_SHAPE]}):
        return
    if not value.get("nodeSelectorTerms"):
        c.required(subpath(path, "nodeSelectorTerms"), "must have at least one node selector term")
        return
    try:
        NodeSelector.compile(value)
    except SelectorError as e:
        c.err(subpath(path, e.path), e.message)


def _node_selector_term(c: Checker, value: Any, path: str) -> None:
    """One term (a preferred affinity's `preference`), checked as a selector holding only it."""
    if value is None or not _well_shaped(c, value, path, _NODE_TERM_SHAPE):
        return
    try:
        NodeSelector.compile({"nodeSelectorTerms": [value]})
    except SelectorError as e:
        c.err(subpath(path, e.path.removeprefix("nodeSelectorTerms[0]").lstrip(".")), e.message)


def _int_or_percent(c: Checker, value: Any, path: str) -> None:
    """minAvailable/maxUnavailable/maxSurge: a count >= 0 or "N%" (at most 100%)."""
    if _is(value, int):
        if value < 0:
            c.invalid(path, value, NONNEGATIVE_MSG)
    elif isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            c.invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' "
                                   "(e.g. '1%',  or '93%')")
        elif int(value[:-1]) > 100:
            c.invalid(path, value, "must not be greater than 100%")
    elif value is not None:
        c.err(path, f"expected an integer or a percent string, got {type_name(value)}")


def check_taints(c: Checker, value: Any, path: str) -> None:
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(c.typed(value, path, list) or []):
        taint_path = f"{path}[{i}]"
        if c.typed(taint, taint_path, dict) is None:
            continue
        key = c.get(taint, "key", taint_path, str)
        if not key:
            if key is not None or taint.get("key") is None:
                c.required(subpath(taint_path, "key"))
        else:
            c.names(key, subpath(taint_path, "key"), qualified_name_errors)
        taint_value = c.get(taint, "value", taint_path, str)
        if taint_value:
            c.names(taint_value, subpath(taint_path, "value"), label_value_errors)
        effect = c.get(taint, "effect", taint_path, str)
        if not effect:
            if effect is not None or taint.get("effect") is None:
                c.required(subpath(taint_path, "effect"))
        elif effect not in TAINT_EFFECTS:
            c.unsupported(subpath(taint_path, "effect"), effect, TAINT_EFFECTS)
        c.get(taint, "timeAdded", taint_path, str)
        if key and effect:
            if (key, effect) in seen:
                c.err(taint_path, f'Duplicate value: "{key}:{effect}": taints must be unique by key and effect pair')
            seen.add((key, effect))


def _tolerations(c: Checker, value: Any, path: str) -> None:
    for i, tol in enumerate(c.typed(value, path, list) or []):
        tol_path = f"{path}[{i}]"
        if c.typed(tol, tol_path, dict) is None:
            continue
        key = c.get(tol, "key", tol_path, str) or ""
        operator = c.get(tol, "operator", tol_path, str) or ""
        tol_value = c.get(tol, "value", tol_path, str) or ""
        effect = c.get(tol, "effect", tol_path, str) or ""
        seconds = c.get(tol, "tolerationSeconds", tol_path, int)
        if key:
            c.names(key, subpath(tol_path, "key"), qualified_name_errors)
        elif operator != "Exists":
            c.invalid(subpath(tol_path, "operator"), operator,
                      'operator must be Exists when `key` is empty, which means "match all values and all keys"')
        if seconds is not None and effect != "NoExecute":
            c.invalid(subpath(tol_path, "effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        if operator in ("Equal", ""):
            c.names(tol_value, subpath(tol_path, "value"), label_value_errors)
        elif operator == "Exists":
            if tol_value:
                c.invalid(subpath(tol_path, "value"), tol_value, "value must be empty when `operator` is 'Exists'")
        else:
            c.unsupported(subpath(tol_path, "operator"), operator, ("Equal", "Exists"))
        if effect and effect not in TAINT_EFFECTS:
            c.unsupported(subpath(tol_path, "effect"), effect, TAINT_EFFECTS)


def _weight(c: Checker, term: dict[str, Any], path: str) -> None:
    weight = c.get(term, "weight", path, int, 32)
    if weight is None and term.get("weight") is None:
        weight = 0  # an absent int32 is 0 on the API server
    if weight is not None and not 1 <= weight <= 100:
        c.invalid(subpath(path, "weight"), weight, "must be in the range 1-100")


def _pod_affinity_term(c: Checker, term: Any, path: str) -> None:
    if c.typed(term, path, dict) is None:
        return
    _label_selector(c, term.get("labelSelector"), subpath(path, "labelSelector"))
    _label_selector(c, term.get("namespaceSelector"), subpath(path, "namespaceSelector"))
    for j, ns in enumerate(c.get(term, "namespaces", path, list) or []):
        if c.typed(ns, f"{path}.namespaces[{j}]", str) is not None:
            c.names(ns, f"{path}.namespaces[{j}]", dns_label_errors)
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        keys = c.get(term, field, path, list) or []
        if keys and term.get("labelSelector") is None:
            c.err(subpath(path, field), "Forbidden: must not be specified when labelSelector is not set")
        for j, key in enumerate(keys):
            if c.typed(key, f"{path}.{field}[{j}]", str) is not None:
                c.names(key, f"{path}.{field}[{j}]", qualified_name_errors)
    topology_key = c.get(term, "topologyKey", path, str)
    if not topology_key:
        if topology_key is not None or term.get("topologyKey") is None:
            c.required(subpath(path, "topologyKey"), "can not be empty")
    else:
        c.names(topology_key, subpath(path, "topologyKey"), qualified_name_errors)


def _node_affinity(c: Checker, value: Any, path: str) -> None:
    """A pod's node affinity, or the NodeAffinity plugin's `addedAffinity` (validated the same way)."""
    node = c.typed(value, path, dict)
    if node is None:
        return
    _node_selector(c, node.get("requiredDuringSchedulingIgnoredDuringExecution"),
                   subpath(path, "requiredDuringSchedulingIgnoredDuringExecution"))
    _weighted_terms(c, node, path, "preference", _node_selector_term)


def _weighted_terms(c: Checker, holder: dict[str, Any], path: str, inner: str,
                    check: Callable[[Checker, Any, str], None]) -> None:
    """preferredDuringSchedulingIgnoredDuringExecution: terms of a weight and an `inner` term."""
    key = "preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(c.get(holder, key, path, list) or []):
        term_path = f"{subpath(path, key)}[{i}]"
        if c.typed(term, term_path, dict) is None:
            continue
        _weight(c, term, term_path)
        if term.get(inner) is None:
            c.required(subpath(term_path, inner))
        else:
            check(c, term[inner], subpath(term_path, inner))


def _affinity(c: Checker, value: Any, path: str) -> None:
    affinity = c.typed(value, path, dict)
    if affinity is None:
        return
    _node_affinity(c, affinity.get("nodeAffinity"), subpath(path, "nodeAffinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        kind_path = subpath(path, kind)
        pod = c.get(affinity, kind, path, dict)
        if pod is None:
            continue
        required = "requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(c.get(pod, required, kind_path, list) or []):
            _pod_affinity_term(c, term, f"{kind_path}.{required}[{i}]")
        _weighted_terms(c, pod, kind_path, "podAffinityTerm", _pod_affinity_term)


def _spread_constraints(c: Checker, value: Any, path: str) -> None:
    seen: set[tuple[str, str]] = set()
    for i, tsc in enumerate(c.typed(value, path, list) or []):
        tsc_path = f"{path}[{i}]"
        if c.typed(tsc, tsc_path, dict) is None:
            continue
        max_skew = c.get(tsc, "maxSkew", tsc_path, int, 32)
        if max_skew is None and tsc.get("maxSkew") is None:
            max_skew = 0  # absent is 0 on the API server, which rejects it
        if max_skew is not None and max_skew <= 0:
            c.invalid(subpath(tsc_path, "maxSkew"), max_skew, POSITIVE_MSG)
        topology_key = c.get(tsc, "topologyKey", tsc_path, str)
        if not topology_key and (topology_key is not None or tsc.get("topologyKey") is None):
            c.required(subpath(tsc_path, "topologyKey"), "can not be empty")
        action = c.get(tsc, "whenUnsatisfiable", tsc_path, str)
        if action is None and tsc.get("whenUnsatisfiable") is None:
            action = ""
        if action is not None and action not in ("DoNotSchedule", "ScheduleAnyway"):
            c.unsupported(subpath(tsc_path, "whenUnsatisfiable"), action, ("DoNotSchedule", "ScheduleAnyway"))
        if topology_key and action:
            if (topology_key, action) in seen:
                c.err(subpath(tsc_path, "{topologyKey, whenUnsatisfiable}"),
                      f'Duplicate value: "{{{topology_key}, {action}}}"')
            seen.add((topology_key, action))
        min_domains = c.get(tsc, "minDomains", tsc_path, int, 32)
        if min_domains is not None:
            if min_domains <= 0:
                c.invalid(subpath(tsc_path, "minDomains"), min_domains, POSITIVE_MSG)
            if action is not None and action != "DoNotSchedule":
                c.invalid(subpath(tsc_path, "minDomains"), min_domains,
                          f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}")
        c.enum(tsc, "nodeAffinityPolicy", tsc_path, ("Honor", "Ignore"))
        c.enum(tsc, "nodeTaintsPolicy", tsc_path, ("Honor", "Ignore"))
        keys = c.get(tsc, "matchLabelKeys", tsc_path, list) or []
        if keys and tsc.get("labelSelector") is None:
            c.err(subpath(tsc_path, "matchLabelKeys"), "Forbidden: must not be specified when labelSelector is not set")
        for j, key in enumerate(keys):
            if c.typed(key, f"{tsc_path}.matchLabelKeys[{j}]", str) is not None:
                c.names(key, f"{tsc_path}.matchLabelKeys[{j}]", qualified_name_errors)
        _label_selector(c, tsc.get("labelSelector"), subpath(tsc_path, "labelSelector"))


def _ports(c: Checker, value: Any, path: str, host_ports: set[str]) -> None:
    for i, port in enumerate(c.typed(value, path, list) or []):
        port_path = f"{path}[{i}]"
        if c.typed(port, port_path, dict) is None:
            continue
        container_port = c.get(port, "containerPort", port_path, int, 32)
        if container_port is None and port.get("containerPort") is None:
            c.required(subpath(port_path, "containerPort"))
        elif container_port is not None and not 1 <= container_port <= 65535:
            c.invalid(subpath(port_path, "containerPort"), container_port, _PORT_RANGE_MSG)
        host_port = c.get(port, "hostPort", port_path, int, 32)
        if host_port and not 1 <= host_port <= 65535:
            c.invalid(subpath(port_path, "hostPort"), host_port, _PORT_RANGE_MSG)
        protocol = c.enum(port, "protocol", port_path, ("TCP", "UDP", "SCTP"))
        host_ip = c.get(port, "hostIP", port_path, str) or ""
        c.get(port, "name", port_path, str)
        if host_port and 1 <= host_port <= 65535:
            # Two containers of one pod cannot bind the same host port (the NodePorts plugin relies on it).
            ident = f"{protocol or 'TCP'}/{host_ip}/{host_port}"
            if ident in host_ports:
                c.err(subpath(port_path, "hostPort"), f"Duplicate value: {_show(ident)}")
            host_ports.add(ident)


def _containers(c: Checker, spec: dict[str, Any], key: str, path: str, names: set[str]) -> None:
    host_ports: set[str] = set()
    list_path = subpath(path, key)
    for i, ctr in enumerate(c.get(spec, key, path, list) or []):
        ctr_path = f"{list_path}[{i}]"
        if c.typed(ctr, ctr_path, dict) is None:
            continue
        name = c.get(ctr, "name", ctr_path, str)
        if not name:
            if name is not None or ctr.get("name") is None:
                c.required(subpath(ctr_path, "name"))
        elif name in names:
            c.err(subpath(ctr_path, "name"), f"Duplicate value: {_show(name)}")
        else:
            c.names(name, subpath(ctr_path, "name"), dns_label_errors)
            names.add(name)
        c.get(ctr, "image", ctr_path, str)
        c.get(ctr, "restartPolicy", ctr_path, str)
        if (resources := ctr.get("resources")) is not None:
            _resources(c, resources, subpath(ctr_path, "resources"))
        if (ports := ctr.get("ports")) is not None:
            _ports(c, ports, subpath(ctr_path, "ports"), host_ports)
        _probes(c, ctr, ctr_path)


def _pod_spec(c: Checker, value: Any, path: str, template: tuple[str, ...] = ()) -> None:
    """A PodSpec, in a Pod or in a workload's pod template (`template`: the restart policies the
    workload allows; the API server defaults an unset one to Always)."""
    if value is None:
        c.required(path)
        return
    spec = c.typed(value, path, dict)
    if spec is None:
        return
    if not spec.get("containers") and (spec.get("containers") is None or isinstance(spec["containers"], list)):
        c.required(subpath(path, "containers"))
    names: set[str] = set()
    _containers(c, spec, "containers", path, names)
    # Each check of an optional part below does nothing for an absent one: skipped, with its path.
    if spec.get("initContainers") is not None:
        _containers(c, spec, "initContainers", path, names)
    if (resources := spec.get("resources")) is not None:
        _resources(c, resources, subpath(path, "resources"))
    if (overhead := spec.get("overhead")) is not None:
        check_resource_list(c, overhead, subpath(path, "overhead"), container=True)
    c.get(spec, "priority", path, int, 32)
    c.enum(spec, "preemptionPolicy", path, PREEMPTION_POLICIES)
    for key in ("priorityClassName", "nodeName", "runtimeClassName"):
        name = c.get(spec, key, path, str)
        if name:
            c.names(name, subpath(path, key), dns_subdomain_errors)
    c.get(spec, "schedulerName", path, str)
    c.get(spec, "hostNetwork", path, bool)
    restart_policy = c.enum(spec, "restartPolicy", path, ("Always", "OnFailure", "Never"))
    if template and (restart_policy or "Always") not in template:
        c.unsupported(subpath(path, "restartPolicy"), restart_policy or "Always", template)
    grace = c.get(spec, "terminationGracePeriodSeconds", path, int)
    if grace is not None and grace < 0:
        c.invalid(subpath(path, "terminationGracePeriodSeconds"), grace, NONNEGATIVE_MSG)
    if (part := spec.get("nodeSelector")) is not None:
        _labels(c, part, subpath(path, "nodeSelector"))
    if (part := spec.get("tolerations")) is not None:
        _tolerations(c, part, subpath(path, "tolerations"))
    if (part := spec.get("affinity")) is not None:
        _affinity(c, part, subpath(path, "affinity"))
    if (part := spec.get("topologySpreadConstraints")) is not None:
        _spread_constraints(c, part, subpath(path, "topologySpreadConstraints"))
    if (part := spec.get("volumes")) is not None:
        _pod_volumes(c, part, subpath(path, "volumes"))
    gates_path = subpath(path, "schedulingGates")
    gates: set[str] = set()
    for i, gate in enumerate(c.get(spec, "schedulingGates", path, list) or []):
        if c.typed(gate, f"{gates_path}[{i}]", dict) is None:
            continue
        name = c.need(gate, "name", f"{gates_path}[{i}]", str)
        if name is not None:
            c.names(name, f"{gates_path}[{i}].name", qualified_name_errors)
            if name in gates:
                c.err(f"{gates_path}[{i}]", f"Duplicate value: {_show(name)}")
            gates.add(name)
    if gates and spec.get("nodeName"):
        c.err(subpath(path, "nodeName"),
              "Forbidden: cannot be set until all schedulingGates have been cleared")


# --- kinds --------------------------------------------------------------------------------------------

def _pod(c: Checker, obj: dict[str, Any], path: str) -> None:
    _pod_spec(c, obj.get("spec"), subpath(path, "spec"))
    status = c.get(obj, "status", path, dict)
    if status is not None:
        c.enum(status, "phase", subpath(path, "status"), POD_PHASES)
        c.get(status, "nominatedNodeName", subpath(path, "status"), str)


def _node(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is not None:
        c.get(spec, "unschedulable", spec_path, bool)
        check_taints(c, spec.get("taints"), subpath(spec_path, "taints"))
    status = c.get(obj, "status", path, dict)
    if status is not None:
        for key in ("capacity", "allocatable"):
            check_resource_list(c, status.get(key), subpath(subpath(path, "status"), key))
        check_shape(c, status.get("images"), subpath(path, "status.images"),
                    [{"names": [str], "sizeBytes": int}])
    if not (status or {}).get("allocatable") and not (status or {}).get("capacity"):
        # Its kubelet would report them; without them the node fits no pod that requests anything.
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        c.warn(subpath(path, "status"), f"Node {_show(name)} has neither allocatable nor capacity: "
                                        "it offers 0 cpu and 0 memory to pods")


def _priority_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    c.need(obj, "value", path, int, 32)
    c.get(obj, "globalDefault", path, bool)
    c.get(obj, "description", path, str)
    c.enum(obj, "preemptionPolicy", path, PREEMPTION_POLICIES)


def _pdb(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        return
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        c.err(spec_path, "minAvailable and maxUnavailable cannot be both set")
    for key in ("minAvailable", "maxUnavailable"):
        _int_or_percent(c, spec.get(key), subpath(spec_path, key))
    _label_selector(c, spec.get("selector"), subpath(spec_path, "selector"))
    c.enum(spec, "unhealthyPodEvictionPolicy", spec_path, ("AlwaysAllow", "IfHealthyBudget"))


def _runtime_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    handler = c.need(obj, "handler", path, str)
    if handler is not None:
        c.names(handler, subpath(path, "handler"), dns_label_errors)
    overhead = c.get(obj, "overhead", path, dict)
    if overhead is not None:
        check_resource_list(c, overhead.get("podFixed"), subpath(path, "overhead.podFixed"), container=True)
    scheduling_path = subpath(path, "scheduling")
    scheduling = c.get(obj, "scheduling", path, dict)
    if scheduling is not None:
        _labels(c, scheduling.get("nodeSelector"), subpath(scheduling_path, "nodeSelector"))
        _tolerations(c, scheduling.get("tolerations"), subpath(scheduling_path, "tolerations"))


def _workload(c: Checker, obj: dict[str, Any], path: str, kind: str) -> None:
    """ReplicaSet, Deployment, DaemonSet or StatefulSet: a selector that matches a pod template."""
    spec_path = subpath(path, "spec")
    if obj.get("spec") is None:
        c.required(spec_path)
        return
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        return
    if kind != "DaemonSet":
        _replicas(c, spec, spec_path)
    selector = None
    selector_path = subpath(spec_path, "selector")
    if spec.get("selector") is None:
        c.required(selector_path)
    elif c.typed(spec["selector"], selector_path, dict) is not None:
        if not spec["selector"].get("matchLabels") and not spec["selector"].get("matchExpressions"):
            # The API server says "deployment" for ReplicaSets too.
            what = {"DaemonSet": "daemonset", "StatefulSet": "statefulset"}.get(kind, "deployment")
            c.invalid(selector_path, spec["selector"], f"empty selector is invalid for {what}")
        else:
            selector = _label_selector(c, spec["selector"], selector_path)
    if not _pod_template(c, spec, spec_path, ("Always",), _selector_matches(c, selector, spec_path)):
        return
    strategy_key = "strategy" if kind in ("Deployment", "ReplicaSet") else "updateStrategy"
    strategy = c.get(spec, strategy_key, spec_path, dict)
    if strategy is not None:
        strategy_path = subpath(spec_path, strategy_key)
        allowed = ("RollingUpdate", "Recreate") if kind == "Deployment" else ("RollingUpdate", "OnDelete")
        if kind != "ReplicaSet":
            c.enum(strategy, "type", strategy_path, allowed)
            rolling = c.get(strategy, "rollingUpdate", strategy_path, dict) or {}
            for key in ("maxSurge", "maxUnavailable"):
                _int_or_percent(c, rolling.get(key), f"{strategy_path}.rollingUpdate.{key}")


def _pod_template(c: Checker, spec: dict[str, Any], spec_path: str, restart: tuple[str, ...],
                  check_labels: Callable[[dict[str, str]], None]) -> bool:
    """A workload's `spec.template`: its labels (which `check_labels` holds against the selector),
    annotations and pod spec, whose restartPolicy must be one of `restart`. False when absent."""
    template_path = subpath(spec_path, "template")
    template = c.get(spec, "template", spec_path, dict)
    if template is None:
        if spec.get("template") is None:
            c.required(template_path)
        return False
    meta = c.get(template, "metadata", template_path, dict) or {}
    labels = _labels(c, meta.get("labels"), subpath(template_path, "metadata.labels"))
    _annotations(c, meta.get("annotations"), subpath(template_path, "metadata.annotations"), pod=True,
                 pod_spec=template.get("spec"))
    check_labels(labels)
    _pod_spec(c, template.get("spec"), subpath(template_path, "spec"), template=restart)
    return True


def _selector_matches(c: Checker, selector: Any, spec_path: str) -> Callable[[dict[str, str]], None]:
    """The check that a label selector (None: not given or invalid) selects the template's labels."""
    def check(labels: dict[str, str]) -> None:
        if selector is not None and not selector.matches(labels):
            c.invalid(subpath(spec_path, "template.metadata.labels"), labels, "`selector` does not match template `labels`")
    return check


def _replicas(c: Checker, spec: dict[str, Any], spec_path: str) -> None:
    replicas = c.get(spec, "replicas", spec_path, int, 32)
    if replicas is not None and replicas < 0:
        c.invalid(subpath(spec_path, "replicas"), replicas, NONNEGATIVE_MSG)
    elif replicas is not None and replicas > MAX_REPLICAS:
        # Valid for the API (an int32), but no simulation holds that many pods.
        c.invalid(subpath(spec_path, "replicas"), replicas,
                  f"kubesched simulates at most {MAX_REPLICAS} replicas of one workload")


def _nonnegative(c: Checker, obj: dict[str, Any], keys: tuple[str, ...], path: str,
                 int_bits: int = 32) -> None:
    for key in keys:
        value = c.get(obj, key, path, int, int_bits)
        if value is not None and value < 0:
            c.invalid(subpath(path, key), value, NONNEGATIVE_MSG)


def _statefulset(c: Checker, obj: dict[str, Any], path: str) -> None:
    _workload(c, obj, path, "StatefulSet")
    spec_path = subpath(path, "spec")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    c.enum(spec, "podManagementPolicy", spec_path, ("OrderedReady", "Parallel"))
    c.get(spec, "serviceName", spec_path, str)
    _nonnegative(c, spec, ("minReadySeconds", "revisionHistoryLimit"), spec_path)
    _nonnegative(c, c.get(spec, "ordinals", spec_path, dict) or {}, ("start",),
                 subpath(spec_path, "ordinals"))
    rolling_path = subpath(spec_path, "updateStrategy.rollingUpdate")
    rolling = ((spec.get("updateStrategy") or {}) if isinstance(spec.get("updateStrategy"), dict) else {}).get(
        "rollingUpdate")
    if isinstance(rolling, dict):
        _nonnegative(c, rolling, ("partition",), rolling_path)
    retention_path = subpath(spec_path, "persistentVolumeClaimRetentionPolicy")
    retention = c.get(spec, "persistentVolumeClaimRetentionPolicy", spec_path, dict) or {}
    for key in ("whenDeleted", "whenScaled"):
        c.enum(retention, key, retention_path, ("Retain", "Delete"))
    for i, claim in enumerate(c.get(spec, "volumeClaimTemplates", spec_path, list) or []):
        claim_path = f"{spec_path}.volumeClaimTemplates[{i}]"
        if c.typed(claim, claim_path, dict) is None:
            continue
        meta = c.get(claim, "metadata", claim_path, dict) or {}
        name = c.need(meta, "name", subpath(claim_path, "metadata"), str)
        if name:
            c.names(name, subpath(claim_path, "metadata.name"), dns_subdomain_errors)
        _labels(c, meta.get("labels"), subpath(claim_path, "metadata.labels"))
        _claim_spec(c, claim.get("spec"), subpath(claim_path, "spec"))


def _replication_controller(c: Checker, obj: dict[str, Any], path: str) -> None:
    """A ReplicationController: its selector is a label map, by default the template's labels."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        if obj.get("spec") is None:
            c.required(spec_path)
        return
    _replicas(c, spec, spec_path)
    _nonnegative(c, spec, ("minReadySeconds",), spec_path)
    selector = _labels(c, spec.get("selector"), subpath(spec_path, "selector"))

    def selector_matches(labels: dict[str, str]) -> None:
        if not selector and not labels:
            c.required(subpath(spec_path, "selector"))
        elif selector and any(labels.get(k) != v for k, v in selector.items()):
            c.invalid(subpath(spec_path, "template.metadata.labels"), labels, "selector does not match template labels")

    _pod_template(c, spec, spec_path, ("Always",), selector_matches)


# Job fields kubesched reads but does not simulate.
JOB_IGNORED = ("podFailurePolicy", "successPolicy", "backoffLimitPerIndex", "maxFailedIndexes", "managedBy")


def _job_spec(c: Checker, value: Any, spec_path: str) -> None:
    """A JobSpec, in a Job or a CronJob's jobTemplate."""
    spec = c.typed(value, spec_path, dict)
    if spec is None:
        if value is None:
            c.required(spec_path)
        return
    _nonnegative(c, spec, ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"), spec_path)
    _nonnegative(c, spec, ("activeDeadlineSeconds",), spec_path, 64)
    if c.enum(spec, "completionMode", spec_path, ("NonIndexed", "Indexed")) == "Indexed" \
            and spec.get("completions") is None:
        c.required(subpath(spec_path, "completions"), "when completion mode is Indexed")
    c.enum(spec, "podReplacementPolicy", spec_path, ("TerminatingOrFailed", "Failed"))
    c.get(spec, "suspend", spec_path, bool)
    manual = c.get(spec, "manualSelector", spec_path, bool)
    for key in JOB_IGNORED:
        if spec.get(key) is not None:
            c.warn(subpath(spec_path, key), "ignored: kubesched does not simulate it")
    selector_path = subpath(spec_path, "selector")
    selector = None
    if spec.get("selector") is not None:
        selector = _label_selector(c, spec["selector"], selector_path)
    elif manual:
        c.required(selector_path)
    _pod_template(c, spec, spec_path, ("OnFailure", "Never"), _selector_matches(c, selector, spec_path))


def _cronjob(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        if obj.get("spec") is None:
            c.required(spec_path)
        return
    schedule = c.need(spec, "schedule", spec_path, str)
    zone = c.get(spec, "timeZone", spec_path, str)
    if schedule is not None:
        if zone is not None and "TZ" in schedule:
            c.invalid(subpath(spec_path, "schedule"), schedule,
                      "cannot use both timeZone field and TZ or CRON_TZ in schedule")
        else:
            try:
                Schedule(schedule, zone)
            except ScheduleError as e:
                where = "timeZone" if zone is not None and str(e).startswith("unknown time zone") else "schedule"
                c.invalid(subpath(spec_path, where), zone if where == "timeZone" else schedule, str(e))
    c.enum(spec, "concurrencyPolicy", spec_path, ("Allow", "Forbid", "Replace"))
    c.get(spec, "suspend", spec_path, bool)
    _nonnegative(c, spec, ("startingDeadlineSeconds",), spec_path, 64)
    _nonnegative(c, spec, ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"), spec_path)
    template_path = subpath(spec_path, "jobTemplate")
    template = c.get(spec, "jobTemplate", spec_path, dict)
    if template is None:
        if spec.get("jobTemplate") is None:
            c.required(template_path)
        return
    meta = c.get(template, "metadata", template_path, dict) or {}
    _labels(c, meta.get("labels"), subpath(template_path, "metadata.labels"))
    _job_spec(c, template.get("spec"), subpath(template_path, "spec"))


# --- storage ---------------------------------------------------------------------------------------

# The volume sources of a PersistentVolume, in the order the API server checks them.
PV_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
              "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
              "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")
# A pod volume's sources; a volume naming none is an emptyDir (the API server's default).
POD_VOLUME_SOURCES = (*PV_SOURCES, "emptyDir", "gitRepo", "secret", "persistentVolumeClaim", "downwardAPI",
                      "configMap", "projected", "ephemeral", "image")
SIM_PROVISIONING_TIME = "sim.kubesched.io/provisioning-time"


def _access_modes(c: Checker, spec: dict[str, Any], path: str, missing: str) -> None:
    modes_path = subpath(path, "accessModes")
    modes = c.get(spec, "accessModes", path, list)
    if not modes:
        if modes is not None or spec.get("accessModes") is None:
            c.required(modes_path, missing)
        return
    exclusive = shared = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            c.unsupported(modes_path, mode, ACCESS_MODES)
        elif mode == READ_WRITE_ONCE_POD:
            exclusive = True
        else:
            shared = True
    if exclusive and shared:
        c.err(modes_path, "Forbidden: may not use ReadWriteOncePod with other access modes")


def _positive_quantity(c: Checker, value: Any, path: str) -> None:
    amount = _quantity(c, value, path)
    if amount is not None and amount <= 0:
        c.invalid(path, str(value), POSITIVE_MSG)


def _class_name(c: Checker, spec: dict[str, Any], path: str) -> None:
    name = c.get(spec, "storageClassName", path, str)
    if name:
        c.names(name, subpath(path, "storageClassName"), dns_subdomain_errors)


def _claim_spec(c: Checker, value: Any, path: str) -> None:
    """A PersistentVolumeClaimSpec: in a claim, or in a pod's ephemeral volume template."""
    spec = c.typed(value, path, dict)
    if spec is None:
        c.required(subpath(path, "accessModes"), "at least 1 access mode is required")
        c.required(subpath(path, "resources[storage]"))
        return
    _access_modes(c, spec, path, "at least 1 access mode is required")
    _label_selector(c, spec.get("selector"), subpath(path, "selector"))
    requests = ((c.get(spec, "resources", path, dict) or {}).get("requests")) or {}
    if not isinstance(requests, dict) or requests.get("storage") is None:
        c.required(subpath(path, "resources[storage]"))
    else:
        _positive_quantity(c, requests["storage"], subpath(path, "resources[storage]"))
    _class_name(c, spec, path)
    c.enum(spec, "volumeMode", path, VOLUME_MODES)
    c.get(spec, "volumeName", path, str)


def _persistent_volume(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    _access_modes(c, spec, spec_path, "")
    cap_path = subpath(spec_path, "capacity")
    cap = c.get(spec, "capacity", spec_path, dict) or {}
    if not cap:
        c.required(cap_path)
    if "storage" not in cap or len(cap) > 1:
        c.unsupported(cap_path, cap, ("storage",))
    for name, amount in cap.items():
        _positive_quantity(c, amount, f"{cap_path}[{name}]")
    c.enum(spec, "persistentVolumeReclaimPolicy", spec_path, ("Delete", "Recycle", "Retain"))
    affinity_path = subpath(spec_path, "nodeAffinity")
    affinity = c.get(spec, "nodeAffinity", spec_path, dict)
    if affinity is not None:
        if affinity.get("required") is None:
            c.required(subpath(affinity_path, "required"), "must specify required node constraints")
        else:
            _node_selector(c, affinity["required"], subpath(affinity_path, "required"))
    sources = [key for key in PV_SOURCES if spec.get(key) is not None]
    if not sources:
        c.required(spec_path, "must specify a volume type")
    for key in sources[1:]:
        c.err(subpath(spec_path, key), "Forbidden: may not specify more than 1 volume type")
    if "local" in sources and affinity is None:
        c.required(affinity_path, "Local volume requires node affinity")
    csi = c.get(spec, "csi", spec_path, dict)
    if csi is not None:
        for key in ("driver", "volumeHandle"):
            if not csi.get(key):
                c.required(subpath(subpath(spec_path, "csi"), key))
    _class_name(c, spec, spec_path)
    c.enum(spec, "volumeMode", spec_path, VOLUME_MODES)
    status = c.get(obj, "status", path, dict)
    if status is not None:
        c.enum(status, "phase", subpath(path, "status"), PV_PHASES)


def _persistent_volume_claim(c: Checker, obj: dict[str, Any], path: str) -> None:
    _claim_spec(c, obj.get("spec"), subpath(path, "spec"))
    status = c.get(obj, "status", path, dict)
    if status is not None:
        c.enum(status, "phase", subpath(path, "status"), PVC_PHASES)


def _topology_terms(c: Checker, value: Any, path: str) -> None:
    """A StorageClass's allowedTopologies: label keys with distinct values, each term distinct."""
    seen: list[dict[str, set[str]]] = []
    for i, term in enumerate(c.typed(value, path, list) or []):
        term_path = f"{path}[{i}]"
        exprs_path = subpath(term_path, "matchLabelExpressions")
        exprs: dict[str, set[str]] = {}
        for j, expr in enumerate(c.get(c.typed(term, term_path, dict) or {}, "matchLabelExpressions", term_path,
                                       list) or []):
            expr_path = f"{exprs_path}[{j}]"
            if c.typed(expr, expr_path, dict) is None:
                continue
            values: set[str] = set()
            listed = c.get(expr, "values", expr_path, list) or []
            if not listed:
                c.required(subpath(expr_path, "values"))
            for k, item in enumerate(listed):
                if c.typed(item, f"{expr_path}.values[{k}]", str) is None:
                    continue
                if item in values:
                    c.err(f"{expr_path}.values[{k}]", f"Duplicate value: {_show(item)}")
                values.add(item)
            key = c.get(expr, "key", expr_path, str) or ""
            c.names(key, subpath(expr_path, "key"), qualified_name_errors)
            if key in exprs:
                c.err(subpath(expr_path, "key"), f"Duplicate value: {_show(key)}")
            exprs[key] = values
        # Upstream compares each term with the ones before it and with as many empty placeholders,
        # so an empty term is always a duplicate.
        if exprs in seen or not exprs:
            c.err(exprs_path, 'Duplicate value: ""')
        seen.append(exprs)


def _storage_class(c: Checker, obj: dict[str, Any], path: str) -> None:
    provisioner = c.get(obj, "provisioner", path, str)
    if not provisioner:
        c.required(subpath(path, "provisioner"))
    else:
        for msg in qualified_name_errors(provisioner.lower()):
            c.invalid(subpath(path, "provisioner"), provisioner.lower(), msg)
    c.get(obj, "parameters", path, dict)
    c.enum(obj, "reclaimPolicy", path, ("Delete", "Retain"))
    c.enum(obj, "volumeBindingMode", path, (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER))
    _topology_terms(c, obj.get("allowedTopologies"), subpath(path, "allowedTopologies"))
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if isinstance(annotations, dict) and annotations.get(SIM_PROVISIONING_TIME, "never") != "never":
        c.duration(annotations, SIM_PROVISIONING_TIME, subpath(path, "metadata.annotations"))


def _csi_driver_name(c: Checker, name: Any, path: str) -> None:
    """ValidateCSIDriverName: required, at most 63 characters, a DNS subdomain once lower-cased."""
    if not name:
        c.required(path)
        return
    if len(name) > 63:
        c.err(path, "Too long: may not be more than 63 bytes")
    for msg in dns_subdomain_errors(name.lower()):
        c.invalid(path, name, msg)


def _csi_node(c: Checker, obj: dict[str, Any], path: str) -> None:
    drivers_path = subpath(path, "spec.drivers")
    names: set[str] = set()
    for i, driver in enumerate(c.get(c.get(obj, "spec", path, dict) or {}, "drivers", subpath(path, "spec"), list) or []):
        driver_path = f"{drivers_path}[{i}]"
        if c.typed(driver, driver_path, dict) is None:
            continue
        name = c.get(driver, "name", driver_path, str)
        _csi_driver_name(c, name, subpath(driver_path, "name"))
        if name and name in names:
            c.err(subpath(driver_path, "name"), f"Duplicate value: {_show(name)}")
        names.add(name or "")
        node_id = c.get(driver, "nodeID", driver_path, str)
        if not node_id:
            c.required(subpath(driver_path, "nodeID"))
        elif len(node_id) > 192:
            c.invalid(subpath(driver_path, "nodeID"), node_id, "must be 192 characters or less")
        count = c.get(c.get(driver, "allocatable", driver_path, dict) or {}, "count", subpath(driver_path, "allocatable"),
                      int, 32)
        if count is not None and count < 0:
            c.invalid(subpath(driver_path, "allocatable.count"), count, NONNEGATIVE_MSG)
        keys: set[str] = set()
        for k, key in enumerate(c.get(driver, "topologyKeys", driver_path, list) or []):
            if c.typed(key, f"{driver_path}.topologyKeys[{k}]", str) is None:
                continue
            if key in keys:
                c.err(driver_path, f"Duplicate value: {_show(key)}")
            keys.add(key)
            c.names(key, driver_path, qualified_name_errors)


def _csi_driver(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    for key in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"):
        c.get(spec, key, spec_path, bool)
    c.enum(spec, "fsGroupPolicy", spec_path, ("File", "None", "ReadWriteOnceWithFSType"))
    modes_path = subpath(spec_path, "volumeLifecycleModes")
    for mode in c.get(spec, "volumeLifecycleModes", spec_path, list) or []:
        if mode not in ("Persistent", "Ephemeral"):
            c.unsupported(modes_path, mode, ("Persistent", "Ephemeral"))


def _pod_volumes(c: Checker, value: Any, path: str) -> None:
    """spec.volumes: unique DNS-label names, one source each; claims name their claim."""
    names: set[str] = set()
    for i, vol in enumerate(c.typed(value, path, list) or []):
        vol_path = f"{path}[{i}]"
        if c.typed(vol, vol_path, dict) is None:
            continue
        name = c.get(vol, "name", vol_path, str)
        if not name:
            c.required(subpath(vol_path, "name"))
        elif name in names:
            c.err(subpath(vol_path, "name"), f"Duplicate value: {_show(name)}")
        else:
            c.names(name, subpath(vol_path, "name"), dns_label_errors)
            names.add(name)
        sources = [key for key in POD_VOLUME_SOURCES if vol.get(key) is not None]
        for key in sources[1:]:
            c.err(subpath(vol_path, key), "Forbidden: may not specify more than 1 volume type")
        claim = c.get(vol, "persistentVolumeClaim", vol_path, dict)
        claim_path = subpath(vol_path, "persistentVolumeClaim")
        if claim is not None and not c.get(claim, "claimName", claim_path, str):
            c.required(subpath(vol_path, "persistentVolumeClaim.claimName"))
        ephemeral = c.get(vol, "ephemeral", vol_path, dict)
        if ephemeral is not None:
            template_path = subpath(vol_path, "ephemeral.volumeClaimTemplate")
            template = c.get(ephemeral, "volumeClaimTemplate", subpath(vol_path, "ephemeral"), dict)
            if template is None:
                c.required(template_path)
            else:
                _claim_spec(c, template.get("spec"), subpath(template_path, "spec"))




def check_shape(c: Checker, value: Any, path: str, schema: Any) -> None:
    """Light type checks: `schema` is a type, a mapping of field -> schema ("*": any other
    field) or [schema] for a list."""
    if value is None:
        return
    if isinstance(schema, list):
        item_type = list if isinstance(schema[0], list) else dict if isinstance(schema[0], dict) else schema[0]
        for i, item in enumerate(c.typed(value, path, list) or []):
            if item is None:  # a null list item is as wrong as any other type there
                c.err(f"{path}[{i}]", f"expected {_EXPECTED[item_type]}, got null")
            check_shape(c, item, f"{path}[{i}]", schema[0])
    elif isinstance(schema, dict):
        mapping = c.typed(value, path, dict) or {}
        for key, item in mapping.items():
            sub = schema.get(key, schema.get("*"))
            if sub is not None:
                check_shape(c, item, subpath(path, key), sub)
    else:
        c.typed(value, path, schema)



# --- LimitRange and ResourceQuota (pkg/apis/core/validation) --------------------------------------------

LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
# helper.standardResources / standardQuotaResources (hugepages-* and requests.hugepages-* too).
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers"})
_QUOTA_RESOURCES = _STANDARD_RESOURCES - {"storage"}
_INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
                                "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})
# The scopes whose resources are limited (IsResourceQuotaScopeValidForResource); others take any.
_POD_SCOPED = frozenset({"pods", "cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"})
_SCOPE_RESOURCES = {"Terminating": _POD_SCOPED, "NotTerminating": _POD_SCOPED, "NotBestEffort": _POD_SCOPED,
                    "PriorityClass": _POD_SCOPED, "CrossNamespacePodAffinity": _POD_SCOPED,
                    "BestEffort": frozenset({"pods"}),
                    "VolumeAttributesClass": frozenset({"persistentvolumeclaims", "requests.storage"})}
_EXISTS_ONLY_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "CrossNamespacePodAffinity")
_CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))


def _is_hugepages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _resource_name(c: Checker, name: str, path: str, standard: frozenset[str], message: str) -> bool:
    """validateResourceName: a qualified name; without a domain, one of `standard`."""
    errors = qualified_name_errors(name)
    for msg in errors:
        c.invalid(path, name, msg)
    if not errors and "/" not in name and name not in standard and not _is_hugepages(name):
        c.invalid(path, name, message)
        return False
    return not errors


def _container_resource_name(c: Checker, name: str, path: str) -> None:
    """validateContainerResourceName: cpu, memory, ephemeral-storage, hugepages-*, or an extended resource."""
    if not _resource_name(c, name, path, _STANDARD_RESOURCES, "must be a standard resource type or fully qualified"):
        return
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            c.invalid(path, name, "must be a standard resource for containers")
    elif "kubernetes.io/" not in name and (name.startswith("requests.") or qualified_name_errors("requests." + name)):
        c.invalid(path, name, "doesn't follow extended resource name standard")


def _quantities(c: Checker, value: Any, path: str) -> dict[str, tuple[Any, Fraction]]:
    """A resource list's names and amounts (the quantities must parse; names are checked by the caller)."""
    good = {}
    for name, raw in (c.typed(value, path, dict) or {}).items():
        try:
            good[name] = (raw, parse_quantity(raw))
        except QuantityError as e:
            c.err(subpath(path, name), str(e))
    return good


def _limit_range(c: Checker, obj: dict[str, Any], path: str) -> None:
    """ValidateLimitRange: one item per type, known resource names, and min <= defaultRequest <=
    default <= max, a ratio of at least 1 that max/min allows."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    seen: set[str] = set()
    for i, item in enumerate(c.get(spec, "limits", spec_path, list) or ()):
        item_path = f"{spec_path}.limits[{i}]"
        if c.typed(item, item_path, dict) is None:
            continue
        kind = c.get(item, "type", item_path, str) or ""
        errors = qualified_name_errors(kind)
        for msg in errors:
            c.invalid(subpath(item_path, "type"), kind, msg)
        if not errors and "/" not in kind and kind not in LIMIT_TYPES:
            c.invalid(subpath(item_path, "type"), kind, "must be a standard limit type or fully qualified")
        if kind in seen:
            c.err(subpath(item_path, "type"), f"Duplicate value: {_show(kind)}")
        seen.add(kind)
        fields = ["max", "min", "maxLimitRequestRatio"]
        if kind == "Pod":
            for key in ("default", "defaultRequest"):
                if item.get(key):
                    c.err(subpath(item_path, key), "Forbidden: may not be specified when `type` is 'Pod'")
        else:
            fields += ["default", "defaultRequest"]
        lists = {}
        for key in fields:
            lists[key] = _quantities(c, item.get(key), subpath(item_path, key))
            for name in lists[key]:
                if kind in ("Pod", "Container"):
                    _container_resource_name(c, name, subpath(subpath(item_path, key), name))
                else:
                    _resource_name(c, name, subpath(subpath(item_path, key), name), _STANDARD_RESOURCES,
                                   "must be a standard resource type or fully qualified")
        if kind == "PersistentVolumeClaim" and "storage" not in lists["min"] and "storage" not in lists["max"]:
            c.required(subpath(item_path, "limits"), "either minimum or maximum storage value is required, "
                                                 "but neither was provided")
        for name in sorted({n for values in lists.values() for n in values}):
            _limit_range_item(c, item_path, name, lists)


def _limit_range_item(c: Checker, path: str, name: str, lists: dict[str, dict[str, tuple[Any, Fraction]]]) -> None:
    """The order rules between one resource's min, max, default, defaultRequest and ratio."""
    def get(key: str) -> tuple[Any, Fraction] | None:
        return lists.get(key, {}).get(name)

    def shown(pair: tuple[Any, Fraction]) -> str:
        return quantity_string(pair[0])

    low, high, default, request, ratio = get("min"), get("max"), get("default"), get("defaultRequest"), \
        get("maxLimitRequestRatio")
    checks = [("min", low, high, low, "min value {a} is greater than max value {b}"),
              ("defaultRequest", low, request, request, "min value {a} is greater than default request value {b}"),
              ("defaultRequest", request, high, request, "default request value {a} is greater than max value {b}"),
              ("defaultRequest", request, default, request,
               "default request value {a} is greater than default limit value {b}"),
              ("default", low, default, low, "min value {a} is greater than default value {b}"),
              ("default", default, high, high, "default value {a} is greater than max value {b}")]
    for key, a, b, value, message in checks:
        if a is not None and b is not None and a[1] > b[1]:
            c.invalid(subpath(subpath(path, key), name), shown(value), message.format(a=shown(a), b=shown(b)))
    ratio_path = subpath(subpath(path, "maxLimitRequestRatio"), name)
    if ratio is not None and ratio[1] < 1:
        c.invalid(ratio_path, shown(ratio), f"ratio {shown(ratio)} is less than 1")
    if ratio is not None and low is not None and high is not None and low[1]:
        most = float(milli_value(high[1])) / float(milli_value(low[1]))
        if float(milli_value(ratio[1])) / 1000 > most:
            c.invalid(ratio_path, shown(ratio), f"ratio {shown(ratio)} is greater than max/min = {most:f}")
    if not _overcommits(name) and default is not None and request is not None and default[1] != request[1]:
        c.invalid(subpath(subpath(path, "defaultRequest"), name), shown(request),
                  f"default value {shown(default)} must equal to defaultRequest value {shown(request)} in {name}")


def _overcommits(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources other than hugepages."""
    return ("/" not in name or "kubernetes.io/" in name) and not name.startswith("hugepages-")


def _resource_quota(c: Checker, obj: dict[str, Any], path: str) -> None:
    """ValidateResourceQuotaSpec: quota resource names with non-negative (integral where counted)
    amounts, known scopes that suit the resources, and a well-formed scope selector."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    hard_path = subpath(spec_path, "hard")
    hard = _quantities(c, spec.get("hard"), hard_path)
    for name, (raw, amount) in hard.items():
        item_path = subpath(hard_path, name)
        _resource_name(c, name, item_path, _QUOTA_RESOURCES, "must be a standard resource for quota")
        if amount < 0:
            c.invalid(item_path, quantity_string(raw), NONNEGATIVE_MSG)
        elif (name in _INTEGER_RESOURCES or is_extended_resource(name)) and amount.denominator != 1:
            c.invalid(item_path, quantity_string(raw), "must be an integer")
    standard = sorted(n for n in hard if n in _QUOTA_RESOURCES or _is_hugepages(n))
    scopes_path = subpath(spec_path, "scopes")
    scopes = [s for s in c.get(spec, "scopes", spec_path, list) or () if c.typed(s, scopes_path, str) is not None]
    problems = []  # upstream reports each message once (ErrorList.ToAggregate)
    for scope in scopes:
        if scope not in SCOPES:
            problems.append("unsupported scope")
        if any(name not in _SCOPE_RESOURCES.get(scope, {name}) for name in standard):
            problems.append("unsupported scope applied to resource")
    problems += ["conflicting scopes" for pair in _CONFLICTING_SCOPES if set(pair) <= set(scopes)]
    for problem in dict.fromkeys(problems):
        c.invalid(scopes_path, scopes, problem)
    selector_path = subpath(spec_path, "scopeSelector")
    selector = c.get(spec, "scopeSelector", spec_path, dict)
    if selector is not None:
        _scope_selector(c, selector, selector_path, standard)


def _scope_selector(c: Checker, selector: dict[str, Any], path: str, standard: list[str]) -> None:
    expressions_path = subpath(path, "matchExpressions")
    named = set()
    for i, req in enumerate(c.get(selector, "matchExpressions", path, list) or ()):
        req_path = f"{expressions_path}[{i}]"
        if c.typed(req, req_path, dict) is None:
            continue
        scope, operator = c.get(req, "scopeName", req_path, str), c.get(req, "operator", req_path, str)
        values = c.get(req, "values", req_path, list) or []
        if scope not in SCOPES:
            c.invalid(subpath(expressions_path, "scopeName"), scope, "unsupported scope")
        if any(name not in _SCOPE_RESOURCES.get(scope or "", {name}) for name in standard):
            c.invalid(expressions_path, selector, "unsupported scope applied to resource")
        if scope in _EXISTS_ONLY_SCOPES and operator != "Exists":
            c.invalid(subpath(expressions_path, "operator"), operator,
                      "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
                      "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                      "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity")
        if operator in ("In", "NotIn") and not values:
            c.required(subpath(expressions_path, "values"),
                       "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector")
        elif operator in ("Exists", "DoesNotExist") and values:
            c.invalid(subpath(expressions_path, "values"), values,
                      "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector")
        elif operator not in SCOPE_OPERATORS:
            c.invalid(subpath(expressions_path, "operator"), operator, "not a valid selector operator")
        named.add(scope)
    for pair in _CONFLICTING_SCOPES:
        if set(pair) <= named:
            c.invalid(expressions_path, selector, "conflicting scopes")


_KIND_CHECKS: dict[str, KindCheck] = {
    "Pod": _pod,
    "Node": _node,
    "PriorityClass": _priority_class,
    "PodDisruptionBudget": _pdb,
    "RuntimeClass": _runtime_class,
    "ReplicaSet": lambda c, obj, path: _workload(c, obj, path, "ReplicaSet"),
    "Deployment": lambda c, obj, path: _workload(c, obj, path, "Deployment"),
    "DaemonSet": lambda c, obj, path: _workload(c, obj, path, "DaemonSet"),
    "StatefulSet": _statefulset,
    "ReplicationController": _replication_controller,
    "Job": lambda c, obj, path: _job_spec(c, obj.get("spec"), subpath(path, "spec")),
    "CronJob": _cronjob,
    "PersistentVolume": _persistent_volume,
    "PersistentVolumeClaim": _persistent_volume_claim,
    "StorageClass": _storage_class,
    "CSINode": _csi_node,
    "CSIDriver": _csi_driver,
    "LimitRange": _limit_range,
    "ResourceQuota": _resource_quota,
    "Namespace": lambda c, obj, path: None,
}
# The kinds kubesched models: their apiVersions and their checks.
KINDS: dict[str, KindRule] = {kind: (versions, _KIND_CHECKS[kind]) for kind, versions in API_VERSIONS.items()}


# --- entry points -------------------------------------------------------------------------------------

def check_object(c: Checker, obj: dict[str, Any], path: str, allowed: tuple[str, ...],
                 kinds: Mapping[str, KindRule] = KINDS) -> bool:
    """Check one object (top level, or inside a document at `path`); False if its kind is unusable.
    `kinds` are the kinds the reader knows, `allowed` those it takes here. A kind it does not know
    (a Service, a custom resource) is checked as the API server would store it: well-formed
    metadata, and its fields if the Kubernetes client knows the kind."""
    kind = c.need(obj, "kind", path, str)
    api_version = c.need(obj, "apiVersion", path, str)
    if kind is None:
        return False
    custom = isinstance(api_version, str) and is_custom_group(api_version)
    if kind not in allowed or custom:
        if kind in kinds and not custom:
            c.unsupported(subpath(path, "kind"), kind, allowed)
            return False
        if isinstance(api_version, str) and (refusal := no_match(api_version, kind)) is not None:
            c.err(path, refusal)  # as kubectl refuses it, before the API server is asked
            return False
        findings = c.decode(kind, obj)
        before = len(c.problems)
        _metadata(c, obj, kind, path)
        c.decoded(findings, path, {p.path for p in c.problems[before:]})
        return True
    versions, check = kinds[kind]
    if api_version is not None and api_version not in versions:
        expected = " or ".join(f'"{v}"' for v in versions)
        c.err(subpath(path, "apiVersion"),
              f'no kind "{kind}" in version "{api_version}" (expected {expected})')
    findings = c.decode(kind, obj)  # first: it drops nulls, as the API server's decoding does
    before = len(c.problems)
    if kind in OBJECT_KINDS:
        _metadata(c, obj, kind, path)
    check(c, obj, path)
    c.decoded(findings, path, {p.path for p in c.problems[before:]})
    return True


def object_key(obj: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name) identifying an object; a namespaced object without a namespace is
    in "default", where the API server creates it (custom resources too: see namespaced)."""
    kind = str(obj.get("kind"))
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    return kind, (namespace or "default") if namespaced(kind) else "", name


def _group(obj: dict[str, Any], kind: str) -> str:
    """The API group whose resource stores `obj` (a modelled kind's own when `obj` does not say):
    a ServiceMonitor and a Service are different resources however alike their kinds, and an
    Event is one resource served by two groups."""
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str):
        return group_of(API_VERSIONS[kind][0]) if kind in API_VERSIONS else ""
    group = group_of(api_version)
    return "" if (group, kind) == ("events.k8s.io", "Event") else group


def _describe(key: tuple[str, str, str]) -> str:
    kind, namespace, name = key
    if not name:
        return kind
    return f'{kind} "{namespace}/{name}"' if namespace else f'{kind} "{name}"'


class Definitions:
    """The objects an input defines, by resource and key, with where each was defined first:
    defining one again is a duplicate, as creating it twice would be refused."""

    def __init__(self) -> None:
        # (group, kind, namespace, name) -> where it was defined first
        self.first: dict[tuple[str, str, str, str], str] = {}
        self.known: dict[tuple[str, str, str], dict[str, Any]] = {}  # object -> its latest known content

    def define(self, c: Checker, obj: dict[str, Any], path: str, where: str,
               key: tuple[str, str, str] | None = None) -> None:
        key = key or object_key(obj)
        identity = (_group(obj, key[0]), *key)
        if identity in self.first:
            c.err(subpath(path, "metadata.name" if key[2] else "kind"),
                  f"duplicate {_describe(key)} (first defined in {self.first[identity]})")
        else:
            self.first[identity] = where
            self.known[key] = obj

    def define_document(self, c: Checker, lo: LoadedObject) -> None:
        """A top-level object that `check_object` accepted (a nameless one was reported already)."""
        key = object_key(lo.obj)
        if key[2] or lo.obj["kind"] not in OBJECT_KINDS:
            self.define(c, lo.obj, "", lo.where, key)

    def remove(self, key: tuple[str, str, str]) -> None:
        """Forget a modelled object (a Scenario's delete or eviction of it)."""
        self.first.pop((_group({}, key[0]), *key), None)
        self.known.pop(key, None)


def validate(objects: list[LoadedObject], warnings: list[Problem] | None = None) -> None:
    """Check every object as the API server would create it, and that no two are the same object;
    raise InputError listing every problem found, in input order. What kube-apiserver would only
    warn about (unknown fields) is appended to `warnings`. Objects of the modelled kinds are
    decoded in place as the API server decodes them (a null field is unset): see fieldschema.decode.
    """
    problems: list[Problem] = []
    defined = Definitions()
    for lo in objects:
        c = Checker(lo, problems, warnings, decoding=True)
        if check_object(c, lo.obj, "", OBJECT_KINDS):
            defined.define_document(c, lo)
    if problems:
        raise InputError(problems)


def _findings(check: Callable[[Checker], None]) -> list[tuple[str, str]]:
    """(path, message) for each problem `check` finds, for checks run outside a loaded document."""
    problems: list[Problem] = []
    check(Checker(LoadedObject({}, "", 0), problems))
    return [(p.path, p.message) for p in problems]


def node_affinity_problems(value: Any, path: str) -> list[tuple[str, str]]:
    """(path, message) for what is wrong with a node affinity at `path` (the NodeAffinity scheduler
    plugin's `addedAffinity` is checked as a pod's node affinity is)."""
    return _findings(lambda c: _node_affinity(c, value, path))


def shape_problems(value: Any, schema: Any) -> list[tuple[str, str]]:
    """(path, message) for each value of `value` whose type `schema` does not allow (see check_shape)."""
    return _findings(lambda c: check_shape(c, value, "", schema))


def object_problems(obj: dict[str, Any]) -> list[str]:
    """`path: message` for each problem of one cluster object, for the API server's create/update.

    Kinds kubesched does not model (Event, ...) are accepted as they are.
    """
    if not isinstance(obj.get("kind"), str) or resource_kind(obj) not in OBJECT_KINDS:
        return []
    problems: list[Problem] = []
    check_object(Checker(LoadedObject(obj, "", 0), problems), obj, "", OBJECT_KINDS)
    return [f"{p.path}: {p.message}" if p.path else p.message for p in problems]
