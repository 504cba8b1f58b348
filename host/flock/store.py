"""Everything the flock must not lose, in one SQLite database (WAL) under the data dir.

Writes are small and run on the event loop's thread: WAL with synchronous=NORMAL
commits in tens of microseconds and survives kill -9 (only a power cut can lose
the last commits). Each statement commits on its own (autocommit mode).

The WAL is kept small (`WAL_CHECKPOINT_PAGES`, `WAL_SIZE_LIMIT`) so the flock cannot fill a
small disk by itself, and `give_back_space` truncates it after a storage error, once the
database file can take its pages again (docs/deploy.md, "When the disk fills").
"""

import json
import logging
import sqlite3
from pathlib import Path

from soulstack.flock.payloads import ListFinished, VerdictGiven, at
from soulstack.flock.rows import ITEM_COLUMNS, LIST_COLUMNS, ItemRow, ItemState, ListRow, Triage, item_row, list_row
from soulstack.private_files import make_private_dir, tighten, touch_private

log = logging.getLogger(__name__)

# The `verdict` event of (item_id, target), found through the list id (the item id's prefix) and
# its index: a pending row whose verdict is recorded is answered, whether or not the row is gone yet.
# (Event names and fields come from their declarations, soulstack.flock.payloads.)
_ITEM, _TARGET = at(VerdictGiven, "item_id"), at(VerdictGiven, "target")
_VERDICT_OF = f"""list_id = (SELECT list_id FROM items WHERE item_id = ?) AND name = '{VerdictGiven.NAME}'
    AND json_extract(data, '{_ITEM}') = ? AND json_extract(data, '{_TARGET}') = ?"""
_UNANSWERED = f"""NOT EXISTS (SELECT 1 FROM events WHERE list_id = (SELECT list_id FROM items WHERE item_id = p.item_id)
    AND name = '{VerdictGiven.NAME}' AND json_extract(data, '{_ITEM}') = p.item_id
    AND json_extract(data, '{_TARGET}') = p.target)"""

# SQLite copies the WAL back into the database every ~1 MB: within WAL_SIZE_LIMIT, and few enough
# checkpoints (each syncs the disk three times) to cost little; every ~400 KB they were 500 for
# 1,500 items (strace) and a tenth of the flock's speed (issue 47 item 10).
WAL_CHECKPOINT_PAGES = 240
WAL_SIZE_LIMIT = 1024 * 1024  # bytes a WAL keeps after a checkpoint (SQLite's default keeps all)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, list_id TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_list ON events (list_id, id);
-- "was this item's event told already?" (has_event, verdict_of, the pending checks): one index
-- lookup, not a json_extract over each of the list's events of that name (issue 47 item 10)
CREATE INDEX IF NOT EXISTS events_by_item ON events (list_id, name, json_extract(data, '{_ITEM}'));
CREATE TABLE IF NOT EXISTS lists (
    list_id TEXT PRIMARY KEY, requester TEXT NOT NULL, nest_id TEXT NOT NULL, token_budget INTEGER NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0, finished INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT PRIMARY KEY, list_id TEXT NOT NULL, n INTEGER NOT NULL, text TEXT NOT NULL,
    state TEXT NOT NULL, triage TEXT, answer TEXT, crows TEXT);
CREATE INDEX IF NOT EXISTS items_by_list ON items (list_id, n);
CREATE TABLE IF NOT EXISTS pending (
    item_id TEXT NOT NULL, target TEXT NOT NULL, deadline REAL NOT NULL, PRIMARY KEY (item_id, target));
CREATE TABLE IF NOT EXISTS trust (
    holder TEXT NOT NULL, task_type TEXT NOT NULL, level INTEGER NOT NULL, streak INTEGER NOT NULL,
    PRIMARY KEY (holder, task_type));
CREATE TABLE IF NOT EXISTS judgments (
    judgment TEXT NOT NULL, holder TEXT NOT NULL, moved_from INTEGER NOT NULL, moved_to INTEGER NOT NULL,
    PRIMARY KEY (judgment, holder));
CREATE TABLE IF NOT EXISTS strikes (
    requester TEXT PRIMARY KEY, strikes INTEGER NOT NULL, cooldown_until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS told (
    voice TEXT PRIMARY KEY, event_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS nests (
    nest_id TEXT PRIMARY KEY, name TEXT NOT NULL, crows TEXT NOT NULL, seq INTEGER NOT NULL);
"""


class Store:
    def __init__(self, data_dir: Path):
        # The lists people gave the flock and the crows' answers: the folder 0700, the database
        # 0600 (soulstack.private_files). SQLite makes -wal and -shm with the database file's mode,
        # so the file is made 0600 before SQLite opens it. Files an older flock left 0644 are
        # tightened here, and `soulstack flock`'s (empty) lock file; nests.json is rewritten 0600
        # at every start (soulstack.flock.nests.registry).
        self.data_dir = make_private_dir(data_dir)
        path = self.data_dir / "flock.db"
        touch_private(path)
        for older in ("flock.db-wal", "flock.db-shm", "jev.jsonl", "flock.lock"):
            tighten(self.data_dir / older)
        self._sweep_temporaries()
        self.db = sqlite3.connect(path, isolation_level=None)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            self.db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self.db.executescript(SCHEMA)
        except BaseException:
            self.db.close()
            raise

    def _sweep_temporaries(self) -> None:
        # A flock killed -9 mid-write leaves its temporary (soulstack.private_files.write_atomically
        # names them ".<name>.<random>.tmp"); this flock holds the folder's lock, so none is live.
        for leftover in self.data_dir.glob(".nests.json.*.tmp"):
            leftover.unlink(missing_ok=True)

    def give_back_space(self) -> bool:
        """After a storage error: copy the WAL into the database and truncate it to nothing.
        -> whether that worked (it cannot while the disk has no room for the pages)."""
        try:
            busy, _log_pages, _moved = self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as error:
            log.debug("the WAL could not be checkpointed yet: %s", error)
            return False
        return busy == 0

    def close(self):
        self.db.close()

    # --- events ----------------------------------------------------------
    def append_event(self, list_id: str, name: str, data: str) -> int:
        cursor = self.db.execute("INSERT INTO events (list_id, name, data) VALUES (?, ?, ?)", (list_id, name, data))
        assert cursor.lastrowid is not None, "an INSERT gives its row's id"
        return cursor.lastrowid

    def events_after(self, after_id: int, list_id: str | None = None) -> list:
        """[(id, name, data)] after `after_id`, oldest first, for one list or all."""
        args: tuple
        if list_id is None:
            sql, args = "SELECT id, name, data FROM events WHERE id > ? ORDER BY id", (after_id,)
        else:
            sql = "SELECT id, name, data FROM events WHERE list_id = ? AND id > ? ORDER BY id"
            args = (list_id, after_id)
        return self.db.execute(sql, args).fetchall()

    def finished_times(self) -> dict:
        """{list_id: the time its list.finished event holds}, for every finished list."""
        sql = f"SELECT list_id, json_extract(data, '{at(ListFinished, 'ts')}') FROM events WHERE name = '{ListFinished.NAME}'"
        return dict(self.db.execute(sql).fetchall())

    def recent_lists_events(self, count: int, up_to: int) -> list:
        """[(id, name, data)] up to id `up_to`, oldest first, of the `count` lists started last
        and of every list not finished yet (rowid is the order lists were started in)."""
        sql = """SELECT id, name, data FROM events WHERE id <= ? AND list_id IN (
                     SELECT list_id FROM (SELECT list_id FROM lists ORDER BY rowid DESC LIMIT ?)
                     UNION SELECT list_id FROM lists WHERE finished = 0)
                 ORDER BY id"""
        return self.db.execute(sql, (up_to, count)).fetchall()

    def has_event(self, list_id: str, name: str, **match) -> bool:
        """Whether `list_id` has a `name` event whose payload holds every `match` field (item_id="...")."""
        sql, args = "SELECT 1 FROM events WHERE list_id = ? AND name = ?", [list_id, name]
        for key, value in match.items():
            assert key.isidentifier(), key  # a declaration's ONCE_BY fields, never a request's
            sql += f" AND json_extract(data, '$.{key}') = ?"
            args.append(value)
        return self.db.execute(sql + " LIMIT 1", args).fetchone() is not None

    def verdict_of(self, item_id: str, target: str) -> str | None:
        """The verdict recorded for an item's target (its `verdict` event), or None."""
        row = self.db.execute(
            f"SELECT json_extract(data, '{at(VerdictGiven, 'verdict')}') FROM events WHERE {_VERDICT_OF} LIMIT 1",
            (item_id, item_id, target),
        ).fetchone()
        return row[0] if row else None

    def last_event_id(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]

    # --- what the robot's voice has told (host/flock/voice/told.py) -------
    def told_cursor(self, voice: str) -> int | None:
        row = self.db.execute("SELECT event_id FROM told WHERE voice = ?", (voice,)).fetchone()
        return row[0] if row else None

    def set_told_cursor(self, voice: str, event_id: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO told (voice, event_id) VALUES (?, ?)", (voice, event_id))

    # --- lists and items -------------------------------------------------
    def create_list(self, list_id, requester, nest_id, token_budget, created, texts):
        with self.db:  # one transaction: a list never exists without its items
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO lists (list_id, requester, nest_id, token_budget, created) VALUES (?, ?, ?, ?, ?)",
                (list_id, requester, nest_id, token_budget, created),
            )
            self.db.executemany(
                "INSERT INTO items (item_id, list_id, n, text, state) VALUES (?, ?, ?, ?, 'queued')",
                [(f"{list_id}-{n}", list_id, n, text) for n, text in enumerate(texts, 1)],
            )

    def list_exists(self, list_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM lists WHERE list_id = ?", (list_id,)).fetchone() is not None

    def get_list(self, list_id: str) -> ListRow | None:
        row = self.db.execute(f"SELECT {', '.join(LIST_COLUMNS)} FROM lists WHERE list_id = ?", (list_id,)).fetchone()
        return None if row is None else list_row(row)

    def all_lists(self) -> list[ListRow]:
        """Every list, newest first (the read API)."""
        rows = self.db.execute(f"SELECT {', '.join(LIST_COLUMNS)} FROM lists ORDER BY rowid DESC").fetchall()
        return [list_row(row) for row in rows]

    def unfinished_lists(self) -> list:
        rows = self.db.execute("SELECT list_id FROM lists WHERE finished = 0 ORDER BY created").fetchall()
        return [row[0] for row in rows]

    def flying_lists_of(self, requester: str) -> list:
        rows = self.db.execute(
            "SELECT list_id FROM lists WHERE requester = ? AND finished = 0 ORDER BY created", (requester,)
        ).fetchall()
        return [row[0] for row in rows]

    def add_tokens(self, list_id: str, tokens: int) -> None:
        self.db.execute("UPDATE lists SET tokens_used = tokens_used + ? WHERE list_id = ?", (tokens, list_id))

    def finish_list(self, list_id: str) -> None:
        self.db.execute("UPDATE lists SET finished = 1 WHERE list_id = ?", (list_id,))

    def items(self, list_id: str) -> list[ItemRow]:
        rows = self.db.execute(
            f"SELECT {', '.join(ITEM_COLUMNS)} FROM items WHERE list_id = ? ORDER BY n", (list_id,)
        ).fetchall()
        return [item_row(row) for row in rows]

    def item(self, item_id: str) -> ItemRow | None:
        row = self.db.execute(f"SELECT {', '.join(ITEM_COLUMNS)} FROM items WHERE item_id = ?", (item_id,)).fetchone()
        return None if row is None else item_row(row)

    def set_item(
        self,
        item_id: str,
        state: ItemState,
        triage: Triage | None = None,
        answer: str | None = None,
        crows: list[str] | None = None,
    ) -> None:
        """Move an item to `state`, saving its triage, answer or crows when given (None: kept as it is).
        The JSON columns get the text they always had (soulstack.flock.rows)."""
        sets, args = ["state = ?"], [str(state)]
        for key, value in (("triage", triage and triage.json()), ("answer", answer), ("crows", crows)):
            if value is not None:
                sets.append(f"{key} = ?")
                args.append(value if isinstance(value, str) else json.dumps(value))
        self.db.execute(f"UPDATE items SET {', '.join(sets)} WHERE item_id = ?", (*args, item_id))

    # --- pending approvals -----------------------------------------------
    def add_pending(self, item_id: str, target: str, deadline: float) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO pending (item_id, target, deadline) VALUES (?, ?, ?)", (item_id, target, deadline)
        )

    def pending_deadline(self, item_id: str, target: str) -> float | None:
        """The deadline of an approval still owed (none once its verdict is recorded), or None."""
        row = self.db.execute(
            f"SELECT deadline FROM pending p WHERE item_id = ? AND target = ? AND {_UNANSWERED}", (item_id, target)
        ).fetchone()
        return row[0] if row else None

    def remove_pending(self, item_id: str, target: str) -> None:
        self.db.execute("DELETE FROM pending WHERE item_id = ? AND target = ?", (item_id, target))

    def all_pending(self) -> list:
        """[(item_id, target, deadline)] of every approval still owed, soonest deadline first."""
        return self.db.execute(
            f"SELECT item_id, target, deadline FROM pending p WHERE {_UNANSWERED} ORDER BY deadline"
        ).fetchall()

    # --- trust and strikes -----------------------------------------------
    def trust_rows(self) -> list:
        return self.db.execute(
            "SELECT holder, task_type, level, streak FROM trust ORDER BY holder, task_type"
        ).fetchall()

    def judgment(self, judgment: str, holder: str) -> tuple | None:
        """(from, to) of the level when `judgment` was counted for `holder`, or None if it was not yet."""
        row = self.db.execute(
            "SELECT moved_from, moved_to FROM judgments WHERE judgment = ? AND holder = ?", (judgment, holder)
        ).fetchone()
        return tuple(row) if row else None

    def count_judgment(self, judgment, holder, task_type, moved: tuple, streak: int) -> None:
        """Keep `holder`'s new level and streak and that `judgment` was counted, in one transaction:
        a retry after a storage fault counts it once."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO judgments (judgment, holder, moved_from, moved_to) VALUES (?, ?, ?, ?)",
                (judgment, holder, *moved),
            )
            self.set_trust(holder, task_type, moved[1], streak)

    def set_trust(self, holder: str, task_type: str, level: int, streak: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO trust (holder, task_type, level, streak) VALUES (?, ?, ?, ?)",
            (holder, task_type, level, streak),
        )

    def strike_rows(self) -> list:
        return self.db.execute("SELECT requester, strikes, cooldown_until FROM strikes ORDER BY requester").fetchall()

    def strikes_of(self, requester: str) -> tuple:
        row = self.db.execute(
            "SELECT strikes, cooldown_until FROM strikes WHERE requester = ?", (requester,)
        ).fetchone()
        return row if row else (0, 0.0)

    def set_strikes(self, requester: str, strikes: int, cooldown_until: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO strikes (requester, strikes, cooldown_until) VALUES (?, ?, ?)",
            (requester, strikes, cooldown_until),
        )

    # --- nests -----------------------------------------------------------
    def nest_rows(self) -> list:
        return self.db.execute("SELECT nest_id, name, crows FROM nests ORDER BY seq").fetchall()

    def add_nest(self, nest_id: str, name: str, crows: list) -> None:
        seq = self.db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM nests").fetchone()[0]
        self.db.execute(
            "INSERT INTO nests (nest_id, name, crows, seq) VALUES (?, ?, ?, ?)", (nest_id, name, json.dumps(crows), seq)
        )
