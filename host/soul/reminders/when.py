"""Reading the time a reminder is for, and saying it back.

The soul gives either `at`, a local date-time in its own timezone, or `after`, a duration
from now. Accepted (case does not matter):

  at     "2026-12-01 15:00", "2026-12-01T15:00[:SS]", "15:00", "today 15:00",
         "tomorrow 8:30", "tuesday 15:00" (the next Tuesday; today if 15:00 is still to come)
  after  "10 min", "2 h 10 min", "1h30m", "45 s", "1 day", "90" (a bare number: minutes)

A wall time is made an instant with zoneinfo. A time that does not exist (skipped when the
clocks go forward) is read with the offset before the change (02:30 becomes 03:30 summer time);
one that happens twice (when they go back) is its first, fold=0. Anything else is a `WhenError`
whose key names the tool error to show (TEXT["reminders"][key]).
"""

import re
from datetime import datetime, timedelta, tzinfo, UTC

DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CLOCK = r"(\d{1,2}):(\d{2})(?::(\d{2}))?"
_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ t]" + _CLOCK + "$")
_DAY_TIME = re.compile(r"^(?:(today|tomorrow|" + "|".join(DAY_NAMES) + r")\s+)?" + _CLOCK + "$")
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_PIECE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])", re.IGNORECASE
)
MAX_AHEAD = timedelta(days=366)


class WhenError(ValueError):
    """The time cannot be used; `key` is the tool error's key, `value` what the soul gave."""

    def __init__(self, key: str, value: str = ""):
        super().__init__(key)
        self.key, self.value = key, value


def localize(wall: datetime, tz: tzinfo) -> datetime:
    """A naive local wall time as an aware instant in `tz` (fold=0; see the module notes)."""
    aware = wall.replace(tzinfo=tz, fold=0)
    # A wall time in a gap does not round-trip; its offset is the one before the change, which
    # lands it after the gap (02:30 in a 02:00->03:00 jump reads as 03:30 summer time).
    return aware.astimezone(UTC).astimezone(tz)  # (astimezone to its own zone would change nothing)


def parse_after(text: str) -> timedelta:
    """A duration from now ("2 h 10 min", "45 s", "90"); WhenError("bad_after") if unreadable."""
    words = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", words):
        return timedelta(minutes=float(words))
    pieces = _PIECE.findall(words)
    leftover = _PIECE.sub("", words).replace(",", " ").replace("and", " ").strip()
    if not pieces or leftover:
        raise WhenError("bad_after", text)
    seconds = sum(float(number) * _UNITS[unit[0].lower()] for number, unit in pieces)
    return timedelta(seconds=seconds)


def parse_at(text: str, now: datetime, *, roll: bool = False) -> datetime:
    """The instant of a local date-time given as `text`, in now's timezone.

    A clock time with no date is today's; with `roll` (a repeating reminder) it is the next one
    to come, so "08:00" said at 09:00 is tomorrow's. WhenError("bad_at") if unreadable."""
    words = " ".join(text.strip().lower().split())
    tz = now.tzinfo
    assert tz is not None, "now is an aware instant"
    match = _DATE_TIME.match(words)
    if match:
        return localize(_wall(text, *(int(part or 0) for part in match.groups())), tz)
    match = _DAY_TIME.match(words)
    if not match:
        raise WhenError("bad_at", text)
    name, (hour, minute, second) = match.group(1), (int(part or 0) for part in match.groups()[1:])
    today = now.replace(tzinfo=None).date()
    wall = _wall(text, today.year, today.month, today.day, hour, minute, second)
    if name == "tomorrow":
        wall += timedelta(days=1)
    elif name in DAY_NAMES:
        wall += timedelta(days=(DAY_NAMES.index(name) - today.weekday()) % 7)
        if localize(wall, tz) <= now:
            wall += timedelta(days=7)
    elif roll and localize(wall, tz) <= now:
        wall += timedelta(days=1)
    return localize(wall, tz)


def _wall(text: str, *parts: int) -> datetime:
    """A naive wall time from its parts; WhenError("bad_at") for one no calendar has (25:00, February 30th)."""
    try:
        return datetime(*parts)  # type: ignore[arg-type]  # year, month, day, hour, minute, second
    except ValueError:
        raise WhenError("bad_at", text) from None


def resolve(now: datetime, at: str | None, after: str | None, repeat: str | None) -> datetime:
    """The first instant a reminder is for (aware, in now's timezone), or WhenError."""
    if at and after:
        raise WhenError("both")
    if not at and not after:
        raise WhenError("neither")
    when = parse_at(at, now, roll=repeat is not None) if at else now + parse_after(after or "")
    when = when.astimezone(now.tzinfo)
    if when <= now:
        raise WhenError("past", at or after or "")
    if when - now > MAX_AHEAD:
        raise WhenError("too_far", at or after or "")
    return when


def left(span: timedelta, units: dict) -> str:
    """A span as people say it, to the minute ("2 h 10 min", "3 d 4 h", "45 s" under a minute);
    `units` holds the language's formats for each (TEXT["reminders"]["units"]), each with its own spacing."""
    seconds = max(0, round(span.total_seconds()))
    if seconds < 60:
        return units["s"].format(n=seconds).strip()
    minutes = (seconds + 30) // 60
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    if days:
        parts = [units["d"].format(n=days)] + ([units["h"].format(n=hours)] if hours else [])
    else:
        parts = ([units["h"].format(n=hours)] if hours else []) + ([units["min"].format(n=minutes)] if minutes else [])
    return "".join(parts).strip()


def clock_words(when: datetime, now: datetime, lang) -> str:
    """The weekday and the clock time ("Tuesday 15:00"); the date too when it is a week or more away."""
    words = lang.TEXT["reminders"]
    local = when.astimezone(now.tzinfo)
    day = lang.WEEKDAYS[local.weekday()]
    if local.date() - now.date() >= timedelta(days=7):  # a weekday alone would name today
        day = words["day_and_date"].format(day=day, date=local.strftime("%Y-%m-%d"))
    return words["clock"].format(day=day, time=local.strftime("%H:%M"))


def describe(when: datetime, now: datetime, lang) -> str:
    """What the tool echoes back, in the soul's language: "Tuesday 15:00, in 2 h 10 min"."""
    words = lang.TEXT["reminders"]
    return words["when"].format(clock=clock_words(when, now, lang), left=left(when - now, words["units"]))
