"""session.jsonl: the soul's live stream of consciousness, one JSON record per line.

Every message is appended (flush + fsync) the moment it exists, so a kill -9
loses at most the line being written. On start the file is read back: a torn
last line is cut off with a warning (so the next append starts on a clean
line) and everything before it is kept.

Records:
  {"type": "message", "message": {...Message.to_json()}, "at": "<iso time>", "waking"?: true}
  {"type": "fold", "summary": "<text>", "upto": <number of messages folded>, "at": ..., "night"?: "<date>"}
  {"type": "consolidation", "night": "<date>", "waking": <index of its snapshot>, "at": ...}
  {"type": "archived", "records": <n>, "messages": <m>, "state": {...}}   (first line only)
"waking" marks a waking's snapshot, where that waking began (host/soul/memory/settle.py
needs to know which reply ended each waking). A fold says: the first `upto`
messages are replaced by `summary` (the context ceiling writes these; a
restart keeps the fold). A consolidation record says
the night's consolidation began (consolidate.py, beside this file); the fold carrying that
"night" says it is done.

The past moves out (archive.py beside this file): after a fold, the records before the
first message still live go into archive.sqlite3 in one transaction, then this file is
rewritten atomically as an "archived" line (how many records and messages of the life are in
the archive, and the fold state at that point) and the live records. So `load` reads only what
is live, and a long life starts as light as a young one. A kill -9 anywhere in between is
mended at the next start: records the archive holds already are skipped (never kept twice), a
fold whose move never happened is moved then (never lost). A file from before the archive
(every message ever, no "archived" line) is migrated the same way at its first start, and kept
as session.jsonl.before-archive until the move is verified record for record; a start that finds
that copy still there (a kill -9 during the check) finishes the check, and removes it or says why not.

Indexes stay those of the whole life: `messages[i]` is message i among all ever, `len(messages)`
counts them all; an index before the live part is read from the archive (rarely needed: the
soul's rooms only look at what is live).
"""

import itertools
import json
import logging
import os
from datetime import datetime
from pathlib import Path

from soulstack.jsonl import cut_torn_tail, read_records
from soulstack.llm.types import Message, TextBlock, ToolResult
from soulstack.private_files import open_private, tighten, write_atomically
from soulstack.soul.memory.archive import FILENAME as ARCHIVE_FILE, Archive, Entry, stamp

log = logging.getLogger(__name__)

INTERRUPTED = "(this was cut short: the soul's process stopped before it finished)"
HEADER = "archived"
BEFORE_ARCHIVE = ".before-archive"  # the migrated file's backup, until the move is verified


class Messages:
    """Every message of the life by its index: the live ones in memory, earlier ones from the archive."""

    def __init__(self, archive):
        self.base = 0  # index of the first live message
        self.items: list = []  # the live messages
        self._archive = archive  # a function returning the Archive

    def __len__(self) -> int:
        return self.base + len(self.items)

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1 or start < self.base:
                return [self[i] for i in range(start, stop, step)]
            return self.items[start - self.base : max(start, stop) - self.base]
        index = key + len(self) if key < 0 else key
        if not 0 <= index < len(self):
            raise IndexError(key)
        if index >= self.base:
            return self.items[index - self.base]
        record = self._archive().message_record(index)
        if record is None:
            raise IndexError(f"message {index} is neither live nor in the archive")
        return Message.from_json(record["message"])

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    def append(self, message: Message) -> None:
        self.items.append(message)


class Session:
    def __init__(self, path):
        self.path = Path(path)
        self.messages = Messages(lambda: self.archive)  # every message ever by index; only the live ones in memory
        self.waking_starts: list[int] = []  # indexes in `messages` of the live wakings' snapshots
        self.fold_summary: str | None = None
        self.fold_upto = 0
        self.consolidating: dict | None = None  # a consolidation begun and not yet folded
        self.consolidated_night: str | None = None  # the last night whose consolidation is done
        self.warnings: list[str] = []
        self.moved = 0  # moves into the archive made by this process (a restart's mending included)
        self._handle = None
        self._archive: Archive | None = None
        self._lines: list = []  # the live records: (message index or None, line)
        self._first = 0  # the record number of _lines[0]
        self._archived = (0, 0)  # (records, messages) the archive held when the file was read
        self._headed = False  # the file began with an "archived" line
        self._next: tuple | None = None  # (record, message) numbers of the next line read
        self._behind = 0  # lines read that the archive holds already

    @property
    def archive(self) -> Archive:
        if self._archive is None:
            self._archive = Archive(self.path.with_name(ARCHIVE_FILE))
        return self._archive

    # --- reading back ----------------------------------------------------------------------

    def load(self) -> "Session":
        self._archived = self.archive.counts()
        self._first, self.messages.base = self._archived
        if not self.path.exists():
            return self
        tighten(self.path)  # every conversation the soul had: 0600, even if an older soulstack left it 0644
        reading = read_records(self.path, self._take)
        for skipped in reading.skipped:
            where = "its last line" if skipped.last else f"line {skipped.number}"
            self._warn(f"{self.path.name}: skipped {where}, which is torn or not a record ({skipped.error})")
        cut_torn_tail(self.path, reading)  # a bad line in the middle stays; only a torn tail is cut
        mending = self._behind or self.movable() > self.messages.base
        backup = self._back_up() if mending and not self._headed else None  # a file from before the archive
        if self._behind:
            self._rewrite()  # a move was stored and the file not yet rewritten: finish it
        self._move(migrating=backup is not None)  # a fold whose move did not happen, or a migration
        if backup is not None:
            self._verify(backup)
        elif self._left_over().exists():  # an earlier start migrated and was killed before its check ended
            log.info("%s: finishing the check of an earlier start's migration", self.path.name)
            self._verify(self._left_over())
        return self

    def _take(self, record: dict):
        kind = record.get("type")
        if kind == HEADER:
            if self._next is not None:
                raise ValueError("an archived line after the first")
            self._headed = True
            self._next = (int(record["records"]), int(record["messages"]))
            self._state(record.get("state") or {})
            if self._next[1] > self._archived[1]:
                self._warn(
                    f"{self.path.name}: {self._next[1] - self._archived[1]} earlier messages are missing from "
                    f"{ARCHIVE_FILE} (it was replaced or deleted); the live part is kept"
                )
                self._first, self.messages.base = self._next
            return
        number, index = self._next or (0, 0)
        message = Message.from_json(record["message"]) if kind == "message" else None
        if kind not in ("message", "fold", "consolidation"):
            raise ValueError(f"unknown record type {kind!r}")
        self._next = (number + 1, index + (message is not None))
        if kind == "fold":
            self._state({"summary": str(record["summary"]), "upto": int(record["upto"]), "night": record.get("night")})
        elif kind == "consolidation":
            self.consolidating = {"night": str(record["night"]), "waking": int(record["waking"])}
        if number < self._first:
            self._behind += 1
            return  # the archive has it already (a move the file was not yet rewritten after)
        self._lines.append((index if message else None, json.dumps(record, ensure_ascii=False)))
        if message is not None:
            self.messages.append(message)
            if record.get("waking"):
                self.waking_starts.append(index)

    def _state(self, state: dict) -> None:
        """Take a fold's state (a fold record's, or an archived line's, which has these keys and more)."""
        if "summary" in state:
            self.fold_summary = state["summary"]
            self.fold_upto = int(state["upto"])
        if state.get("night"):
            self.consolidated_night, self.consolidating = str(state["night"]), None
        if "consolidating" in state:
            self.consolidating = state["consolidating"]
        if state.get("consolidated_night"):
            self.consolidated_night = state["consolidated_night"]

    def _warn(self, warning: str) -> None:
        log.warning(warning)
        self.warnings.append(warning)

    # --- what the model sees -------------------------------------------------------------

    def history(self) -> list:
        """The messages after the last fold, made whole: a tool call the process died in gets an answer."""
        return close_open_calls(self.messages[self.fold_upto :])

    # --- writing ----------------------------------------------------------------------------

    def append(self, message: Message, at: str = "", waking: bool = False) -> None:
        """Store `message`; `waking`: it is a waking's snapshot, where that waking begins."""
        self.messages.append(message)
        record = {"type": "message", "message": message.to_json(), "at": at}
        if waking:
            record["waking"] = True
            self.waking_starts.append(len(self.messages) - 1)
        self._write(record, len(self.messages) - 1)

    def append_fold(
        self, summary: str, upto: int, at: str = "", night: str | None = None, remember: Entry | None = None
    ) -> None:
        """Fold the first `upto` messages into `summary`, then move what the fold let go into the
        archive; `remember`: an entry for recall (the night's digest, the summary), stored with the move."""
        record = {"type": "fold", "summary": summary, "upto": upto, "at": at}
        if night:
            record["night"] = night
        self._write(record)
        self.fold_summary, self.fold_upto = summary, upto
        if night:
            self.consolidated_night, self.consolidating = night, None
        self._move([(remember, False)] if remember else [])

    def begin_consolidation(self, night: str, waking: int, at: str = "") -> None:
        self._write({"type": "consolidation", "night": night, "waking": waking, "at": at})
        self.consolidating = {"night": night, "waking": waking}

    def remember(self, kind: str, text: str, when: datetime, who: str = "") -> bool:
        """Store words for recall at once (a person's words as they arrive: kind "heard"); who: "" the soul."""
        return self.archive.remember(Entry(stamp(when), kind, who, text))

    def _write(self, record: dict, index: int | None = None):
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open_private(self.path, "a", encoding="utf-8")
        line = json.dumps(record, ensure_ascii=False)
        self._handle.write(line + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._lines.append((index, line))

    # --- moving the past out ----------------------------------------------------------------

    def movable(self) -> int:
        """Up to which message the past may leave: the fold's, but never past an unfinished
        consolidation's snapshot (its digest is read from there when it ends)."""
        upto = self.fold_upto
        if self.consolidating:
            upto = min(upto, int(self.consolidating["waking"]))
        return min(upto, len(self.messages))

    def _move(self, entries=(), migrating: bool = False) -> None:
        """Records before message `movable()` go to the archive (one transaction, with `entries`, and when
        `migrating` a file from before the archive, its folds' summaries), then the file is rewritten with the rest."""
        upto = self.movable()
        if upto <= self.messages.base:
            if entries:
                self.archive.remember_all(entries)
            return
        keep = next((i for i, (index, _) in enumerate(self._lines) if index is not None and index >= upto), None)
        keep = len(self._lines) if keep is None else keep
        moving = [(self._first + i, index, line) for i, (index, line) in enumerate(self._lines[:keep])]
        self.archive.move(moving, [*entries, *(self._digests(moving) if migrating else [])])
        self._first += keep
        self._lines = self._lines[keep:]
        self.messages.items = self.messages.items[upto - self.messages.base :]
        self.messages.base = upto
        self.waking_starts = [i for i in self.waking_starts if i >= upto]
        self._rewrite()
        self.moved += 1

    def _rewrite(self) -> None:
        """session.jsonl anew, atomically: the archived line, then the live records."""
        state = {
            "summary": self.fold_summary,
            "upto": self.fold_upto,
            "consolidating": self.consolidating,
            "consolidated_night": self.consolidated_night,
        }
        head = {"type": HEADER, "records": self._first, "messages": self.messages.base, "state": state}
        text = "".join(line + "\n" for line in [json.dumps(head, ensure_ascii=False)] + [ln for _, ln in self._lines])
        self.close_file()
        write_atomically(self.path, text.encode("utf-8"))
        self._headed = True

    def _left_over(self) -> Path:
        return self.path.with_name(self.path.name + BEFORE_ARCHIVE)

    def _back_up(self) -> Path | None:
        """A copy of a file from before the archive, kept until its migration is verified."""
        if not self.path.exists():
            return None
        backup = self._left_over()
        write_atomically(backup, self.path.read_bytes())
        log.info("moving the folded past of %s into %s (a copy is kept until it is verified)", self.path, ARCHIVE_FILE)
        return backup

    def _verify(self, backup: Path) -> None:
        """Every record of the old file is in the archive or the new file, once and in order: then the copy goes.

        The life read so far (the archive's records, then the file's) must begin with the old file's
        records: at a migration they are the same, and a check finished at a later start (a kill -9
        came between the rewrite and the unlink, which left a copy the size of the whole old life
        behind for good) finds what was lived since after them. A copy that does not match is kept,
        and every start says why."""
        life = itertools.chain(
            (json.loads(line) for line in self.archive.lines()),
            (record for record in _records(self.path) if record.get("type") != HEADER),
        )
        read, differs = 0, None  # both read a record at a time: the copy may be the size of years

        def against_the_life(old: dict) -> None:
            nonlocal read, differs
            if differs is None and next(life, None) != old:
                differs = read
            read += 1

        read_records(backup, against_the_life)
        if differs is None:
            backup.unlink()
            log.info("migrated %d records of %s; the copy is removed", read, self.path.name)
        else:
            self._warn(
                f"{self.path.name}: the migration into {ARCHIVE_FILE} could not be verified (record {differs + 1} "
                f"of the old file is not the life's record {differs + 1}); the old file is kept as {backup.name}: "
                "nothing is removed until the two agree"
            )

    @staticmethod
    def _digests(moving: list) -> list:
        """For a migrated file: its folds' summaries, for recall (what the soul knew of those days)."""
        out = []
        for _, index, line in moving:
            record = json.loads(line) if index is None else {}
            if record.get("type") == "fold" and str(record.get("summary", "")).strip():
                try:
                    when = stamp(datetime.fromisoformat(record.get("at") or ""))
                except ValueError:
                    continue
                out.append((Entry(when, "digest", "", str(record["summary"])), False))
        return out

    def close_file(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def close(self):
        self.close_file()
        if self._archive is not None:
            self._archive.close()
            self._archive = None


def _records(path) -> list:
    out: list = []
    read_records(path, out.append)
    return out


def life_records(path) -> list:
    """Every record of the life whose session.jsonl is `path`, in order: those moved into the archive,
    then the live ones (the "archived" line left out). For tests, benchmarks and a person reading back."""
    path = Path(path)
    out = []
    if path.with_name(ARCHIVE_FILE).exists():
        archive = Archive(path.with_name(ARCHIVE_FILE))
        try:
            out = [json.loads(line) for line in archive.lines()]
        finally:
            archive.close()
    done = len(out)
    for record in _records(path) if path.exists() else []:
        if record.get("type") == HEADER:
            done = int(record["records"])
            out = out[:done]
        else:
            out.append(record)
    return out


def close_open_calls(messages: list) -> list:
    """Every tool call must be followed by its result; a call left open by a crash gets one saying so."""
    out = []
    for index, message in enumerate(messages):
        out.append(message)
        calls = message.tool_calls() if message.role == "assistant" else []
        if not calls:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = set()
        if following is not None and following.role == "user":
            answered = {b.tool_call_id for b in following.content if isinstance(b, ToolResult)}
        missing = [ToolResult(c.id, [TextBlock(INTERRUPTED)], is_error=True) for c in calls if c.id not in answered]
        if missing:
            out.append(Message("user", missing))  # coalesce() merges it with the results that exist
    return coalesce(out)


def coalesce(messages: list) -> list:
    """Merge neighbours of the same role (APIs want user/assistant turns to alternate); tool results first."""
    out: list = []
    for message in messages:
        if out and out[-1].role == message.role:
            merged = out[-1].content + message.content
            if message.role == "user":
                merged = [b for b in merged if isinstance(b, ToolResult)] + [
                    b for b in merged if not isinstance(b, ToolResult)
                ]
            out[-1] = Message(message.role, merged)
        else:
            out.append(Message(message.role, list(message.content)))
    return out
