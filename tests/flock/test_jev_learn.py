"""Corrections teach (soulstack.flock.jev.learn): an owner's kind correction over HTTP becomes a
labelled message, the local Jev re-fits in the background and logs the outcome; a re-fit that
scores worse on the calibration set keeps the previous model, one that scores better replaces it."""

import asyncio
import json

from soulstack.flock.jev.learn import corrected_examples, log_loss, refit
from soulstack.flock.jev.local import KINDS, load_calibration, load_examples, local_jev, split
from soulstack.flock.nests.harness import NestConfig
from tests.flock.helpers import Flock


def test_a_correction_joins_its_decisions_words_and_context():
    entries = [
        {"question": "kind", "msg_id": "n-1", "text": "all yours", "kind": "say", "context": {"author_role": "crow"}},
        {"question": "correction", "msg_id": "n-1", "kind": "claim", "was": "say"},
        {"question": "correction", "msg_id": "n-9", "kind": "say", "was": "claim"},  # no decision logged: skipped
        {"question": "correction", "msg_id": "n-1", "kind": "decline", "was": "claim"},  # the latest wins
    ]
    [example] = corrected_examples(entries)
    assert (example["text"], example["kind"], example["author_role"], example["recent_kinds"]) == (
        "all yours",
        "decline",
        "crow",
        [],
    )


def test_a_worse_refit_keeps_the_previous_model_and_a_better_one_replaces_it():
    current = local_jev()
    # Wrong labels (200 training messages each "corrected" to the next kind): worse probabilities.
    train, _ = split(load_examples())
    poison = [
        {**e, "conv": f"correction:{i}", "kind": KINDS[(KINDS.index(e["kind"]) + 1) % 6]}
        for i, e in enumerate(train[:200])
    ]
    new, outcome = refit(poison, current)
    assert new is None and outcome["kept"] == "previous"
    assert outcome["calibration_log_loss_after"] > outcome["calibration_log_loss_before"]
    # Right labels of the calibration set's own messages: its score can only get better.
    lesson = [{**e, "conv": f"correction:{i}"} for i, e in enumerate(load_calibration())]
    new, outcome = refit(lesson, current)
    assert new is not None and outcome["kept"] == "new"
    assert log_loss(new, load_calibration()) < log_loss(current, load_calibration())


async def relearned_lines(log, count: int) -> list:
    """The log's `relearn` lines once there are `count` of them (the re-fit trains in a thread: seconds)."""
    for _ in range(600):
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        relearned = [line for line in lines if line["question"] == "relearn"]
        if len(relearned) >= count:
            return relearned
        await asyncio.sleep(0.2)
    raise AssertionError(f"{count} re-fits were never logged: {relearned}")


async def post_and_correct(flock) -> None:
    """The owner posts a message and corrects the kind Jev gave it."""
    status, record = await flock.post("/api/nests/todo/messages", {"author": "owner", "text": "the usual, please"})
    assert status == 201
    url = f"/api/nests/todo/messages/{record['msg_id']}/kind"
    status, _ = await flock.post(url, {"kind": "request" if record["kind"] != "request" else "say"})
    assert status == 200


async def test_an_owners_correction_over_http_refits_jev_in_the_background(tmp_path):
    flock = await Flock(tmp_path, nest_config=NestConfig(relearn_after_s=0.0)).start()
    try:
        await post_and_correct(flock)
        relearned = await relearned_lines(tmp_path / "jev.jsonl", 1)
    finally:
        await flock.stop()
    assert relearned[0]["corrections"] == 1 and relearned[0]["kept"] in ("new", "previous")


async def test_a_restarted_flock_learns_the_corrections_made_before_it(tmp_path):
    """The re-fitted Jev lives in memory; the corrections live in jev.jsonl. After a restart the
    fresh Jev learns them again, with no new correction."""
    flock = await Flock(tmp_path, nest_config=NestConfig(relearn_after_s=3600.0)).start()
    try:
        await post_and_correct(flock)
    finally:
        await flock.stop()  # before its re-fit was due: this run learned nothing
    log = tmp_path / "jev.jsonl"
    assert not [line for line in log.read_text().splitlines() if '"relearn"' in line]
    flock = await Flock(tmp_path, nest_config=NestConfig(relearn_after_s=3600.0)).start()
    try:
        [relearned] = await relearned_lines(log, 1)
    finally:
        await flock.stop()
    assert relearned["corrections"] == 1 and relearned["kept"] in ("new", "previous")


async def test_corrections_made_while_a_refit_waits_join_it(tmp_path):
    from soulstack.flock.jev.learn import Learner
    from soulstack.flock.jev.local import StartingJev
    from soulstack.flock.jev.tagging import JevLog

    log = JevLog(tmp_path / "jev.jsonl")
    learner = Learner(StartingJev(), log)

    def correct(n: int, kind: str):
        log.append({"question": "kind", "msg_id": f"n-{n}", "text": f"the usual, please ({n})", "kind": "say"})
        log.append({"question": "correction", "msg_id": f"n-{n}", "kind": kind, "was": "say"})
        return learner.corrected(0.5)

    waiting = asyncio.ensure_future(correct(1, "request"))
    await asyncio.sleep(0)  # the re-fit is waiting now
    assert correct(2, "refer") is None and correct(3, "request") is None  # they join it
    await waiting
    [relearned] = [entry for entry in log.read() if entry["question"] == "relearn"]
    assert relearned["corrections"] == 3


def test_the_llm_backends_local_fallback_learns_too(tmp_path):
    from soulstack.flock.jev.judge import JudgeJev, WithFallback
    from soulstack.flock.jev.llm import LlmJev
    from soulstack.flock.jev.local import StartingJev
    from soulstack.flock.jev.tagging import JevLog, Tagger

    log = JevLog(tmp_path / "jev.jsonl")
    fallback = StartingJev()
    judge = JudgeJev(complete=None, fallback=fallback)
    assert Tagger(judge, 0.55, log).learner.jev is fallback
    logprobs = WithFallback(LlmJev("m", "http://127.0.0.1:9/v1"), fallback)
    assert Tagger(logprobs, 0.55, log).learner.jev is fallback
    assert Tagger(LlmJev("m", "http://127.0.0.1:9/v1"), 0.55, log).learner is None  # nothing local to re-fit
