"""The flock on a full disk, as a real `soulstack flock` process on a small tmpfs (root only: CI is).

A full disk is a 503 naming it, never a 500; a list caught by it carries on once space is back,
without a restart, and every approval /api/waiting lists can be answered meanwhile; the WAL
stays bounded so the flock never fills a small disk by itself; a start on a full disk is one
line and exit 2, with no temporary file left behind.
"""

import os
import subprocess
import sys

import aiohttp

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.flock.store import WAL_SIZE_LIMIT, Store
from tests.helpers import free_port
from tests.faults import small_disk
from tests.flock.helpers import Brain
from tests.flock.processes import FlockProcess
from tests.helpers import ROOT, until_real as until


async def waiting(http, flock, target):
    async with http.get(f"{flock.url}/api/waiting") as response:
        assert response.status == 200, await response.text()
        return [entry for entry in (await response.json())["waiting"] if entry["target"] == target]


async def approve_all(http, flock, entries):
    for entry in entries:
        body = {"item_id": entry["item_id"], "target": entry["target"], "approve": True}
        async with http.post(f"{flock.url}/api/verdicts", json=body) as response:
            assert response.status == 204, await response.text()


async def test_a_full_disk_is_a_503_and_the_list_finishes_once_space_is_back(tmp_path):
    async with FakeAnthropic(default=Brain()) as fake:
        with small_disk(tmp_path, "16m") as disk:
            await full_disk_mid_list(disk, fake)


async def full_disk_mid_list(disk, fake):
    if True:
        flock = await FlockProcess(disk.path, fake.base_url, {"listsPerMinute": 1000}).start()
        try:
            async with aiohttp.ClientSession() as http:
                list_id = await flock.new_list("- look up the tides\n- look up the moon")
                await until(lambda: len(flock.pending()) == 2, what="both triage approvals")
                # The WAL starts over empty, so the flock's next write needs room the disk no longer has.
                flock.db("PRAGMA wal_checkpoint(TRUNCATE)")
                disk.fill()
                for _ in range(3):
                    async with http.post(
                        f"{flock.url}/api/lists", json={"text": "- one more", "requester": "ada"}
                    ) as response:
                        assert response.status == 503, await response.text()
                        assert "disk is full" in (await response.json())["message"]
                # What waits is listed and can be answered while nothing can be written.
                triage = await waiting(http, flock, "triage")
                assert len(triage) == 2
                await approve_all(http, flock, triage)
                # The items try to carry on, and wait for the storage (each says so once, in the log).
                await until(
                    lambda: all(f"item {list_id}-{n} waits for the storage" in flock.log.read_text() for n in (1, 2)),
                    what="both items waiting for the storage",
                )
                disk.free()
                outputs = await until(
                    lambda: _all(waiting(http, flock, "output"), 2), what="both answers to approve", timeout=30
                )
                await approve_all(http, flock, outputs)
                await until(
                    lambda: any(e["list_id"] == list_id for e in flock.events("list.finished")),
                    what="list.finished",
                    timeout=30,
                )
                states = flock.db("SELECT state FROM items WHERE list_id = ?", list_id)
                assert sorted(state for (state,) in states) == ["done", "done"]
        finally:
            flock.stop()
        log = flock.log.read_text()
        assert "Traceback" not in log and "a bug" not in log
        assert "waits for the storage" in log


async def _all(entries_awaitable, count):
    entries = await entries_awaitable
    return entries if len(entries) >= count else None


def start_flock(data, *flags, log=None):
    """`soulstack flock` on `data`; its stderr to the file `log` (a long run), else a pipe (its last line)."""
    return subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "flock", "--data", str(data), "--port", str(free_port()), *flags],
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": "", "OPENAI_BASE_URL": ""},
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w") if log else subprocess.PIPE,
        text=True,
    )


def temporaries(folder):
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


async def test_the_wal_stays_bounded_on_a_2_mb_disk_and_a_full_disk_start_is_one_line(tmp_path):
    with small_disk(tmp_path, "2m") as disk:
        data = disk.path / "crows"
        process = start_flock(
            data, "--provider", "brainstem", "--lists-per-minute", "100000", log=tmp_path / "flock.log"
        )
        url = f"http://127.0.0.1:{process.args[process.args.index('--port') + 1]}"
        statuses, biggest_wal = [], 0
        try:
            async with aiohttp.ClientSession() as http:
                await until(lambda: _up(http, url), what="the flock to listen")
                for n in range(400):
                    text = "\n".join(f"- errand {n}.{k} " + "words " * 20 for k in range(3))
                    async with http.post(f"{url}/api/lists", json={"text": text, "requester": "ada"}) as response:
                        statuses.append(response.status)
                    wal = data / "flock.db-wal"
                    biggest_wal = max(biggest_wal, wal.stat().st_size if wal.exists() else 0)
                async with http.get(f"{url}/api/trust") as response:
                    assert response.status == 200
        finally:
            process.terminate()
            process.wait(timeout=20)
        assert set(statuses) <= {202, 503} and statuses.count(202) > 0, statuses
        assert biggest_wal <= WAL_SIZE_LIMIT + 256 * 1024, biggest_wal  # a checkpoint's worth over the limit at most

        # A start on a full disk: one line, exit 2, and nothing half-written left behind.
        disk.fill()
        process = start_flock(data, "--provider", "brainstem")
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "disk is full" in lines[0] and "--data" in lines[0], err
        assert temporaries(data) == []
        # A fresh data folder on the full disk too.
        process = start_flock(disk.path / "fresh", "--provider", "brainstem")
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 2 and len(err.strip().splitlines()) == 1, err
        disk.free()


async def _up(http, url):
    try:
        async with http.get(f"{url}/api/crows") as response:
            return response.status == 200
    except aiohttp.ClientConnectionError:
        return False


def test_asking_whether_an_items_event_was_told_is_one_index_lookup(tmp_path):
    # Every verdict, skip and trust change asks the store first (issue 35's retries); scanning each
    # of the list's events of that name with json_extract cost a tenth of the flock's speed (issue 47
    # item 10). The store's own statements, caught as SQLite runs them, each search events_by_item.
    store = Store(tmp_path)
    try:
        store.create_list("l1", "ada", "todo", 100, 0.0, ["one"])
        store.append_event("l1", "verdict", '{"item_id": "l1-1", "target": "triage", "verdict": "auto"}')
        asked = []
        store.db.set_trace_callback(asked.append)
        assert store.has_event("l1", "verdict", item_id="l1-1", target="triage")
        assert store.verdict_of("l1-1", "triage") == "auto"
        store.add_pending("l1-1", "output", 1.0)
        assert store.pending_deadline("l1-1", "output") == 1.0
        store.db.set_trace_callback(None)
        reads = [sql for sql in asked if sql.lstrip().startswith("SELECT") and "json_extract" in sql]
        assert len(reads) == 3, asked
        for sql in reads:
            plan = " ".join(row[-1] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql))
            assert "events USING INDEX events_by_item" in plan, (sql, plan)
    finally:
        store.close()
