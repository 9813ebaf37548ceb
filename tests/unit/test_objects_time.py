"""Timestamps as the API writes them (RFC 3339, whole seconds): a write at any fraction of a
second stamps that second, whatever instants came before, for any epoch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kubesched.api.objects import DEFAULT_EPOCH, format_time

HALF_PAST = datetime(2026, 1, 1, 0, 0, 0, 500_000, tzinfo=UTC)


def expected(epoch: datetime, seconds: float) -> str:
    return (epoch + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_instants_within_a_second_and_across_seconds_stamp_their_own_second() -> None:
    instants = [0.0, 0.0, 0.25, 0.999, 1.0, 1.5, 4.9999996, 4.9999994, 5.0, 86399.9999999, 3.2, -0.0000001, 0.0]
    for epoch in (DEFAULT_EPOCH, HALF_PAST, DEFAULT_EPOCH):
        for seconds in instants:
            assert format_time(epoch, seconds) == expected(epoch, seconds), (epoch, seconds)


def test_an_epoch_with_a_fraction_moves_the_second_boundary() -> None:
    assert format_time(HALF_PAST, 0.4) == "2026-01-01T00:00:00Z"
    assert format_time(HALF_PAST, 0.6) == "2026-01-01T00:00:01Z"
    assert format_time(DEFAULT_EPOCH, 0.6) == "2026-01-01T00:00:00Z"


def test_instants_days_and_years_apart_stamp_their_own_date() -> None:
    year_end = datetime(2023, 12, 31, 23, 59, 59, tzinfo=UTC)
    instants = [0.0, 1.0, 0.9999999, 86400.0 * 59 + 0.5, 86400.0 * 366 * 3 + 7.25, -1.0, -86400.0 * 400 - 0.3,
                1e8 + 0.9999996, 12.0]
    for epoch in (year_end, DEFAULT_EPOCH, year_end):
        for seconds in instants:
            assert format_time(epoch, seconds) == expected(epoch, seconds), (epoch, seconds)
