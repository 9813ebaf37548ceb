"""The toolkit of the API server's create-time checks: the Checker that collects problems with their
field paths in the API server's words, and the rules every group shares (names, labels, metadata,
quantities, selectors, shapes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

from kubesched.api.duration import DurationError, parse_duration
from kubesched.api.errors import Problem
from kubesched.api.fieldschema import TIME_MSG, decode
from kubesched.api.loader import LoadedObject, type_name
from kubesched.api.names import dns_label_errors, dns_subdomain_errors, group_of, name_rule
from kubesched.api.objects import namespaced, parse_time
from kubesched.api.quantity import (
    QuantityError,
    parse_quantity,
    resource_amount,
)
from kubesched.api.selectors import LabelSelector, NodeSelector, SelectorError

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

    def annotations(self, annotations: dict[str, str], path: str, kind: str, pod_spec: Any) -> None:
        """Rules for annotations beyond their shape: the API server has none (any annotation is
        stored); a reader that acts on some of them (the simulation's own, kubesched.input.annotations)
        checks them here, with the object's kind and, for a pod or pod template, its spec."""

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


def _annotations(c: Checker, value: Any, path: str, kind: str, pod_spec: Any = None) -> None:
    """An object's (or a pod template's) annotations: a map of strings to the API server; what a
    reader gives them a meaning checks them beyond that (see Checker.annotations)."""
    c.annotations(check_string_map(c, value, path), path, kind, pod_spec)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


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
        _annotations(c, annotations, subpath(meta_path, "annotations"), kind, obj.get("spec"))
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


def _weight(c: Checker, term: dict[str, Any], path: str) -> None:
    weight = c.get(term, "weight", path, int, 32)
    if weight is None and term.get("weight") is None:
        weight = 0  # an absent int32 is 0 on the API server
    if weight is not None and not 1 <= weight <= 100:
        c.invalid(subpath(path, "weight"), weight, "must be in the range 1-100")


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
