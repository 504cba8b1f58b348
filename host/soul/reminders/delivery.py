"""The reminders a soul carries (`soul.reminders`, attached in host/soul/run.py): keeping them on time.

The life of one occurrence:

1. Its time comes while the soul sleeps: the sleep ends then, whatever its length or clamp
   (`while_asleep`, asked by the loop's sleep). A reminder never waits for a waking by chance.
2. The waking takes it (`take_due`, from the loop's `_begin`): the snapshot says first what is
   due and for whom, and the soul says it with speak in its own words. One whose time comes while
   the soul is thinking joins the running turn before its next model step, as a person's words do
   (`join_turn`, from the loop's `take_incoming`). On the brainstem — no
   key, the provider down, or today's budget spent (`on_waking` puts such a waking on it) — the
   brainstem says the fixed sentence (TEXT["brainstem"]["reminder"]) itself.
3. It is delivered only when a speak in that waking succeeded (`on_tool_result`: the body's
   /speak answered 2xx, or the voice stack carried the words). A speak of one reminder's exact
   sentence delivers that one; the soul's own words deliver every reminder its waking showed.
4. Not said by the end of the waking (no speak, or it failed): it is retried while the soul
   sleeps, the fixed sentence sent straight to the body with no waking and no model, with the
   backoff of schedule.py, until it is said (a diary line tells the soul) or given up (missed).
   Meanwhile /health carries an alarm naming it. A try runs beside the sleep (`trying`), never in
   its place: a nudge or a person's words wake the soul at once while the body is still saying it,
   and the try goes on; no second try of it starts while one is out, so nothing is said twice.
   A try waits for the body as long as any speak does (the body client's 60 s, which Body Protocol
   asks a body to answer within, docs/body-protocol.md): a body that plays the sentence before it
   answers is heard once. One that answers later still cannot be told from one that never spoke:
   that try counts as failed and is made again.

Everything that changes is in REMINDERS.json before the soul acts on it (store.py), so a kill -9
at any point leaves each reminder either done or still due: due again at the next start.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from soulstack.llm.brainstem import reminder_sentence
from soulstack.llm.types import Message, TextBlock
from soulstack.protocol.client import BodyError
from soulstack.protocol.shapes import ProtocolError
from soulstack.soul import life as lifefiles
from soulstack.soul.prompts import DEFAULT_HUMAN
from soulstack.soul.reminders import schedule
from soulstack.soul.reminders.store import Store
from soulstack.soul.reminders.when import clock_words, describe, localize

if TYPE_CHECKING:
    from soulstack.soul.hooks import ToolEvent
    from soulstack.soul.loop import Soul, Waking
    from soulstack.soul.reminders.store import Reminder

log = logging.getLogger(__name__)

MISSED_ALARM_S = 86400.0  # a missed reminder stays an alarm for a day


@dataclass
class Due:
    """A reminder as the waking that says it sees it."""

    key: str  # this occurrence, "<id>@<due>" (the brainstem says each once)
    words: str
    who: str
    time: str  # "Tuesday 15:00", when it was for
    named: str = ""  # whom the snapshot says it is for: "" when nobody is named and persona.human is the default

    def line(self, text: dict) -> str:
        """The snapshot's line for it (TEXT["reminders"]): "for <someone>" only when there is someone to name."""
        if self.named:
            return text["reminders"]["due"].format(who=self.named, words=self.words, time=self.time)
        return text["reminders"]["due_unnamed"].format(words=self.words, time=self.time)


def occurrence(reminder: Reminder) -> str:
    """One occurrence of a reminder, "<id>@<due>": a repeat's next one is another."""
    return f"{reminder.id}@{reminder.due:.0f}"


class Reminders:
    def __init__(self, soul: Soul):
        self.soul = soul
        self.store = Store(soul.life, soul.tz).load()
        self.in_waking: dict = {}  # id -> Reminder the running waking showed and has not said yet
        self.wakings = 0  # wakings of this process the reminders called (their sleep ended at a due time)
        self.trying: asyncio.Task | None = None  # the retries out to the body now, beside the sleep
        self._trying_ids: set = set()  # the reminders that task is saying
        self._failure = ""  # why the running waking's last speak failed

    # --- the waking ---------------------------------------------------------------------

    def who(self, reminder: Reminder) -> str:
        return reminder.who or self.soul.cfg.persona.human

    def named(self, reminder: Reminder) -> str:
        """The person a line addressed to the soul names: "my human" (the default) reads wrong there."""
        human = self.soul.cfg.persona.human
        return reminder.who or ("" if human == DEFAULT_HUMAN else human)

    def sentence(self, reminder: Reminder) -> str:
        """The brainstem's fixed sentence for it, in the soul's language, said to its person (by name when
        there is a name: `named`)."""
        return reminder_sentence(self.soul.lang.TEXT["brainstem"], reminder.words, self.named(reminder))

    def take_due(self) -> list:
        """The reminders due now, for the waking beginning (a retried one is the sleep's, not its)."""
        now = self.soul.clock.time()
        due = [r for r in self.store.reminders if r.retry_at is None and r.due <= now]
        self.in_waking, self._failure = {r.id: r for r in due}, ""
        return [self._shown(r) for r in due]

    def _shown(self, reminder: Reminder) -> Due:
        soul = self.soul
        when = clock_words(localize(reminder.wall_time(), soul.tz), soul.local_now(), soul.lang)
        return Due(occurrence(reminder), reminder.words, self.who(reminder), when, self.named(reminder))

    def came_due(self) -> list:
        """The reminders whose time came while the running waking thinks (not those it shows already)."""
        now = self.soul.clock.time()
        return [r for r in self.store.reminders if r.retry_at is None and r.due <= now and r.id not in self.in_waking]

    def join_turn(self, waking: Waking) -> None:
        """Reminders that came due during the turn join it before its next model step, the way words
        delivered while it thinks do (the loop's take_incoming): shown as the snapshot shows what is
        due, then said and counted like the waking's own (the brainstem says them if it stands in)."""
        fresh = self.came_due()
        if not fresh:
            return
        shown = [self._shown(r) for r in fresh]
        self.in_waking.update({r.id: r for r in fresh})
        waking.why.due += shown
        blocks = [TextBlock(d.line(self.soul.lang.TEXT)) for d in shown]
        self.soul.session.append(Message("user", blocks), at=self.soul.clock.now().isoformat())
        log.info("waking %d: %d reminder(s) came due while it thinks: shown to its turn", waking.number, len(fresh))

    def unsaid(self, due: list) -> list:
        """(key, words, name) of the waking's reminders not said yet (name: "" when nobody is named): what the brainstem still has to say
        (after a model that said one and then failed, it must not say it again)."""
        keys = {occurrence(r) for r in self.in_waking.values()}
        return [(d.key, d.words, d.named) for d in due if d.key in keys]

    def on_waking(self, soul: Soul, waking: Waking) -> None:
        """A reminder must not wait for money: with today's budget spent, its waking is the brainstem's."""
        if waking.why.due and soul.metabolism.vitals.exhausted(soul.clock.now()) and not waking.on_brainstem:
            log.info("waking %d: a reminder is due and today's budget is spent: the brainstem says it", waking.number)
            waking.on_brainstem = True

    def on_tool_result(self, soul: Soul, event: ToolEvent) -> None:
        if not self.in_waking or not soul.toolbox.speaks(event.name):
            return
        if not event.ok:
            self._failure = " ".join(block.text for block in event.result.content if hasattr(block, "text"))
            return
        said = str(event.input.get("text", ""))
        exact = [r for r in self.in_waking.values() if self.sentence(r) == said]
        now = soul.clock.time()
        for reminder in exact or list(self.in_waking.values()):
            del self.in_waking[reminder.id]
            if reminder not in self.store.reminders:
                continue  # cancelled in this very waking
            self.store.done(reminder, "delivered", now)
            log.info("reminder %d said (%.0f s after its time): %s", reminder.id, now - reminder.due, reminder.words)

    def on_waking_end(self, soul: Soul, waking: Waking) -> None:
        """What its waking did not say is tried again at once, straight through the body, while it sleeps."""
        now = soul.clock.time()
        for reminder in [r for r in self.in_waking.values() if r in self.store.reminders]:
            reminder.retry_at = now
            reminder.error = self._failure or "its waking did not say it"
            log.warning(
                "reminder %d was not said in its waking (%s); the body is asked directly", reminder.id, reminder.error
            )
        if self.in_waking:
            self.store.save()
        self.in_waking = {}

    # --- the sleep ----------------------------------------------------------------------

    def cuts_sleep(self, minutes: float) -> str:
        """What the sleep tool's answer adds when a reminder ends that sleep sooner ("" when none does)."""
        soul, now = self.soul, self.soul.clock.time()
        sooner = [
            r
            for r in self.store.reminders
            if r.retry_at is None and r.id not in self.in_waking and r.due < now + minutes * 60
        ]
        if not sooner:
            return ""
        first = min(sooner, key=lambda r: r.due)
        when = describe(localize(first.wall_time(), soul.tz), soul.local_now(), soul.lang)
        return soul.lang.TEXT["reminders"]["cuts_sleep"].format(when=when, who=self.who(first), words=first.words)

    def while_asleep(self) -> float | None:
        """Starts the retries that are due, beside the sleep (`trying`); then the seconds until the next
        reminder needs the soul: 0 when one is due (wake now), None when none is pending. Never raises:
        the sleep is no waking, and nothing may end a life (a failing check looks again in a minute)."""
        try:
            return self._while_asleep()
        except Exception:
            log.exception("reminders: the check made while asleep failed; it looks again in a minute")
            return 60.0

    def _while_asleep(self) -> float | None:
        now = self.soul.clock.time()
        retrying = [r for r in self.store.reminders if r.retry_at is not None and r.id not in self._trying_ids]
        ready = [r for r in retrying if r.retry_at <= now]
        if ready and self.trying is None:  # one body, one sentence at a time
            self._trying_ids = {r.id for r in ready}
            self.trying = asyncio.ensure_future(self._try(ready))
            retrying = [r for r in retrying if r not in ready]
        waiting = [r.due for r in self.store.reminders if r.retry_at is None]
        if waiting and min(waiting) <= now:
            self.wakings += 1
            return 0.0
        times = waiting + [r.retry_at for r in retrying]
        return max(0.0, min(times) - now) if times else None

    async def _try(self, reminders: list) -> None:
        try:
            for reminder in reminders:
                await self._say(reminder)
        except Exception:  # (a write that failed: what is stored stands, and is tried again)
            log.exception("reminders: a retry made while asleep failed")
        finally:
            self.trying, self._trying_ids = None, set()

    def stop(self) -> None:
        """The life ends: a try still out is left (REMINDERS.json still holds it; the next start retries it)."""
        if self.trying is not None:
            self.trying.cancel()

    async def _say(self, reminder: Reminder) -> None:
        soul, sentence = self.soul, self.sentence(reminder)
        started = soul.clock.time()  # when the words left for the body: what lateness is measured by
        if soul.body is None or not soul.body.has("speak"):
            why = "the body has no voice (no speak endpoint)"
        else:
            try:
                await soul.body.call("speak", {"text": sentence})  # the body client's own wait, as any speak
                why = None
                echo = getattr(soul, "converse", None) and soul.converse.echo
                if echo:  # said aloud (even if cancelled meanwhile): heard back through the mic, no person's words
                    echo.said(sentence)
            except (BodyError, ProtocolError) as error:
                why = f"speak failed: {getattr(error, 'message', '') or error}"
        if reminder not in self.store.reminders:
            log.info("reminder %d was cancelled while the body was asked to say it", reminder.id)
            return
        if why is None:
            self.store.done(reminder, "delivered", started)
            entry = soul.lang.TEXT["reminders"]["said_asleep"].format(words=sentence)
            soul.life.add_entry(lifefiles.DIARY, soul.local_now().replace(tzinfo=None), entry)
            log.info("reminder %d said by the body while the soul slept (try %d)", reminder.id, reminder.attempts + 1)
            return
        now = soul.clock.time()
        self.store.failed(reminder, why, now)
        if reminder.retry_at is None:
            log.error("reminder %d missed: %s (%s)", reminder.id, reminder.words, why)
        else:
            log.warning("reminder %d: %s; next try in %.0f s", reminder.id, why, reminder.retry_at - now)

    # --- /health ------------------------------------------------------------------------

    def health(self) -> dict:
        """Counts, the next one, those being retried, and the alarms that name them."""
        store, soul = self.store, self.soul
        local, now = soul.local_now(), soul.clock.time()
        pending = [r for r in store.reminders if r.retry_at is None]
        retrying = [r for r in store.reminders if r.retry_at is not None]
        alarms = [
            {
                "code": "reminder_undelivered",
                "message": f"reminder {r.id} \u201c{r.words}\u201d for {self.who(r)}, due "
                f"{clock_words(localize(r.wall_time(), soul.tz), local, soul.lang)}, has not been said ({r.error}); try "
                f"{r.attempts + 1} in {max(0, round(r.retry_at - now))} s, given up "
                f"{round((r.due + schedule.GIVE_UP_S - now) / 60)} min from now",
            }
            for r in retrying
        ]
        missed = [o for o in store.recent if o["outcome"] == "missed" and now - o["at"] < MISSED_ALARM_S]
        if missed:
            last = missed[-1]
            alarms.append(
                {
                    "code": "reminder_missed",
                    "message": f"reminder {last['id']} \u201c{last['words']}\u201d was never said ({last['error']})",
                }
            )
        nearest = min(pending, key=lambda r: r.due, default=None)
        return {
            "pending": len(store.reminders),
            "delivered": store.delivered,
            "missed": store.missed,
            "next": None
            if nearest is None
            else {"id": nearest.id, "words": nearest.words, "at": nearest.wall_time().isoformat(timespec="minutes")},
            "retrying": [{"id": r.id, "words": r.words, "attempts": r.attempts, "error": r.error} for r in retrying],
            "wakingsCalled": self.wakings,
            "alarms": alarms,
        }
