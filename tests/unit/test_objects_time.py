"""Timestamps as the API writes them (RFC 3339, whole seconds): a write at any fraction of a
second stamps that second, whatever instants came before, for any epoch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubesched.api.objects import DEFAULT_EPOCH, LAST_TIME, format_time, parse_time

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


def test_times_are_read_as_go_reads_rfc_3339_and_kept_in_utc() -> None:
    assert parse_time("2026-01-01T05:30:00.123456789+05:30") == datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    assert parse_time("2026-01-01T00:00:00,5Z") == datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    assert parse_time("2026-01-02T00:00:00+24:00") == datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_time("0001-01-01T00:00:00Z") == datetime(1, 1, 1, tzinfo=UTC)
    assert parse_time("9999-12-31T23:59:59Z") == LAST_TIME
    for refused in ("2026-01-01 00:00:00Z", "2026-01-01T00:00Z", "2026-01-01T00:00:00", "2026-01-01t00:00:00z",
                    "20260101T000000Z", "2026-01-01T00:00:60Z", "2026-01-01T24:00:00Z", "2026-02-29T00:00:00Z",
                    "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "9999-12-31T23:00:00-23:59",
                    "2026-01-01T00:00:00+25:00"):
        with pytest.raises(ValueError):
            parse_time(refused)


def test_years_before_1000_are_written_with_four_digits() -> None:
    epoch = datetime(1, 1, 1, tzinfo=UTC)
    assert format_time(epoch, 0) == "0001-01-01T00:00:00Z"
    assert format_time(epoch, 86400.5) == "0001-01-02T00:00:00Z"
