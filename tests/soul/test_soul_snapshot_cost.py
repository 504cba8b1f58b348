"""The snapshot's inner life is sent in full only when the soul does not already have it in view.

Over the real loop and the real anthropic SDK against host/fakes/anthropic_api.py: an unchanged
inner life is not repeated at all, and a quiet waking's snapshot is its volatile block alone; a
part changed from outside (MOOD.md, a diary line) is sent; a change the soul made itself (its
diary line, its update_mood) is not repeated; a restart and a fold bring it back in full. The
volatile block's steady lines (the date, the body sense, the sleep ceiling, the closing line)
are said once while they stay in view. In every request the soul sends, its whole inner life is
somewhere in the messages.

The clock is a StepClock (host/clocks.py): virtual time moves only by what the soul sleeps,
so a busy machine cannot expire the hour's cache between two wakings (on a ScaledClock at 36000x
a tenth of a second of load was an hour). Each test holds the soul asleep after the wakings it
checks (`clock.hold(after=n)`, then `clock.held == n + 1`).
"""

import json
import random
from datetime import datetime, UTC

from soulstack.llm.types import Message, TextBlock
from soulstack.clocks import StepClock
from soulstack.soul.memory.session import life_records
from soulstack.soul.config import Persona, from_dict, starter
from soulstack.soul.life import DIARY, MIND, Life
from soulstack.soul.prompts import texts
from soulstack.soul.run import build_soul
from soulstack.soul.memory.session import Session
from soulstack.soul.snapshot import BodySense, InnerSight, WakeReasons, now_block
from soulstack.soul.tools.builtin import make_toolbox
from soulstack.fakes.anthropic_api import FakeAnthropic, text, tool_use
from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_env, cfg_for, same_prefix, texts_of, tokens_to_last_breakpoint

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)
# A soul's tools and their facts (host/soul/tools/): the config `soulstack soul --init` writes (every body endpoint).
TOOLS = make_toolbox(from_dict(starter())[0])

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)
SELF_TEXT = "I am Pip, a small robot who likes the afternoon light and the sound of the keyboard. " * 4
ASPIRATION = "Notice one new thing every day."


def seed_life(tmp_path) -> Life:
    soul_dir = tmp_path / "soul"
    soul_dir.mkdir(parents=True, exist_ok=True)
    (soul_dir / "SELF.md").write_text(SELF_TEXT)
    (soul_dir / "ASPIRATIONS.md").write_text(ASPIRATION)
    (soul_dir / "MOOD.md").write_text("calm")
    life = Life(soul_dir)
    for hour in range(12):
        life.add_entry(DIARY, datetime(2024, 4, 30, hour, 0), f"old line {hour}")
    return life


def inner_of(request) -> str:
    """The inner-life block of a waking's first request: the text block just before the volatile one
    ("" when there is none: everything was in view). The final message may begin with what came
    before this waking's snapshot (the last waking's settled calls, its snapshot): not it."""
    blocks = this_waking(request)
    volatile = next(i for i, b in enumerate(blocks) if "your local time" in b["text"])
    return blocks[volatile - 1]["text"] if volatile else ""


def this_waking(request) -> list:
    """The text blocks of the final message from this waking's snapshot on (after the last waking's
    settled calls, or its snapshot, when they share the message)."""
    blocks = [b for b in request["messages"][-1]["content"] if b["type"] == "text"]
    volatiles = [i for i, b in enumerate(blocks) if "your local time" in b["text"]]
    ends = [
        i for i, b in enumerate(blocks[: volatiles[-1]]) if i in volatiles or b["text"].startswith(EN["settled_header"])
    ]
    return blocks[ends[-1] + 1 :] if ends else blocks


def is_waking(request) -> bool:
    return "your local time" in texts_of(request["messages"][-1])


class Script:
    """The fake model's side: `steps[n]` answers waking n's calls in turn; then it sleeps 30 minutes."""

    def __init__(self, steps: dict, on_waking=None):
        self.steps, self.on_waking = steps, on_waking or {}
        self.waking, self.queue, self.summaries = 0, [], 0

    def __call__(self, request):
        if EN["summary_instruction"][:60] in texts_of(request["messages"][-1]):
            self.summaries += 1
            return text(f"SUMMARY {self.summaries}: I lived and slept.")
        if is_waking(request):
            self.waking += 1
            self.queue = list(self.steps.get(self.waking, []))
            if self.waking in self.on_waking:
                self.on_waking[self.waking]()  # something changes while the soul lives this waking
        return self.queue.pop(0) if self.queue else tool_use("sleep", {"minutes": 30})


async def test_an_unchanged_inner_life_is_not_resent_and_a_change_from_outside_is(tmp_path):
    life = seed_life(tmp_path)
    clock = StepClock(AFTERNOON)
    clock.hold(after=3)  # four wakings, each 30 minutes after the last; held in the fourth sleep

    def from_outside():  # during waking 2: the mood file changes and someone else writes in the diary
        (tmp_path / "soul" / "MOOD.md").write_text("wistful, watching the rain")
        life.add_entry(DIARY, datetime(2024, 5, 1, 14, 30), "A line from outside.")

    script = Script(
        {
            1: [
                tool_use("diary", {"entry": "The light moved over the desk."}),
                tool_use("update_mood", {"mood": "content in the sun"}),
            ]
        },
        {2: from_outside},
    )
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=script) as fake:
        soul = build_soul(cfg_for(tmp_path, body), clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 4, what="four wakings")
    assert script.waking == 4 and len(fake.bodies) == 6
    bodies = fake.bodies[:6]  # waking 1: 0 diary, 1 update_mood, 2 sleep; wakings 2, 3, 4: 3, 4, 5
    first, second, third, fourth = (inner_of(bodies[i]) for i in (0, 3, 4, 5))
    # Waking 1 (a new process): everything in full.
    assert SELF_TEXT.strip() in first and ASPIRATION in first and "Your mood:\ncalm" in first
    assert "Your latest diary lines:" in first and "- 2024-04-30 11:00: old line 11" in first
    # Waking 2: nothing changed but what the soul changed itself (its diary line and its mood are in its
    # history as its own calls): no inner block at all, the snapshot is the volatile block alone.
    assert second == "" and [b["text"] for b in this_waking(bodies[3])] == [
        "It is 14:30, your local time.\nYour own alarm woke you."
    ]
    assert "What you did then:\n- sleep: 30 \u2192 You will sleep 30 minutes." in texts_of(bodies[3]["messages"][-1])
    assert "content in the sun" in json.dumps(bodies[3]) and "Your mood:\ncontent" not in json.dumps(bodies[3])
    assert "The light moved" in (tmp_path / "soul" / "DIARY.md").read_text()
    # An older diary line surfaces at most once an hour: at 14:00 (first), not at 14:30, again at 15:00.
    assert "A memory surfaces on its own:" in first and "A memory surfaces on its own:" in third
    # The steady lines are said once while they stay the same and in view: the date and weekday, the body
    # sense, the sleep ceiling, the closing line; the alarm that ended the sleep the soul was told is named.
    now_parts = [bodies[i]["messages"][-1]["content"][-1]["text"] for i in (0, 3, 4, 5)]
    assert now_parts[0].startswith("It is 2024-05-01 14:00 (Wednesday), your local time.\n")
    assert "is awake and answering" in now_parts[0] and "This sleep can last at most 60 minutes." in now_parts[0]
    assert now_parts[0].endswith("This stretch is yours. Live it, and end it with sleep.")
    assert now_parts[1:] == [
        f"It is {time}, your local time.\nYour own alarm woke you." for time in ("14:30", "15:00", "15:30")
    ]
    # Waking 3: the mood and the diary changed from outside: those parts are sent, nothing else.
    assert third.startswith(
        "Your mood:\nwistful, watching the rain\n\nNew in your diary since then:\n"
        "- 2024-05-01 14:30: A line from outside.\n\nA memory surfaces on its own:\n"
    )
    # Waking 4: nothing new again.
    assert fourth == ""
    # The whole inner life stays in view in every request, exactly once (never re-sent).
    for request in bodies:
        assert json.dumps(request).count(SELF_TEXT.strip()) == 1
    # The snapshot shrank: wakings 2-4 add a small fraction of waking 1's inner block.
    assert max(len(second), len(third), len(fourth)) < len(first) / 3
    # The cache still sees one growing, byte-identical prefix from waking to waking.
    for earlier, later in ((2, 3), (3, 4)):
        assert same_prefix(bodies[earlier], bodies[later])
        assert fake.usages[later]["cache_read_input_tokens"] == tokens_to_last_breakpoint(bodies[earlier])


async def test_a_restart_sends_the_inner_life_in_full_again(tmp_path):
    seed_life(tmp_path)
    clock = StepClock(AFTERNOON)
    clock.hold(after=1)  # two wakings, then held in the second sleep
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=Script({})) as fake:
        cfg = cfg_for(tmp_path, body)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="two wakings")
        soul.session.close()
        assert len(fake.bodies) == 2 and inner_of(fake.bodies[1]) == ""
        clock.hold(after=1)  # the restarted soul: two wakings, then held in its second sleep (the fourth)
        again = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(again):
            await until(lambda: clock.held == 4, what="two wakings after the restart")
        again.session.close()
        assert len(fake.bodies) == 4
    restarted, next_one = inner_of(fake.bodies[2]), inner_of(fake.bodies[3])
    assert SELF_TEXT.strip() in restarted and ASPIRATION in restarted
    assert next_one == ""
    # The restarted process says the full date again (the first one's is in view, but it does not know).
    assert "It is 2024-05-01 14:30 (Wednesday), your local time." in texts_of(fake.bodies[2]["messages"][-1])


async def test_after_a_fold_the_inner_life_is_shown_again(tmp_path):
    seed_life(tmp_path)
    clock = StepClock(AFTERNOON)
    clock.hold(after=2)  # three wakings, then held in the third sleep
    script = Script({n: [tool_use("diary", {"entry": f"Page {n}."})] for n in range(1, 5)})
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=script) as fake:
        # A ceiling this low folds every waking down to the newest one.
        cfg = cfg_for(tmp_path, body, model={"maxContextTokens": 1000, "keepRecentTokens": 100})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 3, what="three wakings, two folds")
        soul.session.close()
    # waking 1: diary, sleep; wakings 2 and 3: summary, diary, sleep
    assert script.waking == 3 and script.summaries == 2 and len(fake.bodies) == 8
    assert soul.metabolism.folds == 2
    turns = [b for b in fake.bodies if EN["summary_instruction"][:60] not in texts_of(b["messages"][-1])]
    # Waking 2's snapshot had no inner block (all in view); the fold then took waking 1 away,
    # so the whole inner life came back in full, right after the snapshot, before the model was asked.
    second = next(b for b in turns if is_waking(b) and b is not turns[0])
    assert inner_of(second).startswith(EN["summary_header"])  # the fold's summary, then no inner block
    restored = second["messages"][-1]["content"][-1]["text"]
    assert restored.startswith("Who you think you are (SELF.md):") and ASPIRATION in restored
    assert "Your latest diary lines:" in restored and "Page 1." in restored
    # In every request of a turn, folded or not, its whole inner life is in view.
    for request in turns:
        assert SELF_TEXT.strip() in json.dumps(request) and ASPIRATION in json.dumps(request)
    every = life_records(tmp_path / "soul" / "session.jsonl")  # the archive's records, then the live ones
    lines = "\n".join(json.dumps(record, ensure_ascii=False) for record in every)
    assert lines.count("Who you think you are (SELF.md):") == 3  # waking 1, then once after each fold


# --- the rule itself, on real life files and a real session.jsonl --------------------------------


def shown_after(sight, life, session, language="en"):
    """Build a snapshot's inner block and store it with an answer, as a waking does; its text."""
    block = sight.block(life, texts(language), datetime(2024, 5, 1, 14, 0), random.Random(1), session)
    session.append(Message("user", [block]))
    session.append(Message("assistant", [TextBlock("I rest a while.")]))
    return block.text


def test_a_part_that_became_empty_is_said_once_and_a_diary_that_did_not_just_grow_is_listed_again(tmp_path):
    life = seed_life(tmp_path)
    life.add_entry(MIND, datetime(2024, 5, 1, 9, 0), "ask Ana about the bird")
    session, sight = Session(tmp_path / "session.jsonl"), InnerSight(TOOLS)
    assert "Kept in mind:\n- ask Ana about the bird" in shown_after(sight, life, session)
    life.settle("ask Ana")
    assert "Kept in mind:\n(nothing now)" in shown_after(sight, life, session)
    assert "Kept in mind" not in shown_after(sight, life, session)  # said once; nothing to name after that
    # The diary rewritten by hand (not just grown): the latest lines are listed in full again.
    (tmp_path / "soul" / "DIARY.md").write_text("- 2024-05-01 10:00: a new beginning\n")
    again = shown_after(sight, life, session)
    assert "Your latest diary lines:\n- 2024-05-01 10:00: a new beginning" in again
    # Ten new lines at once: the listing is simply the latest ten.
    for minute in range(10):
        life.add_entry(DIARY, datetime(2024, 5, 1, 11, minute), f"burst {minute}")
    burst = shown_after(sight, life, session)
    assert "Your latest diary lines:" in burst and "New in your diary" not in burst and "burst 9" in burst


def test_the_chinese_soul_is_told_only_what_changed_in_chinese(tmp_path):
    life = seed_life(tmp_path)
    session, sight, zh = Session(tmp_path / "session.jsonl"), InnerSight(TOOLS), texts("zh")
    assert zh.TEXT["self"] in shown_after(sight, life, session, "zh")
    assert shown_after(sight, life, session, "zh") == ""
    (tmp_path / "soul" / "MOOD.md").write_text("有点想下雨")
    assert shown_after(sight, life, session, "zh") == "你的心情：\n有点想下雨"
    # The volatile block: the full date once, then the clock time; the alarm it was told of, named.
    why = WakeReasons(slept_minutes=30, early_minutes=0, sleep_told=True)
    said = []
    for hour in (14, 15):
        block = now_block(
            zh,
            Persona(human="大哥"),
            "StackChan",
            datetime(2024, 5, 1, hour, 0),
            False,
            why,
            BodySense("awake"),
            60,
            [],
            sight,
            session,
        )
        session.append(Message("user", [block]))
        session.append(Message("assistant", [TextBlock("我再睡一会儿。")]))
        said.append(block.text)
    assert said[0].startswith("现在是当地时间 2024-05-01 14:00（星期三）。\n你自己的闹钟叫醒了你。")
    assert said[1] == "现在是当地时间 15:00。\n你自己的闹钟叫醒了你。"
    # A sleep the soul was not told of (it fell back to the default): how long it slept is said.
    block = now_block(
        zh,
        Persona(human="大哥"),
        "StackChan",
        datetime(2024, 5, 1, 16, 0),
        False,
        WakeReasons(slept_minutes=45, early_minutes=0),
        BodySense("awake"),
        60,
        [],
        sight,
        session,
    )
    assert "睡了 45 分钟后，你自己的闹钟叫醒了你。" in block.text
