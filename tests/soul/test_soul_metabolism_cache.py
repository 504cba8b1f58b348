"""The prompt cache and the context ceiling in a living soul, checked on the exact requests the
real anthropic SDK sent to host/fakes/anthropic_api.py (whose cache runs on the soul's virtual clock).

The clock is a StepClock: virtual time moves only by what the soul sleeps, so a busy machine
cannot age an hour's cache between two steps of one waking (on a ScaledClock at 36000x a
tenth of a second of load was an hour). Each test holds the soul asleep after the wakings
it checks (`clock.hold(after=n)`, then `clock.held == n + 1`)."""

import json
from datetime import datetime, UTC

import pytest

from soulstack.clocks import StepClock
from soulstack.soul.memory.session import life_records
from soulstack.llm.anthropic import holds_image
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, cacheable_blocks, error, text, tool_use
from soulstack.fakes.soul_body import JPEG_B64, RecordingBody
from soulstack.soul.prompts import texts
from tests.helpers import until
from tests.soul.helpers import (
    Running,
    anthropic_env,
    cfg_for,
    last_breakpoint,
    same_prefix,
    texts_of,
    tokens_to_last_breakpoint,
)

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)


def has_history_breakpoint(body) -> bool:
    return any(block.get("cache_control") for m in body["messages"] for block in m["content"])


async def test_consecutive_wakings_share_their_prefix_byte_for_byte(tmp_path):
    clock = StepClock(AFTERNOON)
    clock.hold(after=3)
    async with (
        RecordingBody() as body,
        FakeAnthropic(clock=clock.monotonic, default=tool_use("sleep", {"minutes": 30})) as fake,
    ):
        fake.reply(
            tool_use("look", {"question": "who is there?"}),
            tool_use("sleep", {"minutes": 30}),  # waking 1: 0, 1
            tool_use("diary", {"entry": "A quiet afternoon."}),
            tool_use("sleep", {"minutes": 30}),  # waking 2: 2, 3
            tool_use("sleep", {"minutes": 30}),  # waking 3: 4
            tool_use("sleep", {"minutes": 30}),  # waking 4: 5
        )
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 4, what="four wakings")
        assert len(fake.bodies) == 6
    bodies, usages = fake.bodies, fake.usages
    # Every call asks for the cache, with the configured TTL (1 h by default), on system, tools and history.
    for request in bodies[:6]:
        assert request["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        # model.thinking "off" (the default) is the least thinking Sonnet 5.5 allows, not its default (high).
        assert request["thinking"] == {"type": "between_tools"} and "output_config" not in request
        assert request["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    # Waking to waking (last call of one, first call of the next) and step to step inside a waking:
    for earlier, later in ((2, 3), (3, 4), (4, 5)):
        assert has_history_breakpoint(bodies[earlier])
        assert same_prefix(bodies[earlier], bodies[later]), (earlier, later)
        assert usages[later]["cache_read_input_tokens"] == tokens_to_last_breakpoint(bodies[earlier])
    # A waking's first call ends with its snapshot, the last breakpoint: written once (it stays in the
    # history), read by every later call, never sent uncached at the full input price.
    for request in (bodies[0], bodies[2], bodies[4], bodies[5]):
        assert "your local time" in request["messages"][-1]["content"][-1]["text"]
        assert last_breakpoint(request) == len(cacheable_blocks(request)) - 1
    # The call after look sends the picture once, uncached: its breakpoints stop before the message that
    # holds it (the next waking shows a placeholder there, so an entry written with it would never be read),
    # and the next waking reads everything up to them.
    assert holds_image(bodies[1]["messages"][-1])
    assert not any(block.get("cache_control") for block in bodies[1]["messages"][-1]["content"])
    after_breakpoint = sum(tokens for _c, tokens, _ttl in cacheable_blocks(bodies[1])) - tokens_to_last_breakpoint(
        bodies[1]
    )
    assert usages[1]["input_tokens"] == after_breakpoint > 0
    assert same_prefix(bodies[1], bodies[2])
    assert usages[2]["cache_read_input_tokens"] == tokens_to_last_breakpoint(bodies[1])
    assert all(usage["input_tokens"] == 0 for index, usage in enumerate(usages[:6]) if index != 1)
    # The image of waking 1 is sent within waking 1, then replaced by one and the same placeholder.
    assert JPEG_B64 in json.dumps(bodies[1]) and JPEG_B64 not in json.dumps(bodies[2:6])
    placeholders = [json.dumps(b).count(EN["image_gone"]) for b in bodies[2:6]]
    assert placeholders == [1, 1, 1, 1]
    # session.jsonl keeps the image itself.
    assert JPEG_B64 in (tmp_path / "soul" / "session.jsonl").read_text()


def living(summaries):
    """Each waking: write in the diary, then sleep 30. A fold's summary request gets 'SUMMARY <n>'."""

    def answer(request):
        said = texts_of(request["messages"][-1])
        if EN["summary_instruction"][:60] in said:
            summaries.append(request)
            return text(f"SUMMARY {len(summaries)}: I wrote in my diary and slept.")
        if "Written in your diary." in said:
            return tool_use("sleep", {"minutes": 30})
        return tool_use("diary", {"entry": "Another page."})

    return answer


def fold_records(tmp_path) -> list:
    every = life_records(tmp_path / "soul" / "session.jsonl")  # the archive's records, then the live ones
    return [record for record in every if record["type"] == "fold"]


async def test_fold_writes_a_summary_that_a_restart_keeps_and_the_summary_is_a_cache_read(tmp_path):
    clock = StepClock(AFTERNOON)
    clock.hold(after=2)  # three wakings; every later sleep is held (the restarted soul's too)
    summaries = []
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=living(summaries)) as fake:
        # A ceiling this low (system and tools alone pass it) folds every waking down to the newest one.
        cfg = cfg_for(tmp_path, body, model={"maxContextTokens": 1000, "keepRecentTokens": 100})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 3, what="three wakings, two folds")
        soul.session.close()
        assert len(fake.bodies) == 8
        bodies = list(fake.bodies[:8])
        records = fold_records(tmp_path)
        assert [r["summary"] for r in records] == [
            "SUMMARY 1: I wrote in my diary and slept.",
            "SUMMARY 2: I wrote in my diary and slept.",
        ]
        assert 0 < records[0]["upto"] < records[1]["upto"]
        assert soul.metabolism.folds == 2
        # waking 1: 0 diary, 1 sleep; waking 2: 2 summary, 3 diary, 4 sleep; waking 3: 5 summary, 6 diary, 7 sleep
        first_diary_call = bodies[1]["messages"][1]["content"][0]["id"]
        after_fold = bodies[3]
        assert after_fold["messages"][0]["content"][0]["text"] == f"{EN['summary_header']}\n{records[0]['summary']}"
        assert first_diary_call not in json.dumps(after_fold)  # waking 1 is folded away
        # The summary is asked with the history exactly as the turn sent it: the prefix is a cache read.
        assert same_prefix(bodies[4], bodies[5])
        assert fake.usages[5]["cache_read_input_tokens"] == tokens_to_last_breakpoint(bodies[4])
        assert "SUMMARY 1" in json.dumps(bodies[5])  # the earlier summary is folded into the next one
        vitals = json.loads((tmp_path / "soul" / "VITALS.json").read_text())
        assert vitals["today"]["calls"] == 8  # the summaries are metered too

        # A restart rebuilds the shortened memory from session.jsonl.
        again = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        assert again.session.fold_summary == records[1]["summary"]
        async with Running(again):
            await until(lambda: clock.held == 4, what="the first waking after the restart")
        again.session.close()
        resumed = fake.bodies[8]  # the restarted soul's first request: its fold's summary request
        assert resumed["messages"][0]["content"][0]["text"] == f"{EN['summary_header']}\n{records[1]['summary']}"
        assert first_diary_call not in json.dumps(fake.bodies[8:10])


async def test_a_failed_summary_folds_a_plain_digest(tmp_path):
    clock = StepClock(AFTERNOON)
    clock.hold(after=1)
    summaries = []
    answer = living(summaries)

    def refuse_summaries(request):
        reply = answer(request)
        return error(400, "no summaries today") if summaries and summaries[-1] is request else reply

    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=refuse_summaries) as fake:
        cfg = cfg_for(tmp_path, body, model={"maxContextTokens": 1000, "keepRecentTokens": 100})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="a fold")
        soul.session.close()
    digest = fold_records(tmp_path)[0]["summary"]
    assert digest.startswith("1 waking folded; tools used: diary x1, sleep x1")
    assert "diary: Another page." in digest


def prompt_tokens(usage) -> int:
    return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]


@pytest.mark.parametrize("bytes_per_token", [4, 2], ids=["provider counts like us", "provider counts twice as many"])
async def test_the_ceiling_is_in_the_providers_tokens(tmp_path, bytes_per_token):
    """The soul's own token count is rough; each call's usage says how the provider counted the same request.
    A provider whose tokenizer counts more tokens for the same text reaches the ceiling sooner."""
    clock = StepClock(AFTERNOON)
    clock.hold(after=3)  # four wakings
    summaries = []
    ceiling = 2500  # above every request when counted ~like us, below most when counted twice as fine
    async with (
        RecordingBody() as body,
        FakeAnthropic(clock=clock.monotonic, default=living(summaries), bytes_per_token=bytes_per_token) as fake,
    ):
        cfg = cfg_for(tmp_path, body, model={"maxContextTokens": ceiling, "keepRecentTokens": 200})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 4, what="four wakings")
        soul.session.close()
    counted = [prompt_tokens(u) for u in fake.usages if u]
    records = fold_records(tmp_path)
    if bytes_per_token == 4:
        assert max(counted) < ceiling and records == [] and soul.metabolism.folds == 0
        assert 1.0 < soul.metabolism.token_scale < 1.6  # our count leaves out the JSON around each block
    else:
        assert soul.metabolism.token_scale > 2
        # It folded although its own count stayed under the ceiling (the same life, counted like us
        # in the other case, never passed it): the provider's count of the request before was over it.
        assert records and soul.metabolism.folds >= 1
        first_fold_waking = next(
            i for i, b in enumerate(fake.bodies) if EN["summary_instruction"][:60] in texts_of(b["messages"][-1])
        )
        assert counted[first_fold_waking - 1] > ceiling
