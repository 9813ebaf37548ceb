"""How fast an HPA may move from the replica count its metrics ask for (horizontal.go's
normalizeDesiredReplicas and normalizeDesiredReplicasWithBehaviors, v1.35).

Without `spec.behavior`: scale down takes the highest recommendation of the last five minutes
(--horizontal-pod-autoscaler-downscale-stabilization), scale up at most doubles (or goes to 4).
With it: each direction's stabilisation window bounds the recommendation by the recent ones, and
its policies bound the change over each policy's period by the scale events the controller made
(Pods: a number of pods, Percent: a share of the count at the period's start; selectPolicy Max
takes the policy allowing most change, Min the least, Disabled none). Then minReplicas and
maxReplicas. Every answer says which condition it sets, with upstream's reason and message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DOWNSCALE_STABILIZATION_WINDOW = 300.0  # --horizontal-pod-autoscaler-downscale-stabilization
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

Condition = tuple[str, str, str, str]  # type, status, reason, message

_WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
_TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
_TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
_UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
_DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
_READY = ("ReadyForNewScale", "recommended size matches current size")
_UP_STABILIZED = ("ScaleUpStabilized",
                  "recent recommendations were lower than current one, applying the lowest recent recommendation")
_DOWN_STABILIZED = ("ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation")


@dataclass
class ScaleEvent:
    change: int  # replicas added (scale up) or removed (scale down), always positive
    at: float
    outdated: bool = False


@dataclass
class History:
    """What the controller remembers of one HPA between syncs (lost on restart, as upstream's)."""

    recommendations: list[tuple[int, float]] = field(default_factory=list)
    up_events: list[ScaleEvent] = field(default_factory=list)
    down_events: list[ScaleEvent] = field(default_factory=list)

    def record_initial(self, current: int, now: float) -> None:
        if not self.recommendations:
            self.recommendations.append((current, now))

    def record(self, desired: int, now: float, old: int | None) -> None:
        if old is None:
            self.recommendations.append((desired, now))
        else:
            self.recommendations[old] = (desired, now)

    def store_scale_event(self, rules: Mapping[str, Any] | None, previous: int, new: int, now: float) -> None:
        """storeScaleEvent: only HPAs with a behavior keep them; an entry older than the longest
        policy period is reused."""
        if rules is None:
            return
        events = self.up_events if new > previous else self.down_events
        longest = max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or ()), default=0)
        for event in events:
            if event.at < now - longest:
                event.outdated = True
        event = ScaleEvent(abs(new - previous), now)
        old = next((i for i in reversed(range(len(events))) if events[i].outdated), None)
        if old is None:
            events.append(event)
        else:
            events[old] = event


def _limited(desired: int, stabilized: int, reason: tuple[str, str]) -> tuple[int, list[Condition]]:
    status = "False" if desired == stabilized else "True"
    return desired, [("ScalingLimited", status, *reason)]


def scale_up_limit(current: int) -> int:
    return int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))


def within_rules(current: int, desired: int, low: int, high: int) -> tuple[int, tuple[str, str]]:
    """convertDesiredReplicasWithRules: the bounds, and the scale-up rate without a behavior."""
    limit = scale_up_limit(current)
    high, reason = (limit, _UP_LIMIT) if high > limit else (high, _TOO_MANY)
    if desired < low:
        return low, _TOO_FEW
    if desired > high:
        return high, reason
    return desired, _WITHIN_RANGE


def normalize(history: History, current: int, desired: int, low: int, high: int, now: float,
              window: float = DOWNSCALE_STABILIZATION_WINDOW) -> tuple[int, list[Condition]]:
    """normalizeDesiredReplicas: for an HPA without a behavior."""
    stabilized, old = desired, None
    for i, (recommended, at) in enumerate(history.recommendations):
        if at < now - window:
            old = i
        elif recommended > stabilized:
            stabilized = recommended
    history.record(desired, now, old)
    able = ("AbleToScale", "True", *(_DOWN_STABILIZED if stabilized != desired else _READY))
    result, reason = within_rules(current, stabilized, low, high)
    final, limited = _limited(result, stabilized, reason)
    return final, [able, *limited]


def _changed_within(period: float, events: list[ScaleEvent], now: float) -> int:
    return sum(e.change for e in events if e.at > now - period)


def _period_start(current: int, policy: Mapping[str, Any], history: History, now: float) -> int:
    period = float(policy.get("periodSeconds") or 0)
    return current - _changed_within(period, history.up_events, now) + _changed_within(period, history.down_events, now)


def up_limit_with_rules(current: int, history: History, rules: Mapping[str, Any], now: float) -> int:
    """calculateScaleUpLimitWithScalingRules."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    result = INT32_MAX if select == "Min" else INT32_MIN
    for policy in rules.get("policies") or ():
        start = _period_start(current, policy, history, now)
        value = int(policy.get("value") or 0)
        proposed = start + value if policy.get("type") == "Pods" else math.ceil(start * (1 + value / 100))
        result = min(result, proposed) if select == "Min" else max(result, proposed)
    return result


def down_limit_with_rules(current: int, history: History, rules: Mapping[str, Any], now: float) -> int:
    """calculateScaleDownLimitWithBehaviors."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    result = INT32_MIN if select == "Min" else INT32_MAX
    for policy in rules.get("policies") or ():
        start = _period_start(current, policy, history, now)
        value = int(policy.get("value") or 0)
        proposed = start - value if policy.get("type") == "Pods" else int(start * (1 - value / 100))
        result = max(result, proposed) if select == "Min" else min(result, proposed)
    return result


def normalize_with_behaviors(history: History, behavior: Mapping[str, Any], current: int, desired: int, low: int,
                             high: int, now: float,
                             window: float = DOWNSCALE_STABILIZATION_WINDOW) -> tuple[int, list[Condition]]:
    """normalizeDesiredReplicasWithBehaviors: `behavior` as the API server defaulted it (a scale
    down without a window takes the controller's)."""
    up_rules = behavior.get("scaleUp") or {}
    down_rules = behavior.get("scaleDown") or {}
    up_window = float(up_rules.get("stabilizationWindowSeconds") or 0)
    down_window = down_rules.get("stabilizationWindowSeconds")
    down_window = window if down_window is None else float(down_window)
    up, down, old = desired, desired, None
    for i, (recommended, at) in enumerate(history.recommendations):
        if at > now - up_window:
            up = min(up, recommended)
        if at > now - down_window:
            down = max(down, recommended)
        if at < now - up_window and at < now - down_window:
            old = i
    stabilized = min(max(current, up), down)
    history.record(desired, now, old)
    moved = _UP_STABILIZED if desired >= current else _DOWN_STABILIZED
    able = ("AbleToScale", "True", *(moved if stabilized != desired else _READY))
    result, reason = stabilized, _WITHIN_RANGE
    if stabilized > current:
        limit = max(up_limit_with_rules(current, history, up_rules, now), current)
        ceiling, why = (limit, _UP_LIMIT) if high > limit else (high, _TOO_MANY)
        if stabilized > ceiling:
            result, reason = ceiling, why
    elif stabilized < current:
        limit = min(down_limit_with_rules(current, history, down_rules, now), current)
        floor, why = (limit, _DOWN_LIMIT) if low < limit else (low, _TOO_FEW)
        if stabilized < floor:
            result, reason = floor, why
    final, limited = _limited(result, stabilized, reason)
    return final, [able, *limited]
