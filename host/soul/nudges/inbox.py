"""The soul's nudge inbox: what a 202 promises, and when nudges may wake it.

What 202 promises: the nudge is on disk before the answer goes out
(soulDir/NUDGES.jsonl, appended with flush + fsync), and it will be in a
waking's snapshot, across a kill -9 or a restart. Once the snapshot that shows
it is stored in session.jsonl, its line is marked `shown` (`shown`); it leaves
the file when that waking ends (`ended`). A kill in between leaves it marked:
the next life does not show it again (the session has it, once) but still owes
it an answer, so the brainstem answers its words (a kill mid-turn once lost a
person's words: shown, then never answered). Writes happen
off the event loop, one at a time; nudges that arrive during one write share
the next (an fsync costs milliseconds: one per nudge would cap a storm at a
few hundred a second and stall the soul's server meanwhile).

Coalescing (1,000 nudges in 10 s once made 273 wakings and 273 model calls;
docs/metabolism.md, "A storm can't run up the bill"). After a waking that took
nudges, further nudges wait until `nudge.minIntervalSeconds` have passed since
it began, and the next waking shows them all. A person's words
(host/protocol/nudges.py's `words_of`) wait at most WORDS_WAIT_S: a person is
answered within seconds, never held back a minute by a storm around them. Any
waking (the alarm, a person speaking through converse) takes everything
waiting, due or not.

A nudge sent again under its `nudge_id` (a body whose answer was lost) is
counted once: `ids` (host/soul/nudges/ids.py) knows the ids answered, and the id
is on disk with its nudge, in the same line, before the 202; when the line
leaves this file the id goes to NUDGE_IDS.json first.

Counts for /health (this process): nudges received, wakings that took nudges.
"""

import asyncio
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from soulstack.clocks import Clock
from soulstack.jsonl import read_records
from soulstack.private_files import open_private
from soulstack.protocol.nudges import Nudge, words_of
from soulstack.soul.atomic import atomic_write_text
from soulstack.soul.nudges.ids import FILENAME as IDS_FILE, NudgeIds

log = logging.getLogger(__name__)

FILENAME = "NUDGES.jsonl"
WORDS_WAIT_S = 3.0


@dataclass
class Entry:
    nudge: Nudge
    while_thinking: bool = False  # arrived while the soul was thinking (its snapshot says so)
    shown: bool = False  # a stored snapshot showed it; the waking that did has not ended (a kill came first)

    def to_line(self) -> str:
        kept = {**self.nudge.to_json(), "whileThinking": self.while_thinking, **({"shown": True} if self.shown else {})}
        return json.dumps(kept, ensure_ascii=False) + "\n"

    @property
    def answer(self) -> dict:
        """What the soul answered when it kept this nudge (server.py's 202)."""
        return {"queued": True, "state": "thinking" if self.while_thinking else "asleep"}


class Inbox:
    def __init__(self, path, min_interval_s: float, words_wait_s: float = WORDS_WAIT_S, clock: Clock | None = None):
        self.path = Path(path)
        self.clock = clock or Clock()
        self.ids = NudgeIds(self.path.parent / IDS_FILE)
        self.min_interval_s = min_interval_s
        self.words_wait_s = min(words_wait_s, min_interval_s)
        self.entries: list[Entry] = []  # acknowledged, not yet shown by a waking that ended; oldest first
        self.received = 0  # nudges acknowledged by this process
        self.wakings = 0  # wakings of this process that took nudges
        self._last_taken: float | None = None  # clock.monotonic() of the last waking that took nudges
        self._taken = 0  # entries[:_taken] are in the waking now being built
        self._unwritten: list[str] = []  # lines of entries not yet on disk
        self._writing = asyncio.Lock()  # one write at a time, so lines never interleave or repeat

    def load(self) -> "Inbox":
        """The nudges a previous process acknowledged and never showed, and the ids it answered; a torn
        last line is skipped."""
        now = self.clock.time()
        self.ids.load(now)
        try:
            reading = read_records(self.path, self._take)
        except FileNotFoundError:
            return self
        for skipped in reading.skipped:
            log.warning(
                "%s: skipped line %d, which is torn or not a nudge (%s)", self.path.name, skipped.number, skipped.error
            )
        for entry in self.entries:
            if entry.nudge.nudge_id:
                self.ids.answered_with(entry.nudge.nudge_id, entry.answer, now)
        if self.entries:
            log.info("%d nudge(s) acknowledged before the restart are waiting", len(self.entries))
        self._rewrite()  # a clean file: no torn tail for the next append to continue
        return self

    def _take(self, data: dict) -> None:
        self.entries.append(Entry(Nudge.from_json(data), bool(data.get("whileThinking")), data.get("shown") is True))

    async def add(self, nudge: Nudge, while_thinking: bool) -> None:
        """Keep `nudge`; returns once it is on disk (answer 202 after this). OSError: it is not."""
        entry = Entry(nudge, while_thinking)
        self.entries.append(entry)
        self._unwritten.append(entry.to_line())
        try:
            async with self._writing:
                if self._unwritten:  # else the write before this one took our line with it (or a rewrite did)
                    lines, self._unwritten = "".join(self._unwritten), []
                    await asyncio.to_thread(self._append, lines)
        except OSError:
            # Not kept, not promised: the sender tries again.
            self.entries = [kept for kept in self.entries if kept is not entry]
            raise
        self.received += 1

    def _append(self, lines: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open_private(self.path, "a", encoding="utf-8") as handle:  # a person's words: 0600
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())

    def due_in(self, now: float) -> float | None:
        """None when nothing waits; else the seconds until what waits may wake the soul (0: now)."""
        waiting = self.entries[self._taken :]
        if not waiting:
            return None
        if self._last_taken is None:
            return 0.0
        words = any(words_of(entry.nudge) for entry in waiting)
        gap = self.words_wait_s if words else self.min_interval_s
        return max(0.0, self._last_taken + gap - now)

    def take(self, now: float) -> list:
        """Everything waiting, for the waking that begins `now` (still kept until `ended`)."""
        self._taken = len(self.entries)
        if self.entries:
            self._last_taken = now
            self.wakings += 1
        return list(self.entries)

    async def shown(self) -> None:
        """The waking's snapshot is stored: what it took is marked so on disk (a restart does not show it twice)."""
        fresh = [entry for entry in self.entries[: self._taken] if not entry.shown]
        if not fresh:
            return
        for entry in fresh:
            entry.shown = True
        async with self._writing:
            await self._write_all()

    async def ended(self) -> None:
        """The waking that showed what it took has ended: that leaves the file."""
        if not self._taken:
            return
        async with self._writing:
            if any(entry.nudge.nudge_id for entry in self.entries[: self._taken]):
                await self.ids.save()  # their ids leave NUDGES.jsonl with them: on disk first
            self.entries, self._taken = self.entries[self._taken :], 0
            await self._write_all()

    async def _write_all(self) -> None:
        """The file anew, under the write lock: every entry so far, written or not (one added while it
        writes appends its own line after)."""
        self._unwritten, text = [], self._text()
        await asyncio.to_thread(atomic_write_text, self.path, text)

    def _text(self) -> str:
        return "".join(entry.to_line() for entry in self.entries)

    def _rewrite(self) -> None:
        atomic_write_text(self.path, self._text())
