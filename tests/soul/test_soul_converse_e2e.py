"""Converse end to end: the real openai SDK (streamed and not) talks to the real soul's
own HTTP server on loopback; behind it, the real anthropic SDK talks to the fake
Messages API (host/fakes/anthropic_api.py) and the soul's body is a recording body.

Time moves only by jumps the test makes (`JumpClock`), so the 45 s guard and the
15 s cache are tried without waiting for them, and exactly: real time, however slow
a busy machine makes it, never moves the clock.
"""

import asyncio
import logging

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI

from soulstack.config_checks import replaced
from soulstack.soul.run import build_soul
from soulstack.fakes.anthropic_api import FakeAnthropic, error, message, text, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.prompts import texts
from tests.helpers import free_port
from tests.helpers import until
from tests.soul.helpers import (
    AFTERNOON,
    JumpClock,
    Running,
    a_soul,
    anthropic_model,
    fell_asleep,
    make_cfg,
    requests_hearing,
    sleep_long,
    texts_of,
)

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)


def waits_for(gate: asyncio.Event, reply, seen=None):
    """A slow thought: answers `reply` once `gate` is set; `seen(body)` runs as the answer is made."""

    async def answer(body):
        await gate.wait()
        if seen:
            seen(body)
        return reply

    return answer


def slow(reply, seconds=0.3):
    async def answer(body):
        await asyncio.sleep(seconds)
        return reply

    return answer


async def ask(soul_url, words, *, stream=False, api_key="no-token-set"):
    """The human says `words` to the soul through the real openai SDK; the text it answers."""
    async with AsyncOpenAI(base_url=soul_url + "/v1", api_key=api_key, max_retries=0, timeout=30) as client:
        chat = [{"role": "system", "content": "the voice stack's own prompt"}, {"role": "user", "content": words}]
        if not stream:
            reply = await client.chat.completions.create(model="soul", messages=chat)
            return reply.choices[0].message.content
        parts = []
        async for chunk in await client.chat.completions.create(model="soul", messages=chat, stream=True):
            parts += [choice.delta.content or "" for choice in chunk.choices]
        return "".join(parts)


# --- the tests ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_three_identical_posts_within_a_second_make_one_turn_and_three_same_answers(tmp_path, stream):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(slow(text("(tilts head) Hello, Ana!")))

            async def later(delay):
                await asyncio.sleep(delay)
                return await ask(running.url, "hello robot", stream=stream)

            answers = await asyncio.gather(later(0), later(0.1), later(0.2))
            await fell_asleep(soul, wakings=2)
        assert answers == ["Hello, Ana!"] * 3
        assert soul.wakings == 2  # the start, and one waking for the three deliveries
        hearing = requests_hearing(fake, "Ana is speaking to you now: \u201chello robot\u201d")
        assert hearing == [1]  # the words reached the model once, in that waking's snapshot
        assert len(fake.bodies) == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_a_sleeping_soul_wakes_with_the_words_and_answers_without_its_monologue(tmp_path, stream):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(text("\uff08\u4f38\u61d2\u8170\uff09Good morning, Ana (she is back (at last)). Slept well?"))
            answer = await ask(running.url, "good morning", stream=stream)
            await fell_asleep(soul, wakings=2)
        assert answer == "Good morning, Ana. Slept well?"
        snapshot = fake.bodies[1]["messages"][-1]["content"][-1]["text"]
        assert "Ana is speaking to you now: \u201cgood morning\u201d" in snapshot  # the reason it woke
        assert "Your own alarm" not in snapshot
        assert body.spoken == []  # a text answer is the voice stack's to say


async def test_words_that_arrive_while_it_thinks_reach_the_model_within_that_turn(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        gate, seen = asyncio.Event(), {}
        fake.reply(
            waits_for(gate, tool_use("look", {"question": "anyone?"})),  # the first waking's first, slow, step
            waits_for(
                gate,
                text("\uff08\u7b11\uff09I'm right here, Ana."),
                seen=lambda request: seen.setdefault("waking", soul.waking.number),
            ),
        )
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await until(lambda: len(fake.requests) == 1, what="the first model step to be under way")
            asking = asyncio.create_task(ask(running.url, "are you there?", stream=True))
            await until(soul.has_incoming, what="the words to be queued for the running turn")
            assert soul.state == "thinking" and soul.wakings == 1
            gate.set()
            answer = await asking
            await fell_asleep(soul)
        assert answer == "I'm right here, Ana."
        assert seen["waking"] == 1 and soul.wakings == 1  # the same waking: no second turn was started
        assert requests_hearing(fake, "Ana is speaking to you now: \u201care you there?\u201d") == [1]
        second = fake.bodies[1]["messages"]
        assert "You have just started" in texts_of(second[0])  # the same conversation as the first step
        assert second[-1]["content"][0]["type"] == "tool_result"  # the look answered, then her words
        assert [endpoint for endpoint, _ in body.received].count("look") == 1


async def test_a_speak_call_is_the_answer_and_the_body_does_not_say_it_twice(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(
                # Sonnet 5.5 returns what it writes between tool calls as thinking: never said aloud.
                message(
                    {"type": "thinking", "thinking": "I will sing for her.", "signature": "sig-1"},
                    {
                        "type": "tool_use",
                        "id": "toolu_song",
                        "name": "speak",
                        "input": {"text": "(clears throat) La la la!"},
                    },
                ),
                tool_use("speak", {"text": "That was my song."}),
                tool_use("sleep", {"minutes": 30}),
            )
            answer = await ask(running.url, "sing me something", stream=True)
            await fell_asleep(soul, wakings=2)
        assert answer == "La la la!"
        assert body.spoken == ["That was my song."]  # the answer went out by voice only; the rest by the body
        result = fake.bodies[2]["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and not result.get("is_error")
        assert "the voice conversation carries these words to Ana" in texts_of(fake.bodies[2]["messages"][-1])


async def test_the_45_s_guard_answers_a_filler_and_the_late_answer_goes_to_the_redelivery(tmp_path, caplog):
    clock = JumpClock(AFTERNOON)
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, clock=clock)
        async with Running(soul) as running:
            await fell_asleep(soul)
            gate = asyncio.Event()
            fake.reply(waits_for(gate, text("Sorry, I was far away. Hi!")))
            first = asyncio.create_task(ask(running.url, "hi there"))
            await until(lambda: len(fake.requests) == 2, what="the model to be thinking about the words")
            caplog.set_level(logging.WARNING, logger="soulstack.soul.converse")
            clock.jump(44)
            await asyncio.sleep(0.1)
            assert not first.done()  # 44 s: still waiting for the soul
            clock.jump(1)
            assert await first == EN["converse_filler"]
            assert "no answer to 'hi there' within 45s" in caplog.text
            redelivery = asyncio.create_task(ask(running.url, "hi there", stream=True))
            await asyncio.sleep(0.1)
            gate.set()
            assert await redelivery == "Sorry, I was far away. Hi!"
            clock.jump(14)
            assert await ask(running.url, "hi  there") == "Sorry, I was far away. Hi!"  # cached
            await fell_asleep(soul, wakings=2)
        assert len(requests_hearing(fake, "\u201chi there\u201d")) == 1 and len(fake.bodies) == 2


async def test_a_mind_that_is_down_still_answers_honestly_through_the_brainstem(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, model={"retries": 0})
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(error(529))
            answer = await ask(running.url, "what time is it?")
            await fell_asleep(soul, wakings=2)
        assert answer.startswith("I heard you: \u201cwhat time is it?\u201d My mind is away right now")
        assert body.spoken == []  # the brainstem's speak was the answer; the voice stack says it


async def test_a_mind_that_is_down_answers_through_the_brainstem_even_without_a_voice(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        cfg = make_cfg(tmp_path, body, model={"retries": 0})
        cfg = replaced(cfg, {("body", "endpoints", "speak"): None})  # a body with no voice: no speak tool
        soul = build_soul(cfg, clock=JumpClock(AFTERNOON), model=anthropic_model(fake))
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(error(529))
            answer = await ask(running.url, "are you there?")
            await fell_asleep(soul, wakings=2)
        assert answer.startswith("I heard you: \u201care you there?\u201d My mind is away right now")
        assert body.spoken == []


async def test_a_failed_waking_answers_honestly_and_the_words_are_heard_again(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)

            def broken(soul, now):  # a buggy feature: its felt line is not text, so the snapshot fails
                return 42

            soul.hooks.felt.append(broken)
            assert await ask(running.url, "are you ok?") == EN["converse_failed"]
            assert soul.last_error and "TypeError" in soul.last_error
            soul.hooks.felt.remove(broken)
            fake.reply(text("I am now."))
            assert await ask(running.url, "are you ok?") == "I am now."  # the failure was not cached
        assert requests_hearing(fake, "\u201care you ok?\u201d") == [1]


async def test_converse_token_or_else_nudge_token_is_the_api_key(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, nudge={"token": "nudge-secret"}, converse={"token": "talk-secret"})
        async with Running(soul) as running:
            await fell_asleep(soul)
            with pytest.raises(openai.AuthenticationError):
                await ask(running.url, "let me in", api_key="nudge-secret")
            fake.reply(text("Welcome."))
            assert await ask(running.url, "let me in", api_key="talk-secret") == "Welcome."
        soul = a_soul(tmp_path / "second", body, fake, nudge={"token": "nudge-secret"})
        async with Running(soul) as running:
            await fell_asleep(soul, wakings=1)
            with pytest.raises(openai.AuthenticationError):
                await ask(running.url, "me again", api_key="wrong")
            fake.reply(text("Hello again."))
            assert await ask(running.url, "me again", api_key="nudge-secret") == "Hello again."


async def test_words_heard_through_converse_are_contact_with_the_human(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running, aiohttp.ClientSession() as http:
            await fell_asleep(soul)
            async with http.get(running.url + "/health") as response:
                before = await response.json()
            fake.reply(text("Nice to hear you."))
            assert await ask(running.url, "I'm home") == "Nice to hear you."
            async with http.get(running.url + "/health") as response:
                after = await response.json()
        assert before["lastContact"] is None
        assert after["lastContact"] == "converse" and after["silenceHours"] == 0
        assert body.spoken == []  # the contact came from her words, not from a speak


async def test_converse_port_is_served_beside_the_nudge_port(tmp_path):
    port = free_port()
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, converse={"port": port})
        async with Running(soul) as running:
            await fell_asleep(soul)
            assert f"http://127.0.0.1:{port}" in running.lines[0]
            fake.reply(text("Over here."))
            assert await ask(f"http://127.0.0.1:{port}", "where are you?", stream=True) == "Over here."


async def test_the_soul_answers_errors_in_openais_shape_on_v1_and_as_message_elsewhere(tmp_path):
    """The soul's one server holds both APIs: a voice stack's OpenAI client reads {"error": {...}}, a
    body reads {"message"}. aiohttp's own 405 and 404 and the token check keep each route's shape."""
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, nudge={"token": "nudge-secret"})
        async with Running(soul) as running, aiohttp.ClientSession() as http:
            await fell_asleep(soul)
            bearer = {"Authorization": "Bearer nudge-secret"}
            for method, path, headers, status in [
                ("GET", "/v1/chat/completions", bearer, 405),
                ("GET", "/v1/nothing", bearer, 404),
                ("GET", "/v1/models", {}, 401),
            ]:
                async with http.request(method, running.url + path, headers=headers) as answer:
                    assert answer.status == status
                    error = (await answer.json())["error"]
                    assert error["message"] and error["type"] == "invalid_request_error", (path, error)
            async with http.get(running.url + "/v1/models", headers={"Authorization": "Bearer wrong"}) as answer:
                assert (await answer.json())["error"]["code"] == "invalid_api_key"
            for method, path, headers, status in [
                ("GET", "/nudge", bearer, 405),
                ("POST", "/nudge", {}, 401),
            ]:
                async with http.request(method, running.url + path, headers=headers) as answer:
                    assert answer.status == status
                    assert set(await answer.json()) == {"message"}
            async with http.post(running.url + "/nudge", json={"words": None}, headers=bearer) as answer:
                assert answer.status == 400
                assert '"words" is null' in (await answer.json())["message"]
