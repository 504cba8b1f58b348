"""A list's life end to end: the real anthropic SDK (AnthropicModel) against the
fake Messages API, the flock on loopback, a real SSE reader, a ManualClock."""

import asyncio
from datetime import datetime

import pytest

from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.trust import PROMOTE_AFTER
from tests.flock.helpers import Flock


def make_flock(tmp_path, fake_model, **config):
    settings = {"heartbeat_s": 1.0, "lists_per_minute": 1000, "model_backoff_s": 0.01, **config}
    return Flock(tmp_path, model=fake_model[1], config=FlockConfig(**settings))


@pytest.fixture
async def flock(tmp_path, fake_model):
    flock = await make_flock(tmp_path, fake_model).start()
    yield flock
    await flock.stop()


async def approve_both(flock, stream, item_id):
    triaged = await stream.seen_or_next("item.triaged", item_id=item_id)
    if triaged["needs_approval"]:
        assert await flock.verdict(item_id, "triage") == 204
    answered = await stream.seen_or_next("item.answered", item_id=item_id)
    if answered["needs_approval"]:
        assert await flock.verdict(item_id, "output") == 204
    return triaged, answered


async def test_solo_item_full_life_with_both_approvals(flock, fake_model):
    list_id = await flock.new_list("find the best bakery nearby")
    item_id = f"{list_id}-1"
    async with flock.events(list_id) as stream:
        triaged = await stream.until("item.triaged")
        assert triaged == {
            **triaged,
            "item_id": item_id,
            "mode": "solo",
            "task_type": "research",
            "subtasks": [],
            "reason": "seen it",
            "needs_approval": True,
        }
        assert await flock.verdict(item_id, "triage", True) == 204
        assert await flock.verdict(item_id, "triage", True) == 404  # a second answer finds nothing waiting
        answered = await stream.until("item.answered")
        assert answered["needs_approval"] is True and answered["answer"].startswith("done:")
        assert await flock.verdict(item_id, "output", True) == 204
        assert await flock.verdict(item_id, "output", False) == 404
        finished = await stream.until("list.finished")
    names = stream.names()
    assert names == [
        "list.started",
        "crow.flying",
        "crow.landed",
        "item.triaged",
        "verdict",
        "crow.flying",
        "crow.landed",
        "item.answered",
        "verdict",
        "list.finished",
    ]
    sentry_flying, sentry_landed = stream.events[1]["data"], stream.events[2]["data"]
    assert sentry_flying["crow"] == "Sentry" and sentry_flying["borrowed"] is False
    assert sentry_landed["ok"] is True and sentry_landed["tokens"] > 0 and "error" not in sentry_landed
    crow = stream.events[5]["data"]["crow"]
    assert answered["crows"] == [crow] and stream.events[5]["data"]["borrowed"] is False  # `todo` never borrows
    verdicts = [m["data"] for m in stream.events if m["event"] == "verdict"]
    assert [(v["target"], v["verdict"]) for v in verdicts] == [("triage", "approved"), ("output", "approved")]
    landed_tokens = sum(m["data"]["tokens"] for m in stream.events if m["event"] == "crow.landed")
    assert finished["tokens_used"] == landed_tokens > 0
    fake = fake_model[0]
    assert fake.bodies[0]["tool_choice"] == {"type": "tool", "name": "triage"}
    headers = fake.requests[0].headers
    assert "test-key" in headers.get("x-api-key", "") + headers.get("authorization", "")


async def test_split_and_murder_send_crows_and_the_elder(flock):
    list_id = await flock.new_list("split the launch plan\nmurder: name the cat")
    async with flock.events(list_id) as stream:
        for n in (1, 2):
            await approve_both(flock, stream, f"{list_id}-{n}")
        await stream.until("list.finished")
    for n, workers in ((1, 2), (2, 3)):
        flights = [
            m["data"]["crow"]
            for m in stream.events
            if m["event"] == "crow.flying" and m["data"]["item_id"] == f"{list_id}-{n}"
        ]
        assert flights[0] == "Sentry" and flights[-1] == "Elder"
        assert len(flights) == 2 + workers and len(set(flights[1:-1])) == workers
        elder_landed = [
            m["data"]
            for m in stream.events
            if m["event"] == "crow.landed" and m["data"]["crow"] == "Elder" and m["data"]["item_id"] == f"{list_id}-{n}"
        ]
        assert elder_landed[0]["ok"] is True
    answers = {m["data"]["item_id"]: m["data"] for m in stream.events if m["event"] == "item.answered"}
    assert answers[f"{list_id}-1"]["answer"].startswith("The Elder's ruling")
    assert len(answers[f"{list_id}-2"]["crows"]) == 3
    triaged = {m["data"]["item_id"]: m["data"] for m in stream.events if m["event"] == "item.triaged"}
    assert triaged[f"{list_id}-1"]["subtasks"] == ["first part", "second part"]


async def test_an_invalid_triage_is_retried_once_then_the_item_fails(flock, fake_model):
    list_id = await flock.new_list("fixtriage this\nbadtriage that")
    async with flock.events(list_id) as stream:
        assert (await stream.until("item.triaged"))["item_id"] == f"{list_id}-1"
        skipped = await stream.until("item.skipped")
        assert await flock.verdict(f"{list_id}-1", "triage", False) == 204
        await stream.until("list.finished")
    assert skipped == {**skipped, "item_id": f"{list_id}-2", "reason": "failure"}
    sentry_2 = [
        m["data"] for m in stream.events if m["event"] == "crow.landed" and m["data"]["item_id"] == skipped["item_id"]
    ]
    assert sentry_2[0]["ok"] is False and "mode must be one of" in sentry_2[0]["error"]
    # The retry told the Sentry what was wrong, as a tool result in the same conversation.
    retries = [b for b in fake_model[0].bodies if len(b["messages"]) == 3]
    assert len(retries) == 2 and retries[0]["messages"][2]["content"][0]["type"] == "tool_result"
    reasons = [m["data"]["reason"] for m in stream.events if m["event"] == "item.skipped"]
    assert sorted(reasons) == ["failure", "triage rejected"]


async def test_unanswered_approval_times_out_on_the_clock_seam(flock):
    list_id = await flock.new_list("research the weather")
    async with flock.events(list_id) as stream:
        await stream.until("item.triaged")
        flock.clock.advance(599)
        with pytest.raises(TimeoutError):
            await stream.until("verdict", timeout=0.3)
        flock.clock.advance(1)
        verdict = await stream.until("verdict")
        skipped = await stream.until("item.skipped")
        await stream.until("list.finished")
    assert verdict["verdict"] == "timeout" and verdict["target"] == "triage"
    assert skipped["reason"] == "triage timeout"
    assert await flock.verdict(f"{list_id}-1", "triage") == 404


async def test_trust_grows_with_approvals_then_verdicts_are_auto_and_a_rejection_demotes(flock):
    changes = []
    for round_ in range(2 * PROMOTE_AFTER):
        list_id = await flock.new_list(f"code task {round_}")
        async with flock.events(list_id) as stream:
            await approve_both(flock, stream, f"{list_id}-1")
            await stream.until("list.finished")
        changes += [m["data"] for m in stream.events if m["event"] == "trust.changed"]
    flock_changes = [(c["from"], c["to"]) for c in changes if c["holder"] == "flock"]
    assert flock_changes == [(0, 1), (1, 2)] and all(c["task_type"] == "code" for c in changes)
    status, ledger = await flock.get("/api/trust")
    assert status == 200
    entry = next(e for e in ledger["trust"] if e["holder"] == "flock" and e["task_type"] == "code")
    assert entry["level"] == 2 and entry["name"] == "trusted"

    list_id = await flock.new_list("code once more")
    async with flock.events(list_id) as stream:
        triaged = await stream.until("item.triaged")
        assert triaged["needs_approval"] is False
        verdict = await stream.until("verdict")
        assert verdict["verdict"] == "auto" and verdict["target"] == "triage"
        answered = await stream.until("item.answered")
        if answered["needs_approval"]:
            assert await flock.verdict(answered["item_id"], "output", False) == 204
        await stream.until("list.finished")
    verdicts = [m["data"]["verdict"] for m in stream.events if m["event"] == "verdict"]
    assert len(verdicts) == 2  # exactly one per target
    assert await flock.verdict(answered["item_id"], "triage") == 404


async def test_a_rejection_demotes_the_flock(flock):
    flock.flock.trust.set_level("flock", "research", 2)
    flock.flock.trust.set_level("flock", "code", 1)
    list_id = await flock.new_list("code this")
    async with flock.events(list_id) as stream:
        await stream.until("item.triaged")
        assert await flock.verdict(f"{list_id}-1", "triage", False) == 204
        change = await stream.until("trust.changed")
        await stream.until("list.finished")
    assert change == {**change, "holder": "flock", "task_type": "code", "from": 1, "to": 0}


async def test_auto_verdicts_when_every_holder_is_trusted(flock):
    for holder in ["flock", "Hugin", "Munin", "Pepper", "Inky", "Tinker", "Ledger", "Soot", "Marlow"]:
        flock.flock.trust.set_level(holder, "research", 2)
    list_id = await flock.new_list("look this up\nand this")
    async with flock.events(list_id) as stream:
        await stream.until("list.finished")
    verdicts = [
        (m["data"]["item_id"], m["data"]["target"], m["data"]["verdict"])
        for m in stream.events
        if m["event"] == "verdict"
    ]
    assert sorted(verdicts) == sorted((f"{list_id}-{n}", t, "auto") for n in (1, 2) for t in ("triage", "output"))


async def test_a_failed_crow_is_retried_once_by_another_and_all_failing_skips(flock):
    list_id = await flock.new_list("flaky errand\ndoomed errand")
    async with flock.events(list_id) as stream:
        for _ in (1, 2):
            assert (await stream.until("item.triaged"))["needs_approval"]
        for n in (1, 2):
            assert await flock.verdict(f"{list_id}-{n}", "triage") == 204
        answered = await stream.until("item.answered")
        assert await flock.verdict(answered["item_id"], "output") == 204
        await stream.until("list.finished")
    for n in (1, 2):
        landed = [
            m["data"]
            for m in stream.events
            if m["event"] == "crow.landed"
            and m["data"]["item_id"] == f"{list_id}-{n}"
            and m["data"]["crow"] != "Sentry"
        ]
        assert len(landed) == 2 and landed[0]["crow"] != landed[1]["crow"]
        assert landed[0]["ok"] is False and "lost its way" in landed[0]["error"]
    assert answered["item_id"] == f"{list_id}-1"
    skipped = [m["data"] for m in stream.events if m["event"] == "item.skipped"]
    assert skipped == [{**skipped[0], "item_id": f"{list_id}-2", "reason": "failure"}]


async def test_budget_spent_skips_the_remaining_items_and_asks_no_one_to_approve_them(tmp_path, fake_model):
    flock = await make_flock(tmp_path, fake_model, token_budget=1, concurrency=1).start()
    try:
        list_id = await flock.new_list("first\nsecond\nthird")
        async with flock.events(list_id) as stream:
            triaged = await stream.until("item.triaged")
            assert triaged["item_id"] == f"{list_id}-1" and triaged["needs_approval"]
            skipped = await stream.until("item.skipped")
            # The triage spent the budget: skipped at once, where it waited for a person's approval of work
            # the budget could no longer pay for, and was skipped only then.
            assert skipped["item_id"] == f"{list_id}-1" and skipped["reason"] == "budget"
            assert await flock.verdict(f"{list_id}-1", "triage") == 404  # nothing waits for it
            finished = await stream.until("list.finished")
    finally:
        await flock.stop()
    reasons = {m["data"]["item_id"]: m["data"]["reason"] for m in stream.events if m["event"] == "item.skipped"}
    assert reasons == {f"{list_id}-1": "budget", f"{list_id}-2": "budget", f"{list_id}-3": "budget"}
    assert finished["token_budget"] == 1 and finished["tokens_used"] > 1


async def test_sentry_judging_abuse_strikes_the_requester(flock):
    keeper = await flock.new_list("research one thing", requester="mallory")
    list_id = await flock.new_list("abuse: spam the neighbours", requester="mallory")
    async with flock.events(keeper) as kept, flock.events(list_id) as stream:
        skipped = await stream.until("item.skipped")
        pranked = await stream.seen_or_next("requester.pranked")
        elsewhere = await kept.until("requester.pranked")
    assert skipped["reason"] == "abusive"
    assert pranked["cooldown_s"] == 60 and pranked["message"] and elsewhere["message"] == pranked["message"]
    status, answer = await flock.post("/api/lists", {"text": "again", "requester": "mallory"})
    assert status == 429 and set(answer) == {"message", "cooldown_s"} and 0 < answer["cooldown_s"] <= 60
    _, ledger = await flock.get("/api/trust")
    assert ledger["strikes"][0]["requester"] == "mallory" and ledger["strikes"][0]["strikes"] == 1
    until = datetime.fromisoformat(ledger["strikes"][0]["cooldown_until"])  # RFC 3339, as every time the API gives
    assert until.tzinfo is not None and ledger["strikes"][0]["cooldown_until"].endswith("Z")


async def test_too_many_lists_a_minute_is_a_prank_with_escalating_cooldown(tmp_path, fake_model):
    flock = await make_flock(tmp_path, fake_model, lists_per_minute=2).start()
    try:
        flying = await flock.new_list("research a", requester="bob")
        await flock.new_list("research b", requester="bob")
        async with flock.events(flying) as stream:
            status, first = await flock.post("/api/lists", {"text": "c", "requester": "bob"})
            pranked = await stream.seen_or_next("requester.pranked")
        assert status == 429 and first["cooldown_s"] == 60 and first["message"] == pranked["message"]
        assert (await flock.post("/api/lists", {"text": "d", "requester": "eve"}))[0] == 202  # others fly on
        flock.clock.advance(30)
        status, again = await flock.post("/api/lists", {"text": "c", "requester": "bob"})
        assert status == 429 and again["cooldown_s"] == 30
        flock.clock.advance(31)
        assert (await flock.post("/api/lists", {"text": "e", "requester": "bob"}))[0] == 202
        assert (await flock.post("/api/lists", {"text": "f", "requester": "bob"}))[0] == 202
        status, second = await flock.post("/api/lists", {"text": "g", "requester": "bob"})
        assert status == 429 and second["cooldown_s"] == 120 and second["message"] != first["message"]
    finally:
        await flock.stop()


async def test_nest_core_first_rotating_then_borrowed(flock):
    status, _ = await flock.post("/api/nests", {"name": "Pair", "crows": ["Pepper", "Inky"]})
    assert status == 201
    for holder in ["flock", "Hugin", "Munin", "Pepper", "Inky", "Tinker", "Ledger", "Soot", "Marlow"]:
        flock.flock.trust.set_level(holder, "research", 2)
    flights = []
    for text in ("solo one", "solo two", "murder three"):
        list_id = await flock.new_list(text, nest_id="pair")
        async with flock.events(list_id) as stream:
            await stream.until("list.finished")
        flights += [
            (m["data"]["crow"], m["data"]["borrowed"])
            for m in stream.events
            if m["event"] == "crow.flying" and m["data"]["crow"] not in ("Sentry", "Elder")
        ]
        assert all(
            not m["data"]["borrowed"]
            for m in stream.events
            if m["event"] == "crow.flying" and m["data"]["crow"] in ("Sentry", "Elder")
        )
    assert flights == [("Pepper", False), ("Inky", False), ("Pepper", False), ("Inky", False), ("Hugin", True)]


async def test_items_run_concurrently_within_the_limit(tmp_path, brain, fake_model):
    flock = await make_flock(tmp_path, fake_model, concurrency=2).start()
    try:
        list_id = await flock.new_list("hang 1\nhang 2\nhang 3\nhang 4")
        async with flock.events(list_id) as stream:
            for _ in range(50):
                await asyncio.sleep(0.02)
                if len(fake_model[0].requests) >= 2:
                    break
            await asyncio.sleep(0.1)
            assert len(fake_model[0].requests) == 2  # two items at once, the others wait their turn
            brain.hang.set()
            for n in range(1, 5):
                assert (await stream.until("item.triaged", item_id=f"{list_id}-{n}"))["reason"] == "late"
    finally:
        await flock.stop()
