"""The soul's first words reach a streamed voice request while its model still writes.

The real openai SDK streams from the real soul's HTTP server; behind it, the real anthropic SDK
streams from the fake Messages API, whose stream the test watches and steers (`Steer`): it can
hold the rest of a reply back until the test has seen the first chunk, or cut it midway.
Time moves only by the test's jumps (`JumpClock`), so the 45 s guard is exact.
"""

import asyncio
import json

from openai import AsyncOpenAI

from soulstack.llm.openai import OpenAIModel
from soulstack.soul.run import build_soul
from soulstack.fakes import openai_api
from soulstack.fakes.anthropic_api import FakeAnthropic, message, text, tool_use
from soulstack.fakes.openai_api import FakeOpenAI
from soulstack.fakes.scripted_server import steered
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.prompts import texts
from tests.helpers import until
from tests.soul.helpers import (
    AFTERNOON,
    JumpClock,
    Running,
    a_soul,
    fell_asleep,
    make_cfg,
    requests_hearing,
    sleep_long,
)

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)


class Steer:
    """Watches a fake reply's stream as it is written: its text so far, whether it ended; once
    `hold_at` has been written (and then an event of type `on`, when given) it holds the rest
    until `release` is set."""

    def __init__(self, hold_at=None, on=None):
        self.text, self.hold_at, self.on, self.ended = "", hold_at, on, False
        self.release = asyncio.Event()

    async def __call__(self, data):
        event = json.loads(data)
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
            self.text += event["delta"]["text"]
        self.ended = event["type"] == "message_stop"
        if self.hold_at and self.hold_at in self.text and self.on in (None, event["type"]):
            self.hold_at = None
            await self.release.wait()


async def chunks_of(soul_url, words, on_first=None) -> list:
    """The content pieces of the soul's streamed answer, as the voice stack receives them."""
    pieces = []
    async with AsyncOpenAI(base_url=soul_url + "/v1", api_key="any", max_retries=0, timeout=30) as client:
        stream = await client.chat.completions.create(
            model="soul", messages=[{"role": "user", "content": words}], stream=True
        )
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                    if on_first and len(pieces) == 1:
                        on_first(choice.delta.content)
    return pieces


async def test_the_first_sentence_arrives_before_the_model_call_ends(tmp_path):
    steer = Steer(hold_at="Hello, Ana.")
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(
                steered(text("(waves) Hello, Ana. I missed you (so much). How was the trip?"), after_event=steer)
            )
            first = []

            def saw_first(piece):
                first.append((piece, steer.ended, len(fake.requests)))
                steer.release.set()  # only now may the model go on

            pieces = await asyncio.wait_for(chunks_of(running.url, "I'm back", on_first=saw_first), 20)
            await fell_asleep(soul, wakings=2)
        assert first == [("Hello, Ana.", False, 2)]  # while the model call that says it was still streaming
        assert "".join(pieces) == "Hello, Ana. I missed you. How was the trip?"
        assert len(pieces) == 3  # sentence by sentence
        assert body.spoken == []


async def test_with_an_openai_compatible_model_the_first_sentence_arrives_early_too(tmp_path):
    written, release = [], asyncio.Event()

    async def hold_after_first_sentence(data):
        if data != "[DONE]":
            written.extend(choice["delta"].get("content") or "" for choice in json.loads(data)["choices"])
        if "Hello, Ana." in "".join(written) and not release.is_set():
            await release.wait()

    async with RecordingBody() as body, FakeOpenAI(default=openai_api.tool_call("sleep", {"minutes": 60})) as fake:
        soul = build_soul(
            make_cfg(tmp_path, body),
            clock=JumpClock(AFTERNOON),
            model=OpenAIModel("llama3.1", base_url=fake.base_url + "/v1", env={}),
        )
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(
                steered(
                    openai_api.tool_call("sleep", {"minutes": 30}, text="Hello, Ana. Nice to hear you."),
                    after_event=hold_after_first_sentence,
                )
            )
            first = []

            def saw_first(piece):
                first.append((piece, "".join(written)))
                release.set()

            pieces = await asyncio.wait_for(chunks_of(running.url, "hello", on_first=saw_first), 20)
            await fell_asleep(soul, wakings=2)
        assert first[0][0] == "Hello, Ana." and "hear you." not in first[0][1]  # the rest was not written yet
        assert "".join(pieces) == "Hello, Ana. Nice to hear you."


async def test_a_request_that_does_not_stream_gets_the_answer_when_its_text_ends(tmp_path):
    steer = Steer(hold_at="Good to see you.", on="content_block_stop")  # the text is done; its tool calls not yet
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(
                steered(tool_use("express", {"emotion": "happy"}, text="Hi, Ana! Good to see you."), after_event=steer)
            )
            async with AsyncOpenAI(base_url=running.url + "/v1", api_key="any", max_retries=0, timeout=30) as client:
                asking = asyncio.create_task(
                    client.chat.completions.create(model="soul", messages=[{"role": "user", "content": "hi"}])
                )
                reply = await asyncio.wait_for(asking, 20)  # while the model call is held mid-stream
                assert not steer.ended and reply.choices[0].message.content == "Hi, Ana! Good to see you."
            steer.release.set()
            await fell_asleep(soul, wakings=2)
        assert [endpoint for endpoint, _ in body.received].count("express") == 1


async def test_monologue_and_thinking_never_reach_the_voice(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(
                message(
                    {"type": "text", "text": "(Who is that? (A visitor?) Let me look.)"},
                    {"type": "tool_use", "id": "toolu_look", "name": "look", "input": {"question": "who?"}},
                ),
                message(
                    {"type": "thinking", "thinking": "It is Ana. She sounds tired.", "signature": "sig-2"},
                    {"type": "text", "text": "\uff08\u53f9\u6c14\uff09(sighs (softly)) Oh, it's you, Ana! Long day?"},
                ),
            )
            pieces = await chunks_of(running.url, "knock knock")
            await fell_asleep(soul, wakings=2)
        assert "".join(pieces) == "Oh, it's you, Ana! Long day?"
        for hidden in ("Who", "visitor", "look", "tired", "sighs", "softly", "\u53f9"):
            assert not any(hidden in piece for piece in pieces)


async def test_a_speak_calls_text_arrives_once(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(
                tool_use("speak", {"text": "(smiles) Welcome back! I kept your seat warm."}),
                tool_use("speak", {"text": "Welcome back! I kept your seat warm."}),  # the model repeats itself
                tool_use("sleep", {"minutes": 30}),
            )
            pieces = await chunks_of(running.url, "I'm back")
            await fell_asleep(soul, wakings=2)
        assert pieces == ["Welcome back! I kept your seat warm."]
        assert body.spoken == []  # the voice stack said it; the body was not made to say it again, twice


async def test_three_identical_streamed_requests_share_one_turn_and_hear_the_same_pieces(tmp_path):
    async def paced(_data):
        await asyncio.sleep(0.01)

    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text("Hello, Ana! Yes, I heard you. All three times."), after_event=paced))

            async def later(delay):
                await asyncio.sleep(delay)
                return await chunks_of(running.url, "hello robot")

            answers = await asyncio.gather(later(0), later(0.05), later(0.1))
            await fell_asleep(soul, wakings=2)
        assert answers[0] == answers[1] == answers[2]
        assert "".join(answers[0]) == "Hello, Ana! Yes, I heard you. All three times."
        assert requests_hearing(fake, "\u201chello robot\u201d") == [1] and len(fake.bodies) == 2


async def test_a_stream_that_dies_after_a_sentence_ends_with_an_honest_failure(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)  # retries: 1, yet a reply that broke off is not asked again
        async with Running(soul) as running:
            await fell_asleep(soul)
            # message_start, ping, block start, then "Hello, A" "na. I wa" "s just t" -- and the connection drops
            fake.reply(steered(text("Hello, Ana. I was just thinking about you."), cut_after=6))
            pieces = await chunks_of(running.url, "hi")
            await fell_asleep(soul, wakings=2)
        # what was said, then the truth; never the cut-off half
        assert pieces == ["Hello, Ana.", " " + EN["converse_failed"]]
        assert len(fake.bodies) == 2  # not retried: the words would have been said twice
        assert soul.last_error and "broke off midway" in soul.last_error
        assert body.spoken and body.spoken[0].startswith(
            "I heard you: \u201chi\u201d. My mind is away"
        )  # the brainstem


async def test_a_stream_that_dies_before_a_sentence_is_answered_by_the_brainstem(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text("Hello, Ana. I was just thinking about you."), cut_after=4))  # only "Hello, A"
            pieces = await chunks_of(running.url, "hi")
            await fell_asleep(soul, wakings=2)
        assert "".join(pieces).startswith("I heard you: \u201chi\u201d. My mind is away right now")
        assert "Hello" not in "".join(pieces) and body.spoken == []


async def test_the_45_s_guard_cuts_a_slow_answer_short_or_says_a_filler(tmp_path):
    clock = JumpClock(AFTERNOON)
    said_first, silent = Steer(hold_at="Hello, Ana."), Steer(hold_at="Hm")
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, clock=clock)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text("Hello, Ana. Give me a moment to wake up."), after_event=said_first))
            asking = asyncio.create_task(chunks_of(running.url, "wake up"))
            await until(lambda: said_first.hold_at is None, what="the model to hold after its first sentence")
            clock.jump(44.9)
            await asyncio.sleep(0.1)
            assert not asking.done()
            clock.jump(0.1)
            assert await asking == ["Hello, Ana."]  # cut short at 45 s: no filler after real words
            said_first.release.set()
            await fell_asleep(soul, wakings=2)
            assert await chunks_of(running.url, "wake up") == ["Hello, Ana. Give me a moment to wake up."]  # cached

            fake.reply(steered(text("Hmm (thinking hard) yes."), after_event=silent))
            asking = asyncio.create_task(chunks_of(running.url, "are you sure?"))
            await until(lambda: silent.hold_at is None, what="the model to hold before any sentence")
            clock.jump(45)
            assert await asking == [EN["converse_filler"]]
            silent.release.set()
            await fell_asleep(soul, wakings=3)
