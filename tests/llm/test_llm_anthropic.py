"""AnthropicModel through the real anthropic SDK against the fake Messages API."""

import asyncio
import base64
import json

import anthropic
import pytest

from soulstack.llm.anthropic import AnthropicModel
from soulstack.llm.types import (
    ImageBlock,
    Message,
    ModelError,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolCall,
    ToolResult,
)
from soulstack.fakes.anthropic_api import (
    FakeAnthropic,
    PromptCache,
    cacheable_blocks,
    error,
    message,
    text,
    tool_use,
)

JPEG = base64.b64encode(b"\xff\xd8\xff\xe0fake-jpeg").decode()
LOOK = Tool(
    "look", "See through the body's camera.", {"type": "object", "properties": {"question": {"type": "string"}}}
)
SLEEP = Tool("sleep", "Sleep for some minutes.", {"type": "object", "properties": {"minutes": {"type": "integer"}}})


@pytest.fixture
async def fake():
    async with FakeAnthropic() as server:
        yield server


def model_for(fake, **options):
    return AnthropicModel("claude-sonnet-5-5", api_key="test-key", base_url=fake.base_url, **options)


async def test_text_reply_and_request_shape(fake):
    fake.reply("Good morning.")
    model = model_for(fake)
    reply = await model.complete("You are a small robot.", [Message.user("hello")], max_tokens=300)
    await model.aclose()
    assert reply.message.role == "assistant"
    assert reply.message.text() == "Good morning."
    assert reply.stop_reason == "end_turn"
    assert reply.model == "claude-sonnet-5-5"
    body = fake.bodies[0]
    assert body["model"] == "claude-sonnet-5-5" and body["max_tokens"] == 300
    assert body["system"] == [{"type": "text", "text": "You are a small robot."}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert "tools" not in body and "tool_choice" not in body
    headers = fake.requests[0].headers
    assert "test-key" in headers.get("x-api-key", "") + headers.get("authorization", "")


async def test_tool_call_round_trip_with_image_result(fake):
    fake.reply(tool_use("look", {"question": "who is there?"}, id="toolu_1", text="Let me look."), "I see a face.")
    model = model_for(fake)
    history = [Message.user("someone is at the desk")]
    first = await model.complete("sys", history, [LOOK, SLEEP])
    assert first.stop_reason == "tool_use"
    assert first.message.text() == "Let me look."
    assert first.message.tool_calls() == [ToolCall("toolu_1", "look", {"question": "who is there?"})]

    history += [first.message, Message("user", [ToolResult("toolu_1", [TextBlock("a photo"), ImageBlock(JPEG)])])]
    second = await model.complete("sys", history, [LOOK, SLEEP])
    assert second.message.text() == "I see a face."
    sent = fake.bodies[1]["messages"]
    assert sent[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "look",
        "input": {"question": "who is there?"},
    }
    result = sent[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1" and result["is_error"] is False
    assert result["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": JPEG},
    }
    assert [t["name"] for t in fake.bodies[1]["tools"]] == ["look", "sleep"]
    assert fake.bodies[1]["tools"][0]["input_schema"] == LOOK.input_schema


async def test_error_tool_result_and_user_image(fake):
    fake.reply("ok")
    history = [
        Message.user("look"),
        Message("assistant", [ToolCall("t1", "look", {})]),
        Message(
            "user",
            [ToolResult("t1", [TextBlock("your body did not respond")], is_error=True), ImageBlock(JPEG, "image/png")],
        ),
    ]
    await model_for(fake).complete("sys", history, [LOOK])
    content = fake.bodies[0]["messages"][2]["content"]
    assert content[0]["is_error"] is True
    assert content[0]["content"] == [{"type": "text", "text": "your body did not respond"}]
    assert content[1]["source"]["media_type"] == "image/png"


async def test_thinking_blocks_keep_their_signature(fake):
    fake.reply(
        message(
            {"type": "thinking", "thinking": "They seem sad.", "signature": "sig-abc"},
            {"type": "redacted_thinking", "data": "ENCRYPTED"},
            {"type": "tool_use", "id": "t9", "name": "look", "input": {}},
        ),
        "done",
    )
    model = model_for(fake, thinking=2048)
    first = await model.complete("sys", [Message.user("hi")], [LOOK], max_tokens=4096)
    assert first.message.content[0] == ThinkingBlock("They seem sad.", "sig-abc")
    assert first.message.content[1] == ThinkingBlock("", "ENCRYPTED", redacted=True)
    # The session stores it as JSON and reads it back; the blocks survive.
    stored = Message.from_json(json.loads(json.dumps(first.message.to_json())))
    history = [Message.user("hi"), stored, Message("user", [ToolResult("t9", [TextBlock("nothing")])])]
    await model.complete("sys", history, [LOOK], max_tokens=4096)
    assert fake.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    sent = fake.bodies[1]["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "They seem sad.", "signature": "sig-abc"}
    assert sent[1] == {"type": "redacted_thinking", "data": "ENCRYPTED"}


async def test_unsigned_thinking_is_not_sent(fake):
    fake.reply("ok")
    history = [
        Message.user("hi"),
        Message("assistant", [ThinkingBlock("from another model"), TextBlock("hey")]),
        Message.user("again"),
    ]
    await model_for(fake).complete("sys", history)
    assert fake.bodies[0]["messages"][1]["content"] == [{"type": "text", "text": "hey"}]


async def test_forced_tool_choice(fake):
    fake.reply(tool_use("sleep", {"minutes": 30}))
    model = AnthropicModel("claude-haiku-4-5", api_key="k", base_url=fake.base_url)  # does not think by default
    reply = await model.complete("sys", [Message.user("tired")], [LOOK, SLEEP], tool_choice="sleep")
    assert fake.bodies[0]["tool_choice"] == {"type": "tool", "name": "sleep"}
    assert reply.message.tool_calls()[0].input == {"minutes": 30}
    assert len(fake.requests) == 1


async def test_a_model_known_to_think_is_asked_with_auto_from_the_start(fake):
    fake.reply(tool_use("sleep", {"minutes": 5}), tool_use("sleep", {"minutes": 6}))
    model = model_for(fake)  # Sonnet 5.5 thinks by default: a forced choice would be a 400
    for _ in range(2):
        reply = await model.complete("sys", [Message.user("tired")], [SLEEP], tool_choice="sleep")
        assert reply.message.tool_calls()[0].name == "sleep"
    assert len(fake.requests) == 2 and all("tool_choice" not in b for b in fake.bodies)
    assert None not in fake.usages  # no 400 on the way


async def test_forced_tool_choice_refused_falls_back_to_auto_and_remembers(fake):
    # A model not known to think that refuses anyway (as the API words it): one 400, then auto for good.
    refusal = error(400, "tool_choice: forced tool use is not supported while thinking is on; use tool_choice auto")
    fake.reply(refusal, tool_use("sleep", {"minutes": 5}), tool_use("sleep", {"minutes": 6}))
    model = AnthropicModel("claude-haiku-4-5", api_key="k", base_url=fake.base_url)
    for _ in range(2):
        reply = await model.complete("sys", [Message.user("tired")], [SLEEP], tool_choice="sleep")
        assert reply.message.tool_calls()[0].name == "sleep"
    assert [(b.get("tool_choice") or {}).get("type") for b in fake.bodies] == ["tool", "auto", None]


async def test_other_bad_requests_with_forced_tool_choice_are_not_retried(fake):
    model = AnthropicModel("claude-haiku-4-5", api_key="k", base_url=fake.base_url)
    with pytest.raises(ModelError, match="not among the tools"):
        await model.complete("sys", [Message.user("tired")], [LOOK], tool_choice="sleep")
    assert len(fake.requests) == 1


async def test_usage_maps_cache_tokens(fake):
    usage = {
        "input_tokens": 11,
        "output_tokens": 22,
        "cache_read_input_tokens": 3300,
        "cache_creation_input_tokens": 440,
    }
    fake.reply(text("hi", usage=usage))
    reply = await model_for(fake).complete("sys", [Message.user("hi")])
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (11, 22)
    assert (reply.usage.cache_read_tokens, reply.usage.cache_write_tokens) == (3300, 440)


def waking(history, n):
    """The messages of waking n: the kept history plus a fresh, volatile snapshot."""
    return history + [Message.user(f"It is {7 + n}:00. You woke by your alarm. Mood: calm {n}.")]


async def test_cache_breakpoints_and_shared_prefix_between_wakings(fake):
    fake.reply(
        tool_use("sleep", {"minutes": 30}, id="s1"), "Sleeping now.", tool_use("sleep", {"minutes": 40}, id="s2")
    )
    model = model_for(fake)  # cache_ttl defaults to 1h
    system = "You are Stacky, a desk robot. " * 40
    history = [Message.user("(first waking)"), Message("assistant", [TextBlock("I am awake.")])]

    # Waking 1: one tool round.
    w1 = waking(history, 1)
    r1 = await model.complete(system, w1, [LOOK, SLEEP], cache=True)
    w1 += [r1.message, Message("user", [ToolResult("s1", [TextBlock("you will sleep 30 minutes")])])]
    r2 = await model.complete(system, w1, [LOOK, SLEEP], cache=True)
    # Waking 2: the history is all of waking 1, then a new snapshot.
    r3 = await model.complete(system, waking(w1 + [r2.message], 2), [LOOK, SLEEP], cache=True)
    assert r3.message.tool_calls()[0].input == {"minutes": 40}

    one_hour = {"type": "ephemeral", "ttl": "1h"}
    for body in fake.bodies:
        assert body["system"][-1]["cache_control"] == one_hour
        assert body["tools"][-1]["cache_control"] == one_hour
        assert all("cache_control" not in t for t in body["tools"][:-1])
        messages = body["messages"]
        # The history breakpoints: the last block of the final message and of the message before it.
        assert messages[-1]["content"][-1]["cache_control"] == one_hour
        assert messages[-2]["content"][-1]["cache_control"] == one_hour
        marked = [b for m in messages for b in m["content"] if "cache_control" in b]
        assert len(marked) == 2

    # Each request repeats the one before it byte for byte up to that one's last breakpoint
    # (the end of its final message), across the waking boundary too ...
    for before, after in zip(fake.bodies, fake.bodies[1:], strict=False):
        previous, latest = cacheable_blocks(before), cacheable_blocks(after)
        last_bp = max(i for i, (_c, _t, ttl) in enumerate(previous) if ttl)
        assert last_bp == len(previous) - 1
        assert [c for c, _t, _ttl in latest[: last_bp + 1]] == [c for c, _t, _ttl in previous]
    # ... so the fake's cache simulation reads everything sent before, writes only what is new,
    # and nothing goes uncached at the full input price.
    assert fake.usages[0]["cache_creation_input_tokens"] > 0 and fake.usages[0]["cache_read_input_tokens"] == 0
    for before, usage in zip(fake.bodies, fake.usages[1:], strict=False):
        assert usage["cache_read_input_tokens"] == sum(t for _c, t, _ttl in cacheable_blocks(before))
        assert usage["cache_creation_input_tokens"] > 0 and usage["input_tokens"] == 0
        assert usage["cache_creation"]["ephemeral_1h_input_tokens"] == usage["cache_creation_input_tokens"]


async def test_a_picture_in_the_final_message_is_sent_uncached_and_the_breakpoints_stop_before_it(fake):
    fake.reply(tool_use("look", {}, id="l1"), tool_use("sleep", {"minutes": 30}, id="s1"))
    model = model_for(fake)
    system = "You are Stacky, a desk robot. " * 40
    history = waking([Message.user("(first waking)"), Message("assistant", [TextBlock("I am awake.")])], 1)
    first = await model.complete(system, history, [LOOK, SLEEP], cache=True)
    history += [first.message, Message("user", [ToolResult("l1", [TextBlock("a photo"), ImageBlock(JPEG)])])]
    await model.complete(system, history, [LOOK, SLEEP], cache=True)
    messages = fake.bodies[1]["messages"]
    # The message with the picture carries no breakpoint; the reply that asked for it and the snapshot do.
    assert not any("cache_control" in block for block in messages[-1]["content"])
    assert "cache_control" in messages[-2]["content"][-1] and "cache_control" in messages[-3]["content"][-1]
    # Everything up to the reply is read (written by the first call) or written; only the picture's
    # message goes at the input price.
    blocks = cacheable_blocks(fake.bodies[1])
    usage = fake.usages[1]
    assert usage["input_tokens"] == blocks[-1][1] > 0
    assert usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"] == sum(
        t for _c, t, _ttl in blocks[:-1]
    )


async def test_cache_off_sends_no_breakpoints_and_5m_ttl(fake):
    fake.reply("a", "b")
    history = [Message.user("x"), Message("assistant", [TextBlock("y")]), Message.user("z")]
    await model_for(fake).complete("sys", history, [LOOK])
    assert "cache_control" not in json.dumps(fake.bodies[0])
    await model_for(fake, cache_ttl="5m").complete("sys", history, [LOOK], cache=True)
    assert fake.bodies[1]["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_retryable_errors(fake, status):
    fake.reply(error(status))
    with pytest.raises(ModelError) as caught:
        await model_for(fake).complete("sys", [Message.user("hi")])
    assert caught.value.status == status and caught.value.retryable
    assert len(fake.requests) == 1  # the SDK's own retries are off: retrying is ours


async def test_bad_request_is_not_retryable(fake):
    fake.reply(error(400, "messages.0.content: bad"))
    with pytest.raises(ModelError) as caught:
        await model_for(fake).complete("sys", [Message.user("hi")])
    assert caught.value.status == 400 and not caught.value.retryable
    assert "messages.0.content: bad" in str(caught.value)


async def test_unreachable_server_is_retryable():
    async with FakeAnthropic() as gone:
        url = gone.base_url
    model = AnthropicModel("claude-sonnet-5-5", api_key="k", base_url=url, timeout_s=5)
    with pytest.raises(ModelError) as caught:
        await model.complete("sys", [Message.user("hi")])
    assert caught.value.retryable and caught.value.status == 0


async def test_timeout_is_retryable(fake):
    release = asyncio.Event()

    async def slow(body):
        await release.wait()
        return text("late")

    fake.reply(slow)
    model = AnthropicModel("claude-sonnet-5-5", api_key="k", base_url=fake.base_url, timeout_s=0.3)
    with pytest.raises(ModelError) as caught:
        await model.complete("sys", [Message.user("hi")])
    release.set()
    assert caught.value.retryable


async def test_base_url_and_key_from_environment(fake):
    fake.reply("from env")
    env = {"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_BASE_URL": fake.base_url}
    reply = await AnthropicModel("claude-sonnet-5-5", env=env).complete("sys", [Message.user("hi")])
    assert reply.message.text() == "from env"
    headers = fake.requests[0].headers
    assert "env-key" in headers.get("x-api-key", "") + headers.get("authorization", "")


async def test_sdk_reads_anthropic_base_url_itself(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.reply("hi")
    reply = await AnthropicModel("claude-sonnet-5-5", api_key="k", env={}).complete("s", [Message.user("x")])
    assert reply.message.text() == "hi"


@pytest.mark.parametrize(
    "thinking, fields",
    [
        (None, {}),
        (4096, {"thinking": {"type": "enabled", "budget_tokens": 4096}}),
        ("between_tools", {"thinking": {"type": "between_tools"}}),
        ("off", {"thinking": {"type": "between_tools"}}),  # the least Sonnet 5.5 allows ("disabled" is refused)
        ("medium", {"output_config": {"effort": "medium"}}),
        ({"type": "adaptive", "display": "summarized"}, {"thinking": {"type": "adaptive", "display": "summarized"}}),
    ],
)
async def test_thinking_option_reaches_the_request(fake, thinking, fields):
    fake.reply("ok")
    await model_for(fake, thinking=thinking).complete("sys", [Message.user("hi")])
    body = fake.bodies[0]
    assert {k: body[k] for k in ("thinking", "output_config") if k in body} == fields


@pytest.mark.parametrize(
    "model_id, fields",
    [
        ("claude-sonnet-5-5", {"thinking": {"type": "between_tools"}}),
        ("claude-opus-5-5", {"output_config": {"effort": "low"}}),  # cannot stop thinking: the least of it
        ("claude-fable-5-1", {"output_config": {"effort": "low"}}),
        ("claude-sonnet-5", {"thinking": {"type": "disabled"}}),
        ("claude-opus-5", {"thinking": {"type": "disabled"}}),
        ("claude-haiku-5-5", {"thinking": {"type": "disabled"}}),
        ("claude-sonnet-4-6", {}),  # before Claude 5 nothing thinks unless asked
    ],
)
async def test_off_is_the_least_thinking_each_model_allows(fake, model_id, fields):
    fake.reply("ok")
    await AnthropicModel(model_id, api_key="k", base_url=fake.base_url, thinking="off").complete(
        "sys", [Message.user("hi")]
    )
    body = fake.bodies[0]
    assert {k: body[k] for k in ("thinking", "output_config") if k in body} == fields


async def test_thinking_level_on_an_older_model_is_a_budget_with_room_to_answer(fake):
    fake.reply("ok")
    model = AnthropicModel("claude-sonnet-4-6", api_key="k", base_url=fake.base_url, thinking="medium")
    await model.complete("sys", [Message.user("hi")], max_tokens=1000)
    assert fake.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert fake.bodies[0]["max_tokens"] == 5096


def test_missing_key_and_bad_options_are_clear():
    with pytest.raises(ValueError, match="token budget"):
        AnthropicModel("claude-sonnet-5-5", api_key="k", thinking=True, env={})
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-sonnet-5-5", env={})
    with pytest.raises(ValueError, match="cache_ttl"):
        AnthropicModel("claude-sonnet-5-5", api_key="k", cache_ttl="2h", env={})


# --- the fake itself, through the SDK: streaming, validation, cache rules ---
async def test_fake_streams_what_the_sdk_assembles(fake):
    fake.reply(
        message(
            {"type": "thinking", "thinking": "Someone waved.", "signature": "sig-1"},
            {"type": "text", "text": "Hello, friend! Nice to see you."},
            {"type": "tool_use", "id": "toolu_s", "name": "express", "input": {"emotion": "happy", "level": 2}},
        )
    )
    client = anthropic.AsyncAnthropic(api_key="k", base_url=fake.base_url, max_retries=0)
    async with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        pieces = [t async for t in stream.text_stream]
        final = await stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == "Hello, friend! Nice to see you."
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[0].signature == "sig-1"
    assert final.content[2].input == {"emotion": "happy", "level": 2}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == fake.usages[0]["output_tokens"]
    assert fake.bodies[0]["stream"] is True


@pytest.mark.parametrize(
    "messages, complaint",
    [
        ([{"role": "assistant", "content": "hi"}], "first message"),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "look", "input": {}}]},
                {"role": "user", "content": "no result"},
            ],
            "without tool_result",
        ),
        ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope"}]}], "unexpected tool_use_id"),
        (
            [  # one id in two turns: the real API answers "messages.3.content.0: `tool_use` ids must be unique"
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "look", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "look", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ],
            "messages.3.content.0: `tool_use` ids must be unique",
        ),
        ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "non-empty"),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}}
                    ],
                }
            ],
            "media_type",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)
                    ],
                }
            ],
            "maximum of 4",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "5m"}},
                        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                    ],
                }
            ],
            "ttl='1h'",
        ),
    ],
)
async def test_fake_rejects_what_the_api_rejects(fake, messages, complaint):
    fake.reply("never")
    client = anthropic.AsyncAnthropic(api_key="k", base_url=fake.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=messages)
    assert complaint in str(caught.value)
    assert list(fake.script) == ["never"]  # a rejected request does not use up a scripted reply


async def test_fake_default_reply_and_empty_script(fake_anthropic):
    fake = fake_anthropic
    model = model_for(fake)
    with pytest.raises(ModelError, match="no reply left") as caught:
        await model.complete("sys", [Message.user("hi")])
    assert caught.value.status == 400
    fake.default = lambda body: text(f"you said {body['messages'][-1]['content'][0]['text']}")
    assert (await model.complete("sys", [Message.user("hi")])).message.text() == "you said hi"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def request_body(history, ttl="1h"):
    mark = {"type": "ephemeral", "ttl": ttl}
    return {
        "model": "m",
        "system": [{"type": "text", "text": "S" * 400, "cache_control": mark}],
        "messages": [
            {
                "role": "user",
                "content": [
                    dict({"type": "text", "text": t}, **({"cache_control": mark} if i == len(history) - 1 else {}))
                ],
            }
            for i, t in enumerate(history)
        ],
    }


def test_prompt_cache_reads_writes_and_expires():
    clock = Clock()
    cache = PromptCache(clock=clock)
    first = cache.account("m", cacheable_blocks(request_body(["a" * 400])))
    assert first[1] == 0 and first[2] > 0 and first[3] == {"1h": first[2]}
    clock.now += 3000  # 50 minutes: a 1 h entry is still there
    second = cache.account("m", cacheable_blocks(request_body(["a" * 400, "b" * 400])))
    assert second[1] == first[2]  # everything waking 1 wrote is read
    assert second[2] > 0  # and the new tail is written
    clock.now += 3601  # past the TTL of everything: all written again
    third = cache.account("m", cacheable_blocks(request_body(["a" * 400, "b" * 400])))
    assert third[1] == 0 and third[2] == second[1] + second[2]
    # Another model shares nothing.
    assert cache.account("other", cacheable_blocks(request_body(["a" * 400])))[1] == 0


def test_prompt_cache_5m_ttl_and_minimum_length():
    clock = Clock()
    cache = PromptCache(clock=clock)
    cache.account("m", cacheable_blocks(request_body(["a"], ttl="5m")))
    clock.now += 301
    assert cache.account("m", cacheable_blocks(request_body(["a"], ttl="5m")))[1] == 0  # expired after 5 minutes
    small = PromptCache(min_tokens=10_000, clock=clock)
    assert small.account("m", cacheable_blocks(request_body(["a"])))[2] == 0  # too short to cache
    assert small.account("m", cacheable_blocks(request_body(["a"])))[1] == 0


def test_prompt_cache_looks_back_at_most_lookback_blocks():
    clock = Clock()
    short_sight, far_sight = PromptCache(lookback=2, clock=clock), PromptCache(lookback=None, clock=clock)
    for cache in (short_sight, far_sight):
        cache.account("m", cacheable_blocks(request_body(["a" * 40])))
    # Five blocks later the old history breakpoint is out of a 2-block lookback:
    # only the system prompt (its own breakpoint) is read.
    longer = cacheable_blocks(request_body(["a" * 40, "b", "c", "d", "e", "f"]))
    system_tokens, first_message_tokens = longer[0][1], longer[1][1]
    assert short_sight.account("m", longer)[1] == system_tokens
    assert far_sight.account("m", longer)[1] == system_tokens + first_message_tokens


def test_the_fake_counts_an_image_by_its_pixels():
    """As the API bills it: width x height / 750 tokens, at most ~1600 (bigger ones are scaled down first);
    inside a tool result too, where the base64 text must not be counted as words."""
    from soulstack.fakes.anthropic_api import IMAGE_TOKENS, estimate_tokens, image_tokens
    from soulstack.fakes.soul_body import JPEG, QVGA_JPEG

    def block(data: bytes) -> dict:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/jpeg", "data": base64.b64encode(data).decode()},
        }

    assert image_tokens(block(QVGA_JPEG)) == 103  # 320 x 240, what the StackChan's camera sends
    assert image_tokens(block(JPEG)) == 1  # 8 x 8
    png_header = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + (4000).to_bytes(4, "big") + (3000).to_bytes(4, "big")
    assert image_tokens(block(png_header)) == IMAGE_TOKENS  # a 12 MP photo is scaled down to the most an image costs
    assert image_tokens(block(b"not an image")) == IMAGE_TOKENS  # unreadable: counted as the most
    result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "You see:"}, block(QVGA_JPEG)],
    }
    assert 103 < estimate_tokens(result) < 103 + 40


async def test_the_fake_accepts_a_tool_result_whose_content_is_a_string(fake):
    # The real API takes `content` as a string or a list of blocks; the fake once answered 500 to a string.
    fake.reply("Noted.")
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url)
    reply = await client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=100,
        messages=[
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "look", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a desk"}]},
        ],
        tools=[{"name": "look", "description": "See.", "input_schema": {"type": "object"}}],
    )
    await client.close()
    assert reply.content[0].text == "Noted."
    assert fake.bodies[0]["messages"][2]["content"][0]["content"] == "a desk"
