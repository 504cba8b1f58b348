"""What the nests must not lose, in the flock's SQLite database (host/flock/store.py).

Messages (the per-nest counter is their highest number), open expectations
with their deadlines, requests' modes, quarantines and the owner questions
that flags open. Every write commits on its own, so kill -9 loses nothing
that was answered.
"""

import json

from soulstack.flock.payloads import NestMessage

SCHEMA = """
CREATE TABLE IF NOT EXISTS nest_messages (
    nest_id TEXT NOT NULL, n INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (nest_id, n));
CREATE TABLE IF NOT EXISTS nest_requests (
    msg_id TEXT PRIMARY KEY, nest_id TEXT NOT NULL, mode TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nest_expectations (
    msg_id TEXT NOT NULL, crow TEXT NOT NULL, expects TEXT NOT NULL, nest_id TEXT NOT NULL,
    deadline REAL NOT NULL, nudged INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (msg_id, crow, expects));
CREATE TABLE IF NOT EXISTS nest_quarantine (
    crow TEXT PRIMARY KEY, flag_msg_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nest_questions (
    flag_msg_id TEXT PRIMARY KEY, nest_id TEXT NOT NULL, crow TEXT NOT NULL, deadline REAL NOT NULL);
"""


def stored(message: NestMessage) -> str:
    """A message as its row keeps it: its wire() JSON (the SSE replay sends that text as it is)."""
    return json.dumps(message.wire(), ensure_ascii=False)


def read(data: str) -> NestMessage:
    return NestMessage.of(json.loads(data))


class NestStore:
    def __init__(self, store):
        self.db = store.db
        self.data_dir = store.data_dir
        self.db.executescript(SCHEMA)

    # --- messages ----------------------------------------------------------
    def last_n(self, nest_id: str) -> int:
        return self.db.execute(
            "SELECT COALESCE(MAX(n), 0) FROM nest_messages WHERE nest_id = ?", (nest_id,)
        ).fetchone()[0]

    def add_message(self, nest_id: str, n: int, message: NestMessage) -> None:
        self.db.execute(
            "INSERT INTO nest_messages (nest_id, n, record) VALUES (?, ?, ?)", (nest_id, n, stored(message))
        )

    def set_record(self, nest_id: str, n: int, message: NestMessage) -> None:
        self.db.execute(
            "UPDATE nest_messages SET record = ? WHERE nest_id = ? AND n = ?", (stored(message), nest_id, n)
        )

    def messages_after(self, nest_id: str, after: int, limit: int = -1) -> list:
        """[(n, record JSON text)] oldest first."""
        return self.db.execute(
            "SELECT n, record FROM nest_messages WHERE nest_id = ? AND n > ? ORDER BY n LIMIT ?",
            (nest_id, after, limit),
        ).fetchall()

    def records_after(self, nest_id: str, after: int) -> list[NestMessage]:
        """The messages after number `after`, oldest first."""
        return [read(data) for _, data in self.messages_after(nest_id, after)]

    def recent(self, nest_id: str, count: int) -> list[NestMessage]:
        rows = self.db.execute(
            "SELECT record FROM nest_messages WHERE nest_id = ? ORDER BY n DESC LIMIT ?", (nest_id, count)
        ).fetchall()
        return [read(row[0]) for row in reversed(rows)]

    def message(self, msg_id: str) -> NestMessage | None:
        nest_id, _, n = msg_id.rpartition("-")
        if not (n.isascii() and n.isdigit()):
            return None
        row = self.db.execute(
            "SELECT record FROM nest_messages WHERE nest_id = ? AND n = ?", (nest_id, int(n))
        ).fetchone()
        return read(row[0]) if row else None

    def answers_to(self, msg_id: str, kind: str) -> list[NestMessage]:
        """Records of `kind` that refer to `msg_id`, in nest order."""
        nest_id = msg_id.rpartition("-")[0]
        rows = self.db.execute(
            "SELECT record FROM nest_messages WHERE nest_id = ? AND json_extract(record, '$.refers_to') = ? "
            "AND json_extract(record, '$.kind') = ? ORDER BY n",
            (nest_id, msg_id, kind),
        ).fetchall()
        return [read(row[0]) for row in rows]

    # --- requests ----------------------------------------------------------
    def set_mode(self, msg_id: str, nest_id: str, mode: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO nest_requests (msg_id, nest_id, mode) VALUES (?, ?, ?)", (msg_id, nest_id, mode)
        )

    def mode(self, msg_id: str) -> str:
        row = self.db.execute("SELECT mode FROM nest_requests WHERE msg_id = ?", (msg_id,)).fetchone()
        return row[0] if row else "solo"

    # --- expectations ------------------------------------------------------
    def expect(self, msg_id: str, crow: str, expects: str, nest_id: str, deadline: float, nudged: int = 0) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO nest_expectations (msg_id, crow, expects, nest_id, deadline, nudged) VALUES (?, ?, ?, ?, ?, ?)",
            (msg_id, crow, expects, nest_id, deadline, nudged),
        )

    def fulfil(self, msg_id: str, crow: str, expects: tuple) -> bool:
        marks = ",".join("?" * len(expects))
        cursor = self.db.execute(
            f"DELETE FROM nest_expectations WHERE msg_id = ? AND crow = ? AND expects IN ({marks})",
            (msg_id, crow, *expects),
        )
        return cursor.rowcount > 0

    def expectations(self) -> list:
        """[(msg_id, crow, expects, nest_id, deadline, nudged)] soonest first."""
        return self.db.execute(
            "SELECT msg_id, crow, expects, nest_id, deadline, nudged FROM nest_expectations ORDER BY deadline"
        ).fetchall()

    def working_in(self, nest_id: str) -> set:
        rows = self.db.execute("SELECT DISTINCT crow FROM nest_expectations WHERE nest_id = ?", (nest_id,)).fetchall()
        return {row[0] for row in rows}

    def expects_of(self, msg_id: str, crow: str) -> list:
        rows = self.db.execute(
            "SELECT expects FROM nest_expectations WHERE msg_id = ? AND crow = ?", (msg_id, crow)
        ).fetchall()
        return [row[0] for row in rows]

    # --- quarantine and owner questions -------------------------------------
    def quarantine(self, crow: str, flag_msg_id: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO nest_quarantine (crow, flag_msg_id) VALUES (?, ?)", (crow, flag_msg_id))

    def release(self, crow: str) -> None:
        self.db.execute("DELETE FROM nest_quarantine WHERE crow = ?", (crow,))

    def quarantined(self) -> dict:
        return dict(self.db.execute("SELECT crow, flag_msg_id FROM nest_quarantine").fetchall())

    def ask_owner(self, flag_msg_id: str, nest_id: str, crow: str, deadline: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO nest_questions (flag_msg_id, nest_id, crow, deadline) VALUES (?, ?, ?, ?)",
            (flag_msg_id, nest_id, crow, deadline),
        )

    def questions(self) -> list:
        """[(flag_msg_id, nest_id, crow, deadline)] soonest first."""
        return self.db.execute(
            "SELECT flag_msg_id, nest_id, crow, deadline FROM nest_questions ORDER BY deadline"
        ).fetchall()

    def answer_question(self, flag_msg_id: str) -> tuple | None:
        """Remove an open question; -> (nest_id, crow), or None when nothing was waiting."""
        row = self.db.execute(
            "SELECT nest_id, crow FROM nest_questions WHERE flag_msg_id = ?", (flag_msg_id,)
        ).fetchone()
        if row:
            self.db.execute("DELETE FROM nest_questions WHERE flag_msg_id = ?", (flag_msg_id,))
        return row
