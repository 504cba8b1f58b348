"""A list step cut by a full disk, retried once space is back, repeats nothing: a real `soulstack
flock` on a small tmpfs (root only: CI is).

The disk is filled as a person answers, leaving 0, 1, 2... pages free, so the fault lands on a
different write of the step each time (the verdict's event, the pending row, the trust ledger,
the item's state, the next step's). Whatever it cut, every target gets exactly one verdict, an
answered approval is never listed again, trust counts each judgment once (the ledger equals the
verdicts replayed) and every list finishes once. A kill -9 after the verdict's event, before its
pending row went, does not ask the person again after the restart either.
"""

import asyncio
import os

import aiohttp

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.flock.trust import PROMOTE_AFTER, TRUSTED
from tests.faults import small_disk
from tests.flock.helpers import Brain
from tests.flock.processes import FlockProcess
from tests.helpers import until_real as until

PAGE = 4096
# Pages left free as the person answers: 0 cuts the verdict's own event, more cut the writes after
# it (measured here: 4 the pending row, 6 the ledger, 10 and 11 the item's state, 11 and 14 the
# list's end, 12 and 13 the crows' flight). Two task types, five approvals each, keep "flock"
# short of trusted (six), so every triage waits for a person.
ROOMS = (0, 4, 6, 10, 11, 12, 13, 14, 15, 16)


def leave(disk, pages: int) -> None:
    """Fill the disk, then give back `pages` pages of it."""
    disk.fill()
    size = disk.filler.stat().st_size
    os.truncate(disk.filler, max(0, size - pages * PAGE))


async def waiting(http, flock) -> set:
    async with http.get(f"{flock.url}/api/waiting") as response:
        assert response.status == 200, await response.text()
        return {(entry["item_id"], entry["target"]) for entry in (await response.json())["waiting"]}


async def test_a_step_cut_by_a_full_disk_is_retried_without_repeating_anything(tmp_path):
    async with FakeAnthropic(default=Brain()) as fake:
        with small_disk(tmp_path, "16m") as disk:
            flock = await FlockProcess(disk.path, fake.base_url, {"listsPerMinute": 1000}).start()
            try:
                async with aiohttp.ClientSession() as http:
                    lists = [await one_list_cut_at(http, flock, disk, room, n % 2) for n, room in enumerate(ROOMS)]
                    async with http.get(f"{flock.url}/api/trust") as response:
                        ledger = {
                            (e["holder"], e["task_type"]): (e["level"], e["streak"])
                            for e in (await response.json())["trust"]
                        }
            finally:
                disk.free()
                flock.stop()
            check_told_once(flock, lists, ledger)
            assert "Traceback" not in flock.log.read_text()


def check_told_once(flock, lists, ledger) -> None:
    for list_id in lists:
        assert len([e for e in flock.events("list.finished") if e["list_id"] == list_id]) == 1, list_id
    verdicts = flock.events("verdict")
    keys = [(v["item_id"], v["target"]) for v in verdicts]
    assert len(keys) == len(set(keys)), f"a target judged twice: {keys}"
    skipped = {e["item_id"] for e in flock.events("item.skipped")}
    for list_id in lists:
        item_id = f"{list_id}-1"
        assert (item_id, "triage") in keys
        assert (item_id, "output") in keys or item_id in skipped, "an answered item without its verdict"
    assert len(flock.events("item.skipped")) == len(skipped), "an item skipped twice"
    expected, moves = replay(verdicts, flock.events("item.triaged"), flock.events("item.answered"))
    assert ledger == expected, "trust counted a judgment twice (or not at all)"
    changed = [(e["holder"], e["from"], e["to"]) for e in flock.events("trust.changed")]
    assert sorted(changed) == sorted(moves)


async def one_list_cut_at(http, flock, disk, room: int, code: bool) -> str:
    """A one-item list whose two approvals are answered on a disk with `room` pages free."""
    task = "write the code for" if code else "look up"  # the Brain's "code" and "research"
    list_id = await flock.new_list(f"- {task} the tide at harbour {room}")
    item_id = f"{list_id}-1"
    answered = set()
    for target in ("triage", "output"):
        ready = await until(
            lambda: _waiting_or_skipped(http, flock, item_id, target), what=f"{target} of {item_id}", timeout=30
        )
        if ready == "skipped":  # the fault cut the crows' flight: that work is honestly lost
            break
        flock.db("PRAGMA wal_checkpoint(TRUNCATE)")  # the flock's next write needs fresh room
        leave(disk, room)
        assert await flock.verdict(item_id, target) == 204
        answered.add((item_id, target))
        await asyncio.sleep(0.4)  # the step runs into the full disk and waits
        disk.free()
        # Until its verdict is written the answer is held (a second one is 404); once written, never asked again.
        await until(lambda: _judged(flock, item_id, target), what=f"the {target} verdict", timeout=30)
        assert not answered & await waiting(http, flock), "an answered approval is asked again"
    await until(lambda: _finished(flock, list_id), what=f"list.finished of {list_id}", timeout=30)
    assert not answered & await waiting(http, flock), "an answered approval is asked again"
    return list_id


async def _waiting_or_skipped(http, flock, item_id, target):
    if (item_id, target) in await waiting(http, flock):
        return "waiting"
    if any(e["item_id"] == item_id for e in flock.events("item.skipped")):
        return "skipped"
    return None


def _judged(flock, item_id, target) -> bool:
    return any(e["item_id"] == item_id and e["target"] == target for e in flock.events("verdict"))


def _finished(flock, list_id) -> bool:
    return any(e["list_id"] == list_id for e in flock.events("list.finished"))


def replay(verdicts, triages, answers):
    """The ledger the judged verdicts make (host/flock/trust.py's rules), and the moves they make."""
    crows = {a["item_id"]: a["crows"] for a in answers}
    task_types = {t["item_id"]: t["task_type"] for t in triages}
    entries, moves = {}, []
    for v in verdicts:
        if v["verdict"] == "auto":
            continue
        task_type = task_types[v["item_id"]]
        for holder in ["flock"] if v["target"] == "triage" else crows[v["item_id"]]:
            level, streak = entries.get((holder, task_type), (0, 0))
            before = level
            if v["verdict"] == "approved":
                streak += 1
                if streak >= PROMOTE_AFTER and level < TRUSTED:
                    level, streak = level + 1, 0
            else:
                level, streak = max(0, level - 1), 0
            entries[(holder, task_type)] = (level, streak)
            if level != before:
                moves.append((holder, before, level))
    return entries, moves


async def test_a_verdict_recorded_before_a_kill_9_is_not_asked_again_after_the_restart(tmp_path):
    """The disk fills between the verdict's event and its pending row's removal (5 pages free: the
    event and its entries in both of the events' indexes fit, the next write does not); the flock is
    killed -9 there. Started again, it carries on from the recorded verdict: the approval is never
    listed again, and the list finishes."""
    async with FakeAnthropic(default=Brain()) as fake:
        with small_disk(tmp_path, "16m") as disk:
            flock = await FlockProcess(disk.path, fake.base_url, {"listsPerMinute": 1000}).start()
            try:
                async with aiohttp.ClientSession() as http:
                    list_id = await flock.new_list("- look up the tide at the pier")
                    item_id = f"{list_id}-1"
                    await until(lambda: _waiting_or_skipped(http, flock, item_id, "triage"), what="the triage")
                    flock.db("PRAGMA wal_checkpoint(TRUNCATE)")
                    leave(disk, 5)
                    assert await flock.verdict(item_id, "triage") == 204
                    await until(lambda: _judged(flock, item_id, "triage"), what="the verdict recorded")
                    await asyncio.sleep(0.3)
                    flock.kill()
                    disk.free()
                    assert flock.pending(), "the fault was meant to keep the pending row"
                    await flock.start()
                    await until(lambda: _waiting_or_skipped(http, flock, item_id, "output"), what="the output")
                    assert (item_id, "triage") not in await waiting(http, flock)
                    assert await flock.verdict(item_id, "triage") == 404  # answered before: nothing waits
                    assert await flock.verdict(item_id, "output") == 204
                    await until(lambda: _finished(flock, list_id), what="list.finished")
                    verdicts = [(v["target"], v["verdict"]) for v in flock.events("verdict")]
                    assert verdicts == [("triage", "approved"), ("output", "approved")]
                    assert flock.pending() == []
            finally:
                disk.free()
                flock.stop()
