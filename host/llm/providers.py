"""Which model the soul or the flock talks to, and calling it with retries.

`choose_provider` picks from the environment, `make_model` builds the model,
`complete_with_retry` rides out rate limits and overloads. The brainstem (no
model at all) lives in `host/llm/brainstem.py`; it is built there, not here.
"""

import asyncio
import logging
import os

from soulstack.llm.types import ModelError, Reply

log = logging.getLogger(__name__)

PROVIDERS = ("anthropic", "amazon-bedrock", "openai", "brainstem")


def choose_provider(explicit: str | None = None, env=None) -> str:
    """The provider to use: the explicit choice if given, else anthropic when
    ANTHROPIC_API_KEY is set, else openai when OPENAI_BASE_URL is set, else brainstem."""
    env = os.environ if env is None else env
    if explicit:
        if explicit not in PROVIDERS:
            raise ValueError(f"model.provider must be one of {', '.join(PROVIDERS)}, not {explicit!r}")
        return explicit
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("OPENAI_BASE_URL"):
        return "openai"
    return "brainstem"


def default_model_id(provider: str) -> str:
    if provider == "anthropic":
        from soulstack.llm.anthropic import DEFAULT_MODEL
    elif provider == "amazon-bedrock":
        from soulstack.llm.bedrock import DEFAULT_MODEL
    elif provider == "openai":
        from soulstack.llm.openai import DEFAULT_MODEL
    else:
        raise ValueError(f"no default model id for provider {provider!r}")
    return DEFAULT_MODEL


def make_model(provider: str, model_id: str | None = None, **options):
    """Build the model for `provider` ("anthropic" or "openai"). `options` go to
    the model's constructor (api_key, base_url, timeout_s, env; for anthropic
    also cache_ttl and thinking). A missing API key raises ValueError."""
    if provider == "anthropic":
        from soulstack.llm.anthropic import DEFAULT_MODEL, AnthropicModel

        return AnthropicModel(model_id or DEFAULT_MODEL, **options)
    if provider == "amazon-bedrock":
        from soulstack.llm.bedrock import DEFAULT_MODEL, BedrockModel

        return BedrockModel(model_id or DEFAULT_MODEL, **options)
    if provider == "openai":
        from soulstack.llm.openai import DEFAULT_MODEL, OpenAIModel

        env = options.get("env") or os.environ
        if not model_id and not (options.get("base_url") or env.get("OPENAI_BASE_URL")):
            # The default id names a local model; sent to OpenAI itself it can only fail.
            raise ValueError(
                f"set OPENAI_BASE_URL to your OpenAI-compatible server (e.g. http://127.0.0.1:11434/v1 for Ollama), "
                f"or model.id to an OpenAI model; the default {DEFAULT_MODEL!r} is for local servers"
            )
        return OpenAIModel(model_id or DEFAULT_MODEL, **options)
    if provider == "brainstem":
        raise ValueError("the brainstem is not a language model: build it with soulstack.llm.brainstem")
    raise ValueError(f"unknown model provider {provider!r}; use one of {', '.join(PROVIDERS)}")


async def complete_with_retry(
    model,
    system: str,
    messages: list,
    tools: list | None = None,
    *,
    tool_choice: str | None = None,
    max_tokens: int = 4096,
    cache: bool | str = False,
    attempts: int = 3,
    backoff_s: float = 2.0,
    max_backoff_s: float = 60.0,
    sleep=asyncio.sleep,
    on_stream=None,
    on_retry=None,
) -> Reply:
    """`model.complete(...)`, tried up to `attempts` times while the error is
    retryable (429, 5xx, 529, timeouts, refused connections), waiting
    backoff_s, 2*backoff_s, 4*backoff_s... between tries, or longer when the
    server's Retry-After asks for it (capped at max_backoff_s either way). A non-retryable error, or the last one, is raised as it came.
    `sleep` is a seam so tests need not wait. `on_stream` goes to the model (soulstack.llm.streaming);
    a call that broke off after it heard part of the reply fails without a retry. `on_retry(error)`
    hears of each failure that will be retried, so a caller can say so while it waits."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    listening = {"on_stream": on_stream} if on_stream else {}  # models that cannot stream are called as before
    for attempt in range(1, attempts + 1):
        try:
            return await model.complete(
                system, messages, tools, tool_choice=tool_choice, max_tokens=max_tokens, cache=cache, **listening
            )
        except ModelError as err:
            if not err.retryable or attempt == attempts:
                raise
            # The server's own Retry-After wins over our guess when it asks for longer.
            delay = min(max_backoff_s, max(backoff_s * 2 ** (attempt - 1), err.retry_after_s or 0))
            log.warning(
                "%s call failed (%s); try %d of %d in %.1f s", model.provider, err, attempt + 1, attempts, delay
            )
            if on_retry is not None:
                on_retry(err)
            await sleep(delay)
    raise AssertionError("unreachable")
