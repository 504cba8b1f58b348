"""Nudges: the debouncer on a fake clock; the sender against a real receiver that is down, then up."""

import asyncio
import logging

import pytest

from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from soulstack.protocol.nudges import Nudge
from tests.helpers import free_port
from tests.fakes.nudge_receiver import NudgeReceiver
from tests.helpers import until


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def test_the_first_reason_is_due_at_once(clock):
    debouncer = Debouncer(same_reason_window_s=60, min_interval_s=10, clock=clock)
    assert debouncer.seconds_until_due() is None
    assert debouncer.offer("a face appeared")
    assert debouncer.seconds_until_due() == 0
    assert debouncer.take() == [Nudge("a face appeared")]
    assert debouncer.seconds_until_due() is None


def test_the_same_reason_within_the_window_collapses(clock):
    debouncer = Debouncer(same_reason_window_s=60, min_interval_s=0, clock=clock)
    assert debouncer.offer("a face appeared")
    debouncer.take()
    debouncer.sent()
    for _ in range(30):  # face detection firing every frame for half a minute
        clock.advance(1)
        assert not debouncer.offer("a face appeared")
    assert not debouncer.offer("  A face   appeared ")  # the same words are the same event
    assert debouncer.pending == []
    clock.advance(30)
    assert debouncer.offer("a face appeared")  # a minute later it is news again


def test_a_different_reason_waits_for_the_interval_and_is_not_lost(clock):
    debouncer = Debouncer(same_reason_window_s=60, min_interval_s=10, clock=clock)
    debouncer.offer("a face appeared")
    debouncer.take()
    debouncer.sent()
    clock.advance(3)
    assert debouncer.offer("the device was picked up")
    assert debouncer.offer("a message arrived")
    assert debouncer.seconds_until_due() == pytest.approx(7)
    clock.advance(7)
    assert debouncer.seconds_until_due() == 0
    assert debouncer.take() == [Nudge("the device was picked up"), Nudge("a message arrived")]


def test_blank_reasons_are_ignored(clock):
    debouncer = Debouncer(clock=clock)
    assert not debouncer.offer("   ")
    assert debouncer.seconds_until_due() is None


class Events:
    """Collects NudgeEvents so a test can wait for the one it expects."""

    def __init__(self):
        self.seen = []
        self._changed = asyncio.Event()

    def __call__(self, event):
        self.seen.append(event)
        self._changed.set()

    async def wait_for(self, kind, timeout_s=10.0):
        async def until():
            while not any(e.kind == kind for e in self.seen):
                self._changed.clear()
                await self._changed.wait()
            return next(e for e in self.seen if e.kind == kind)

        return await asyncio.wait_for(until(), timeout_s)


@pytest.fixture
async def running():
    tasks = []

    def start(sender):
        tasks.append(asyncio.create_task(sender.run()))
        return sender

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def quick_sender(url, events, **kwargs):
    debouncer = Debouncer(same_reason_window_s=60, min_interval_s=0)
    return NudgeSender(url, debouncer=debouncer, listener=events, first_backoff_s=0.05, max_backoff_s=0.2, **kwargs)


async def test_a_nudge_reaches_the_soul_with_its_token(aiohttp_server, running):
    receiver = NudgeReceiver(token="nudge-token")
    server = await aiohttp_server(receiver.app())
    events = Events()
    sender = running(quick_sender(str(server.make_url("/nudge")), events, token="nudge-token"))
    assert sender.nudge("a face appeared")
    assert await receiver.wait_for(1) == ["a face appeared"]
    assert (await events.wait_for("delivered")).reasons == ["a face appeared"]
    assert sender.waiting == []


async def test_nothing_is_lost_while_the_soul_is_down(aiohttp_server, running):
    port = free_port()
    events = Events()
    sender = running(quick_sender(f"http://127.0.0.1:{port}/nudge", events))
    sender.nudge("a face appeared")
    retrying = await events.wait_for("retrying")
    assert "cannot connect" in retrying.detail
    sender.nudge("the device was picked up")
    assert sender.waiting == ["a face appeared", "the device was picked up"]

    receiver = NudgeReceiver()
    await aiohttp_server(receiver.app(), port=port)
    reasons = await receiver.wait_for(1)
    assert "; ".join(reasons) == "a face appeared; the device was picked up"
    await events.wait_for("delivered")
    assert sender.waiting == []


async def test_a_soul_answering_503_is_retried_until_it_takes_the_nudge(aiohttp_server, running):
    receiver = NudgeReceiver(fail_first=2)
    server = await aiohttp_server(receiver.app())
    events = Events()
    sender = running(quick_sender(str(server.make_url("/nudge")), events))
    sender.nudge("a message arrived")
    assert await receiver.wait_for(1) == ["a message arrived"]
    assert receiver.attempts == 3
    assert [e.kind for e in events.seen] == ["retrying", "retrying", "delivered"]


async def test_a_wrong_token_is_reported_not_retried_forever(aiohttp_server, running):
    receiver = NudgeReceiver(token="right")
    server = await aiohttp_server(receiver.app())
    events = Events()
    sender = running(quick_sender(str(server.make_url("/nudge")), events, token="wrong"))
    sender.nudge("a face appeared")
    rejected = await events.wait_for("rejected")
    assert rejected.detail.startswith("401")
    assert rejected.reasons == ["a face appeared"]
    assert sender.waiting == []
    assert sender.seconds_until_attempt() is None  # nothing scheduled: it will not try again
    assert receiver.attempts == 1


async def test_a_repeat_is_reported_as_collapsed(aiohttp_server, running):
    receiver = NudgeReceiver()
    server = await aiohttp_server(receiver.app())
    events = Events()
    sender = running(quick_sender(str(server.make_url("/nudge")), events))
    assert sender.nudge("a face appeared")
    await receiver.wait_for(1)
    assert not sender.nudge("a face appeared")
    assert (await events.wait_for("collapsed")).reasons == ["a face appeared"]
    assert receiver.reasons == ["a face appeared"]


async def test_a_person_s_lines_are_never_merged_and_events_are_merged_under_the_cap(aiohttp_server, running):
    port = free_port()
    events = Events()
    sender = running(quick_sender(f"http://127.0.0.1:{port}/nudge", events))
    sender.nudge("a face appeared")
    await events.wait_for("retrying")  # the soul is down: everything waits together
    sender.nudge("your human typed: hi", words="hi")
    sender.nudge("your human typed: are you there?", words="are you there?")
    for i in range(40):
        sender.nudge(f"event {i:02d} " + "x" * 91)

    receiver = NudgeReceiver()
    await aiohttp_server(receiver.app(), port=port)
    await receiver.wait_for(6)  # the face; the two lines; 40 events of 100 characters in three nudges
    await events.wait_for("delivered")
    assert len(receiver.nudges) == 6
    assert [n.words for n in receiver.nudges if n.words] == ["hi", "are you there?"]
    assert receiver.nudges[1:3] == [
        Nudge("your human typed: hi", "hi"),
        Nudge("your human typed: are you there?", "are you there?"),
    ]
    assert all(len(n.reason) <= 2000 for n in receiver.nudges)
    delivered = "; ".join(n.reason for n in receiver.nudges if not n.words)
    assert all(f"event {i:02d} " in delivered for i in range(40)) and "a face appeared" in delivered
    assert sender.waiting == []


async def test_a_refused_batch_is_split_and_only_the_refused_nudge_is_given_up(aiohttp_server, running, caplog):
    receiver = NudgeReceiver(refuse=["something it refuses"])
    server = await aiohttp_server(receiver.app())
    events = Events()
    sender = running(quick_sender(str(server.make_url("/nudge")), events))
    sender.debouncer.sent()  # as if a nudge just went out: the next three wait and go together
    sender.debouncer.min_interval_s = 0.2
    for reason in ("a face appeared", "something it refuses", "the device was picked up"):
        sender.nudge(reason)
    with caplog.at_level(logging.ERROR, logger="soulstack.protocol.nudge_sender"):
        await receiver.wait_for(2)
        rejected = await events.wait_for("rejected")
    assert receiver.refused[0] == "a face appeared; something it refuses; the device was picked up"
    assert receiver.reasons == ["a face appeared", "the device was picked up"]
    assert rejected.reasons == ["something it refuses"] and rejected.detail.startswith("400")
    assert sender.waiting == []
    assert "refused a nudge (it answered 400" in caplog.text and "gave up on: something it refuses" in caplog.text


async def test_a_missing_token_is_logged_with_the_soul_s_answer_once_a_minute(aiohttp_server, running, caplog):
    receiver = NudgeReceiver(token="right")
    server = await aiohttp_server(receiver.app())
    events = Events()
    sender = running(quick_sender(str(server.make_url("/nudge")), events))
    with caplog.at_level(logging.ERROR, logger="soulstack.protocol.nudge_sender"):
        sender.nudge("a face appeared")
        await events.wait_for("rejected")
        sender.nudge("the device was picked up")
        await until_count(events, "rejected", 2)
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and "answered 401" in refusals[0]
    assert "wrong or missing bearer token" in refusals[0] and "a face appeared" in refusals[0]


async def until_count(events, kind, count, timeout_s=10.0):
    await until(lambda: sum(e.kind == kind for e in events.seen) >= count, f"{count} {kind} events", timeout_s)
