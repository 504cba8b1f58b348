"""OpenAIModel through the real openai SDK against the fake Chat Completions API."""

import base64
import json

import openai
import pytest

from soulstack.llm.openai import OpenAIModel
from soulstack.llm.prices import cost_usd
from soulstack.llm.types import (
    ImageBlock,
    Message,
    ModelError,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from soulstack.fakes.openai_api import FakeOpenAI, completion, error, text, tool_call

JPEG = base64.b64encode(b"\xff\xd8\xff\xe0fake-jpeg").decode()
LOOK = Tool(
    "look", "See through the body's camera.", {"type": "object", "properties": {"question": {"type": "string"}}}
)
SPEAK = Tool("speak", "Say something aloud.", {"type": "object", "properties": {"text": {"type": "string"}}})


@pytest.fixture
async def fake():
    async with FakeOpenAI() as server:
        yield server


def model_for(fake, **options):
    return OpenAIModel("llama3.1", base_url=fake.base_url + "/v1", env={}, **options)


async def test_text_reply_and_request_shape(fake):
    fake.reply("Hello there.")
    reply = await model_for(fake).complete("You are a robot.", [Message.user("hi")], max_tokens=200)
    assert reply.message.text() == "Hello there." and reply.stop_reason == "end_turn"
    assert reply.model == "llama3.1"
    body = fake.bodies[0]
    assert body["messages"] == [{"role": "system", "content": "You are a robot."}, {"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 200 and body["model"] == "llama3.1"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}  # usage comes in the last chunk
    assert fake.requests[0].headers["authorization"] == "Bearer not-needed"


async def test_tool_call_round_trip_with_image_result(fake):
    fake.reply(tool_call("look", {"question": "who?"}, id="call_1", text="Looking."), "A person smiles.")
    model = model_for(fake)
    history = [Message.user("someone is here")]
    first = await model.complete("sys", history, [LOOK, SPEAK])
    assert first.stop_reason == "tool_use"
    assert first.message.text() == "Looking."
    assert first.message.tool_calls() == [ToolCall("call_1", "look", {"question": "who?"})]

    history += [
        first.message,
        Message("user", [ToolResult("call_1", [TextBlock("a photo"), ImageBlock(JPEG)]), TextBlock("also: hi")]),
    ]
    second = await model.complete("sys", history, [LOOK, SPEAK])
    assert second.message.text() == "A person smiles."
    sent = fake.bodies[1]
    assert sent["tools"][0] == {
        "type": "function",
        "function": {"name": "look", "description": LOOK.description, "parameters": LOOK.input_schema},
    }
    assistant, tool, after = sent["messages"][2:5]
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "look", "arguments": json.dumps({"question": "who?"})},
        }
    ]
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "a photo"}
    # The image a tool returned cannot ride in a tool message: it follows as a user message.
    assert after["role"] == "user"
    assert {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}"}} in after["content"]
    assert {"type": "text", "text": "also: hi"} in after["content"]


async def test_error_result_and_user_image(fake):
    fake.reply("ok")
    history = [
        Message.user("look"),
        Message("assistant", [ToolCall("c1", "look", {})]),
        Message("user", [ToolResult("c1", [TextBlock("your body did not respond")], is_error=True)]),
        Message("user", [TextBlock("what is this?"), ImageBlock(JPEG, "image/png")]),
    ]
    await model_for(fake).complete("sys", history, [LOOK])
    messages = fake.bodies[0]["messages"]
    assert messages[2]["content"] is None and messages[2]["tool_calls"][0]["id"] == "c1"
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "error: your body did not respond"}
    assert messages[4]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_forced_tool_choice(fake):
    fake.reply(tool_call("speak", {"text": "hi"}))
    reply = await model_for(fake).complete("sys", [Message.user("talk")], [LOOK, SPEAK], tool_choice="speak")
    assert fake.bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "speak"}}
    assert reply.message.tool_calls()[0].input == {"text": "hi"}


async def test_several_calls_unparseable_arguments_and_stop_quirk(fake):
    fake.reply(completion(None, [("look", {}), {"name": "speak", "arguments": "{not json"}], finish_reason="stop"))
    reply = await model_for(fake).complete("sys", [Message.user("x")], [LOOK, SPEAK])
    calls = reply.message.tool_calls()
    assert [c.name for c in calls] == ["look", "speak"]
    assert calls[1].input == {"_unparsed_arguments": "{not json"}
    assert reply.stop_reason == "tool_use"


async def test_reasoning_content_becomes_thinking(fake):
    fake.reply(completion("4", reasoning="2 plus 2 is 4"))
    reply = await model_for(fake).complete("sys", [Message.user("2+2?")])
    assert reply.message.content[0] == ThinkingBlock("2 plus 2 is 4")
    assert reply.message.text() == "4"


async def test_usage_maps_cached_tokens(fake):
    fake.reply(
        text(
            "hi",
            usage={
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "total_tokens": 1050,
                "prompt_tokens_details": {"cached_tokens": 800},
            },
        )
    )
    reply = await model_for(fake).complete("sys", [Message.user("hi")])
    assert reply.usage.input_tokens == 200
    assert reply.usage.cache_read_tokens == 800
    assert reply.usage.output_tokens == 50 and reply.usage.cache_write_tokens == 0


async def test_reasoning_model_gets_max_completion_tokens(fake):
    fake.reply("thought about it")
    model = OpenAIModel("gpt-5-mini", api_key="sk", base_url=fake.base_url + "/v1", env={})
    reply = await model.complete("sys", [Message.user("hi")], max_tokens=900)
    assert reply.message.text() == "thought about it"
    assert "max_tokens" in fake.bodies[0] and fake.usages[0] is None  # refused
    assert fake.bodies[1]["max_completion_tokens"] == 900 and "max_tokens" not in fake.bodies[1]


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_retryable_errors(fake, status):
    fake.reply(error(status))
    with pytest.raises(ModelError) as caught:
        await model_for(fake).complete("sys", [Message.user("hi")])
    assert caught.value.status == status and caught.value.retryable
    assert len(fake.requests) == 1


async def test_bad_request_is_not_retryable(fake):
    fake.reply(error(400, "model 'nope' not found, try pulling it first"))
    with pytest.raises(ModelError) as caught:
        await model_for(fake).complete("sys", [Message.user("hi")])
    assert caught.value.status == 400 and not caught.value.retryable
    assert "try pulling it first" in str(caught.value)


async def test_unreachable_server_is_retryable():
    async with FakeOpenAI() as gone:
        url = gone.base_url
    with pytest.raises(ModelError) as caught:
        await OpenAIModel("llama3.1", base_url=url + "/v1", env={}, timeout_s=5).complete("s", [Message.user("x")])
    assert caught.value.retryable and caught.value.status == 0


async def test_base_url_and_key_from_environment(fake):
    fake.reply("from env")
    env = {"OPENAI_BASE_URL": fake.base_url + "/v1", "OPENAI_API_KEY": "sk-env"}
    reply = await OpenAIModel("llama3.1", env=env).complete("sys", [Message.user("hi")])
    assert reply.message.text() == "from env"
    assert fake.requests[0].headers["authorization"] == "Bearer sk-env"


# --- the fake itself, through the SDK: streaming and /v1/models, which other engineers use ---
async def test_fake_streams_text_tool_calls_and_usage(fake):
    fake.reply(completion("Hi!", [("look", {"question": "who?"})]))
    client = openai.AsyncOpenAI(api_key="k", base_url=fake.base_url + "/v1", max_retries=0)
    stream = await client.chat.completions.create(
        model="llama3.1",
        messages=[{"role": "user", "content": "hello"}],
        tools=[{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}],
        stream=True,
        stream_options={"include_usage": True},
    )
    words, arguments, finish, usage = "", "", None, None
    async for chunk in stream:  # the fake's SSE chunks, parsed by the SDK
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            words += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                arguments += call.function.arguments or ""
            finish = choice.finish_reason or finish
    assert words == "Hi!" and json.loads(arguments) == {"question": "who?"}
    assert finish == "tool_calls" and usage.prompt_tokens > 0
    assert fake.requests[0].raw.count(b'"stream": true') + fake.requests[0].raw.count(b'"stream":true') == 1


async def test_fake_lists_models_and_rejects_orphan_tool_messages(fake_openai):
    client = openai.AsyncOpenAI(api_key="k", base_url=fake_openai.base_url + "/v1", max_retries=0)
    models = await client.models.list()
    assert [m.id for m in models.data] == ["llama3.1"]
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(
            model="llama3.1", messages=[{"role": "tool", "tool_call_id": "x", "content": "?"}]
        )


async def test_fake_holds_top_logprobs_to_openais_limits(fake_openai):
    """0-20 alternatives, and only with logprobs: Jev's logprobs backend asks for 20."""
    client = openai.AsyncOpenAI(api_key="k", base_url=fake_openai.base_url + "/v1", max_retries=0)
    asked = {"model": "llama3.1", "messages": [{"role": "user", "content": "A or B?"}], "max_tokens": 1}
    for wrong, words in (({"logprobs": True, "top_logprobs": 21}, "between 0 and 20"), ({"top_logprobs": 5}, "true")):
        with pytest.raises(openai.BadRequestError, match=words):
            await client.chat.completions.create(**asked, **wrong)
    fake_openai.reply(completion("A", top_logprobs=[("A", -0.1), ("B", -2.4)]))
    answer = await client.chat.completions.create(**asked, logprobs=True, top_logprobs=20)
    assert [t.token for t in answer.choices[0].logprobs.content[0].top_logprobs] == ["A", "B"]


async def test_a_server_that_refuses_stream_options_is_asked_again_without_and_its_cost_is_unknown():
    async with FakeOpenAI(refuses_stream_options=True) as fake:
        fake.reply("first", "second")
        model = model_for(fake)
        reply = await model.complete("sys", [Message.user("hi")])
        assert reply.message.text() == "first" and reply.usage.reported is False
        assert "stream_options" in fake.bodies[0] and fake.usages[0] is None  # refused, as Groq does
        assert "stream_options" not in fake.bodies[1]
        again = await model.complete("sys", [Message.user("hi again")])  # remembered: asked once, not every call
        assert again.message.text() == "second" and len(fake.bodies) == 3 and "stream_options" not in fake.bodies[2]
    # No usage reported: the cost is unknown, never a made-up $0, even for a model with a known price.
    priced = "claude-sonnet-5-5"  # a model with a known price, served through an OpenAI-compatible gateway
    assert cost_usd(priced, again.usage) is None
    assert cost_usd(priced, Usage(input_tokens=10)) is not None


async def test_a_server_that_takes_stream_options_reports_usage(fake):
    fake.reply("hi")
    reply = await model_for(fake).complete("sys", [Message.user("hi")])
    assert reply.usage.reported is True and reply.usage.output_tokens > 0
    assert fake.bodies[0]["stream_options"] == {"include_usage": True}
