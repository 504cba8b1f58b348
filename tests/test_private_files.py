"""Files holding a person's words or secrets are 0600 and their folders 0700, whatever was there
before (docs/deploy.md, "Private files"): the helper itself, then the real soul, the real flock
and `soulstack service install`, all started with the usual umask 022.
"""

import os
import stat
import subprocess
from contextlib import contextmanager
from datetime import datetime, UTC
from pathlib import Path

import aiohttp
import pytest

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.private_files import make_private_dir, open_private, tighten_tree, touch_private, write_atomically
from tests.helpers import free_port
from tests.flock.helpers import Brain
from tests.flock.processes import FlockProcess
from tests.helpers import until_real as until
from tests.soul.helpers import start_soul, stop_with_ctrl_c, write_config


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@contextmanager
def umask(value: int):
    """This process's umask (and so its children's) set to `value` for the block."""
    before = os.umask(value)
    try:
        yield
    finally:
        os.umask(before)


def made(path: Path, text: str = "", file_mode: int = 0o644) -> Path:
    """A file as an older soulstack (or a careless hand) left it: readable by every account."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o755)
    path.write_text(text)
    os.chmod(path, file_mode)
    return path


def not_private(folder: Path) -> list:
    """Every folder under `folder` (itself too) not 0700 and every file not 0600, with its mode."""
    wrong = [] if mode(folder) == 0o700 else [(str(folder), oct(mode(folder)))]
    for root, folders, files in os.walk(folder):
        wrong += [
            (os.path.join(root, name), oct(mode(os.path.join(root, name))))
            for name in folders
            if mode(os.path.join(root, name)) != 0o700
        ]
        wrong += [
            (os.path.join(root, name), oct(mode(os.path.join(root, name))))
            for name in files
            if mode(os.path.join(root, name)) != 0o600
        ]
    return wrong


# --- the helper (soulstack.private_files) --------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o000, 0o277])  # usual, none, one that would leave 0400
def test_modes_are_set_not_left_to_the_umask_or_to_what_was_there(tmp_path, mask):
    with umask(mask):
        folder = make_private_dir(tmp_path / "b")
        assert mode(folder) == 0o700
        made(folder / "old.json", "{}")
        os.chmod(folder, 0o755)
        assert mode(make_private_dir(folder)) == 0o700  # tightened, even though it was there

        write_atomically(folder / "old.json", b"[]")
        assert mode(folder / "old.json") == 0o600 and (folder / "old.json").read_text() == "[]"
        write_atomically(folder / "new" / "x.json", b"1")  # a missing folder is made 0700
        assert mode(folder / "new") == 0o700 and mode(folder / "new" / "x.json") == 0o600

        log = made(folder / "log.jsonl", "one\n", 0o666)
        with open_private(log, "a", encoding="utf-8") as handle:
            handle.write("two\n")
        assert mode(log) == 0o600 and log.read_text() == "one\ntwo\n"

        touch_private(folder / "db")
        assert mode(folder / "db") == 0o600 and (folder / "db").read_bytes() == b""
    assert sorted(os.listdir(tmp_path / "b")) == ["db", "log.jsonl", "new", "old.json"]  # no temporary left


def test_a_leftover_temporary_never_lends_its_mode(tmp_path):
    target = tmp_path / "flock.env"
    for leftover in (tmp_path / "flock.env.tmp", tmp_path / ".flock.env.tmp"):
        made(leftover, "stale", 0o666)
    with umask(0o000):
        write_atomically(target, b"TOKEN=s3cret\n")
    assert mode(target) == 0o600 and target.read_text() == "TOKEN=s3cret\n"


def test_tightening_a_tree_follows_no_link(tmp_path):
    outside = made(tmp_path / "elsewhere" / "mine.txt")
    backups = tmp_path / "backups"
    made(backups / "2020-01-01" / "DIARY.md")
    (backups / "link.md").symlink_to(outside)
    (backups / "linked").symlink_to(outside.parent)
    tighten_tree(backups)
    assert mode(backups) == mode(backups / "2020-01-01") == 0o700
    assert mode(backups / "2020-01-01" / "DIARY.md") == 0o600
    assert mode(outside) == 0o644 and mode(outside.parent) == 0o755  # not ours: untouched


def test_tightening_a_tree_while_files_in_it_are_renamed_away(tmp_path):
    # The archive's daily backup writes a temporary and renames it in a thread of its own
    # (soul/database_backup.py): a file seen by os.walk may be gone before its chmod.
    import threading

    backups = make_private_dir(tmp_path / "backups")
    done = threading.Event()

    def rename_away():
        for number in range(3000):
            temporary = backups / f".archive.sqlite3.{number}.tmp"
            touch_private(temporary)
            temporary.replace(backups / "archive.sqlite3")
        done.set()

    writer = threading.Thread(target=rename_away)
    writer.start()
    while True:  # before the fix: FileNotFoundError for a temporary renamed between os.walk and chmod
        tighten_tree(backups)
        if done.is_set():
            break
    writer.join()
    assert mode(backups) == 0o700 and mode(backups / "archive.sqlite3") == 0o600


# --- the real soul ---------------------------------------------------------------------------


async def test_the_soul_keeps_its_folder_and_every_file_in_it_private(tmp_path):
    soul_dir = tmp_path / "soul"
    # What an older soulstack left: a world-readable folder, diary, session and backup.
    made(soul_dir / "DIARY.md", "- 2020-01-01 10:00: an old day\n")
    made(soul_dir / "SELF.md", "who I was\n")  # not written by this run: tightened all the same
    made(soul_dir / "session.jsonl")
    made(soul_dir / "backups" / "2020-01-01" / "DIARY.md", "- 2020-01-01 10:00: an old day\n")
    os.chmod(soul_dir / "backups", 0o755)
    async with RecordingBody() as body:
        port = free_port()
        config = write_config(tmp_path, body, port)
        log = tmp_path / "soul.log"
        with umask(0o022):
            process = start_soul(config, log)
        try:
            await until(lambda: "waking 1:" in log.read_text(), what="the first waking")
            async with aiohttp.ClientSession() as http:
                nudge = {"reason": "your human typed: this is private", "words": "this is private"}
                async with http.post(f"http://127.0.0.1:{port}/nudge", json=nudge) as response:
                    assert response.status == 202
            await until(lambda: "waking 2:" in log.read_text(), what="the nudged waking")
        finally:
            code = await stop_with_ctrl_c(process)
        assert code == 0 and "Traceback" not in log.read_text()
    today = datetime.now(UTC).date().isoformat()
    for name in ("session.jsonl", "DIARY.md", "VITALS.json", "DRIVES.json", f"backups/{today}/DIARY.md"):
        assert (soul_dir / name).exists(), name
    assert "this is private" in (soul_dir / "session.jsonl").read_text()
    assert not_private(soul_dir) == []


# --- the real flock -------------------------------------------------------------------------


async def test_the_flock_keeps_its_data_folder_database_and_logs_private(tmp_path):
    crows = tmp_path / "crows"
    made(crows / "jev.jsonl")  # left world-readable by an older flock
    made(crows / "nests.json", "{}")
    async with FakeAnthropic(default=Brain()) as fake:
        flock = FlockProcess(tmp_path, fake.base_url, {})
        with umask(0o022):
            await flock.start()
        try:
            async with aiohttp.ClientSession() as http:
                async with http.post(
                    f"{flock.url}/api/nests", json={"name": "Launch", "crows": ["Pepper", "Inky"]}
                ) as answer:
                    assert answer.status == 201, await answer.text()
                async with http.post(
                    f"{flock.url}/api/nests/todo/messages", json={"author": "owner", "text": "my private plans"}
                ) as answer:
                    assert answer.status == 201, await answer.text()
            await flock.new_list("- research alpha")
            # While it runs, the database's WAL and shared memory are there: both private too.
            for name in ("flock.db", "flock.db-wal", "flock.db-shm", "jev.jsonl", "nests.json"):
                assert mode(crows / name) == 0o600, name
        finally:
            flock.stop()
    assert "Launch" in (crows / "nests.json").read_text()
    assert not_private(crows) == []


# --- soulstack service install: the env file holds secrets ----------------------------------


def install(soulstack_cmd, tmp_path, name):
    with umask(0o022):
        return subprocess.run(
            [
                *soulstack_cmd,
                "service",
                "install",
                name,
                "--unit-dir",
                str(tmp_path / "units"),
                "--env-dir",
                str(tmp_path / "etc" / "soulstack"),
                "--no-enable",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )


def test_service_install_writes_the_env_file_0600_over_a_leftover_temporary(soulstack_cmd, tmp_path):
    env_dir, units = tmp_path / "etc" / "soulstack", tmp_path / "units"
    units.mkdir()
    done = install(soulstack_cmd, tmp_path, "soul")
    assert done.returncode == 0, done.stderr
    assert mode(env_dir) == 0o700 and mode(env_dir / "soul.env") == 0o600  # a folder it made: 0700
    # A temporary an install that died left behind, writable by anyone: it lends neither file its mode.
    made(env_dir / "flock.env.tmp", "stale", 0o666)
    made(units / "soulstack-flock.service.tmp", "stale", 0o666)
    os.chmod(env_dir, 0o700)
    done = install(soulstack_cmd, tmp_path, "flock")
    assert done.returncode == 0, done.stderr
    assert mode(env_dir / "flock.env") == 0o600 and "stale" not in (env_dir / "flock.env").read_text()
    assert mode(units / "soulstack-flock.service") == 0o644  # a unit anyone could write would run as root
