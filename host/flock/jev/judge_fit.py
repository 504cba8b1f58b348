"""The LLM judge fitted on the training conversations and measured on the separate set
(`soulstack flock jev-report --judge`, and tools/bench-jev where a model key is present).

The judge (soulstack.flock.jev.judge) reads a probability from three one-letter samples,
p(kind) = (votes + PRIOR) / (3 + 6 * PRIOR). Here the flock's own model is asked about a fixed
sample of the training conversations (whole conversations, never the held-out fifth, each message
with the nest's earlier messages as the flock would give them), PRIOR is fitted to its answers by
maximum likelihood, and the judge's band is chosen on the same answers by the local Jev's rule
(soulstack.flock.jev.evaluate.choose_band). The fit is written to <data>/jev-judge.json for that
model id; a flock started with --jev-judge on that folder reads it (commands.build_jev). Then the
judge is measured on the separate set (data/outside.nests), which nothing is fitted on.

The earlier messages' kinds in the history are the data's true kinds; in a flock they are the
kinds Jev tagged, so a real nest's history is a little noisier than this one.
"""

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.dataset import context_of
from soulstack.flock.jev.judge import SAMPLES, JudgeJev, votes_to_probs
from soulstack.flock.jev.local import KINDS, held_out, load_examples, load_separate, local_jev
from soulstack.private_files import write_atomically

FIT_FILE = "jev-judge.json"
TRAINING_MESSAGES = 240  # enough to fit one number and choose a band; about 720 model calls


class NoAnswers(Exception):
    """The model answered none of the training messages: nothing to fit (its failures were logged)."""


@dataclass(frozen=True)
class JudgeFit:
    model: str  # the model id it was fitted for: another model's answers are not these
    prior: float
    band: float
    messages: int  # training messages the model answered
    log_loss: float  # on them, with this prior


def read_fit(data_dir, model: str) -> tuple:
    """-> (JudgeFit or None, a line saying which the judge uses)."""
    path = Path(data_dir) / FIT_FILE
    try:
        fit = JudgeFit(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None, f"Jev's judge: no fit for {model} in {path} (the stated prior; jev-report --judge fits one)"
    except (OSError, ValueError, TypeError) as error:
        return None, f"Jev's judge: {path} is unreadable ({error}); the stated prior until jev-report --judge"
    numbers = (fit.prior, fit.band, fit.log_loss)
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers) or not (
        fit.prior > 0 and 0 < fit.band <= 1 and isinstance(fit.messages, int)
    ):
        return None, f"Jev's judge: {path} holds no usable fit (a prior above 0, a band in (0, 1]); the stated prior"
    if fit.model != model:
        return None, f"Jev's judge: {path} was fitted for {fit.model}, not {model}; the stated prior"
    return fit, f"Jev's judge: fitted for {model} on {fit.messages} training messages (band {fit.band:.2f})"


def write_fit(data_dir, fit: JudgeFit) -> Path:
    path = Path(data_dir) / FIT_FILE
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


GIVE_UP_AFTER = 5  # messages in a row without an answer: the model is down, or never answers one letter


async def ask(judge: JudgeJev, examples: list) -> list:
    """The judge's answers for each message (a list of kinds, or the reason it gave none). NoAnswers
    when GIVE_UP_AFTER messages in a row got none: a model that is down is said at once, not after
    every message has waited for it."""
    answers: list = []
    for example, history in zip(examples, histories(examples), strict=True):
        answers.append(await judge.answers_async(example["text"], history, example["conv"], **context_of(example)))
        recent = answers[-GIVE_UP_AFTER:]
        if len(recent) == GIVE_UP_AFTER and all(isinstance(answer, str) for answer in recent):
            raise NoAnswers(f"the model gave no answer to {GIVE_UP_AFTER} messages in a row (the last: {recent[-1]})")
    return answers


def rows(answers: list, examples: list, prior: float, fallback_rows=None) -> list:
    """Probability rows as the tagger sees them; a message without answers gets the local Jev's row
    from `fallback_rows` (needed only where some message went unanswered)."""
    out = []
    for index, answer in enumerate(answers):
        if isinstance(answer, list):
            probs = votes_to_probs(answer, prior)
        else:
            probs = dict(zip(KINDS, fallback_rows[index], strict=True))
        out.append([probs[kind] for kind in KINDS])
    return evaluate.as_tagged(out, examples)


def log_loss(probs: list, examples: list) -> float:
    return -sum(math.log(max(p[e["kind"]], 1e-12)) for p, e in zip(probs, examples, strict=True)) / len(examples)


def fit(model: str, answers: list, examples: list) -> JudgeFit:
    """PRIOR by maximum likelihood over the answered messages, then the band by the local Jev's rule."""
    from scipy.optimize import minimize_scalar

    answered = [(a, e) for a, e in zip(answers, examples, strict=True) if isinstance(a, list)]
    if not answered:
        why = next((a for a in answers if isinstance(a, str)), "no messages")
        raise NoAnswers(f"the model answered none of the {len(answers)} training messages (the first: {why})")
    got, used = [a for a, _ in answered], [e for _, e in answered]

    def loss(log_prior: float) -> float:
        return log_loss(rows(got, used, math.exp(log_prior)), used)

    best = minimize_scalar(loss, bounds=(math.log(0.01), math.log(50.0)), method="bounded")
    prior = float(math.exp(best.x))
    band, _ = evaluate.choose_band(rows(got, used, prior), used)
    return JudgeFit(model=model, prior=round(prior, 4), band=band, messages=len(used), log_loss=round(best.fun, 4))


class Metered:
    """The judge's model calls, counted and priced (soulstack.llm.prices: unknown, never $0)."""

    def __init__(self, model):
        self.model, self.calls, self.tokens, self.dollars = model, 0, 0, 0.0

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


async def fit_and_measure(model, data_dir, count: int = TRAINING_MESSAGES, say=print) -> dict:
    """Fit the judge for `model` on `count` training messages, write the fit into `data_dir`, and
    measure the judge on the separate set. `say` gets a line as each stage ends."""
    local = local_jev()
    training, separate = training_sample(count), load_separate()
    say(
        f"asking {model.model_id} {SAMPLES} times about each of {len(training)} training messages, then "
        f"each of the separate set's {len(separate)}"
    )
    spent = Metered(model)
    answers = await ask(JudgeJev(spent.complete, local, budget_tokens=10**12, model=model.model_id), training)
    judged = fit(model.model_id, answers, training)
    path = write_fit(data_dir, judged)
    say(
        f"fitted: prior {judged.prior:.3f} (three votes alike: "
        f"{votes_to_probs(['say'] * SAMPLES, judged.prior)['say']:.2f}), band {judged.band:.2f}, training log loss "
        f"{judged.log_loss:.3f}, {len(training) - judged.messages} unanswered; written to {path}; "
        f"cost {spent.per_message(len(training))}"
    )
    spent = Metered(model)
    answers = await ask(JudgeJev(spent.complete, local, budget_tokens=10**12, model=model.model_id), separate)
    # A message the model gave no answer for counts as the local Jev's (the flock's fallback).
    probs = rows(answers, separate, judged.prior, local.probs_many(separate))
    return {
        "fit": judged,
        "separate": evaluate.figures(probs, separate, judged.band),
        "confusions": evaluate.confusions(probs, separate, judged.band),
        "unanswered": sum(1 for answer in answers if not isinstance(answer, list)),
        "cost": spent.per_message(len(separate)),
    }
