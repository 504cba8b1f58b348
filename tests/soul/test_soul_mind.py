"""The snapshot, the sleep clamp, the seams (incoming words, hooks) and the Chinese soul."""

import asyncio
import random
from datetime import datetime

from soulstack.llm.anthropic import AnthropicModel
from soulstack.soul import life, rhythm, snapshot
from soulstack.clocks import ScaledClock
from soulstack.soul.prompts import texts
from soulstack.config_checks import replaced
from soulstack.soul.config import Loop
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import until
from tests.soul.helpers import AFTERNOON, Running, make_cfg, texts_of

LOOP = Loop(
    default_sleep_minutes=20,
    min_sleep_minutes=2,
    max_sleep_minutes=60,
    night_start_hour=22,
    night_end_hour=6,
    night_max_sleep_minutes=240,
)


def test_night_windows_wrap_past_midnight_and_can_be_off():
    assert [h for h in range(24) if rhythm.is_night(h, 22, 6)] == [0, 1, 2, 3, 4, 5, 22, 23]
    assert [h for h in range(24) if rhythm.is_night(h, 0, 7)] == [0, 1, 2, 3, 4, 5, 6]
    assert not any(rhythm.is_night(h, 5, 5) for h in range(24))


def test_sleep_is_clamped_to_floor_and_the_hours_ceiling():
    noon, midnight = datetime(2024, 5, 1, 12), datetime(2024, 5, 1, 0, 30)
    plan = rhythm.plan_sleep(LOOP, noon, 500)
    assert (plan.minutes, plan.why, plan.ceiling) == (60, "ceiling", 60)
    assert (rhythm.plan_sleep(LOOP, midnight, 500).minutes, rhythm.plan_sleep(LOOP, midnight, 500).why) == (
        240,
        "ceiling",
    )
    assert (rhythm.plan_sleep(LOOP, noon, 0.5).minutes, rhythm.plan_sleep(LOOP, noon, 0.5).why) == (2, "floor")
    assert (rhythm.plan_sleep(LOOP, noon, None).minutes, rhythm.plan_sleep(LOOP, noon, None).why) == (20, None)


def test_snapshot_fades_old_matters_and_recalls_the_diary(tmp_path):
    soul_life = life.Life(tmp_path)
    now = datetime(2024, 5, 10, 12, 0)
    soul_life.add_entry(life.MIND, datetime(2024, 5, 9, 8, 0), "ask Ana how the interview went")
    soul_life.add_entry(
        life.MIND, datetime(2024, 5, 5, 8, 0), "find out why the plant on the window sill droops every afternoon"
    )
    for day in range(1, 10):
        for hour in (8, 20):
            soul_life.add_entry(life.DIARY, datetime(2024, 5, day, hour, 0), f"entry {day}-{hour}")
    block = snapshot.inner_block(soul_life, texts("en"), now, random.Random(1)).text
    assert "- ask Ana how the interview went (since 2024-05-09)" in block
    assert "- find out why the plant on the window\u2026 (from 5 days ago, fading)" in block
    recent = block.split("Your latest diary lines:\n")[1].split("\n\n")[0].splitlines()
    assert len(recent) == 10 and recent[-1].endswith("entry 9-20") and recent[0].endswith("entry 5-8")
    memory = block.split("A memory surfaces on its own:\n")[1].splitlines()[0]
    assert memory.split(": ")[1] in {
        f"entry {d}-{h}" for d in range(1, 5) for h in (8, 20)
    }  # one older, never a recent one


def test_the_chinese_soul_is_woken_in_the_seeds_words():
    why = snapshot.WakeReasons(nudged=["有人出现在镜头前"], slept_minutes=3, early_minutes=12)
    block = snapshot.now_block(
        texts("zh"),
        {"human": "大哥"},
        "StackChan",
        datetime(2024, 5, 1, 23, 0),
        True,
        why,
        snapshot.BodySense("awake"),
        240,
        ["有点闷"],
    )
    assert "被叫醒了: 有人出现在镜头前" in block.text.splitlines()
    assert "现在是夜里。" in block.text and "（比闹钟早了 12 分钟）" in block.text and "有点闷" in block.text
    assert block.text.endswith("这段时光是你的。好好过，最后用 sleep 结束。")


async def test_words_delivered_while_thinking_reach_the_model_within_the_turn_and_hooks_see_it(tmp_path):
    release = asyncio.Event()

    async def slow(request):
        await release.wait()
        return tool_use("express", {"emotion": "curious"})

    seen = {"usage": [], "tools": [], "assistant": 0, "entered": 0}
    async with (
        RecordingBody() as body,
        FakeAnthropic(
            [slow, tool_use("speak", {"text": "Hi!"}), tool_use("sleep", {"minutes": 30})],
            default=lambda r: tool_use("sleep", {"minutes": 30}),
        ) as fake,
    ):
        soul = build_soul(
            make_cfg(tmp_path, body),
            clock=ScaledClock(AFTERNOON, scale=60),
            model=AnthropicModel("claude-test", api_key="k", base_url=fake.base_url),
        )
        soul.hooks.on_usage.append(lambda s, waking, reply: seen["usage"].append(reply.usage.output_tokens))
        soul.hooks.on_tool_result.append(lambda s, event: seen["tools"].append((event.name, event.ok)))
        soul.hooks.on_assistant.append(lambda s, waking, message: seen.__setitem__("assistant", seen["assistant"] + 1))
        soul.hooks.felt.append(lambda s, now: "A restless itch in your limbs.")
        soul.hooks.before_tool.append(
            lambda s, call: "The voice stack says it for you." if call.name == "speak" else None
        )

        def stretch(s, plan):
            plan.minutes, plan.why = 120, "you are hungry, so you sleep longer"
            return plan

        soul.hooks.adjust_sleep.append(stretch)
        async with Running(soul):
            await until(lambda: len(fake.bodies) >= 1, what="the first model call")
            soul.deliver("are you awake?", on_enter=lambda: seen.__setitem__("entered", seen["entered"] + 1))
            release.set()
            await until(lambda: len(fake.bodies) >= 3 and soul.state == "asleep", what="the end of the turn")
        assert "A restless itch in your limbs." in texts_of(fake.bodies[0]["messages"][-1])
        second = fake.bodies[1]["messages"][-1]
        assert second["content"][0]["type"] == "tool_result"  # the express result first ...
        assert "Ana is speaking to you now: \u201care you awake?\u201d" in texts_of(second)  # ... then her words
        assert seen["entered"] == 1
        assert body.spoken == []  # before_tool answered the speak call instead of the body
        assert ("express", True) in seen["tools"] and ("speak", True) in seen["tools"]
        assert len(seen["usage"]) == 3 and all(tokens > 0 for tokens in seen["usage"]) and seen["assistant"] == 3
        told = soul.session.messages[-1].content[0].content[0].text
        assert told == "You will sleep 120 minutes (you asked for 30; you are hungry, so you sleep longer)."


async def test_the_mind_is_chosen_from_the_environment(tmp_path):
    async with RecordingBody() as body:
        cfg = make_cfg(tmp_path, body)
        cfg = replaced(cfg, {("model", "provider"): None})
        chosen = {}
        for name, env in {
            "none": {},
            "anthropic": {"ANTHROPIC_API_KEY": "k"},
            "openai": {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"},
        }.items():
            soul = build_soul(cfg, env=env)
            chosen[name] = soul.model.provider
            await soul.body.close()
        assert chosen == {"none": "brainstem", "anthropic": "anthropic", "openai": "openai"}
        cfg = replaced(cfg, {("model", "provider"): "anthropic"})
        from soulstack.soul.run import StartError

        try:
            build_soul(cfg, env={})
        except StartError as error:
            assert "ANTHROPIC_API_KEY" in str(error)
        else:
            raise AssertionError("an anthropic soul without a key must not start")


def test_keeping_a_kept_matter_again_renews_it_instead_of_repeating_it(tmp_path):
    soul_life = life.Life(tmp_path)
    assert soul_life.keep(datetime(2024, 5, 1, 9, 0), "ask Ana about the bird") is False
    assert soul_life.keep(datetime(2024, 5, 2, 9, 0), "water the plant") is False
    assert soul_life.keep(datetime(2024, 5, 6, 9, 0), "ask Ana about the bird") is True
    assert soul_life.entries(life.MIND) == [
        (datetime(2024, 5, 2, 9, 0), "water the plant"),
        (datetime(2024, 5, 6, 9, 0), "ask Ana about the bird"),
    ]
    block = snapshot.inner_block(soul_life, texts("en"), datetime(2024, 5, 6, 12, 0), random.Random(1)).text
    assert block.count("ask Ana about the bird") == 1 and "ask Ana about the bird (since 2024-05-06)" in block
