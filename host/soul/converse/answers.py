"""One answer per utterance: the converse endpoint's state (host/soul/converse/endpoint.py is its HTTP).

Voice stacks re-deliver the same utterance 3-4 times on reconnect, so the
same words share one pending answer, and a finished answer is reused for
`CACHE_S` seconds. Nothing here may hang a voice stack: after
`filler_after_s` a request gets a short, honest "still thinking" line and the
late answer is kept for the re-delivery that usually follows.

An answer is cut when the voice stack hangs up midway through it (it aborted:
the person spoke again) or new words come while it still streams (its stream
ends there): once the whole answer is known, the listener's `cut` tells the
soul what was streamed of it, and that the rest was never heard. A cut answer
is never handed back again: a re-delivery of those words is heard afresh (after
the soul was told of the cut), so the soul answers knowing what the person
heard, instead of the voice stack repeating what was heard and saying what the
soul holds as never said. A request that joined the answer and takes it whole
(a re-delivery that came before the hang-up was seen) means it was no cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Protocol

from soulstack.cjk import chinese
from soulstack.clocks import Clock
from soulstack.soul.converse.echo import EchoGuard
from soulstack.soul.converse.reply import ReplyCatcher, normalize
from soulstack.soul.prompts import texts

log = logging.getLogger(__name__)

CACHE_S = 15  # a finished answer is reused for this long
FILLER_AFTER_S = 45  # a voice stack waits no longer than this
PENDING_MAX_S = 600  # an answer still missing after this is abandoned


class Listener(Protocol):
    """What the soul implements so a voice stack can talk to it.

    `hear` takes the human's words as spoken now and returns as soon as they
    are safely queued — not when they are answered. Asleep, the soul wakes
    with them as the reason; thinking, they join the running turn at its next
    model step (never a second concurrent turn, never dropped). When the words
    enter the model's context the soul arms `catcher` (see ReplyCatchers),
    feeds it each assistant message, asks it before making the body speak,
    and ends it when the turn ends. Raising means the words were not taken.
    """

    async def hear(
        self, utterance: str, catcher: ReplyCatcher, speaker: str | None = None, heard_by: str | None = None
    ) -> None: ...

    async def cut(self, heard: dict) -> None:
        """An answer was cut off: `heard` as the nudge contract's (`played`, `cut`, `cut_fraction`)."""


@dataclass
class Pending:
    catcher: ReplyCatcher
    task: asyncio.Task
    started: float
    cut_at: str | None = None  # what was streamed when the answer was cut off: never cached, never shared


@dataclass
class Converse:
    """The endpoint's state: answers being made and answers recently given."""

    listener: Listener
    clock: Clock  # only monotonic() and sleep() are used
    filler_after_s: float = FILLER_AFTER_S
    model_name: str = "soul"
    echo: EchoGuard | None = None  # the robot's own voice heard back (echo.py)
    pending: dict = field(default_factory=dict)  # key -> Pending
    cache: dict = field(default_factory=dict)  # key -> (Pending, when): answers settled, handed to a re-delivery
    hear_calls: int = 0
    cuts: dict = field(default_factory=dict)  # key -> the task telling the soul its answer to these words was cut
    saying: set = field(default_factory=set)  # an Event per answer being given now: set when new words come

    # --- one answer per utterance -------------------------------------------

    def _forget_old(self) -> None:
        now = self.clock.monotonic()
        for key, (_, when) in list(self.cache.items()):
            if now - when >= CACHE_S:
                del self.cache[key]
        for key, pending in list(self.pending.items()):
            if now - pending.started >= PENDING_MAX_S:
                log.warning("converse: abandoned an answer never given to %r", pending.catcher.utterance)
                pending.catcher.fail(TimeoutError("abandoned"))
                del self.pending[key]

    def answer_for(self, utterance: str, speaker: str | None = None, heard_by: str | None = None) -> Pending | str:
        """A cached answer (str), or the pending answer these words share."""
        self._forget_old()
        key = normalize(utterance)
        if key in self.cache:
            log.info("converse: re-delivery of %r answered from the cache", utterance)
            return self.cache[key][0].catcher.reply
        if key in self.pending and self.pending[key].cut_at is None:
            log.info("converse: re-delivery of %r joins the pending answer", utterance)
            return self.pending[key]
        for superseded in self.saying:  # new words: the answers still going out end where they are
            superseded.set()
        told = self.cuts.get(key)  # its earlier answer was cut off: the soul hears of that first
        if told is not None:
            log.info("converse: re-delivery of %r after its answer was cut off: heard afresh", utterance)
        catcher = ReplyCatcher(utterance)
        task = asyncio.create_task(self._hear(utterance, catcher, speaker, heard_by, told))
        pending = Pending(catcher, task, self.clock.monotonic())
        self.pending[key] = pending
        task.add_done_callback(lambda t: self._settle(key, pending))
        return pending

    async def _hear(
        self, utterance: str, catcher: ReplyCatcher, speaker: str | None, heard_by: str | None = None, after=None
    ) -> str:
        if after is not None:  # the soul is told of the cut before it hears the words again
            await asyncio.wait({after})
        self.hear_calls += 1
        await self.listener.hear(utterance, catcher, speaker, heard_by)
        return await catcher.wait()

    def _settle(self, key: str, pending: Pending) -> None:
        if self.pending.get(key) is pending:
            del self.pending[key]
        task = pending.task
        if task.cancelled():
            return
        if task.exception() is not None:
            log.error("converse: no answer to %r: %s", pending.catcher.utterance, task.exception())
            return
        answer = task.result()
        if pending.cut_at is not None and len(pending.cut_at) < len(answer):
            log.info("converse: the answer to %r was cut off; a re-delivery is heard afresh", pending.catcher.utterance)
        elif answer:  # an empty answer is never cached: the next try asks again
            self.cache[key] = (pending, self.clock.monotonic())
        else:
            log.info("converse: the soul said nothing aloud to %r", pending.catcher.utterance)

    async def wait(self, utterance: str, speaker: str | None = None, heard_by: str | None = None) -> str:
        """The words to say back, whole, as soon as they are known (see `say`)."""
        return "".join([piece async for piece in self.say(utterance, speaker, heard_by)])

    async def say(self, utterance: str, speaker: str | None = None, heard_by: str | None = None):
        """The words to say back, piece by piece, each the moment it is known: the answer's
        sentences as the soul's model writes them, then any failure line; a filler when
        nothing was said within `filler_after_s` (a long answer is cut there instead).
        New words (another utterance) end it where it is: it was cut there (`heard_only`)."""
        found = self.answer_for(utterance, speaker, heard_by)
        if isinstance(found, str):
            if found:
                yield found
            return
        # The filler and the failure line speak the utterance's language (host/soul/prompts/).
        words = texts("zh" if chinese(utterance) else "en").TEXT
        catcher, sent = found.catcher, 0
        catcher.waiting += 1
        timer = asyncio.ensure_future(self.clock.sleep(self.filler_after_s))
        superseded = asyncio.Event()
        self.saying.add(superseded)
        try:
            while True:
                while sent < len(catcher.pieces) and not superseded.is_set():
                    sent += 1
                    yield catcher.pieces[sent - 1]
                if found.task.done() or timer.done() or superseded.is_set():
                    break
                news = asyncio.ensure_future(catcher.news())
                cut = asyncio.ensure_future(superseded.wait())
                try:
                    await asyncio.wait({found.task, timer, news, cut}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    news.cancel()
                    cut.cancel()
        finally:
            timer.cancel()
            catcher.waiting -= 1
            self.saying.discard(superseded)
        if superseded.is_set() and (not found.task.done() or sent < len(catcher.pieces)):
            log.info("converse: new words came while the answer to %r went out; it ends here", utterance)
            self.heard_only(utterance, "".join(catcher.pieces[:sent]), superseded=True)
        elif not found.task.done() and sent:
            log.warning(
                "converse: the answer to %r was not finished within %gs; cut it short, the whole answer will be kept",
                utterance,
                self.filler_after_s,
            )
        elif not found.task.done():
            log.warning(
                "converse: no answer to %r within %gs; said a filler, the answer will be kept",
                utterance,
                self.filler_after_s,
            )
            yield words["converse_filler"]
        elif found.task.cancelled() or found.task.exception() is not None:
            yield (" " if sent else "") + words["converse_failed"]
        else:
            catcher.voiced = True

    def heard_only(self, utterance: str, streamed: str, superseded: bool = False) -> None:
        """The voice stack took only `streamed` of the answer to `utterance` (it hung up, or new words
        `superseded` it): once the answer is known, the soul is told it was cut there (unless all of it
        had gone out), and the answer is handed to no one again. A hang-up before any of it went out is
        no cut: a re-delivery usually follows, and is given the whole answer."""
        key = normalize(utterance)
        cached = self.cache.get(key, (None,))[0]
        found = self.pending.get(key) or cached
        if found is None or not (streamed or superseded) or found.cut_at is not None:
            return  # nothing said (or nothing to cut), or already cut by another request: told once
        if found.catcher.voiced or found.catcher.waiting:
            return  # another request took the whole answer, or is taking it still: its own end decides
        found.cut_at = streamed
        if cached is found and len(streamed) < len(found.catcher.reply):
            del self.cache[key]
        task = asyncio.create_task(self._tell_cut(found, streamed))
        self.cuts[key] = task
        task.add_done_callback(lambda done: self._told(key, done))

    def _told(self, key: str, task: asyncio.Task) -> None:
        if self.cuts.get(key) is task:
            del self.cuts[key]

    async def _tell_cut(self, found: Pending, streamed: str) -> None:
        with contextlib.suppress(Exception):  # the answer may still be being made: what it will have been
            await asyncio.wait({found.task}, timeout=PENDING_MAX_S)
        whole = found.catcher.reply if found.catcher.reply is not None else "".join(found.catcher.pieces)
        if not whole or len(streamed) >= len(whole):
            return  # it all went out (the hang-up came after the last word), or there was nothing to say
        fraction = round(len(streamed) / len(whole), 3)
        try:
            await self.listener.cut({"played": [], "cut": whole, "cut_fraction": fraction})
        except Exception as error:  # the inbox could not keep it: say so, the answer itself stands
            log.error("converse: could not record that the answer %r was cut off: %s", whole, error)

    async def close(self) -> None:
        tasks = [p.task for p in self.pending.values()] + list(self.cuts.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
