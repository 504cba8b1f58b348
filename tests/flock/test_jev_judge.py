"""Jev's LLM judge (soulstack.flock.jev.judge) through the flock's own model: the real Anthropic
SDK against the protocol-true fake Messages API (soulstack.fakes.anthropic_api), no logprobs, so
probabilities come from agreement over three samples; the nest's last messages go with the
question; its tokens count against its budget; the local Jev answers when the model fails, and
jev.jsonl's `backend` says which one tagged. Nothing here patches our code or the SDK."""

import json

import pytest

from soulstack.fakes.anthropic_api import FakeAnthropic, error, text
from soulstack.flock.commands import build_jev
from soulstack.flock.config import FlockSettings
from soulstack.flock.jev.judge import SYSTEM, JudgeJev, votes_to_probs
from soulstack.flock.jev.local import local_jev
from soulstack.flock.jev.tagging import JevLog, Tagger
from soulstack.llm.anthropic import AnthropicModel
from soulstack.llm.providers import complete_with_retry
from tests.flock.helpers import Flock

CONTEXT = dict(author_role="crow", to_role="", refers_kind="", recent_kinds=["request"], open_request="to_me")
USAGE = {"input_tokens": 120, "output_tokens": 1}


def judge_of(fake, budget_tokens=100_000):
    model = AnthropicModel("claude-test", api_key="test-key", base_url=fake.base_url)

    async def complete(system, messages, max_tokens):
        return await complete_with_retry(model, system, messages, attempts=1, max_tokens=max_tokens)

    return JudgeJev(complete, local_jev(), budget_tokens=budget_tokens, model="claude-test")


def test_votes_become_probabilities():
    probs = votes_to_probs(["refer"] * 3)
    assert probs["refer"] == pytest.approx(3.5 / 6) and probs["say"] == pytest.approx(0.5 / 6)
    split = votes_to_probs(["claim", "claim", "decline"])
    assert split["claim"] == pytest.approx(2.5 / 6) and sum(split.values()) == pytest.approx(1.0)


async def test_the_judge_asks_three_times_with_the_nests_last_messages():
    async with FakeAnthropic() as fake:
        fake.reply(*[text("F", usage=USAGE)] * 3)
        history = [{"author": "owner", "kind": "request", "text": "could you find me a plumber for Friday?"}]
        probs = await judge_of(fake).kind_probs_async(
            "Sorry, I can't: I have no way to call anyone.", history=history, nest_id="todo", **CONTEXT
        )
        bodies = fake.bodies
    assert len(bodies) == 3 and all(body["max_tokens"] == 5 for body in bodies)
    asked = bodies[0]["messages"][0]["content"]
    asked = asked if isinstance(asked, str) else asked[0]["text"]
    assert "find me a plumber" in asked and "I have no way to call anyone" in asked
    system = bodies[0]["system"]
    assert (system if isinstance(system, str) else system[0]["text"]) == SYSTEM
    assert probs.backend.startswith("judge (claude-test") and max(probs, key=probs.get) == "decline"
    assert probs["decline"] == pytest.approx(3.5 / 6)


async def test_the_local_jev_answers_when_the_model_fails_or_its_budget_is_spent():
    async with FakeAnthropic() as fake:
        fake.reply(text("C", usage=USAGE), error(400), text("C", usage=USAGE))
        judge = judge_of(fake, budget_tokens=300)  # the failed try spends 242 of them
        failed = await judge.kind_probs_async("I'll take this one.", nest_id="n", **CONTEXT)
        assert failed.backend.startswith("local (the model failed") and max(failed, key=failed.get) == "claim"
        fake.reply(*[text("C", usage=USAGE)] * 3)
        answered = await judge.kind_probs_async("I'll take this one.", nest_id="n", **CONTEXT)
        assert answered.backend.startswith("judge") and judge.spent["n"] >= 300
        asked = len(fake.bodies)
        spent = await judge.kind_probs_async("I'll take this one.", nest_id="n", **CONTEXT)
        assert spent.backend == "local (the judge's token budget for this nest is spent)"
        assert len(fake.bodies) == asked  # no call once spent; another nest has its own budget
        fake.reply("a claim, I think", "C", "C")
        wordy = await judge.kind_probs_async("I'll take this one.", nest_id="other", **CONTEXT)
        assert wordy.backend == "local (the model answered no letter)"


async def test_a_flock_tags_with_the_judge_and_logs_which_backend_tagged(tmp_path):
    async with FakeAnthropic() as fake:
        # The owner's message: three answers of E (refer); then the model is down for the next one.
        fake.reply(*[text("E", usage=USAGE)] * 3, error(400), error(400), error(400))
        flock = await Flock(tmp_path, jev=judge_of(fake)).start()
        try:
            _, pointed = await flock.post("/api/nests/todo/messages", {"author": "owner", "text": "see plan.md"})
            _, fallen = await flock.post(
                "/api/nests/todo/messages", {"author": "owner", "text": "could you book the car for friday?"}
            )
        finally:
            await flock.stop()
    assert (pointed["kind"], pointed["tagged_by"]) == ("refer", "jev")
    assert (fallen["kind"], fallen["tagged_by"]) == ("request", "jev")  # the local Jev's words
    lines = [json.loads(line) for line in (tmp_path / "jev.jsonl").read_text().splitlines()]
    kinds = [line for line in lines if line["question"] == "kind"]
    assert kinds[0]["backend"].startswith("judge") and kinds[1]["backend"].startswith("local (the model failed")


async def test_the_judge_has_its_own_band_and_its_fallback_the_local_one(tmp_path):
    """Three votes alike are 0.58: sure by the judge's band whatever the local Jev's is set to
    (here 0.99, where the judge would never be sure). A tag the local Jev gives as the fallback is
    judged by the local band, and the decision says which band held."""
    async with FakeAnthropic() as fake:
        fake.reply(*[text("F", usage=USAGE)] * 3, error(400), error(400), error(400))
        tagger = Tagger(judge_of(fake), 0.99, JevLog(tmp_path / "jev.jsonl"))
        judged = await tagger.tag("Sorry, I can't do that one.", "", CONTEXT, nest_id="n")
        fallen = await tagger.tag("Sorry, I can't do that one.", "", CONTEXT, nest_id="n")
    assert (judged["kind"], judged["tagged_by"], judged["band"]) == ("decline", "jev", 0.55)
    assert fallen["backend"].startswith("local (the model failed") and fallen["band"] == 0.99
    assert max(fallen["probs"].values()) < 0.99 and (fallen["kind"], fallen["tagged_by"]) == ("say", "default")


def test_the_flock_command_builds_the_judge_only_where_a_model_thinks():
    model = AnthropicModel("claude-test", api_key="test-key", base_url="http://127.0.0.1:9")
    assert isinstance(build_jev(FlockSettings(jev_judge=True), model), JudgeJev)
    assert build_jev(FlockSettings(), model) is None  # off unless asked: each tag costs three calls
    said = []
    assert build_jev(FlockSettings(jev_judge=True), None, say=said.append) is None  # the brainstem: the local Jev
    assert said == ["Jev's judge: there is no model to ask; the local Jev tags"]  # --jev-judge is not ignored silently
