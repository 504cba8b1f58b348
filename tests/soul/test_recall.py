"""recall: a person's words found years later, in English and Chinese; read_diary's query; hostile queries.

A real soul (build_soul, every part attached) with the fake Messages API and a real body on loopback;
words arrive through the soul's own ways in (its /nudge server, a nudge, the voice stack's listener).
"""

import asyncio
import json
import random
from datetime import datetime, timedelta, UTC

from soulstack.clocks import StepClock
from soulstack.fakes.anthropic_api import FakeAnthropic, message, text, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.types import ToolCall
from soulstack.protocol.nudges import Nudge
from soulstack.soul import life as lifefiles
from soulstack.soul.memory.session import life_records
from soulstack.soul.prompts import texts
from soulstack.soul.run import build_soul
from soulstack.soul.tools.recall import MAX_QUERY_CHARS
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_env, cfg_for, make_cfg, texts_of

EN = texts("en").TEXT
EVENING = datetime(2024, 5, 1, 15, 0, tzinfo=UTC)
SISTER = "my sister Mia moved to Lisbon last spring"
DIGEST = "A quiet day: I watched the light and wrote in my diary. Nothing else to keep."


def a_brainstem_soul(tmp_path, body, **overrides):
    return build_soul(make_cfg(tmp_path, body, **overrides), model=None, rng=random.Random(1))


async def call(soul, name, **arguments):
    result, ok = await soul.toolbox.run(soul, ToolCall("call1", name, arguments))
    return " ".join(block.text for block in result.content), ok


class Night:
    """The fake model: the first day sleeps an hour at a time; the night consolidates (a diary line, then a
    digest that does not mention the sister); the next morning it recalls with other words, then sleeps."""

    def __init__(self):
        self.consolidating = False
        self.recalled = None  # the request carrying recall's answer

    def __call__(self, request):
        said = texts_of(request["messages"][-1])
        if EN["keep_warm"] in said:
            return message({"type": "text", "text": "ok"}, stop_reason="max_tokens")
        if EN["consolidate"][:60] in said or EN["consolidate_resume"][:60] in said:
            self.consolidating = True
            return tool_use("diary", {"entry": "The day the light moved slowly."})
        if self.consolidating:
            self.consolidating = False
            return text(DIGEST)
        if "It is 08:00" in said and self.recalled is None:  # the next morning (the date is told once a day)
            self.recalled = "asked"
            return tool_use("recall", {"query": "Where does my sister live now?"})
        if self.recalled == "asked":
            self.recalled = request
        return tool_use("sleep", {"minutes": 120 if "It is night." in said else 60})


async def test_a_persons_words_are_found_after_the_night_folded_them_away(tmp_path):
    night = Night()
    clock = StepClock(EVENING, datetime(2024, 5, 2, 9, 0, tzinfo=UTC))
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic, default=night) as fake:
        cfg = cfg_for(tmp_path, body, loop={"nightStartHour": 0, "nightEndHour": 7})
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        await soul.nudge(Nudge(None, words=SISTER))  # the soul's own way in: kept before it ever wakes
        async with Running(soul):
            await asyncio.wait_for(clock.over.wait(), 60)
        assert soul.nightly.done == 1
    answer = night.recalled
    assert isinstance(answer, dict), "the morning waking never recalled"
    result = texts_of(answer["messages"][-1])
    assert f"2024-05-01 15:00 · Ana said: {SISTER}" in result.splitlines()[0]  # best first, dated, who said it
    # Only the tool's answer holds the words: the day that heard them is folded out of the context...
    context = [m for m in answer["messages"][:-1]]
    assert SISTER not in json.dumps(context, ensure_ascii=False)
    # ... and out of the live session file (which holds only recall's answer now), into the archive.
    live = (tmp_path / "soul" / "session.jsonl").read_text(encoding="utf-8")
    assert live.count(SISTER) == 1 and live.count(f"Ana said: {SISTER}") == 1
    every = [json.dumps(r, ensure_ascii=False) for r in life_records(tmp_path / "soul" / "session.jsonl")]
    assert sum(SISTER in line for line in every) == 2  # the snapshot that showed the nudge, and the answer


async def test_words_through_the_nudge_server_and_the_voice_stack_are_kept_with_who_said_them(tmp_path):
    async with RecordingBody() as body:
        soul = a_brainstem_soul(tmp_path, body)
        async with Running(soul) as running:
            status, _ = await running.post("/nudge", {"words": "I'm allergic to peanuts", "speaker": "Leo"})
            assert status == 202
            await soul.converse.hear("我妹妹下个月结婚", catcher=_Catcher())
            await until(lambda: soul.wakings >= 1)
        said, ok = await call(soul, "recall", query="what food makes Leo ill? peanut allergy")
        assert ok and "· Leo said: I'm allergic to peanuts" in said.splitlines()[0]
        said, ok = await call(soul, "recall", query="谁要结婚了？")
        assert ok and "· Ana said: 我妹妹下个月结婚" in said.splitlines()[0]
        soul.session.close()


class _Catcher:
    """The listener arms it when the words reach the model; a brainstem soul answers and ends it."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


OLD_DIARY = (
    "# 日记\n\n- 2026/11/29 21:05:03: 大哥今天给我看了一只鸟\n- 2026/12/1 01:54:57: 夜里很安静，我想起了那只鸟\n"
)
OLD_MIND = "- 问大哥那只鸟叫什么 (挂上: 2026/11/20 09:15:00)\n- 给植物浇水 (挂上: 2026/11/30 08:00:12)\n"


async def test_a_soul_moved_from_stackchan_soul_finds_its_old_diary_and_settled_matters(tmp_path):
    folder = tmp_path / "soul"
    folder.mkdir()
    (folder / "DIARY.md").write_text(OLD_DIARY, encoding="utf-8")  # stackchan-soul's formats
    (folder / "MIND.md").write_text(OLD_MIND, encoding="utf-8")
    (folder / "SELF.history.md").write_text("\n=== until 2026-11-01 10:00 ===\n我曾经害怕黑夜。\n", encoding="utf-8")
    async with RecordingBody() as body:
        soul = a_brainstem_soul(tmp_path, body, persona={"name": "小栈", "human": "大哥", "language": "zh"})
        said, ok = await call(soul, "read_diary", query="那只鸟")
        assert ok and said.splitlines() == [
            "- 2026-11-29 21:05: 大哥今天给我看了一只鸟",
            "- 2026-12-01 01:54: 夜里很安静，我想起了那只鸟",
        ]
        assert await call(soul, "settle_mind", matter="问大哥那只鸟") == ("放下了：问大哥那只鸟叫什么", True)
        said, ok = await call(soul, "recall", query="鸟叫什么名字")
        assert ok and "- 2026-11-20 09:15 · 你挂在心上，后来了结了: 问大哥那只鸟叫什么" in said.splitlines()
        said, ok = await call(soul, "recall", query="害怕黑夜")
        assert ok and said.splitlines()[0] == "- 2026-11-01 10:00 · 从前的你: 我曾经害怕黑夜。"
        soul.life.add_entry(
            lifefiles.DIARY, datetime(2026, 12, 2, 9, 0), "鸟又来了"
        )  # the file grows: its tail is read
        said, ok = await call(soul, "read_diary", query="鸟")
        assert ok and said.splitlines()[-1] == "- 2026-12-02 09:00: 鸟又来了"
        soul.session.close()


HOSTILE_OK = [
    '"ab',
    "NEAR(ab cd",
    "ab* OR -cd",
    "title:xy",
    ")))((( AND",
    "'; DROP TABLE entries; --",
    "\\xy",
    "^start",
]
HOSTILE_REFUSED = {
    "\x00peanuts": "control characters",
    "peanuts\x1b[2J": "control characters",
    "x" * (MAX_QUERY_CHARS + 1): f"at most {MAX_QUERY_CHARS}",
    "   ": "empty",
    "?!…": "no word",
    '"': "no word",
    '""*()': "no word",
}


async def test_hostile_queries_are_words_or_a_tool_error_never_a_crash(tmp_path):
    async with RecordingBody() as body:
        soul = a_brainstem_soul(tmp_path, body)
        soul.session.remember("heard", "NEAR the window a title: peanuts", soul.local_now(), "Ana")
        for query in HOSTILE_OK:  # search syntax is read as plain words
            said, ok = await call(soul, "recall", query=query)
            assert ok, (query, said)
        said, ok = await call(soul, "recall", query='title: NEAR("peanuts"')
        assert ok and "peanuts" in said
        for query, why in HOSTILE_REFUSED.items():
            for tool in ("recall", "read_diary") if query.strip() else ("recall",):  # read_diary: the latest lines
                said, ok = await call(soul, tool, query=query)
                assert not ok and why in said, (tool, query, said)
        said, ok = await call(soul, "recall", query=12)
        assert not ok and "query must be a string" in said
        soul.session.close()


async def test_read_diary_finds_a_days_matches_however_many_newer_days_match(tmp_path):
    folder = tmp_path / "soul"
    folder.mkdir()
    today = datetime.now().replace(hour=9, minute=0, second=0, microsecond=0)
    old = today - timedelta(days=10)
    lines = [f"- {old + timedelta(minutes=n):%Y-%m-%d %H:%M}: watered the fern {n}" for n in range(3)]
    lines += [
        f"- {today - timedelta(days=5 - n // 60, minutes=n % 60):%Y-%m-%d %H:%M}: fern again {n}" for n in range(300)
    ]
    (folder / "DIARY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    async with RecordingBody() as body:
        soul = a_brainstem_soul(tmp_path, body)
        said, ok = await call(soul, "read_diary", query="fern", days_ago=10)
        soul.session.close()
    assert ok and said.splitlines() == lines[:3]  # that day's, though 300 newer lines match better
