"""The offline flock as a showcase (issue 34): the fake flock brain (host/fakes/flock_brain.py), paced,
behind the real anthropic SDK, drives a real flock on loopback. A question with a comma stays one
item, crows stay in the air long enough to see, banter lines pass the banter rules, and the Elder's
merge reads as one answer."""

import subprocess
import sys
import time

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.flock_brain import answer, paced
from soulstack.flock.demo.brain import triage
from soulstack.flock.lists.flow import FlockConfig
from soulstack.llm.anthropic import AnthropicModel
from tests.flock.helpers import Flock
from tests.helpers import ROOT

LAPTOP = "which laptop is better for a student, a ThinkPad or a MacBook?"
PACE = 0.4


def test_questions_are_never_cut_at_their_commas_and_errands_keep_their_verb():
    assert triage(LAPTOP)["mode"] == "murder" and triage(LAPTOP)["subtasks"] == []
    assert triage("what should I cook tonight, given rice and leeks?")["mode"] == "solo"
    assert triage("buy bread, milk and eggs")["subtasks"] == ["buy bread", "buy milk", "buy eggs"]
    assert triage("water the plants and call the plumber")["subtasks"] == ["water the plants", "call the plumber"]


async def test_a_paced_offline_flock_shows_flights_banter_and_one_merged_answer(tmp_path):
    fake = await FakeAnthropic(default=paced(PACE)).start()
    model = AnthropicModel("claude-sonnet-5-5", api_key="x", base_url=fake.base_url)
    flock = await Flock(tmp_path, model=model, config=FlockConfig(heartbeat_s=1.0, lists_per_minute=100)).start()
    try:
        list_id = await flock.new_list(f"{LAPTOP}\nbuy bread, milk and eggs")
        laptop, errands = f"{list_id}-1", f"{list_id}-2"
        seen = {}  # (crow, item_id) -> when it took off
        flights = []
        async with flock.events(list_id) as stream:
            while True:  # one loop, so each event is timed as it arrives
                event = await stream.next(timeout=15)
                data = event["data"]
                if event["event"] == "item.triaged":
                    assert data["mode"] == ("murder" if data["item_id"] == laptop else "split")
                    assert await flock.verdict(data["item_id"], "triage") == 204
                elif event["event"] == "crow.flying":
                    seen[data["crow"], data["item_id"]] = time.monotonic()
                elif event["event"] == "crow.landed" and data["crow"] != "Sentry":
                    flights.append(time.monotonic() - seen[data["crow"], data["item_id"]])
                elif event["event"] == "item.answered":
                    assert await flock.verdict(data["item_id"], "output") == 204
                elif event["event"] == "list.finished":
                    break
        names = stream.names()
        assert names.count("item.triaged") == 2  # the laptop question stayed one item
        # Each crow (and the Elder) stayed in the air about PACE seconds: long enough to see it fly.
        assert len(flights) == 3 + 1 + 3 + 1 and min(flights) >= 0.7 * PACE, flights
        banter = [e["data"] for e in stream.events if e["event"] == "crow.banter"]
        assert len(banter) == 2, names  # both of the list's lines passed the banter rules
        for line in banter:
            assert line["to"] in line["text"] and not line["text"].startswith(line["crow"])
        answers = {e["data"]["item_id"]: e["data"]["answer"] for e in stream.events if e["event"] == "item.answered"}
        merged = answers[errands]
        assert merged.startswith("All of **buy bread, milk and eggs**, in one go:")
        assert "- **Buy bread**: " in merged and "- **Buy eggs**: " in merged
        assert "By " not in merged and "from " not in merged.split("\n")[0]
        ruling = answers[laptop]
        assert ruling.startswith(f"On **{LAPTOP}**, I side with ") and ("ThinkPad." in ruling or "MacBook." in ruling)
        assert all("no model thought about this" in answer for answer in answers.values())
    finally:
        await flock.stop()
        await fake.stop()


async def test_a_crow_in_a_nest_claims_and_delivers_through_the_fake_brain(tmp_path):
    fake = await FakeAnthropic(default=answer).start()
    model = AnthropicModel("claude-sonnet-5-5", api_key="x", base_url=fake.base_url)
    flock = await Flock(tmp_path, model=model, config=FlockConfig(heartbeat_s=1.0)).start()
    try:
        request = {"author": "owner", "to": "Tinker", "text": "could you check why the backup failed?"}
        status, asked = await flock.post("/api/nests/todo/messages", request)
        assert status == 201
        async with flock.events(nest_id="todo", last_event_id=1) as stream:
            said = [(await stream.next(timeout=10))["data"] for _ in range(2)]
    finally:
        await flock.stop()
        await fake.stop()
    assert [(m["author"], m["kind"], m["refers_to"]) for m in said] == [
        ("Tinker", "claim", asked["msg_id"]),
        ("Tinker", "deliver", asked["msg_id"]),
    ]
    assert said[1]["text"].startswith("Done.") and "no model thought about this" in said[1]["text"]


def test_pace_is_checked_on_the_command_line():
    for flags in (["--flock", "--pace", "-1"], ["--script", "x.json", "--pace", "1"]):
        run = subprocess.run(
            [sys.executable, "-m", "soulstack.fakes.run_fake_anthropic", *flags],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert run.returncode == 2 and "--pace takes 0-3600 seconds, and goes with --flock" in run.stderr
