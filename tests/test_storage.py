"""soulstack.disk.storage on a real full disk: what it names the cause of SQLite's errors."""

import sqlite3

from soulstack.disk.storage import storage_problem
from tests.faults import small_disk


def test_a_full_disk_is_named_only_for_sqlites_io_errors_not_for_a_foreign_file(tmp_path):
    with small_disk(tmp_path, "1m") as disk:
        foreign = disk.path / "notes.db"
        foreign.write_bytes(b"not a database, " * 512)
        disk.fill()
        try:
            sqlite3.connect(foreign).execute("select * from sqlite_master").fetchall()
        except sqlite3.DatabaseError as error:
            found = error
        assert found.sqlite_errorcode & 0xFF == 26  # SQLITE_NOTADB
        said = storage_problem(found, disk.path)
        assert said.startswith("the database file is not a database"), said  # was "the disk is full"
        opening = None
        try:
            sqlite3.connect(disk.path / "new.db").execute("create table t (x)")
        except sqlite3.Error as error:
            opening = error
        assert opening is not None and storage_problem(opening, disk.path).startswith("the disk is full")
