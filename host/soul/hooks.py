"""Hooks: how features built on the soul (metabolism, converse) watch and steer it without editing the loop.

Each attribute is a list of plain functions; append yours. They run in the
soul's event loop, must be quick and not block; an exception in one is logged
and ignored (a meter must never end a life). Every function gets the soul
first.

  on_waking(soul, waking)            a waking begins, before its snapshot is built
  felt(soul, now) -> str | None      lines for the snapshot's "what you feel" part
  on_usage(soul, waking, reply)      after each model call: reply.usage, reply.model;
                                     waking is None for a keep-warm call made asleep
  on_stream(soul, waking, event)     while a model call streams: its text as it forms, each
                                     block once complete (soulstack.llm.streaming)
  on_assistant(soul, waking, message) each assistant message, as it arrives
  before_tool(soul, call) -> str | None
                                     a string answers the call instead of running it
  on_tool_result(soul, event)        after each tool: event.name, .input, .ok, .result
  adjust_sleep(soul, plan) -> plan   may lengthen/shorten a sleep; set plan.why to
                                     words the soul reads (it is told the real value)
  on_waking_end(soul, waking)        the turn is over (waking.sleep holds the plan)
  on_nudge(soul, nudge)              a nudge arrived (asleep or thinking): a protocol Nudge
  on_contact(soul, kind)             the human really reached the soul ("converse": words
                                     delivered by loop.deliver; "typed"/"speak" come via
                                     on_nudge / on_tool_result)
  before_turn(soul, waking)          AWAITED (async functions), once per waking, after the
                                     snapshot is stored and before the first model step
                                     (the context ceiling's fold); see each_awaited

What a model call is sent of the history is no hook: host/soul/memory/view.py builds it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from soulstack.llm.types import ToolResult

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul, Waking

log = logging.getLogger(__name__)

NAMES = (
    "on_waking",
    "felt",
    "on_usage",
    "on_stream",
    "on_assistant",
    "before_tool",
    "on_tool_result",
    "adjust_sleep",
    "on_waking_end",
    "on_nudge",
    "on_contact",
    "before_turn",
)


@dataclass
class ToolEvent:
    name: str
    input: dict
    ok: bool
    result: ToolResult
    waking: Waking


class Hooks:
    # One list per name in NAMES, made in __init__; declared here for the type checker.
    on_waking: list[Callable[..., Any]]
    felt: list[Callable[..., Any]]
    on_usage: list[Callable[..., Any]]
    on_stream: list[Callable[..., Any]]
    on_assistant: list[Callable[..., Any]]
    before_tool: list[Callable[..., Any]]
    on_tool_result: list[Callable[..., Any]]
    adjust_sleep: list[Callable[..., Any]]
    on_waking_end: list[Callable[..., Any]]
    on_nudge: list[Callable[..., Any]]
    on_contact: list[Callable[..., Any]]
    before_turn: list[Callable[..., Any]]

    def __init__(self):
        for name in NAMES:
            setattr(self, name, [])

    def each(self, name: str, *args) -> list:
        """Call every function of hook `name`; their results, failures left out."""
        results = []
        for function in getattr(self, name):
            try:
                results.append(function(*args))
            except Exception:
                log.exception("hook %s (%s) failed", name, getattr(function, "__qualname__", function))
        return results

    async def each_awaited(self, name: str, *args) -> None:
        """Await every (async) function of hook `name` in turn; a failure is logged and ignored."""
        for function in getattr(self, name):
            try:
                await function(*args)
            except Exception:
                log.exception("hook %s (%s) failed", name, getattr(function, "__qualname__", function))

    def chain(self, name: str, soul: Soul, value):
        """Pass `value` through every function of hook `name` in turn (adjust_sleep)."""
        for function in getattr(self, name):
            try:
                value = function(soul, value)
            except Exception:
                log.exception("hook %s (%s) failed", name, getattr(function, "__qualname__", function))
        return value
