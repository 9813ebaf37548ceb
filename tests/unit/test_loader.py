"""Loading objects from files: documents, Lists, directories, and one clear line per bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import loader
from kubesched.api.errors import InputError, Problem
from kubesched.api.loader import LoadedObject, load_paths


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Work in a temp dir so sources are short relative names, as a user would type them."""
    monkeypatch.chdir(tmp_path)


def write(name: str, text: str) -> str:
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text)
    return name


def problems(paths: list[str]) -> list[str]:
    with pytest.raises(InputError) as info:
        load_paths(paths)
    return str(info.value).splitlines()


POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c}]}\n"


def test_problem_and_input_error_format() -> None:
    assert str(Problem("pods.yaml", 3, "spec.x", "bad")) == "pods.yaml doc 3: spec.x: bad"
    assert str(Problem("pods.yaml", None, "", "no such file or directory")) == "pods.yaml: no such file or directory"
    assert str(Problem("pods.yaml", 2, "", "bad")) == "pods.yaml doc 2: bad"
    err = InputError([Problem("a", 1, "x", "m1"), Problem("b", None, "", "m2")])
    assert str(err) == "a doc 1: x: m1\nb: m2"
    assert len(err.problems) == 2


def test_multi_document_yaml_counts_empty_documents() -> None:
    write("pods.yaml", "---\n" + POD % "a" + "---\n---\n# only a comment\n---\n" + POD % "b")
    objs = load_paths(["pods.yaml"])
    assert [(o.obj["metadata"]["name"], o.source, o.doc, o.item) for o in objs] == [
        ("a", "pods.yaml", 1, None),
        ("b", "pods.yaml", 4, None),
    ]


def test_json_file() -> None:
    write("pod.json", json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}}))
    [obj] = load_paths(["pod.json"])
    assert (obj.obj["metadata"]["name"], obj.doc, obj.where) == ("j", 1, "pod.json doc 1")


def test_list_items_keep_the_list_doc_number_and_get_a_path_prefix() -> None:
    write("all.yaml", POD % "first" + "---\napiVersion: v1\nkind: List\nitems:\n"
          "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
          "- {apiVersion: v1, kind: Node, metadata: {name: n2}}\n")
    objs = load_paths(["all.yaml"])
    assert [(o.obj["metadata"]["name"], o.doc, o.item) for o in objs] == [("first", 1, None), ("n1", 2, 0), ("n2", 2, 1)]
    assert objs[2].path_prefix == "items[1]"
    assert objs[2].where == "all.yaml doc 2 items[1]"
    assert str(objs[2].problem("spec.taints", "bad")) == "all.yaml doc 2: items[1].spec.taints: bad"
    assert str(objs[2].problem("", "bad")) == "all.yaml doc 2: items[1]: bad"
    assert str(objs[0].problem("spec", "bad")) == "all.yaml doc 1: spec: bad"


def test_typed_list_items_get_kind_and_api_version() -> None:
    write("pods.yaml", "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n- {kind: Pod, metadata: {name: b}}\n")
    objs = load_paths(["pods.yaml"])
    assert [(o.obj["kind"], o.obj.get("apiVersion")) for o in objs] == [("Pod", "v1"), ("Pod", None)]


def test_empty_list_and_list_without_items() -> None:
    write("a.yaml", "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\n")
    assert load_paths(["a.yaml"]) == []


def test_directory_is_searched_recursively_in_sorted_order() -> None:
    write("cluster/b.yaml", POD % "b")
    write("cluster/a/z.yml", POD % "z")
    write("cluster/a.json", json.dumps({"kind": "Pod", "metadata": {"name": "j"}}))
    write("cluster/notes.txt", "not: loaded")
    write("cluster/a-b.yaml", POD % "ab")
    objs = load_paths(["cluster"])
    assert [o.source for o in objs] == [
        os.path.join("cluster", "a", "z.yml"),
        os.path.join("cluster", "a-b.yaml"),
        os.path.join("cluster", "a.json"),
        os.path.join("cluster", "b.yaml"),
    ]


def test_paths_load_in_the_order_given() -> None:
    write("x.yaml", POD % "x")
    write("d/w.yaml", POD % "w")
    assert [o.obj["metadata"]["name"] for o in load_paths(["d", "x.yaml"])] == ["w", "x"]


@pytest.mark.parametrize("spec", [
    '{"n": 1180591620717411303424, "m": -9223372036854775809, "k": 18446744073709551615}',
    '{"huge": 1e400, "tiny": 5e-324, "nan": NaN, "neg": -0.0, "x": "\\ud800"}',
    '\ufeff{"bom": 1, "same": 1, "same": 2}',
    '{"plain": [1, 2.5, "1234567890123456789", true, null]}',
])
def test_json_numbers_and_text_read_exactly_as_python_json_reads_them(spec: str) -> None:
    text = '{"kind": "Pod", "metadata": {"name": "p"}, "spec": ' + spec.removeprefix("\ufeff") + "}"
    Path("p.json").write_bytes(("\ufeff" if spec.startswith("\ufeff") else "").encode() + text.encode())
    [obj] = load_paths(["p.json"])
    expected = json.loads(text)["spec"]
    assert repr(obj.obj["spec"]) == repr(expected)  # repr: an int past 64 bits must not come back a float


def test_json_form_timestamps_stay_strings_and_keys_become_strings() -> None:
    write("p.yaml", "metadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n  labels: {1: a, true: b, y: c}\n"
          "x: &anchor {q: 1}\nw: *anchor\nz:\n  <<: *anchor\n  r: 2\n")
    [obj] = load_paths(["p.yaml"])
    assert obj.obj["metadata"] == {"creationTimestamp": "2024-01-01T00:00:00Z",
                                   "labels": {"1": "a", "true": "c"}}
    assert obj.obj["w"] == {"q": 1}
    assert obj.obj["z"] == {"q": 1, "r": 2}


def test_uses_the_c_loader_when_available() -> None:
    if hasattr(yaml, "CSafeLoader"):
        assert issubclass(loader._Loader, yaml.CSafeLoader)


def test_missing_file() -> None:
    assert problems(["nope.yaml"]) == ["nope.yaml: no such file or directory"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file() -> None:
    write("secret.yaml", POD % "a")
    os.chmod("secret.yaml", 0)
    assert problems(["secret.yaml"]) == ["secret.yaml: cannot read: Permission denied"]


def test_yaml_syntax_error_gives_document_line_and_column() -> None:
    write("bad.yaml", POD % "a" + "---\nkind: Pod\nmetadata:\n  name: a\n   labels: x\n")
    [line] = problems(["bad.yaml"])
    # The C and pure-Python parsers word the end of this message differently.
    assert line.startswith("bad.yaml doc 2: YAML syntax error at line 9, column 10: mapping values are not allowed")


def test_yaml_unhashable_key() -> None:
    write("bad.yaml", "? [a]\n: 1\n")
    assert problems(["bad.yaml"]) == ["bad.yaml doc 1: invalid YAML value at line 1, column 3: found unhashable key"]


def test_undecodable_bytes() -> None:
    Path("bin.yaml").write_bytes(b"kind: Pod\nname: \xff\xfe\n")
    [line] = problems(["bin.yaml"])
    assert line.startswith("bin.yaml doc 1: not valid text at byte 16: ")


def test_json_syntax_error() -> None:
    write("bad.json", '{"kind": "Pod",\n "metadata": }')
    assert problems(["bad.json"]) == ["bad.json doc 1: JSON syntax error at line 2, column 14: Expecting value"]


def test_json_not_utf8() -> None:
    Path("bad.json").write_bytes(b'{"a": "\xff"}')
    assert problems(["bad.json"]) == ["bad.json: not UTF-8 text"]


def test_document_that_is_not_a_mapping() -> None:
    write("a.yaml", "- a\n- b\n---\njust text\n---\n" + POD % "ok")
    assert problems(["a.yaml"]) == [
        "a.yaml doc 1: expected a mapping (a Kubernetes object), got list",
        "a.yaml doc 2: expected a mapping (a Kubernetes object), got string",
    ]


def test_bad_list_items() -> None:
    write("l.yaml", "apiVersion: v1\nkind: List\nitems: {a: 1}\n---\napiVersion: v1\nkind: List\nitems: [1, {kind: Pod}]\n")
    assert problems(["l.yaml"]) == [
        "l.yaml doc 1: items: expected a list, got mapping",
        "l.yaml doc 2: items[0]: expected a mapping, got integer",
    ]


def test_empty_directory() -> None:
    Path("empty").mkdir()
    write("empty/readme.txt", "hi")
    assert problems(["empty"]) == ["empty: no .yaml, .yml or .json files in this directory"]


def test_all_problems_from_all_files_are_collected() -> None:
    write("d/1.yaml", "a: [\n")
    write("d/2.yaml", "- x\n")
    write("ok.yaml", POD % "fine")
    found = problems(["d", "missing.yaml", "ok.yaml"])
    assert found[0].startswith(f"{os.path.join('d', '1.yaml')} doc 1: YAML syntax error at line 2, column 1: ")
    assert found[1:] == [
        f"{os.path.join('d', '2.yaml')} doc 1: expected a mapping (a Kubernetes object), got list",
        "missing.yaml: no such file or directory",
    ]


def test_loaded_object_defaults() -> None:
    lo = LoadedObject({"kind": "Pod"}, "p.yaml", 2)
    assert (lo.item, lo.path_prefix, lo.where) == (None, "", "p.yaml doc 2")


def test_problem_is_always_one_line() -> None:
    p = Problem("a.yaml", 1, "metadata.labels.x\n", 'Invalid value: "a\r\nb\u2028c\x85"')
    assert str(p) == 'a.yaml doc 1: metadata.labels.x\\n: Invalid value: "a\\r\\nb\\u2028c\\x85"'
    assert len(str(p).splitlines()) == 1


def test_yaml_aliases_become_independent_copies() -> None:
    write("a.yaml", "a: &r {requests: {cpu: 1}}\nb: *r\n")
    [obj] = load_paths(["a.yaml"])
    assert obj.obj["a"] == obj.obj["b"]
    assert obj.obj["a"] is not obj.obj["b"]
    assert obj.obj["a"]["requests"] is not obj.obj["b"]["requests"]


def test_self_containing_alias_and_alias_bombs_are_refused() -> None:
    write("cycle.yaml", "a: &x [*x]\n")
    levels = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 7))
    write("bomb.yaml", "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + levels)
    write("deep.yaml", "a: &x " + "[" * 150 + "]" * 150 + "\nb: *x\n")
    write("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    write("deeper.yaml", "a: 1\n---\nb: " + "[" * 100 + "]" * 100 + "\n---\nc: " + "[" * 99 + "]" * 99 + "\n")
    assert problems(["cycle.yaml", "bomb.yaml", "deep.yaml", "deep.json", "deeper.yaml"]) == [
        "cycle.yaml doc 1: a YAML alias refers to a mapping or list that contains it",
        "bomb.yaml doc 1: YAML aliases expand to more than 1000000 values",
        "deep.yaml doc 1: nested more than 100 levels deep",
        "deep.json doc 1: nested too deeply",
        "deeper.yaml doc 2: nested more than 100 levels deep",
    ]
    assert [lo.doc for lo in loader.collect_paths(["deeper.yaml"])[0]] == [1, 3]  # 99 levels and a root: 100


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(list("ab:- \n{}[]&*!#|>'\"%@`?,.0\t\\") + ["\u2028", "---\n", "…", "x: "]),
                      max_size=60))
def test_any_text_loads_or_gives_input_error(parts: list[str]) -> None:
    """YAML-ish noise either loads or is reported; no other exception escapes."""
    Path("fuzz.yaml").write_text("".join(parts), encoding="utf-8")
    try:
        load_paths(["fuzz.yaml"])
    except InputError as e:
        assert all(str(p).startswith("fuzz.yaml") for p in e.problems)


@pytest.mark.parametrize("alias", ["", "x: &n 1\ny: *n\n"])  # the one-pass builder and the general path
def test_scalars_that_only_look_like_numbers_stay_strings(alias: str) -> None:
    """A base prefix without digits (`0x_`, `0b_`) is no number to sigs.k8s.io/yaml, so it reads
    as a string, while `0x_1` and `0b101` are numbers; loading never fails with a traceback."""
    write("n.yaml", alias + "a: 0x_\nb: 0b_\nc: 0x_1\nd: 0b101\n0x_: key\n")
    [obj] = load_paths(["n.yaml"])
    assert {k: obj.obj[k] for k in ("a", "b", "c", "d", "0x_")} == {"a": "0x_", "b": "0b_", "c": 1, "d": 5, "0x_": "key"}


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\a≻紂')), max_size=6)
JSON_VALUES = st.recursive(st.none() | st.integers() | TRICKY_TEXT,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
                           max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.sampled_from(["utf-8", "utf-16", "utf-32"]), st.booleans())
def test_json_depth_is_counted_from_brackets_outside_strings(value: object, encoding: str, ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode(encoding)
    depth = _depth(value)
    assert [loader._json_deeper_than(data, limit) for limit in (depth - 1, depth, depth + 1)] == [True, False, False]


def test_json_nested_past_the_limit_is_refused_however_its_strings_look() -> None:
    strings = '"[[[{{{\\"]]]\\\\", '
    write("ok.json", '{"kind": "Pod", "metadata": {"name": "ok"}, "x": ' + "[" + strings * 3 + "[" * 98 + "]" * 99 + "}")
    write("deep.json", '{"kind": "Pod", "metadata": {"name": "deep"}, "x": ' + "[" * 100 + "]" * 100 + "}")
    assert problems(["ok.json", "deep.json"]) == ["deep.json doc 1: nested more than 100 levels deep"]
    [obj] = load_paths(["ok.json"])
    assert _depth(obj.obj) == 100
