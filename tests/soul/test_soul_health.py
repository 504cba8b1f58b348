"""GET /health: every field and alarm, served over real HTTP on loopback, token-protected when set."""

from contextlib import asynccontextmanager
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import aiohttp
import pytest
from aiohttp import web

from soulstack.llm.types import Usage
from soulstack.soul.metabolism.drives import Drives
from soulstack.serving import make_server_app
from soulstack.soul.metabolism.health import (
    SoulState,
    add_health_route,
    build_health,
    diary_today,
    diary_variety,
    opening,
)
from soulstack.soul.metabolism.vitals import Vitals

TZ = ZoneInfo("Europe/Berlin")
MORNING = datetime(2025, 3, 10, 7, 0, tzinfo=TZ)
MODEL = "claude-sonnet-4"


@asynccontextmanager
async def serving(app):
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session:
            yield session, f"http://127.0.0.1:{port}/health"
    finally:
        await runner.cleanup()


def organs(tmp_path, **vitals_options):
    drives = Drives.load(tmp_path, MORNING - timedelta(hours=30))
    vitals = Vitals.load(tmp_path, MORNING, TZ, **vitals_options)
    return drives, vitals


def codes(health):
    return [alarm["code"] for alarm in health["alarms"]]


def varied_diary(day: date, count=6):
    starts = [
        "Woke to rain",
        "The lamp flickered",
        "Listened for steps",
        "A long quiet",
        "Someone laughed",
        "Counted clouds",
    ]
    return [
        (datetime.combine(day, datetime.min.time()) + timedelta(hours=i), f"{starts[i % 6]} today.")
        for i in range(count)
    ]


def test_opening_normalises_digits_case_and_punctuation():
    assert opening("07:10 Woke up again, quietly") == opening("08:30 woke UP again!") == "woke up again"
    assert opening("今天早上下雨了") == "今天早上"
    assert opening("今天早上很安静") == opening("今天早上下雨了")
    assert opening("今天下午") != opening("今天早上")
    assert opening("...") == ""


def test_variety_and_rut():
    same = [(f"2025-03-{d:02d} 09:00", f"Woke up again, day {d}.") for d in range(1, 11)]
    assert diary_variety(same) == {"distinctOpenings": 1, "of": 10, "rut": True}
    assert diary_variety(varied_diary(date(2025, 3, 10))) == {"distinctOpenings": 6, "of": 6, "rut": False}
    assert diary_variety(same[:4])["rut"] is False  # too few entries to call it a rut
    half = same[:5] + varied_diary(date(2025, 3, 10), 5)
    assert diary_variety(half) == {"distinctOpenings": 6, "of": 10, "rut": False}
    mostly = same[:6] + varied_diary(date(2025, 3, 10), 4)
    assert diary_variety(mostly) == {"distinctOpenings": 5, "of": 10, "rut": True}


def test_diary_today_is_an_exact_date_match():
    entries = [
        (datetime(2025, 3, 10, 23, 59), "late"),
        (datetime(2025, 3, 11, 0, 1), "early"),
        ("2025-03-11 08:00", "as text"),
        (date(2025, 3, 11), "as a date"),
        ("2025-03-1", "a broken stamp"),
        ("12025-03-11", "a year that only ends the same"),
    ]
    assert diary_today(entries, date(2025, 3, 11)) == 3
    assert diary_today(entries, date(2025, 3, 10)) == 1


def test_a_quiet_healthy_day_has_every_field_and_no_alarm(tmp_path):
    drives, vitals = organs(tmp_path, max_wakes_per_day=50)
    for minute in range(0, 120, 20):
        now = MORNING + timedelta(minutes=minute)
        vitals.on_waking(now, "its own alarm")
        drives.on_waking(now, is_night=False)
        # the first call writes the cache, the rest read it
        usage = Usage(100, 200, 0, 10_000) if minute == 0 else Usage(100, 200, 30_000, 300)
        vitals.on_model_call(now, MODEL, usage)
    drives.on_contact(MORNING + timedelta(minutes=90), "typed")
    now = MORNING + timedelta(hours=2)
    state = SoulState(provider="anthropic", model_id=MODEL, mood="curious", diary=varied_diary(date(2025, 3, 10), 3))
    health = build_health(now, TZ, drives, vitals, state)
    assert health["date"] == "2025-03-10"
    assert health["wakesToday"] == 6
    assert health["budget"] == {
        "hunger": "fed",
        "wakes": 6,
        "maxWakesPerDay": 50,
        "usd": health["today"]["usd"],
        "maxUsdPerDay": None,
        "hungrySleepMinutes": 120,
    }
    assert health["boredom"] == 6 and health["boredomLevel"] == 1
    assert health["silenceHours"] == 0.5 and health["lastContact"] == "typed"
    assert health["diaryToday"] == 3
    assert health["diaryVariety"] == {"distinctOpenings": 3, "of": 3, "rut": False}
    assert health["mood"] == "curious"
    assert health["provider"] == {
        "name": "anthropic",
        "model": MODEL,
        "routineModel": None,
        "fellBackToBrainstem": False,
    }
    assert health["lastError"] is None
    assert health["today"]["tokens"] == {
        "input": 600,
        "output": 1200,
        "cacheRead": 150_000,
        "cacheWrite": 11_500,
        "total": 163_300,
    }
    assert health["today"]["calls"] == 6
    assert health["today"]["usd"] > 0
    assert health["today"]["cacheReadWriteRatio"] == pytest.approx(150_000 / 11_500, abs=0.01)
    assert health["alarms"] == []  # 13:1 two hours into the day


def test_cache_ratio_alarm_waits_an_hour_after_the_first_waking(tmp_path):
    drives, vitals = organs(tmp_path)
    vitals.on_waking(MORNING, "process start")
    vitals.on_model_call(MORNING, MODEL, Usage(100, 100, 0, 20_000))
    state = SoulState(provider="anthropic")
    assert codes(build_health(MORNING + timedelta(minutes=59), TZ, drives, vitals, state)) == []
    assert codes(build_health(MORNING + timedelta(minutes=60), TZ, drives, vitals, state)) == ["cache_ratio_low"]
    vitals.on_model_call(MORNING + timedelta(minutes=61), MODEL, Usage(100, 100, 200_000, 0))
    assert codes(build_health(MORNING + timedelta(minutes=62), TZ, drives, vitals, state)) == []  # 10:1 exactly is fine


def test_rut_budget_and_provider_alarms(tmp_path):
    drives, vitals = organs(tmp_path, max_wakes_per_day=2)
    vitals.on_waking(MORNING, "its own alarm")
    vitals.on_waking(MORNING, "its own alarm")
    rut = [(f"2025-03-10 0{h}:00", "I woke up and looked around.") for h in range(7)]
    state = SoulState(provider="anthropic", fell_back=True, last_error="anthropic: 529 overloaded", diary=rut)
    health = build_health(MORNING, TZ, drives, vitals, state)
    assert codes(health) == ["rut", "budget_exhausted", "provider_failing"]
    assert health["budget"]["hunger"] == "starving"
    assert health["provider"]["fellBackToBrainstem"] is True
    assert health["lastError"] == "anthropic: 529 overloaded"
    assert health["diaryVariety"]["rut"] is True


def test_brainstem_by_choice_is_not_a_failing_provider(tmp_path):
    drives, vitals = organs(tmp_path)
    health = build_health(
        MORNING, TZ, drives, vitals, SoulState(provider="brainstem", last_error="body: not answering")
    )
    assert "provider_failing" not in codes(health)


def test_the_date_is_the_souls_local_date(tmp_path):
    drives, vitals = organs(tmp_path)
    late = datetime(2025, 3, 10, 23, 30, tzinfo=ZoneInfo("UTC"))  # 00:30 on the 11th in Berlin
    assert build_health(late, TZ, drives, vitals, SoulState())["date"] == "2025-03-11"


async def test_health_over_http_with_a_token(tmp_path):
    drives, vitals = organs(tmp_path, max_wakes_per_day=1)
    vitals.on_waking(MORNING, "process start")
    state = SoulState(provider="anthropic", mood="sleepy 困了", diary=varied_diary(date(2025, 3, 10), 2))
    app = make_server_app("s3cret")
    add_health_route(app, lambda: build_health(MORNING, TZ, drives, vitals, state))
    async with serving(app) as (http, url):
        async with http.get(url) as response:
            assert response.status == 401
            assert "missing bearer token" in (await response.json())["message"]
        async with http.get(url, headers={"Authorization": "Bearer nope"}) as response:
            assert response.status == 401
            assert "wrong bearer token" in (await response.json())["message"]
        async with http.get(url, headers={"Authorization": "Bearer s3cret"}) as response:
            assert response.status == 200
            health = await response.json()
    assert health["wakesToday"] == 1 and health["diaryToday"] == 2 and health["mood"] == "sleepy 困了"
    assert [a["code"] for a in health["alarms"]] == ["budget_exhausted"]


async def test_health_over_http_without_a_token_and_with_an_async_state(tmp_path):
    drives, vitals = organs(tmp_path)

    async def state():
        return build_health(MORNING, TZ, drives, vitals, SoulState())

    app = make_server_app()
    add_health_route(app, state)
    async with serving(app) as (http, url):
        async with http.get(url) as response:
            assert response.status == 200
            health = await response.json()
        async with http.post(url) as response:
            assert response.status == 405
    assert health["provider"]["name"] == "brainstem" and health["alarms"] == []


def test_a_model_with_no_price_shows_its_cost_as_unknown(tmp_path):
    drives, vitals = organs(tmp_path, max_usd_per_day=1.0)
    vitals.on_waking(MORNING, "process start")
    vitals.on_model_call(MORNING, "claude-sonnet-5-5", Usage(input_tokens=1000))
    vitals.on_model_call(MORNING, "my-own-model", Usage(input_tokens=3152))
    health = build_health(MORNING, TZ, drives, vitals, SoulState())
    assert health["today"]["usd"] is None and health["today"]["unpricedModels"] == ["my-own-model"]
    assert health["budget"]["usd"] is None
    assert health["today"]["tokens"]["input"] == 4152
