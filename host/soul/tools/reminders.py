"""remind, reminders, cancel_reminder: promises of a time (host/soul/reminders/ keeps them).

`remind` reads the time (when.py), refuses one that is past or unreadable with a tool error
saying what to give instead, and answers with the resolved local time ("Tuesday 15:00, in
2 h 10 min") so the soul can tell the person what it understood. The words are stored as
given; they are the person's, said back to them when the time comes.
"""

from soulstack.soul.reminders.schedule import REPEATS
from soulstack.soul.reminders.store import MAX_PENDING
from soulstack.soul.reminders.when import WhenError, clock_words, describe, localize, resolve
from soulstack.soul.tools import Outcome, SoulTool

MAX_WORDS_CHARS = 300  # a reminder is said in one breath (and fits the body's speak cap)


def _repeat_words(words: dict, repeat: str | None) -> str:
    return words[f"repeat_{repeat}"] if repeat else ""


async def remind(soul, words: str, at: str = "", after: str = "", who: str = "", repeat: str = "") -> Outcome:
    text = soul.lang.TEXT["reminders"]
    said, repeating = " ".join(words.split()), repeat.strip().lower() or None
    store = soul.reminders.store
    problem = None
    if not said:
        problem = text["no_words"]
    elif len(said) > MAX_WORDS_CHARS:
        problem = text["too_long"].format(limit=MAX_WORDS_CHARS)
    elif repeating is not None and repeating not in REPEATS:
        problem = text["bad_repeat"]
    elif len(store.reminders) >= MAX_PENDING:
        problem = text["too_many"].format(limit=MAX_PENDING)
    if problem:
        return Outcome.text(problem, ok=False)
    now = soul.local_now()
    try:
        when = resolve(now, at.strip() or None, after.strip() or None, repeating)
    except WhenError as error:
        return Outcome.text(text[error.key].format(value=error.value), ok=False)
    reminder = store.add(said, " ".join(who.split()) or None, when, repeating)
    first = localize(reminder.wall_time(), soul.tz)  # a weekdays reminder may have moved off the weekend
    return Outcome.text(
        text["set"].format(
            id=reminder.id,
            when=describe(first, now, soul.lang),
            repeat=_repeat_words(text, repeating),
            who=soul.reminders.who(reminder),
            words=said,
        )
    )


async def reminders(soul) -> Outcome:
    text = soul.lang.TEXT["reminders"]
    now, part = soul.local_now(), soul.reminders
    lines = []
    for reminder in part.store.reminders:
        when = localize(reminder.wall_time(), soul.tz)
        who = part.who(reminder)
        if reminder.retry_at is not None:
            clock = clock_words(when, now, soul.lang)
            lines.append(
                text["listed_retrying"].format(
                    id=reminder.id, clock=clock, who=who, words=reminder.words, error=reminder.error
                )
            )
        else:
            lines.append(
                text["listed"].format(
                    id=reminder.id,
                    when=describe(when, now, soul.lang),
                    repeat=_repeat_words(text, reminder.repeat),
                    who=who,
                    words=reminder.words,
                )
            )
    return Outcome.text("\n".join(lines) if lines else text["none"])


async def cancel_reminder(soul, id: int) -> Outcome:
    text = soul.lang.TEXT["reminders"]
    cancelled = soul.reminders.store.cancel(int(id))
    if cancelled is None:
        return Outcome.text(text["cancel_none"].format(id=id), ok=False)
    return Outcome.text(text["cancelled"].format(id=cancelled.id, words=cancelled.words))


def reminder_tools() -> list:
    string = {"type": "string"}
    return [
        SoulTool(
            "remind",
            "Promise to remind someone of something at a time: you will be woken then to say it, even "
            "if you chose a longer sleep. Give the time as `at` (your local date-time: 'YYYY-MM-DD HH:MM', "
            "'HH:MM' for today, 'tomorrow HH:MM', 'tuesday HH:MM') or as `after` (a duration from now: "
            "'10 min', '2 h 10 min', '45 s'). The answer says the time it understood.",
            {
                "words": {
                    **string,
                    # the fixed sentence, when no mind words it, is "Time to <words>." (host/soul/prompts/)
                    "description": "what they should do then, as a short phrase in the person's own terms "
                    "('stretch', 'call your mother')",
                },
                "at": {**string, "description": "a local date-time"},
                "after": {**string, "description": "a duration from now"},
                "who": {**string, "description": "who it is for (your human when left out)"},
                "repeat": {
                    "type": "string",
                    "enum": list(REPEATS),
                    "description": "to repeat it at the same local time",
                },
            },
            remind,
            ["words"],
            informs=False,
            gist="words",
        ),
        SoulTool(
            "reminders",
            "List the reminders you have promised and not yet said, with their numbers.",
            {},
            reminders,
        ),
        SoulTool(
            "cancel_reminder",
            "Cancel a pending reminder by its number (reminders lists them).",
            {"id": {"type": "integer", "description": "the reminder's number"}},
            cancel_reminder,
            ["id"],
            informs=False,
        ),
    ]
