"""A nudge counted once: the soul drops a nudge sent again under its `nudge_id` and answers it as before.

A nudge that went out whole but whose answer was lost (a timeout, a dropped link) is sent again by
its body; without an id the soul kept it twice. Real soul, real sender, a loopback proxy that drops
the first answer after the soul has acted (tests/fakes/dropping_proxy.py).
"""

import asyncio
import json
from contextlib import AsyncExitStack

import aiohttp
import pytest

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from soulstack.protocol.nudges import Nudge
from soulstack.soul.nudges.ids import WINDOW_S, NudgeIds, fingerprint
from tests.fakes.dropping_proxy import DroppingProxy
from tests.helpers import until
from tests.soul.helpers import Running, a_soul, fell_asleep, sleep_long


def kept_lines(tmp_path) -> list:
    path = tmp_path / "soul" / "NUDGES.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def a_sleeping_soul(stack, tmp_path, fake, token=None):
    """A soul that a nudge woke once and that sleeps again: the next nudges wait in its inbox for an hour."""
    body = await stack.enter_async_context(RecordingBody())
    soul = a_soul(tmp_path, body, fake, nudge={"minIntervalSeconds": 3600, **({"token": token} if token else {})})
    running = await stack.enter_async_context(Running(soul))
    await fell_asleep(soul)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    assert (await running.post("/nudge", {"reason": "the first nudge"}, headers=headers))[0] == 202
    await fell_asleep(soul, 2)
    assert soul.inbox.entries == []
    return soul, running


@pytest.fixture
async def stack():
    async with AsyncExitStack() as stack:
        yield stack


async def nudged(running, payload):
    status, answer = await running.post("/nudge", payload)
    assert status == 202, answer
    return answer


async def test_a_nudge_resent_by_the_sender_after_its_answer_was_lost_reaches_the_soul_once(tmp_path, stack):
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    soul, running = await a_sleeping_soul(stack, tmp_path, fake)
    soul_port = int(running.url.rsplit(":", 1)[1])
    proxy = DroppingProxy(soul_port, drop=1)
    port = await stack.enter_async_context(proxy)
    sender = NudgeSender(
        f"http://127.0.0.1:{port}/nudge", debouncer=Debouncer(60, 0), first_backoff_s=0.05, max_backoff_s=0.2
    )
    task = asyncio.create_task(sender.run())
    try:
        sender.nudge("a door slammed downstairs")
        await proxy.wait_for_answers(1)
        await until(lambda: sender.waiting == [], "the sender to hear the soul took it")
    finally:
        task.cancel()
    assert len(proxy.requests) == 2  # the soul kept the first; its answer was lost, so it was sent again
    assert soul.inbox.received == 2  # the first nudge, and this one once
    assert [line["reason"] for line in kept_lines(tmp_path)] == ["a door slammed downstairs"]
    sent = [json.loads(body) for body in proxy.requests]
    assert sent[0] == sent[1] and sent[0]["nudge_id"]  # sent again, whole, under the same id
    # The resend is answered as the first was.
    assert json.loads(proxy.answered[0].split(b"\r\n\r\n", 1)[1]) == {"queued": True, "state": "asleep"}


async def test_a_repeat_is_answered_as_the_first_and_a_nudge_without_an_id_counts_each_time(tmp_path, stack):
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    soul, running = await a_sleeping_soul(stack, tmp_path, fake)
    with_id = {"reason": "the cat walked past", "nudge_id": "robot-1a2b3c4d-7"}
    first = await nudged(running, with_id)
    assert await nudged(running, with_id) == first == {"queued": True, "state": "asleep"}
    without = {"reason": "the cat walked past"}
    await nudged(running, without)
    await nudged(running, without)
    assert soul.inbox.received == 1 + 3  # the first nudge; once with the id; each time without one
    assert len(kept_lines(tmp_path)) == 3
    # Another id is another nudge, even with the same words.
    await nudged(running, {**with_id, "nudge_id": "robot-1a2b3c4d-8"})
    assert soul.inbox.received == 1 + 4


async def test_ids_survive_a_restart_while_waiting_and_after_they_were_shown(tmp_path, stack):
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    waiting = {"reason": "a parcel arrived", "nudge_id": "bridge-0001"}

    def shown():
        return [body for body in fake.bodies if "a parcel arrived" in json.dumps(body["messages"][-1])]

    async with AsyncExitStack() as first:
        soul, running = await a_sleeping_soul(first, tmp_path, fake)
        assert await nudged(running, waiting) == {"queued": True, "state": "asleep"}
        assert [entry.nudge.nudge_id for entry in soul.inbox.entries] == ["bridge-0001"]
    # Restarted with the nudge still waiting in NUDGES.jsonl: its id came back with it.
    async with RecordingBody() as body:
        soul = a_soul(tmp_path, body, fake, nudge={"minIntervalSeconds": 0})
        async with Running(soul) as running:
            await until(lambda: soul.inbox.entries == [] and soul.state == "asleep", "the waking that showed it")
            assert len(shown()) == 1
            assert await nudged(running, waiting) == {"queued": True, "state": "asleep"}
            assert soul.inbox.received == 0 and soul.inbox.entries == []
    # Restarted again, the nudge shown and gone from NUDGES.jsonl: NUDGE_IDS.json still knows it.
    assert kept_lines(tmp_path) == []
    async with RecordingBody() as body:
        soul = a_soul(tmp_path, body, fake, nudge={"minIntervalSeconds": 0})
        async with Running(soul) as running:
            await fell_asleep(soul)
            assert await nudged(running, waiting) == {"queued": True, "state": "asleep"}
            assert soul.inbox.received == 0
    assert len(shown()) == 1


async def test_an_id_reused_for_other_words_loses_none_of_them(tmp_path, stack, caplog):
    # A sender that reuses ids (a bug) once had its second nudge dropped as a resend, a person's words
    # and all, and logged as "its answer was lost". The id is checked against what its nudge said.
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    soul, running = await a_sleeping_soul(stack, tmp_path, fake)
    first = {"reason": "the doorbell rang", "nudge_id": "robot-reused-1"}
    await nudged(running, first)
    with caplog.at_level("WARNING", logger="soulstack.soul.server"):
        await nudged(running, {"words": "are you there?", "nudge_id": "robot-reused-1"})
    assert "nudge robot-reused-1 came again saying something else: kept as a new nudge" in caplog.text
    await nudged(running, first)  # the first one's resend is still a resend
    assert [(line.get("reason"), line.get("words")) for line in kept_lines(tmp_path)] == [
        ("the doorbell rang", None),
        ("your human typed: are you there?", "are you there?"),
    ]
    assert "nudge_id" not in kept_lines(tmp_path)[1]  # kept under no id: its resend cannot be told apart
    # The fingerprint goes to NUDGE_IDS.json with the id, so it holds across a restart too.
    await soul.inbox.ids.save()
    now = soul.clock.time()
    again = NudgeIds(tmp_path / "soul" / "NUDGE_IDS.json").load(now)
    assert again.reused("robot-reused-1", fingerprint(Nudge("the doorbell rang, twice")), now)
    assert not again.reused("robot-reused-1", fingerprint(Nudge("the doorbell rang")), now)


async def test_a_repeat_after_the_window_is_a_new_nudge(tmp_path, stack):
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    soul, running = await a_sleeping_soul(stack, tmp_path, fake)
    nudge = {"reason": "the lights went out", "nudge_id": "x"}
    await nudged(running, nudge)
    soul.clock.jump(WINDOW_S - 1)
    await nudged(running, nudge)
    assert soul.inbox.received == 1 + 1
    soul.clock.jump(2)
    await nudged(running, nudge)
    assert soul.inbox.received == 1 + 2


@pytest.mark.parametrize(
    "nudge_id, says",
    [
        (17, "must be a string"),
        ("", "only letters, digits"),
        ("a" * 65, "at most 64"),
        ("two words", "only letters, digits"),
        ("-leading", "only letters, digits"),
        ("caf\u00e9", "only letters, digits"),
        ("id\n", "only letters, digits"),
    ],
)
async def test_a_bad_nudge_id_is_a_400_naming_the_field(tmp_path, stack, nudge_id, says):
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    soul, running = await a_sleeping_soul(stack, tmp_path, fake)
    status, answer = await running.post("/nudge", {"reason": "a knock", "nudge_id": nudge_id})
    assert status == 400 and '"nudge_id"' in answer["message"] and says in answer["message"], answer
    assert soul.inbox.received == 1  # the first nudge only


async def test_the_id_keeps_the_serving_layer_s_rules(tmp_path, stack):
    fake = await stack.enter_async_context(FakeAnthropic(default=sleep_long))
    soul, running = await a_sleeping_soul(stack, tmp_path, fake, token="t0k")
    nudge = {"reason": "a knock", "nudge_id": "n-1"}
    assert (await running.post("/nudge", nudge))[0] == 401  # an id is no way around the token
    async with aiohttp.ClientSession() as http:
        async with http.post(
            running.url + "/nudge", data=json.dumps(nudge), headers={"Authorization": "Bearer t0k"}
        ) as response:
            assert response.status == 415  # JSON only, id or not
    status, answer = await running.post("/nudge", nudge, headers={"Authorization": "Bearer t0k"})
    assert status == 202 and soul.inbox.received == 2
    # A stranger replaying a known id without the token learns nothing and changes nothing.
    assert (await running.post("/nudge", nudge))[0] == 401
