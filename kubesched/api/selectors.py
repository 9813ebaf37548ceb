"""Label selectors and node selectors, compiled once and matched on the scheduler's hot path.

Semantics follow k8s.io/apimachinery/pkg/labels (requirements are ANDed; ``NotIn`` and
``DoesNotExist`` match an absent key; ``Gt``/``Lt`` compare base-10 int64 label values),
``metav1.LabelSelectorAsSelector`` (a ``None`` selector matches nothing, ``{}`` matches
everything) and component-helpers' ``nodeaffinity`` (terms are ORed, an empty term matches
nothing, ``matchFields`` only know ``metadata.name``). Compilation validates keys, values and
operators the way ``labels.NewRequirement`` does, raising :class:`SelectorError` with a field path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, ClassVar

__all__ = [
    "LabelSelector",
    "NodeSelector",
    "PreferredSchedulingTerms",
    "RequiredNodeAffinity",
    "SelectorError",
]


class SelectorError(ValueError):
    """An invalid selector; ``path`` is relative to the selector, ``message`` is the detail."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


_LABEL_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64_RE = re.compile(r"[+-]?[0-9]+")
_NAME_CHARS_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")
_NODE_NAME_FIELD = "metadata.name"
_MIN_INT64, _MAX_INT64 = -(2**63), 2**63 - 1


def _supported(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _label_key_error(key: Any) -> str | None:
    """Why ``key`` is not a qualified label name (validation.IsQualifiedName), or None."""
    if not isinstance(key, str):
        return "must be a string"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if "/" in prefix:
            return f"a qualified name {_NAME_CHARS_MSG}, with an optional DNS subdomain prefix and '/'"
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return (
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character"
            )
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _LABEL_NAME_RE.fullmatch(name):
        return f"name part {_NAME_CHARS_MSG}"
    return None


def _label_value_error(value: Any) -> str | None:
    """Why ``value`` is not a valid label value (validation.IsValidLabelValue), or None."""
    if not isinstance(value, str):
        return "must be a string"
    if len(value) > 63:
        return "must be no more than 63 characters"
    if value and not _LABEL_NAME_RE.fullmatch(value):
        return f"a valid label must be an empty string or {_NAME_CHARS_MSG.removeprefix('must ')}"
    return None


@lru_cache(maxsize=16384)
def _parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): no spaces or underscores, must fit in int64."""
    if not _INT64_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _MIN_INT64 <= n <= _MAX_INT64 else None


class _Requirements:
    """An AND of label requirements, grouped by operator so matching is a few tight loops."""

    __slots__ = ("_absent", "_exists", "_gt", "_in", "_lt", "_not_in")

    def __init__(self) -> None:
        self._in: list[tuple[str, frozenset[str]]] = []
        self._not_in: list[tuple[str, frozenset[str]]] = []
        self._exists: list[str] = []
        self._absent: list[str] = []
        self._gt: list[tuple[str, int]] = []
        self._lt: list[tuple[str, int]] = []

    def add(self, path: str, key: Any, op: str, values: Any) -> None:
        """Validate and add one requirement, mirroring labels.NewRequirement's checks."""
        if (msg := _label_key_error(key)) is not None:
            raise SelectorError(f"{path}.key", f'Invalid value: "{key}": {msg}')
        values = [] if values is None else values
        if not isinstance(values, list):
            raise SelectorError(f"{path}.values", "must be a list of strings")
        if op in ("In", "NotIn"):
            if not values:
                raise SelectorError(
                    f"{path}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise SelectorError(
                    f"{path}.values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
        elif len(values) != 1:
            raise SelectorError(
                f"{path}.values",
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            )
        for i, v in enumerate(values):
            if (msg := _label_value_error(v)) is not None:
                raise SelectorError(f"{path}.values[{i}]", f'Invalid value: "{v}": {msg}')
        if op in ("Gt", "Lt") and _parse_int64(values[0]) is None:
            raise SelectorError(
                f"{path}.values[0]",
                f"Invalid value: \"{values[0]}\": for 'Gt', 'Lt' operators, the value must be an integer",
            )
        self.add_valid(key, op, values)

    def add_valid(self, key: str, op: str, values: list[str]) -> None:
        """Add a requirement already known to be well-formed."""
        if op == "In":
            self._in.append((key, frozenset(values)))
        elif op == "NotIn":
            self._not_in.append((key, frozenset(values)))
        elif op == "Exists":
            self._exists.append(key)
        elif op == "DoesNotExist":
            self._absent.append(key)
        else:
            (self._gt if op == "Gt" else self._lt).append((key, _parse_int64(values[0])))

    def __bool__(self) -> bool:
        return bool(self._in or self._not_in or self._exists or self._absent or self._gt or self._lt)

    def keys(self) -> set[str]:
        """The label keys whose values (or absence) decide a match."""
        pairs = (*self._in, *self._not_in, *self._gt, *self._lt)
        return {key for key, _ in pairs} | set(self._exists) | set(self._absent)

    def matches(self, labels: Mapping[str, str]) -> bool:
        get = labels.get
        for key, values in self._in:
            if get(key) not in values:
                return False
        for key, values in self._not_in:
            if get(key) in values:
                return False
        for key in self._exists:
            if key not in labels:
                return False
        for key in self._absent:
            if key in labels:
                return False
        for key, bound in self._gt:
            n = _label_int(get(key))
            if n is None or n <= bound:
                return False
        for key, bound in self._lt:
            n = _label_int(get(key))
            if n is None or n >= bound:
                return False
        return True


def _label_int(value: str | None) -> int | None:
    return None if value is None else _parse_int64(value)


class LabelSelector:
    """A compiled ``metav1.LabelSelector`` (pod affinity terms, spread constraints, PDBs...)."""

    __slots__ = ("_nothing", "_reqs")

    NOTHING: ClassVar[LabelSelector]
    EVERYTHING: ClassVar[LabelSelector]

    def __init__(self, reqs: _Requirements, nothing: bool = False) -> None:
        self._reqs = reqs
        self._nothing = nothing

    @classmethod
    def compile(cls, d: Mapping[str, Any] | None) -> LabelSelector:
        """Compile like LabelSelectorAsSelector: ``None`` selects nothing, ``{}`` everything."""
        if d is None:
            return cls.NOTHING
        match_labels = d.get("matchLabels") or {}
        expressions = d.get("matchExpressions") or []
        if not match_labels and not expressions:
            return cls.EVERYTHING
        reqs = _Requirements()
        for key, val in match_labels.items():
            if (msg := _label_key_error(key) or _label_value_error(val)) is not None:
                raise SelectorError("matchLabels", f'Invalid value: "{key}": {msg}')
            reqs.add_valid(key, "In", [val])
        for i, expr in enumerate(expressions):
            path = f"matchExpressions[{i}]"
            op = expr.get("operator")
            if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                raise SelectorError(f"{path}.operator", f'"{op}" is not a valid label selector operator')
            reqs.add(path, expr.get("key"), op, expr.get("values"))
        return cls(reqs)

    @property
    def is_empty(self) -> bool:
        """True when the selector places no restriction (labels.Selector.Empty)."""
        return not self._nothing and not self._reqs

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self._nothing and self._reqs.matches(labels)


    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse the string form (labels.Parse): ``a=b,c!=d,e in (f,g),h notin (i),j,!k``."""
        reqs = _Requirements()
        for i, part in enumerate(_split_requirements(text)):
            path = f"requirement {i + 1}"
            if m := re.fullmatch(r"\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*", part):
                values = [v.strip() for v in m.group(3).split(",") if v.strip()]
                reqs.add(path, m.group(1), "In" if m.group(2) == "in" else "NotIn", values)
            elif m := re.fullmatch(r"\s*([^=!\s]+)\s*(==|=|!=)\s*(\S*)\s*", part):
                reqs.add(path, m.group(1), "NotIn" if m.group(2) == "!=" else "In", [m.group(3)])
            elif m := re.fullmatch(r"\s*!\s*(\S+)\s*", part):
                reqs.add(path, m.group(1), "DoesNotExist", None)
            elif m := re.fullmatch(r"\s*(\S+)\s*", part):
                reqs.add(path, m.group(1), "Exists", None)
            else:
                raise SelectorError(path, f'unable to parse requirement: "{part.strip()}"')
        return cls(reqs)


def _split_requirements(text: str) -> list[str]:
    """Split on commas outside parentheses; an empty string has no requirements."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


LabelSelector.NOTHING = LabelSelector(_Requirements(), nothing=True)
LabelSelector.EVERYTHING = LabelSelector(_Requirements())


class _Term:
    """One NodeSelectorTerm: its label requirements AND its metadata.name requirements."""

    __slots__ = ("_name_in", "_name_not_in", "_reqs")

    def __init__(self, reqs: _Requirements, name_in: tuple[str, ...], name_not_in: tuple[str, ...]) -> None:
        self._reqs = reqs
        self._name_in = name_in
        self._name_not_in = name_not_in

    @classmethod
    def compile(cls, term: Mapping[str, Any], path: str) -> _Term:
        reqs = _Requirements()
        for i, expr in enumerate(term.get("matchExpressions") or []):
            p = f"{path}.matchExpressions[{i}]"
            op = expr.get("operator")
            if op not in _NODE_OPERATORS:
                raise SelectorError(
                    f"{p}.operator",
                    f'Unsupported value: "{op}": supported values: {_supported(_NODE_OPERATORS)}',
                )
            reqs.add(p, expr.get("key"), op, expr.get("values"))
        name_in: list[str] = []
        name_not_in: list[str] = []
        for i, expr in enumerate(term.get("matchFields") or []):
            p = f"{path}.matchFields[{i}]"
            op, values = expr.get("operator"), expr.get("values") or []
            if op not in _FIELD_OPERATORS:
                raise SelectorError(
                    f"{p}.operator",
                    f'Unsupported value: "{op}": supported values: {_supported(_FIELD_OPERATORS)}',
                )
            if expr.get("key") != _NODE_NAME_FIELD:
                raise SelectorError(
                    f"{p}.key", f'Invalid value: "{expr.get("key")}": not a valid field selector key'
                )
            if len(values) != 1:
                raise SelectorError(
                    f"{p}.values",
                    "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            (name_in if op == "In" else name_not_in).append(values[0])
        return cls(reqs, tuple(name_in), tuple(name_not_in))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self._reqs.matches(labels):
            return False
        # Upstream only builds the field set from a non-empty name, and skips matchFields without it.
        if node_name:
            for name in self._name_in:
                if node_name != name:
                    return False
            if node_name in self._name_not_in:
                return False
        return True


    def label_keys(self) -> set[str] | None:
        """The label keys that decide a match, or None when the node's name does too."""
        return None if self._name_in or self._name_not_in else self._reqs.keys()


def _is_empty_term(term: Mapping[str, Any] | None) -> bool:
    return not term or (not term.get("matchExpressions") and not term.get("matchFields"))


class NodeSelector:
    """A compiled ``v1.NodeSelector``: ORed terms, where a term with no requirements matches nothing.

    With ``lazy=True`` invalid terms never match and are recorded in ``errors`` instead of raising,
    as the scheduler's NodeAffinity filter does for backwards compatibility (LazyErrorNodeSelector).
    """

    __slots__ = ("errors", "_terms")

    def __init__(self, terms: tuple[_Term, ...], errors: tuple[SelectorError, ...] = ()) -> None:
        self._terms = terms
        self.errors = errors

    @classmethod
    def compile(cls, d: Mapping[str, Any], *, lazy: bool = False) -> NodeSelector:
        terms: list[_Term] = []
        errors: list[SelectorError] = []
        for i, term in enumerate(d.get("nodeSelectorTerms") or []):
            if _is_empty_term(term):
                continue
            try:
                terms.append(_Term.compile(term, f"nodeSelectorTerms[{i}]"))
            except SelectorError as err:
                if not lazy:
                    raise
                errors.append(err)
        return cls(tuple(terms), tuple(errors))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        for term in self._terms:  # noqa: SIM110 - a plain loop is ~2x faster than any() on this hot path
            if term.matches(labels, node_name):
                return True
        return False

    def label_keys(self) -> set[str] | None:
        """The label keys that decide a match, or None when the node's name does too: nodes
        alike in those labels match alike."""
        keys: set[str] = set()
        for term in self._terms:
            term_keys = term.label_keys()
            if term_keys is None:
                return None
            keys |= term_keys
        return keys


class PreferredSchedulingTerms:
    """Compiled ``preferredDuringSchedulingIgnoredDuringExecution`` of a pod's node affinity."""

    __slots__ = ("_terms",)

    def __init__(self, terms: tuple[tuple[_Term, int], ...]) -> None:
        self._terms = terms

    @classmethod
    def compile(
        cls, terms: list[Mapping[str, Any]] | None, *, validate: bool = False
    ) -> PreferredSchedulingTerms:
        """Compile like nodeaffinity.NewPreferredSchedulingTerms.

        The scheduler skips terms with weight 0 or an empty preference rather than rejecting them;
        ``validate=True`` adds the API server's check that weights lie in 1..100.
        """
        compiled: list[tuple[_Term, int]] = []
        for i, term in enumerate(terms or []):
            weight = term.get("weight", 0)
            if validate and not (isinstance(weight, int) and 1 <= weight <= 100):
                raise SelectorError(f"[{i}].weight", f'Invalid value: "{weight}": must be in the range 1-100')
            preference = term.get("preference")
            if weight == 0 or _is_empty_term(preference):
                continue
            compiled.append((_Term.compile(preference, f"[{i}].preference"), int(weight)))
        return cls(tuple(compiled))

    def score(self, labels: Mapping[str, str], node_name: str) -> int:
        """Sum of the weights of the terms the node matches."""
        return sum(weight for term, weight in self._terms if term.matches(labels, node_name))


class RequiredNodeAffinity:
    """``spec.nodeSelector`` AND required node affinity, as nodeaffinity.GetRequiredNodeAffinity builds.

    Invalid affinity terms simply never match (the filter ignores parse errors); an affinity with
    no usable terms matches no node.
    """

    __slots__ = ("_node_selector", "_affinity")

    def __init__(self, node_selector: tuple[tuple[str, str], ...], affinity: NodeSelector | None) -> None:
        self._node_selector = node_selector
        self._affinity = affinity

    @classmethod
    def from_pod(cls, pod_spec: Mapping[str, Any]) -> RequiredNodeAffinity:
        node_selector = tuple((pod_spec.get("nodeSelector") or {}).items())
        required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        return cls(node_selector, None if required is None else NodeSelector.compile(required, lazy=True))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        get = labels.get
        for key, val in self._node_selector:
            if get(key) != val:
                return False
        return self._affinity is None or self._affinity.matches(labels, node_name)

    def label_keys(self) -> set[str] | None:
        """As NodeSelector.label_keys, for both parts."""
        keys = None if self._affinity is None else self._affinity.label_keys()
        if keys is None and self._affinity is not None:
            return None
        return (keys or set()) | {key for key, _ in self._node_selector}
