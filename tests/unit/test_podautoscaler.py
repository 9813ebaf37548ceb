"""The HPA's replica calculation and behaviors (controllers.replicacalculator and
podautoscalerbehavior): upstream's replica_calculator_test cases, and properties of the
normalisation a user relies on: the answer stays within minReplicas..maxReplicas and a behavior's
Pods policies bound how many replicas come and go within their periods."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.controllers import podautoscalerbehavior as behaviors
from kubesched.controllers import replicacalculator as calc

LONG_AGO = "2020-01-01T00:00:00Z"


def _seconds(stamp: str) -> float:
    return 0.0 if stamp == LONG_AGO else 1000.0


def _pod(name: str, cpu: str = "1", ready: bool = True, phase: str = "Running") -> dict[str, Any]:
    """A pod started long ago (past the cpu initialisation period); an unready one never was ready."""
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase, "startTime": LONG_AGO, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": LONG_AGO}]}}


def _metrics(**values: int) -> calc.PodMetrics:
    return {name: calc.PodMetric(value, 2000.0, 10.0) for name, value in values.items()}


def _replicas(pods: list[dict[str, Any]], metrics: calc.PodMetrics, target: int, current: int | None = None,
              resource: str = "cpu") -> tuple[int, int, int]:
    return calc.resource_replicas(len(pods) if current is None else current, target, resource, calc.Tolerances(),
                                  pods, metrics, "", 2000.0, _seconds)


def test_scale_up_to_the_usage_over_the_target() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c")]
    assert _replicas(pods, _metrics(a=300, b=500, c=700), 30) == (5, 50, 500)


def test_scale_down() -> None:
    pods = [_pod(n) for n in "abcde"]
    assert _replicas(pods, _metrics(a=100, b=300, c=500, d=250, e=250), 50) == (3, 28, 280)


def test_within_tolerance_keeps_the_count() -> None:
    pods = [_pod("a"), _pod("b")]
    assert _replicas(pods, _metrics(a=540, b=540), 50)[0] == 2  # 108% of 50%: within 10%


def test_unready_pods_count_as_idle_on_a_scale_up() -> None:
    pods = [_pod("a", ready=False), _pod("b"), _pod("c")]
    assert _replicas(pods, _metrics(a=300, b=500, c=700), 30) == (4, 60, 600)


def test_missing_metrics_count_as_fully_used_on_a_scale_down() -> None:
    pods = [_pod(n) for n in "abcd"]
    assert _replicas(pods, _metrics(a=100, b=100, c=100), 50)[0] == 3


def test_a_recount_that_reverses_the_direction_keeps_the_count() -> None:
    # Ready pods at 60% of a 50% target, but a pending pod counted as idle brings it to 40%.
    pods = [_pod("a"), _pod("b"), _pod("c", phase="Pending")]
    assert _replicas(pods, _metrics(a=600, b=600), 50)[0] == 3


def test_average_value_target() -> None:
    pods = [_pod("a"), _pod("b")]
    replicas, usage = calc.raw_resource_replicas(2, 200_000, "memory", calc.Tolerances(), pods,
                                                 _metrics(a=400_000, b=400_000), 2000.0, _seconds)
    assert (replicas, usage) == (4, 400_000)


def test_errors_name_what_is_missing() -> None:
    with pytest.raises(calc.ReplicaError, match="no pods returned by selector"):
        _replicas([], _metrics(a=1), 50, current=1)
    with pytest.raises(calc.ReplicaError, match=r"did not receive metrics for targeted pods \(pods might be unready\)"):
        _replicas([_pod("a", phase="Pending")], {}, 50)
    with pytest.raises(calc.ReplicaError, match="missing request for memory in container c of Pod a"):
        _replicas([_pod("a")], _metrics(a=1), 50, resource="memory")


def test_defaults_without_a_behavior() -> None:
    history = behaviors.History()
    history.record_initial(2, 0.0)
    assert behaviors.normalize(history, 2, 10, 1, 20, 15.0) == (4, [
        ("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size"),
        ("ScalingLimited", "True", "ScaleUpLimit",
         "the desired replica count is increasing faster than the maximum scale rate")])
    # Scale down waits for the five-minute window of higher recommendations to pass.
    assert behaviors.normalize(history, 10, 1, 1, 20, 30.0)[0] == 10
    assert behaviors.normalize(history, 10, 1, 1, 20, 400.0)[0] == 1


_policy = st.builds(lambda value, period: {"type": "Pods", "value": value, "periodSeconds": period},
                    st.integers(1, 6), st.sampled_from([15, 30, 60, 120]))


@settings(max_examples=60, deadline=None)
@given(low=st.integers(1, 5), span=st.integers(0, 20), up=_policy, down=_policy,
       up_window=st.sampled_from([0, 30, 60]), down_window=st.sampled_from([0, 45, 300]),
       wanted=st.lists(st.integers(0, 40), min_size=1, max_size=25))
def test_behaviors_stay_in_bounds_and_respect_their_rates(low: int, span: int, up: dict[str, int],
                                                          down: dict[str, int], up_window: int, down_window: int,
                                                          wanted: list[int]) -> None:
    high = low + span
    behavior = {"scaleUp": {"stabilizationWindowSeconds": up_window, "selectPolicy": "Max", "policies": [up]},
                "scaleDown": {"stabilizationWindowSeconds": down_window, "selectPolicy": "Max", "policies": [down]}}
    history = behaviors.History()
    current, changes = low, []  # (time, signed change)
    history.record_initial(current, 0.0)
    for i, desired in enumerate(wanted):
        now = 15.0 * (i + 1)
        new, _ = behaviors.normalize_with_behaviors(history, behavior, current, desired, low, high, now)
        assert low <= new <= high
        if new != current:
            history.store_scale_event(behavior["scaleUp" if new > current else "scaleDown"], current, new, now)
            changes.append((now, new - current))
            # When it scales, what it moved that way within the policy's period is at most the
            # policy's value, plus what it moved the other way within that period.
            rules, sign = (up, 1) if new > current else (down, -1)
            window = [c for t, c in changes if t > now - rules["periodSeconds"]]
            moved = sum(c for c in window if c * sign > 0) * sign
            against = sum(c for c in window if c * sign < 0) * -sign
            assert moved <= rules["value"] + against
            current = new
