"""kill -9 and restart: the real `soulstack flock` in a subprocess, on the same data dir.

After the restart the event log replays (ids carry on), a pending approval is
still pending with the same deadline, an item whose model call died with the
process is skipped as "interrupted", and an item that had not started resumes.
"""

import pytest

from tests.flock.helpers import SSE, Brain
from tests.flock.processes import Server
from soulstack.fakes.anthropic_api import FakeAnthropic


@pytest.fixture
async def fake():
    brain = Brain()
    async with FakeAnthropic(default=brain) as fake:
        yield fake
        brain.hang.set()  # let the killed server's hanging request finish, so the fake stops at once


async def test_kill_9_then_restart_keeps_log_approvals_and_tells_the_truth(tmp_path, fake):
    server = await Server(tmp_path, fake.base_url).start()
    try:
        async with server.session.post(
            "/api/lists", json={"text": "research alpha\nhang beta\nresearch gamma", "requester": "ada"}
        ) as response:
            assert response.status == 202
            list_id = (await response.json())["list_id"]
        async with SSE(server.session, list_id) as before:
            await before.until("item.triaged", item_id=f"{list_id}-1", timeout=10)
            await before.until("crow.flying", item_id=f"{list_id}-2", timeout=10)  # the Sentry hangs in the air
        pending_before = server.pending()
        assert [(i, t) for i, t, _ in pending_before] == [(f"{list_id}-1", "triage")]
    finally:
        await server.kill()

    server = await Server(tmp_path, fake.base_url).start()
    try:
        # Item 1 still waits with the same deadline (item 3 may already be waiting too: it resumed).
        assert [row for row in server.pending() if row[0] == f"{list_id}-1"] == pending_before
        last_seen = before.events[-1]["id"]
        async with SSE(server.session, list_id, last_event_id=last_seen) as after:
            interrupted = await after.until("item.skipped", timeout=10)
            third = await after.until("item.triaged", item_id=f"{list_id}-3", timeout=10)
            assert await verdict(server, f"{list_id}-1", "triage") == 204
            answered = await after.until("item.answered", item_id=f"{list_id}-1", timeout=10)
            assert await verdict(server, f"{list_id}-1", "output") == 204
            assert await verdict(server, f"{list_id}-3", "triage", False) == 204
            finished = await after.until("list.finished", timeout=10)
        assert interrupted == {**interrupted, "item_id": f"{list_id}-2", "reason": "interrupted"}
        assert third["needs_approval"] is True and answered["answer"].startswith("done:")
        assert finished["tokens_used"] > 0
        assert after.events[0]["id"] > last_seen  # replay starts after what the client had
        # A fresh client replays the whole list, ids still rising across the restart.
        async with SSE(server.session, list_id) as everything:
            await everything.until("list.finished", timeout=10)
        ids = [m["id"] for m in everything.events]
        assert ids == sorted(ids) and ids[: len(before.events)] == [m["id"] for m in before.events]
        assert [m["id"] for m in everything.events[len(before.events) :]] == [m["id"] for m in after.events]
        assert server.pending() == []
    finally:
        await server.kill()


async def verdict(server, item_id, target, approve=True):
    body = {"item_id": item_id, "target": target, "approve": approve}
    async with server.session.post("/api/verdicts", json=body) as response:
        return response.status
