"""archive.sqlite3: the soul's whole past on disk, out of the process, and searchable.

Two things live in it (stdlib sqlite3, WAL, synchronous=FULL: a commit survives kill -9 and a
power cut; 0600 like every file holding a person's words):

  records   every session.jsonl record that a fold moved out of the live session, verbatim and
            in order: `n` is its place in the life's stream of records, `message` the index of
            a message record among all messages ever (host/soul/memory/session.py keeps the rest).
            INSERT OR IGNORE on `n`: a move repeated after a kill -9 adds nothing twice.
  entries   what `recall` searches: a person's words the moment they arrive, what the soul said
            aloud, the nightly digests and fold summaries, its diary, achievements, kept and
            settled matters and earlier selves (host/soul/tools/recall.py syncs the life files).
            Each entry: when (local time, "YYYY-MM-DD HH:MM"), what kind, who said or wrote it,
            the text verbatim. `key` makes a repeat a no-op (the same words from the same
            speaker once a day, a file's line once).
  search    an FTS5 index over the entries (contentless: the text is stored once, in entries),
            words cut as host/soul/memory/words.py says.

Why SQLite rather than segment files plus an index: one file holds both, a transaction makes
"these records moved" and "these entries exist" true together or not at all, FTS5 ranks by
BM25, and the stdlib has it everywhere the soul runs. docs/metabolism.md, "The archive".
"""

import hashlib
import json
import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from soulstack.private_files import make_private_dir, tighten, touch_private
from soulstack.soul import life as lifefiles
from soulstack.soul.memory.words import match_expression, pairs, terms

log = logging.getLogger(__name__)

FILENAME = lifefiles.ARCHIVE
STAMP = "%Y-%m-%d %H:%M"  # the life files' own (host/soul/life.py)
# How many of the best-ranked matches are weighed by age before the best few are returned.
CANDIDATES = 60
# A match a year old counts this much less than one from today (1.0: as much; recency breaks ties).
YEARLY_FADE = 0.25
# SQLite's own page cache (its default is 2 MiB): the OS caches the file too, and recall stays quick.
CACHE_KIB = 512

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(n INTEGER PRIMARY KEY, message INTEGER UNIQUE, line TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, who TEXT NOT NULL,
    text TEXT NOT NULL, key TEXT NOT NULL UNIQUE);
CREATE INDEX IF NOT EXISTS entries_kind ON entries(kind, at);
CREATE TABLE IF NOT EXISTS moved_lines(file TEXT NOT NULL, n INTEGER NOT NULL, line TEXT NOT NULL,
    PRIMARY KEY(file, n));
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(
    body, content='', tokenize='porter unicode61 remove_diacritics 2');
"""


@dataclass
class Entry:
    at: str  # local time, STAMP
    kind: str  # heard, said, digest, diary, achievement, kept, settled, self
    who: str
    text: str


@dataclass
class Hit(Entry):
    score: float = 0.0  # lower is better (BM25 as FTS5 gives it, negative, weighed by age)


def stamp(when: datetime) -> str:
    return when.strftime(STAMP)


def entry_key(entry: Entry, daily: bool) -> str:
    when = entry.at[:10] if daily else entry.at
    return hashlib.sha1("\0".join((entry.kind, entry.who, when, entry.text)).encode("utf-8")).hexdigest()


class Archive:
    def __init__(self, path):
        self.path = Path(path)
        make_private_dir(self.path.parent)
        touch_private(self.path)  # 0600 before SQLite writes a byte; its -wal and -shm follow below
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.db.executescript(SCHEMA)
        for side in ("-wal", "-shm"):
            tighten(self.path.with_name(self.path.name + side))

    def close(self) -> None:
        self.db.close()

    # --- the moved records ----------------------------------------------------------------

    def counts(self) -> tuple:
        """(records, messages) archived: the next record's n and the next message's index."""
        n, message = self.db.execute("SELECT max(n), max(message) FROM records").fetchone()
        return (n + 1 if n is not None else 0), (message + 1 if message is not None else 0)

    def move(self, records: list, entries=()) -> None:
        """Store `records` [(n, message index or None, line)] and `entries` [(Entry, daily)] in one transaction."""
        with Transaction(self.db):
            self.db.executemany("INSERT OR IGNORE INTO records(n, message, line) VALUES (?, ?, ?)", records)
            for entry, daily in entries:
                self._add(entry, daily)

    def message_record(self, index: int) -> dict | None:
        """The record of message `index` (among all messages ever), as session.jsonl held it; None if absent."""
        row = self.db.execute("SELECT line FROM records WHERE message = ?", (index,)).fetchone()
        return json.loads(row[0]) if row else None

    def lines(self, start: int = 0):
        """Every archived record's line from record `start` on, in order (a reader's iterator)."""
        for (line,) in self.db.execute("SELECT line FROM records WHERE n >= ? ORDER BY n", (start,)):
            yield line

    # --- the entries ----------------------------------------------------------------------

    def remember(self, entry: Entry, daily: bool = True) -> bool:
        """Store one entry at once (a person's words as they arrive); False when it was there already."""
        with Transaction(self.db):
            return self._add(entry, daily)

    def remember_all(self, entries) -> int:
        """Store [(Entry, daily)] in one transaction; how many were new."""
        with Transaction(self.db):
            return sum(self._add(entry, daily) for entry, daily in entries)

    def _add(self, entry: Entry, daily: bool) -> bool:
        text = entry.text.strip()
        if not text:
            return False
        entry = Entry(entry.at, entry.kind, entry.who, text)
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO entries(at, kind, who, text, key) VALUES (?, ?, ?, ?, ?)",
            (entry.at, entry.kind, entry.who, entry.text, entry_key(entry, daily)),
        )
        if cursor.rowcount != 1:
            return False
        self.db.execute("INSERT INTO search(rowid, body) VALUES (?, ?)", (cursor.lastrowid, pairs(text, singles=True)))
        return True

    def entries(self, kind: str) -> list:
        """[(id, at, text)] of every entry of `kind`, oldest first."""
        return self.db.execute("SELECT id, at, text FROM entries WHERE kind = ? ORDER BY at, id", (kind,)).fetchall()

    def rekind(self, ids, kind: str) -> None:
        """Give the entries `ids` another kind (a kept matter settled: it stays findable, as settled)."""
        with Transaction(self.db):
            self.db.executemany("UPDATE entries SET kind = ? WHERE id = ?", [(kind, i) for i in ids])

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM entries").fetchone()[0]

    def search(self, question: str, now: datetime, kinds=None, limit: int = 5, between=None) -> list:
        """The best `limit` entries for `question`, best first (BM25, a little less for older ones;
        newer first among equals), only those with start <= at < end when `between` is (start, end)
        (STAMP strings). [] when nothing matches; ValueError when it holds no word."""
        words = terms(question)
        if not words:
            raise ValueError("the query holds no word to search for")
        where, arguments = "search MATCH ?", [match_expression(words)]
        if kinds:
            where += f" AND e.kind IN ({', '.join('?' * len(kinds))})"
            arguments += list(kinds)
        if between:
            where += " AND e.at >= ? AND e.at < ?"
            arguments += list(between)
        rows = self.db.execute(
            f"SELECT e.at, e.kind, e.who, e.text, s.rank FROM search s JOIN entries e ON e.id = s.rowid "
            f"WHERE {where} ORDER BY s.rank LIMIT ?",
            [*arguments, max(limit, CANDIDATES)],
        ).fetchall()
        today = now.strftime(STAMP)
        hits = [Hit(at, kind, who, text, rank * _freshness(at, today)) for at, kind, who, text, rank in rows]
        hits.sort(key=lambda hit: (hit.score, _descending(hit.at)))
        return hits[:limit]

    # --- small state (the life files' sync) -------------------------------------------------

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        self.put_many({key: value})

    def put_many(self, values: dict) -> None:
        with Transaction(self.db):
            self.db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", values.items())

    # --- a life file's old lines (host/soul/memory/diary.py) ----------------------------------

    def move_lines(self, name: str, lines: list, entries, key: str, note: str) -> None:
        """Store `lines` of the life file `name` after those moved before, their `entries` [(Entry, daily)],
        and meta `key` = `note` (the cut still to be made in the file), in one transaction."""
        with Transaction(self.db):
            (start,) = self.db.execute("SELECT count(*) FROM moved_lines WHERE file = ?", (name,)).fetchone()
            rows = [(name, start + i, line) for i, line in enumerate(lines)]
            self.db.executemany("INSERT INTO moved_lines(file, n, line) VALUES (?, ?, ?)", rows)
            for entry, daily in entries:
                self._add(entry, daily)
            self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, note))

    def moved_lines(self, name: str) -> list:
        """Every line of life file `name` moved into the archive, in the order it stood."""
        return [line for (line,) in self.db.execute("SELECT line FROM moved_lines WHERE file = ? ORDER BY n", (name,))]

    def entries_between(self, kind: str, start: str, end: str) -> list:
        """[(at, text)] of the entries of `kind` with start <= at < end (STAMP strings), oldest first."""
        return self.db.execute(
            "SELECT at, text FROM entries WHERE kind = ? AND at >= ? AND at < ? ORDER BY at, id", (kind, start, end)
        ).fetchall()


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when the block raises (the connection is in autocommit)."""

    def __init__(self, db):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, value, trace):
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        return False


def _freshness(at: str, today: str) -> float:
    """1.0 for today, falling by YEARLY_FADE a year (BM25 ranks are negative: a smaller factor is worse)."""
    try:
        days = (datetime.strptime(today, STAMP) - datetime.strptime(at[:16], STAMP)).days
    except ValueError:
        return 1.0
    return 1.0 / (1.0 + YEARLY_FADE * max(0, days) / 365.0)


def _descending(at: str) -> tuple:
    return tuple(-ord(character) for character in at)
