"""CronJob schedules as the CronJob controller reads them (robfig/cron's ParseStandard, v3).

Five fields (minute, hour, day of month, month, day of week, names allowed), or a descriptor
(@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, `@every <duration>`), with an
optional `TZ=<zone>` or `CRON_TZ=<zone>` prefix; spec.timeZone becomes that prefix. Times are
computed by croniter in the schedule's zone; `@every` is a fixed delay after the given time.
What robfig/cron rejects (seconds fields, Quartz's L, W, #) is refused here too.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubesched.api.duration import DurationError, parse_duration

_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_FIELD = re.compile(r"[0-9A-Za-z*?/,\-]+")
_TOKEN = re.compile(r"[,/\-]")
# Names robfig/cron accepts, in the month and day-of-week fields only.
_NAMES = (set(), set(), set(), {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"},
          {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"})
_TZ_PREFIX = re.compile(r"^(?:CRON_)?TZ=(\S+)\s+")


class ScheduleError(ValueError):
    pass


def load_zone(name: str) -> ZoneInfo:
    """time.LoadLocation: "" and "UTC" are UTC, "Local" is the machine's (here UTC too)."""
    if name in ("", "UTC", "Local"):
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name}") from None


class Schedule:
    """A parsed schedule; `next(t)` is its first activation strictly after `t`."""

    def __init__(self, text: str, time_zone: str | None = None) -> None:
        spec = text.strip()
        zone = time_zone
        prefix = _TZ_PREFIX.match(spec)
        if prefix is not None:
            zone, spec = prefix.group(1), spec[prefix.end():].strip()
        self.zone = load_zone(zone or "")
        self.every: float | None = None
        if spec.startswith("@every "):
            try:
                delay = parse_duration(spec[len("@every "):].strip())
            except DurationError as e:
                raise ScheduleError(f"failed to parse duration {spec}: {e}") from None
            self.every = max(float(round(delay)), 1.0)  # robfig rounds to whole seconds, at least one
            return
        if spec.startswith("@"):
            if spec not in _DESCRIPTORS:
                raise ScheduleError(f"unrecognized descriptor: {spec}")
        else:
            fields = spec.split()
            if len(fields) != 5:
                raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {spec}")
            names_ok = all(t.isdigit() or t in ("*", "?", "") or t.upper() in _NAMES[i]
                           for i, f in enumerate(fields) for t in _TOKEN.split(f))
            if not all(_FIELD.fullmatch(f) for f in fields) or not names_ok or not _croniter().is_valid(spec):
                raise ScheduleError(f"failed to parse schedule: {spec}")
        self.expression = spec

    def next(self, after: datetime) -> datetime:
        if self.every is not None:
            return after.replace(microsecond=0) + timedelta(seconds=self.every)
        start = after.astimezone(self.zone)
        try:
            found = _croniter()(self.expression, start).get_next(datetime)
        except (ValueError, KeyError) as e:  # a day that never comes (Feb 31): robfig returns zero time
            raise ScheduleError(str(e)) from None
        return found.astimezone(UTC)


def _croniter() -> type:
    """croniter, imported when a schedule is first read: most runs have no CronJob, and it is a
    noticeable part of the CLI's start-up."""
    from croniter import croniter

    return croniter
