"""The context ceiling: fold old turns into a summary so a long life stays affordable.

An unbounded session re-sends everything every waking (400k-token requests
once: docs/lessons.md, "a history without a ceiling"). When the estimated size passes `model.maxContextTokens`, the older
messages are folded into a summary -- written by the model, or by
`plain_digest` when the soul runs on the brainstem -- and only the newest
`model.keepRecentTokens` or so stay verbatim.

Where the cut may fall: at a user message that carries no tool results and
after which no tool result answers a call made before it. In the soul's
session every waking's snapshot is such a message, so folds cut between
wakings and a tool call is never separated from its result.

The estimate is deliberately simple: characters / 4 for text (tool inputs
as JSON), a fixed IMAGE_TOKENS per image (images are sent as base64 but
billed by their pixels, and a body's camera frame is small), and a few
tokens per message for the framing. It only decides *when* to fold, so
being roughly right is enough.
"""

import json
from dataclasses import dataclass
from datetime import datetime

from soulstack.llm.types import ImageBlock, Message, TextBlock, ThinkingBlock, ToolCall, ToolResult

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1600  # Anthropic's cost of a full-size image; a QVGA frame costs far less
MESSAGE_OVERHEAD_TOKENS = 4

# The words (the summary's header and request, the digest's, an old image's placeholder) are the
# soul's language's: host/soul/prompts/ (lang.TEXT["summary_header"], ...); `lang` is that language.


# --- the estimate ---------------------------------------------------------------------------


def _chars(block) -> int:
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ThinkingBlock):
        return len(block.thinking)
    if isinstance(block, ToolCall):
        return len(block.name) + len(json.dumps(block.input, ensure_ascii=False))
    if isinstance(block, ToolResult):
        return sum(_chars(inner) for inner in block.content)
    return 0


def _images(block) -> int:
    if isinstance(block, ImageBlock):
        return 1
    if isinstance(block, ToolResult):
        return sum(_images(inner) for inner in block.content)
    return 0


def estimate_text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def message_tokens(message: Message, image_tokens: int = IMAGE_TOKENS) -> int:
    chars = sum(_chars(block) for block in message.content)
    images = sum(_images(block) for block in message.content)
    return -(-chars // CHARS_PER_TOKEN) + images * image_tokens + MESSAGE_OVERHEAD_TOKENS


def estimate_tokens(messages: list, image_tokens: int = IMAGE_TOKENS) -> int:
    """Rough tokens of `messages`: chars/4 + image_tokens per image + a little per message."""
    return sum(message_tokens(message, image_tokens) for message in messages)


# --- where a cut may fall -----------------------------------------------------------------------


def clean_boundaries(messages: list) -> list:
    """Indexes where messages[i:] can stand alone as a request's history.

    messages[i] is a user message without tool results, and no tool result
    from i on answers a call made before i. Index 0 is never returned (a
    fold must fold something).
    """
    answered_later: set = set()
    calls_later: set = set()
    out = []
    for index in range(len(messages) - 1, 0, -1):
        message = messages[index]
        for block in message.content:
            if isinstance(block, ToolResult):
                answered_later.add(block.tool_call_id)
            elif isinstance(block, ToolCall):
                calls_later.add(block.id)
        # A user message holding tool results always answers an earlier call, so this
        # also rules those out.
        if message.role == "user" and answered_later <= calls_later:
            out.append(index)
    return sorted(out)


def choose_cut(messages: list, keep_recent_tokens: int, image_tokens: int = IMAGE_TOKENS) -> int | None:
    """The earliest clean boundary whose tail fits in keep_recent_tokens; if none fits,
    the latest clean boundary (the newest waking is kept whole, even when large).
    None when there is no clean boundary at all."""
    boundaries = clean_boundaries(messages)
    if not boundaries:
        return None
    tail = [0] * (len(messages) + 1)  # tail[i]: tokens of messages[i:]
    for index in range(len(messages) - 1, -1, -1):
        tail[index] = tail[index + 1] + message_tokens(messages[index], image_tokens)
    for index in boundaries:
        if tail[index] <= keep_recent_tokens:
            return index
    return boundaries[-1]


# --- what the model sees after a fold --------------------------------------------------------


def with_summary(messages: list, summary: str | None, lang) -> list:
    """`messages` with the summary put in front of the first (user) message's blocks.

    Putting it inside the first message keeps user/assistant alternation, and
    it stays byte-identical from one waking to the next, so the cache holds.
    """
    if not summary or not messages:
        return list(messages)
    header = lang.TEXT["summary_header"]
    first = messages[0]
    return [Message(first.role, [TextBlock(f"{header}\n{summary}")] + list(first.content))] + list(messages[1:])


def summary_request(folded: list, instruction: str) -> list:
    """A valid request history that ends with `instruction` in a user turn: for a model summarizer,
    lang.TEXT["summary_instruction"] asks it to summarize `folded`."""
    asked = TextBlock(instruction)
    messages = list(folded)
    if messages and messages[-1].role == "user":
        messages[-1] = Message("user", list(messages[-1].content) + [asked])
    else:
        messages.append(Message("user", [asked]))
    return messages


@dataclass
class Fold:
    record: dict  # for session.jsonl: {"type": "fold", "summary", "upto", "at", ...}
    messages: list  # what the model sees now: the kept messages with the summary in front
    kept: list  # the kept messages as they are (no summary)


async def fold_context(
    messages: list,
    summarize,
    lang,
    *,
    max_context_tokens: int = 100_000,
    keep_recent_tokens: int = 20_000,
    previous_summary: str | None = None,
    base: int = 0,
    extra_tokens: int = 0,
    now: datetime | None = None,
    image_tokens: int = IMAGE_TOKENS,
    shown=None,
) -> Fold | None:
    """Fold `messages` if they (with `extra_tokens` for system + tools) pass the ceiling.

    `messages` are the live ones (after the last fold), `previous_summary` that
    fold's summary: it is put in front of what is folded, so nothing is lost
    twice (its header in the language `lang`). `summarize(messages) -> str` is awaited with the messages to fold.
    `base` is how many messages earlier folds already removed: the record's
    `upto` counts from the start of the whole session. `shown(messages)`, if given, is how the model
    sees them (earlier wakings' calls settled): the size is measured on that. None: nothing to do.
    """
    seen = shown(messages) if shown else messages
    before = estimate_tokens(with_summary(seen, previous_summary, lang), image_tokens) + extra_tokens
    if before <= max_context_tokens:
        return None
    cut = choose_cut(messages, keep_recent_tokens, image_tokens)
    if cut is None:
        return None
    folded = with_summary(messages[:cut], previous_summary, lang)
    summary = (await summarize(folded)).strip()
    kept = list(messages[cut:])
    now_messages = with_summary(kept, summary, lang)
    record = {
        "type": "fold",
        "summary": summary,
        "upto": base + cut,
        "at": now.isoformat() if now else "",
        "folded": cut,
        "tokensBefore": before,
        "tokensAfter": estimate_tokens(now_messages, image_tokens) + extra_tokens,
    }
    return Fold(record, now_messages, kept)


# --- the brainstem's summary: a plain digest, no model ---------------------------------------


def _short(text: str, limit: int = 140) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain_digest(messages: list, lang, tools, max_chars: int = 2000) -> str:
    """A summary without a model: counts, tools used, and the soul's own words, newest kept first if long.

    An earlier summary found at the front of the first message is carried over. In the language `lang`;
    `tools` (the Toolbox) says which calls spoke or wrote the diary or the mood, and what they said.
    """
    words = lang.TEXT["digest"]
    wakings = sum(1 for m in messages if m.role == "user" and not any(isinstance(b, ToolResult) for b in m.content))
    counts: dict = {}
    lines = []
    header = lang.TEXT["summary_header"]
    carried = ""
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.startswith(header):
                carried = block.text[len(header) :].strip()
            elif isinstance(block, ToolCall):
                counts[block.name] = counts.get(block.name, 0) + 1
                said = tools.gist(block)  # what it said or wrote (SoulTool.gist), if anything
                if said and tools.speaks(block.name):
                    lines.append(f'{words["said"]}: "{_short(said)}"')
                elif said and tools.changes(block.name) == "diary":
                    lines.append(f"{words['diary']}: {_short(said)}")
                elif said and tools.changes(block.name) == "mood":
                    lines.append(f"{words['mood']}: {_short(said, 60)}")
            elif isinstance(block, TextBlock) and message.role == "assistant" and block.text.strip():
                lines.append(f"{words['thought']}: {_short(block.text)}")
    used = ", ".join(f"{name} x{count}" for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    head = [f"{wakings} {words['waking' if wakings == 1 else 'wakings']}; {words['tools']}: {used or '-'}"]
    if carried:
        head.insert(0, _short(carried, max_chars // 2))
    budget = max_chars - sum(len(line) + 1 for line in head)
    tail: list = []
    for line in reversed(lines):  # keep the newest when there is too much
        if budget - (len(line) + 1) < 0:
            break
        tail.insert(0, line)
        budget -= len(line) + 1
    return "\n".join(head + tail)


# --- images older than this waking -----------------------------------------------------------


def _strip_block(block, placeholder: str):
    if isinstance(block, ImageBlock):
        return TextBlock(placeholder)
    if isinstance(block, ToolResult) and any(isinstance(inner, ImageBlock) for inner in block.content):
        content = [_strip_block(inner, placeholder) for inner in block.content]
        return ToolResult(block.tool_call_id, content, block.is_error)
    return block


def strip_old_images(messages: list, current_waking_start_index: int, lang) -> list:
    """A copy of `messages` where every image before the current waking is a short text placeholder
    (lang.TEXT["image_gone"]).

    Pure and deterministic, so the same history gives the same bytes every
    waking (the prompt cache depends on that). Images of the current waking stay.
    """
    out, gone = [], lang.TEXT["image_gone"]
    for index, message in enumerate(messages):
        if index >= current_waking_start_index:
            out.append(message)
        else:
            out.append(Message(message.role, [_strip_block(block, gone) for block in message.content]))
    return out
