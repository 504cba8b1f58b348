"""The archive: the folded past leaves session.jsonl for archive.sqlite3, and nothing is lost or doubled.

Real files, real SQLite, and for kill -9 real processes writing a session (host/soul/memory/session.py,
host/soul/memory/archive.py).
"""

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time

from soulstack.llm.types import Message, TextBlock
from soulstack.soul.memory.archive import FILENAME as ARCHIVE
from soulstack.soul.memory.session import BEFORE_ARCHIVE, Session, life_records
from tests.helpers import ROOT

AT = "2025-03-10T14:00:00+00:00"


def numbered(path) -> list:
    """The number each message of the whole life carries ("m<n> ..."), in order."""
    return [
        int(r["message"]["content"][0]["text"].split()[0][1:]) for r in life_records(path) if r["type"] == "message"
    ]


def fill(session: Session, count: int, payload: str = "") -> None:
    for _ in range(count):
        n = len(session.messages)
        role = "user" if n % 2 == 0 else "assistant"
        session.append(Message(role, [TextBlock(f"m{n} {payload}")]), at=AT, waking=role == "user")


def test_a_fold_moves_the_past_out_and_a_restart_reads_only_what_is_live(tmp_path):
    path = tmp_path / "session.jsonl"
    session = Session(path).load()
    fill(session, 20)
    session.append_fold("the first ten", 10, AT)
    fill(session, 10)
    session.append_fold("the first twenty", 20, AT)
    session.close()

    again = Session(path).load()
    assert len(again.messages) == 30 and again.messages.base == 20 and len(again.messages.items) == 10
    assert again.fold_summary == "the first twenty" and again.fold_upto == 20
    assert again.history()[0].content[0].text == "m20 "
    assert again.messages[3].content[0].text == "m3 "  # an archived one is still there by its index
    assert again.waking_starts == [20, 22, 24, 26, 28]
    assert numbered(path) == list(range(30))  # every message once, in order
    assert [r["summary"] for r in life_records(path) if r["type"] == "fold"] == ["the first ten", "the first twenty"]
    first = json.loads(path.read_text().splitlines()[0])
    assert first["type"] == "archived" and first["messages"] == 20
    for path in [tmp_path / "session.jsonl", *tmp_path.glob(ARCHIVE + "*")]:  # with SQLite's -wal and -shm
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path  # a person's words
    again.close()


def test_an_unfinished_consolidation_keeps_its_turn_live(tmp_path):
    path = tmp_path / "session.jsonl"
    session = Session(path).load()
    fill(session, 12)
    session.begin_consolidation("2025-03-10", 8, AT)
    session.append_fold("the ceiling folded meanwhile", 11, AT)  # past the consolidation's snapshot
    assert session.messages.base == 8  # its digest is read from message 8 on when it ends
    session.close()
    again = Session(path).load()
    assert again.consolidating == {"night": "2025-03-10", "waking": 8} and again.messages.base == 8
    assert numbered(path) == list(range(12))
    again.close()


def old_session(path, messages: int, folds: dict) -> list:
    """A session.jsonl as soulstack wrote it before the archive: every message ever, folds among them."""
    records = []
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        records.append({"type": "message", "message": {"role": role, "content": [{"type": "text", "text": f"m{n} "}]}})
        records[-1]["at"] = AT
        if n + 1 in folds:
            upto, summary = folds[n + 1]
            records.append({"type": "fold", "summary": summary, "upto": upto, "at": AT})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return records


def test_an_old_session_file_is_migrated_verified_and_its_copy_removed(tmp_path):
    path = tmp_path / "session.jsonl"
    records = old_session(
        path, 40, {20: (14, "Ana told me about her sister in Lisbon."), 36: (30, "后来安娜去了海边。")}
    )
    session = Session(path).load()
    assert session.moved == 1 and session.warnings == []
    assert session.messages.base == 30 and len(session.messages) == 40
    assert session.fold_summary == "后来安娜去了海边。"
    assert life_records(path) == records  # not a line lost, none twice, in order
    assert not (tmp_path / ("session.jsonl" + BEFORE_ARCHIVE)).exists()  # verified, so the copy went
    found = session.archive.search("sister Lisbon", __import__("datetime").datetime(2025, 3, 11))
    assert found and found[0].kind == "digest" and "Lisbon" in found[0].text
    session.close()
    again = Session(path).load()
    assert again.moved == 0 and life_records(path) == records  # migrated once
    again.close()


def test_a_migration_that_cannot_be_verified_keeps_the_old_file(tmp_path):
    path = tmp_path / "session.jsonl"
    records = old_session(path, 10, {6: (4, "summary")})
    with sqlite3.connect(tmp_path / ARCHIVE) as db:  # an archive from elsewhere, already holding a record
        db.execute("CREATE TABLE records(n INTEGER PRIMARY KEY, message INTEGER UNIQUE, line TEXT NOT NULL)")
        db.execute("INSERT INTO records VALUES (0, 0, ?)", (json.dumps({"type": "message", "x": 1}),))
    session = Session(path).load()
    backup = tmp_path / ("session.jsonl" + BEFORE_ARCHIVE)
    assert backup.exists() and any("could not be verified" in w for w in session.warnings)
    assert [json.loads(line) for line in backup.read_text().splitlines()] == records
    session.close()


# --- kill -9 -----------------------------------------------------------------------------------

WRITER = """
import sys
from soulstack.llm.types import Message, TextBlock
from soulstack.soul.memory.session import Session
session = Session(sys.argv[1]).load()
payload = "x" * int(sys.argv[2])
while True:
    for _ in range(30):
        n = len(session.messages)
        role = "user" if n % 2 == 0 else "assistant"
        session.append(Message(role, [TextBlock(f"m{n} {payload}")]), at="", waking=role == "user")
        print("appended", n + 1, flush=True)
    session.append_fold(f"up to {n - 3}", n - 3, "")
    print("folded", n - 3, flush=True)
"""


def start_writer(path, payload=2000):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(payload)], stdout=subprocess.PIPE, text=True, env=env
    )


def acknowledged(lines) -> int:
    """The last message the writer said it had stored (a line the kill cut short counts less or not at all)."""
    parts = [line.split() for line in lines]
    return max((int(p[1]) for p in parts if len(p) == 2 and p[0] == "appended" and p[1].isdigit()), default=0)


def check_whole(path, at_least: int) -> int:
    """Reading back after a kill: every message 0..k-1 once and in order, none acknowledged lost."""
    session = Session(path).load()
    count = len(session.messages)
    session.close()
    assert numbered(path) == list(range(count))
    assert count >= at_least
    return count


def test_kill_9_while_the_fold_waits_on_the_archive_loses_nothing(tmp_path):
    path = tmp_path / "session.jsonl"
    Session(path).load().close()  # the archive exists, so a test can hold its write lock
    lock = sqlite3.connect(tmp_path / ARCHIVE, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the writer's move now waits inside its transaction
    writer = start_writer(path)
    lines = [writer.stdout.readline() for _ in range(30)]
    deadline = time.monotonic() + 4  # well inside SQLite's 5 s busy wait
    while '"type": "fold"' not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert '"type": "fold"' in path.read_text()  # the fold is written, its move not committed
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    lock.execute("ROLLBACK")
    lock.close()
    session = Session(path).load()
    assert session.moved == 1 and session.messages.base == 26  # the move happens at the restart
    session.close()
    check_whole(path, acknowledged(lines))


def test_kill_9_after_the_archive_committed_before_the_file_was_rewritten(tmp_path):
    # That moment's files, made by the real writers: the session file as it was when the move began
    # (its fold written), and the archive after the move committed.
    path = tmp_path / "session.jsonl"
    session = Session(path).load()
    fill(session, 30)
    session.close()
    session = Session(path).load()
    session._write({"type": "fold", "summary": "s", "upto": 26, "at": ""})
    before_rewrite = path.read_bytes()
    session.fold_summary, session.fold_upto = "s", 26
    session._move()
    session.close()
    path.write_bytes(before_rewrite)  # the rewrite never happened
    again = Session(path).load()
    assert again.messages.base == 26 and len(again.messages.items) == 4  # archived lines are not kept twice
    assert json.loads(path.read_text().splitlines()[0])["type"] == "archived"  # the rewrite is finished
    again.close()
    assert numbered(path) == list(range(30))


def test_kill_9_at_random_moments_never_loses_or_doubles_a_message(tmp_path):
    path = tmp_path / "session.jsonl"
    acked, trial, moved = 0, 0, False
    while trial < 6 or (not moved and trial < 20):  # on a slow machine: until the kills have folded and moved
        writer = start_writer(path, payload=4000)
        lines = [writer.stdout.readline()]  # it has started
        time.sleep(0.05 + 0.07 * (trial % 6))
        writer.send_signal(signal.SIGKILL)
        lines += writer.stdout.read().splitlines()
        writer.wait()
        acked = max(acked, acknowledged(lines))
        check_whole(path, acked)
        moved = json.loads(path.read_text().splitlines()[0]).get("type") == "archived"
        trial += 1
    assert moved and any(r["type"] == "fold" for r in life_records(path))


# --- backups -------------------------------------------------------------------------------------


def test_the_archive_is_backed_up_with_the_life_files_and_three_copies_are_kept(tmp_path):
    from datetime import date, timedelta

    from soulstack.soul.life import Life

    life = Life(tmp_path)
    session = Session(tmp_path / "session.jsonl").load()
    fill(session, 12)
    session.append_fold("summary", 8, AT)
    session.remember("heard", "my sister Mia lives in Lisbon", __import__("datetime").datetime(2025, 3, 10, 14, 0))
    day = date(2025, 3, 10)
    for offset in range(4):
        life.backup_daily(day + timedelta(days=offset))
        copy = tmp_path / "backups" / (day + timedelta(days=offset)).isoformat() / ARCHIVE
        deadline = time.monotonic() + 10
        while not copy.exists() and time.monotonic() < deadline:  # the copy runs beside the waking
            time.sleep(0.01)
        assert copy.exists() and stat.S_IMODE(os.stat(copy).st_mode) == 0o600
        os.utime(copy.parent, (time.time() + offset, time.time() + offset))  # written in that order
    with sqlite3.connect(copy) as db:
        assert db.execute("SELECT count(*) FROM records").fetchone()[0] == 8
        assert db.execute("SELECT text FROM entries WHERE kind = 'heard'").fetchall() == [
            ("my sister Mia lives in Lisbon",)
        ]

    def kept():
        return sorted(p.parent.name for p in (tmp_path / "backups").glob(f"*/{ARCHIVE}"))

    deadline = time.monotonic() + 10
    while len(kept()) > 3 and time.monotonic() < deadline:  # the last copy's pruning follows its rename
        time.sleep(0.01)
    assert kept() == ["2025-03-11", "2025-03-12", "2025-03-13"]
    session.close()
