"""Read Kubernetes objects from files and directories, remembering where each came from.

Every problem (missing file, YAML syntax error, a document that is not an object) is collected and
raised together as one InputError, so nothing is half-loaded and the user sees all of them at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import orjson
import yaml

from kubesched.api import yamljson
from kubesched.api.errors import InputError, Problem
from kubesched.api.objects import parse_time

EXTENSIONS = (".yaml", ".yml", ".json")
# Limits on what a document (and what YAML aliases) may build (real objects nest ~15 deep); beyond
# them the input is refused.
MAX_DEPTH = 100
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'{}[]"'))  # what _json_deeper_than deletes
MAX_EXPANDED_VALUES = 1_000_000
# Annotation on a List that `kubesched snapshot` wrote: when it read the cluster (virtual time 0).
SNAPSHOT_TIME = "kubesched.io/snapshot-time"

_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser is many times faster


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader that yields Kubernetes' JSON form, as sigs.k8s.io/yaml does (see yamljson).

    Plain scalars resolve as go-yaml v2 resolves them; a tag on a mapping or list changes nothing
    and an unknown tag on a scalar keeps its text, as in go-yaml; merge keys apply in their
    order, a later one replacing keys before it, as go-yaml v2 applies them.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return yamljson.plain_scalar(value)[0] if implicit[0] else _STR
        return _MAP if kind is yaml.MappingNode else _SEQ

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        node.value = _merged_pairs(node, set())


def _merged_pairs(node: yaml.MappingNode, expanding: set[int]) -> list[tuple[yaml.Node, yaml.Node]]:
    """A mapping's (key, value) pairs with each `<<` replaced by the pairs it merges, in go-yaml
    v2's order: where it stands, and a list of mappings last to first. Built into a mapping in
    this order, a later pair wins, as the later assignment does in Go."""
    if id(node) in expanding:
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping", node.start_mark, "a merge key refers to a mapping that contains it",
            node.start_mark)
    expanding.add(id(node))
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if not (key_node.tag == yamljson.MERGE and key_node.value == "<<" and key_node.__class__ is yaml.ScalarNode):
            pairs.append((key_node, value_node))
            continue
        merged = value_node.value[::-1] if value_node.__class__ is yaml.SequenceNode else [value_node]
        for source in merged:
            if source.__class__ is not yaml.MappingNode:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    "map merge requires map or sequence of maps as the value", source.start_mark)
            pairs.extend(_merged_pairs(source, expanding))
    expanding.discard(id(node))
    return pairs


def _mapping_key(node: yaml.Node, key_node: yaml.Node) -> str:
    """A key as sigs.k8s.io/yaml writes it into JSON: `1`, `true`, `1.5` become strings."""
    if key_node.__class__ is not yaml.ScalarNode:
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark)
    tag = key_node.tag
    if tag == _STR:
        return key_node.value
    try:
        return yamljson.json_key(yamljson.tagged_scalar(tag, key_node.value)[1])
    except yamljson.YAMLValueError as e:
        raise yaml.constructor.ConstructorError(None, None, str(e), key_node.start_mark) from None


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[str, Any]]:
    data: dict[str, Any] = {}
    yield data  # yield first so recursive (anchored) structures resolve, as PyYAML's own does
    loader.flatten_mapping(node)  # expand `<<` merge keys
    for key_node, value_node in node.value:
        # Convert each key before it meets the dict: `1` and `true` are equal in Python but not in JSON.
        data[_mapping_key(node, key_node)] = loader.construct_object(value_node)


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> Iterator[list[Any]]:
    data: list[Any] = []
    yield data
    data.extend(loader.construct_object(child) for child in node.value)


def _construct_scalar(loader: _Loader, node: yaml.ScalarNode) -> Any:
    """A number, boolean or null; mostly plain and untagged, so resolved from this very text."""
    try:
        found, value = yamljson.plain_json(node.value)
        if found != node.tag:  # `!!int abc`, `!!float 1`: an explicit tag the text must fit
            value = yamljson.json_value(yamljson.tagged_scalar(node.tag, node.value)[1])
        return value
    except yamljson.YAMLValueError as e:
        raise yaml.constructor.ConstructorError(None, None, str(e), node.start_mark) from None


def _construct_tagged(loader: _Loader, node: yaml.Node) -> Any:
    """Any node with an explicit tag: go-yaml builds a mapping or list whatever its tag, and a
    scalar from its text as its tag says (yamljson.tagged_scalar)."""
    if node.__class__ is yaml.MappingNode:
        return _construct_map(loader, node)
    if node.__class__ is yaml.SequenceNode:
        return _construct_seq(loader, node)
    try:
        return yamljson.json_value(yamljson.tagged_scalar(node.tag, node.value)[1])
    except yamljson.YAMLValueError as e:
        raise yaml.constructor.ConstructorError(None, None, str(e), node.start_mark) from None


_STR, _MAP, _SEQ = yamljson.STR, "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
# Tags the resolver gives plain scalars, whose constructors depend only on the scalar's text.
_PLAIN_SCALARS = frozenset({yamljson.INT, yamljson.FLOAT, yamljson.BOOL, yamljson.NULL})
_Loader.yaml_constructors = {tag: _construct_tagged for tag in (*_Loader.yaml_constructors, None)}
_Loader.yaml_multi_constructors = {}
for _tag in _PLAIN_SCALARS:
    _Loader.add_constructor(_tag, _construct_scalar)


class _FastLoader(_Loader):
    """_Loader building the same values in the same order with a fraction of the Python calls.

    PyYAML constructs every node through generic dispatch and a generator per mapping; here plain
    strings, numbers and the usual mappings and lists are built directly, and anything else (other
    tags, bad keys) goes through _Loader's own path. Mapping and list contents are still filled
    level by level, as PyYAML does, so the first error reported in a document is the same one.
    Most documents (no aliases, tags or merge keys) are built first in one recursive pass,
    `_simple_document`, which leaves anything else to that path.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._plain_tags: dict[str, str] = {}
        self.depth = 0  # of the last document, counted as it was built
        # Without aliases every node is met once, so a document may be built in one recursive pass.
        self._unshared = isinstance(stream, bytes) and b"*" not in stream
        if not self.yaml_path_resolvers:
            # The composer calls these around every node and, without path resolvers, they do
            # nothing: C callables that ignore their arguments save two Python calls per node.
            self.descend_resolver = {}.get
            self.ascend_resolver = tuple
            self.resolve = self._resolver()

    def _resolver(self) -> Any:
        """`resolve` as a closure over what it reads, as it is called for every node. Without path
        resolvers a plain scalar's tag depends on its text alone, so it is remembered."""
        known, scalar, mapping = self._plain_tags, yaml.ScalarNode, yaml.MappingNode
        str_tag, map_tag, seq_tag = self.DEFAULT_SCALAR_TAG, self.DEFAULT_MAPPING_TAG, self.DEFAULT_SEQUENCE_TAG
        general = super().resolve

        def resolve(kind: Any, value: Any, implicit: Any) -> Any:
            if kind is not scalar:
                return map_tag if kind is mapping else seq_tag
            if not implicit[0]:
                return str_tag
            tag = known.get(value)
            if tag is None:
                tag = known[value] = general(kind, value, implicit)
            return tag
        return resolve

    def construct_document(self, node: yaml.Node) -> Any:
        if self._unshared:
            try:
                data, self.depth = _simple_document(self, node)
                return data
            except _Unusual:
                pass  # built again below, where PyYAML's order of work decides which error comes first
        data = self._value(node)
        self.depth = 0  # levels of mappings and lists: each round below fills one
        while self.state_generators:
            self.depth += 1
            pending, self.state_generators = self.state_generators, []
            for item in pending:
                if type(item) is tuple:
                    self._fill(*item)
                else:
                    for _ in item:
                        pass
        self.constructed_objects = {}
        self.recursive_objects = {}
        self.deep_construct = False
        return data

    def _value(self, node: yaml.Node) -> Any:
        """What construct_object(node) returns; a mapping or list is filled later, in turn."""
        cls, tag = node.__class__, node.tag
        if cls is yaml.ScalarNode:
            if tag == _STR:
                return node.value
            if tag in _PLAIN_SCALARS:
                return self.yaml_constructors[tag](self, node)
        elif (cls is yaml.MappingNode and tag == _MAP) or (cls is yaml.SequenceNode and tag == _SEQ):
            done = self.constructed_objects
            if node in done:
                return done[node]
            data: Any = {} if tag == _MAP else []
            done[node] = data
            self.state_generators.append((node, data))
            return data
        return self.construct_object(node)

    def _fill(self, node: yaml.Node, data: Any) -> None:
        value, scalar = self._value, yaml.ScalarNode
        if type(data) is list:
            data.extend([child.value if child.__class__ is scalar and child.tag == _STR else value(child)
                         for child in node.value])
            return
        if any(key_node.tag == yamljson.MERGE for key_node, _ in node.value):
            self.flatten_mapping(node)
        for key_node, value_node in node.value:
            # Plain strings, most keys and values, inline: a call per scalar is much of the cost.
            key = key_node.value if key_node.__class__ is scalar and key_node.tag == _STR else _mapping_key(node, key_node)
            data[key] = (
                value_node.value if value_node.__class__ is scalar and value_node.tag == _STR else value(value_node))


class _Unusual(Exception):
    """A document `_simple_document` leaves to _FastLoader's general path."""


def _simple_document(loader: _FastLoader, root: yaml.Node) -> tuple[Any, int]:
    """(value, depth) of a document made only of plain mappings, lists and scalars, in one
    recursive pass; raises _Unusual for anything else (other tags, merge keys, a mapping or list as
    a key, nesting deeper than MAX_DEPTH, a scalar the constructors refuse), so that the general
    path reports it exactly as before. Its values equal that path's, key order included."""
    constructors, scalar_node, deepest = loader.yaml_constructors, yaml.ScalarNode, 0

    def scalar(node: yaml.Node) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        if tag not in _PLAIN_SCALARS:
            raise _Unusual
        try:
            return constructors[tag](loader, node)
        except Exception as e:
            raise _Unusual from e

    def container(node: yaml.Node, level: int) -> Any:
        nonlocal deepest
        if level > deepest:
            if level > MAX_DEPTH:
                raise _Unusual
            deepest = level
        below = level + 1
        if node.__class__ is yaml.MappingNode and node.tag == _MAP:
            data: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.__class__ is not scalar_node:
                    raise _Unusual
                if key_node.tag == _STR:
                    key = key_node.value
                elif key_node.tag in _PLAIN_SCALARS:
                    try:
                        key = _mapping_key(node, key_node)
                    except yaml.YAMLError as e:
                        raise _Unusual from e
                else:
                    raise _Unusual
                cls = value_node.__class__
                data[key] = (value_node.value if value_node.tag == _STR else scalar(value_node)) \
                    if cls is scalar_node else container(value_node, below)
            return data
        if node.__class__ is yaml.SequenceNode and node.tag == _SEQ:
            return [(item.value if item.tag == _STR else scalar(item)) if item.__class__ is scalar_node
                    else container(item, below) for item in node.value]
        raise _Unusual

    if root.__class__ is scalar_node:
        return scalar(root), 0
    return container(root, 1), deepest


class _GoQuoting:
    """A dumper's resolver that quotes, beside the strings PyYAML itself would misread, those
    go-yaml would read as something else (`y`, `n`, `1e3`, `0o17`): kubectl reads our files back
    as written."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        tag: str = super().resolve(kind, value, implicit)  # type: ignore[misc]
        if tag == _STR and kind is yaml.ScalarNode and implicit[0]:
            return yamljson.plain_scalar(value)[0]
        return tag


class Dumper(_GoQuoting, yaml.SafeDumper):
    """yaml.safe_dump's dumper, quoting as _GoQuoting does."""


class CDumper(_GoQuoting, getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """The C emitter, if there is one (exports run to 100k objects), quoting as _GoQuoting does."""


@dataclass
class LoadedObject:
    """One object with its origin: `doc` is 1-based in `source`; `item` is its index in a List;
    `snapshot_time` is when the cluster it came from was read, if its List recorded that."""

    obj: dict[str, Any]
    source: str
    doc: int
    item: int | None = None
    snapshot_time: datetime | None = None

    @property
    def path_prefix(self) -> str:
        """Field-path prefix locating the object inside its document ("items[3]" for List items)."""
        return "" if self.item is None else f"items[{self.item}]"

    @property
    def where(self) -> str:
        """Human-readable origin, e.g. "pods.yaml doc 2" or "all.yaml doc 1 items[3]"."""
        base = f"{self.source} doc {self.doc}"
        return f"{base} {self.path_prefix}" if self.item is not None else base

    def problem(self, path: str, message: str) -> Problem:
        """A Problem at `path` (relative to this object)."""
        prefix = self.path_prefix
        full = f"{prefix}.{path}" if prefix and path else prefix or path
        return Problem(self.source, self.doc, full, message)


def type_name(value: Any) -> str:
    """The YAML/JSON name of a value's type, for "expected a list, got string" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def load_paths(paths: list[str]) -> list[LoadedObject]:
    """Load every object from `paths` (files, or directories searched recursively), in order."""
    objects, problems = collect_paths(paths)
    if problems:
        raise InputError(problems)
    return objects


def collect_paths(paths: list[str], skipped: list[Problem] | None = None) -> tuple[list[LoadedObject], list[Problem]]:
    """Like `load_paths`, but return the problems beside whatever did load, so later checks can
    still report on the good files in the same run. With `skipped`, a file found in a directory
    that holds no Kubernetes object (a support bundle's `groups.json`, a list of error strings)
    is named there, to be warned about, rather than being a problem: a directory is read whole,
    and whatever else lives in it is not the user's input."""
    problems: list[Problem] = []
    objects: list[LoadedObject] = []
    for path in paths:
        if os.path.isdir(path):
            files = _directory_files(path)
            if not files:
                problems.append(Problem(path, None, "", "no .yaml, .yml or .json files in this directory"))
            for name in files:
                _load_file(name, objects, problems, skipped)
        else:
            _load_file(path, objects, problems)
    return objects, problems


def nothing_loaded(paths: list[str], objects: list[LoadedObject], problems: list[Problem],
                   skipped: Sequence[Problem] = ()) -> list[Problem]:
    """kubectl's `no objects passed` when the input held no object at all (empty files, only
    `---`, an empty List, nothing but skipped files) and nothing else was wrong with it: a run on
    nothing would only pretend to have simulated the user's cluster. Each path given is named,
    with a directory's files that were skipped (their warnings are not shown when a run fails)."""
    if objects or problems:
        return []
    found = []
    for path in paths:
        if not os.path.isdir(path):
            found.append(Problem(path, None, "", "no objects in this file (kubectl: no objects passed)"))
            continue
        inside = os.path.join(path, "")
        foreign = sum(p.source.startswith(inside) for p in skipped)
        also = f"; {foreign} file{'s' if foreign != 1 else ''} skipped, holding no Kubernetes object" if foreign else ""
        found.append(Problem(path, None, "", f"no objects in this directory (kubectl: no objects passed){also}"))
    return found


def _directory_files(directory: str) -> list[str]:
    found = []
    for root, _dirs, files in os.walk(directory):
        for name in files:
            if name.endswith(EXTENSIONS):
                found.append(os.path.relpath(os.path.join(root, name), directory))
    # Sort on path components so "a/b.yaml" and "a-b.yaml" order the same on every platform.
    return [os.path.join(directory, rel) for rel in sorted(found, key=lambda p: p.split(os.sep))]


def _load_file(path: str, objects: list[LoadedObject], problems: list[Problem],
               skipped: list[Problem] | None = None) -> None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        problems.append(Problem(path, None, "", "no such file or directory"))
        return
    except OSError as e:
        problems.append(Problem(path, None, "", f"cannot read: {e.strerror or e}"))
        return
    if path.endswith(".json"):
        docs = _json_documents(path, data, problems)  # the one document, if it parsed
        if docs and _json_deeper_than(data, MAX_DEPTH):
            problems.append(Problem(path, docs[0][0], "", f"nested more than {MAX_DEPTH} levels deep"))
            docs = []
    else:
        docs = _yaml_documents(path, data, problems)
    if skipped is not None and (foreign := _not_objects(docs)) and not any(p.source == path for p in problems):
        skipped.append(Problem(path, None, "", f"skipped: holds no Kubernetes object ({foreign})"))
        return
    for doc, value in docs:
        _add_document(path, doc, value, objects, problems)


def _not_objects(docs: list[tuple[int, Any]]) -> str:
    """What a file's documents are when none is a Kubernetes object (a mapping with `kind` or
    `apiVersion`), e.g. "a list of 3 strings"; "" when one is, or when there are none."""
    values = [value for _doc, value in docs if value is not None]
    if not values or any(isinstance(v, dict) and ("kind" in v or "apiVersion" in v) for v in values):
        return ""
    first = values[0]
    if isinstance(first, list):
        plural = "" if len(first) == 1 else "s"
        kinds = " and ".join(sorted({type_name(item) + plural for item in first}))
        what = f"a list of {len(first)} {kinds}" if first else "an empty list"
    elif isinstance(first, dict):
        what = "a mapping without apiVersion and kind"
    else:
        what = f"a {type_name(first)}"
    return what if len(values) == 1 else f"{what}, and {len(values) - 1} more documents"


def _json_deeper_than(data: bytes, limit: int) -> bool:
    """Whether the objects and arrays of a JSON text the parser took nest more than `limit` deep:
    the parsers take ~1000 levels, more than the recursion that copies and checks objects can
    (real objects nest ~15 deep). Read from the brackets outside strings: three to six times
    cheaper than walking the parsed values."""
    encoding = json.detect_encoding(data)
    if encoding not in ("utf-8", "utf-8-sig"):  # UTF-16 or 32, which json takes too: bytes of
        data = data.decode(encoding).encode()  # other characters could look like brackets there
    if b"\\" in data:  # with escaped backslashes and quotes gone, every quote opens or closes a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = np.frombuffer(data.translate(None, _NOT_STRUCTURE), dtype=np.uint8)
    inside = np.logical_xor.accumulate(marks == ord('"'))  # from a string's opening quote to its closing one
    step = ((marks == ord("{")) | (marks == ord("["))).view(np.int8) - ((marks == ord("}")) | (marks == ord("]"))).view(np.int8)
    step[inside] = 0
    return int(np.cumsum(step, dtype=np.int32 if len(step) < 2**31 else np.int64).max(initial=0)) > limit


def _json_documents(path: str, data: bytes, problems: list[Problem]) -> list[tuple[int, Any]]:
    if not data.strip():  # an empty file, as a support bundle writes where a collector found nothing
        return []
    # orjson parses twice as fast and agrees with json wherever it succeeds, but for integers past
    # 64 bits, which it turns into floats: with a run of 19 digits anywhere, json reads the file.
    if data.translate(_DIGITS_AS_ZERO).find(b"0" * 19) < 0:
        try:
            return [(1, orjson.loads(data))]
        except orjson.JSONDecodeError:
            pass  # json says what is wrong, in its words, or reads what orjson refuses (NaN, a BOM)
    try:
        return [(1, json.loads(data))]
    except UnicodeDecodeError:
        problems.append(Problem(path, None, "", "not UTF-8 text"))
    except RecursionError:
        problems.append(Problem(path, 1, "", "nested too deeply"))
    except json.JSONDecodeError as e:
        problems.append(Problem(path, 1, "", f"JSON syntax error at line {e.lineno}, column {e.colno}: {e.msg}"))
    return []


def _yaml_documents(path: str, data: bytes, problems: list[Problem]) -> list[tuple[int, Any]]:
    """The documents, numbered from 1. One nested too deeply is found by the loader, which counted
    its levels while building it; a JSON text's brackets are counted for that (`_json_deeper_than`)."""
    docs: list[tuple[int, Any]] = []
    too_deep: list[Problem] = []
    built = 0
    loader = _FastLoader(data)
    try:
        while loader.check_data():
            value = loader.get_data()
            built += 1
            if loader.depth > MAX_DEPTH:
                too_deep.append(Problem(path, built, "", f"nested more than {MAX_DEPTH} levels deep"))
            else:
                docs.append((built, value))
    except yaml.YAMLError as e:
        problems.append(Problem(path, built + 1, "", _yaml_message(e)))
    except RecursionError:
        problems.append(Problem(path, built + 1, "", "nested too deeply"))
    finally:
        loader.dispose()
    problems.extend(too_deep)
    if b"*" not in data:  # no aliases: every mapping and list is already its own
        return docs
    unshared = []
    for doc, value in docs:
        try:
            unshared.append((doc, _Unaliaser().copy(value, frozenset(), 0)))
        except ValueError as e:
            problems.append(Problem(path, doc, "", str(e)))
    return unshared


def read_yaml(data: bytes) -> Any:
    """The first YAML document of `data` in Kubernetes' JSON form, as the API server reads a YAML
    request body; raises yaml.YAMLError for bad YAML, ValueError for aliases that expand too far
    or nesting deeper than MAX_DEPTH."""
    loader = _FastLoader(data)
    try:
        value = loader.get_data() if loader.check_data() else None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    finally:
        loader.dispose()
    if loader.depth > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return _Unaliaser().copy(value, frozenset(), 0) if b"*" in data else value


class _Unaliaser:
    """Copies a document so each YAML alias becomes an independent value, as in Kubernetes' JSON form.

    Shared parts would otherwise be changed together when one object is defaulted or patched; a
    self-containing alias or an alias bomb is refused rather than looping or exhausting memory.
    """

    def __init__(self) -> None:
        self.values = 0

    def copy(self, value: Any, containers: frozenset[int], depth: int) -> Any:
        self.values += 1
        if self.values > MAX_EXPANDED_VALUES:
            raise ValueError(f"YAML aliases expand to more than {MAX_EXPANDED_VALUES} values")
        if not isinstance(value, (dict, list)):
            return value
        if id(value) in containers:
            raise ValueError("a YAML alias refers to a mapping or list that contains it")
        if depth >= MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
        inside = containers | {id(value)}
        if isinstance(value, dict):
            return {k: self.copy(v, inside, depth + 1) for k, v in value.items()}
        return [self.copy(v, inside, depth + 1) for v in value]


def _yaml_message(e: yaml.YAMLError) -> str:
    """One line: what is wrong and where, e.g. "YAML syntax error at line 4, column 7: ..."."""
    if isinstance(e, yaml.reader.ReaderError):
        return f"not valid text at byte {e.position}: {e.reason}"
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    what = getattr(e, "problem", None) or str(e).splitlines()[0]
    # A constructor's error is about a value the syntax allows (`!!int abc`, `.inf`, a null key).
    kind = "invalid YAML value" if isinstance(e, yaml.constructor.ConstructorError) else "YAML syntax error"
    if mark is None:
        return f"{kind}: {what}"
    return f"{kind} at line {mark.line + 1}, column {mark.column + 1}: {what}"


def _add_document(path: str, doc: int, value: Any, objects: list[LoadedObject], problems: list[Problem]) -> None:
    if value is None:  # an empty document ("---" with nothing after it) still counts for numbering
        return
    if not isinstance(value, dict):
        problems.append(Problem(path, doc, "", f"expected a mapping (a Kubernetes object), got {type_name(value)}"))
        return
    kind = value.get("kind")
    if not (isinstance(kind, str) and kind.endswith("List")):
        objects.append(LoadedObject(value, path, doc))
        return
    items = value.get("items")
    if items is None:  # `items: []` serialises as null or is left out when the list is empty
        return
    if not isinstance(items, list):
        problems.append(Problem(path, doc, "items", f"expected a list, got {type_name(items)}"))
        return
    exported = _snapshot_time(path, doc, value, problems)
    # A typed list (PodList) may omit kind/apiVersion on its items, as the API server's responses do.
    item_kind = kind[: -len("List")]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(Problem(path, doc, f"items[{i}]", f"expected a mapping, got {type_name(item)}"))
            continue
        if item_kind and "kind" not in item:
            item["kind"] = item_kind
            if "apiVersion" not in item and "apiVersion" in value:
                item["apiVersion"] = value["apiVersion"]
        objects.append(LoadedObject(item, path, doc, i, exported))


def _snapshot_time(path: str, doc: int, lst: dict[str, Any], problems: list[Problem]) -> datetime | None:
    """The export moment a List records: the objects' timestamps only bound it from below, and a
    kubelet's clock may run ahead of the API server's."""
    meta = lst.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    value = annotations.get(SNAPSHOT_TIME) if isinstance(annotations, dict) else None
    if value is None:
        return None
    try:
        when = parse_time(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        problems.append(Problem(path, doc, f"metadata.annotations.{SNAPSHOT_TIME}",
                                f"Invalid value: {json.dumps(value)}: must be an RFC 3339 time, e.g. 2026-01-01T00:00:00Z"))
        return None
    return when
