"""The soul's day: local time, night hours, and how long a sleep may last.

Night is [nightStartHour, nightEndHour) in the soul's timezone; a window that
wraps past midnight (22 -> 6) works, and start == end means no night. At night
the ceiling on a sleep is nightMaxSleepMinutes, by day maxSleepMinutes; every
sleep is at least minSleepMinutes.
"""

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from soulstack.soul.config import Loop


def zone(name: str | None) -> tzinfo:
    """The soul's timezone; None is the machine's local zone."""
    if name:
        return ZoneInfo(name)
    local = datetime.now().astimezone().tzinfo
    assert local is not None, "astimezone() gives an aware time"
    return local


def is_night(hour: int, start: int, end: int) -> bool:
    if start == end:
        return False
    if start < end:
        return start <= hour < end
    return hour >= start or hour < end


@dataclass
class SleepPlan:
    minutes: float
    asked: float | None  # what the soul asked for (None: it chose nothing, the default applies)
    floor: float
    ceiling: float
    why: str | None = None  # "floor" or "ceiling" when the ask was clamped
    told: bool = False  # the soul's sleep call was answered with this length (it is in its history)


def night_now(loop: "Loop", local: datetime) -> bool:
    return is_night(local.hour, loop.night_start_hour, loop.night_end_hour)


def ceiling(loop: "Loop", local: datetime) -> float:
    return loop.night_max_sleep_minutes if night_now(loop, local) else loop.max_sleep_minutes


def plan_sleep(loop: "Loop", local: datetime, asked: float | None) -> SleepPlan:
    """Clamp the soul's ask (or the default) to [minSleepMinutes, ceiling]."""
    top = ceiling(loop, local)
    floor = min(loop.min_sleep_minutes, top)
    wanted = loop.default_sleep_minutes if asked is None else asked
    minutes, why = wanted, None
    if wanted < floor:
        minutes, why = floor, "floor"
    elif wanted > top:
        minutes, why = top, "ceiling"
    if asked is None:
        why = None  # the default was never the soul's wish; nothing to explain
    return SleepPlan(minutes, asked, floor, top, why)
