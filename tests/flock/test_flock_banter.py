"""Banter (`crow.banter`) by the contract's rules: the real anthropic SDK against the fake
Messages API, the flock on loopback, a real SSE reader, and a ManualClock for the 20 s wait."""

import asyncio

import pytest

from soulstack.flock.lists.banter import FINISH_WAIT_S, MAX_CHARS, PER_LIST, pick_pair, usable
from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.personas import BY_NAME, relationship
from tests.flock.helpers import Flock


async def start_flock(tmp_path, fake_model, **config):
    settings = {"heartbeat_s": 1.0, "lists_per_minute": 1000, "model_backoff_s": 0.01, **config}
    return await Flock(tmp_path, model=fake_model[1], config=FlockConfig(**settings)).start()


@pytest.fixture
async def flock(tmp_path, fake_model):
    flock = await start_flock(tmp_path, fake_model)
    yield flock
    await flock.stop()


async def approve_all(flock, stream, list_id, count):
    for n in range(1, count + 1):
        item_id = f"{list_id}-{n}"
        if (await stream.seen_or_next("item.triaged", item_id=item_id))["needs_approval"]:
            assert await flock.verdict(item_id, "triage") == 204
        if (await stream.seen_or_next("item.answered", item_id=item_id))["needs_approval"]:
            assert await flock.verdict(item_id, "output") == 204


def of(stream, name):
    return [m["data"] for m in stream.events if m["event"] == name]


async def test_crows_on_one_item_banter_in_character_from_backstories_bond_and_recent_events(flock, brain, fake_model):
    list_id = await flock.new_list("split the garden chores")
    async with flock.events(list_id) as stream:
        await approve_all(flock, stream, list_id, 1)
        await stream.until("list.finished")
    [banter] = of(stream, "crow.banter")
    workers = of(stream, "item.answered")[0]["crows"]
    assert banter["item_id"] == f"{list_id}-1"
    assert {banter["crow"], banter["to"]} <= set(workers) and banter["crow"] != banter["to"]
    assert banter["text"] == f"Well flown, {banter['to']}. Caw."  # the "Name:" prefix models add is gone
    assert set(banter) == {"list_id", "ts", "item_id", "crow", "to", "text"}
    # What the speaking crow was given: both backstories, how they get on, the list's recent events.
    [body] = brain.banter_bodies
    system, user = (
        body["system"] if isinstance(body["system"], str) else body["system"][0]["text"],
        str(body["messages"]),
    )
    assert BY_NAME[banter["crow"]].backstory in system and BY_NAME[banter["to"]].backstory in system
    bond = relationship(banter["crow"], banter["to"]) or "no particular history"
    assert bond in system
    assert "crow.landed" in user and "the garden chores" in user
    # Counted against the list budget: the tokens the banter call really cost are in tokens_used.
    finished = of(stream, "list.finished")[0]
    fake = fake_model[0]
    banter_usage = [u for b, u in zip(fake.bodies, fake.usages, strict=True) if b in brain.banter_bodies]
    worked = sum(d["tokens"] for d in of(stream, "crow.landed"))
    spent = sum(u["input_tokens"] + u["output_tokens"] for u in banter_usage)
    assert spent > 0 and finished["tokens_used"] == worked + spent


async def test_at_most_two_per_list_and_a_solo_item_has_nobody_to_banter_with(flock, brain):
    list_id = await flock.new_list("split one\nmurder two\nsplit three\nsolo four")
    async with flock.events(list_id) as stream:
        await approve_all(flock, stream, list_id, 4)
        await stream.until("list.finished")
    assert len(of(stream, "crow.banter")) == PER_LIST == len(brain.banter_bodies) == 2
    assert f"{list_id}-4" not in {b["item_id"] for b in of(stream, "crow.banter")}
    names = stream.names()
    assert names.index("list.finished") == len(names) - 1


async def test_no_banter_once_the_budget_is_spent(tmp_path, fake_model, brain):
    flock = await start_flock(tmp_path, fake_model, token_budget=100_000)
    try:
        list_id = await flock.new_list("murder this costly job")
        async with flock.events(list_id) as stream:
            await approve_all_triage(flock, stream, f"{list_id}-1")
            skipped = await stream.until("item.skipped")
            await stream.until("list.finished")
    finally:
        await flock.stop()
    assert skipped["reason"] == "budget"  # the crows spent it, so the Elder stays home
    assert of(stream, "crow.banter") == [] and brain.banter_bodies == []


async def approve_all_triage(flock, stream, item_id):
    if (await stream.until("item.triaged", item_id=item_id))["needs_approval"]:
        assert await flock.verdict(item_id, "triage") == 204


@pytest.mark.parametrize("word", ["banterfail", "banterjunk"])
async def test_a_failed_or_unusable_line_is_dropped_and_the_list_goes_on(flock, brain, word):
    list_id = await flock.new_list(f"split {word} work")
    async with flock.events(list_id) as stream:
        await approve_all(flock, stream, list_id, 1)
        finished = await stream.until("list.finished")
    assert len(brain.banter_bodies) == 1 and of(stream, "crow.banter") == []
    assert of(stream, "item.skipped") == [] and finished["tokens_used"] > 0


async def test_a_hanging_banter_call_delays_no_item_and_the_finish_waits_at_most_20_s(flock, brain):
    list_id = await flock.new_list("split banterstall chores\nsolo other chore")
    async with flock.events(list_id) as stream:
        await approve_all(flock, stream, list_id, 2)  # both answers arrive while the banter hangs
        for n in (1, 2):
            await stream.seen_or_next("verdict", item_id=f"{list_id}-{n}", target="output")
        assert len(brain.banter_bodies) == 1
        await asyncio.sleep(0.2)  # let the list reach its wait before the clock moves
        flock.clock.advance(FINISH_WAIT_S - 0.5)
        with pytest.raises(TimeoutError):
            await stream.until("list.finished", timeout=0.3)  # still waiting for the line in flight
        flock.clock.advance(0.5)
        finished = await stream.until("list.finished")
    assert of(stream, "crow.banter") == []  # dropped at the deadline, never after the list's end
    brain.banter_release.set()
    await asyncio.sleep(0.1)
    assert finished["tokens_used"] == sum(d["tokens"] for d in of(stream, "crow.landed"))


async def test_the_finish_waits_for_a_line_that_arrives_in_time(flock, brain):
    list_id = await flock.new_list("split banterstall chores")
    async with flock.events(list_id) as stream:
        await approve_all(flock, stream, list_id, 1)
        await stream.seen_or_next("verdict", item_id=f"{list_id}-1", target="output")
        await asyncio.sleep(0.2)
        flock.clock.advance(FINISH_WAIT_S / 2)
        with pytest.raises(TimeoutError):
            await stream.until("list.finished", timeout=0.3)
        brain.banter_release.set()
        banter = await stream.until("crow.banter")
        await stream.until("list.finished")
    assert banter["text"] == "Too late to matter."
    assert stream.names()[-2:] == ["crow.banter", "list.finished"]


def test_usable_lines():
    assert usable("Hugin: Caw, Munin.", "Hugin") == "Caw, Munin."
    assert usable('"Quoted, as models do."', "Pepper") == "Quoted, as models do."
    assert usable("“Curly quotes too.”", "Pepper") == "Curly quotes too."
    assert usable("   ", "Inky") is None
    assert usable("one\ntwo", "Inky") is None
    assert usable("x" * (MAX_CHARS + 1), "Inky") is None
    assert usable("x" * MAX_CHARS, "Inky") == "x" * MAX_CHARS


def test_a_pair_with_a_history_speaks_first():
    assert pick_pair(["Soot", "Tinker", "Ledger"]) == ("Tinker", "Ledger")
    assert pick_pair(["Soot", "Inky"]) == ("Soot", "Inky")
    assert pick_pair(["Soot", "Soot"]) is None and pick_pair(["Soot"]) is None
    for pair in [
        ("Hugin", "Munin"),
        ("Hugin", "Pepper"),
        ("Pepper", "Inky"),
        ("Tinker", "Ledger"),
        ("Munin", "Soot"),
        ("Munin", "Elder"),
    ]:
        assert relationship(*pair) and relationship(*reversed(pair)) == relationship(*pair)


async def test_a_restart_does_not_grant_a_list_more_banter(tmp_path, fake_model, brain):
    first = await start_flock(tmp_path, fake_model)
    list_id = await first.new_list("split a\nsplit b\nsplit c")
    try:
        async with first.events(list_id) as stream:
            for n in (1, 2):
                item_id = f"{list_id}-{n}"
                await stream.seen_or_next("item.triaged", item_id=item_id)
                assert await first.verdict(item_id, "triage") == 204
                await stream.seen_or_next("item.answered", item_id=item_id)
                assert await first.verdict(item_id, "output") == 204
            await stream.seen_or_next("item.triaged", item_id=f"{list_id}-3")  # waits for its owner
            while len(of(stream, "crow.banter")) < PER_LIST:
                await stream.next()
    finally:
        await first.stop()
    second = await start_flock(tmp_path, fake_model)
    try:
        async with second.events(list_id) as replay:
            await replay.until("item.triaged", item_id=f"{list_id}-3")
            assert await second.verdict(f"{list_id}-3", "triage") == 204
            await replay.until("item.answered", item_id=f"{list_id}-3")
            assert await second.verdict(f"{list_id}-3", "output") == 204
            await replay.until("list.finished")
    finally:
        await second.stop()
    assert len(of(replay, "crow.banter")) == PER_LIST == len(brain.banter_bodies)


def test_a_prank_names_its_crow_once():
    from dataclasses import replace

    from soulstack.flock.personas import ROSTER

    for crow in ROSTER:
        said = crow.prank_message(60)
        assert said.count(crow.name) == 1 and "60" in said, said  # "Hugin: Hugin tilts his head." named twice
    plain = replace(ROSTER[0], prank="Too many lists; back in {cooldown_s} s.")
    assert plain.prank_message(5) == f"{plain.name}: Too many lists; back in 5 s."  # a prank without its name
