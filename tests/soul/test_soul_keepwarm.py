"""Keep-warm in a living soul: refreshes of the prompt cache during sleeps longer than it lives.

The real loop, the real anthropic SDK against host/fakes/anthropic_api.py (whose cache applies
TTLs, refreshed on every hit, on the soul's clock), a real body on loopback. The clock is
host/clocks.py's StepClock: virtual time moves only by what the soul sleeps, so the cache's
TTLs are exact and nothing depends on this machine's speed. Keep-warm cuts a sleep into pieces
(up to each refresh, then up to the alarm); each piece is one of the clock's sleeps, so the
`hold(after=n)` of each test also says how many pieces the sleeps before it had.
"""

import asyncio
import json
import logging
from datetime import datetime, UTC

import pytest

from soulstack.protocol.nudges import Nudge
from soulstack.soul import config
from soulstack.clocks import StepClock
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, cacheable_blocks, error, message, text, tool_use
from soulstack.fakes.openai_api import FakeOpenAI, completion
from soulstack.fakes.soul_body import JPEG_B64, RecordingBody
from soulstack.soul.prompts import texts
from tests.helpers import until
from tests.soul.helpers import (
    Running,
    anthropic_env,
    cfg_for as metabolism_cfg,
    make_cfg,
    same_prefix,
    texts_of,
    tokens_to_last_breakpoint,
)

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)
MIN = 60.0
LONG_SLEEPS = {"maxSleepMinutes": 180}  # by day a sleep may last 3 h


def clock_holding_after(pieces: int) -> StepClock:
    """A step clock that lets the soul's first `pieces` sleep pieces pass and holds the next one."""
    clock = StepClock(AFTERNOON)
    clock.hold(after=pieces)
    return clock


def cfg_for(tmp_path, body, **overrides):
    """An anthropic soul whose day sleeps may last 3 h, keep-warm on (its default; test_soul_life's helper turns it off)."""
    overrides["model"] = {"keepWarm": True, **overrides.get("model", {})}
    overrides["loop"] = {**LONG_SLEEPS, **overrides.get("loop", {})}
    return metabolism_cfg(tmp_path, body, **overrides)


def test_keep_warm_is_on_by_default_and_must_be_a_boolean():
    assert config.from_dict({})[0].model.keep_warm is True
    with pytest.raises(config.ConfigError, match="model.keepWarm"):
        config.from_dict({"model": {"keepWarm": "yes"}})


def is_keep_warm(request) -> bool:
    last = request["messages"][-1]["content"]
    return isinstance(last, list) and last[-1].get("text") == EN["keep_warm"]


class Script:
    """The fake model: the turn's replies in order (then sleep 120), keep-warm requests answered by `keep_warm`.
    `at` holds the virtual time each request arrived."""

    def __init__(self, clock, *turns, keep_warm=None):
        self.clock, self.turns, self.at = clock, list(turns), []
        self.keep_warm = keep_warm or (lambda request: text("ok", stop_reason="max_tokens"))

    def __call__(self, request):
        self.at.append(self.clock.monotonic())
        if is_keep_warm(request):
            return self.keep_warm(request)
        return self.turns.pop(0) if self.turns else tool_use("sleep", {"minutes": 120})


def settings(body) -> str:
    """What a request sends besides its messages (all of it must match for a cache hit)."""
    return json.dumps([body["model"], body.get("thinking"), body["tools"], body["system"]], sort_keys=True)


def breakpoints(body) -> list:
    return [i for i, (_canon, _tokens, ttl) in enumerate(cacheable_blocks(body)) if ttl]


def vitals(tmp_path) -> dict:
    return json.loads((tmp_path / "soul" / "VITALS.json").read_text())


def waking_one():
    """Look (an image), write, sleep two hours."""
    return (
        tool_use("look", {"question": "who is there?"}),
        tool_use("diary", {"entry": "Evening light."}),
        tool_use("sleep", {"minutes": 120}),
    )


async def test_a_two_hour_sleep_is_kept_warm_and_the_next_waking_reads_the_cache(tmp_path):
    clock = clock_holding_after(3)  # sleep 1: to 55, refresh, to 110, refresh, to 120; sleep 2 held
    script = Script(clock, *waking_one())
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 4, what="waking 1, two refreshes, waking 2")
        bodies, usages = fake.bodies, fake.usages
    assert [is_keep_warm(b) for b in bodies] == [False, False, False, True, True, False]
    # Every 55 minutes after the last call that touched the cache, and the alarm still rings at 120.
    assert script.at == [0, 0, 0, 55 * MIN, 110 * MIN, 120 * MIN]
    refreshes, waking = bodies[3:5], bodies[5]
    assert texts_of(waking["messages"][-1]).endswith(
        "You will sleep 120 minutes.\nIt is 16:00, your local time.\nYour own alarm woke you."
    )
    for refresh in refreshes:
        assert refresh["max_tokens"] == 1
        # Byte for byte what the next waking sends, up to and including its last breakpoint: the end of
        # the soul's last reply, where the waking has a breakpoint too (its own last one is its snapshot)...
        assert settings(refresh) == settings(waking) and same_prefix(refresh, waking)
        assert breakpoints(refresh)[-1] == breakpoints(waking)[-2]
        assert refresh["messages"][-2]["content"][-1]["cache_control"]
        # (the reply that called sleep is settled: host/soul/memory/settle.py; what it said is in the final message)
        said = [b["text"] for b in refresh["messages"][-1]["content"] if b["type"] == "text"]
        assert said[0] == "What you did then:\n- sleep: 120 \u2192 You will sleep 120 minutes."
        # ...where the image waking 1 saw is already the placeholder the next waking sends.
        assert EN["image_gone"] in json.dumps(refresh) and JPEG_B64 not in json.dumps(refresh)
        # ...and the line after it, in the final message, is not cached: no entry of its own.
        assert refresh["messages"][-1]["content"][-1] == {"type": "text", "text": EN["keep_warm"]}
        assert not any(block.get("cache_control") for block in refresh["messages"][-1]["content"])
    # The first refresh reads waking 1's cache and writes the reply that called sleep; the second
    # only reads; the waking reads all that and writes only what is new (the sleep's result, its snapshot).
    assert usages[3]["cache_read_input_tokens"] > 0 and usages[3]["cache_creation_input_tokens"] > 0
    assert usages[4]["cache_creation_input_tokens"] == 0
    assert usages[4]["cache_read_input_tokens"] == tokens_to_last_breakpoint(refreshes[0])
    assert usages[5]["cache_read_input_tokens"] == tokens_to_last_breakpoint(refreshes[1])
    assert usages[5]["cache_creation_input_tokens"] == tokens_to_last_breakpoint(waking) - tokens_to_last_breakpoint(
        refreshes[1]
    )
    assert usages[5]["input_tokens"] == 0
    # The cost meter books them as keep-warm calls of the day, not as a waking's.
    meter = vitals(tmp_path)
    assert meter["keepWarm"]["calls"] == 2 and meter["keepWarm"]["usd"] > 0
    assert meter["today"]["calls"] == 6
    assert [w["calls"] for w in meter["wakings"]] == [3, 1]
    # Nothing of it reaches the soul's memory.
    assert EN["keep_warm"] not in (tmp_path / "soul" / "session.jsonl").read_text()
    assert soul.keep_warm.sent == 2


async def test_a_waking_that_ends_in_words_is_kept_warm_too(tmp_path):
    """A reply that looks and calls sleep gets one more step to see the picture; answered with words
    only, the history ends with the soul's reply. The refresh still renews what the next waking reads."""
    clock = clock_holding_after(3)  # sleep 1: to 55, refresh, to 110, refresh, to 120; sleep 2 held
    look_and_sleep = message(
        {"type": "tool_use", "id": "toolu_kw1", "name": "look", "input": {"question": "who?"}},
        {"type": "tool_use", "id": "toolu_kw2", "name": "sleep", "input": {"minutes": 120}},
    )
    script = Script(clock, look_and_sleep, text("Nobody. The chair is empty."))
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 4, what="waking 1, two refreshes, waking 2")
        bodies, usages = fake.bodies, fake.usages
    assert [is_keep_warm(b) for b in bodies] == [False, False, True, True, False]
    refreshes, waking = bodies[2:4], bodies[4]
    for refresh in refreshes:
        # The line is a user message of its own after the soul's words; the breakpoint is on those words.
        assert refresh["messages"][-2] == {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "Nobody. The chair is empty.",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                }
            ],
        }
        assert refresh["messages"][-1]["content"] == [{"type": "text", "text": EN["keep_warm"]}]
        assert same_prefix(refresh, waking) and breakpoints(refresh)[-1] == breakpoints(waking)[-2]
    assert usages[3]["cache_creation_input_tokens"] == 0
    assert usages[4]["cache_read_input_tokens"] == tokens_to_last_breakpoint(refreshes[1])
    assert usages[4]["cache_creation_input_tokens"] == tokens_to_last_breakpoint(waking) - tokens_to_last_breakpoint(
        refreshes[1]
    )


async def test_without_keep_warm_the_waking_after_two_hours_writes_the_cache_again(tmp_path):
    clock = clock_holding_after(1)  # sleep 1 in one piece
    script = Script(clock, *waking_one())
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        cfg = cfg_for(tmp_path, body, model={"keepWarm": False})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="two wakings")
        bodies, usages = fake.bodies, fake.usages
    assert not any(map(is_keep_warm, bodies)) and len(bodies) == 4
    assert script.at == [0, 0, 0, 120 * MIN]
    # What keep-warm saves: the whole prefix is written again.
    assert usages[3]["cache_read_input_tokens"] == 0
    assert usages[3]["cache_creation_input_tokens"] == tokens_to_last_breakpoint(bodies[3])
    assert vitals(tmp_path)["keepWarm"]["calls"] == 0


@pytest.mark.parametrize("model, minutes", [({}, 50), ({"cacheTtl": "5m"}, 120)], ids=["short sleep", "5m TTL"])
async def test_no_refresh_when_the_cache_outlives_the_sleep_or_the_ttl_is_5m(tmp_path, model, minutes):
    clock = clock_holding_after(1)  # sleep 1 in one piece
    script = Script(clock, tool_use("sleep", {"minutes": minutes}), tool_use("sleep", {"minutes": minutes}))
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        soul = build_soul(cfg_for(tmp_path, body, model=model), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="two wakings")
    assert script.at == [0, minutes * MIN]
    assert not any(map(is_keep_warm, fake.bodies))


async def test_a_nudge_wakes_the_soul_at_once_and_no_refresh_follows(tmp_path):
    clock = clock_holding_after(0)  # asleep at 0, held before the first refresh (due at 55)
    script = Script(clock, tool_use("sleep", {"minutes": 120}))
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 1, what="the first sleep")
            await soul.nudge(Nudge("a face appeared"))
            await until(lambda: clock.held == 2, what="the nudged waking, asleep again")
            assert [is_keep_warm(b) for b in fake.bodies] == [False, False]
            clock.release()
            clock.hold(after=1)  # the second sleep: to 55, refresh, to 110, refresh, then held
            await until(lambda: clock.held == 4, what="the second sleep's refreshes")
    assert [is_keep_warm(b) for b in fake.bodies] == [False, False, True, True]
    assert "Woken by: a face appeared" in texts_of(fake.bodies[1]["messages"][-1])
    assert script.at == [0, 0, 55 * MIN, 110 * MIN]  # counted from the nudged waking's call


async def test_a_nudge_abandons_a_refresh_in_flight(tmp_path):
    clock = clock_holding_after(1)  # to 55, the refresh (held up by the fake), then the nudged waking's sleep held
    gate = asyncio.Event()

    async def slow(request):
        await gate.wait()
        return text("ok", stop_reason="max_tokens")

    script = Script(clock, tool_use("sleep", {"minutes": 120}), keep_warm=slow)
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: len(fake.bodies) == 2, what="the refresh on its way")
            assert is_keep_warm(fake.bodies[1]) and soul.state == "asleep"
            await soul.nudge(Nudge("a face appeared"))
            await until(lambda: clock.held == 2, what="the nudged waking, asleep again")
            assert len(fake.bodies) == 3 and script.at == [0, 55 * MIN, 55 * MIN]
            assert not gate.is_set()  # the refresh never answered: the soul did not wait for it
            gate.set()
        assert "Woken by: a face appeared" in texts_of(fake.bodies[2]["messages"][-1])
        assert soul.keep_warm.sent == 0 and vitals(tmp_path)["keepWarm"]["calls"] == 0


async def test_a_failed_refresh_does_not_disturb_the_sleep(tmp_path, caplog):
    clock = clock_holding_after(2)  # to 55, the refresh fails, to 120; sleep 2 held
    script = Script(clock, *waking_one(), keep_warm=lambda request: error(529, "Overloaded"))
    caplog.set_level(logging.WARNING, logger="soulstack.soul.memory.keepwarm")
    async with RecordingBody() as body, FakeAnthropic(default=script, clock=clock.monotonic) as fake:
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 3, what="two wakings")
        bodies, usages = fake.bodies, fake.usages
    # One attempt at 55 min; after it failed the soul slept on, and its alarm rang at 120 as set.
    assert [is_keep_warm(b) for b in bodies] == [False, False, False, True, False]
    assert script.at == [0, 0, 0, 55 * MIN, 120 * MIN]
    assert usages[3] is None
    assert texts_of(bodies[4]["messages"][-1]).endswith("It is 16:00, your local time.\nYour own alarm woke you.")
    assert any("keep-warm" in r.getMessage() and "529" in r.getMessage() for r in caplog.records)
    assert soul.last_error is None  # a refresh is no waking: the provider is not reported failing
    assert usages[4]["cache_creation_input_tokens"] == tokens_to_last_breakpoint(bodies[4])  # paid the rewrite
    assert vitals(tmp_path)["keepWarm"]["calls"] == 0


async def test_the_brainstem_sends_no_refresh(tmp_path):
    clock = clock_holding_after(1)
    async with RecordingBody() as body, FakeAnthropic(default=text("never asked")) as fake:
        cfg = make_cfg(
            tmp_path,
            body,
            model={"provider": "brainstem", "keepWarm": True},
            loop={**LONG_SLEEPS, "defaultSleepMinutes": 120},
        )
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="two brainstem wakings")
        assert clock.seconds == 120 * MIN and fake.bodies == []
        assert soul.keep_warm.interval_s() is None


async def test_an_openai_mind_gets_no_refresh(tmp_path):
    clock = clock_holding_after(1)
    async with RecordingBody() as body, FakeOpenAI(default=completion(calls=[("sleep", {"minutes": 120})])) as fake:
        cfg = make_cfg(
            tmp_path, body, model={"provider": "openai", "keepWarm": True, "id": "llama3.1"}, loop=LONG_SLEEPS
        )
        soul = build_soul(cfg, clock=clock, env={"OPENAI_BASE_URL": fake.base_url + "/v1"})
        async with Running(soul):
            await until(lambda: clock.held == 2, what="two wakings")
        assert clock.seconds == 120 * MIN and len(fake.bodies) == 2
