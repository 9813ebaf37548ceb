"""IntOrString fields (minAvailable, maxUnavailable, maxSurge): a count or a percentage of a total."""

from __future__ import annotations


def scaled_value(value: int | str, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, "N%" as N% of `total`, rounded up or
    down as the caller asks (PodDisruptionBudgets round up both minAvailable and maxUnavailable)."""
    if isinstance(value, int):
        return value
    product = int(value.rstrip("%")) * total
    return -(-product // 100) if round_up else product // 100
