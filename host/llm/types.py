"""Provider-neutral shapes for one model call.

The soul and the flock speak only these types; `host/llm/anthropic.py` and
`host/llm/openai.py` translate them to and from each SDK. Every type turns into
plain JSON (`to_json`) and back (`block_from_json`, `Message.from_json`), which
is how the soul's session is written to `session.jsonl`.
"""

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class TextBlock:
    text: str

    def to_json(self):
        return {"type": "text", "text": self.text}


@dataclass
class ImageBlock:
    """An image the model sees: base64 data and its MIME type (image/jpeg or image/png)."""

    data: str
    media_type: str = "image/jpeg"

    def to_json(self):
        return {"type": "image", "data": self.data, "media_type": self.media_type}


@dataclass
class ToolCall:
    id: str
    name: str
    input: dict

    def to_json(self):
        return {"type": "tool_call", "id": self.id, "name": self.name, "input": self.input}


@dataclass
class ToolResult:
    """The answer to one ToolCall; `content` is text and/or image blocks."""

    tool_call_id: str
    content: list
    is_error: bool = False

    def to_json(self):
        return {
            "type": "tool_result",
            "tool_call_id": self.tool_call_id,
            "content": [block.to_json() for block in self.content],
            "is_error": self.is_error,
        }


@dataclass
class ThinkingBlock:
    """Extended thinking the provider returned; kept so it can be sent back verbatim.

    `redacted` marks Anthropic's encrypted thinking: then `signature` holds its data.
    """

    thinking: str
    signature: str = ""
    redacted: bool = False

    def to_json(self):
        data = {"type": "thinking", "thinking": self.thinking, "signature": self.signature}
        if self.redacted:
            data["redacted"] = True
        return data


Block = TextBlock | ImageBlock | ToolCall | ToolResult | ThinkingBlock


def block_from_json(data: dict) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(data["text"])
    if kind == "image":
        return ImageBlock(data["data"], data.get("media_type", "image/jpeg"))
    if kind == "tool_call":
        return ToolCall(data["id"], data["name"], data.get("input") or {})
    if kind == "tool_result":
        return ToolResult(
            data["tool_call_id"],
            [block_from_json(block) for block in data.get("content", [])],
            bool(data.get("is_error")),
        )
    if kind == "thinking":
        return ThinkingBlock(data.get("thinking", ""), data.get("signature", ""), bool(data.get("redacted")))
    raise ValueError(f"unknown block type {kind!r}")


@dataclass
class Message:
    role: str  # "user" or "assistant"
    content: list

    def to_json(self):
        return {"role": self.role, "content": [block.to_json() for block in self.content]}

    @classmethod
    def from_json(cls, data: dict) -> "Message":
        return cls(data["role"], [block_from_json(block) for block in data["content"]])

    @classmethod
    def user(cls, text: str) -> "Message":
        return cls("user", [TextBlock(text)])

    def text(self) -> str:
        return "\n".join(block.text for block in self.content if isinstance(block, TextBlock))

    def tool_calls(self) -> list:
        return [block for block in self.content if isinstance(block, ToolCall)]


@dataclass
class Tool:
    """A tool the model may call: a name, what it does, and a JSON Schema for its input."""

    name: str
    description: str
    input_schema: dict


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reported: bool = True  # False: the server said nothing of its tokens, so the call's cost is unknown

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_json(self):
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass
class Reply:
    """What one model call gave back: the assistant message, why it stopped, what it cost."""

    message: Message
    stop_reason: str = "end_turn"  # end_turn | tool_use | max_tokens
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class ModelError(Exception):
    """A model call failed. `retryable` is true for 429, 5xx, timeouts and refused connections;
    `retry_after_s` is how long the server asked us to wait (its Retry-After header), if it did."""

    def __init__(self, message: str, status: int = 0, retryable: bool = False, retry_after_s: float | None = None):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s


def retry_after_s(headers) -> float | None:
    """Seconds from a response's `retry-after-ms` or `retry-after` header (a number of seconds;
    the HTTP-date form is not used by model APIs); None when absent or unreadable."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if seconds >= 0:
            return seconds
    return None


class Model(Protocol):
    """One async call: system prompt + messages + tools -> Reply.

    `tool_choice` is None (the model decides) or a tool name the model must call.
    `cache` asks providers that support prompt caching to mark the stable prefix
    (True), or the history for a few minutes only ("5m": a turn no later call repeats).
    Models that stream (anthropic, openai) also take `on_stream`, which hears the
    reply as it forms (soulstack.llm.streaming); complete_with_retry passes it only
    when given, so a model that does not stream (the brainstem) needs none.
    """

    provider: str
    model_id: str

    async def complete(
        self,
        system: str,
        messages: list,
        tools: list | None = None,
        *,
        tool_choice: str | None = None,
        max_tokens: int = 4096,
        cache: bool | str = False,
    ) -> Reply: ...
