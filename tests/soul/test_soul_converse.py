"""The real-time dialog endpoint, driven by the real openai SDK over loopback.

The soul behind the endpoint is `ScriptedSoul`, a small test double of the
`Listener` seam: it arms each catcher, then plays a scripted turn by feeding
assistant messages through `ReplyCatchers` as the soul's loop will. Time runs
on `ManualClock`, so the 15 s cache and the 45 s filler take no real time.
"""

import asyncio
import json
import logging

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI

from soulstack.llm.types import Message, TextBlock, ToolCall
from soulstack.serving import make_server_app
from soulstack.soul.converse.endpoint import add_converse_route, estimate_tokens, openai_error_body
from soulstack.soul.converse.reply import ReplyCatcher, ReplyCatchers, spoken_reply, utterance_from_chat, BadChatBody
from soulstack.soul.config import from_dict, starter
from soulstack.soul.prompts import texts
from soulstack.soul.tools.builtin import make_toolbox
from tests.helpers import until

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)
# A soul's tools and their facts (host/soul/tools/): the config `soulstack soul --init` writes (every body endpoint).
TOOLS = make_toolbox(from_dict(starter())[0])


# --- test doubles -------------------------------------------------------------


class ManualClock:
    """Time moves only when the test says so."""

    def __init__(self):
        self.t = 1000.0
        self.sleepers = []

    def monotonic(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        entry = (self.t + seconds, asyncio.get_running_loop().create_future())
        self.sleepers.append(entry)
        try:
            await entry[1]
        finally:
            self.sleepers.remove(entry)

    def advance(self, seconds: float) -> None:
        self.t += seconds
        for due, future in self.sleepers:
            if due <= self.t and not future.done():
                future.set_result(None)


class ScriptedSoul:
    """A stand-in for the soul at the `Listener` seam.

    `turn(soul, utterance)` is an async script returning the assistant
    messages of the turn that answers; the soul feeds them to its catchers and
    ends the turn, as the real loop will.
    """

    def __init__(self, turn):
        self.turn = turn
        self.heard = []
        self.catchers = ReplyCatchers(TOOLS.spoken)
        self.tasks = []
        self.body_said = []  # speak calls the body was made to say

    async def hear(self, utterance, catcher, speaker=None, heard_by=None):
        self.heard.append(utterance)
        self.tasks.append(asyncio.create_task(self._live(utterance, catcher)))

    async def _live(self, utterance, catcher):
        self.catchers.arm(catcher)
        try:
            for message in await self.turn(self, utterance):
                self.catchers.feed(message)
                for call in message.tool_calls():  # what the loop does before running speak
                    if call.name == "speak" and not self.catchers.answered_by(call):
                        self.body_said.append(call.input["text"])
        except Exception as error:  # a failed turn fails the answer
            catcher.fail(error)
        self.catchers.end_turn()


def said(*texts):
    return Message("assistant", [TextBlock(t) for t in texts])


def speaks(text, call_id="call_1", narration=None):
    blocks = [TextBlock(narration)] if narration else []
    return Message("assistant", blocks + [ToolCall(call_id, "speak", {"text": text})])


def answers(*replies):
    """A turn script answering each hearing with the next reply (a string or messages)."""
    queue = list(replies)

    async def turn(soul, utterance):
        reply = queue.pop(0)
        return [said(reply)] if isinstance(reply, str) else reply

    return turn


# --- fixtures -----------------------------------------------------------------


@pytest.fixture
async def serve(aiohttp_server):
    clients = []

    async def start(soul, token=None, **options):
        app = make_server_app(token, error_body=openai_error_body)
        converse = add_converse_route(app, soul, **options)
        server = await aiohttp_server(app)
        base = str(server.make_url("/v1"))
        client = AsyncOpenAI(base_url=base, api_key=token or "unused", max_retries=0, timeout=20)
        clients.append(client)
        return converse, client, base

    yield start
    for client in clients:
        await client.close()


async def ask(client, text, stream=False, **extra):
    """Ask through the SDK; the reply text (streamed replies are joined)."""
    messages = [{"role": "system", "content": "You are a robot."}, {"role": "user", "content": text}]
    if not stream:
        response = await client.chat.completions.create(model="soul", messages=messages, **extra)
        return response.choices[0].message.content
    chunks = await client.chat.completions.create(model="soul", messages=messages, stream=True, **extra)
    return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])


# --- dedup --------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_three_identical_posts_share_one_hearing(serve, stream):
    release = asyncio.Event()

    async def turn(soul, utterance):
        await release.wait()
        return [said("(she looks up, pleased) Hello, Ana! (I missed her.)")]

    soul = ScriptedSoul(turn)
    converse, client, _ = await serve(soul, clock=ManualClock())
    asks = [asyncio.create_task(ask(client, "hello robot", stream)) for _ in range(3)]
    await until(lambda: any(p.catcher.waiting == 3 for p in converse.pending.values()), "three waiting")
    release.set()
    replies = await asyncio.gather(*asks)
    assert replies == ["Hello, Ana!"] * 3
    assert soul.heard == ["hello robot"]
    assert converse.hear_calls == 1


async def test_repeat_within_15_s_is_cached_and_after_15_s_heard_again(serve):
    clock = ManualClock()
    soul = ScriptedSoul(answers("First answer.", "Second answer."))
    _, client, _ = await serve(soul, clock=clock)
    assert await ask(client, "what time is it") == "First answer."
    clock.advance(14)
    assert await ask(client, "what  time is it ", stream=True) == "First answer."
    assert soul.heard == ["what time is it"]
    clock.advance(1.5)
    assert await ask(client, "what time is it") == "Second answer."
    assert len(soul.heard) == 2


async def test_only_monologue_is_an_empty_answer_and_never_cached(serve):
    soul = ScriptedSoul(answers([said("(I don't feel like talking.)"), said("（还是不说了）")], "All right, hi."))
    _, client, _ = await serve(soul, clock=ManualClock())
    assert await ask(client, "are you there") == ""
    assert await ask(client, "are you there", stream=True) == "All right, hi."
    assert len(soul.heard) == 2


async def test_a_failed_turn_answers_honestly_and_is_never_cached(serve):
    async def turn(soul, utterance):
        if len(soul.heard) == 1:
            raise RuntimeError("model unreachable")
        return [said("Now I can answer.")]

    soul = ScriptedSoul(turn)
    _, client, _ = await serve(soul, clock=ManualClock())
    assert await ask(client, "hi") == EN["converse_failed"]
    assert await ask(client, "hi") == "Now I can answer."
    assert len(soul.heard) == 2


async def test_a_listener_that_refuses_the_words_is_a_failure_never_cached(serve):
    class Deaf:
        calls = 0

        async def hear(self, utterance, catcher, speaker=None, heard_by=None):
            self.calls += 1
            raise RuntimeError("shutting down")

    deaf = Deaf()
    _, client, _ = await serve(deaf, clock=ManualClock())
    assert await ask(client, "你好", stream=True) == texts("zh").TEXT["converse_failed"]
    assert await ask(client, "你好") == texts("zh").TEXT["converse_failed"]
    assert deaf.calls == 2


# --- the 45 s guard -------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_filler_after_45_s_then_the_late_answer_is_cached(serve, caplog, stream):
    caplog.set_level(logging.INFO, logger="soulstack.soul.converse")
    clock = ManualClock()
    release = asyncio.Event()

    async def turn(soul, utterance):
        await release.wait()
        return [said("Sorry, I was far away. Yes, I'm here.")]

    soul = ScriptedSoul(turn)
    _, client, _ = await serve(soul, clock=clock)
    first = asyncio.create_task(ask(client, "are you awake", stream))
    await until(lambda: clock.sleepers, "the guard timer")
    clock.advance(44)
    await asyncio.sleep(0.05)
    assert not first.done()
    clock.advance(1)
    assert await first == EN["converse_filler"]
    assert any("filler" in r.getMessage() for r in caplog.records)

    release.set()
    await until(lambda: soul.tasks[0].done(), "the late answer")
    assert await ask(client, "are you awake", stream) == "Sorry, I was far away. Yes, I'm here."
    assert soul.heard == ["are you awake"]


async def test_chinese_words_get_a_chinese_filler_and_a_redelivery_joins_the_pending_answer(serve):
    clock = ManualClock()
    release = asyncio.Event()

    async def turn(soul, utterance):
        await release.wait()
        return [said("（想了想）我在这儿呢。")]

    soul = ScriptedSoul(turn)
    _, client, _ = await serve(soul, clock=clock)
    first = asyncio.create_task(ask(client, "你在吗", stream=True))
    await until(lambda: clock.sleepers, "the guard timer")
    clock.advance(45)
    assert await first == texts("zh").TEXT["converse_filler"]
    second = asyncio.create_task(ask(client, "你在吗", stream=True))
    await until(lambda: clock.sleepers, "the second guard timer")
    release.set()
    assert await second == "我在这儿呢。"
    assert soul.heard == ["你在吗"]


async def test_a_voice_stack_that_hangs_up_still_gets_the_answer_on_redelivery(serve, caplog):
    caplog.set_level(logging.INFO, logger="soulstack.soul.converse")
    release = asyncio.Event()

    async def turn(soul, utterance):
        await release.wait()
        return [said("I heard you the first time.")]

    soul = ScriptedSoul(turn)
    converse, client, base = await serve(soul, clock=ManualClock())
    body = {"messages": [{"role": "user", "content": "did you hear me"}], "stream": True}
    async with aiohttp.ClientSession() as http:
        async with http.post(base + "/chat/completions", json=body) as r:
            first = await r.content.readuntil(b"\n\n")
            assert b'"role": "assistant"' in first
            r.close()  # the device dropped off mid-answer
    release.set()
    await until(lambda: any("hung up" in r.getMessage() for r in caplog.records), "the hang-up")
    # The answer's words can go out (and meet the closed connection) a moment before it is settled.
    await until(lambda: not converse.pending, "the answer to be settled and kept")
    assert await ask(client, "did you hear me", stream=True) == "I heard you the first time."
    assert soul.heard == ["did you hear me"]


async def test_an_answer_missing_for_10_minutes_is_abandoned_and_the_words_heard_anew(serve):
    clock = ManualClock()

    async def turn(soul, utterance):
        if len(soul.heard) == 1:
            await asyncio.Event().wait()  # a turn that never answers
        return [said("Sorry, I got lost in thought.")]

    soul = ScriptedSoul(turn)
    _, client, _ = await serve(soul, clock=clock)
    first = asyncio.create_task(ask(client, "hello"))
    await until(lambda: clock.sleepers, "the guard timer")
    clock.advance(45)
    assert await first == EN["converse_filler"]
    clock.advance(600)
    assert await ask(client, "hello") == "Sorry, I got lost in thought."
    assert soul.heard == ["hello", "hello"]
    for task in soul.tasks:
        task.cancel()


# --- speak as the answer ------------------------------------------------------


async def test_a_speak_call_is_the_answer_and_the_body_is_spared(serve):
    soul = ScriptedSoul(
        answers(
            [
                said("(Ana is back. I want to greet her properly.)"),
                speaks("(warmly) Welcome home, Ana!", "call_a", narration="(I'll say it out loud.)"),
                speaks("I made you a list of birds I saw.", "call_b"),
            ]
        )
    )
    _, client, _ = await serve(soul, clock=ManualClock())
    assert await ask(client, "I'm home", stream=True) == "Welcome home, Ana!"
    await until(lambda: soul.tasks[0].done(), "the turn")
    # The voice stack says the first speak; the second is not the answer, so the body says it.
    assert soul.body_said == ["I made you a list of birds I saw."]


async def test_the_first_spoken_words_win_in_the_order_they_were_written(serve):
    # Words are said as the model writes them, so text before a speak call in the same
    # message is the answer, and that call goes to the body as any later speak would.
    soul = ScriptedSoul(answers([speaks("La la la!", "call_song", narration="I will sing for you.")]))
    _, client, _ = await serve(soul, clock=ManualClock())
    assert await ask(client, "sing", stream=True) == "I will sing for you."
    await until(lambda: soul.tasks[0].done(), "the turn")
    assert soul.body_said == ["La la la!"]


async def test_text_answer_then_the_same_words_by_speak_are_said_once(serve):
    soul = ScriptedSoul(answers([said("Good night!"), speaks("Good night!", "call_same")]))
    _, client, _ = await serve(soul, clock=ManualClock())
    assert await ask(client, "good night") == "Good night!"
    await until(lambda: soul.tasks[0].done(), "the turn")
    assert soul.body_said == []


async def test_a_speak_after_every_request_got_a_filler_goes_to_the_body(serve):
    clock = ManualClock()
    release = asyncio.Event()

    async def turn(soul, utterance):
        await release.wait()
        return [speaks("There you are.", "call_late")]

    soul = ScriptedSoul(turn)
    _, client, _ = await serve(soul, clock=clock)
    first = asyncio.create_task(ask(client, "hello?"))
    await until(lambda: clock.sleepers, "the guard timer")
    clock.advance(45)
    assert await first == EN["converse_filler"]
    release.set()
    await until(lambda: soul.tasks[0].done(), "the turn")
    assert soul.body_said == ["There you are."]  # nobody on the voice side would say it
    assert await ask(client, "hello?") == "There you are."  # but it waits for a re-delivery


# --- what the human said ------------------------------------------------------


async def test_content_parts_and_json_wrapped_words_are_unwrapped(serve):
    soul = ScriptedSoul(answers("I see a cup.", "Morning, Ana."))
    _, client, _ = await serve(soul, clock=ManualClock())
    parts = await client.chat.completions.create(
        model="soul",
        messages=[
            {"role": "user", "content": "an older question"},
            {"role": "assistant", "content": "an older answer"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "text", "text": "on my desk?"},
                ],
            },
        ],
    )
    assert parts.choices[0].message.content == "I see a cup."
    assert await ask(client, json.dumps({"speaker": "Ana", "content": "good morning"})) == "Morning, Ana."
    assert soul.heard == ["what is on my desk?", "good morning"]


def test_utterance_from_chat_rules():
    assert utterance_from_chat({"messages": [{"role": "user", "content": "  hi  "}]}) == "hi"
    assert utterance_from_chat({"messages": [{"role": "user", "content": "{not json"}]}) == "{not json"
    assert utterance_from_chat({"messages": [{"role": "user", "content": '{"text": "x"}'}]}) == '{"text": "x"}'
    with pytest.raises(BadChatBody, match="no text"):
        utterance_from_chat({"messages": [{"role": "user", "content": '{"content": "  "}'}]})


# --- bad requests -------------------------------------------------------------


@pytest.mark.parametrize(
    "body, complaint",
    [
        (b"not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"{}", "'messages'"),
        (b'{"messages": []}', "'messages'"),
        (b'{"messages": [{"role": "system", "content": "be nice"}]}', "role 'user'"),
        (b'{"messages": [{"role": "user", "content": 7}]}', "content"),
        (b'{"messages": [{"role": "user", "content": [{"type": "text"}]}]}', "text"),
        (b'{"messages": [{"role": "user", "content": ""}]}', "no text"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}', "'stream'"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream_options": 1}', "'stream_options'"),
        (b'{"messages": [{"role": "user", "content": "' + b"la " * 700 + b'"}]}', "at most 2000"),
    ],
)
async def test_bad_bodies_are_400_in_openais_error_shape(serve, body, complaint):
    soul = ScriptedSoul(answers())
    _, _, base = await serve(soul, clock=ManualClock())
    async with aiohttp.ClientSession() as http:
        async with http.post(base + "/chat/completions", data=body, headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400
            error = (await r.json())["error"]
    assert complaint in error["message"]
    assert error["type"] == "invalid_request_error"
    assert soul.heard == []


@pytest.mark.parametrize(
    "method, path, body, headers, status, complaint",
    [
        ("GET", "/chat/completions", None, {}, 405, "takes POST"),
        ("POST", "/embeddings", b"{}", {"Content-Type": "application/json"}, 404, "nothing at /v1/embeddings"),
        ("POST", "/chat/completions", b"hi", {"Content-Type": "text/plain"}, 415, "application/json"),
        ("POST", "/chat/completions", b"{" * (1024 * 1024 + 1), {"Content-Type": "application/json"}, 413, "too large"),
        ("POST", "/chat/completions", b"{}", {"Content-Type": "application/json", "Host": "evil.example"}, 421, "name"),
    ],
)
async def test_every_error_comes_in_openais_shape(serve, method, path, body, headers, status, complaint):
    """aiohttp's own answers and the serving layer's guards too: an OpenAI client (xiaozhi-server's)
    shows error.message to whoever reads its log."""
    soul = ScriptedSoul(answers())
    _, _, base = await serve(soul, clock=ManualClock())
    async with aiohttp.ClientSession() as http:
        async with http.request(method, base + path, data=body, headers=headers) as r:
            assert r.status == status
            error = (await r.json())["error"]
    assert complaint in error["message"]
    assert error["type"] == "invalid_request_error" and error["code"] is None
    assert soul.heard == []


async def test_the_sdk_sees_a_bad_request_error(serve):
    soul = ScriptedSoul(answers())
    _, client, _ = await serve(soul, clock=ManualClock())
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="soul", messages=[{"role": "assistant", "content": "hm"}])
    assert caught.value.status_code == 400
    assert "role 'user'" in caught.value.body["message"]


async def test_token_is_required_when_configured(serve):
    soul = ScriptedSoul(answers("Hi, friend."))
    _, client, base = await serve(soul, token="s3cret", clock=ManualClock())
    intruder = AsyncOpenAI(base_url=base, api_key="wrong", max_retries=0)
    try:
        with pytest.raises(openai.AuthenticationError) as caught:
            await ask(intruder, "hi", stream=True)
        assert caught.value.body["type"] == "invalid_request_error"
        with pytest.raises(openai.AuthenticationError):
            await intruder.models.list()
    finally:
        await intruder.close()
    assert soul.heard == []
    assert await ask(client, "hi") == "Hi, friend."
    assert [m.id async for m in client.models.list()] == ["soul"]


# --- response shapes ------------------------------------------------------------


async def test_stream_shape_role_content_stop_usage_done(serve):
    soul = ScriptedSoul(answers("Two birds."))
    _, _, base = await serve(soul, clock=ManualClock(), model_name="kumo")
    body = {
        "messages": [{"role": "user", "content": "how many birds"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with aiohttp.ClientSession() as http:
        async with http.post(base + "/chat/completions", json=body) as r:
            assert r.headers["Content-Type"].startswith("text/event-stream")
            events = [e for e in (await r.text()).split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert [c["object"] for c in chunks] == ["chat.completion.chunk"] * 4
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[1]["choices"][0]["delta"] == {"content": "Two birds."}
    assert chunks[2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[3]["choices"] == []
    assert chunks[3]["usage"] == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}
    assert {c["model"] for c in chunks} == {"kumo"}


async def test_sdk_usage_streamed_and_not(serve):
    soul = ScriptedSoul(answers("我很好。", "我很好。"))
    _, client, _ = await serve(soul, clock=ManualClock())
    response = await client.chat.completions.create(model="soul", messages=[{"role": "user", "content": "你好吗"}])
    assert response.object == "chat.completion"
    assert response.usage.prompt_tokens == 3 and response.usage.completion_tokens == 4
    stream = await client.chat.completions.create(
        model="soul",
        messages=[{"role": "user", "content": "你好吗"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    usages = [c.usage async for c in stream if c.usage]
    assert usages[-1].total_tokens == 7


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("你好") == 2


# --- monologue stripping --------------------------------------------------------


@pytest.mark.parametrize(
    "text, spoken",
    [
        ("(sigh) Fine, I'll look.", "Fine, I'll look."),
        ("（叹气）好吧，我看看。", "好吧，我看看。"),
        ("Hello (thinking (deeply) about her) there!", "Hello there!"),
        ("Hi （她笑了 (a real smile)） Ana !", "Hi Ana!"),
        ("(only)  (thoughts)\n(here)", ""),
        ("   Lots \n of\t space  ", "Lots of space"),
        ("Step 1) boil water", "Step 1) boil water"),
        ("I think (this never closes", "I think (this never closes"),
        ("(a) b (c", "b (c"),
    ],
)
def test_spoken_reply(text, spoken):
    assert spoken_reply(text) == spoken


async def test_end_turn_with_an_error_fails_only_the_answers_not_yet_caught():
    catchers, caught, uncaught = ReplyCatchers(TOOLS.spoken), ReplyCatcher("hi"), ReplyCatcher("and?")
    catchers.arm(caught)
    catchers.feed(said("Hello."))
    catchers.arm(uncaught)
    catchers.end_turn(RuntimeError("the waking failed"))
    assert await caught.wait() == "Hello."
    with pytest.raises(RuntimeError, match="the waking failed"):
        await uncaught.wait()
