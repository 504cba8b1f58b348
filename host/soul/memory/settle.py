"""Earlier wakings, as the model sees them: the routine calls of each one's last reply, one line each.

Why, and what the model sees: docs/soul.md, "An earlier waking's small acts, settled into lines".

What the code must keep:
- Only the reply that put an earlier waking to sleep settles: the last reply before the next waking
  began, calling the tool that ends a waking (Toolbox.ends_waking). A waking ends right after such a
  reply's tools ran (host/soul/turn.py), so it is first sent at the next waking (or the keep-warm
  refresh before it) already settled: settling never changes a byte the prompt cache has seen. A reply
  answered within its own waking is sent as it was and stays so.
- Only a call that did not fail, of a tool that does not inform (Toolbox.informs). Thoughts (the
  reply's text) stay word for word; its thinking goes with the settled calls; a reply left with
  nothing is left out.
- It is a view, like strip_old_images: pure and deterministic over the session on disk, which keeps
  every call as it was and marks where each waking began; so a waking, a keep-warm refresh and a
  restarted process send the same bytes.
"""

import json

from soulstack.llm.types import Message, TextBlock, ThinkingBlock, ToolCall, ToolResult

ARGUMENT_CHARS = 400  # a settled call's arguments, at most this long (a long reflect is in SELF.md itself)


def settle_earlier_calls(messages: list, current_start: int, waking_starts, tools, lang) -> list:
    """A copy of `messages` with the settled calls (see the module) of the replies that put the
    wakings before `current_start` to sleep as one text line each, in the user message that answered them.
    `waking_starts`: indexes in `messages` where a waking began; `tools`: the Toolbox, asked which
    tool ends a waking and which informs (host/soul/tools/);
    `lang`: the soul's language (host/soul/prompts/), whose TEXT["settled_header"] heads the lines.
    A call's results are in the message right after it (Session.history coalesces them there)."""
    header = lang.TEXT["settled_header"]
    last_replies = _last_replies(messages, current_start, set(waking_starts))
    out: list = []
    settling: dict = {}  # settling: {call id: call} of the reply just before
    for index, message in enumerate(messages):
        if settling:
            out.append(_answered(message, settling, header))
            settling = {}
            continue
        if index in last_replies and any(
            isinstance(b, ToolCall) and tools.ends_waking(b.name) for b in message.content
        ):
            settling = _settled_calls(message, messages[index + 1 : index + 2], tools.informs)
        if not settling:
            out.append(message)
            continue
        kept = [
            b
            for b in message.content
            if not (isinstance(b, ToolCall) and b.id in settling) and not isinstance(b, ThinkingBlock)
        ]
        if any(isinstance(b, (TextBlock, ToolCall)) for b in kept):
            out.append(Message("assistant", kept))
    return out


def _last_replies(messages: list, current_start: int, waking_starts: set) -> set:
    """Indexes of the assistant messages that ended a waking before `current_start`: the last reply
    before each waking start (`current_start` is one: asleep, it is len(messages))."""
    out, start_ahead = set(), True
    for index in range(min(current_start, len(messages)) - 1, -1, -1):
        if messages[index].role == "assistant":
            if start_ahead:
                out.add(index)
            start_ahead = False
        if index in waking_starts:
            start_ahead = True
    return out


def _settled_calls(message: Message, following: list, informs) -> dict:
    """{call id: ToolCall} of the reply's calls that settle: a routine tool, answered in the
    `following` message (a list of at most one), not a failure."""
    if not following or following[0].role != "user":
        return {}
    answered_well = {b.tool_call_id for b in following[0].content if isinstance(b, ToolResult) and not b.is_error}
    return {
        b.id: b for b in message.content if isinstance(b, ToolCall) and not informs(b.name) and b.id in answered_well
    }


def _answered(message: Message, settled: dict, header: str) -> Message:
    """The user message answering settled calls: their results become one text block of lines,
    after the results that stay (the API wants tool results first) and before the rest."""
    answered = [b for b in message.content if isinstance(b, ToolResult) and b.tool_call_id in settled]
    results = [b for b in message.content if isinstance(b, ToolResult) and not any(b is a for a in answered)]
    others = [b for b in message.content if not isinstance(b, ToolResult)]
    lines = [_line(settled[b.tool_call_id], b) for b in answered]
    return Message("user", results + [TextBlock("\n".join([header] + lines))] + others)


def _line(call: ToolCall, result: ToolResult) -> str:
    outcome = " ".join(b.text for b in result.content if isinstance(b, TextBlock)).strip()
    arguments = _arguments(call.input)
    head = f"- {call.name}: {arguments}" if arguments else f"- {call.name}"
    return f"{head} \u2192 {outcome}" if outcome else head


def _arguments(arguments: dict) -> str:
    """One argument: its value alone; several: name=value, in the call's order."""

    def value(v):
        text = json.dumps(v, ensure_ascii=False)
        return text if len(text) <= ARGUMENT_CHARS else text[: ARGUMENT_CHARS - 1] + "\u2026"

    if len(arguments) == 1:
        return value(next(iter(arguments.values())))
    return ", ".join(f"{name}={value(v)}" for name, v in arguments.items())
