"""What arrives is kept word for word the moment it arrives, whatever the model later does with it.

Two hooks (build_soul in host/soul/run.py hangs them) put entries into the archive's search
(host/soul/memory/archive.py), so `recall` finds them years later:

  on_nudge        a person's words in a nudge (the nudge contract's `words_of`, its one rule),
                  as said by the nudge's speaker, or by the soul's human when it names none
  on_tool_result  the words the soul said aloud, once its speak worked (a failed one was never heard)

Words a person speaks through converse are kept by the listener itself, the one line where they
arrive (host/soul/converse/listener.py's `hear` calls `Session.remember`): converse may not
import this room. A person's words are never taken from a nudge's reason alone unless the
contract says the reason quotes them; a nudge's `heard` is what the person heard of the soul,
so it is the soul's own speech and is not kept again here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from soulstack.llm.types import ToolCall
from soulstack.protocol.nudges import words_of

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul


def on_nudge(soul: Soul, nudge) -> None:
    who = nudge.speaker or soul.cfg.persona.human
    for words in words_of(nudge):
        soul.session.remember("heard", words, soul.local_now(), who)


def on_tool_result(soul: Soul, event) -> None:
    if not event.ok:
        return
    said = soul.toolbox.spoken(ToolCall("", event.name, event.input if isinstance(event.input, dict) else {}))
    if said:
        soul.session.remember("said", said, soul.local_now())
