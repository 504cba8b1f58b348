"""Reminders beside the rest of a life (host/soul/reminders/delivery.py): a retry runs beside the sleep,
never in its place, and waits for the body as long as any speak; a reminder whose time comes while the
soul thinks joins the running turn; the sleep's answer says when a reminder will cut it short.

A real soul (build_soul) on StepClock, its model the real anthropic SDK talking to the fake Messages
API, its body a real Body Protocol server on loopback, its nudges posted to its own HTTP server.
"""

import asyncio
import time
from datetime import datetime, timedelta, UTC
from zoneinfo import ZoneInfo

from aiohttp import web

from soulstack.clocks import StepClock
from soulstack.fakes.anthropic_api import FakeAnthropic, message, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.brainstem import reminder_sentence
from soulstack.soul.prompts import texts
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_model, texts_of
from soulstack.soul.run import close_soul
from tests.soul.test_reminders import DUE_LINE, call, live_until_over, soul_for, stored

EN, ZH = texts("en").TEXT, texts("zh").TEXT
BERLIN = ZoneInfo("Europe/Berlin")
START = datetime(2026, 12, 1, 9, 0, tzinfo=BERLIN).astimezone(UTC)  # a Tuesday
PLAYS_S = 16.0  # longer than the 15 s a try once waited: a body that plays a long sentence before it answers


class PlayingBody(RecordingBody):
    """A body that answers /speak for `slow` only once it has played it (`plays_s` of real time)."""

    def __init__(self, slow: str, plays_s: float = PLAYS_S):
        super().__init__()
        self.slow, self.plays_s = slow, plays_s
        self.answered: list = []  # the texts /speak answered 2xx for, in order

    def make_app(self) -> web.Application:
        app = super().make_app()

        @web.middleware
        async def playing(request, handler):
            answer = await handler(request)
            if request.path == "/speak":
                text = (await request.json())["text"]
                if text == self.slow:
                    await asyncio.sleep(self.plays_s)
                self.answered.append(text)
            return answer

        app.middlewares.insert(0, playing)
        return app


async def test_a_person_speaking_during_a_slow_retry_is_answered_at_once_and_the_reminder_said_once(tmp_path):
    sentence = reminder_sentence(EN["brainstem"], "feed the cat", "Ana")
    clock = StepClock(START, end=START + timedelta(minutes=40))
    seen = {}

    def model(request):
        last = texts_of(request["messages"][-1])
        if "are you there?" in last:  # the nudge's waking: when it began, and how the retry stood then
            seen.update(at=time.monotonic(), answered=list(body.answered), trying=soul.reminders.trying is not None)
            return message(call("speak", text="Yes, Ana, I am here."), call("sleep", minutes=60))
        return tool_use("sleep", {"minutes": 60})  # at the reminder's waking too: it forgets to say it

    async with PlayingBody(slow=sentence) as body, FakeAnthropic(default=model) as fake:
        fake.reply(message(call("remind", words="feed the cat", after="10 min"), call("sleep", minutes=60)))
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake))
        async with Running(soul) as running:
            # Its waking did not say it: the body is asked straight away, and takes PLAYS_S to answer.
            await until(lambda: sentence in body.spoken, what="the retry reaching the body")
            asked = time.monotonic()
            status, _answer = await running.post("/nudge", {"words": "are you there?"})
            assert status == 202
            await until(lambda: "Yes, Ana, I am here." in body.answered, what="the answer to the person")
            assert seen["at"] - asked < 5  # woken at once, not when the body finished the reminder
            assert seen["trying"] and sentence not in seen["answered"]  # the retry was still out to the body
            await until(lambda: soul.reminders.store.delivered == 1, what="the reminder counted", timeout=PLAYS_S + 10)
            await asyncio.wait_for(clock.over.wait(), 30)
    assert body.spoken.count(sentence) == 1  # one try, answered 2xx after PLAYS_S: heard once, never again
    assert body.answered == ["Yes, Ana, I am here.", sentence]
    kept = stored(tmp_path)
    assert kept["delivered"] == 1 and kept["reminders"] == [] and kept["recent"][0]["late_s"] <= 30


async def test_words_during_a_retry_wake_the_soul_and_a_reminder_it_cancels_then_is_not_counted(tmp_path, caplog):
    sentence = reminder_sentence(EN["brainstem"], "feed the cat", "Ana")
    clock = StepClock(START, end=START + timedelta(minutes=40))

    def model(request):
        if "never mind the cat" in texts_of(request["messages"][-1]):
            return message(call("cancel_reminder", id=1), call("sleep", minutes=60))
        return tool_use("sleep", {"minutes": 60})  # at the reminder's waking too: it forgets to say it

    async with PlayingBody(slow=sentence, plays_s=2.0) as body, FakeAnthropic(default=model) as fake:
        fake.reply(message(call("remind", words="feed the cat", after="10 min"), call("sleep", minutes=60)))
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake))
        living = asyncio.create_task(soul.live())
        try:
            await until(lambda: sentence in body.spoken, what="the retry reaching the body")
            soul.deliver("never mind the cat, I fed her")  # converse words, while the body still speaks
            await until(lambda: not soul.reminders.store.reminders, what="the reminder cancelled")
            assert sentence not in body.answered  # cancelled while its try was still out
            await asyncio.wait_for(clock.over.wait(), 10)
        finally:
            living.cancel()
            await asyncio.gather(living, return_exceptions=True)
            await close_soul(soul)
    assert body.answered == [sentence] and body.spoken == [sentence]  # said once, never tried again
    kept = stored(tmp_path)
    assert kept["delivered"] == 0 and kept["missed"] == 0 and kept["reminders"] == []
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


async def test_a_reminder_due_during_a_long_turn_joins_it_and_is_said_on_time(tmp_path):
    clock = StepClock(START, end=START + timedelta(minutes=30))
    words = "Ana, the tea is ready."
    said_in = []

    def busy(request):
        """A long turn: 7 s pauses, step after step, until the turn shows the reminder due."""
        if DUE_LINE in texts_of(request["messages"][-1]):
            return message(call("speak", text=words), call("sleep", minutes=60))
        return tool_use("wait", {"seconds": 7})

    async with RecordingBody() as body, FakeAnthropic(default=busy) as fake:
        fake.reply(message(call("remind", words="the tea", after="30 s"), call("wait", seconds=7)))
        soul = soul_for(tmp_path, body, clock, anthropic_model(fake), loop={"maxStepsPerWaking": 30})
        soul.hooks.on_tool_result.append(
            lambda soul, event: said_in.append(soul.waking.number) if event.name == "speak" else None
        )
        await live_until_over(soul, clock)
    assert body.spoken == [words] and said_in == [1]  # in the turn that was running when its time came
    kept = stored(tmp_path)
    assert kept["delivered"] == 1 and kept["recent"][0]["late_s"] <= 7  # one pause late at most
    assert soul.reminders.wakings == 0  # it called no waking of its own
    step = next(b for b in fake.bodies if DUE_LINE in texts_of(b["messages"][-1]))
    assert "the tea" in texts_of(step["messages"][-1]) and "for Ana" in texts_of(step["messages"][-1])


async def test_a_reminder_due_during_a_turn_on_the_brainstem_is_said_by_it_in_that_turn(tmp_path):
    clock = StepClock(START, end=START + timedelta(minutes=30))
    async with RecordingBody() as body:
        soul = soul_for(tmp_path, body, clock)  # no model: the brainstem
        await soul.toolbox.run(soul, call_of("remind", words="the tea", after="10 min"))
        soul.hooks.on_waking.append(lambda soul, waking: clock.advance(600) if waking.number == 1 else None)
        await live_until_over(soul, clock)
    sentence = reminder_sentence(EN["brainstem"], "the tea", "Ana")
    assert body.spoken == [sentence] and stored(tmp_path)["delivered"] == 1
    assert soul.reminders.wakings == 0  # the first waking's own turn said it


async def test_the_sleep_answer_says_a_reminder_will_cut_it_short(tmp_path):
    for language, text in (("en", EN), ("zh", ZH)):
        folder = tmp_path / language
        clock = StepClock(START, end=START + timedelta(minutes=30))
        async with RecordingBody() as body, FakeAnthropic() as fake:
            fake.reply(message(call("remind", words="call the plumber", after="25 min"), call("sleep", minutes=5)))
            fake.reply(tool_use("sleep", {"minutes": 60}))
            fake.default = tool_use("sleep", {"minutes": 60})
            soul = soul_for(folder, body, clock, anthropic_model(fake), persona={"language": language})
            await live_until_over(soul, clock)
        short, long = sleep_answers(fake.bodies[2])  # waking 3 sees what both sleeps answered
        cut = text["reminders"]["cuts_sleep"].split("{")[0]  # "The reminder for " / "不过给"
        assert text["sleep_told"].format(minutes=5) in short and cut not in short  # 5 min ends before it
        assert cut in long and "call the plumber" in long  # 60 min would pass it: told so, with its time
        local = (START + timedelta(minutes=25)).astimezone(BERLIN).strftime("%H:%M")
        assert local in long


def sleep_answers(request) -> list:
    """What each sleep the model called was answered, in order: the history shows a past waking's
    tools as "- sleep: <minutes> → <answer>" (host/soul/memory/view.py)."""
    lines = "\n".join(texts_of(m) for m in request["messages"]).splitlines()
    return [line for line in lines if line.startswith("- sleep:")]


def call_of(name, **arguments):
    from soulstack.llm.types import ToolCall

    return ToolCall("t1", name, arguments)
