"""Vitals: how many times the soul woke today, what its thinking cost, and hunger.

A day is a calendar day in the soul's timezone, and days only go forwards: a
clock that goes back does not start a new one. Every waking counts, nudged
ones included. Every model call's usage is priced and added to the current
waking and to the day (the cost meter, `host/soul/metabolism/costs.py`).

Hunger is the budget felt from inside. At 80% of `budget.maxWakesPerDay` (or
of `budget.maxUsdPerDay`, whichever is nearer) the soul feels its reserves
running low; at 100% it is starving, and every sleep it chooses is stretched
to at least `budget.hungrySleepMinutes`. Nudges still wake it: hunger slows
the soul's own rhythm, it never makes the soul deaf.

Persisted in soulDir/VITALS.json (atomic writes): today's totals, the
current waking, today's past wakings, and the totals of the last 14 days.
"""

import logging
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

from soulstack.llm.prices import cost_usd
from soulstack.llm.types import Usage
from soulstack.soul.atomic import atomic_write_json, read_state_json
from soulstack.soul.metabolism.costs import Meter

log = logging.getLogger(__name__)

FILENAME = "VITALS.json"
PECKISH_AT = 0.8
HISTORY_DAYS = 14
MAX_WAKINGS_KEPT = 500  # today's per-waking records; far above any sane wake budget


class Vitals:
    def __init__(
        self,
        path,
        tz: tzinfo,
        *,
        max_wakes_per_day: int | None = 60,
        max_usd_per_day: float | None = None,
        hungry_sleep_minutes: float = 120,
        prices: dict | None = None,
        cache_ttl: str = "1h",
    ):
        self.path = Path(path)
        self.tz = tz
        self.max_wakes_per_day = max_wakes_per_day
        self.max_usd_per_day = max_usd_per_day
        self.hungry_sleep_minutes = hungry_sleep_minutes
        self.prices = prices  # None: host/llm/prices.py's defaults
        self.cache_ttl = cache_ttl
        self.day: str | None = None
        self.first_wake: datetime | None = None
        self.wakes = 0
        self.today = Meter()
        self.keep_warm = Meter()  # today's keep-warm calls (host/soul/memory/keepwarm.py), also counted in `today`
        self.waking: dict | None = None  # {"started", "reason", "meter": Meter}
        self.wakings: list = []  # today's finished-or-current waking records (JSON)
        self.history: list = []  # [{"day", "wakes", ...Meter.to_json()}], oldest first

    @classmethod
    def load(cls, soul_dir, now: datetime, tz: tzinfo, **options) -> "Vitals":
        """VITALS.json from soul_dir. A corrupt file is set aside (VITALS.json.corrupt)
        and the day starts over: the soul keeps living, the log says why."""
        vitals = cls(Path(soul_dir) / FILENAME, tz, **options)
        data = read_state_json(vitals.path, "counting afresh", log)
        if data:
            vitals.day = data.get("day") or data.get("date")  # "date": stackchan-soul's VITALS.json
            vitals.first_wake = datetime.fromisoformat(data["firstWake"]) if data.get("firstWake") else None
            vitals.wakes = int(data.get("wakes", 0))
            vitals.today = Meter.from_json(data.get("today"))
            vitals.keep_warm = Meter.from_json(data.get("keepWarm"))
            vitals.wakings = list(data.get("wakings") or [])
            vitals.history = list(data.get("history") or [])
            current = data.get("waking")
            if current:
                vitals.waking = {
                    "started": current["started"],
                    "reason": current.get("reason", ""),
                    "meter": Meter.from_json(current),
                }
        vitals._roll(now)
        vitals.save()
        return vitals

    # --- persistence ----------------------------------------------------------------------

    def _waking_json(self) -> dict | None:
        if self.waking is None:
            return None
        return {"started": self.waking["started"], "reason": self.waking["reason"], **self.waking["meter"].to_json()}

    def to_json(self) -> dict:
        return {
            "day": self.day,
            "firstWake": self.first_wake.isoformat() if self.first_wake else None,
            "wakes": self.wakes,
            "today": self.today.to_json(),
            "keepWarm": self.keep_warm.to_json(),
            "waking": self._waking_json(),
            "wakings": self.wakings,
            "history": self.history,
        }

    def save(self) -> None:
        atomic_write_json(self.path, self.to_json())

    def _roll(self, now: datetime) -> None:
        """Start a new day when `now` is past midnight in the soul's timezone. Only forwards: a
        clock set back (across midnight, or from a jump ahead) stays in the day it counted, so
        no day is recorded twice and no budget is granted twice."""
        day = now.astimezone(self.tz).date().isoformat()
        if day == self.day or (self.day is not None and day < self.day):  # ISO dates sort as days do
            return
        if self.day is not None:
            self.history.append(
                {"day": self.day, "wakes": self.wakes, **self.today.to_json(), "keepWarm": self.keep_warm.to_json()}
            )
            self.history = self.history[-HISTORY_DAYS:]
        self.day, self.first_wake, self.wakes, self.today, self.wakings = day, None, 0, Meter(), []
        self.keep_warm = Meter()

    # --- hooks the loop calls -------------------------------------------------------------

    def on_waking(self, now: datetime, reason: str = "") -> None:
        """Once per waking (alarm, nudge or start), before the snapshot: counts it."""
        self._roll(now)
        self.wakes += 1
        if self.first_wake is None:
            self.first_wake = now
        self.waking = {"started": now.isoformat(), "reason": reason, "meter": Meter()}
        self.wakings.append(self._waking_json())
        self.wakings = self.wakings[-MAX_WAKINGS_KEPT:]
        self.save()

    def on_model_call(self, now: datetime, model_id: str, usage: Usage, keep_warm: bool = False) -> float | None:
        """After every model call (including a fold's summary): prices and records it; returns USD
        (None: the model has no price). A keep-warm call (made while asleep) counts for the day
        and apart, never for a waking."""
        self._roll(now)
        usd = cost_usd(model_id or "", usage, self.cache_ttl, self.prices)
        self.today.add(usage, usd, model_id or "")
        if keep_warm:
            self.keep_warm.add(usage, usd, model_id or "")
        elif self.waking is not None:
            self.waking["meter"].add(usage, usd, model_id or "")
            if self.wakings and self.wakings[-1]["started"] == self.waking["started"]:
                self.wakings[-1] = self._waking_json()
        self.save()
        return usd

    # --- what the budget says -------------------------------------------------------------

    def wakes_today(self, now: datetime) -> int:
        self._roll(now)
        return self.wakes

    def spent_today(self, now: datetime) -> Meter:
        self._roll(now)
        return self.today

    def fullness(self, now: datetime) -> float:
        """The larger of wakes/maxWakesPerDay and usd/maxUsdPerDay (0 when neither is set)."""
        self._roll(now)
        parts = [0.0]
        if self.max_wakes_per_day:
            parts.append(self.wakes / self.max_wakes_per_day)
        if self.max_usd_per_day is not None:
            parts.append(self.today.usd / self.max_usd_per_day if self.max_usd_per_day > 0 else 1.0)
        return max(parts)

    def hunger(self, now: datetime) -> str:
        """'fed', 'peckish' (>= 80% of a budget) or 'starving' (a budget used up)."""
        fullness = self.fullness(now)
        if fullness >= 1.0:
            return "starving"
        if fullness >= PECKISH_AT:
            return "peckish"
        return "fed"

    def exhausted(self, now: datetime) -> bool:
        return self.hunger(now) == "starving"

    def felt(self, now: datetime, lang) -> str | None:
        """Hunger for the snapshot's drives slot, or None when fed, in the soul's language `lang`
        (host/soul/prompts/: TEXT["hunger"], peckish then starving)."""
        texts = lang.TEXT["hunger"]
        return {"fed": None, "peckish": texts[0], "starving": texts[1]}[self.hunger(now)]

    def stretch_sleep(self, minutes: float, now: datetime) -> float:
        """The sleep to take: `minutes` (already clamped by the loop), or at least
        hungrySleepMinutes once a budget is used up. Hunger may pass the loop's ceiling."""
        if self.exhausted(now):
            return max(minutes, self.hungry_sleep_minutes)
        return minutes

    def budget_state(self, now: datetime) -> dict:
        """The budget as /health shows it."""
        self._roll(now)
        return {
            "hunger": self.hunger(now),
            "wakes": self.wakes,
            "maxWakesPerDay": self.max_wakes_per_day,
            "usd": _shown_usd(self.today),
            "maxUsdPerDay": self.max_usd_per_day,
            "hungrySleepMinutes": self.hungry_sleep_minutes,
        }

    def hours_since_first_wake(self, now: datetime) -> float | None:
        self._roll(now)
        if self.first_wake is None:
            return None
        return (now - self.first_wake) / timedelta(hours=1)


def _shown_usd(meter: Meter) -> float | None:
    """Dollars as /health shows them: None (unknown) once a call had no price."""
    known = meter.known_usd
    return None if known is None else round(known, 6)
