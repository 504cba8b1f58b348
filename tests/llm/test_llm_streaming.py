"""Streamed model calls through the real SDKs against the fakes: the listener hears the text as it
forms and each block once complete, the Reply (usage included) is the one a whole answer gave, and a
stream that breaks off fails honestly: retried when nothing was heard yet, final once something was."""

import pytest

from soulstack.llm.anthropic import AnthropicModel
from soulstack.llm.openai import OpenAIModel
from soulstack.llm.providers import complete_with_retry
from soulstack.llm.streaming import BlockDone, StreamBroken, TextDelta
from soulstack.llm.types import Message, ModelError, TextBlock, ToolCall
from soulstack.fakes import anthropic_api, openai_api
from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.openai_api import FakeOpenAI
from soulstack.fakes.scripted_server import steered


def anthropic_for(fake):
    return AnthropicModel("claude-sonnet-5-5", api_key="k", base_url=fake.base_url, env={})


def openai_for(fake):
    return OpenAIModel("llama3.1", base_url=fake.base_url + "/v1", env={})


PROVIDERS = {
    "anthropic": (
        FakeAnthropic,
        anthropic_for,
        lambda: anthropic_api.tool_use("speak", {"text": "Hi, Ana!"}, id="call_1", text="Hello there. How are you?"),
    ),
    "openai": (
        FakeOpenAI,
        openai_for,
        lambda: openai_api.tool_call("speak", {"text": "Hi, Ana!"}, id="call_1", text="Hello there. How are you?"),
    ),
}


async def no_sleep(_seconds):
    return None


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_listener_hears_text_as_it_forms_then_each_block_and_the_reply_is_unchanged(provider):
    fake_class, model_for, reply = PROVIDERS[provider]
    async with fake_class() as fake:
        fake.reply(reply(), reply())
        heard = []
        streamed = await model_for(fake).complete("sys", [Message.user("hi")], on_stream=heard.append)
        whole = await model_for(fake).complete("sys", [Message.user("hi")])
    deltas = [e.text for e in heard if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Hello there. How are you?"  # piece by piece
    done = [e.block for e in heard if isinstance(e, BlockDone)]
    assert done == [TextBlock("Hello there. How are you?"), ToolCall("call_1", "speak", {"text": "Hi, Ana!"})]
    assert heard.index(next(e for e in heard if isinstance(e, BlockDone))) > heard.index(
        next(e for e in heard if isinstance(e, TextDelta) and e.text)
    )  # the text block ends after its text
    assert streamed.message == whole.message and streamed.stop_reason == whole.stop_reason == "tool_use"
    assert streamed.usage == whole.usage and streamed.usage.output_tokens > 0 and streamed.usage.input_tokens > 0
    assert fake.bodies[0]["stream"] is True


async def test_anthropic_cache_usage_is_read_from_the_stream():
    async with FakeAnthropic() as fake:
        fake.reply("One.", "Two.")
        model = anthropic_for(fake)
        history = [Message.user("a long enough history " * 50)]
        first = await model.complete("sys", history, cache=True, on_stream=lambda e: None)
        second = await model.complete("sys", history, cache=True, on_stream=lambda e: None)
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert [u["cache_read_input_tokens"] for u in fake.usages] == [0, second.usage.cache_read_tokens]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_cut_before_any_text_is_retried_as_before(provider):
    fake_class, model_for, reply = PROVIDERS[provider]
    async with fake_class() as fake:
        fake.reply(steered(reply(), cut_after=1), reply())
        heard = []
        result = await complete_with_retry(
            model_for(fake), "sys", [Message.user("hi")], sleep=no_sleep, on_stream=heard.append
        )
    assert len(fake.requests) == 2  # the broken first try was retried
    assert result.message.text() == "Hello there. How are you?"
    assert not any(isinstance(e, StreamBroken) for e in heard)
    assert "".join(e.text for e in heard if isinstance(e, TextDelta)) == "Hello there. How are you?"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_cut_midway_fails_without_a_retry_and_says_so(provider):
    fake_class, model_for, reply = PROVIDERS[provider]
    async with fake_class() as fake:
        fake.reply(steered(reply(), cut_after=4), reply())
        heard = []
        with pytest.raises(ModelError) as failure:
            await complete_with_retry(
                model_for(fake), "sys", [Message.user("hi")], sleep=no_sleep, on_stream=heard.append
            )
    assert len(fake.requests) == 1  # a second try would tell the listener the same words again
    assert not failure.value.retryable and "broke off midway" in str(failure.value)
    partial = "".join(e.text for e in heard if isinstance(e, TextDelta))
    assert partial and "Hello there. How are you?".startswith(partial) and partial != "Hello there. How are you?"
    assert isinstance(heard[-1], StreamBroken)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_without_a_listener_a_cut_stream_is_retried(provider):
    fake_class, model_for, reply = PROVIDERS[provider]
    async with fake_class() as fake:
        fake.reply(steered(reply(), cut_after=4), reply())
        result = await complete_with_retry(model_for(fake), "sys", [Message.user("hi")], sleep=no_sleep)
    assert len(fake.requests) == 2 and result.message.tool_calls()[0].input == {"text": "Hi, Ana!"}
