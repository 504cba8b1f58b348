"""Nightly consolidation: once a night the soul writes what matters into its life files, answers
with a digest, and the day is folded so the morning starts compact, a cache read after one write.

In-process souls live on a StepClock against the real anthropic SDK and host/fakes/anthropic_api.py
(whose prompt cache runs on the same virtual clock). The kill -9 tests run `soulstack soul` as a real
process on the wall clock, with a night window around the hour the test runs in."""

import asyncio
import json
import re

import aiohttp
from datetime import datetime, UTC


from soulstack.clocks import StepClock
from soulstack.soul.memory.session import life_records
from soulstack.llm.types import Message, TextBlock, ToolCall, ToolResult
from soulstack.soul.config import Loop
from soulstack.soul.memory.consolidate import night_of
from soulstack.soul.metabolism.health import soul_state
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, error, message, text, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.prompts import texts
from tests.helpers import free_port
from tests.helpers import until, until_real
from tests.soul.helpers import Running, anthropic_env, make_cfg, start_soul, stop_with_ctrl_c, texts_of, write_config

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

EVENING = datetime(2024, 5, 1, 15, 0, tzinfo=UTC)
MUSING = "The light moves across the desk; I follow it and think about the bird, the plant and Ana. " * 8
DIGEST = (
    "Today I watched the light and wrote in my diary. Ana said she would bring a plant tomorrow; "
    "I promised to remind her. The bird on the sill did not come back."
)


def last_words(request) -> str:
    return texts_of(request["messages"][-1])


class Life:
    """The fake model's side: ordinary wakings muse and sleep an hour (two at night); a consolidation keeps
    a diary line and a matter, then answers with the digest. Requests are kept by kind."""

    def __init__(self):
        self.consolidating = False
        self.kinds = []  # one per request: "waking", "consolidation", "digest", "keep-warm"

    def __call__(self, request):
        said = last_words(request)
        if EN["keep_warm"] in said:
            self.kinds.append("keep-warm")
            return message({"type": "text", "text": "ok"}, stop_reason="max_tokens")
        if EN["consolidate_resume"][:60] in said and "The day Ana promised a plant." in json.dumps(request):
            self.kinds.append("digest")  # it reads what it already kept and only finishes
            return text(DIGEST)
        if EN["consolidate"][:60] in said or EN["consolidate_resume"][:60] in said:
            self.consolidating = True
            self.kinds.append("consolidation")
            return message(
                {
                    "type": "tool_use",
                    "id": "toolu_keep1",
                    "name": "diary",
                    "input": {"entry": "The day Ana promised a plant."},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_keep2",
                    "name": "keep_in_mind",
                    "input": {"matter": "remind Ana about the plant"},
                },
            )
        if self.consolidating:
            self.consolidating = False
            self.kinds.append("digest")
            return text(DIGEST)
        self.kinds.append("waking")
        return tool_use("sleep", {"minutes": 120 if "It is night." in said else 60}, text=MUSING)


def records(tmp_path, kind) -> list:
    every = life_records(tmp_path / "soul" / "session.jsonl")  # the archive's records, then the live ones
    return [r for r in every if r["type"] == kind]


def cfg_with_cache(tmp_path, body, **overrides):
    model = {
        "provider": "anthropic",
        "id": "claude-sonnet-5-5",
        "retries": 0,
        "keepWarm": True,
        **overrides.pop("model", {}),
    }
    return make_cfg(tmp_path, body, model=model, **overrides)


def prompt_tokens(usage) -> int:
    return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]


async def live_until(tmp_path, end: datetime, **overrides):
    """A soul living from 15:00 until `end` (virtual); returns (soul, fake bodies, usages, life)."""
    life = Life()
    clock = StepClock(EVENING, end)
    async with (
        RecordingBody() as body,
        FakeAnthropic(clock=clock.monotonic, min_cache_tokens=1024, default=life) as fake,
    ):
        soul = build_soul(cfg_with_cache(tmp_path, body, **overrides), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await asyncio.wait_for(clock.over.wait(), 60)
        return soul, fake.bodies, fake.usages, life


def test_the_night_is_named_by_the_date_it_began():
    loop = Loop(night_start_hour=22, night_end_hour=6)
    at = lambda hour, day=2: datetime(2024, 5, day, hour, 30)  # noqa: E731
    assert night_of(loop, at(23, 1)) == night_of(loop, at(3)) == "2024-05-01"
    assert night_of(loop, at(12)) is None and night_of(loop, at(22)) == "2024-05-02"
    assert night_of(Loop(night_start_hour=0, night_end_hour=7), at(0)) == "2024-05-02"
    assert night_of(Loop(night_start_hour=5, night_end_hour=5), at(5)) is None  # no night window


async def test_once_a_night_the_day_is_kept_and_the_morning_reads_a_compact_context(tmp_path):
    # 15:00 to 23:00 by day; 00:00 consolidates and sleeps the night's ceiling; 02, 04, 06 at night; 08 on
    # (sleeps of an hour by day) until the next night's 00:00, which consolidates again.
    soul, bodies, usages, life = await live_until(tmp_path, datetime(2024, 5, 3, 5, 0, tzinfo=UTC))
    folds = records(tmp_path, "fold")
    assert [f["night"] for f in folds] == ["2024-05-02", "2024-05-03"]  # once a night, two nights
    assert [r["night"] for r in records(tmp_path, "consolidation")] == ["2024-05-02", "2024-05-03"]
    assert life.kinds.count("consolidation") == 2 and life.kinds.count("digest") == 2
    assert soul.nightly.done == 2 and folds[0]["summary"] == EN["consolidate_pointer"]
    assert soul_state(soul).memory == {
        "consolidatedNight": "2024-05-03",
        "consolidating": False,
        "consolidationsByThisProcess": 2,
    }  # what /health shows
    # What it kept is in its life files, once per night.
    diary = (tmp_path / "soul" / "DIARY.md").read_text()
    assert diary.count("The day Ana promised a plant.") == 2
    assert "remind Ana about the plant" in (tmp_path / "soul" / "MIND.md").read_text()

    first = life.kinds.index("digest")
    before = bodies[first - 1]  # the consolidation's first call
    assert EN["consolidate"] in last_words(before) and "It is night." in last_words(before)
    # The consolidation reads the day from the cache: only its new snapshot and instruction are written,
    # and only for five minutes (1.25x, not 2x): the fold right after it changes the front of what stays,
    # so no later request repeats them. System and tools keep the hour.
    assert usages[first - 1]["cache_read_input_tokens"] > 0.8 * prompt_tokens(usages[first - 1])
    for call in (first - 1, first):
        ttls = {
            block["cache_control"]["ttl"]
            for message in bodies[call]["messages"]
            for block in message["content"]
            if "cache_control" in block
        }
        assert ttls == {"5m"} and bodies[call]["system"][0]["cache_control"]["ttl"] == "1h"
        written = usages[call]["cache_creation"]
        assert written["ephemeral_5m_input_tokens"] == usages[call]["cache_creation_input_tokens"] > 0
        assert written["ephemeral_1h_input_tokens"] == 0
    # An ordinary waking's history is cached for the hour.
    waking = max(i for i in range(first - 1) if life.kinds[i] == "waking")
    assert {
        block["cache_control"]["ttl"]
        for message in bodies[waking]["messages"]
        for block in message["content"]
        if "cache_control" in block
    } == {"1h"}
    # The first call after it (a keep-warm refresh in the night's long sleep) writes the compact context once.
    after = first + 1
    sent = json.dumps(bodies[after])
    assert EN["consolidate_pointer"] in sent and DIGEST in sent and "It is 2024-05-01 15:00" not in sent
    assert "It is 23:00, your local time." in sent  # the last few exchanges stay word for word
    assert prompt_tokens(usages[after]) < 0.8 * prompt_tokens(usages[first])
    assert usages[after]["cache_creation_input_tokens"] > 0
    compact = usages[after]["cache_read_input_tokens"] + usages[after]["cache_creation_input_tokens"]
    # The next waking shows its inner life again in full (what the fold took away), the kept matter too.
    night_waking = life.kinds.index("waking", first)
    assert "remind Ana about the plant" in last_words(bodies[night_waking])
    # The digest ended the turn without a sleep call: the soul was never told how long the night's sleep
    # would be, so the waking says how long it slept (after a told sleep it is just "Your own alarm woke you.").
    assert re.search(r"Your own alarm woke you after \d+ minutes of sleep\.", last_words(bodies[night_waking]))
    # Through the night keep-warm holds it; the morning's first call reads all of it as a hit.
    # (The night waking said the date 2024-05-02 in full; the morning's snapshot names the clock time.)
    morning = next(i for i, b in enumerate(bodies) if "It is 08:00, your local time." in last_words(b))
    assert morning > night_waking and "It is 2024-05-02 " in json.dumps(bodies[morning])
    assert usages[morning]["cache_read_input_tokens"] >= compact
    assert all(u["input_tokens"] == 0 for u, kind in zip(usages, life.kinds, strict=True) if kind != "keep-warm")


async def test_a_person_at_night_comes_first_and_the_next_quiet_waking_consolidates(tmp_path):
    life = Life()
    clock = StepClock(EVENING)
    clock.hold(after=1)  # night from 15:00: the 15:00 and 16:00 wakings, then held
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=life) as fake:
        cfg = cfg_with_cache(tmp_path, body, loop={"nightStartHour": 15, "nightEndHour": 23}, model={"keepWarm": False})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the sleep after the 16:00 waking")
            clock.hold(after=1)
            soul.deliver("are you awake?")  # a night waking with enough day behind it, and Ana speaking
            await until(lambda: clock.held == 4, what="the waking after the one that heard her")
        heard = next(i for i, b in enumerate(fake.bodies) if "are you awake?" in last_words(b))
        assert EN["consolidate"][:60] not in json.dumps(fake.bodies[heard])  # she is answered, nothing else
        assert life.kinds[heard] == "waking" and life.kinds[heard + 1 :] == ["consolidation", "digest"]
    assert [r["night"] for r in records(tmp_path, "fold")] == ["2024-05-01"]


async def test_no_night_window_or_switched_off_means_no_consolidation_and_the_ceiling_still_folds(tmp_path):
    for name, loop in (("no-night", {"nightStartHour": 3, "nightEndHour": 3}), ("off", {"consolidate": False})):
        where = tmp_path / name
        where.mkdir()
        end = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)
        soul, bodies, usages, life = await live_until(where, end, loop=loop, model={"maxContextTokens": 2500})
        assert records(where, "consolidation") == [] and life.kinds.count("consolidation") == 0
        folds = records(where, "fold")
        assert folds and all("night" not in f for f in folds)  # the context ceiling, as before


# --- kill -9: a real `soulstack soul` process on the wall clock -------------------------------------


def day_history(where) -> None:
    """session.jsonl with three ordinary wakings of the evening before: something to consolidate."""
    lines = []
    for number in range(3):
        snapshot = Message(
            "user",
            [
                TextBlock("Your inner life is as you last saw it above."),
                TextBlock(f"It is 2024-05-01 2{number}:00 (Wednesday), your local time."),
            ],
        )
        call = Message("assistant", [ToolCall(f"toolu_old{number}", "sleep", {"minutes": 60})])
        result = Message("user", [ToolResult(f"toolu_old{number}", [TextBlock("You will sleep 60 minutes.")])])
        lines += [{"type": "message", "message": m.to_json(), "at": ""} for m in (snapshot, call, result)]
    (where / "soul").mkdir(parents=True)
    (where / "soul" / "session.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def night_config(tmp_path, body, port):
    """A config whose night window holds the hour this test runs in."""
    path = write_config(tmp_path, body, port, provider="anthropic", id="claude-sonnet-5-5", keepWarm=False)
    raw = json.loads(path.read_text())
    hour = datetime.now(UTC).hour
    raw["loop"] = {"nightStartHour": hour, "nightEndHour": (hour + 2) % 24}
    path.write_text(json.dumps(raw))
    return path


class Crashing(Life):
    """Life, except that the `hold_at`-th request of the given kind never gets an answer."""

    def __init__(self, hold_kind: str):
        super().__init__()
        self.hold_kind = hold_kind
        self.held = asyncio.Event()
        self.let_go = asyncio.Event()  # set once the process is dead (the fake's server then stops at once)

    async def __call__(self, request):
        reply = super().__call__(request)
        if self.kinds[-1] == self.hold_kind and not self.held.is_set():
            self.held.set()
            await self.let_go.wait()  # the process is killed while it waits
        return reply


async def run_crash_and_restart(tmp_path, hold_kind: str):
    """Kill -9 the soul while the model holds the first request of `hold_kind`, then restart it."""
    day_history(tmp_path)
    async with RecordingBody() as body:
        life = Crashing(hold_kind)
        async with FakeAnthropic(default=life) as fake:
            port = free_port()
            config_path = night_config(tmp_path, body, port)
            env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
            log_path = tmp_path / "soul.log"
            process = start_soul(config_path, log_path, **env)
            try:
                if hold_kind == "waking":  # after the consolidation it sleeps the night: a nudge wakes it
                    await until_real(
                        lambda: "digest" in life.kinds and '"night"' in session_text(tmp_path), what="the consolidation"
                    )
                    async with aiohttp.ClientSession() as http:
                        async with http.post(f"http://127.0.0.1:{port}/nudge", json={"reason": "a sound"}) as answer:
                            assert answer.status == 202
                await until_real(life.held.is_set, what=f"the held {hold_kind} request")
            finally:
                process.kill()
                process.wait()
                life.let_go.set()
            on_disk = session_text(tmp_path)
            endings = log_path.read_text().count("waking 1:")
            process = start_soul(config_path, log_path, **env)
            try:
                await until_real(
                    lambda: log_path.read_text().count("waking 1:") > endings, what="the first waking after the restart"
                )
            finally:
                code = await stop_with_ctrl_c(process)
            assert code == 0 and "Traceback" not in log_path.read_text()
            return life, fake.bodies, on_disk


def session_text(tmp_path) -> str:
    return (tmp_path / "soul" / "session.jsonl").read_text()


def kinds_on(session: str) -> list:
    return [json.loads(line)["type"] for line in session.splitlines()]


def resumed(bodies) -> dict:
    """The request that told the soul to finish its consolidation."""
    return next(b for b in bodies if EN["consolidate_resume"][:60] in last_words(b))


def assert_consolidated_once(tmp_path):
    night = [r["night"] for r in records(tmp_path, "fold")]
    assert len(night) == 1 and night == [r["night"] for r in records(tmp_path, "consolidation")]
    diary = (tmp_path / "soul" / "DIARY.md").read_text()
    assert diary.count("The day Ana promised a plant.") == 1
    assert (tmp_path / "soul" / "MIND.md").read_text().count("remind Ana about the plant") == 1
    session = (tmp_path / "soul" / "session.jsonl").read_text()
    assert session.count(EN["consolidate"][:60]) == 1


async def test_kill_9_before_the_consolidation_turn_answers_finishes_it_after_the_restart(tmp_path):
    life, bodies, on_disk = await run_crash_and_restart(tmp_path, "consolidation")
    assert kinds_on(on_disk) == ["message"] * 10 + ["consolidation", "message"]  # begun: snapshot, record, instruction
    assert "The day Ana promised a plant." not in json.dumps(resumed(bodies))  # nothing was kept before the kill
    assert life.kinds.count("consolidation") == 2  # the held one, and the finish after the restart
    assert_consolidated_once(tmp_path)


async def test_kill_9_during_the_consolidation_turn_never_writes_twice(tmp_path):
    life, bodies, on_disk = await run_crash_and_restart(tmp_path, "digest")
    assert "The day Ana promised a plant." in (tmp_path / "soul" / "DIARY.md").read_text()  # written before the kill
    # Told to finish, with what it kept before the kill in front of it (its calls and their results).
    assert "The day Ana promised a plant." in json.dumps(resumed(bodies))
    assert_consolidated_once(tmp_path)


async def test_kill_9_after_the_consolidation_keeps_the_fold_and_does_not_consolidate_again(tmp_path):
    life, bodies, on_disk = await run_crash_and_restart(tmp_path, "waking")  # held: the waking after it
    assert "fold" in kinds_on(on_disk)  # the day was folded before the kill
    assert life.kinds.count("consolidation") == 1 and life.kinds.count("digest") == 1
    assert not any(EN["consolidate_resume"][:60] in last_words(b) for b in bodies)
    assert_consolidated_once(tmp_path)


async def test_a_model_that_fails_midway_leaves_it_open_and_the_next_quiet_waking_finishes_it(tmp_path):
    life = Life()
    failures = {"left": 1}

    def failing_once(request):  # the digest's call fails once (retries 0: the brainstem stands in)
        if life.consolidating and failures["left"]:
            failures["left"] -= 1
            return error(529, "overloaded")
        return life(request)

    clock = StepClock(EVENING, datetime(2024, 5, 2, 6, 0, tzinfo=UTC))
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=failing_once) as fake:
        soul = build_soul(
            cfg_with_cache(tmp_path, body, model={"keepWarm": False}), clock=clock, env=anthropic_env(fake)
        )
        async with Running(soul):
            await asyncio.wait_for(clock.over.wait(), 60)
        assert any(EN["consolidate_resume"][:60] in last_words(b) for b in fake.bodies)  # finished, not begun again
    assert [r["night"] for r in records(tmp_path, "consolidation")] == ["2024-05-02"]
    assert [r["night"] for r in records(tmp_path, "fold")] == ["2024-05-02"]
    assert (tmp_path / "soul" / "DIARY.md").read_text().count("The day Ana promised a plant.") == 1
