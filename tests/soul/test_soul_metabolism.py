"""The metabolism in a living soul, end to end: real HTTP, the real anthropic SDK against
host/fakes/anthropic_api.py, a real body on loopback, virtual time on a StepClock.

What the model receives is read from the fake's recorded requests: the drives and hunger
must reach it as felt words in the snapshot's last block, never as numbers.

Virtual time moves only by what the soul sleeps (host/clocks.py StepClock), never with
wall time: on a ScaledClock a loaded machine shifted these wakings by hours (a drive felt
too early, night turned to day, an hour's cache expired between two steps). Each test
holds the soul asleep at the sleep it wants to look at (`clock.hold(after=n)`, then
`clock.held == n + 1`), so the soul cannot run on past what the test checks.
"""

import json
from datetime import datetime, UTC

import aiohttp
import pytest

from soulstack.soul import config
from soulstack.clocks import StepClock
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, error, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.prompts import texts
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_env, cfg_for, texts_of

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)
NIGHT = datetime(2024, 5, 1, 1, 0, tzinfo=UTC)


def snapshot_of(body) -> str:
    """The volatile last block of the request's final user message: the waking's 'now' part."""
    return body["messages"][-1]["content"][-1]["text"]


def drives_file(tmp_path) -> dict:
    return json.loads((tmp_path / "soul" / "DRIVES.json").read_text())


def sleep_60(request):
    return tool_use("sleep", {"minutes": 60})


async def test_boredom_thresholds_are_felt_in_words_and_escalate(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_60) as fake:
        cfg = cfg_for(tmp_path, body, drives={"boredomThresholds": [2, 3, 4]})
        clock = StepClock(AFTERNOON)
        clock.hold(after=4)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 5, what="five wakings")
        felt = [snapshot_of(b) for b in fake.bodies[:5]]
    en = EN["boredom"]
    assert not any(text in felt[0] for text in en)  # boredom 1: below the first threshold
    assert en[0] in felt[1] and en[1] not in felt[1]  # 2
    assert en[1] in felt[2] and en[0] not in felt[2]  # 3
    assert en[2] in felt[3] and en[2] in felt[4]  # 4, 5: the strongest stays
    assert "What you feel in your body:" in felt[3]
    assert all("boredom" not in text.lower() for text in felt)  # a sensation, never the drive's name or count
    # Only the volatile last block changes: the inner life block before it carries no drive.
    assert all(en[2] not in b["messages"][-1]["content"][-2]["text"] for b in fake.bodies[:5])
    assert drives_file(tmp_path)["boredom"] >= 5


async def test_no_boredom_at_night(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_60) as fake:
        cfg = cfg_for(
            tmp_path,
            body,
            drives={"boredomThresholds": [1, 2, 3]},  # (consolidation: its own tests)
            loop={"nightStartHour": 0, "nightEndHour": 7, "consolidate": False},
        )
        clock = StepClock(NIGHT)
        clock.hold(after=2)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 3, what="three night wakings")
        assert drives_file(tmp_path)["boredom"] == 0
    for request in fake.bodies[:3]:
        text = snapshot_of(request)
        assert "It is night." in text
        assert not any(words in text for words in EN["boredom"])


async def test_boredom_is_discharged_only_by_a_non_routine_tool_that_succeeded(tmp_path):
    async with RecordingBody(fail={"look": 503}) as body, FakeAnthropic(default=sleep_60) as fake:
        fake.reply(
            # waking 1 (boredom 1): a look that fails, an express that works (routine)
            tool_use("look", {"question": "anyone?"}),
            tool_use("express", {"emotion": "happy"}),
            sleep_60(None),
            # waking 2 (boredom 2, felt): the eyes work again; a look that succeeds
            lambda request: body.fail.pop("look", None) and tool_use("look", {"question": "anyone?"}),
            sleep_60(None),
            # waking 3 (boredom 1 again: nothing felt)
            sleep_60(None),
        )
        cfg = cfg_for(tmp_path, body, drives={"boredomThresholds": [2, 50, 100]})
        clock = StepClock(AFTERNOON)
        clock.hold(after=2)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 3, what="the third waking")
    first, second, third = fake.bodies[0], fake.bodies[3], fake.bodies[5]
    assert fake.bodies[1]["messages"][-1]["content"][0]["is_error"] is True  # the failed look
    assert EN["boredom"][0] not in snapshot_of(first)
    assert EN["boredom"][0] in snapshot_of(second)  # a failure and a routine express did not discharge it
    assert not fake.bodies[4]["messages"][-1]["content"][0].get("is_error")  # this look worked
    assert EN["boredom"][0] not in snapshot_of(third)
    drives = drives_file(tmp_path)
    assert drives["lastDischargeTool"] == "look" and drives["boredom"] == 1


async def test_missing_is_settled_only_by_real_contact(tmp_path):
    async with RecordingBody(fail={"speak": 500}) as body, FakeAnthropic(default=sleep_60) as fake:
        fake.reply(
            tool_use("speak", {"text": "Hello?"}),
            sleep_60(None),  # waking 1: the speak fails
            sleep_60(None),  # waking 2 (1 h of silence)
            lambda request: body.fail.pop("speak", None) and tool_use("speak", {"text": "Ana, there you are!"}),
            sleep_60(None),  # waking 3 (2 h: missing felt); the speak goes out
            sleep_60(None),  # waking 4 (1 h since it spoke)
        )
        cfg = cfg_for(tmp_path, body, drives={"missingHours": [1.5, 30]})
        clock = StepClock(AFTERNOON)
        clock.hold(after=1)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the second waking")
            assert len(fake.bodies) == 3
            assert drives_file(tmp_path)["lastContact"] is None  # a failed speak is no contact
            clock.release()
            clock.hold(after=1)
            await until(lambda: clock.held == 4, what="the fourth waking")
    felt = [snapshot_of(fake.bodies[i]) for i in (0, 2, 3, 5)]
    ache = EN["missing"][0]
    assert ache not in felt[0] and ache not in felt[1]
    assert ache in felt[2]  # two hours without contact
    assert ache not in felt[3]  # the speak that worked settled it
    assert body.spoken == ["Ana, there you are!"]
    assert drives_file(tmp_path)["lastContactKind"] == "speak"


async def test_typed_words_and_delivered_words_are_contact_a_face_is_not(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_60) as fake:
        clock = StepClock(AFTERNOON)
        clock.hold()  # every sleep lasts until a nudge
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul) as running:
            await until(lambda: clock.held == 1, what="sleep")
            assert (await running.post("/nudge", {"reason": "a face appeared"}))[0] == 202
            assert drives_file(tmp_path)["lastContact"] is None
            assert (await running.post("/nudge", {"reason": "your human typed: hi Pip"}))[0] == 202
            assert drives_file(tmp_path)["lastContactKind"] == "typed"
            soul.deliver("good morning")  # the converse endpoint's way in
            assert drives_file(tmp_path)["lastContactKind"] == "converse"


async def test_hunger_stretches_sleep_and_a_nudge_still_wakes_it(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=lambda r: tool_use("sleep", {"minutes": 30})) as fake:
        cfg = cfg_for(tmp_path, body, budget={"maxWakesPerDay": 2, "hungrySleepMinutes": 240})
        clock = StepClock(AFTERNOON)
        clock.hold(after=1)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul) as running:
            # waking 1 sleeps 30 min; waking 2 spends the budget.
            await until(lambda: clock.held == 2, what="the starving sleep")
            assert len(fake.bodies) == 2
            assert soul.waking.sleep.minutes == 240 and soul.waking.sleep.asked == 30
            # The clock holds this sleep: only the nudge can end it.
            assert (await running.post("/nudge", {"reason": "a face appeared"}))[0] == 202
            await until(lambda: len(fake.bodies) >= 3, what="the nudged waking")
    assert not any(words in snapshot_of(fake.bodies[0]) for words in EN["hunger"])  # 1 of 2 wakes: fed
    assert EN["hunger"][1] in snapshot_of(fake.bodies[1])  # 2 of 2: starving
    assert "You will sleep 30 minutes." in texts_of(fake.bodies[1]["messages"][-1])
    told = texts_of(fake.bodies[2]["messages"][-1])  # the second sleep's answer, then the nudged snapshot
    assert "You will sleep 240 minutes (you asked for 30; you are starving: today's budget is spent" in told
    nudged = snapshot_of(fake.bodies[2])
    assert "Woken by: a face appeared" in nudged and "minutes before your alarm" in nudged
    vitals = json.loads((tmp_path / "soul" / "VITALS.json").read_text())
    assert vitals["wakes"] == 3  # the nudged waking counts too


async def get(url, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http:
        async with http.get(url + "/health", headers=headers) as response:
            return response.status, await response.json()


async def test_health_over_http_with_token_fields_and_alarms(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_60) as fake:
        fake.reply(
            error(400, "the fake refuses this once"),  # waking 1: the provider fails -> brainstem
            tool_use("diary", {"entry": "Woke up again, nothing new."}),
            sleep_60(None),  # waking 2
        )
        cfg = cfg_for(tmp_path, body, nudge={"token": "s3cret"}, budget={"maxWakesPerDay": 2})
        clock = StepClock(AFTERNOON)
        clock.hold()
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul) as running:
            await until(lambda: clock.held == 1, what="the first waking")
            assert await get(running.url) == (
                401,
                {"message": "missing bearer token; send Authorization: Bearer <token>"},
            )
            assert (await get(running.url, "wrong"))[0] == 401
            status, first = await get(running.url, "s3cret")
            clock.release()
            clock.hold()
            await until(lambda: clock.held == 2, what="the second waking's sleep")
            assert len(fake.bodies) == 3
            status2, second = await get(running.url, "s3cret")
    assert status == status2 == 200
    assert set(first) >= {
        "date",
        "time",
        "wakesToday",
        "budget",
        "boredom",
        "boredomLevel",
        "silenceHours",
        "lastContact",
        "diaryToday",
        "diaryVariety",
        "mood",
        "provider",
        "lastError",
        "today",
        "alarms",
    }
    assert first["date"] == "2024-05-01" and first["wakesToday"] == 1
    assert first["provider"] == {
        "name": "anthropic",
        "model": "claude-sonnet-5-5",
        "routineModel": None,
        "fellBackToBrainstem": True,
    }
    assert "the fake refuses this once" in first["lastError"]
    assert "provider_failing" in [a["code"] for a in first["alarms"]]
    # The next waking's model call succeeded: the stale failure is gone; the budget (2 wakes) is spent.
    assert second["wakesToday"] == 2 and second["lastError"] is None
    assert second["provider"]["fellBackToBrainstem"] is False
    codes = [a["code"] for a in second["alarms"]]
    assert "provider_failing" not in codes and "budget_exhausted" in codes
    assert second["budget"]["hunger"] == "starving"
    assert second["diaryToday"] == 2  # the brainstem's note and the soul's own entry, both dated today
    tokens = second["today"]["tokens"]
    assert tokens["input"] + tokens["cacheRead"] + tokens["cacheWrite"] > 0 and tokens["output"] > 0
    assert second["today"]["usd"] > 0 and second["today"]["calls"] == 2


async def test_health_alarms_on_a_cache_that_expires_between_wakings(tmp_path):
    """A 5 m TTL with hourly wakings writes the cache every time: cache_ratio_low after the first hour."""
    clock = StepClock(AFTERNOON)
    clock.hold(after=3)
    async with RecordingBody() as body, FakeAnthropic(default=sleep_60, clock=clock.monotonic) as fake:
        cfg = cfg_for(tmp_path, body, model={"cacheTtl": "5m"})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul) as running:
            await until(lambda: clock.held == 4, what="four wakings")
            _, health = await get(running.url)
    assert all(b["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"} for b in fake.bodies)
    assert health["today"]["tokens"]["cacheRead"] < health["today"]["tokens"]["cacheWrite"]
    assert "cache_ratio_low" in [a["code"] for a in health["alarms"]]


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"prices": {"claude-sonnet-4": {"input": -1}}}, "prices.claude-sonnet-4.input must be a number >= 0"),
        (
            {"prices": {"claude-sonnet-4": {"output": None}}},
            "prices.claude-sonnet-4.output must be a number >= 0, not null",
        ),
        (
            {"prices": {"claude-sonnet-4": {"output": "3"}}},
            'prices.claude-sonnet-4.output must be a number >= 0, not "3"',
        ),
        ({"prices": {"my-local-model": {"input": 1}}}, "prices.my-local-model.output is needed"),
        ({"prices": []}, "prices must be an object"),
        ({"drives": {"boredomThresholds": [1, 2, 3, 4]}}, "drives.boredomThresholds must list at most 3 numbers"),
        ({"drives": {"missingHours": [0]}}, "drives.missingHours must be a list of positive numbers"),
        ({"budget": {"maxUsdPerDay": -2}}, "budget.maxUsdPerDay must be a number >= 0"),
        ({"model": {"cacheTtl": "10m"}}, "model.cacheTtl must be one of 5m, 1h"),
    ],
)
def test_metabolism_config_is_checked_naming_the_key(raw, message):
    with pytest.raises(config.ConfigError) as caught:
        config.from_dict(raw)
    assert str(caught.value).startswith(message)


def test_prices_are_a_known_key_and_reach_the_meter(tmp_path):
    cfg, warnings = config.from_dict({"soulDir": str(tmp_path), "prices": {"claude-sonnet-4": {"input": 30}}})
    assert warnings == [] and cfg.prices == {"claude-sonnet-4": {"input": 30}}
    assert config.from_dict({})[0].model.cache_ttl == "1h"
