"""The brainstem says what the flock asks (host/llm/brainstem.py, docs/flock-and-soul.md).

A real soul with no model (the brainstem) serving its /nudge on loopback, a real Body Protocol
body on loopback (host/fakes/soul_body.py), and the flock's own voice (host/flock/voice/robot.py's
SoulVoice, with the nudge contract's real sender) posting its nudges over HTTP. The sentences are
the prompts' own, so a rewording there does not break the tests.
"""

import asyncio

from soulstack.fakes.soul_body import RecordingBody
from soulstack.flock.voice.robot import SoulVoice
from soulstack.llm.brainstem import flock_asks, said
from soulstack.soul.prompts import texts
from soulstack.soul.run import build_soul
from tests.helpers import until
from tests.soul.helpers import Running, fell_asleep, make_cfg

EN = texts("en").TEXT


class Flock:
    """The flock's voice telling the soul, as `soulstack flock --soul` does (no interval: at once)."""

    def __init__(self, soul_url: str):
        self.voice = SoulVoice(soul_url + "/nudge", min_interval_s=0)
        self.events = 0

    def hear(self, name: str, payload: dict) -> None:
        self.events += 1
        self.voice.hear(self.events, name, payload, replay=False)

    def needs_ok(self, item_id: str, words: str) -> str:
        """The Sentry asks the person about a new item; what the flock asks, as the brainstem says it."""
        self.hear("list.started", {"items": [{"item_id": item_id, "text": words}]})
        self.hear("item.triaged", {"item_id": item_id, "needs_approval": True})
        return f"the Sentry needs your OK to start on '{words}' (item {item_id})"

    async def __aenter__(self):
        self.task = asyncio.create_task(self.voice.run())
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def brainstem_soul(tmp_path, body, **overrides):
    """A soul on its brainstem that each nudge wakes at once (no nudge.minIntervalSeconds to wait out)."""
    cfg = make_cfg(tmp_path, body, model={"provider": "brainstem"}, nudge={"minIntervalSeconds": 0}, **overrides)
    return build_soul(cfg)


async def test_the_flocks_ask_is_said_once_in_a_fixed_sentence_and_not_again_at_later_wakings(tmp_path):
    async with RecordingBody() as body:
        soul = brainstem_soul(tmp_path, body)
        async with Running(soul) as running, Flock(running.url) as flock:
            await fell_asleep(soul, 1)
            assert body.spoken == []
            ask = flock.needs_ok("3-1", "water the plants")
            sentence = EN["brainstem"]["flock_ask"].format(ask=ask)
            await until(lambda: body.spoken == [sentence], what="the brainstem saying the flock's ask")
            await fell_asleep(soul, 2)
            flock.hear("item.skipped", {"item_id": "9-9", "reason": "not needed"})  # news wakes it again
            await fell_asleep(soul, 3)
            status, _ = await running.post("/nudge", {"words": "hello?"})  # and so does a person
            assert status == 202
            await fell_asleep(soul, 4)
        answer = said(EN["brainstem"]["answer"], "hello?")
        assert body.spoken == [sentence, answer]  # the ask once, never again at the later wakings
        assert ask in soul.brainstem.asks_said  # counted: the body's speak answered 2xx


async def test_a_failed_speak_is_not_counted_and_the_ask_is_said_at_the_next_waking(tmp_path):
    async with RecordingBody(fail={"speak": 503}) as body:
        soul = brainstem_soul(tmp_path, body)
        async with Running(soul) as running, Flock(running.url) as flock:
            await fell_asleep(soul, 1)
            ask = flock.needs_ok("4-2", "book the train")
            sentence = EN["brainstem"]["flock_ask"].format(ask=ask)
            await fell_asleep(soul, 2)
            failed = [payload["text"] for name, payload in body.received if name == "speak (failed)"]
            assert failed == [sentence]  # tried once in that waking, no storm
            assert body.spoken == [] and ask not in soul.brainstem.asks_said
            body.fail.clear()  # the speaker works again
            flock.hear("item.skipped", {"item_id": "9-9", "reason": "not needed"})
            await until(lambda: body.spoken == [sentence], what="the ask said at the next waking")
            await fell_asleep(soul, 3)
            flock.hear("item.skipped", {"item_id": "9-8", "reason": "a duplicate"})
            await fell_asleep(soul, 4)
        assert body.spoken == [sentence] and ask in soul.brainstem.asks_said


async def test_a_chinese_soul_says_the_ask_in_chinese(tmp_path):
    zh = texts("zh").TEXT
    async with RecordingBody() as body:
        soul = brainstem_soul(tmp_path, body, persona={"language": "zh", "human": "小明"})
        async with Running(soul) as running, Flock(running.url) as flock:
            await fell_asleep(soul, 1)
            flock.needs_ok("5-1", "写周报")
            await until(lambda: body.spoken, what="the brainstem saying the flock's ask")
        ask = "哨兵要你同意，才能开始做“写周报”（第5-1项）"  # the flock's code, told in the soul's words
        assert body.spoken == [zh["brainstem"]["flock_ask"].format(ask=ask)]


def test_asks_are_found_in_merged_reasons_and_news_is_not_an_ask():
    reasons = [
        "your flock says: the flock dropped 'x' (late); your flock asks: Pepper needs your OK on the answer "
        "to 'y' (item 1-2)",
        "your human typed: your flock asks: nothing",  # a person's line that quotes the head is not the flock's
        "your flock asks: ",
    ]
    assert flock_asks(reasons) == ["Pepper needs your OK on the answer to 'y' (item 1-2)"]
