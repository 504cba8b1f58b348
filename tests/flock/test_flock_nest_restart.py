"""kill -9 and restart with nest messages: the real `soulstack flock` in a subprocess.

Messages, the counter, open expectations with their deadlines, quarantines and
pending owner questions all survive; a client replays what it missed with
Last-Event-ID.
"""

import asyncio
import sqlite3

import pytest

from soulstack.fakes.anthropic_api import FakeAnthropic
from tests.flock.helpers import SSE, Brain
from tests.flock.processes import Server


def table(server, sql):
    with sqlite3.connect(server.data_dir / "flock.db") as db:
        return db.execute(sql).fetchall()


async def post(server, body, nest="launch"):
    async with server.session.post(f"/api/nests/{nest}/messages", json=body) as response:
        return response.status, await response.json()


@pytest.fixture
async def fake():
    async with FakeAnthropic(default=Brain()) as fake:
        yield fake


@pytest.mark.timeout(300)  # two server start-ups
async def test_nest_state_survives_kill_9(tmp_path, fake):
    server = Server(tmp_path, fake.base_url)
    await server.start(attempts=1200)  # importing the SDKs takes long on a busy machine
    try:
        async with server.session.post("/api/nests", json={"name": "Launch", "crows": ["Pepper", "Inky"]}) as response:
            assert response.status == 201
        status, request = await post(
            server, {"author": "owner", "text": "Can you draft the launch email?", "to": "Pepper"}
        )
        assert status == 201
        status, _ = await post(server, {"author": "Inky", "text": "Please ask Zed.", "to": "Zed"})  # flagged
        assert status == 201
        for _ in range(100):  # Pepper's invocation answers through the fake model
            async with server.session.get("/api/nests/launch/messages") as response:
                before = await response.json()
            if any(m["author"] == "Pepper" for m in before):
                break
            await asyncio.sleep(0.05)
        expectations = table(server, "SELECT msg_id, crow, expects, deadline FROM nest_expectations")
        questions = table(server, "SELECT flag_msg_id, crow, deadline FROM nest_questions")
        assert expectations and questions
    finally:
        await server.kill()

    server = Server(tmp_path, fake.base_url)
    await server.start(attempts=1200)  # importing the SDKs takes long on a busy machine
    try:
        async with server.session.get("/api/nests/launch/messages") as response:
            assert await response.json() == before
        assert table(server, "SELECT msg_id, crow, expects, deadline FROM nest_expectations") == expectations
        assert table(server, "SELECT flag_msg_id, crow, deadline FROM nest_questions") == questions
        status, answer = await post(server, {"author": "Inky", "text": "hello again"})
        assert status == 409 and "quarantined" in answer["message"]
        async with SSE(server.session, last_event_id=1, nest_id="launch") as stream:
            replayed = [await stream.next() for _ in range(len(before) - 1)]
            status, record = await post(server, {"author": "owner", "text": "Thanks, that helps a lot."})
            live = await stream.next()
        assert [m["data"] for m in replayed] == before[1:]
        assert record["msg_id"] == f"launch-{len(before) + 1}" and live["data"] == record
        async with server.session.post(
            "/api/verdicts", json={"item_id": questions[0][0], "target": "flag", "approve": False}
        ) as response:
            assert response.status == 204
        status, _ = await post(server, {"author": "Inky", "text": "Thanks, that helps a lot."})
        assert status == 201
    finally:
        await server.kill()
