"""The rules of a reminder's time: how a repeat rolls forward, how long a failed one is retried.

A repeating reminder keeps its local wall time: the next occurrence of a daily 08:00 is the
next day's 08:00 in the soul's timezone, made an instant again (when.localize), so it stays
08:00 when the clocks change — 23 or 25 hours later, not 24.

A reminder its waking did not get said is retried while the soul sleeps: RETRY_FIRST_S after,
then twice as long each time up to RETRY_MAX_S, until GIVE_UP_S after it was due; then it is
missed (counted, and /health says so).
"""

from datetime import datetime, timedelta, tzinfo

from soulstack.soul.reminders.when import localize

REPEATS = ("daily", "weekdays", "weekly")
RETRY_FIRST_S = 10.0
RETRY_MAX_S = 120.0
GIVE_UP_S = 3600.0


def following(wall: datetime, repeat: str) -> datetime:
    """The local wall time of the occurrence after `wall` (naive)."""
    if repeat == "weekly":
        return wall + timedelta(days=7)
    wall += timedelta(days=1)
    while repeat == "weekdays" and wall.weekday() >= 5:
        wall += timedelta(days=1)
    return wall


def first_wall(wall: datetime, repeat: str | None) -> datetime:
    """A weekdays reminder set for a Saturday or Sunday starts on the Monday after."""
    while repeat == "weekdays" and wall.weekday() >= 5:
        wall += timedelta(days=1)
    return wall


def next_after(wall: datetime, repeat: str, now: float, tz: tzinfo) -> tuple:
    """(wall, instant as epoch seconds, occurrences skipped) of the first occurrence after `now`,
    counting from the one at `wall` (which is past: said, missed or cancelled)."""
    skipped = -1
    while True:
        wall = following(wall, repeat)
        skipped += 1
        due = localize(wall, tz).timestamp()
        if due > now:
            return wall, due, skipped


def retry_delay(attempts: int) -> float:
    """Seconds to wait after the `attempts`-th failed try (1, 2, ...)."""
    return min(RETRY_MAX_S, RETRY_FIRST_S * 2 ** max(0, attempts - 1))


def given_up(due: float, now: float) -> bool:
    return now - due >= GIVE_UP_S
