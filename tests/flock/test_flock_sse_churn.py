"""Readers that come and go leave nothing behind in the flock (issue 47 item 9): the flock served
as `soulstack flock` serves it (soulstack.serving.listening, whose connection gate tells a stream
that its reader hung up); after 200 connections that ask for a stream (every list, the page's
opening view, one list, a nest) and hang up as soon as the head is in, it holds no subscriber and
no task for any of them. tools/bench-flock --sse-churn N reads a real process's RSS through the
same (docs/flock-api.md)."""

import asyncio

from soulstack.clocks import ManualClock
from soulstack.flock.app import FLOCK, HARNESS, make_flock_app
from soulstack.flock.lists.flow import FlockConfig
from soulstack.serving import listening


async def test_streams_that_come_and_go_leave_no_subscriber_or_task(tmp_path):
    app = make_flock_app(tmp_path, None, ManualClock(), FlockConfig(heartbeat_s=60, lists_per_minute=1000))
    async with listening(app, "127.0.0.1", 0) as port:
        list_id = app[FLOCK].submit("ada", "todo", ["one", "two"])
        paths = ["/api/events", "/api/events?recent=20", f"/api/events?list_id={list_id}", "/api/events?nest_id=todo"]
        tasks_before = len(asyncio.all_tasks())
        lists, nests = app[FLOCK].events.subscribers, app[HARNESS].messages.subscribers
        for n in range(200):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {paths[n % 4]} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            assert lists.live or nests.live  # the stream is being served: its subscriber is in
            writer.close()
            await writer.wait_closed()
        for _ in range(500):  # each handler ends once the gate tells it its reader has gone
            if not lists.live and not nests.live and len(asyncio.all_tasks()) <= tasks_before:
                break
            await asyncio.sleep(0.02)
        assert not lists.live and not nests.live
        assert len(asyncio.all_tasks()) <= tasks_before
