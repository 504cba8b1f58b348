"""Provider choice, model construction, retries with backoff, and prices."""

import pytest

from soulstack.llm.anthropic import AnthropicModel
from soulstack.llm.openai import OpenAIModel
from soulstack.llm.prices import DEFAULT_PRICES, cost_usd, price_for
from soulstack.llm.providers import choose_provider, complete_with_retry, make_model
from soulstack.llm.types import Message, ModelError, Usage, retry_after_s
from soulstack.fakes.anthropic_api import FakeAnthropic, error
from soulstack.fakes.openai_api import FakeOpenAI
from soulstack.fakes.openai_api import error as openai_error


@pytest.mark.parametrize(
    "explicit, env, expected",
    [
        (None, {}, "brainstem"),
        (None, {"ANTHROPIC_API_KEY": "k"}, "anthropic"),
        (None, {"OPENAI_BASE_URL": "http://localhost:11434/v1"}, "openai"),
        (None, {"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "http://x/v1"}, "anthropic"),
        (None, {"ANTHROPIC_API_KEY": "", "OPENAI_BASE_URL": "http://x/v1"}, "openai"),
        (None, {"OPENAI_API_KEY": "sk"}, "brainstem"),  # a key alone says nothing about where to go
        ("openai", {"ANTHROPIC_API_KEY": "k"}, "openai"),
        ("brainstem", {"ANTHROPIC_API_KEY": "k"}, "brainstem"),
        ("anthropic", {}, "anthropic"),
    ],
)
def test_choose_provider(explicit, env, expected):
    assert choose_provider(explicit, env) == expected


def test_choose_provider_rejects_unknown_names():
    with pytest.raises(ValueError, match="anthropic, amazon-bedrock, openai, brainstem"):
        choose_provider("gemini", {})


def test_make_model():
    model = make_model("anthropic", api_key="k", env={})
    assert isinstance(model, AnthropicModel) and model.provider == "anthropic"
    assert model.model_id == "claude-sonnet-5-5" and model.cache_ttl == "1h"
    assert make_model("anthropic", "claude-haiku-5-5", api_key="k", cache_ttl="5m", env={}).cache_ttl == "5m"
    local = make_model("openai", env={"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert isinstance(local, OpenAIModel) and local.model_id == "llama3.1"
    assert local.base_url == "http://127.0.0.1:11434/v1"
    with pytest.raises(ValueError, match="soulstack.llm.brainstem"):
        make_model("brainstem")
    with pytest.raises(ValueError, match="unknown model provider"):
        make_model("gemini")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        make_model("anthropic", env={})


class Sleeps(list):
    async def __call__(self, seconds):
        self.append(seconds)


@pytest.mark.parametrize("status", [429, 529, 500])
async def test_retry_then_success(status):
    async with FakeAnthropic() as fake:
        fake.reply(error(status), error(status), "finally")
        model = make_model("anthropic", api_key="k", base_url=fake.base_url, env={})
        sleeps = Sleeps()
        reply = await complete_with_retry(model, "sys", [Message.user("hi")], attempts=3, backoff_s=1.5, sleep=sleeps)
    assert reply.message.text() == "finally"
    assert sleeps == [1.5, 3.0]
    assert len(fake.requests) == 3
    assert fake.bodies[0] == fake.bodies[2]  # the same request each time


async def test_retry_gives_up_with_the_last_error():
    async with FakeAnthropic() as fake:
        fake.reply(error(529, "overloaded 1"), error(529, "overloaded 2"), "never sent")
        model = make_model("anthropic", api_key="k", base_url=fake.base_url, env={})
        sleeps = Sleeps()
        with pytest.raises(ModelError, match="overloaded 2") as caught:
            await complete_with_retry(model, "sys", [Message.user("hi")], attempts=2, backoff_s=1, sleep=sleeps)
    assert caught.value.retryable and caught.value.status == 529
    assert sleeps == [1] and len(fake.requests) == 2


async def test_non_retryable_raises_at_once():
    async with FakeOpenAI() as fake:
        fake.reply(openai_error(400, "bad tools"), "never sent")
        model = make_model("openai", base_url=fake.base_url + "/v1", env={})
        sleeps = Sleeps()
        with pytest.raises(ModelError, match="bad tools"):
            await complete_with_retry(model, "sys", [Message.user("hi")], sleep=sleeps)
    assert sleeps == [] and len(fake.requests) == 1


async def test_backoff_is_capped_and_arguments_pass_through():
    async with FakeOpenAI() as fake:
        fake.reply(*[openai_error(503)] * 4, "ok")
        model = make_model("openai", base_url=fake.base_url + "/v1", env={})
        sleeps = Sleeps()
        reply = await complete_with_retry(
            model, "sys", [Message.user("hi")], max_tokens=77, attempts=5, backoff_s=10, max_backoff_s=25, sleep=sleeps
        )
    assert reply.message.text() == "ok"
    assert sleeps == [10, 20, 25, 25]
    assert {body["max_tokens"] for body in fake.bodies} == {77}


def test_prices():
    assert price_for("claude-sonnet-5-5").cache_read == 0.10
    assert price_for("claude-sonnet-5").cache_read == 0.20
    assert price_for("claude-haiku-4-5-20251001").input == 1.00  # dated snapshot finds its family
    assert price_for("claude-sonnet-4-5-20250929").input == 3.00
    assert price_for("claude-opus-9-future").input == 4.00  # unknown Claude: newest of its family
    assert price_for("llama3.1") is None


@pytest.mark.parametrize(
    "model_id, family",
    [
        ("global.anthropic.claude-sonnet-5", "claude-sonnet-5"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("anthropic.claude-opus-4-5-v1:0", "claude-opus-4-5"),
        ("eu.anthropic.claude-sonnet-5-5-v1:0", "claude-sonnet-5-5"),
        ("claude-sonnet-5@20260101", "claude-sonnet-5"),
    ],
)
def test_bedrock_and_vertex_ids_are_priced_as_their_family(model_id, family):
    assert price_for(model_id) == DEFAULT_PRICES[family]


def test_ids_that_only_look_like_cloud_ids_keep_their_tags():
    assert price_for("llama3.1:8b") is None and price_for("anthropic.unknown-model") is None


def test_cost_usd():
    usage = Usage(input_tokens=2_000, output_tokens=1_000, cache_read_tokens=100_000, cache_write_tokens=10_000)
    # Sonnet 5.5: 2000*2 + 1000*10 + 100000*0.10 + 10000*4 (1h write) = 64000 per million
    assert cost_usd("claude-sonnet-5-5", usage, "1h") == pytest.approx(0.064)
    # 5m writes cost $2.50 instead of $4: 15000 less.
    assert cost_usd("claude-sonnet-5-5", usage, "5m") == pytest.approx(0.049)
    assert cost_usd("claude-opus-5-5", Usage(1_000_000, 0, 0, 0)) == pytest.approx(4.0)
    assert cost_usd("llama3.1", usage) is None  # no price known: unknown, never $0
    # Haiku 5.5 prices a whole request higher once its prompt passes 100k tokens.
    short = Usage(input_tokens=50_000, output_tokens=1_000)
    long = Usage(input_tokens=150_000, output_tokens=1_000)
    assert cost_usd("claude-haiku-5-5", short) == pytest.approx((50_000 * 0.10 + 1_000 * 0.50) / 1e6)
    assert cost_usd("claude-haiku-5-5", long) == pytest.approx((150_000 * 0.50 + 1_000 * 2.50) / 1e6)
    custom = {"claude-sonnet-5-5": price_for("claude-opus-5-5")}
    assert cost_usd("claude-sonnet-5-5", Usage(1_000_000), prices=custom) == pytest.approx(4.0)


def test_openai_without_a_server_or_model_id_says_what_to_set():
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        make_model("openai", env={})
    assert make_model("openai", env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}).model_id == "llama3.1"
    assert make_model("openai", "gpt-5-mini", env={"OPENAI_API_KEY": "k"}).model_id == "gpt-5-mini"


async def test_a_servers_retry_after_is_waited_for():
    """429/529 with Retry-After: wait what the server asked when that is longer than our own backoff
    (capped by max_backoff_s); a shorter one does not shorten ours. Both SDKs' errors carry it."""
    async with FakeAnthropic() as fake:
        fake.reply(
            error(429, headers={"retry-after": "7"}),
            error(529, headers={"retry-after": "0.5"}),
            error(429, headers={"retry-after": "600"}),
            "ok",
        )
        model = make_model("anthropic", api_key="k", base_url=fake.base_url, env={})
        sleeps = Sleeps()
        reply = await complete_with_retry(
            model, "sys", [Message.user("hi")], attempts=4, backoff_s=2, max_backoff_s=60, sleep=sleeps
        )
    assert reply.message.text() == "ok" and sleeps == [7, 4, 60]
    async with FakeOpenAI() as fake:
        fake.reply(openai_error(429, headers={"retry-after-ms": "2500"}), "ok")
        model = make_model("openai", base_url=fake.base_url + "/v1", env={})
        sleeps = Sleeps()
        await complete_with_retry(model, "sys", [Message.user("hi")], backoff_s=1, sleep=sleeps)
    assert sleeps == [2.5]


def test_retry_after_headers_are_read_as_seconds():
    assert retry_after_s({"retry-after": "3"}) == 3 and retry_after_s({"retry-after-ms": "250"}) == 0.25
    assert retry_after_s({}) is None and retry_after_s({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}) is None
    assert retry_after_s({"retry-after": "-1"}) is None
