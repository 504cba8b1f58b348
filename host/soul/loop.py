"""The soul: wake -> snapshot -> one turn with the model and its tools -> sleep -> ...

`Soul.live()` runs until cancelled. Nothing that goes wrong in a waking (a
model that keeps failing, a body that is gone, a bug in a tool) ends it: the
waking is logged and the soul sleeps errorSleepMinutes.

Two ways in from the outside, both safe at any moment and never dropped:
  nudge(nudge)       kept on disk (nudges/inbox.py) and shown in the next waking's
                     snapshot. Asleep: it wakes at once, unless a nudge woke
                     it less than nudge.minIntervalSeconds ago: then it wakes
                     when that interval ends (a person's words: within
                     seconds), with everything that arrived meanwhile.
  deliver(words)     the human speaking now. Asleep: it wakes with them;
                     thinking: they join the running turn before its next
                     model step (see turn.py).
"""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING
from collections.abc import Callable

from soulstack.protocol.client import BodyError
from soulstack.protocol.nudges import Nudge, told_in, words_apart, words_of
from soulstack.llm.brainstem import MEMORY_FILE, Brainstem, Situation
from soulstack.llm.types import Message
from soulstack.soul import rhythm, snapshot
from soulstack.clocks import Clock
from soulstack.soul.hooks import Hooks
from soulstack.soul.nudges.inbox import FILENAME as INBOX_FILE, Inbox
from soulstack.soul.prompts import texts
from soulstack.soul.sleep import Sleep
from soulstack.soul.snapshot import BodySense, WakeReasons, fmt_minutes
from soulstack.soul.turn import run_turn
from soulstack.soul.waking import Delivery, Waking, collapse, tally

if TYPE_CHECKING:
    from soulstack.soul.config import SoulConfig
    from soulstack.protocol.client import BodyClient
    from soulstack.soul.converse.listener import SoulListener
    from soulstack.soul.life import Life
    from soulstack.soul.memory.ceiling import Ceiling
    from soulstack.soul.memory.consolidate import Nightly
    from soulstack.soul.memory.keepwarm import KeepWarm
    from soulstack.soul.memory.session import Session
    from soulstack.soul.metabolism.metabolism import Metabolism
    from soulstack.soul.reminders.delivery import Reminders
    from soulstack.soul.tools import Toolbox

log = logging.getLogger(__name__)

STATUS_PROBE_S = 5.0


class Soul:
    """One soul: its config, its life files and session, its body, its tools, and the loop of its life.

    build_soul (host/soul/run.py) makes it and attaches the parts below, hanging each one's
    functions on `hooks`; nothing else sets them."""

    metabolism: Metabolism  # drives, vitals, the day's costs (host/soul/metabolism/)
    ceiling: Ceiling  # the context ceiling: folds the history when it grows too big (host/soul/memory/ceiling.py)
    nightly: Nightly  # the night's consolidation (host/soul/memory/consolidate.py)
    keep_warm: KeepWarm  # asked by the sleep when the prompt cache needs a refresh (host/soul/memory/keepwarm.py)
    converse: SoulListener  # the voice stack's words in, the soul's answer out (host/soul/converse/listener.py)
    reminders: Reminders  # promises of a time: what is due, retries while asleep (host/soul/reminders/)

    def __init__(
        self,
        cfg: SoulConfig,
        *,
        model,
        life: Life,
        session: Session,
        toolbox: Toolbox,
        body: BodyClient | None = None,
        clock: Clock | None = None,
        hooks: Hooks | None = None,
        rng: random.Random | None = None,
        routine_model=None,
    ):
        self.cfg = cfg
        self.clock = clock or Clock()
        self.tz = rhythm.zone(cfg.timezone)
        self.lang = texts(cfg.persona.language)  # the module of its language: .TEXT, .WEEKDAYS, .system_prompt
        self.life = life
        self.session = session
        self.body = body  # a BodyClient, or None when no endpoint is configured
        self.toolbox = toolbox
        self.hooks = hooks or Hooks()
        self.rng = rng or random.Random()
        self.brainstem = Brainstem(  # its words: the soul's language; what it said: kept in soulDir
            self.situation,
            words=self.lang.TEXT["brainstem"],
            memory=Path(cfg.soul_dir) / MEMORY_FILE,
            clock=self.clock,
        )
        self.model = model or self.brainstem
        self.routine_model = routine_model if model else None  # model.routine: see mind()
        self.last_mind = self.model  # the model the last waking thought with (keep-warm keeps its cache)
        self._last_body: str | None = None
        if self.model is self.brainstem:
            log.warning(
                "running WITHOUT a language model (brainstem): it keeps its rhythm, senses its body and "
                "notes what it hears, but cannot think. Set ANTHROPIC_API_KEY or OPENAI_BASE_URL to give it a mind."
            )
        self.system = self.lang.system_prompt(cfg.persona, cfg.body.name, flock=bool(cfg.flock.url))
        self.sight = snapshot.InnerSight(toolbox)  # what of its inner life it already has in view (snapshot.py)
        self.tools = toolbox.specs()
        self.state = "starting"  # starting | thinking | asleep
        self.waking: Waking | None = None
        self.wakings = 0
        self.last_error: str | None = None
        self.pending: list = []  # Deliveries (converse words) for the next waking (they end its sleep)
        self.inbox = Inbox(Path(cfg.soul_dir) / INBOX_FILE, cfg.nudge.min_interval_seconds, clock=self.clock).load()
        self._incoming: list = []  # Deliveries for the running turn
        self.sleep = Sleep(self)  # between wakings (host/soul/sleep.py)
        self.snapshot_at: int | None = None  # index in session.messages of the running waking's snapshot; None asleep

    # --- time -------------------------------------------------------------------------

    def local_now(self):
        return self.clock.now().astimezone(self.tz)

    def is_night(self) -> bool:
        return rhythm.night_now(self.cfg.loop, self.local_now())

    def plan_sleep(self, asked: float | None) -> rhythm.SleepPlan:
        plan = rhythm.plan_sleep(self.cfg.loop, self.local_now(), asked)
        return self.hooks.chain("adjust_sleep", self, plan)

    # --- the ways in --------------------------------------------------------------------

    async def nudge(self, nudge: Nudge) -> None:
        """Keep a nudge; returns once it is on disk (answer 202 then). The sleep decides when it wakes."""
        await self.inbox.add(nudge, while_thinking=self.state == "thinking")
        self.hooks.each("on_nudge", self, nudge)
        self.sleep.wake.set()  # an asleep soul looks at its inbox: now, or at the end of the interval

    def deliver(
        self, words: str, on_enter: Callable | None = None, speaker: str | None = None, heard_by: str | None = None
    ) -> None:
        """The human (or `speaker`) speaks now (`heard_by`: the body that heard them, when named). Thinking:
        into the running turn; otherwise: wake with them."""
        thinking = self.state == "thinking"
        delivery = Delivery(words, while_thinking=thinking, on_enter=on_enter, speaker=speaker, heard_by=heard_by)
        self.hooks.each("on_contact", self, "converse")  # the human really reached it (drives' missing)
        if self.state == "thinking":
            self._incoming.append(delivery)
        else:
            self.pending.append(delivery)
            self.sleep.wake.set()

    def asleep_for(self) -> float | None:
        """Seconds until its alarm while asleep (/health's asleepUntil, the terminal face's line); None awake.
        A nudge may wake it sooner."""
        if self.state != "asleep" or self.sleep.slept_at is None or self.sleep.alarm_s is None:
            return None
        return max(0.0, self.sleep.slept_at + self.sleep.alarm_s - self.clock.monotonic())

    def has_incoming(self) -> bool:
        """Something for the running turn: words delivered, or a reminder whose time came meanwhile."""
        return bool(self._incoming) or bool(self.reminders.came_due())

    def take_incoming(self) -> list:
        """Deliveries for the running turn (turn.py calls this before every model step). A reminder whose
        time came while it thinks joins the turn here too, shown as what is due (reminders' join_turn)."""
        if self.waking is not None and self.state == "thinking":
            self.reminders.join_turn(self.waking)
        taken, self._incoming = self._incoming, []
        return taken

    def situation(self) -> Situation:
        """What the brainstem knows of this waking."""
        waking = self.waking
        if waking is None:
            return Situation()
        return Situation(
            [*waking.why.nudged, *waking.why.nudged_while_thinking],  # what the nudges said (the flock's asks)
            self.persons_words(),
            self.is_night(),
            self.cfg.loop.default_sleep_minutes,
            waking.step,
            reminders=self.reminders.unsaid(waking.why.due),
            why=self._why_words(waking.why),
        )

    def _why_words(self, why: WakeReasons) -> list:
        """Why it woke, in its own words, for its diary: the log line's causes (WakeReasons.causes),
        each once (three lines heard are one "someone spoke to me"; the diary quotes the words)."""
        text = self.lang.TEXT
        words = []
        for kind, what in why.causes():
            if kind == "reminder":
                words.append(text["reminders"]["reason"].format(who=what.who, words=what.words))
            elif kind == "alarm":
                words.append(text["brainstem"]["nothing"])
            else:
                words.append(text["woke"][kind].format(what=what))
        return list(dict.fromkeys(words))

    def persons_words(self) -> list:
        """A person's own words in this waking, each once: spoken through converse, in a nudge (the
        nudge contract's `words_of`, its one rule), heard during the turn. What the brainstem
        answers, and what `flock_verdict` needs (host/soul/tools/flock.py)."""
        waking = self.waking
        if waking is None:
            return []
        typed = [words for entry in waking.nudges for words in words_of(entry.nudge)]
        return collapse([*waking.why.heard, *typed, *waking.heard_in_turn])

    def mind(self, waking: Waking):
        """The model for this waking's next step: the routine one (model.routine) only when nothing
        calls for more — no person, no nudge, not the first waking, the body as it was, no consolidation."""
        if self.routine_model is None or waking.routine is False:
            return self.model
        why = waking.why
        quiet = not (
            why.first
            or why.nudged
            or why.nudged_while_thinking
            or why.heard
            or waking.delivered
            or waking.nudges
            or waking.heard_in_turn
            or waking.body_changed
            or waking.consolidating
        )
        if not quiet:
            waking.routine = False  # once the main mind has it, it keeps it to the end of the waking
        return self.routine_model if quiet else self.model

    # --- a life -------------------------------------------------------------------------

    async def live(self) -> None:
        """Wake, live, sleep, forever (until cancelled)."""
        try:
            await self._live_on()
        finally:
            self.reminders.stop()  # a reminder's try still out to the body ends with the life

    async def _live_on(self) -> None:
        first = True
        while True:
            waking = self._begin(first)
            first = False
            try:
                await self._live_one(waking)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                waking.error = f"{type(error).__name__}: {error}"
                self.last_error = waking.error
                log.exception("waking %d failed", waking.number)
            if waking.shown:
                # The waking that showed them has ended (a failed one too: a nudge that breaks a turn
                # must not break every turn after it): the nudges leave the inbox. A kill -9 or a stop
                # before this keeps them, marked shown: the next life answers them without showing them twice.
                try:
                    await self.inbox.ended()
                except OSError as error:  # a full disk: kept on disk, and owed an answer again, is the safe side
                    log.warning(
                        "%s could not be rewritten (%s): a restart answers its nudges again",
                        self.inbox.path.name,
                        error,
                    )
            sleep_s = self._end(waking)
            await self.sleep.until_woken(sleep_s)

    def _begin(self, first: bool) -> Waking:
        self.state = "thinking"
        self.sleep.wake.clear()  # nudges from now on belong to the next waking
        delivered, self.pending = self.pending, []
        nudges = self.inbox.take(self.clock.monotonic())
        slept = early = None
        if self.sleep.slept_at is not None:
            slept = (self.clock.monotonic() - self.sleep.slept_at) / 60
            early = max(0.0, (self.sleep.alarm_s / 60) - slept) if self.sleep.alarm_s is not None else None
        last = self.waking  # the waking it slept after (None at the first)
        told = last is not None and not last.error and last.sleep is not None and last.sleep.told
        why = WakeReasons(first=first, slept_minutes=slept, early_minutes=early, sleep_told=told)
        why.due = self.reminders.take_due()  # the reminders due now: the snapshot says them first
        why.heard = [delivery.text for delivery in delivered]
        why.speakers = {delivery.text: delivery.speaker for delivery in delivered if delivery.speaker}
        why.heard_by = {delivery.text: delivery.heard_by for delivery in delivered if delivery.heard_by}
        for entry in nudges:
            if entry.shown:  # a snapshot stored before a kill shows it already; its words are still owed an answer
                continue
            reason = told_in(entry.nudge, self.lang.TEXT["nudge"])  # its fields in the soul's own words
            (why.nudged_while_thinking if entry.while_thinking else why.nudged).append(reason)
            why.heard += words_apart(entry.nudge)  # a person's words its reason does not quote
            if entry.nudge.speaker:  # who spoke them, when a voiceprint knew
                why.speakers.update(dict.fromkeys(words_apart(entry.nudge), entry.nudge.speaker))
        why.nudged, why.nudged_while_thinking = tally(why.nudged), tally(why.nudged_while_thinking)
        why.heard = collapse(why.heard)
        self.wakings += 1
        self.waking = Waking(self.wakings, self.clock.now(), why, delivered, nudges)
        return self.waking

    async def _live_one(self, waking: Waking) -> None:
        local = self.local_now()
        self.life.backup_daily(local.date())
        body = await self.sense_body()
        waking.body_changed = self._last_body is not None and body.state != self._last_body
        self._last_body = body.state
        self.hooks.each("on_waking", self, waking)
        felt = [text for text in self.hooks.each("felt", self, self.clock.now()) if text]
        inner = self.sight.block(self.life, self.lang, local, self.rng, self.session)
        blocks = [inner] if inner.text else []  # nothing new inside: the volatile block alone
        blocks.append(
            snapshot.now_block(
                self.lang,
                self.cfg.persona,
                self.cfg.body.name,
                local,
                self.is_night(),
                waking.why,
                body,
                rhythm.ceiling(self.cfg.loop, local),
                felt,
                self.sight,
                self.session,
            )
        )
        self.snapshot_at = len(self.session.messages)  # from here the view shows this waking as the running one
        self.session.append(Message("user", blocks), at=self.clock.now().isoformat(), waking=True)
        waking.shown = True
        await self.inbox.shown()  # on disk: a kill from here on does not show them twice
        for delivery in waking.delivered:
            if delivery.on_enter:
                delivery.on_enter()
        if self.nightly.due(waking):  # the night's consolidation: its own turn, then it folds the day itself
            waking.consolidating = True
            self.nightly.begin(waking)
            await run_turn(self, waking)
            self.nightly.end(waking)
            return
        await self.hooks.each_awaited("before_turn", self, waking)  # e.g. the context ceiling's fold
        restored = self.sight.after_fold(self.life, self.lang, local, self.session)
        if restored:  # the fold took away the message that showed part of its inner life: show it again
            self.session.append(Message("user", [restored]), at=self.clock.now().isoformat())
        await run_turn(self, waking)

    async def sense_body(self) -> BodySense:
        """The passive body sense: a /status probe with a short timeout."""
        if self.body is None or not self.body.has("status"):
            return BodySense("none")
        try:
            answer = await self.body.status(timeout_s=STATUS_PROBE_S)
        except BodyError as error:
            return BodySense("silent", error.message or str(error))
        return BodySense("awake" if answer["online"] else "dormant")

    def _end(self, waking: Waking) -> float:
        """Log the waking in one line; the seconds to sleep."""
        # Words that arrived after the last model step are not lost: they open the next waking (and so
        # does a reminder due since: not take_incoming, which would show it to a turn that is over).
        self.pending += self._incoming
        self._incoming = []
        if waking.error:
            minutes = self.cfg.loop.error_sleep_minutes
            plan_text = f"error sleep {fmt_minutes(minutes)} min ({waking.error})"
        else:
            if waking.sleep is None:
                waking.sleep = self.plan_sleep(None)
            minutes = waking.sleep.minutes
            asked = waking.sleep.asked
            said = f" (asked {fmt_minutes(asked)})" if asked is not None and asked != minutes else ""
            plan_text = f"sleeps {fmt_minutes(minutes)} min{said}"
        # Asleep, the last waking's images are already "earlier" ones: a keep-warm refresh must send
        # them as the next waking will, as placeholders, or its prefix would not match.
        self.snapshot_at = None
        self.hooks.each("on_waking_end", self, waking)
        if self.pending:
            plan_text += "; woken again at once (something arrived while it was thinking)"
        elif self.inbox.due_in(self.clock.monotonic()) is not None:
            plan_text += "; nudges arrived while it was thinking (they wake it as soon as they are due)"
        log.info(
            "waking %d: %s — tools: %s — %s%s",
            waking.number,
            self._why_text(waking.why),
            ", ".join(waking.tools_used) or "none",
            plan_text,
            " [brainstem]" if (waking.on_brainstem or self.model is self.brainstem) else "",
        )
        self.state = "asleep"
        return minutes * 60

    @staticmethod
    def _why_text(why: WakeReasons) -> str:
        """The log line's "woke: ...", in English, from the same causes the diary is worded from."""
        said = {
            "started": lambda _: "started",
            "nudged": lambda reason: f"nudged ({reason})",
            "while_thinking": lambda reason: f"arrived while thinking ({reason})",
            "heard": lambda words: f"heard ({words})",
            "reminder": lambda due: f"reminder ({due.words})",
            "alarm": lambda minutes: f"alarm after {fmt_minutes(minutes)} min",
        }
        return "woke: " + "; ".join(said[kind](what) for kind, what in why.causes())
