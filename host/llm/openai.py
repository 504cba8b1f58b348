"""Any Chat Completions server (OpenAI, Ollama, llama.cpp, vLLM) with the real `openai` SDK.

Chat Completions differs from our types in three ways this module bridges:

- tool results are separate `tool` role messages, one per call, right after
  the assistant message that made the calls;
- a `tool` message carries text only, so an image a tool returned (the
  body's camera) follows as a user message with an `image_url` data URL;
- thinking is not sent back (no signed thinking exists here); a server's
  `reasoning_content` is read into a ThinkingBlock so the log can show it.

Usage: `prompt_tokens` counts cached tokens too, so input_tokens is the
uncached rest and cache_read_tokens is `prompt_tokens_details.cached_tokens`,
the same meaning as on the Anthropic side. Calls are streamed (with
`stream_options.include_usage`, so the last chunk carries the usage) and the
reply is assembled from the chunks (`Assembly`). Some servers refuse
`stream_options` (Groq, Mistral, Azure, Databricks: a 400 or 422 naming it);
from the first refusal on, this model streams without it, and a reply that
comes with no usage has an unknown cost (Usage.reported False), never $0.
"""

import json
import logging
import os
from typing import Any

import openai

from soulstack.llm.streaming import STREAM_BROKE, BlockDone, Relay, TextDelta
from soulstack.llm.types import (
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

# A model Ollama users commonly have pulled; any id the server knows works.
DEFAULT_MODEL = "llama3.1"
FINISH_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIModel:
    """A `Model` backed by a Chat Completions server. Local servers need no key;
    one is sent anyway ("not-needed") because the SDK insists on one."""

    provider = "openai"

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 300.0,
        env=None,
    ):
        env = os.environ if env is None else env
        self.model_id = model_id
        self.base_url = base_url or env.get("OPENAI_BASE_URL") or None
        self.client = openai.AsyncOpenAI(
            api_key=api_key or env.get("OPENAI_API_KEY") or "not-needed",
            base_url=self.base_url,
            timeout=timeout_s,
            max_retries=0,  # retries are ours: soulstack.llm.providers.complete_with_retry
        )
        self.usage_in_stream = True  # False once the server refused stream_options

    async def complete(
        self,
        system: str,
        messages: list,
        tools: list | None = None,
        *,
        tool_choice: str | None = None,
        max_tokens: int = 4096,
        cache: bool | str = False,  # servers cache prefixes on their own; nothing to mark
        on_stream=None,
    ) -> Reply:
        """One call, streamed; `on_stream` hears the reply as it forms (soulstack.llm.streaming)."""
        params = self.request(system, messages, tools, tool_choice=tool_choice, max_tokens=max_tokens)
        relay = Relay(on_stream)
        for _ in range(3):  # each refusal below is answered once
            try:
                return await self.send(params, relay)
            except ModelError as err:
                if not self.adapt(params, err):
                    raise
        return await self.send(params, relay)

    def adapt(self, params: dict, err: ModelError) -> bool:
        """Whether a refused request can be asked again in a form this server takes (and it is changed so)."""
        said = str(err)
        # Local servers know max_tokens; OpenAI's reasoning models take only max_completion_tokens.
        if err.status == 400 and "max_completion_tokens" in said and "max_tokens" in params:
            params["max_completion_tokens"] = params.pop("max_tokens")
            return True
        if err.status in (400, 422) and self.usage_in_stream and ("stream_options" in said or "include_usage" in said):
            log.warning(
                "%s refuses stream_options; streaming without it (the calls' costs are unknown "
                "when it reports no usage)",
                self.client.base_url,
            )
            self.usage_in_stream = False
            return True
        return False

    async def aclose(self):
        """Close the HTTP connections (the process's end; tests)."""
        await self.client.close()

    async def send(self, params, relay: Relay) -> Reply:
        try:
            options: dict[str, Any] = {"stream_options": {"include_usage": True}} if self.usage_in_stream else {}
            stream = await self.client.chat.completions.create(**params, stream=True, **options)
            assembly = Assembly(relay)
            async for chunk in stream:
                assembly.add(chunk)
            return assembly.reply()
        except openai.APIStatusError as err:
            raise relay.broken(
                ModelError(
                    f"openai-compatible {err.status_code}: {error_text(err)}",
                    err.status_code,
                    retryable(err.status_code),
                    retry_after_s(err.response.headers),
                )
            ) from err
        except openai.APIConnectionError as err:  # includes timeouts
            raise relay.broken(
                ModelError(f"openai-compatible server unreachable at {self.client.base_url}: {err}", 0, True)
            ) from err
        except openai.OpenAIError as err:
            raise relay.broken(ModelError(f"openai-compatible: {err}", 0, False)) from err
        except STREAM_BROKE as err:  # the connection died while the reply streamed
            raise relay.broken(ModelError(f"openai-compatible stream broke: {err!r}", 0, True)) from err

    def request(self, system, messages, tools=None, *, tool_choice=None, max_tokens=4096) -> dict:
        """The Chat Completions request for one call (pure: tests read it)."""
        api_messages = [{"role": "system", "content": system}] if system else []
        for message in messages:
            api_messages.extend(to_api_messages(message))
        params = {"model": self.model_id, "messages": api_messages, "max_tokens": max_tokens}
        if tools:
            params["tools"] = [to_api_tool(tool) for tool in tools]
        if tool_choice:
            params["tool_choice"] = {"type": "function", "function": {"name": tool_choice}}
        return params


# --- our types -> Chat Completions --------------------------------------------
def to_api_tool(tool: Tool) -> dict:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
    }


def data_url(image: ImageBlock) -> dict:
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def user_content(blocks):
    """Plain text when there is no image (what small local servers handle best), else parts."""
    if all(isinstance(b, TextBlock) for b in blocks):
        return "\n".join(b.text for b in blocks)
    return [{"type": "text", "text": b.text} if isinstance(b, TextBlock) else data_url(b) for b in blocks]


def to_api_messages(message: Message) -> list:
    if message.role == "assistant":
        text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock) and b.text)
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.input)}}
            for c in message.content
            if isinstance(c, ToolCall)
        ]
        said: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            said["tool_calls"] = calls
        elif not text:
            said["content"] = ""
        return [said]
    out: list[dict[str, Any]] = []
    images: list[TextBlock | ImageBlock] = []
    rest: list[TextBlock | ImageBlock] = []
    for block in message.content:
        if isinstance(block, ToolResult):
            texts = [b.text for b in block.content if isinstance(b, TextBlock)]
            pictures = [b for b in block.content if isinstance(b, ImageBlock)]
            words = "\n".join(texts) or ("(image follows)" if pictures else "(no output)")
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": block.tool_call_id,
                    "content": ("error: " if block.is_error else "") + words,
                }
            )
            if pictures:
                images.append(TextBlock(f"(the image returned by tool call {block.tool_call_id})"))
                images.extend(pictures)
        elif isinstance(block, (TextBlock, ImageBlock)) and not (isinstance(block, TextBlock) and not block.text):
            rest.append(block)
    following = images + rest
    if following:
        out.append({"role": "user", "content": user_content(following)})
    return out


# --- Chat Completions -> our types --------------------------------------------
class Assembly:
    """One streamed reply put together chunk by chunk: text (block 0), tool calls (blocks 1..),
    a server's `reasoning_content`, the finish reason and the usage chunk. The relay hears the
    text as it comes and each block once the next one starts or the stream ends."""

    def __init__(self, relay: Relay):
        self.relay = relay
        self.reasoning: list[str] = []
        self.text: list[str] = []
        self.calls: list[list[Any]] = []  # [id, name, argument pieces]
        self.open: int | None = None  # the block still forming: 0 for text, 1+i for call i
        self.finish: str | None = None
        self.usage: Any = None
        self.model, self.chosen = "", False

    def add(self, chunk) -> None:
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            self.chosen = True
            delta = choice.delta
            reasoning = getattr(delta, "reasoning_content", None) or (delta.model_extra or {}).get("reasoning_content")
            if reasoning:
                self.reasoning.append(reasoning)
            if delta.content:
                self._switch_to(0)
                self.text.append(delta.content)
                self.relay(TextDelta(0, delta.content))
            for call in delta.tool_calls or []:
                while len(self.calls) <= call.index:
                    self.calls.append(["", "", []])
                self._switch_to(1 + call.index)
                entry = self.calls[call.index]
                entry[0] = call.id or entry[0]
                if call.function is not None:
                    entry[1] = call.function.name or entry[1]
                    entry[2].append(call.function.arguments or "")
            self.finish = choice.finish_reason or self.finish

    def _switch_to(self, block: int | None) -> None:
        if self.open is not None and self.open != block:
            self.relay(BlockDone(self.open, self._block(self.open)))
        self.open = block

    def _block(self, index: int):
        if index == 0:
            return TextBlock("".join(self.text))
        call_id, name, pieces = self.calls[index - 1]
        return ToolCall(call_id or f"call_{index - 1}", name, parse_arguments("".join(pieces)))

    def reply(self) -> Reply:
        if not self.chosen:
            raise ModelError("openai-compatible server answered without a choice", 200, True)
        self._switch_to(None)
        blocks = [ThinkingBlock("".join(self.reasoning))] if self.reasoning else []
        blocks += [self._block(i) for i in range(0 if self.text else 1, 1 + len(self.calls))]
        stop = FINISH_REASONS.get(self.finish or "", "end_turn")
        if self.calls:
            stop = "tool_use"  # some servers say "stop" even when they called a tool
        return Reply(Message("assistant", blocks), stop, to_usage(self.usage), self.model)


def parse_arguments(raw):
    """A model's tool arguments as a dict; unparseable JSON is kept so the tool can say what was wrong."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_unparsed_arguments": raw}
    return value if isinstance(value, dict) else {"_unparsed_arguments": raw}


def to_usage(usage) -> Usage:
    if usage is None:
        return Usage(reported=False)  # the server said nothing: the cost is unknown, not free
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details else 0
    written = (getattr(details, "cache_write_tokens", None) or 0) if details else 0
    return Usage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cached - written),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def error_text(err) -> str:
    body = err.body if isinstance(err.body, dict) else {}
    detail = body.get("error") if isinstance(body.get("error"), dict) else body
    return (detail or {}).get("message") or err.message
