"""What the brainstem said survives a restart of the soul (host/llm/brainstem.py, soulDir/BRAINSTEM.json).

The rig of tests/soul/test_brainstem_flock.py: a real soul on its brainstem serving /nudge on loopback,
a real Body Protocol body on loopback (host/fakes/soul_body.py), the flock's own voice (SoulVoice)
posting its nudges. The soul is stopped and a new one built on the same soulDir, as a restart does.

Why the same ask reaches a restarted soul at all: the flock delivers at least once. Its voice marks
an event told only once the soul's 202 came back (host/flock/voice/told.py), so a flock killed in
between, or a send that timed out after the soul had stored it, tells the same ask again. Within one
life the brainstem never says it twice; across a restart it must not either. And an ask whose speak
failed before the restart left the inbox long ago: only the brainstem still knows it is owed.

Reminders need nothing here: REMINDERS.json records a delivery before the soul acts on it
(host/soul/reminders/delivery.py; tests/soul/test_reminders_process.py kills the soul -9).
"""

import json
import logging
import os
import re
import stat
from datetime import datetime, timedelta, UTC

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.brainstem import MEMORY_FILE, MOST_KEPT, Brainstem, Situation, said
from soulstack.llm.types import Message, TextBlock, ToolCall, ToolResult
from soulstack.soul.memory.session import Session
from tests.helpers import until
from tests.soul.helpers import Running, a_soul, fell_asleep, sleep_forever
from tests.soul.test_brainstem_flock import EN, Flock, brainstem_soul

WATER = ("3-1", "water the plants")


async def a_life(tmp_path, body, then=None):
    """One life of a soul on `tmp_path`: it starts, the flock asks WATER, `then(running)` runs, the
    soul stops. The ask as the brainstem says it."""
    soul = brainstem_soul(tmp_path, body)
    async with Running(soul) as running, Flock(running.url) as flock:
        await fell_asleep(soul, 1)
        ask = flock.needs_ok(*WATER)
        await fell_asleep(soul, 2)  # the flock's nudge woke it (a waking that says an ask sleeps a step later)
        if then is not None:
            await then(running)
    return EN["brainstem"]["flock_ask"].format(ask=ask)


async def test_an_ask_said_before_a_restart_is_not_said_again_when_the_flock_tells_it_again(tmp_path):
    async with RecordingBody() as body:
        sentence = await a_life(tmp_path, body)
        assert body.spoken == [sentence]
        await a_life(tmp_path, body)  # restarted; the flock tells the same ask again
        assert body.spoken == [sentence]  # heard once


async def test_an_ask_whose_speak_failed_before_a_restart_is_said_after_it(tmp_path):
    async with RecordingBody(fail={"speak": 503}) as body:
        sentence = await a_life(tmp_path, body)
        assert body.spoken == [] and [name for name, _ in body.received].count("speak (failed)") == 1
        body.fail.clear()  # the speaker works again; the soul restarts; the flock has nothing new to say
        soul = brainstem_soul(tmp_path, body)
        async with Running(soul):
            await until(lambda: body.spoken == [sentence], what="the owed ask said at the first waking")
            await fell_asleep(soul, 1)
        soul = brainstem_soul(tmp_path, body)  # and once said, it is said no more
        async with Running(soul):
            await fell_asleep(soul, 1)
        assert body.spoken == [sentence]


async def test_words_answered_before_a_restart_are_not_answered_again(tmp_path):
    async def hello(running):
        status, _ = await running.post("/nudge", {"words": "hello?"})
        assert status == 202
        await fell_asleep(running.soul, 3)

    async with RecordingBody() as body:
        sentence = await a_life(tmp_path, body, then=hello)
        await a_life(tmp_path, body, then=hello)  # a body re-delivering the same words after the restart
    assert body.spoken == [sentence, said(EN["brainstem"]["answer"], "hello?")]
    assert stat.S_IMODE(os.stat(tmp_path / "soul" / MEMORY_FILE).st_mode) == 0o600  # it holds a person's words


async def test_a_damaged_memory_is_survived_with_one_log_line(tmp_path, caplog):
    memory = tmp_path / "soul" / MEMORY_FILE
    memory.parent.mkdir(parents=True)
    async with RecordingBody() as body:
        for damage in (b"\x00\x00 torn", b'{"said": ["not", "times"], "owed": {}, "answered": {}}'):
            memory.write_bytes(damage)
            body.received.clear()
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="soulstack.llm.brainstem"):
                sentence = await a_life(tmp_path, body)
            assert body.spoken == [sentence]  # it lives and says the ask
            told = [record.getMessage() for record in caplog.records if MEMORY_FILE in record.getMessage()]
            assert len(told) == 1 and "\n" not in told[0], told
            assert len(json.loads(memory.read_text())["said"]) == 1  # and keeps it from now on


class StepClock:
    """Wall time the test moves by hand."""

    def __init__(self):
        self.at = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)

    def now(self):
        return self.at

    def time(self):
        return self.at.timestamp()


async def say(brainstem, reasons=(), heard=()):
    """One waking of `brainstem` whose speaks all work: the texts it spoke."""
    tools = [type("Tool", (), {"name": name}) for name in ("speak", "sleep")]
    situation = Situation(list(reasons), list(heard), step=0)
    brainstem.situation = lambda: situation
    reply = await brainstem.complete("", [], tools)
    calls = reply.message.tool_calls()
    situation.step = 1
    results = Message("user", [ToolResult(call.id, [TextBlock("ok")]) for call in calls])
    await brainstem.complete("", [Message("assistant", reply.message.content), results], tools)
    return [call.input["text"] for call in calls if call.name == "speak"]


async def test_what_it_keeps_is_bounded_asks_no_longer_sent_and_words_a_day_old_are_forgotten(tmp_path):
    clock, memory = StepClock(), tmp_path / MEMORY_FILE
    words = EN["brainstem"]

    def restarted():
        return Brainstem(words=words, memory=memory, clock=clock)

    assert await say(restarted(), ["your flock asks: a"], ["hi"]) == [
        words["flock_ask"].format(ask="a"),
        said(words["answer"], "hi"),
    ]
    clock.at += timedelta(hours=23)
    assert await say(restarted(), ["your flock asks: a"], ["hi"]) == []  # both remembered
    clock.at += timedelta(hours=2)
    assert await say(restarted(), [], ["hi"]) == [said(words["answer"], "hi")]  # words: a day
    clock.at += timedelta(days=8)
    assert await say(restarted(), ["your flock asks: a"]) == [words["flock_ask"].format(ask="a")]  # gone a week
    brainstem = restarted()
    for n in range(MOST_KEPT + 20):  # a storm of asks and words: the file keeps the newest
        await say(brainstem, [f"your flock asks: ask {n}"], [f"words {n}"])
    kept = json.loads(memory.read_text())
    assert len(kept["said"]) == len(kept["answered"]) == MOST_KEPT and "ask 0" not in kept["said"]
    assert f"ask {MOST_KEPT + 19}" in kept["said"] and f"words {MOST_KEPT + 19}" in kept["answered"]


async def test_an_ask_out_when_the_process_died_is_owed_after_the_restart(tmp_path):
    """Killed between the speak and its answer: whether the person heard it is unknown, and a repeat
    is better than an approval that times out unheard."""
    memory, words = tmp_path / MEMORY_FILE, EN["brainstem"]
    dying = Brainstem(lambda: Situation(["your flock asks: b"]), words=words, memory=memory)
    reply = await dying.complete("", [], [type("Tool", (), {"name": "speak"})])
    assert [call.input["text"] for call in reply.message.tool_calls()] == [words["flock_ask"].format(ask="b")]
    # no answer read: the process died here
    assert await say(Brainstem(words=words, memory=memory)) == [words["flock_ask"].format(ask="b")]
    assert await say(Brainstem(words=words, memory=memory)) == []  # said now, and kept


async def test_a_mind_given_after_lives_on_the_brainstem_sends_each_call_id_once(tmp_path):
    """A key set after the brainstem lived: the Messages API refuses a request that repeats a
    tool_use id. Today's brainstem gives each life its own ids; the ids an older one wrote began
    again at every restart, and the view renames the repeats (with their results)."""
    older = Session(tmp_path / "soul" / "session.jsonl").load()
    for life in ("one", "two"):  # two lives as an older brainstem wrote them
        older.append(Message("user", [TextBlock(f"woke, life {life}")]), waking=True)
        older.append(Message("assistant", [ToolCall("brainstem_00001", "body_status", {})]))
        older.append(Message("user", [ToolResult("brainstem_00001", [TextBlock("online")])]))
        older.append(Message("assistant", [ToolCall("brainstem_00002", "sleep", {"minutes": 20})]))
        older.append(Message("user", [ToolResult("brainstem_00002", [TextBlock("asleep")])]))
    older.close()
    async with RecordingBody() as body:
        for _ in range(2):  # two lives of today's brainstem
            soul = brainstem_soul(tmp_path, body)
            async with Running(soul):
                await fell_asleep(soul, 1)
        async with FakeAnthropic(default=sleep_forever) as fake:
            soul = a_soul(tmp_path, body, fake)
            async with Running(soul):
                await fell_asleep(soul, 1)
    assert fake.usages and None not in fake.usages  # every request accepted: none answered 400
    blocks = [b for m in fake.bodies[0]["messages"] if isinstance(m["content"], list) for b in m["content"]]
    calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    # Four body_status calls (the calls that put each waking to sleep are settled into lines), each once.
    assert len(calls) == len(set(calls)) == 4 and results == calls  # each result answers its own call
    assert calls[:2] == ["brainstem_00001", "brainstem_00001_2"]  # the older lives' repeat, renamed
    assert all(re.fullmatch(r"brainstem_[0-9a-f]{8}_00001", call) for call in calls[2:])  # today's: no repeat
