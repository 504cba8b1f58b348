"""REMINDERS.json in soulDir: the promises of a time the soul made, and how they went.

One of the life files (host/soul/life.py: written atomically, 0600 — it holds a person's
words — backed up daily with the others, the newest backup read when it cannot be). Its shape:

  {"version": 1, "next_id": 4, "delivered": 12, "missed": 0,
   "reminders": [{"id": 3, "words": "call your mother", "who": "Ana", "wall": "2026-12-01T15:00:00",
                  "due": 1796220000.0, "repeat": null, "attempts": 0, "retry_at": null, "error": null}],
   "recent": [{"id": 2, "words": "...", "who": "Ana", "due": ..., "outcome": "delivered", "at": ..., "late_s": 4.0}]}

`wall` is the occurrence's local wall time (a repeat rolls forward from it), `due` the same
instant as seconds since 1970 (what the sleep and the lateness are measured by). `attempts`,
`retry_at` and `error` are set only while a reminder its waking did not get said is retried.
Every change is written before it is acted on, so a kill -9 loses no promise.
"""

import json
import logging
from dataclasses import asdict, dataclass
from datetime import datetime, tzinfo

from soulstack.soul import life as lifefiles
from soulstack.soul.reminders import schedule
from soulstack.soul.reminders.when import localize

log = logging.getLogger(__name__)

FILENAME = lifefiles.REMINDERS
RECENT_KEPT = 20
MAX_PENDING = 200


@dataclass
class Reminder:
    id: int
    words: str
    who: str | None
    wall: str  # local wall time of this occurrence, ISO, naive
    due: float  # the same instant, seconds since 1970
    repeat: str | None = None  # None | "daily" | "weekdays" | "weekly"
    attempts: int = 0  # failed tries to say it (while asleep, after its waking)
    retry_at: float | None = None  # when the next try is (None: it waits for its waking)
    error: str | None = None  # why the last try failed

    def wall_time(self) -> datetime:
        return datetime.fromisoformat(self.wall)


class Store:
    def __init__(self, life, tz: tzinfo):
        self.life, self.tz = life, tz
        self.reminders: list = []
        self.next_id = 1
        self.delivered = self.missed = 0
        self.recent: list = []  # the last RECENT_KEPT outcomes, oldest first

    def load(self) -> "Store":
        try:
            text = self.life.read(FILENAME)
        except lifefiles.Unreadable:
            return self  # Life said so (the soul sees it); nothing is written over it unread
        if not text.strip():
            return self
        data: dict | None
        try:
            data = self._parse(text)
        except (ValueError, TypeError, AttributeError) as error:
            data = self._from_backup(text, error)
            if data is None:
                return self
            self._take(data)
            self.save()  # the backup's promises in place of the damage: today's backup copies them, not it
            return self
        self._take(data)
        return self

    def _take(self, data: dict) -> None:
        self.next_id = int(data.get("next_id", 1))
        self.delivered, self.missed = int(data.get("delivered", 0)), int(data.get("missed", 0))
        self.recent = list(data.get("recent", []))

    def _parse(self, text: str) -> dict:
        """The file's data, checked: a wrong type anywhere is damage (ValueError), never a crash later."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        counts = {key: data.get(key, default) for key, default in (("next_id", 1), ("delivered", 0), ("missed", 0))}
        for key, value in counts.items():
            if not _whole(value) or value < 0:
                raise ValueError(f"{key} is {value!r}, not a whole number")
        recent = data.get("recent", [])
        if not isinstance(recent, list) or not all(isinstance(o, dict) and _number(o.get("at")) for o in recent):
            raise ValueError("recent is not a list of outcomes with their times")
        self.reminders = [_reminder(item) for item in data.get("reminders", [])]
        return {**data, **counts, "recent": recent}

    def _from_backup(self, text: str, error) -> dict | None:
        """A REMINDERS.json that is not what it should be: its bytes kept aside, its newest backup used
        (or none: no reminders), and the soul told at its next waking."""
        self.life.write(f"{FILENAME}.damaged", text)
        data, backup = None, None
        for backup in self.life.backups_of(FILENAME):  # the newest that reads (an older soul backed up damage too)
            try:
                data = self._parse(backup.read_text(encoding="utf-8"))
                break
            except (OSError, ValueError, TypeError, AttributeError):
                continue
        where = f"the backup from {backup.parent.name} is used" if data and backup else "no backup could stand in"
        problem = f"{FILENAME} cannot be read ({error}); kept aside as {FILENAME}.damaged, {where}"
        log.error(problem)
        self.life.problems.append(problem)
        if data is None:
            self.reminders = []
        return data

    def save(self) -> None:
        data = {
            "version": 1,
            "next_id": self.next_id,
            "delivered": self.delivered,
            "missed": self.missed,
            "reminders": [asdict(reminder) for reminder in self.reminders],
            "recent": self.recent[-RECENT_KEPT:],
        }
        self.life.write(FILENAME, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    # --- what the tools do ----------------------------------------------------------------

    def add(self, words: str, who: str | None, when: datetime, repeat: str | None) -> Reminder:
        local = when.astimezone(self.tz).replace(tzinfo=None)
        wall = schedule.first_wall(local, repeat)  # a weekdays reminder moves off the weekend
        due = when.timestamp() if wall == local else localize(wall, self.tz).timestamp()
        reminder = Reminder(self.next_id, words, who, wall.isoformat(), due, repeat)
        self.next_id += 1
        self.reminders.append(reminder)
        self.reminders.sort(key=lambda r: r.due)
        self.save()
        return reminder

    def cancel(self, number: int) -> Reminder | None:
        found = self.get(number)
        if found is not None:
            self.reminders.remove(found)
            self.save()
        return found

    def get(self, number: int) -> Reminder | None:
        return next((r for r in self.reminders if r.id == number), None)

    # --- how a reminder went ----------------------------------------------------------------

    def done(self, reminder: Reminder, outcome: str, now: float) -> None:
        """Said ("delivered") or given up ("missed"): counted, kept in `recent`; a one-off goes,
        a repeat rolls forward to its next occurrence after `now` (any skipped are missed too)."""
        self.recent.append(
            {
                "id": reminder.id,
                "words": reminder.words,
                "who": reminder.who,
                "due": reminder.due,
                "outcome": outcome,
                "at": now,
                "late_s": round(now - reminder.due, 1),
                "error": reminder.error if outcome == "missed" else None,
            }
        )
        self.recent = self.recent[-RECENT_KEPT:]
        if outcome == "delivered":
            self.delivered += 1
        else:
            self.missed += 1
        if reminder.repeat is None:
            self.reminders.remove(reminder)
        else:
            wall, due, skipped = schedule.next_after(reminder.wall_time(), reminder.repeat, now, self.tz)
            self.missed += skipped
            reminder.wall, reminder.due = wall.isoformat(), due
            reminder.attempts, reminder.retry_at, reminder.error = 0, None, None
            self.reminders.sort(key=lambda r: r.due)
        self.save()

    def failed(self, reminder: Reminder, why: str, now: float) -> None:
        """A try to say it failed: try again after the backoff, or give it up (schedule.py)."""
        reminder.attempts += 1
        reminder.error = why
        if schedule.given_up(reminder.due, now):
            self.done(reminder, "missed", now)
            return
        reminder.retry_at = now + schedule.retry_delay(reminder.attempts)
        self.save()


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _reminder(item) -> Reminder:
    """One stored reminder, its fields' types checked (ValueError or TypeError when one is wrong)."""
    reminder = Reminder(**item)  # TypeError: a field missing or unknown
    if not (_whole(reminder.id) and isinstance(reminder.words, str) and _number(reminder.due)):
        raise ValueError(f"reminder {item.get('id')!r}: its id, words or due is of the wrong type")
    if not (_whole(reminder.attempts) and (reminder.retry_at is None or _number(reminder.retry_at))):
        raise ValueError(f"reminder {reminder.id}: its attempts or retry_at is of the wrong type")
    if not isinstance(reminder.wall, str) or not (reminder.who is None or isinstance(reminder.who, str)):
        raise ValueError(f"reminder {reminder.id}: its wall time or who is of the wrong type")
    reminder.wall_time()  # ValueError: not an ISO time
    reminder.due = float(reminder.due)
    return reminder
