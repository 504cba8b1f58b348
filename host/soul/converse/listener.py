"""The soul behind the converse endpoint: `SoulListener`, the soul at the `Listener` seam.

The endpoint (host/soul/converse/answers.py) hands it the human's words and a
`ReplyCatcher` (host/soul/converse/reply.py); the listener gives the words to
the soul's `deliver` and follows the soul's turn through five hooks, which
`build_soul` (host/soul/run.py) hangs on the soul:

  on_stream       each event of a model call's stream, to the armed catchers
  on_assistant    each finished assistant message, to the armed catchers
  before_tool     a `speak` whose words the voice stack says answers the call itself
                  (the body is not made to say them again)
  on_waking_end   every catcher armed in the waking is settled
  on_tool_result  what the body said aloud (a `speak` that worked), for the echo guard

It also holds the soul's echo guard (host/soul/converse/echo.py: the robot's own
voice heard back is no person's words, on a body whose config says it hears
itself, `body.hearsItself`), and records an answer the voice stack
cut off (`cut`): the soul is told, through its inbox, what the person heard.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from soulstack.llm.types import ToolCall
from soulstack.protocol.nudges import Nudge
from soulstack.soul.converse.echo import EchoGuard
from soulstack.soul.converse.reply import ReplyCatcher, ReplyCatchers

if TYPE_CHECKING:
    from soulstack.soul.loop import Soul, Waking

log = logging.getLogger(__name__)


class SoulListener:
    """The soul at the Listener seam, wired through its hooks and `deliver`.

    Words heard go in by `soul.deliver`, so they follow the soul's own rules:
    asleep, it wakes with them; thinking, they join the running turn before
    its next model step. A catcher is armed only once its words are in the
    model's context, and every catcher armed in a waking is settled when
    that waking ends, whether it went well or not.
    """

    def __init__(self, soul: Soul):
        self.soul = soul
        self.catchers = ReplyCatchers(soul.toolbox.spoken)  # which call speaks: the tool's fact
        body = soul.cfg.body
        self.echo = EchoGuard(soul.clock.monotonic, body.hears_itself, body.name)

    async def hear(
        self, utterance: str, catcher: ReplyCatcher, speaker: str | None = None, heard_by: str | None = None
    ) -> None:
        by = (f" from {speaker}" if speaker else "") + (f" (heard by {heard_by})" if heard_by else "")
        log.info("converse: heard %r%s (the soul is %s)", utterance, by, self.soul.state)
        soul = self.soul  # the words are kept verbatim for recall the moment they arrive (host/soul/memory/heard.py)
        soul.session.remember("heard", utterance, soul.local_now(), speaker or soul.cfg.persona.human)
        # deliver() also counts the words as contact with the human (the metabolism's on_contact hook).
        self.soul.deliver(utterance, on_enter=_Arm(self.catchers, catcher), speaker=speaker, heard_by=heard_by)

    async def cut(self, heard: dict) -> None:
        """The voice stack stopped taking the answer midway: the soul's inbox keeps what was heard
        (a nudge's `heard`), and its next snapshot says where it was cut off."""
        log.info("converse: the answer was cut off: %s", Nudge(None, heard=heard).told)
        await self.soul.nudge(Nudge(None, heard=heard))

    # --- the hooks (hung on the soul by build_soul) ---------------------------------

    def on_stream(self, soul: Soul, waking: Waking, event) -> None:
        self.catchers.stream(event)

    def on_assistant(self, soul: Soul, waking: Waking, message) -> None:
        self.catchers.feed(message)

    def before_tool(self, soul: Soul, call: ToolCall) -> str | None:
        if not self.catchers.answered_by(call):
            return None
        # The speak's result: the voice stack says these words instead of the body.
        return soul.lang.TEXT["said_by_voice"].format(human=soul.cfg.persona.human)

    def on_tool_result(self, soul: Soul, event) -> None:
        if event.ok:
            words = soul.toolbox.spoken(ToolCall("", event.name, event.input))
            if words:
                self.echo.said(words)

    def on_waking_end(self, soul: Soul, waking: Waking) -> None:
        error = RuntimeError(waking.error) if waking.error else None
        # Words the waking took but never showed the model (it failed first) are not left waiting.
        for delivery in waking.delivered:
            arm = delivery.on_enter
            if isinstance(arm, _Arm) and not arm.entered:
                arm.catcher.fail(error or RuntimeError("the words never reached the soul's mind"))
        self.catchers.end_turn(error)


class _Arm:
    """`on_enter` for one utterance: arms its catcher when the words enter the model's context."""

    def __init__(self, catchers: ReplyCatchers, catcher: ReplyCatcher):
        self.catchers, self.catcher, self.entered = catchers, catcher, False

    def __call__(self) -> None:
        if not self.entered:
            self.entered = True
            self.catchers.arm(self.catcher)
