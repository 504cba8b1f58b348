"""Jev's LLM backends fitted on the training conversations and measured on the separate set
(soulstack.flock.jev.judge_fit, `soulstack flock jev-report --judge`): the judge's prior and the
logprobs Jev's temperature are the maximum likelihood fits of the model's answers, the fit is
written for that model, and a flock started with that backend reads it. The models here are the
protocol-true fake Messages API and fake Chat Completions with the real SDKs, answering from a
table this test writes (the data's true kinds, every fifth message wrong): the figures they give
measure the wiring, never a model."""

import asyncio
import hashlib
import json
import math
import re
import sys

import pytest

from soulstack.fakes.anthropic_api import FakeAnthropic, text
from soulstack.fakes.openai_api import FakeOpenAI, completion
from soulstack.flock.commands import build_jev
from soulstack.flock.config import FlockSettings
from soulstack.flock.jev.judge import BAND, PRIOR, JudgeJev, votes_to_probs
from soulstack.flock.jev.judge_fit import (
    FIT_FILE,
    Agreement,
    JudgeFit,
    Logprobs,
    LogprobsFit,
    describe,
    fit,
    histories,
    read_fit,
    training_sample,
    write_fit,
)
from soulstack.flock.jev.llm import LlmJev, scaled
from soulstack.flock.jev.question import LABELS
from soulstack.flock.jev.local import KINDS, held_out, load_separate
from soulstack.llm.anthropic import AnthropicModel


def crows(examples):
    return [e for e in examples if e["author_role"] == "crow"]


def judge_of(model_id="claude-test"):
    """The judge's fitting side for a model that is never called (the answers are given)."""
    return Agreement(AnthropicModel(model_id, api_key="test-key", base_url="http://127.0.0.1:9"))


def test_the_prior_is_the_one_under_which_the_answers_are_likeliest():
    """Unanimous answers right four times in five: three votes alike must come out at 0.8."""
    examples = crows(training_sample(400))[:100]
    answers = []
    for index, example in enumerate(examples):
        wrong = KINDS[(KINDS.index(example["kind"]) + 1) % len(KINDS)]
        answers.append([wrong if index % 5 == 0 else example["kind"]] * 3)
    judged = fit(judge_of(), answers, examples)
    assert votes_to_probs(["say"] * 3, judged.prior)["say"] == pytest.approx(0.8, abs=0.005)
    assert judged.messages == 100 and judged.band in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
    # A message the model did not answer is left out of the fit, not counted as wrong.
    again = fit(judge_of(), answers + ["the model failed: 500"], examples + examples[:1])
    assert again.prior == judged.prior and again.messages == 100


def test_the_training_sample_is_whole_conversations_never_the_held_out_fifth():
    sample = training_sample(60)
    assert len(sample) >= 60 and not any(held_out(e) for e in sample)
    last = sample[-1]["conv"]
    assert [e["n"] for e in sample if e["conv"] == last] == list(range(1, 1 + sum(e["conv"] == last for e in sample)))
    earlier = histories(sample)
    assert earlier[0] == [] and earlier[1][0]["text"] == sample[0]["text"] and earlier[1][0]["author"]


def test_a_fit_is_read_only_for_its_own_model(tmp_path):
    assert read_fit(tmp_path, "claude-test")[0] is None
    write_fit(tmp_path, JudgeFit(model="claude-test", prior=0.2, band=0.75, messages=240, log_loss=0.4))
    assert (tmp_path / FIT_FILE).stat().st_mode & 0o077 == 0  # the owner's alone, as the flock's other files
    fitted, line = read_fit(tmp_path, "claude-test")
    assert fitted.prior == 0.2 and "fitted for claude-test on 240 training messages" in line
    other, line = read_fit(tmp_path, "claude-other")
    assert other is None and "fitted for claude-test, not claude-other" in line
    (tmp_path / FIT_FILE).write_text("{not json")
    broken, line = read_fit(tmp_path, "claude-test")
    assert broken is None and "unreadable" in line
    for wrong in ({"prior": "0.2"}, {"prior": 0}, {"band": 1.5}, {"messages": "many"}, {"colour": "red"}):
        fields = {"model": "claude-test", "prior": 0.2, "band": 0.75, "messages": 240, "log_loss": 0.4, **wrong}
        (tmp_path / FIT_FILE).write_text(json.dumps(fields))
        assert read_fit(tmp_path, "claude-test")[0] is None, wrong


def truth_table():
    """message text -> the letter this test's fake answers: the true kind, but wrong for every
    fifth text (by a hash), so the fit has something to fit."""
    from soulstack.flock.jev.local import load_examples

    table = {}
    for example in load_examples() + load_separate():
        index = KINDS.index(example["kind"])
        if hashlib.sha256(example["text"].encode()).digest()[0] % 5 == 0:
            index = (index + 1) % len(KINDS)
        table[example["text"]] = LABELS[index]
    return table


def asked_about(body) -> str:
    """The message a backend's question is about (soulstack.flock.jev.question.prompt's last turn)."""
    content = body["messages"][-1]["content"]
    asked = content if isinstance(content, str) else content[0]["text"]
    return re.search(r"\nMessage: (.*)\n\nWhich letter\?$", asked, re.S)[1]


def answering(table):
    def answer(body):
        return text(table.get(asked_about(body), "A"), usage={"input_tokens": 240, "output_tokens": 1})

    return answer


def answering_logprobs(table):
    """A logprobs server far surer than it is right: the table's letter at 0.98, another at 0.02."""

    def answer(body):
        letter = table.get(asked_about(body), "A")
        other = "A" if letter != "A" else "B"
        return completion(letter, top_logprobs=[(letter, math.log(0.98)), (other, math.log(0.02))])

    return answer


async def test_jev_report_judge_fits_measures_and_the_flock_reads_the_fit(tmp_path):
    async with FakeAnthropic(default=answering(truth_table())) as fake:
        env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url, "PATH": "/usr/bin:/bin"}
        command = [sys.executable, "-m", "soulstack.cli", "flock", "--model", "claude-haiku-4-5", "jev-report"]
        process = await asyncio.create_subprocess_exec(
            *command,
            "--data",
            str(tmp_path),
            "--judge",
            "--judge-messages",
            "30",
            env={**env, "HOME": str(tmp_path)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 300)
        asked = len(fake.bodies)
    out = out.decode()
    assert process.returncode == 0, err.decode()[-2000:]
    judged = json.loads((tmp_path / FIT_FILE).read_text())
    assert judged["model"] == "claude-haiku-4-5" and judged["messages"] >= 30
    # Four answers in five right, unanimously: the fit puts three votes alike near 0.8.
    assert 0.7 < votes_to_probs(["say"] * 3, judged["prior"])["say"] < 0.9
    separate = len(load_separate())
    assert asked == 3 * (judged["messages"] + separate)
    assert f"the LLM judge (claude-haiku-4-5, fitted on {judged['messages']} training messages" in out
    assert f"on the separate set: {separate} messages" in out and "accuracy where sure" in out
    assert "723 tokens a message, $0.0007" in out  # three calls of 241 tokens, at $1/M in and $5/M out
    assert "separate set (written by someone" in out  # then the local Jev's report, as without --judge

    model = AnthropicModel("claude-haiku-4-5", api_key="test-key", base_url="http://127.0.0.1:9")
    said = []
    judge = build_jev(FlockSettings(jev_judge=True, data_dir=str(tmp_path)), model, say=said.append)
    assert isinstance(judge, JudgeJev) and judge.fit.prior == judged["prior"] and judge.fit.band == judged["band"]
    assert said == [
        f"Jev's judge: fitted for claude-haiku-4-5 on {judged['messages']} training messages "
        f"({describe(JudgeFit(**judged))}, band {judged['band']:.2f})"
    ]
    unfitted = build_jev(FlockSettings(jev_judge=True, data_dir=str(tmp_path / "other")), model, say=said.append)
    assert unfitted.fit is None and "no fit for claude-haiku-4-5" in said[-1]


async def test_a_judge_without_a_fit_says_so_and_keeps_the_stated_prior(tmp_path):
    async with FakeAnthropic(default=lambda body: text("F")) as fake:
        model = AnthropicModel("claude-test", api_key="test-key", base_url=fake.base_url)
        judge = build_jev(FlockSettings(jev_judge=True, data_dir=str(tmp_path)), model)
        probs = await judge.kind_probs_async("Sorry, not this one.", nest_id="n", author_role="crow")
        write_fit(tmp_path, JudgeFit(model="claude-test", prior=0.1, band=0.8, messages=240, log_loss=0.3))
        fitted = build_jev(FlockSettings(jev_judge=True, data_dir=str(tmp_path)), model)
        sure = await fitted.kind_probs_async("Sorry, not this one.", nest_id="n", author_role="crow")
    assert probs.backend.endswith("prior not fitted)") and probs.band == BAND
    assert probs["decline"] == pytest.approx(votes_to_probs(["decline"] * 3, PRIOR)["decline"])
    assert sure.backend.endswith("fitted on 240 training messages)") and sure.band == 0.8
    assert sure["decline"] == pytest.approx(3.1 / 3.6)


def test_jev_report_judge_without_a_model_is_one_line(tmp_path):
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "flock", "jev-report", "--data", str(tmp_path), "--judge"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
    assert "--judge asks the flock's model, and none is configured" in done.stderr
    assert not (tmp_path / FIT_FILE).exists()


async def test_a_model_that_is_down_is_said_after_five_messages_and_nothing_is_written(tmp_path):
    from soulstack.fakes.anthropic_api import error
    from soulstack.flock.jev.judge_fit import GIVE_UP_AFTER, NoAnswers, fit_and_measure

    async with FakeAnthropic(default=lambda body: error(400, "no such model")) as fake:
        model = AnthropicModel("claude-test", api_key="test-key", base_url=fake.base_url)
        with pytest.raises(NoAnswers, match="no answer to 5 messages in a row .*no such model"):
            await fit_and_measure(Agreement(model), tmp_path, 30, say=lambda line: None)
        asked = len(fake.bodies)
    assert asked == 3 * GIVE_UP_AFTER and not (tmp_path / FIT_FILE).exists()


def test_the_temperature_is_the_one_under_which_the_logprobs_are_likeliest():
    """A server that says 0.98 and is right four times in five: the fitted temperature flattens its
    top letter to about 0.8, and the fit is kept for that model at that URL only."""
    examples = crows(training_sample(400))[:100]
    answers = []
    for index, example in enumerate(examples):
        said = KINDS[(KINDS.index(example["kind"]) + 1) % len(KINDS)] if index % 5 == 0 else example["kind"]
        answers.append({kind: math.log(0.98 if kind == said else 0.004) for kind in KINDS})
    llm = LlmJev("qwen", "http://127.0.0.1:9/v1")
    judged = fit(Logprobs(llm), answers, examples)
    assert isinstance(judged, LogprobsFit) and judged.model == "qwen at http://127.0.0.1:9/v1"
    assert judged.temperature > 1 and max(scaled(answers[1], judged.temperature).values()) == pytest.approx(
        0.8, abs=0.01
    )
    assert judged.messages == 100


async def test_jev_report_judge_fits_the_logprobs_jev_where_a_server_is_given(tmp_path):
    async with FakeOpenAI(default=answering_logprobs(truth_table())) as fake:
        url = fake.base_url + "/v1"
        command = [sys.executable, "-m", "soulstack.cli", "flock", "--jev-base-url", url, "--jev-model", "qwen"]
        process = await asyncio.create_subprocess_exec(
            *command,
            "jev-report",
            "--data",
            str(tmp_path),
            "--judge",
            "--judge-messages",
            "30",
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},  # no model key: the server is the backend
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 300)
        asked = [body["top_logprobs"] for body in fake.bodies]
        flock_jev = build_jev(FlockSettings(jev_base_url=url, jev_model="qwen", data_dir=str(tmp_path)))
        probs = await flock_jev.kind_probs_async("Claimed, on it now.", author_role="crow", refers_kind="request")
    out = out.decode()
    assert process.returncode == 0, err.decode()[-2000:]
    judged = json.loads((tmp_path / LogprobsFit.FILE).read_text())
    assert judged["model"] == f"qwen at {url}" and judged["messages"] >= 30 and judged["temperature"] > 1
    assert not (tmp_path / FIT_FILE).exists()  # the judge's own fit is another backend's
    assert asked == [20] * (judged["messages"] + len(load_separate()))  # one call a message
    assert f"the logprobs Jev (qwen at {url}, fitted on {judged['messages']} training messages: temperature" in out
    assert "cost unknown (no price for a server of your own)" in out and "accuracy where sure" in out
    assert flock_jev.primary.fit.temperature == judged["temperature"]
    assert probs.backend == f"llm (qwen at {url}, logprobs, fitted on {judged['messages']} training messages)"
    assert probs.band == judged["band"] and max(probs.values()) < 0.98


def test_a_logprobs_fit_for_another_server_is_not_read(tmp_path):
    write_fit(tmp_path, LogprobsFit(model="qwen at http://a/v1", temperature=2.0, band=0.7, messages=240, log_loss=0.5))
    assert (tmp_path / LogprobsFit.FILE).stat().st_mode & 0o077 == 0
    fitted, line = read_fit(tmp_path, "qwen at http://a/v1", LogprobsFit)
    assert fitted.temperature == 2.0
    assert (
        line
        == "the logprobs Jev: fitted for qwen at http://a/v1 on 240 training messages (temperature 2.000, band 0.70)"
    )
    other, line = read_fit(tmp_path, "qwen at http://b/v1", LogprobsFit)
    assert other is None and line == (
        f"the logprobs Jev: {tmp_path / LogprobsFit.FILE} was fitted for qwen at http://a/v1, not qwen at "
        "http://b/v1; temperature 1 and the local band"
    )
    assert read_fit(tmp_path, "qwen at http://a/v1")[0] is None  # the judge's file is another
