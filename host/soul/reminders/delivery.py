"""The reminders a soul carries (`soul.reminders`, attached in host/soul/run.py): keeping them on time.

The life of one occurrence:

1. Its time comes while the soul sleeps: the sleep ends then, whatever its length or clamp
   (`while_asleep`, asked by the loop's sleep). A reminder never waits for a waking by chance.
2. The waking takes it (`take_due`, from the loop's `_begin`): the snapshot says first what is
   due and for whom, and the soul says it with speak in its own words. On the brainstem — no
   key, the provider down, or today's budget spent (`on_waking` puts such a waking on it) — the
   brainstem says the fixed sentence (TEXT["brainstem"]["reminder"]) itself.
3. It is delivered only when a speak in that waking succeeded (`on_tool_result`: the body's
   /speak answered 2xx, or the voice stack carried the words). A speak of one reminder's exact
   sentence delivers that one; the soul's own words deliver every reminder its waking showed.
4. Not said by the end of the waking (no speak, or it failed): it is retried while the soul
   sleeps, the fixed sentence sent straight to the body with no waking and no model, with the
   backoff of schedule.py, until it is said (a diary line tells the soul) or given up (missed).
   Meanwhile /health carries an alarm naming it.

Everything that changes is in REMINDERS.json before the soul acts on it (store.py), so a kill -9
at any point leaves each reminder either done or still due: due again at the next start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from soulstack.llm.brainstem import reminder_sentence
from soulstack.protocol.client import BodyError
from soulstack.protocol.shapes import ProtocolError
from soulstack.soul import life as lifefiles
from soulstack.soul.reminders import schedule
from soulstack.soul.reminders.store import Store
from soulstack.soul.reminders.when import clock_words, localize

if TYPE_CHECKING:
    from soulstack.soul.hooks import ToolEvent
    from soulstack.soul.loop import Soul, Waking
    from soulstack.soul.reminders.store import Reminder

log = logging.getLogger(__name__)

MISSED_ALARM_S = 86400.0  # a missed reminder stays an alarm for a day
# A try made asleep waits this long for the body (its own timeout is 60 s): meanwhile the sleep hears
# no nudge, and a body that takes longer to take a sentence is too late for a reminder anyway.
SAY_TIMEOUT_S = 15.0


@dataclass
class Due:
    """A reminder as the waking that says it sees it."""

    key: str  # this occurrence, "<id>@<due>" (the brainstem says each once)
    words: str
    who: str
    time: str  # "Tuesday 15:00", when it was for


def occurrence(reminder: Reminder) -> str:
    """One occurrence of a reminder, "<id>@<due>": a repeat's next one is another."""
    return f"{reminder.id}@{reminder.due:.0f}"


class Reminders:
    def __init__(self, soul: Soul):
        self.soul = soul
        self.store = Store(soul.life, soul.tz).load()
        self.in_waking: dict = {}  # id -> Reminder the running waking showed and has not said yet
        self.wakings = 0  # wakings of this process the reminders called (their sleep ended at a due time)
        self._failure = ""  # why the running waking's last speak failed

    # --- the waking ---------------------------------------------------------------------

    def who(self, reminder: Reminder) -> str:
        return reminder.who or self.soul.cfg["persona"]["human"]

    def sentence(self, reminder: Reminder) -> str:
        """The brainstem's fixed sentence for it, in the soul's language."""
        return reminder_sentence(self.soul.lang.TEXT["brainstem"], reminder.words, self.who(reminder))

    def take_due(self) -> list:
        """The reminders due now, for the waking beginning (a retried one is the sleep's, not its)."""
        soul, now = self.soul, self.soul.clock.time()
        due = [r for r in self.store.reminders if r.retry_at is None and r.due <= now]
        self.in_waking, self._failure = {r.id: r for r in due}, ""
        local = soul.local_now()
        return [
            Due(
                occurrence(r),
                r.words,
                self.who(r),
                clock_words(localize(r.wall_time(), soul.tz), local, soul.lang),
            )
            for r in due
        ]

    def unsaid(self, due: list) -> list:
        """(key, words, who) of the waking's reminders not said yet: what the brainstem still has to say
        (after a model that said one and then failed, it must not say it again)."""
        keys = {occurrence(r) for r in self.in_waking.values()}
        return [(d.key, d.words, d.who) for d in due if d.key in keys]

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

    async def while_asleep(self) -> float | None:
        """Retries that are due are tried now; then the seconds until the next reminder needs the soul:
        0 when one is due (wake now), None when none is pending. Never raises: the sleep is no
        waking, and nothing may end a life (a disk that fails a write is tried again in a minute)."""
        try:
            return await self._while_asleep()
        except Exception:
            log.exception("reminders: the check made while asleep failed; it looks again in a minute")
            return 60.0

    async def _while_asleep(self) -> float | None:
        now = self.soul.clock.time()
        for reminder in [r for r in self.store.reminders if r.retry_at is not None and r.retry_at <= now]:
            await self._say(reminder)
        now = self.soul.clock.time()
        waiting = [r.due for r in self.store.reminders if r.retry_at is None]
        if waiting and min(waiting) <= now:
            self.wakings += 1
            return 0.0
        times = waiting + [r.retry_at for r in self.store.reminders if r.retry_at is not None]
        return max(0.0, min(times) - now) if times else None

    async def _say(self, reminder: Reminder) -> None:
        soul, sentence = self.soul, self.sentence(reminder)
        if soul.body is None or not soul.body.has("speak"):
            why = "the body has no voice (no speak endpoint)"
        else:
            try:
                await soul.body.call("speak", {"text": sentence}, timeout_s=SAY_TIMEOUT_S)
                why = None
            except (BodyError, ProtocolError) as error:
                why = f"speak failed: {getattr(error, 'message', '') or error}"
        now = soul.clock.time()
        if why is None:
            self.store.done(reminder, "delivered", now)
            entry = soul.lang.TEXT["reminders"]["said_asleep"].format(words=sentence)
            soul.life.add_entry(lifefiles.DIARY, soul.local_now().replace(tzinfo=None), entry)
            log.info("reminder %d said by the body while the soul slept (try %d)", reminder.id, reminder.attempts + 1)
            return
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
