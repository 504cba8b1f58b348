"""Jev itself: the local classifier's quality on held-out conversations, the
tagging rule's four outcomes, the LLM backend against the OpenAI fake
(probabilities from top_logprobs, the real openai SDK), and jev-report.
"""

import json
import math
import subprocess
import sys

import pytest

from soulstack.flock.jev.local import KINDS, load_examples, local_jev, measure, reliability, split
from soulstack.flock.jev.llm import JevBackendError, LlmJev, scaled
from soulstack.flock.jev.question import SYSTEM
from soulstack.flock.jev.tagging import decide
from soulstack.fakes.openai_api import FakeOpenAI, completion, error
from tests.flock.helpers import Flock


def test_the_training_set_is_large_varied_bilingual_and_split_by_conversation():
    examples = load_examples()
    assert len(examples) >= 700 and len({e["conv"] for e in examples}) >= 100
    for kind in KINDS:
        of_kind = [e for e in examples if e["kind"] == kind]
        assert len(of_kind) >= 50 and {e["lang"] for e in of_kind} == {"en", "zh"}
    train, held = split(examples)
    assert not {e["conv"] for e in train} & {e["conv"] for e in held} and len(held) >= 100


def test_the_local_jev_is_accurate_on_the_held_out_conversations():
    _, held = split(load_examples())
    result = measure(local_jev().probs_many(held), [e["kind"] for e in held])
    # In distribution, but a conversation never on both sides: the separate set's figures are
    # the ones that count (test_jev_separate.py).
    assert result["accuracy"] >= 0.85 and result["ece"] <= 0.08, result
    assert sum(row["count"] for row in result["table"]) == len(held)


def test_reliability_bins_and_ece_by_hand():
    table = reliability([0.05, 0.95, 0.95, 0.55], [False, True, False, True])
    assert [row["count"] for row in table] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    assert table[9]["accuracy"] == 0.5 and table[9]["confidence"] == pytest.approx(0.95)
    ece = measure([[0.95, 0.01, 0.01, 0.01, 0.01, 0.01]] * 2, ["say", "claim"])["ece"]
    assert ece == pytest.approx(0.45)


@pytest.mark.parametrize(
    "probs, header, outcome",
    [
        ({"say": 0.1, "request": 0.9}, "", ("request", "jev")),
        ({"say": 0.1, "request": 0.9}, "request", ("request", "jev")),
        ({"say": 0.1, "request": 0.9}, "claim", ("request", "disagreement")),
        ({"say": 0.5, "request": 0.5}, "claim", ("claim", "header")),
        ({"say": 0.3, "request": 0.7}, "", ("say", "default")),
        ({}, "", ("say", "default")),
        ({"say": 0.8, "request": 0.2}, "", ("say", "jev")),  # the band itself counts as sure
    ],
)
def test_the_tagging_rule(probs, header, outcome):
    assert decide(probs, header, 0.8) == outcome


def labels(**probs):
    """top_logprobs for the option labels A-F (say, request, claim, deliver, refer, decline)."""
    return [(label, math.log(p)) for label, p in probs.items()]


async def test_the_llm_backend_reads_probabilities_from_top_logprobs():
    async with FakeOpenAI() as fake:
        fake.reply(completion("B", top_logprobs=labels(B=0.6, C=0.2, A=0.1, Z=0.05, D=0.01)))
        jev = LlmJev("llama3.1", base_url=fake.base_url + "/v1")
        history = [{"author": "owner", "kind": "say", "text": "The report is due Friday."}]
        probs = await jev.kind_probs_async("Can you draft it?", history, author_role="owner", to_role="crow")
        body = fake.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 1
    # The judge's question: its system turn, then the nest's last messages and the message.
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}
    assert "owner (say): The report is due Friday." in body["messages"][1]["content"]
    assert "Message: Can you draft it?" in body["messages"][1]["content"]
    # Letters missing from the list (E, F) count as the least likely one listed (0.01), not as none:
    # a short list must not make Jev surer than the model is.
    total = 0.6 + 0.2 + 0.1 + 0.01 * 3
    assert probs["request"] == pytest.approx(0.6 / total) and probs["refer"] == pytest.approx(0.01 / total)
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs.backend == f"llm (llama3.1 at {fake.base_url}/v1, logprobs, not fitted)" and probs.band is None


def test_a_temperature_flattens_or_sharpens_the_letters_probabilities():
    logprobs = {kind: math.log(p) for kind, p in zip(KINDS, (0.5, 0.25, 0.25, 1e-3, 1e-3, 1e-3), strict=True)}
    plain, flat, sharp = scaled(logprobs), scaled(logprobs, 4.0), scaled(logprobs, 0.5)
    assert plain["say"] == pytest.approx(0.5 / 1.003)
    assert flat["say"] < plain["say"] < sharp["say"] and sharp["say"] == pytest.approx(
        0.25 / (0.25 + 2 * 0.0625 + 3e-6)
    )
    assert all(sum(p.values()) == pytest.approx(1.0) for p in (plain, flat, sharp))


async def test_the_llm_backend_fails_honestly_without_logprobs_or_on_errors():
    async with FakeOpenAI() as fake:
        fake.reply("B", completion("B", top_logprobs=[("maybe", -0.1)]), error(400))
        jev = LlmJev("llama3.1", base_url=fake.base_url + "/v1")
        for words in ("no logprobs", "none of Jev's option labels", "Jev's model failed"):
            with pytest.raises(JevBackendError, match=words):
                await jev.kind_probs_async("hello")


async def test_the_flock_tags_with_the_llm_backend_and_falls_back_to_the_header_when_it_fails(tmp_path):
    async with FakeOpenAI() as fake:
        fake.reply(completion("E", top_logprobs=labels(E=0.95, A=0.05)), error(500), error(500))
        jev = LlmJev("llama3.1", base_url=fake.base_url + "/v1")
        flock = await Flock(tmp_path, jev=jev).start()
        try:
            _, sure = await flock.post(
                "/api/nests/todo/messages", {"author": "owner", "text": "notes.md", "kind": "say"}
            )
            _, failed = await flock.post(
                "/api/nests/todo/messages", {"author": "owner", "text": "hi", "kind": "request"}
            )
        finally:
            await flock.stop()
        asked = fake.bodies[-1]["messages"][1]["content"]
    # The second question reads the nest's first message, as tagged (the judge's history).
    assert "- owner (refer): notes.md" in asked and asked.endswith("Message: hi\n\nWhich letter?")
    assert (sure["kind"], sure["tagged_by"]) == ("refer", "disagreement")
    assert (failed["kind"], failed["tagged_by"]) == ("request", "header")
    lines = [json.loads(line) for line in (tmp_path / "jev.jsonl").read_text().splitlines()]
    assert lines[0]["backend"] == f"llm (llama3.1 at {fake.base_url}/v1, logprobs, not fitted)"
    # The owner's kinds only (say, request, refer); request, unlisted, counts as likely as A.
    assert lines[0]["probs"]["refer"] == pytest.approx(0.95 / (0.95 + 0.05 + 0.05))
    assert lines[1]["probs"] == {} and "failed" in lines[1]["error"]


def test_jev_report_prints_the_table_and_writes_a_png(tmp_path):
    log = tmp_path / "jev.jsonl"
    entries = [
        {
            "question": "kind",
            "msg_id": "todo-1",
            "kind": "say",
            "probs": dict.fromkeys(KINDS, 0.0) | {"say": 0.9, "request": 0.1},
        },
        {
            "question": "kind",
            "msg_id": "todo-2",
            "kind": "claim",
            "probs": dict.fromkeys(KINDS, 0.0) | {"claim": 0.7, "say": 0.3},
            "text": "Sorry, I can't take this on: I don't have access to the calendar.",
            "context": {"author_role": "crow", "recent_kinds": ["request"], "open_request": "to_me"},
        },
        {"question": "correction", "msg_id": "todo-2", "kind": "decline", "was": "claim"},
        {
            "question": "relearn",
            "ts": "2026-12-02T01:00:00.000Z",
            "corrections": 1,
            "calibration_log_loss_before": 0.35,
            "calibration_log_loss_after": 0.36,
            "corrected_right_after": 1,
            "kept": "previous",
            "seconds": 4.2,
        },
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    png = tmp_path / "reliability.png"
    done = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "flock", "jev-report", "--data", str(tmp_path), "--png", str(png)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "held-out" in done.stdout and "2 messages, 1 corrected by the owner" in done.stdout
    assert "accuracy 0.500" in done.stdout  # todo-1 kept its kind (say), todo-2 was corrected
    assert "calibration set" in done.stdout and "separate set" in done.stdout
    assert "corrections: 1 messages" in done.stdout and "todo-2: claim -> decline" in done.stdout
    assert "re-fit at 2026-12-02T01:00:00.000Z with 1: kept the previous model" in done.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    missing = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "flock", "jev-report", "--data", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode != 0 and len(missing.stderr.strip().splitlines()) == 1
    for where, example in (
        (tmp_path, tmp_path / "jev-reliability.png"),
        (tmp_path / "diagram", tmp_path / "diagram.png"),
    ):
        # matplotlib would add ".png" to either and write where nobody was told
        wrong = subprocess.run(
            [
                sys.executable,
                "-m",
                "soulstack.cli",
                "flock",
                "jev-report",
                "--data",
                str(tmp_path),
                "--png",
                str(where),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert wrong.returncode == 2 and wrong.stderr.strip().splitlines() == [
            f"soulstack flock: --png {where}: name a file ending .png, such as {example}"
        ], wrong.stderr
        assert not example.exists()
