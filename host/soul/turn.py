"""One waking's turn: model step, tools, model step, ... until the soul sleeps.

A reply may call several tools at once; one that calls sleep ends the turn
right after its tools ran (every further step would re-read the whole context),
unless it needs another look: a call failed, or a tool answered with something
to read (`SoulTool.informs`: look, read_diary, ...), or the human spoke.

Before EVERY model step the turn takes what arrived for it (the human's words
delivered while it was thinking) and appends it to the conversation, so the
model sees them within this turn. Every message is written to session.jsonl
the moment it exists.

The model is called with retries (soulstack.llm.providers.complete_with_retry)
and streams: the `on_stream` hook hears its words as they form (a voice
answer starts before the step ends). When it keeps failing, or breaks off
midway, the rest of the waking runs on the brainstem.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from soulstack.llm.providers import complete_with_retry
from soulstack.llm.types import Message, ModelError, TextBlock, ThinkingBlock, ToolResult
from soulstack.soul.config import THINKING_BUDGET
from soulstack.soul.hooks import ToolEvent
from soulstack.soul.memory.view import view

if TYPE_CHECKING:
    from soulstack.llm.types import ToolCall
    from soulstack.soul.loop import Soul, Waking

log = logging.getLogger(__name__)
thoughts = log.getChild("thoughts")  # log.streamThoughts: the model's words, thinking and tool calls

RETRY_BACKOFF_S = 2.0


async def run_turn(soul: Soul, waking: Waking) -> None:
    for _ in range(soul.cfg.loop.max_steps_per_waking):
        take_delivered(soul, waking)
        reply = await think(soul, waking)
        waking.step += 1
        soul.session.append(reply.message, at=soul.clock.now().isoformat())
        soul.hooks.each("on_assistant", soul, waking, reply.message)
        if soul.cfg.log.stream_thoughts:
            stream_thoughts(reply.message)
        calls = reply.message.tool_calls()
        if not calls:
            if soul.has_incoming():
                continue  # the human spoke while it was finishing: let it answer
            return
        results = []
        for call in calls:
            results.append(await use_tool(soul, waking, call))
        soul.session.append(Message("user", results), at=soul.clock.now().isoformat())
        if waking.sleep is not None and not soul.has_incoming() and not worth_reading(soul, calls, results):
            return
    log.warning("waking %d reached loop.maxStepsPerWaking without sleeping; it sleeps the default", waking.number)


def worth_reading(soul: Soul, calls: list, results: list) -> bool:
    """Whether a reply that called sleep should still see its answers: one of its calls failed,
    or told something (what look saw) that the soul has not read yet."""
    return any(result.is_error for result in results) or any(soul.toolbox.informs(call.name) for call in calls)


def take_delivered(soul: Soul, waking: Waking) -> None:
    delivered = soul.take_incoming()
    if not delivered:
        return
    human = soul.cfg.persona.human
    text = soul.lang.TEXT
    blocks = [
        TextBlock(
            text["heard_by" if d.heard_by else "heard"].format(human=d.speaker or human, words=d.text, body=d.heard_by)
        )
        for d in delivered
    ]
    soul.session.append(Message("user", blocks), at=soul.clock.now().isoformat())
    for delivery in delivered:
        waking.heard_in_turn.append(delivery.text)
        if delivery.on_enter:
            delivery.on_enter()


async def think(soul: Soul, waking: Waking):
    messages = view(soul)  # what the model is sent of the history (host/soul/memory/view.py)
    # The thinking budget counts against max_tokens, so it is added on top of what the soul may say.
    max_tokens = soul.cfg.model.max_tokens + (THINKING_BUDGET[soul.cfg.model.thinking] or 0)
    reply = None
    model = soul.mind(waking)  # the main model, or model.routine on a quiet waking
    if not waking.on_brainstem and model is not soul.brainstem:

        def retrying(error):  # /health (and the demo's status line) says so at once, not after the last try
            soul.last_error = f"{model.provider}: {error} (retrying)"

        try:
            reply = await complete_with_retry(
                model,
                soul.system,
                messages,
                soul.tools,
                max_tokens=max_tokens,
                cache=cache_for(waking),
                attempts=soul.cfg.model.retries + 1,
                backoff_s=RETRY_BACKOFF_S,
                sleep=soul.clock.sleep,
                on_stream=lambda event: soul.hooks.each("on_stream", soul, waking, event),
                on_retry=retrying,
            )
            soul.last_error = None  # the provider answers again: an old failure is no longer news
            soul.last_mind = model
        except ModelError as error:
            soul.last_error = f"{model.provider}: {error}"
            log.error(
                "waking %d: %s failed (%s); this waking goes on with the brainstem",
                waking.number,
                model.provider,
                error,
            )
            waking.on_brainstem = waking.fell_back = True
    if reply is None:
        reply = await soul.brainstem.complete(soul.system, messages, soul.tools, max_tokens=max_tokens)
    soul.hooks.each("on_usage", soul, waking, reply)
    return reply


def cache_for(waking: Waking):
    """How a step's request is cached: at the model's TTL, or, in the night's consolidation, the history
    for five minutes only. The fold right after it puts a pointer in front of what stays, so no later
    request repeats those bytes; a write that lives minutes costs 1.25x the input price, not 2x. (With a
    routine mind the main model's cache went cold during the day: its consolidation writes the whole day.)"""
    return "5m" if waking.consolidating else True


async def use_tool(soul: Soul, waking: Waking, call: ToolCall) -> ToolResult:
    waking.tools_used.append(call.name)
    answers = [a for a in soul.hooks.each("before_tool", soul, call) if isinstance(a, str)]
    if answers:
        result, ok = ToolResult(call.id, [TextBlock(answers[0])]), True
    else:
        result, ok = await soul.toolbox.run(soul, call)
    soul.hooks.each("on_tool_result", soul, ToolEvent(call.name, call.input, ok, result, waking))
    return result


def stream_thoughts(message: Message) -> None:
    for block in message.content:
        if isinstance(block, ThinkingBlock) and block.thinking.strip():
            thoughts.info("(thinking) %s", block.thinking.strip())
        elif isinstance(block, TextBlock) and block.text.strip():
            thoughts.info("%s", block.text.strip())
    for call in message.tool_calls():
        thoughts.info("-> %s %s", call.name, call.input)
