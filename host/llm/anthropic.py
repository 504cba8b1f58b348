"""Claude through Anthropic's Messages API, with the real `anthropic` SDK.

Prompt caching (`cache=True`) puts up to four `cache_control` breakpoints,
all with the same TTL (`cache_ttl`, "1h" by default):

1. the system prompt block,
2. the last tool definition (the cache orders tools before the system prompt,
   so this breakpoint covers every tool),
3. the end of the history: the last block of the final message, so what this
   call sends new (tool results, a waking's snapshot) is written once, at the
   write price, and the next call reads it — left unmarked it would be sent at
   the full input price now and written anyway by the next call;
4. the end of the message before it (usually the model's last reply), where
   the previous call's entry lies within the API's 20-block lookback even
   when the final message holds many blocks.
A final message that holds an image (what look saw) is left unmarked and 3
and 4 move one message back: the soul shows a past waking's picture as a
placeholder, so a cache entry ending in the picture would never be read.

The soul's history only grows (its waking snapshot, volatile as it is, stays
in the history), so each call's request repeats the previous one's bytes up to
its last breakpoint, and the cache serves them as a read instead of
re-processing (and re-paying) them. Breakpoint markers themselves are not part
of the cached content, so moving them forward does not break the shared
prefix. A 1 h TTL outlives the soul's usual sleep; a 5 m TTL expired between
every pair of wakings and cost a soul before ours $250 a day (docs/lessons.md).
"""

import logging
import os

import anthropic

from soulstack.llm.streaming import STREAM_BROKE, BlockDone, Relay, TextDelta
from soulstack.llm.types import (
    Block,
    ImageBlock,
    Message,
    ModelError,
    Reply,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    retry_after_s,
)

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-5-5"
STOP_REASONS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


class AnthropicModel:
    """A `Model` backed by Claude. `thinking` is None (send nothing: the
    model's default — Claude 5 and later think adaptively, at effort high on
    Sonnet 5.5), "off" (the least thinking the model allows, see
    `least_thinking`), a level "low" | "medium" | "high" | "xhigh" | "max" (an
    effort on Claude 5 and later, a token budget before), a token budget (int),
    a thinking type ("adaptive", "between_tools", "disabled") or the API's
    thinking dict, sent as given."""

    provider = "anthropic"

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        cache_ttl: str = "1h",
        thinking=None,
        timeout_s: float = 120.0,
        env=None,
    ):
        env = os.environ if env is None else env
        if cache_ttl not in ("5m", "1h"):
            raise ValueError(f'cache_ttl must be "5m" or "1h", not {cache_ttl!r}')
        self.model_id = model_id
        self.cache_ttl = cache_ttl
        self.thinking = thinking_params(thinking, model_id)
        # A model that thinks refuses a forced tool choice with a 400: ask those with auto from
        # the start (the prompt says which tool to call) instead of paying a 400 per call.
        self.forces_tools = not thinks(self.thinking, model_id)
        self.client = self.make_client(env, api_key, base_url, timeout_s)

    def make_client(self, env, api_key, base_url, timeout_s):
        api_key = api_key or env.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise ValueError("no Anthropic API key: set ANTHROPIC_API_KEY")
        self.base_url = base_url or env.get("ANTHROPIC_BASE_URL") or None
        # Retries are ours (soulstack.llm.providers.complete_with_retry), so the SDK makes one attempt.
        return anthropic.AsyncAnthropic(api_key=api_key, base_url=self.base_url, timeout=timeout_s, max_retries=0)

    async def complete(
        self,
        system: str,
        messages: list,
        tools: list | None = None,
        *,
        tool_choice: str | None = None,
        max_tokens: int = 4096,
        cache: bool | str = False,
        cache_final_message: bool = True,
        on_stream=None,
    ) -> Reply:
        """One call, streamed. `cache` True caches at the model's TTL; "5m" caches the history for five
        minutes only, system and tools at the model's TTL: for a turn that no request after it repeats
        (the night's consolidation, folded right after), whose writes cost 1.25x instead of 2x.
        `cache_final_message=False` leaves the final message out of the cache: a
        one-off line after the history (a keep-warm refresh) that no later request repeats.
        `on_stream` hears the reply as it forms (soulstack.llm.streaming)."""
        choice = tool_choice if self.forces_tools else None  # None: the model chooses (auto)
        params = self.request(
            system,
            messages,
            tools,
            tool_choice=choice,
            max_tokens=max_tokens,
            cache=cache,
            cache_final_message=cache_final_message,
        )
        relay = Relay(on_stream)
        try:
            response = await self.send(params, relay)
        except ModelError as err:
            # A model we did not know to think refused the forced choice (400).
            # Ask again letting it choose, and from now on ask it that way; the
            # caller sees from the reply whether it called the tool.
            if not (choice and err.status == 400 and refuses_forced_tool(str(err))):
                raise
            log.info("%s refuses a forced tool choice; asking it with tool_choice auto from now on", self.model_id)
            self.forces_tools = False
            response = await self.send(dict(params, tool_choice={"type": "auto"}), relay)
        return to_reply(response)

    async def aclose(self):
        """Close the HTTP connections (the process's end; tests)."""
        await self.client.close()

    async def send(self, params, relay: Relay):
        """Stream one request; the SDK assembles the final message (usage included) from the events."""
        try:
            async with self.client.messages.stream(**params) as stream:
                async for event in stream:
                    relay_event(event, relay)
                return await stream.get_final_message()
        except anthropic.APIStatusError as err:  # also an `error` event in the middle of the stream
            raise relay.broken(
                ModelError(
                    f"anthropic {err.status_code}: {error_text(err)}",
                    err.status_code,
                    retryable(err.status_code),
                    retry_after_s(err.response.headers),
                )
            ) from err
        except anthropic.APIConnectionError as err:  # includes timeouts
            raise relay.broken(ModelError(f"anthropic unreachable at {self.client.base_url}: {err}", 0, True)) from err
        except anthropic.AnthropicError as err:
            raise relay.broken(ModelError(f"anthropic: {err}", 0, False)) from err
        except STREAM_BROKE as err:  # the connection died while the reply streamed
            raise relay.broken(ModelError(f"anthropic stream broke: {err!r}", 0, True)) from err

    def request(
        self, system, messages, tools=None, *, tool_choice=None, max_tokens=4096, cache=False, cache_final_message=True
    ) -> dict:
        """The Messages API request for one call (pure: tests and tools read it)."""
        mark = {"type": "ephemeral", "ttl": self.cache_ttl} if cache else None
        # cache="5m": the history only for minutes (system and tools as usual): a turn no later request repeats.
        history_mark = {"type": "ephemeral", "ttl": cache} if isinstance(cache, str) else mark
        params = {"model": self.model_id, "max_tokens": max_tokens, "messages": [to_api_message(m) for m in messages]}
        if system:
            params["system"] = [dict({"type": "text", "text": system}, **({"cache_control": mark} if mark else {}))]
        if tools:
            params["tools"] = [to_api_tool(tool) for tool in tools]
            if mark:
                params["tools"][-1]["cache_control"] = mark
        if tool_choice:
            params["tool_choice"] = {"type": "tool", "name": tool_choice}
        params.update(self.thinking)
        budget = params.get("thinking", {}).get("budget_tokens", 0)
        if budget >= max_tokens:
            params["max_tokens"] = budget + max_tokens  # max_tokens counts thinking too: keep room to answer
        if history_mark:
            mark_history(params["messages"] if cache_final_message else params["messages"][:-1], history_mark)
        return params


def refuses_forced_tool(error_message: str) -> bool:
    """Whether a 400 says forced tool use cannot be combined with thinking
    (the API words it as "Thinking may not be enabled when tool_choice forces tool use")."""
    text = error_message.lower()
    return "tool_choice" in text and ("thinking" in text or "forc" in text)


def mark_history(api_messages, mark):
    """Put the history breakpoints on the final message and on the one before it -- unless the final
    message holds an image: then on the two before it, so the image is sent once, uncached (1x input),
    rather than written (2x) and never read: the soul replaces the images of a past waking with a
    placeholder, so the next call that could read it sends something else there."""
    last = len(api_messages) - (1 if api_messages and holds_image(api_messages[-1]) else 0)
    for api_message in api_messages[max(0, last - 2) : last]:
        # Thinking blocks cannot carry cache_control; any other block can.
        for block in reversed(api_message["content"]):
            if block["type"] not in ("thinking", "redacted_thinking"):
                block["cache_control"] = mark
                break


def holds_image(api_message) -> bool:
    """Whether an API message carries an image, itself or inside a tool result."""
    for block in api_message["content"]:
        inner = block.get("content") if block["type"] == "tool_result" else [block]
        if any(isinstance(part, dict) and part.get("type") == "image" for part in inner or ()):
            return True
    return False


THINKING_TYPES = ("adaptive", "between_tools", "disabled")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Claude 5 and later think adaptively by default and take an effort instead of a budget.
EFFORT_MODELS = ("claude-sonnet-5", "claude-opus-5", "claude-haiku-5", "claude-fable", "claude-mythos")
BUDGETS = {"low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768, "max": 65536}


# "off" per model family, most specific first. Thinking is billed as output (5x the input price)
# on every call, and sending nothing does not turn it off on Claude 5 and later: there it is on
# by default. Sonnet 5.5 refuses "disabled" and has "between_tools" (no thinking up front, only
# short notes between tool calls) as its lowest setting; Opus 5.5, Fable and Mythos cannot stop
# thinking, so the least of it is effort "low"; Sonnet 5, Opus 5 and Haiku 5.x accept "disabled".
# Models before Claude 5 do not think unless asked. (Anthropic's migration guides for each model.)
LEAST_THINKING = (
    ("claude-sonnet-5-5", {"thinking": {"type": "between_tools"}}),
    ("claude-opus-5-5", {"output_config": {"effort": "low"}}),
    ("claude-fable", {"output_config": {"effort": "low"}}),
    ("claude-mythos", {"output_config": {"effort": "low"}}),
    ("claude-sonnet-5", {"thinking": {"type": "disabled"}}),
    ("claude-opus-5", {"thinking": {"type": "disabled"}}),
    ("claude-haiku-5", {"thinking": {"type": "disabled"}}),
)


def least_thinking(model_id: str) -> dict:
    """The request fields that keep this model's thinking to the least it allows."""
    return next((dict(fields) for prefix, fields in LEAST_THINKING if model_id.startswith(prefix)), {})


def thinks(thinking: dict, model_id: str) -> bool:
    """Whether requests with these thinking fields make the model think (Claude 5 and later do by default)."""
    kind = (thinking.get("thinking") or {}).get("type")
    if kind:
        return kind != "disabled"
    return model_id.rpartition("anthropic.")[2].startswith(EFFORT_MODELS)  # Bedrock ids: [global.]anthropic.claude-...


def thinking_params(thinking, model_id: str) -> dict:
    """The request fields for the `thinking` option (see AnthropicModel)."""
    if thinking is None or thinking == "default":
        return {}
    if thinking == "off":
        return least_thinking(model_id)
    if thinking in EFFORTS:
        if model_id.startswith(EFFORT_MODELS):
            return {"output_config": {"effort": thinking}}
        thinking = BUDGETS[thinking]
    if isinstance(thinking, int) and not isinstance(thinking, bool) and thinking > 0:
        return {"thinking": {"type": "enabled", "budget_tokens": thinking}}  # models before Claude 5
    if thinking in THINKING_TYPES:
        return {"thinking": {"type": thinking}}
    if isinstance(thinking, dict) and "type" in thinking:
        return {"thinking": dict(thinking)}
    raise ValueError(
        f"thinking must be a token budget, one of {', '.join(THINKING_TYPES + EFFORTS)}, or the API's dict; not {thinking!r}"
    )


# --- our types -> the Messages API ------------------------------------------
def to_api_tool(tool: Tool) -> dict:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def to_api_message(message: Message) -> dict:
    content = [block for block in (to_api_block(b) for b in message.content) if block is not None]
    return {"role": message.role, "content": content}


def to_api_block(block):
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None  # the API rejects empty text
    if isinstance(block, ImageBlock):
        return {"type": "image", "source": {"type": "base64", "media_type": block.media_type, "data": block.data}}
    if isinstance(block, ToolCall):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResult):
        result = {"type": "tool_result", "tool_use_id": block.tool_call_id, "is_error": block.is_error}
        inner = [b for b in (to_api_block(b) for b in block.content) if b is not None]
        if inner:
            result["content"] = inner
        return result
    if isinstance(block, ThinkingBlock):
        if block.redacted:
            return {"type": "redacted_thinking", "data": block.signature}
        # Unsigned thinking came from another provider; Claude would reject it.
        if not block.signature:
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    raise TypeError(f"cannot send {type(block).__name__} to Anthropic")


# --- the Messages API -> our types ------------------------------------------
def relay_event(event, relay: Relay) -> None:
    """Pass on the text as it streams and each text or tool_use block once complete."""
    if event.type == "content_block_delta" and event.delta.type == "text_delta":
        relay(TextDelta(event.index, event.delta.text))
    elif event.type == "content_block_stop":
        block = event.content_block
        if block.type == "text":
            relay(BlockDone(event.index, TextBlock(block.text)))
        elif block.type == "tool_use":
            relay(BlockDone(event.index, ToolCall(block.id, block.name, dict(block.input or {}))))


def to_reply(response) -> Reply:
    blocks: list[Block] = []
    for block in response.content:
        if block.type == "text":
            blocks.append(TextBlock(block.text))
        elif block.type == "tool_use":
            blocks.append(ToolCall(block.id, block.name, dict(block.input or {})))
        elif block.type == "thinking":
            blocks.append(ThinkingBlock(block.thinking or "", block.signature or ""))
        elif block.type == "redacted_thinking":
            blocks.append(ThinkingBlock("", block.data, redacted=True))
        else:
            log.warning("ignoring a %s block from Anthropic", block.type)
    usage = response.usage
    return Reply(
        message=Message("assistant", blocks),
        stop_reason=STOP_REASONS.get(response.stop_reason, response.stop_reason or "end_turn"),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model=response.model,
    )


def retryable(status: int) -> bool:
    """429 (rate limit), 408/409 (the API's own advice), 5xx incl. 529 overloaded."""
    return status in (408, 409, 429) or status >= 500


def error_text(err) -> str:
    body = err.body if isinstance(err.body, dict) else {}
    detail = body["error"] if isinstance(body.get("error"), dict) else {}
    return detail.get("message") or err.message
