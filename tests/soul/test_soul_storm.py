"""A soul that can't be stormed: nudges after a nudged waking wait nudge.minIntervalSeconds and come
together; a person's words wake it within seconds; what /nudge acknowledged survives kill -9.

Real HTTP on loopback, the real anthropic SDK against host/fakes/anthropic_api.py, a StepClock
held in every sleep (a held sleep ends by a nudge, or passes its full length on `release`)."""

import contextlib
import json
import logging
from datetime import timedelta

import aiohttp

from soulstack.clocks import StepClock
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.brainstem import said
from soulstack.soul.prompts import texts
from tests.helpers import free_port
from tests.helpers import until, until_real
from tests.soul.helpers import (
    AFTERNOON,
    Running,
    anthropic_model,
    make_cfg,
    sleep_forever,
    start_soul,
    stop_with_ctrl_c,
    texts_of,
    write_config,
)


EN = texts("en").TEXT


def let_the_held_sleep_pass(clock):
    """The sleep held now passes its full length; the one after it is held again."""
    clock.release()
    clock.hold()


async def nudged_then_held(running, clock, fake):
    """The start waking, then a nudged one; returns once the soul is held asleep after it."""
    await until(lambda: clock.held == 1, what="the first sleep")
    assert (await running.post("/nudge", {"reason": "a face appeared"}))[0] == 202
    await until(lambda: clock.held == 2, what="the sleep after the nudged waking")
    assert len(fake.bodies) == 2


@contextlib.asynccontextmanager
async def held_soul(tmp_path, **cfg):
    """A soul living against the fake model, held in every sleep; yields (soul, running, clock, fake)."""
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        clock = StepClock(AFTERNOON)
        clock.hold()
        soul = build_soul(make_cfg(tmp_path, body, **cfg), clock=clock, model=anthropic_model(fake))
        async with Running(soul) as running:
            yield soul, running, clock, fake


async def health(running):
    async with aiohttp.ClientSession() as http:
        async with http.get(running.url + "/health") as response:
            return await response.json()


async def test_nudges_within_the_interval_wait_and_wake_it_once_together(tmp_path):
    async with held_soul(tmp_path) as (soul, running, clock, fake):
        await nudged_then_held(running, clock, fake)
        for reason in ("the device was picked up", "a face appeared", "a face appeared", "a message arrived"):
            status, answer = await running.post("/nudge", {"reason": reason})
            assert status == 202 and answer == {"queued": True, "state": "asleep"}
        await until(lambda: clock.held > 2, what="the soul back asleep, the nudges waiting")
        assert len(fake.bodies) == 2  # none of them woke it
        assert (await health(running))["nudges"] == {"received": 5, "wakings": 1, "allWakings": 2, "waiting": 4}

        let_the_held_sleep_pass(clock)  # the rest of the interval
        await until(lambda: len(fake.bodies) == 3 and clock.held, what="the coalesced waking")
        assert soul.waking.started == AFTERNOON + timedelta(seconds=60)
        snapshot = texts_of(fake.bodies[2]["messages"][-1])
        assert (
            "Woken by: the device was picked up\nWoken by: a face appeared (x2)\nWoken by: a message arrived"
            in snapshot
        )
        assert (await health(running))["nudges"] == {"received": 5, "wakings": 2, "allWakings": 3, "waiting": 0}
        assert (tmp_path / "soul" / "NUDGES.jsonl").read_text() == ""


async def test_a_person_s_words_wake_it_within_seconds_and_stay_their_own_line(tmp_path):
    async with held_soul(tmp_path) as (soul, running, clock, fake):
        await nudged_then_held(running, clock, fake)
        await running.post("/nudge", {"reason": "the device was picked up"})
        await running.post("/nudge", {"reason": "your human typed: hi", "words": "hi"})
        await running.post("/nudge", {"reason": "your human typed: are you there?", "words": "are you there?"})
        await until(lambda: clock.held > 2, what="the soul asleep until the words are due")
        let_the_held_sleep_pass(clock)
        await until(lambda: len(fake.bodies) == 3 and clock.held, what="the waking for the words")
        assert soul.waking.started == AFTERNOON + timedelta(seconds=3)
        snapshot = texts_of(fake.bodies[2]["messages"][-1])
        assert "Woken by: your human typed: hi\nWoken by: your human typed: are you there?" in snapshot
        assert "Woken by: the device was picked up" in snapshot  # what waited comes along
        assert soul.situation().heard == ["hi", "are you there?"]  # each line whole (the brainstem answers these)
        assert soul.metabolism.drives.last_contact_kind == "typed"


async def test_words_its_reason_does_not_quote_are_heard(tmp_path):
    async with held_soul(tmp_path) as (soul, running, clock, fake):
        await until(lambda: clock.held == 1, what="the first sleep")
        await running.post("/nudge", {"reason": "someone spoke near the robot", "words": "good morning, Pip"})
        await until(lambda: clock.held == 2, what="the nudged waking")
        snapshot = texts_of(fake.bodies[1]["messages"][-1])
        assert "Woken by: someone spoke near the robot" in snapshot
        assert "Ana is speaking to you now: \u201cgood morning, Pip\u201d" in snapshot


async def woken_by(tmp_path, nudge: dict) -> tuple:
    """(the snapshot of the waking `nudge` caused, the person's words in it, the last contact's kind)."""
    tmp_path.mkdir()
    async with held_soul(tmp_path) as (soul, running, clock, fake):
        await until(lambda: clock.held == 1, what="the first sleep")
        assert (await running.post("/nudge", nudge))[0] == 202
        await until(lambda: clock.held == 2, what="the nudged waking")
        return texts_of(fake.bodies[1]["messages"][-1]), soul.persons_words(), soul.metabolism.drives.last_contact_kind


async def test_a_typed_line_reads_the_same_sent_as_a_reason_as_words_alone_or_as_both(tmp_path):
    line = "hi Pip; are you there?"
    seen = [
        await woken_by(tmp_path / name, nudge)
        for name, nudge in [
            ("seed", {"reason": f"your human typed: {line}"}),  # a body from elsewhere: only the reason
            ("words", {"words": line}),  # the terminal body now: the words once
            ("both", {"reason": f"your human typed: {line}", "words": line}),  # an older terminal body
        ]
    ]
    snapshot = seen[0][0]
    assert f"Woken by: your human typed: {line}\n" in snapshot and "speaking to you now" not in snapshot
    assert seen == [(snapshot, [line], "typed")] * 3  # the model is shown the very same text


async def test_a_wake_word_that_quotes_the_person_s_words_is_shown_once(tmp_path):
    reason = 'someone called the robot by its wake word: "hey Pip"'
    snapshot, heard, contact = await woken_by(tmp_path / "stackchan", {"reason": reason, "words": "hey Pip"})
    assert f"Woken by: {reason}\n" in snapshot and "speaking to you now" not in snapshot
    assert (heard, contact) == (["hey Pip"], "typed")


async def test_refusals_are_named_to_the_sender_and_logged_once_a_minute(tmp_path, caplog):
    async with held_soul(tmp_path, nudge={"token": "t0k"}) as (soul, running, clock, fake):
        await until(lambda: clock.held == 1, what="the first sleep")
        with caplog.at_level(logging.WARNING, logger="soulstack.soul.server"):
            for _ in range(3):
                status, answer = await running.post("/nudge", {"reason": "a face appeared"})
                assert status == 401 and "missing bearer token" in answer["message"]
            auth = {"Authorization": "Bearer t0k"}
            status, answer = await running.post("/nudge", {"reason": "x", "words": 7}, headers=auth)
            assert status == 400 and '"words"' in answer["message"]
        assert soul.inbox.received == 0 and len(fake.bodies) == 1
    refused = [r.getMessage() for r in caplog.records if "refused a nudge" in r.getMessage()]
    assert len(refused) == 2  # one 401 line (the next two held back for a minute), one 400 line
    assert "missing bearer token" in refused[0] and '"words"' in refused[1]


async def test_kill_9_mid_storm_loses_no_acknowledged_nudge(tmp_path):
    async with RecordingBody() as body:
        port = free_port()
        config_path = write_config(tmp_path, body, port)  # the brainstem: no model key
        log_path = tmp_path / "soul.log"
        process = start_soul(config_path, log_path)
        storm = [f"a bird landed on the sill ({i})" for i in range(20)]
        try:
            await until_real(lambda: "waking 1:" in log_path.read_text(), what="the first waking")
            async with aiohttp.ClientSession() as http:
                async with http.post(f"http://127.0.0.1:{port}/nudge", json={"reason": "a face appeared"}) as response:
                    assert response.status == 202
                await until_real(lambda: "waking 2:" in log_path.read_text(), what="the nudged waking")
                for reason in storm:  # within a minute of the nudged waking: they wait
                    async with http.post(f"http://127.0.0.1:{port}/nudge", json={"reason": reason}) as response:
                        assert response.status == 202
        finally:
            process.kill()  # SIGKILL while they wait
            process.wait()
        kept = [json.loads(line)["reason"] for line in (tmp_path / "soul" / "NUDGES.jsonl").read_text().splitlines()]
        assert kept == storm

        process = start_soul(config_path, log_path)
        try:
            await until_real(
                lambda: log_path.read_text().count("waking 1:") == 2, what="the first waking after the restart"
            )
        finally:
            code = await stop_with_ctrl_c(process)
        after = log_path.read_text().split("waking 1:")[2].splitlines()[0]
        assert all(f"nudged ({reason})" in after for reason in storm)
        assert code == 0 and "Traceback" not in log_path.read_text()
        assert (tmp_path / "soul" / "NUDGES.jsonl").read_text() == ""


async def test_kill_9_mid_answer_keeps_a_persons_words_until_a_waking_answers_them(tmp_path):
    """Shown in a stored snapshot is not answered: a kill while the answer is on its way to the
    speaker keeps the words in NUDGES.jsonl, and the next life answers them (a trial once lost them)."""
    port, log_path = free_port(), tmp_path / "soul.log"
    async with RecordingBody() as hanging:
        config_path = write_config(tmp_path, hanging, port)  # the brainstem: no model key
        process = start_soul(config_path, log_path)
        try:
            await until_real(lambda: "waking 1:" in log_path.read_text(), what="the first waking")
            hanging.hold.add("speak")  # from now on the speaker takes the words and never answers
            async with aiohttp.ClientSession() as http:
                async with http.post(f"http://127.0.0.1:{port}/nudge", json={"words": "are you there?"}) as response:
                    assert response.status == 202
            await until_real(lambda: "speak (held)" in dict(hanging.received), what="the answer on its way")
        finally:
            process.kill()
            process.wait()
            hanging.release()
    kept = [json.loads(line).get("words") for line in (tmp_path / "soul" / "NUDGES.jsonl").read_text().splitlines()]
    assert kept == ["are you there?"]

    async with RecordingBody() as body:
        write_config(tmp_path, body, port)  # the same soulDir, a speaker that works
        process = start_soul(config_path, log_path)
        try:
            await until_real(lambda: body.spoken, what="the words answered after the restart")
            await until_real(
                lambda: (tmp_path / "soul" / "NUDGES.jsonl").read_text() == "", what="the words let go once answered"
            )
        finally:
            code = await stop_with_ctrl_c(process)
    assert code == 0 and body.spoken == [said(EN["brainstem"]["answer"], "are you there?")]
