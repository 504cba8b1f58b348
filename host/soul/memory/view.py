"""The view: what a model call sends of the soul's history, built in one place.

`view(soul)` is the session's history (host/soul/memory/session.py: every live message
on disk, coalesced) as every request shows it:

  - images of earlier wakings become a short placeholder (fold.strip_old_images);
  - the calls that put each earlier waking to sleep are settled into one line each
    (host/soul/memory/settle.py);
  - the last fold's summary stands in front (fold.with_summary);
  - a tool call's id repeated from an older session is renamed (unique_call_ids).

The turn sends it (host/soul/turn.py), a keep-warm refresh sends it too
(host/soul/memory/keepwarm.py), so the refresh's bytes match the next waking's
request; the context ceiling (host/soul/memory/ceiling.py) measures it and asks
for its summary with it. It is pure: the same session gives the same bytes, in
every waking, in a refresh and after a restart (the prompt cache depends on that).

"This waking" is `soul.snapshot_at`, where the running waking's snapshot is in the
session (set by the loop); asleep it is None, and every waking is an earlier one:
what keep-warm sends is what the next waking will.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import replace
from typing import TYPE_CHECKING

from soulstack.llm.types import Message, ToolCall, ToolResult

from soulstack.soul.memory.fold import strip_old_images, with_summary
from soulstack.soul.memory.settle import settle_earlier_calls

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul
    from soulstack.soul.memory.session import Session


def view(soul: Soul) -> list:
    """The messages a model call sends now (see the module)."""
    session, lang = soul.session, soul.lang
    messages = session.history()
    start = current_index(session, messages, soul.snapshot_at)
    earlier = settled(session, strip_old_images(messages, start, lang), start, soul.toolbox, lang)
    return unique_call_ids(with_summary(earlier, session.fold_summary, lang))


def unique_call_ids(messages: list) -> list:
    """Every tool call's id once. The brainstem's ids started again at every restart until
    2026-12-03, so a session it lived in repeats them, and the Messages API refuses a request that
    does ("tool_use ids must be unique"). A repeat is renamed with its result, the same way in
    every request (the prompt cache depends on the same bytes)."""
    seen: set = set()
    renamed: dict = {}  # an id repeated in the message before -> its new name, for its result
    out = []
    for message in messages:
        content, changed = [], False
        for block in message.content:
            if isinstance(block, ToolCall) and block.id in seen:
                new = next(f"{block.id}_{n}" for n in itertools.count(2) if f"{block.id}_{n}" not in seen)
                renamed[block.id], block, changed = new, replace(block, id=new), True
            elif isinstance(block, ToolResult) and block.tool_call_id in renamed:
                block, changed = replace(block, tool_call_id=renamed.pop(block.tool_call_id)), True
            if isinstance(block, ToolCall):
                seen.add(block.id)
            content.append(block)
        out.append(Message(message.role, content) if changed else message)
    return out


def settled(session: Session, messages: list, start: int, tools, lang) -> list:
    """`messages` (the history, or its live part) with the calls that ended each earlier waking
    settled into lines (host/soul/memory/settle.py); `start`: where the current waking begins in them."""
    starts = set(snapshots_in(session, messages).values())
    return settle_earlier_calls(messages, start, starts, tools, lang)


def current_index(session: Session, messages: list, snapshot_at: int | None) -> int:
    """Where the running waking starts in the (coalesced) history: the message holding its snapshot
    (`snapshot_at`, an index in session.messages); asleep (None), the end."""
    if snapshot_at is None:
        return len(messages)
    return snapshots_in(session, messages).get(snapshot_at, len(messages))


def snapshots_in(session: Session, messages: list) -> dict:
    """{session index of a waking's snapshot: the index in `messages` of the message holding it}, for
    the wakings after the last fold (a snapshot is found by its last block, which coalescing keeps)."""
    live = session.waking_starts[bisect.bisect_left(session.waking_starts, session.fold_upto) :]
    marks = {id(session.messages[i].content[-1]): i for i in live}
    return {marks[id(b)]: index for index, message in enumerate(messages) for b in message.content if id(b) in marks}
