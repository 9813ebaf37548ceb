import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.selectors import (
    LabelSelector,
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    SelectorError,
)

LABELS = {"app": "web", "tier": "front", "cores": "16", "empty": ""}


def expr(key, op, *values):
    d = {"key": key, "operator": op}
    if values:
        d["values"] = list(values)
    return d


def term(*exprs, fields=()):
    d = {}
    if exprs:
        d["matchExpressions"] = list(exprs)
    if fields:
        d["matchFields"] = list(fields)
    return d


def node_selector(*terms):
    return NodeSelector.compile({"nodeSelectorTerms": list(terms)})


# --- LabelSelector ---------------------------------------------------------------------------


def test_none_matches_nothing_and_empty_matches_everything():
    assert LabelSelector.compile(None) is LabelSelector.NOTHING
    assert not LabelSelector.NOTHING.matches({})
    assert not LabelSelector.NOTHING.is_empty
    for d in ({}, {"matchLabels": {}, "matchExpressions": []}, {"matchLabels": None}):
        sel = LabelSelector.compile(d)
        assert sel.is_empty
        assert sel.matches({}) and sel.matches(LABELS)


def test_match_labels_all_must_equal():
    sel = LabelSelector.compile({"matchLabels": {"app": "web", "tier": "front"}})
    assert not sel.is_empty
    assert sel.matches(LABELS)
    assert not sel.matches({"app": "web"})
    assert not sel.matches({**LABELS, "tier": "back"})
    assert LabelSelector.compile({"matchLabels": {"empty": ""}}).matches(LABELS)
    assert not LabelSelector.compile({"matchLabels": {"missing": ""}}).matches(LABELS)


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("app", "In", "web", "api"), True),
        (expr("app", "In", "api"), False),
        (expr("missing", "In", "x"), False),
        (expr("app", "NotIn", "api"), True),
        (expr("app", "NotIn", "web"), False),
        (expr("missing", "NotIn", "x"), True),
        (expr("app", "Exists"), True),
        (expr("empty", "Exists"), True),
        (expr("missing", "Exists"), False),
        (expr("missing", "DoesNotExist"), True),
        (expr("app", "DoesNotExist"), False),
    ],
)
def test_label_selector_operators(requirement, expected):
    assert LabelSelector.compile({"matchExpressions": [requirement]}).matches(LABELS) is expected


def test_labels_and_expressions_are_anded():
    sel = LabelSelector.compile(
        {"matchLabels": {"app": "web"}, "matchExpressions": [expr("tier", "In", "back")]}
    )
    assert not sel.matches(LABELS)
    assert sel.matches({"app": "web", "tier": "back"})


@pytest.mark.parametrize(
    ("selector", "path", "message"),
    [
        (
            {"matchExpressions": [expr("a", "Exists"), expr("b", "Foo")]},
            "matchExpressions[1].operator",
            '"Foo" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [expr("a", "Gt", "1")]},
            "matchExpressions[0].operator",
            '"Gt" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [expr("a", "In")]},
            "matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"matchExpressions": [expr("a", "NotIn")]},
            "matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"matchExpressions": [expr("a", "Exists", "x")]},
            "matchExpressions[0].values",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            {"matchExpressions": [expr("a", "DoesNotExist", "x")]},
            "matchExpressions[0].values",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
    ],
)
def test_label_selector_errors(selector, path, message):
    with pytest.raises(SelectorError) as err:
        LabelSelector.compile(selector)
    assert (err.value.path, err.value.message) == (path, message)
    assert str(err.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("selector", "path"),
    [
        ({"matchExpressions": [expr("-bad", "Exists")]}, "matchExpressions[0].key"),
        ({"matchExpressions": [expr("Example.com/x", "Exists")]}, "matchExpressions[0].key"),
        ({"matchExpressions": [expr("a/b/c", "Exists")]}, "matchExpressions[0].key"),
        ({"matchExpressions": [expr("x" * 64, "Exists")]}, "matchExpressions[0].key"),
        ({"matchExpressions": [expr("a", "In", "ok", "not ok")]}, "matchExpressions[0].values[1]"),
        ({"matchLabels": {"a": "-x"}}, "matchLabels"),
        ({"matchLabels": {"a": 1}}, "matchLabels"),
    ],
)
def test_label_selector_key_and_value_validation(selector, path):
    with pytest.raises(SelectorError) as err:
        LabelSelector.compile(selector)
    assert err.value.path == path


def test_qualified_keys_accepted():
    sel = LabelSelector.compile({"matchExpressions": [expr("kubernetes.io/hostname", "In", "n1", "")]})
    assert sel.matches({"kubernetes.io/hostname": ""})


# --- NodeSelector ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        (expr("cores", "Gt", "8"), LABELS, True),
        (expr("cores", "Gt", "16"), LABELS, False),
        (expr("cores", "Lt", "17"), LABELS, True),
        (expr("cores", "Lt", "16"), LABELS, False),
        (expr("cores", "Gt", "5"), {"cores": "+6"}, True),
        (expr("cores", "Lt", "5"), {"cores": "-6"}, True),
        (expr("cores", "Gt", "1"), {"cores": "abc"}, False),
        (expr("cores", "Gt", "1"), {"cores": " 5"}, False),
        (expr("cores", "Gt", "1"), {"cores": "1_000"}, False),
        (expr("cores", "Gt", "1"), {"cores": "9223372036854775808"}, False),
        (expr("cores", "Lt", "1"), {}, False),
        (expr("cores", "Gt", "1"), {"cores": ""}, False),
        (expr("app", "In", "web"), LABELS, True),
        (expr("missing", "NotIn", "web"), LABELS, True),
        (expr("missing", "DoesNotExist"), LABELS, True),
        (expr("app", "Exists"), LABELS, True),
    ],
)
def test_node_selector_operators(requirement, labels, expected):
    assert node_selector(term(requirement)).matches(labels, "n1") is expected


def test_terms_are_ored_and_expressions_anded():
    sel = node_selector(
        term(expr("app", "In", "db"), expr("tier", "In", "front")),
        term(expr("app", "In", "web"), expr("cores", "Gt", "8")),
    )
    assert sel.matches(LABELS, "n1")
    assert not sel.matches({**LABELS, "cores": "4"}, "n1")


def test_empty_terms_match_nothing():
    assert not NodeSelector.compile({"nodeSelectorTerms": []}).matches(LABELS, "n1")
    assert not NodeSelector.compile({}).matches(LABELS, "n1")
    assert not node_selector({}, {"matchExpressions": [], "matchFields": []}).matches(LABELS, "n1")
    assert node_selector({}, term(expr("app", "Exists"))).matches(LABELS, "n1")


def test_match_fields():
    name_in = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    name_not_in = {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}
    assert node_selector(term(fields=[name_in])).matches({}, "n1")
    assert not node_selector(term(fields=[name_in])).matches({}, "n2")
    assert node_selector(term(fields=[name_not_in])).matches({}, "n2")
    assert not node_selector(term(fields=[name_not_in])).matches({}, "n1")
    both = node_selector(term(expr("app", "In", "web"), fields=[name_in]))
    assert both.matches(LABELS, "n1")
    assert not both.matches({"app": "db"}, "n1")
    # Upstream only has a field set for a named node; an unnamed node skips matchFields.
    assert node_selector(term(fields=[name_in])).matches({}, "")


@pytest.mark.parametrize(
    ("bad_term", "path", "message"),
    [
        (
            term(expr("a", "Foo")),
            "nodeSelectorTerms[0].matchExpressions[0].operator",
            'Unsupported value: "Foo": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        ),
        (
            term(expr("a", "Gt")),
            "nodeSelectorTerms[0].matchExpressions[0].values",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        (
            term(expr("a", "Lt", "1", "2")),
            "nodeSelectorTerms[0].matchExpressions[0].values",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        (
            term(expr("a", "Gt", "1.5")),
            "nodeSelectorTerms[0].matchExpressions[0].values[0]",
            "Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        # Gt/Lt values are label values too, so a negative bound is rejected like upstream.
        (
            term(expr("a", "Gt", "-5")),
            "nodeSelectorTerms[0].matchExpressions[0].values[0]",
            'Invalid value: "-5": a valid label must be an empty string or consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character",
        ),
        (
            term(expr("a", "Lt", "9223372036854775808")),
            "nodeSelectorTerms[0].matchExpressions[0].values[0]",
            "Invalid value: \"9223372036854775808\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            term(expr("a", "In")),
            "nodeSelectorTerms[0].matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            term(fields=[{"key": "metadata.name", "operator": "Exists"}]),
            "nodeSelectorTerms[0].matchFields[0].operator",
            'Unsupported value: "Exists": supported values: "In", "NotIn"',
        ),
        (
            term(fields=[{"key": "metadata.uid", "operator": "In", "values": ["x"]}]),
            "nodeSelectorTerms[0].matchFields[0].key",
            'Invalid value: "metadata.uid": not a valid field selector key',
        ),
        (
            term(fields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]),
            "nodeSelectorTerms[0].matchFields[0].values",
            "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        ),
    ],
)
def test_node_selector_errors(bad_term, path, message):
    with pytest.raises(SelectorError) as err:
        node_selector(bad_term)
    assert (err.value.path, err.value.message) == (path, message)


def test_error_path_indexes_the_term():
    with pytest.raises(SelectorError) as err:
        node_selector(term(expr("a", "Exists")), term(expr("a", "Exists"), expr("b", "Gt", "x")))
    assert err.value.path == "nodeSelectorTerms[1].matchExpressions[1].values[0]"


def test_lazy_node_selector_drops_invalid_terms():
    sel = NodeSelector.compile(
        {"nodeSelectorTerms": [term(expr("a", "Gt", "x")), term(expr("app", "In", "web"))]}, lazy=True
    )
    assert sel.matches(LABELS, "n1")
    assert not sel.matches({"a": "5"}, "n1")
    assert [e.path for e in sel.errors] == ["nodeSelectorTerms[0].matchExpressions[0].values[0]"]


# --- PreferredSchedulingTerms ----------------------------------------------------------------


def test_preferred_terms_score_sums_matching_weights():
    terms = PreferredSchedulingTerms.compile(
        [
            {"weight": 5, "preference": term(expr("app", "In", "web"))},
            {"weight": 20, "preference": term(expr("cores", "Gt", "8"))},
            {"weight": 100, "preference": term(expr("tier", "In", "back"))},
        ]
    )
    assert terms.score(LABELS, "n1") == 25
    assert terms.score({}, "n1") == 0


def test_preferred_terms_skip_zero_weight_and_empty_preference():
    terms = PreferredSchedulingTerms.compile(
        [
            {"weight": 0, "preference": term(expr("app", "Bogus"))},
            {"weight": 7, "preference": {}},
            {
                "weight": 3,
                "preference": term(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}]),
            },
        ]
    )
    assert terms.score(LABELS, "n1") == 3
    assert PreferredSchedulingTerms.compile(None).score(LABELS, "n1") == 0


def test_preferred_terms_errors():
    with pytest.raises(SelectorError) as err:
        PreferredSchedulingTerms.compile([{"weight": 1, "preference": term(expr("a", "In"))}])
    assert err.value.path == "[0].preference.matchExpressions[0].values"
    for weight in (0, 101, -1):
        with pytest.raises(SelectorError) as err:
            PreferredSchedulingTerms.compile(
                [{"weight": weight, "preference": term(expr("a", "Exists"))}], validate=True
            )
        assert err.value.path == "[0].weight"
    assert (
        PreferredSchedulingTerms.compile(
            [{"weight": 100, "preference": term(expr("a", "Exists"))}], validate=True
        ).score({"a": ""}, "n")
        == 100
    )


# --- RequiredNodeAffinity --------------------------------------------------------------------


def required(*terms):
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def test_required_node_affinity_unconstrained():
    assert RequiredNodeAffinity.from_pod({}).matches({}, "n1")
    assert RequiredNodeAffinity.from_pod({"nodeSelector": {}, "affinity": {"nodeAffinity": {}}}).matches(
        {}, "n"
    )


def test_required_node_affinity_node_selector_and_affinity():
    spec = {"nodeSelector": {"tier": "front"}, "affinity": required(term(expr("app", "In", "web")))}
    aff = RequiredNodeAffinity.from_pod(spec)
    assert aff.matches(LABELS, "n1")
    assert not aff.matches({**LABELS, "tier": "back"}, "n1")
    assert not aff.matches({**LABELS, "app": "db"}, "n1")
    assert not RequiredNodeAffinity.from_pod({"nodeSelector": {"tier": ""}}).matches({}, "n1")


def test_required_node_affinity_without_terms_matches_nothing():
    assert not RequiredNodeAffinity.from_pod({"affinity": required()}).matches(LABELS, "n1")
    assert not RequiredNodeAffinity.from_pod({"affinity": required({})}).matches(LABELS, "n1")


def test_required_node_affinity_ignores_parse_errors():
    aff = RequiredNodeAffinity.from_pod(
        {"affinity": required(term(expr("a", "Bogus")), term(expr("app", "Exists")))}
    )
    assert aff.matches(LABELS, "n1")
    assert not RequiredNodeAffinity.from_pod({"affinity": required(term(expr("a", "Bogus")))}).matches(
        LABELS, "n"
    )


# --- property: compiled matching agrees with a naive reading of the API docs -----------------

KEYS = ["a", "b", "c", "example.com/d"]
VALUES = ["x", "y", "", "1", "2", "10"]
LABEL_VALUES = [*VALUES, "-3", "+4", " 5", "1_0"]


def naive_requirement(e, labels):
    key, op, values = e["key"], e["operator"], e.get("values", [])
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present or not re.fullmatch(r"[+-]?[0-9]+", labels[key]):
        return False
    label_value = int(labels[key])
    return label_value > int(values[0]) if op == "Gt" else label_value < int(values[0])


def naive_node_selector(terms, labels):
    return any(
        (t.get("matchExpressions") or []) and all(naive_requirement(e, labels) for e in t["matchExpressions"])
        for t in terms
    )


label_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(LABEL_VALUES), max_size=4)
set_exprs = st.one_of(
    st.builds(
        lambda k, op, vs: {"key": k, "operator": op, "values": vs},
        st.sampled_from(KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
    ),
    st.builds(
        lambda k, op: {"key": k, "operator": op},
        st.sampled_from(KEYS),
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
)
num_exprs = st.builds(
    lambda k, op, v: {"key": k, "operator": op, "values": [v]},
    st.sampled_from(KEYS),
    st.sampled_from(["Gt", "Lt"]),
    st.sampled_from(["0", "1", "2"]),
)


@given(
    label_maps,
    st.lists(set_exprs, max_size=4),
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES)),
)
def test_label_selector_matches_naive(labels, exprs, match_labels):
    sel = LabelSelector.compile({"matchLabels": match_labels, "matchExpressions": exprs})
    expected = all(labels.get(k) == v for k, v in match_labels.items()) and all(
        naive_requirement(e, labels) for e in exprs
    )
    assert sel.matches(labels) is expected


@given(
    label_maps,
    st.lists(
        st.builds(lambda es: {"matchExpressions": es}, st.lists(st.one_of(set_exprs, num_exprs), max_size=3)),
        max_size=3,
    ),
)
def test_node_selector_matches_naive(labels, terms):
    assert node_selector(*terms).matches(labels, "node") is naive_node_selector(terms, labels)
