"""GET /health: the soul's vital signs for a person (or a monitor) to read at a glance.

`build_health` is a pure function of drives, vitals and a `SoulState` taken
from the running soul; `add_health_route` serves it. Alarms name what a
person should look at:

- cache_ratio_low: cache-read tokens are under 10x cache-written ones, once
  an hour has passed since the day's first waking (the first wakings of a
  day write the cache; after that, reads should dominate: docs/lessons.md,
  "a cache that expires between wakings")
- rut: the last diary entries keep opening the same way (docs/lessons.md,
  "a soul fed its own diary imitates itself into a rut")
- budget_exhausted: a daily budget is used up; sleeps are being stretched
- provider_failing: the model provider failed and the soul fell back to
  the brainstem, or the last model call failed
- storage_failing: the last waking failed because soulDir's disk is full,
  read-only or failing (soulstack.disk.storage); never filed as provider_failing
- reminder_undelivered / reminder_missed: a reminder due has not been said
  yet and is being retried, or was given up within the last day; each names
  the reminder (host/soul/reminders/delivery.py builds them)

The rut detector: an entry's *opening* is its first three words, lowercased,
with digits and punctuation dropped (so "07:10 Woke up again" and "08:30
woke up, again" open alike); an entry that starts with Chinese/Japanese
characters opens with its first four characters. Variety is the number of
distinct openings among the last 10 entries; a rut is at least 5 entries
with variety at most half their number.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from aiohttp import web

from soulstack.cjk import IDEOGRAPHS
from soulstack.disk.storage import storage_problem_in
from soulstack.serving import http_health

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul


RATIO_ALARM_BELOW = 10.0
RATIO_GRACE = timedelta(hours=1)
RUT_WINDOW = 10
RUT_MIN_ENTRIES = 5
OPENING_WORDS = 3
OPENING_CJK_CHARS = 4

_TOKENS = re.compile(rf"[{IDEOGRAPHS}]|[^\W\d_{IDEOGRAPHS}]+")


@dataclass
class SoulState:
    """What /health needs from the running soul, besides drives and vitals."""

    provider: str = "brainstem"
    model_id: str = ""
    fell_back: bool = False  # the last waking fell back to the brainstem
    last_error: str | None = None
    last_waking_error: str | None = None  # why the last (or the current) waking failed, if it did
    mood: str = ""
    diary: list = field(default_factory=list)  # [(datetime | date | "YYYY-MM-DD...", text)], oldest first
    nudges: dict = field(default_factory=dict)  # since the process started: received, wakings, waiting
    routine_model: str | None = None  # model.routine, when set
    memory: dict = field(default_factory=dict)  # the nightly consolidation: last night done, one under way
    shell: dict = field(default_factory=lambda: {"enabled": False})  # the fence's runs (host/soul/tools/shell.py)
    state: str = "starting"  # starting | thinking | asleep (host/soul/loop.py)
    asleep_until: datetime | None = None  # its alarm, while asleep (a nudge may wake it sooner)
    reminders: dict = field(default_factory=dict)  # counts, next, retrying, and their "alarms" (soul/reminders/)


def opening(text: str) -> str:
    """How an entry begins, normalised for the rut detector (see the module notes)."""
    tokens = _TOKENS.findall(text.lower())
    if not tokens:
        return ""
    if re.match(rf"[{IDEOGRAPHS}]", tokens[0]):
        return "".join(tokens[:OPENING_CJK_CHARS])
    return " ".join(tokens[:OPENING_WORDS])


def diary_variety(entries: list) -> dict:
    """Distinct openings among the last RUT_WINDOW entries, and whether that is a rut."""
    last = [text for _when, text in entries[-RUT_WINDOW:]]
    distinct = len({opening(text) for text in last})
    rut = len(last) >= RUT_MIN_ENTRIES and distinct * 2 <= len(last)
    return {"distinctOpenings": distinct, "of": len(last), "rut": rut}


def _entry_date(when) -> str:
    if isinstance(when, datetime):
        return when.date().isoformat()
    if isinstance(when, date):
        return when.isoformat()
    return str(when)[:10]


def diary_today(entries: list, today: date) -> int:
    """Entries dated exactly `today` (the soul's local date, as DIARY.md's stamps are)."""
    day = today.isoformat()
    return sum(1 for when, _text in entries if _entry_date(when) == day)


def build_health(now: datetime, tz: tzinfo, drives, vitals, state: SoulState) -> dict:
    """The /health JSON."""
    today = now.astimezone(tz).date()
    spent = vitals.spent_today(now)
    ratio = spent.cache_ratio()
    budget = vitals.budget_state(now)
    variety = diary_variety(state.diary)
    since_first = vitals.hours_since_first_wake(now)

    alarms = []
    if (
        ratio is not None
        and ratio < RATIO_ALARM_BELOW
        and since_first is not None
        and since_first >= RATIO_GRACE / timedelta(hours=1)
    ):
        alarms.append(
            {
                "code": "cache_ratio_low",
                "message": f"cache read:write is {ratio:.1f}:1 today, below {RATIO_ALARM_BELOW:g}:1",
            }
        )
    if variety["rut"]:
        alarms.append(
            {
                "code": "rut",
                "message": f"the last {variety['of']} diary entries open only {variety['distinctOpenings']} ways",
            }
        )
    if budget["hunger"] == "starving":
        alarms.append({"code": "budget_exhausted", "message": "a daily budget is used up; every sleep is stretched"})
    storage = storage_problem_in(state.last_waking_error)  # a full disk is no fault of the model's
    if storage:
        alarms.append(
            {
                "code": "storage_failing",
                "message": f"the soul cannot write its files: {storage}; free space where soulDir lives",
            }
        )
    blamed = state.last_error and not storage_problem_in(state.last_error)
    if state.fell_back or (blamed and state.provider != "brainstem"):
        alarms.append(
            {
                "code": "provider_failing",
                "message": state.last_error or f"{state.provider} failed; the brainstem stood in",
            }
        )

    reminders = dict(state.reminders)
    alarms += reminders.pop("alarms", [])

    usage = spent.usage
    return {
        "date": today.isoformat(),
        "time": now.astimezone(tz).isoformat(timespec="seconds"),
        "wakesToday": vitals.wakes_today(now),
        "budget": budget,
        "boredom": drives.boredom,
        "boredomLevel": drives.boredom_level(),
        "silenceHours": round(drives.silence_hours(now), 1),
        "lastContact": drives.last_contact_kind,
        "diaryToday": diary_today(state.diary, today),
        "diaryVariety": variety,
        "mood": state.mood,
        "state": state.state,
        "asleepUntil": state.asleep_until.astimezone(tz).isoformat(timespec="seconds") if state.asleep_until else None,
        "provider": {
            "name": state.provider,
            "model": state.model_id,
            "routineModel": state.routine_model,
            "fellBackToBrainstem": state.fell_back,
        },
        "memory": state.memory,
        "lastError": state.last_error,
        "nudges": state.nudges,
        "shell": state.shell,
        "reminders": reminders,
        "today": {
            "tokens": {
                "input": usage.input_tokens,
                "output": usage.output_tokens,
                "cacheRead": usage.cache_read_tokens,
                "cacheWrite": usage.cache_write_tokens,
                "total": usage.total,
            },
            "usd": None if spent.known_usd is None else round(spent.known_usd, 6),
            "unpricedModels": list(spent.unpriced),
            "calls": spent.calls,
            "cacheReadWriteRatio": None if ratio is None else round(ratio, 2),
        },
        "alarms": alarms,
    }


def add_health_route(app: web.Application, get_state) -> None:
    """GET /health on `app`, answering `get_state()` (a dict, or an awaitable of one) as JSON.

    The app's bearer check (soulstack.serving) guards it like every other route.
    """

    async def health(request: web.Request) -> web.Response:
        state = get_state()
        if inspect.isawaitable(state):
            state = await state
        return web.json_response({**state, **http_health(request.app)}, dumps=_dumps)

    app.router.add_get("/health", health)


def soul_state(soul: Soul) -> SoulState:
    """What /health needs from a running soul (host/soul/loop.py's Soul)."""
    from soulstack.soul import life as lifefiles
    from soulstack.soul.tools.shell import shell_health

    on_brainstem = soul.model is soul.brainstem
    try:
        mood, diary = soul.life.read(lifefiles.MOOD).strip(), soul.life.entries(lifefiles.DIARY)
    except lifefiles.Unreadable:
        mood, diary = "", []
    asleep_for = soul.asleep_for()
    return SoulState(
        state=soul.state,
        asleep_until=None if asleep_for is None else soul.clock.now() + timedelta(seconds=asleep_for),
        provider="brainstem" if on_brainstem else soul.model.provider,
        model_id="" if on_brainstem else soul.model.model_id,
        fell_back=soul.metabolism.last_fell_back or bool(soul.waking and soul.waking.fell_back),
        last_error=soul.last_error,
        last_waking_error=soul.waking.error if soul.waking is not None else None,
        mood=mood,
        diary=diary,
        nudges=nudge_counts(soul),
        routine_model=soul.routine_model.model_id if soul.routine_model is not None else None,
        memory={
            "consolidatedNight": soul.session.consolidated_night,
            "consolidating": soul.session.consolidating is not None,
            "consolidationsByThisProcess": soul.nightly.done,
        },
        shell=shell_health(soul),
        reminders=soul.reminders.health(),
    )


def nudge_counts(soul: Soul) -> dict:
    """Since this process started: nudges acknowledged, wakings they were shown in (coalesced, so a
    storm shows many received and few wakings), every waking, and how many wait now."""
    inbox = soul.inbox
    return {
        "received": inbox.received,
        "wakings": inbox.wakings,
        "allWakings": soul.wakings,
        "waiting": len(inbox.entries),
    }


def add_routes(app: web.Application, soul: Soul) -> None:
    """GET /health for the soul's server (host/soul/server.py calls this)."""
    metabolism = soul.metabolism

    def current() -> dict:
        state = build_health(soul.clock.now(), soul.tz, metabolism.drives, metabolism.vitals, soul_state(soul))
        state["echo"] = soul.converse.echo.health()  # its own voice heard back and ignored (soul/converse/echo.py)
        state["language"] = soul.cfg.persona.language  # what `soulstack ears` hears by default
        return state

    add_health_route(app, current)


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)
