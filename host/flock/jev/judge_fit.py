"""Jev's LLM backends fitted on the training conversations and measured on the separate set
(`soulstack flock jev-report --judge`, and tools/bench-jev where a model is at hand).

Each backend reads its probabilities through one number, fitted here:
- the judge (soulstack.flock.jev.judge, the flock's own model): three one-letter samples,
  p(kind) = (votes + PRIOR) / (3 + 6 * PRIOR); the number is PRIOR;
- the logprobs Jev (soulstack.flock.jev.llm, an OpenAI-compatible server): the letters'
  logprobs at a temperature, p(kind) ∝ exp(logprob / T); the number is T.

The backend is asked about a fixed sample of the training conversations (whole conversations,
never the held-out fifth, each message with the nest's earlier messages as the flock would give
them), the number is fitted to its answers by maximum likelihood, and its band is chosen on the
same answers by the local Jev's rule (soulstack.flock.jev.evaluate.choose_band). The fit is
written to <data>/jev-judge.json (the judge) or <data>/jev-logprobs.json (the logprobs Jev), for
that model; a flock on that folder reads it (commands.build_jev). Then the backend is measured on
the separate set (data/outside.nests), which nothing is fitted on.

The earlier messages' kinds in the history are the data's true kinds; in a flock they are the
kinds Jev tagged, so a real nest's history is a little noisier than this one.
"""

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.dataset import context_of
from soulstack.flock.jev.judge import SAMPLES, JudgeJev, votes_to_probs
from soulstack.flock.jev.llm import JevBackendError, scaled
from soulstack.flock.jev.local import KINDS, held_out, load_examples, load_separate, local_jev
from soulstack.private_files import write_atomically

TRAINING_MESSAGES = 240  # enough to fit one number and choose a band; about 720 judge calls
GIVE_UP_AFTER = 5  # messages in a row without an answer: the model is down, or never answers one letter


class NoAnswers(Exception):
    """The model answered none of the training messages: nothing to fit (its failures were logged)."""


@dataclass(frozen=True)
class JudgeFit:
    model: str  # the model id it was fitted for: another model's answers are not these
    prior: float
    band: float
    messages: int  # training messages the model answered
    log_loss: float  # on them, with this prior
    FILE: ClassVar[str] = "jev-judge.json"
    NUMBER: ClassVar[str] = "prior"
    WHAT: ClassVar[str] = "Jev's judge"
    UNFITTED: ClassVar[str] = "the stated prior"
    HOW: ClassVar[str] = "'soulstack flock --model ID jev-report --judge' fits one"


@dataclass(frozen=True)
class LogprobsFit:
    model: str  # "<model id> at <base URL>" (LlmJev.fit_id)
    temperature: float
    band: float
    messages: int
    log_loss: float
    FILE: ClassVar[str] = "jev-logprobs.json"
    NUMBER: ClassVar[str] = "temperature"
    WHAT: ClassVar[str] = "the logprobs Jev"
    UNFITTED: ClassVar[str] = "temperature 1 and the local band"
    HOW: ClassVar[str] = "'soulstack flock --jev-base-url URL --jev-model ID jev-report --judge' fits one"


FIT_FILE = JudgeFit.FILE


def read_fit(data_dir, model: str, kind=JudgeFit) -> tuple:
    """-> (a `kind` fit for `model`, or None; a line saying which the backend uses)."""
    path, unfitted = Path(data_dir) / kind.FILE, kind.UNFITTED
    try:
        fit = kind(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None, f"{kind.WHAT}: no fit for {model} in {path} ({unfitted}; {kind.HOW})"
    except (OSError, ValueError, TypeError) as error:
        return None, f"{kind.WHAT}: {path} is unreadable ({error}); {unfitted} ({kind.HOW})"
    number = getattr(fit, kind.NUMBER)
    numbers = (number, fit.band, fit.log_loss)
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers) or not (
        number > 0 and 0 < fit.band <= 1 and isinstance(fit.messages, int)
    ):
        return None, f"{kind.WHAT}: {path} holds no usable fit (a {kind.NUMBER} above 0, a band in (0, 1]); {unfitted}"
    if fit.model != model:
        return None, f"{kind.WHAT}: {path} was fitted for {fit.model}, not {model}; {unfitted}"
    said = f"{kind.WHAT}: fitted for {model} on {fit.messages} training messages ({describe(fit)}, band {fit.band:.2f})"
    return fit, said


def write_fit(data_dir, fit) -> Path:
    path = Path(data_dir) / fit.FILE
    write_atomically(path, (json.dumps(asdict(fit), indent=2) + "\n").encode())
    return path


def training_sample(count: int = TRAINING_MESSAGES) -> list:
    """Whole training conversations of both writers (never the held-out fifth), in the order of a
    hash of their ids, until `count` messages: the same sample on every machine."""
    conversations: dict = {}
    for example in load_examples():
        if not held_out(example):
            conversations.setdefault(example["conv"], []).append(example)
    chosen: list = []
    for conv in sorted(conversations, key=lambda conv: hashlib.sha256(conv.encode()).digest()):
        if len(chosen) >= count:
            break
        chosen += conversations[conv]
    return chosen


def histories(examples: list) -> list:
    """Each message's earlier messages in its conversation, as the harness hands them to the judge."""
    out: list = []
    earlier: list = []
    conv = None
    for example in examples:
        if example["conv"] != conv:
            conv, earlier = example["conv"], []
        out.append(list(earlier))
        earlier.append({"author": example["author"], "kind": example["kind"], "text": example["text"]})
    return out


class Agreement:
    """The judge through the flock's model: an answer is its SAMPLES kinds; the number is PRIOR."""

    fit_type, bounds = JudgeFit, (0.01, 50.0)

    def __init__(self, model):
        self.model_id = model.model_id
        self.metered = Metered(model)
        # Only its answers are read here (answers_async): a message without them is counted apart.
        self.judge = JudgeJev(self.metered.complete, None, budget_tokens=10**12, model=model.model_id)
        self.what, self.asking = "the LLM judge", f"asking {model.model_id} {SAMPLES} times about each"

    async def answer(self, example: dict, history: list) -> list | str:
        return await self.judge.answers_async(example["text"], history, example["conv"], **context_of(example))

    @staticmethod
    def probs(answer: list, prior: float) -> dict:
        return votes_to_probs(answer, prior)

    def spent(self, messages: int) -> str:
        """What the calls since the last `spent` cost a message."""
        said = self.metered.per_message(messages)
        self.metered.restart()
        return said

    def fit(self, number, **fields) -> JudgeFit:
        return JudgeFit(model=self.model_id, prior=number, **fields)


class Logprobs:
    """The logprobs Jev (an LlmJev): an answer is its letters' logprobs; the number is a temperature."""

    fit_type, bounds = LogprobsFit, (0.02, 50.0)

    def __init__(self, llm):
        self.llm, self.model_id = llm, llm.fit_id
        self.what, self.asking = "the logprobs Jev", f"asking {llm.fit_id} once about each"
        self.started, self.calls, self.tokens = time.perf_counter(), llm.calls, llm.tokens

    async def answer(self, example: dict, history: list) -> dict | str:
        try:
            return await self.llm.label_logprobs_async(example["text"], history, **context_of(example))
        except JevBackendError as failure:
            return str(failure)[:200]

    @staticmethod
    def probs(answer: dict, temperature: float) -> dict:
        return scaled(answer, temperature)

    def spent(self, messages: int) -> str:
        """What the calls since the last `spent` took a message: tokens and time (a server of the
        owner's has no price here, so its cost is unknown, never $0)."""
        seconds = time.perf_counter() - self.started
        said = (
            f"{(self.llm.tokens - self.tokens) / messages:.0f} tokens and {seconds / messages:.2f} s a message, "
            f"cost unknown (no price for a server of your own); {self.llm.calls - self.calls} calls"
        )
        self.started, self.calls, self.tokens = time.perf_counter(), self.llm.calls, self.llm.tokens
        return said

    def fit(self, number, **fields) -> LogprobsFit:
        return LogprobsFit(model=self.model_id, temperature=number, **fields)


async def ask(backend, examples: list) -> list:
    """The backend's answer for each message (its votes or logprobs, or the reason it gave none).
    NoAnswers when GIVE_UP_AFTER messages in a row got none: a model that is down is said at once,
    not after every message has waited for it."""
    answers: list = []
    for example, history in zip(examples, histories(examples), strict=True):
        answers.append(await backend.answer(example, history))
        recent = answers[-GIVE_UP_AFTER:]
        if len(recent) == GIVE_UP_AFTER and all(isinstance(answer, str) for answer in recent):
            raise NoAnswers(f"the model gave no answer to {GIVE_UP_AFTER} messages in a row (the last: {recent[-1]})")
    return answers


def rows(backend, answers: list, examples: list, number: float, fallback_rows=None) -> list:
    """Probability rows as the tagger sees them; a message without an answer gets the local Jev's
    row from `fallback_rows` (needed only where some message went unanswered)."""
    out = []
    for index, answer in enumerate(answers):
        if isinstance(answer, str):
            probs = dict(zip(KINDS, fallback_rows[index], strict=True))
        else:
            probs = backend.probs(answer, number)
        out.append([probs[kind] for kind in KINDS])
    return evaluate.as_tagged(out, examples)


def log_loss(probs: list, examples: list) -> float:
    return -sum(math.log(max(p[e["kind"]], 1e-12)) for p, e in zip(probs, examples, strict=True)) / len(examples)


def fit(backend, answers: list, examples: list):
    """The backend's number by maximum likelihood over the answered messages, then the band by the
    local Jev's rule."""
    from scipy.optimize import minimize_scalar

    answered = [(a, e) for a, e in zip(answers, examples, strict=True) if not isinstance(a, str)]
    if not answered:
        why = next((a for a in answers if isinstance(a, str)), "no messages")
        raise NoAnswers(f"the model answered none of the {len(answers)} training messages (the first: {why})")
    got, used = [a for a, _ in answered], [e for _, e in answered]

    def loss(log_number: float) -> float:
        return log_loss(rows(backend, got, used, math.exp(log_number)), used)

    low, high = backend.bounds
    best = minimize_scalar(loss, bounds=(math.log(low), math.log(high)), method="bounded")
    number = round(float(math.exp(best.x)), 4)
    band, _ = evaluate.choose_band(rows(backend, got, used, number), used)
    return backend.fit(number, band=band, messages=len(used), log_loss=round(best.fun, 4))


class Metered:
    """The judge's model calls, counted and priced (soulstack.llm.prices: unknown, never $0)."""

    def __init__(self, model):
        self.model = model
        self.restart()

    def restart(self) -> None:
        self.calls, self.tokens, self.dollars = 0, 0, 0.0

    async def complete(self, system, messages, max_tokens):
        from soulstack.llm.prices import cost_usd
        from soulstack.llm.providers import complete_with_retry

        reply = await complete_with_retry(self.model, system, messages, attempts=2, max_tokens=max_tokens)
        self.calls += 1
        self.tokens += reply.usage.total
        cost = cost_usd(self.model.model_id, reply.usage)
        self.dollars = None if cost is None or self.dollars is None else self.dollars + cost
        return reply

    def per_message(self, messages: int) -> str:
        dollars = "cost unknown (no price for it)" if self.dollars is None else f"${self.dollars / messages:.5f}"
        return f"{self.tokens / messages:.0f} tokens a message, {dollars}; {self.calls} calls"


def describe(fitted) -> str:
    """The fitted number in words: what a unanimous judge or the temperature comes to."""
    if isinstance(fitted, JudgeFit):
        alike = votes_to_probs(["say"] * SAMPLES, fitted.prior)["say"]
        return f"prior {fitted.prior:.3f} (three votes alike: {alike:.2f})"
    return f"temperature {fitted.temperature:.3f}"


async def fit_and_measure(backend, data_dir, count: int = TRAINING_MESSAGES, say=print) -> dict:
    """Fit `backend` (Agreement or Logprobs) on `count` training messages, write the fit into
    `data_dir`, and measure the backend on the separate set. `say` gets a line as each stage ends."""
    local = local_jev()
    training, separate = training_sample(count), load_separate()
    say(f"{backend.asking} of {len(training)} training messages, then each of the separate set's {len(separate)}")
    answers = await ask(backend, training)
    judged = fit(backend, answers, training)
    path = write_fit(data_dir, judged)
    say(
        f"fitted: {describe(judged)}, band {judged.band:.2f}, training log loss {judged.log_loss:.3f}, "
        f"{len(training) - judged.messages} unanswered; written to {path}; cost {backend.spent(len(training))}"
    )
    answers = await ask(backend, separate)
    number = getattr(judged, judged.NUMBER)
    # A message the model gave no answer for counts as the local Jev's (the flock's fallback).
    probs = rows(backend, answers, separate, number, local.probs_many(separate))
    return {
        "what": backend.what,
        "fit": judged,
        "separate": evaluate.figures(probs, separate, judged.band),
        "confusions": evaluate.confusions(probs, separate, judged.band),
        "unanswered": sum(1 for answer in answers if isinstance(answer, str)),
        "cost": backend.spent(len(separate)),
    }
