"""Durations as Go's time.ParseDuration reads them (what Kubernetes configs use), in float seconds."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import lru_cache

_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "\u00b5s": Decimal("1e-6"),  # micro sign
    "\u03bcs": Decimal("1e-6"),  # Greek mu
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_COMPONENT = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
# Go keeps durations in an int64 of nanoseconds; anything larger is rejected there too.
_MAX_SECONDS = Decimal(2**63 - 1) / 10**9


class DurationError(ValueError):
    """A value that is not a duration; str() is the one-line message shown to the user."""

    def __init__(self, value: object) -> None:
        shown = {True: "true", False: "false"}[value] if isinstance(value, bool) else value
        super().__init__(f'"{"null" if value is None else shown}" is not a duration')


def parse_duration(value: object) -> float:
    """Seconds in `value`: a Go duration string ("1m30s", "300ms", "-2h") or a bare number of seconds."""
    if isinstance(value, bool):
        raise DurationError(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value) or abs(value) > _MAX_SECONDS:
            raise DurationError(value)
        return float(value)
    if not isinstance(value, str):
        raise DurationError(value)
    return _text_seconds(value)


@lru_cache(maxsize=65536)
def _text_seconds(value: str) -> float:
    """A duration string's seconds; a run reads the same few strings (a trace's pod lifetimes,
    grace periods) again and again."""
    text = value
    sign = 1
    if text[:1] in ("-", "+"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0.0
    total = Decimal(0)
    pos = 0
    while pos < len(text):
        m = _COMPONENT.match(text, pos)
        if m is None:
            raise DurationError(value)
        total += Decimal(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or total > _MAX_SECONDS:
        raise DurationError(value)
    return sign * float(total)


def format_duration(seconds: float) -> str:
    """Short form for messages and reports: 90 -> "1m30s", 7200 -> "2h", 0.5 -> "0.5s"."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    nanos = round(seconds * 10**9)
    hours, nanos = divmod(nanos, 3600 * 10**9)
    minutes, nanos = divmod(nanos, 60 * 10**9)
    parts = [f"{hours}h"] if hours else []
    if minutes:
        parts.append(f"{minutes}m")
    if nanos or not parts:
        whole, frac = divmod(nanos, 10**9)
        parts.append(f"{whole}.{frac:09d}".rstrip("0") + "s" if frac else f"{whole}s")
    return "".join(parts)


def go_duration(seconds: float) -> str:
    """time.Duration.String(), for messages that quote a Go duration ("2m0s", "1h0m5s", "1.5s")."""
    if seconds == 0:
        return "0s"
    if seconds < 0:
        return "-" + go_duration(-seconds)
    if seconds < 1:  # Go's smaller units: "500ms", "1.5µs", "10ns"
        for unit, scale in (("ms", 1e3), ("\u00b5s", 1e6), ("ns", 1e9)):
            if seconds * scale >= 1 or unit == "ns":
                return f"{round(seconds * scale, 9):g}{unit}"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return text
