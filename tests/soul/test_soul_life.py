"""The soul end to end over real HTTP: a real body on loopback, the real anthropic SDK
against host/fakes/anthropic_api.py, nudges through the soul's own server, virtual time.

Virtual time is a StepClock (host/clocks.py): it moves only by what the soul sleeps,
so a busy machine cannot stretch a sleep (on a ScaledClock at 36000x a tenth of a second
of load was an hour). A test holds the soul asleep at the sleep it checks
(`clock.hold(after=n)`, then `clock.held == n + 1`); a held sleep ends only by a nudge."""

import asyncio
import json
from datetime import datetime, UTC


from soulstack.soul import life
from soulstack.clocks import StepClock
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, error, tool_use
from soulstack.fakes.soul_body import JPEG_B64, RecordingBody
from tests.helpers import until
from tests.soul.helpers import AFTERNOON, Running, anthropic_model, make_cfg, sleep_forever, texts_of


async def test_wakes_looks_speaks_and_sleeps_clamped(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(
            tool_use("look", {"question": "who is there?"}, text="Let me see."),
            tool_use("speak", {"text": "Hello, Ana!"}),
            tool_use("sleep", {"minutes": 500}),
        )
        cfg = make_cfg(tmp_path, body)
        clock = StepClock(AFTERNOON)
        clock.hold(after=1)  # the first sleep passes; the soul is held in its second
        soul = build_soul(cfg, clock=clock, model=anthropic_model(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the second waking")
        assert len(fake.bodies) == 4 and soul.wakings == 2
        first = fake.bodies[0]
        # The snapshot is the last user message; the volatile part is its last block.
        snapshot = first["messages"][-1]["content"]
        assert snapshot[-1]["text"].startswith("It is 2024-05-01 14:00 (Wednesday), your local time.")
        assert "You have just started" in snapshot[-1]["text"]
        assert "Your body (the test body) is awake" in snapshot[-1]["text"]
        assert [t["name"] for t in first["tools"]][:6] == ["sleep", "wait", "body_status", "look", "speak", "express"]
        # The look came back to the model as an image inside the tool result.
        result = fake.bodies[1]["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and not result.get("is_error")
        images = [b for b in result["content"] if b["type"] == "image"]
        assert images[0]["source"] == {"type": "base64", "media_type": "image/jpeg", "data": JPEG_B64}
        assert ("look", {"question": "who is there?"}) in body.received
        assert body.spoken == ["Hello, Ana!"]
        # Told the real, clamped sleep.
        told = texts_of(fake.bodies[3]["messages"][-1])
        assert "You will sleep 60 minutes (you asked for 500; the longest sleep right now is 60 minutes)." in told
        # The alarm it was told of woke it; the date is in view above, so the clock time is enough.
        assert told.endswith("It is 15:00, your local time.\nYour own alarm woke you.")
        # The system prompt and tools are byte-identical between wakings.
        assert fake.bodies[3]["system"] == first["system"] and fake.bodies[3]["tools"] == first["tools"]
        lines = (tmp_path / "soul" / "session.jsonl").read_text().splitlines()
        assert len(lines) == 10 and all(json.loads(line)["type"] == "message" for line in lines)


async def test_night_ceiling_wraps_past_midnight(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(tool_use("sleep", {"minutes": 500}))
        cfg = make_cfg(tmp_path, body, loop={"nightStartHour": 22, "nightEndHour": 6, "nightMaxSleepMinutes": 240})
        night = datetime(2024, 5, 1, 23, 30, tzinfo=UTC)
        clock = StepClock(night)
        clock.hold(after=1)  # the first sleep passes; the soul is held in its second
        soul = build_soul(cfg, clock=clock, model=anthropic_model(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="the second waking")
        assert len(fake.bodies) == 2
        assert "It is night." in texts_of(fake.bodies[0]["messages"][-1])
        assert "at most 240 minutes" in texts_of(fake.bodies[0]["messages"][-1])
        second = texts_of(fake.bodies[1]["messages"][-1])
        assert "You will sleep 240 minutes (you asked for 500; the longest sleep right now is 240 minutes)." in second
        # Past midnight, still night: woken by its alarm at 03:30 the next day.
        assert "It is 2024-05-02 03:30 (Thursday), your local time.\nIt is night." in second
        assert "Your own alarm woke you." in second


async def test_a_nudge_wakes_a_sleeping_soul_at_once(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        cfg = make_cfg(tmp_path, body, nudge={"token": "s3cret"})
        clock = StepClock(AFTERNOON)
        clock.hold()  # every sleep is held: only a nudge can wake it
        soul = build_soul(cfg, clock=clock, model=anthropic_model(fake))
        async with Running(soul) as running:
            await until(lambda: clock.held == 1, what="the soul to fall asleep")
            assert await running.post("/nudge", {"reason": "a face appeared"}) == (
                401,
                {"message": "missing bearer token; send Authorization: Bearer <token>"},
            )
            auth = {"Authorization": "Bearer s3cret"}
            status, answer = await running.post("/nudge", {"reason": ""}, auth)
            assert status == 400 and "reason" in answer["message"]
            status, answer = await running.post(
                "/nudge", raw=b"{nope", headers={**auth, "Content-Type": "application/json"}
            )
            assert status == 400 and "not valid JSON" in answer["message"]
            status, answer = await running.post("/nudge", raw=b'{"reason": "a form post"}', headers=auth)
            assert status == 415 and "application/json" in answer["message"]
            assert await running.post("/nudge", {"reason": "a face appeared"}, auth) == (
                202,
                {"queued": True, "state": "asleep"},
            )
            await until(lambda: clock.held == 2, timeout=5, what="the nudged waking")
        assert len(fake.bodies) == 2
        snapshot = texts_of(fake.bodies[1]["messages"][-1])
        # Held, the sleep let no virtual time pass: woken the whole hour early.
        assert "Woken by: a face appeared\n(that was 60 minutes before your alarm)" in snapshot


async def test_nudges_during_a_turn_are_kept_and_collapsed(tmp_path):
    release = asyncio.Event()

    async def slow_model(request):
        await release.wait()
        return tool_use("sleep", {"minutes": 60})

    async with RecordingBody() as body, FakeAnthropic([slow_model], default=sleep_forever) as fake:
        cfg = make_cfg(tmp_path, body)
        clock = StepClock(AFTERNOON)
        clock.hold()  # every sleep is held: only what arrived can wake it
        soul = build_soul(cfg, clock=clock, model=anthropic_model(fake))
        async with Running(soul) as running:
            await until(lambda: len(fake.bodies) >= 1, what="the first model call")
            for reason in ("the door opened", "a cat walked by", "the door opened"):
                status, answer = await running.post("/nudge", {"reason": reason})
                assert (status, answer["state"]) == (202, "thinking")
            release.set()
            await until(lambda: clock.held, timeout=5, what="the sleep after the waking right after the turn")
            # What arrived while thinking woke it at once: the first sleep was never entered.
            assert clock.held == 1 and soul.wakings == 2 and len(fake.bodies) == 2
        snapshot = texts_of(fake.bodies[1]["messages"][-1])
        assert snapshot.count("While you were thinking, this arrived: the door opened") == 1
        assert "While you were thinking, this arrived: a cat walked by" in snapshot


async def test_a_body_that_fails_to_speak_is_reported_as_a_failure(tmp_path):
    async with RecordingBody(fail={"speak": 500}) as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(tool_use("speak", {"text": "Are you there?"}))
        clock = StepClock(AFTERNOON)
        clock.hold()  # the soul is held in its first sleep
        soul = build_soul(make_cfg(tmp_path, body), clock=clock, model=anthropic_model(fake))
        async with Running(soul):
            await until(lambda: clock.held == 1, what="the sleep after speaking")
        assert len(fake.bodies) == 2
        result = fake.bodies[1]["messages"][-1]["content"][0]
        assert result["is_error"] is True
        assert "Your body did not respond (the speak device is broken). Nothing was said." == texts_of(
            {"content": [result]}
        )
        # The probe, then the failed speak: nothing else reached the body.
        assert body.spoken == [] and body.received == [("status", {}), ("speak (failed)", {"text": "Are you there?"})]


async def test_a_failing_provider_hands_the_waking_to_the_brainstem(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=error(529)) as fake:
        cfg = make_cfg(tmp_path, body)
        clock = StepClock(AFTERNOON)
        clock.hold(after=1)  # the first sleep passes; the soul is held in its second
        soul = build_soul(cfg, clock=clock, model=anthropic_model(fake))
        async with Running(soul):
            await until(lambda: clock.held == 2, what="a waking on the brainstem")
        assert soul.wakings == 2
        assert len(fake.bodies) == 4  # each waking: retried once before giving up
        # Each waking: the probe, then the brainstem's body_status and its neutral face.
        assert body.received == [("status", {}), ("status", {}), ("express", {"emotion": "neutral"})] * 2
        diary = life.Life(tmp_path / "soul").entries(life.DIARY)
        assert [line for _when, line in diary] == [
            "Woke (I had just started) without my mind; only my brainstem kept the rhythm.",
            "Woke (my own alarm) without my mind; only my brainstem kept the rhythm.",
        ]
        assert soul.last_error.startswith("anthropic:")
