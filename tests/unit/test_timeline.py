"""RequestsBySpec answers what pod_requests answers, working it out once for the pods of a template;
union_of_times answers what np.union1d answers."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.resources import pod_requests
from kubesched.sim.timeline import RequestsBySpec, union_of_times


def spec(requests: dict[str, Any], limits: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    return {"containers": [{"name": "c", "image": "app", "resources": resources}], **more}


def test_pods_of_one_template_share_one_answer() -> None:
    requests = RequestsBySpec()
    a, b = spec({"cpu": "500m", "memory": "1Gi"}), spec({"cpu": "500m", "memory": "1Gi"})
    assert requests(a) is requests(b)
    assert requests(a) == pod_requests(a)


def test_limits_stand_in_for_missing_requests_as_pod_requests_has_them() -> None:
    requests = RequestsBySpec()
    only_limits = spec({}, {"cpu": "2", "nvidia.com/gpu": "1"})
    with_requests = spec({"cpu": "2"}, {"cpu": "2", "nvidia.com/gpu": "1"})
    assert requests(only_limits) == pod_requests(only_limits)
    assert requests(with_requests) == pod_requests(with_requests)


def test_numbers_of_different_types_are_never_confused() -> None:
    requests = RequestsBySpec()
    whole, floating = spec({"memory": 2**60}), spec({"memory": 2.0**60})
    assert requests(whole) == pod_requests(whole)
    assert requests(floating) == pod_requests(floating)


def test_pods_of_other_shapes_are_worked_out_one_by_one() -> None:
    requests = RequestsBySpec()
    shapes = [
        spec({"cpu": "1"}, initContainers=[{"name": "init", "image": "x", "resources": {"requests": {"cpu": "3"}}}]),
        spec({"cpu": "1"}, overhead={"cpu": "250m"}),
        spec({"cpu": "1"}, resources={"requests": {"cpu": "4"}}),
        {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}},
                        {"name": "b", "resources": {"requests": {"cpu": "2"}}}]},
    ]
    for s in shapes:
        assert requests(s) == pod_requests(s)
    assert requests(shapes[0]) != requests(spec({"cpu": "1"}))


INSTANTS = st.lists(st.sampled_from([-1.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.25, 86400.0]), max_size=8).map(sorted)


@given(INSTANTS, INSTANTS)
def test_union_of_times_is_numpys_union(a: list[float], b: list[float]) -> None:
    ours, numpys = union_of_times(np.array(a), np.array(b)), np.union1d(np.array(a), np.array(b))
    assert ours.dtype == numpys.dtype and ours.tolist() == numpys.tolist()
