"""The nest harness with the fake Anthropic model over real loopback HTTP and SSE:
one crow per message (counted at the fake), first claim wins, conspiracy,
missed expectations -> Jev -> nudge -> one invocation, Sentry flags with
quarantine and the owner's verdict (and its fail-safe timeout), model failure.
"""

import asyncio

import pytest

from soulstack.flock.app import HARNESS
from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.nests.harness import NestConfig
from soulstack.fakes.anthropic_api import error, text, tool_use
from tests.flock.helpers import Flock, start_fake_model


class NestBrain:
    """Answers the Sentry's triage and crows invoked in a nest, from what the SDK sent.
    Words in a request steer it: "conspiracy" (a murder triage), "shy" (the crow says
    something that is no claim), "broken" (the model fails for crows)."""

    def __init__(self):
        self.crow_calls = []  # (crow, prompt) per crow invocation

    def __call__(self, body):
        system = body.get("system")
        system = system if isinstance(system, str) else " ".join(b["text"] for b in system or [])
        first = body["messages"][0]["content"]
        prompt = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        if any(tool["name"] == "triage" for tool in body.get("tools") or []):
            mode = "murder" if "conspiracy" in prompt else "solo"
            return tool_use("triage", {"mode": mode, "task_type": "writing", "subtasks": [], "reason": "seen it"})
        crow = system.split(",")[0].removeprefix("You are ")
        self.crow_calls.append((crow, prompt))
        if "broken" in prompt:
            return error(400, "this crow lost its way")
        if "you owe a claim" in prompt:
            return text("[claim] On it now, sorry for the wait.")
        if "deliver the result" in prompt:
            return text("[deliver] Here it is: Subject: We're live.")
        if "shy" in prompt:
            return text("[say] Lovely weather in the nest today.")
        if "distinct lens" in prompt:
            return text("[claim] I'll take it from the cost side.")
        return text("[claim] I'll take this.")


@pytest.fixture
async def nest(tmp_path):
    brain = NestBrain()
    fake, model = await start_fake_model(brain)
    config = NestConfig(claim_within_s=60, deliver_within_s=600, verdict_timeout_s=600)
    flock = await Flock(tmp_path, model=model, config=FlockConfig(heartbeat_s=0.2), nest_config=config).start()
    await flock.post("/api/nests", {"name": "Launch", "crows": ["Pepper", "Inky"]})
    flock.brain = brain
    yield flock
    await flock.stop()
    await fake.stop()


async def post(flock, **body):
    status, record = await flock.post("/api/nests/launch/messages", {"author": "owner", **body})
    assert status == 201, record
    return record


async def settle(flock):
    """Let spawned invocations finish (they are tasks on this loop)."""
    for _ in range(100):
        if len(flock.flock.tasks) <= 1:  # the watcher stays
            return
        await asyncio.sleep(0.02)


async def test_request_claim_deliver_invokes_one_crow_per_message_and_then_stops(nest):
    async with nest.events(nest_id="launch") as stream:
        request = await post(nest, text="Can you draft the launch email by Friday?", to="Inky")
        claim = await stream.until("nest.message", author="Inky")
        deliver = await stream.until("nest.message", author="Inky")
    await settle(nest)
    await asyncio.sleep(0.2)
    # the request invoked Inky (it claimed); the claim invoked Inky (it delivered); the deliver ends it
    assert [crow for crow, _ in nest.brain.crow_calls] == ["Inky", "Inky"]
    assert claim["kind"] == "claim" and claim["refers_to"] == request["msg_id"] and claim["to"] == "owner"
    assert deliver["kind"] == "deliver" and deliver["refers_to"] == request["msg_id"] and deliver["to"] == "owner"
    assert claim["tagged_by"] in ("jev", "header") and deliver["tagged_by"] in ("jev", "header")
    assert "Can you draft the launch email" in nest.brain.crow_calls[0][1]  # the nest's messages are its context
    _, history = await nest.get("/api/nests/launch/messages")
    assert [m["author"] for m in history] == ["owner", "Inky", "Inky"]  # no idle chatter, no flag
    assert nest.runner.app[HARNESS].store.expectations() == []  # every expectation was met


async def test_a_room_request_picks_one_core_crow_and_the_first_claim_wins(nest):
    request = await post(nest, text="Could someone write the release notes?")
    await settle(nest)
    assert len(nest.brain.crow_calls) == 2 and nest.brain.crow_calls[0][0] in ("Pepper", "Inky")
    claimer = nest.brain.crow_calls[0][0]
    assert nest.brain.crow_calls[1][0] == claimer
    other = "Inky" if claimer == "Pepper" else "Pepper"
    status, answer = await nest.post(
        "/api/nests/launch/messages",
        {"author": other, "text": "I'll take this.", "kind": "claim", "refers_to": request["msg_id"]},
    )
    assert status == 409 and claimer in answer["message"]


async def test_a_conspiracy_gets_one_crow_per_claim_up_to_the_cap(nest):
    request = await post(nest, text="Please review the launch plan, a conspiracy of views please.")
    for _ in range(50):
        await settle(nest)
        claims = [m for m in (await nest.get("/api/nests/launch/messages"))[1] if m["kind"] == "claim"]
        if len(claims) == 3:
            break
    await settle(nest)
    await asyncio.sleep(0.2)
    crows = [crow for crow, _ in nest.brain.crow_calls]
    # each crow: invoked to claim, then invoked to deliver; each delivery brought in the next lens
    assert len(crows) == 6 and crows[0::2] == crows[1::2] and len(set(crows)) == 3
    assert [m["author"] for m in claims] == crows[0::2] and all(m["refers_to"] == request["msg_id"] for m in claims)
    assert "Pepper" in crows and "Inky" in crows  # core first, then one borrowed
    assert "distinct lens" in nest.brain.crow_calls[2][1]


async def test_a_missed_claim_is_judged_by_jev_then_nudged_with_one_invocation(nest, tmp_path):
    request = await post(nest, text="Can you draft the launch email? (shy)", to="Pepper")
    await settle(nest)
    assert [crow for crow, _ in nest.brain.crow_calls] == ["Pepper"]
    nest.clock.advance(59)  # not yet missed: no timer invokes anyone
    await asyncio.sleep(0.2)
    assert len(nest.brain.crow_calls) == 1
    async with nest.events(nest_id="launch", last_event_id=2) as stream:
        nest.clock.advance(2)
        nudge = await stream.until("nest.message", kind="nudge")
        claim = await stream.until("nest.message", kind="claim")
    await settle(nest)
    assert nudge["author"] == "harness" and nudge["to"] == "Pepper" and nudge["refers_to"] == request["msg_id"]
    assert claim["author"] == "Pepper" and claim["refers_to"] == request["msg_id"]
    # the original invocation, the nudge's, then the claim's (to deliver)
    assert [crow for crow, _ in nest.brain.crow_calls] == ["Pepper", "Pepper", "Pepper"]
    assert "you owe a claim" in nest.brain.crow_calls[1][1]
    judged = [line for line in (tmp_path / "jev.jsonl").read_text().splitlines() if '"missed"' in line]
    assert len(judged) == 1 and '"missed": true' in judged[0]


async def test_a_deliver_without_a_claim_is_flagged_and_the_crow_quarantined_until_the_owner_rules(nest):
    request = await post(nest, text="Can you draft the launch email?", to="Pepper")
    await settle(nest)
    calls = len(nest.brain.crow_calls)
    status, delivered = await nest.post(
        "/api/nests/launch/messages",
        {
            "author": "Inky",
            # Jev reads "Here's the launch email: ..." in this spot (after Pepper's delivery) as a
            # sure `say`: a known miss, kept in tests/flock/test_jev_hard_cases.py's STILL_WRONG.
            "text": "Done: the launch email. Subject: We're live.",
            "kind": "deliver",
            "refers_to": request["msg_id"],
        },
    )
    assert status == 201
    _, history = await nest.get("/api/nests/launch/messages")
    flag = history[-1]
    assert (flag["kind"], flag["author"], flag["to"], flag["refers_to"]) == (
        "flag",
        "Sentry",
        "Inky",
        delivered["msg_id"],
    )
    # quarantined: not invoked, cannot post
    await post(nest, text="Can you proofread the README intro?", to="Inky")
    await settle(nest)
    assert len(nest.brain.crow_calls) == calls
    status, answer = await nest.post("/api/nests/launch/messages", {"author": "Inky", "text": "hello"})
    assert status == 409 and "quarantined" in answer["message"]
    # the owner rejects the flag: Inky is released
    assert await nest.verdict(flag["msg_id"], "flag", approve=False) == 204
    assert await nest.verdict(flag["msg_id"], "flag", approve=False) == 404  # answered once
    status, _ = await nest.post("/api/nests/launch/messages", {"author": "Inky", "text": "Thanks, that helps a lot."})
    assert status == 201


async def test_a_crows_answers_that_name_no_request_answer_the_one_open_to_it(tmp_path):
    """Through the API, a crow's claim, decline or delivery often names no `refers_to`: it answers
    the request open to it, so claiming then delivering is no breach (the trial that found it had
    Pepper quarantined for delivering what it had claimed)."""
    flock = await Flock(tmp_path, config=FlockConfig(heartbeat_s=0.2)).start()  # no model: no crow answers itself
    try:
        await flock.post("/api/nests", {"name": "Launch", "crows": ["Pepper", "Inky"]})
        request = await post(flock, text="Pepper, could you write three taglines for the spring launch?", to="Pepper")
        room = await post(flock, text="Could someone book the room for Friday?")

        async def crow(author, text, kind):
            status, record = await flock.post(
                "/api/nests/launch/messages", {"author": author, "text": text, "kind": kind}
            )
            assert status == 201 and record["kind"] == kind, record
            return record

        claim = await crow("Pepper", "I'll take this.", "claim")
        declined = await crow("Inky", "Sorry, I can't take this one: my queue is full today.", "decline")
        delivered = await crow("Pepper", "Done: the taglines. 1. Spring into it. 2. Bloom early.", "deliver")
        assert (claim["refers_to"], claim["to"]) == (request["msg_id"], "owner")
        assert declined["refers_to"] == room["msg_id"]  # not Pepper's request: that was addressed to Pepper
        assert (delivered["refers_to"], delivered["to"]) == (request["msg_id"], "owner")
        _, history = await flock.get("/api/nests/launch/messages")
        assert not [m for m in history if m["kind"] == "flag"]
        owed = {row[:3] for row in flock.runner.app[HARNESS].store.expectations()}
        assert not owed & {(request["msg_id"], "Pepper", "claim"), (request["msg_id"], "Pepper", "deliver")}
        assert (room["msg_id"], "Inky", "claim") not in owed  # a decline counts as answering

        # A delivery of nothing claimed still breaches: Inky claimed nothing.
        stray = await crow("Inky", "Done: the room is booked for Friday, 10am.", "deliver")
        _, history = await flock.get("/api/nests/launch/messages")
        assert stray["refers_to"] == "" and history[-1]["kind"] == "flag" and history[-1]["to"] == "Inky"
    finally:
        await flock.stop()


async def test_an_unanswered_flag_keeps_the_quarantine_after_ten_minutes(nest):
    async with nest.events(nest_id="launch") as stream:
        status, _ = await nest.post(
            "/api/nests/launch/messages", {"author": "Pepper", "text": "Please ask Zed.", "to": "Zed"}
        )
        assert status == 201
        flag = await stream.until("nest.message", kind="flag")
        nest.clock.advance(601)
        note = await stream.until("nest.message", author="harness")
    assert "fail safe" in note["text"] and note["refers_to"] == flag["msg_id"]
    assert await nest.verdict(flag["msg_id"], "flag", approve=False) == 404
    status, _ = await nest.post("/api/nests/launch/messages", {"author": "Pepper", "text": "hi"})
    assert status == 409


async def test_a_model_failure_skips_the_turn_with_an_honest_harness_say(nest):
    async with nest.events(nest_id="launch") as stream:
        request = await post(nest, text="Can you fix the broken build?", to="Pepper")
        note = await stream.until("nest.message", author="harness")
    assert note["kind"] == "say" and "skipped" in note["text"] and note["refers_to"] == request["msg_id"]
    _, history = await nest.get("/api/nests/launch/messages")
    assert [m["author"] for m in history] == ["owner", "harness"]  # no reply pretends Pepper spoke


def test_the_harness_asks_the_flock_only_through_its_interface():
    """Harness reaches the Flock through FlockForNests alone, and the Flock provides all of it."""
    import ast
    import inspect

    from soulstack.flock.nests import harness
    from soulstack.flock.lists.flow import Flock as TheFlock

    interface = {name for name in vars(harness.FlockForNests) if not name.startswith("_")}
    interface |= set(harness.FlockForNests.__annotations__)
    used = {
        node.attr
        for node in ast.walk(ast.parse(inspect.getsource(harness.Harness)))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "flock"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
    }
    assert used <= interface, f"the harness reaches past its interface: {sorted(used - interface)}"
    assert all(hasattr(TheFlock, name) for name in interface - {"clock"})  # clock: set in Flock.__init__
