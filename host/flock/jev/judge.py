"""Jev's LLM judge through the flock's own model (any provider the flock talks to: Anthropic,
Bedrock, OpenAI-compatible), with the local Jev as its fallback.

The provider-neutral model seam (soulstack.llm.types.Model) gives text, not token logprobs, so
the judge asks SAMPLES times for one letter (A-F, soulstack.flock.jev.question: the logprobs Jev's
question too) with the nest's last messages as context, and reads a probability from the agreement:

    p(kind) = (votes(kind) + PRIOR) / (SAMPLES + 6 * PRIOR)

PRIOR is fitted, by maximum likelihood, on the model's answers about the training conversations:
`soulstack flock jev-report --judge` asks the flock's model about them, measures the judge on the
separate set beside the local Jev, and writes the fit to <data>/jev-judge.json
(soulstack.flock.jev.judge_fit), which a flock started with --jev-judge reads for that model. The
judge's band is chosen there too, by the local Jev's rule. Without a fit for the model the judge
uses the stated guess, PRIOR 0.5 and BAND 0.55: a unanimous answer is 0.58 (sure), two of three
0.42 (unsure: the crow's header or `say` decides); the log's `backend` says which.
The local Jev's band (tagging.DEFAULT_BAND) is on another scale, and a tag the local Jev answers as
the fallback is judged by it.

Its tokens count against its own budget, `budget_tokens` for each nest (the flock's per-list
token budget, so a nest's tags cost at most what one list may): once spent, or when the model
fails or answers no letter, the local Jev tags, and the decision's `backend` in jev.jsonl says so
("local (...why)"). One tag per message: the samples are one decision.
"""

import asyncio
import logging
import re
from collections import Counter

from soulstack.flock.jev.local import KINDS
from soulstack.flock.jev.question import LABELS, SYSTEM, Probs, prompt
from soulstack.llm.types import Message, ModelError

log = logging.getLogger(__name__)
SAMPLES = 3
PRIOR = 0.5  # the stated guess, where no fit for the model exists
BAND = 0.55  # between two of three (0.42) and all three (0.58), with that PRIOR


def votes_to_probs(answers: list, prior: float = PRIOR) -> dict:
    counts = Counter(answers)
    total = len(answers) + len(KINDS) * prior
    return {kind: (counts[kind] + prior) / total for kind in KINDS}


ANSWER = re.compile(r"^\s*\(?([A-F])[).:]?\s*$")


def letter(reply) -> str | None:
    """The kind of an answer that is one letter and nothing else ("A claim, I think" is not "A")."""
    match = ANSWER.match(reply.message.text().upper())
    return KINDS[LABELS.index(match[1])] if match else None


class JudgeJev:
    """`complete(system, messages, max_tokens=...)` -> a Reply (the flock's model call);
    `fallback`: the local Jev (anything with kind_probs_async)."""

    name = "judge"
    wants_history = True

    def __init__(
        self, complete, fallback, samples: int = SAMPLES, budget_tokens: int = 100_000, model: str = "", fit=None
    ):
        """`fit`: soulstack.flock.jev.judge_fit.JudgeFit for this model (None: the stated PRIOR and BAND)."""
        self.complete, self.fallback, self.samples = complete, fallback, samples
        self.budget_tokens, self.model, self.fit = budget_tokens, model, fit
        self.spent: Counter[str] = Counter()  # nest -> tokens Jev's judge spent there (since the flock started)

    async def _local(self, why: str, text: str, context: dict) -> Probs:
        probs = await self.fallback.kind_probs_async(text, **context)
        return Probs(probs, f"local ({why})")

    async def answers_async(self, text: str, history=(), nest_id: str = "", **context) -> list | str:
        """The model's kinds, one per sample, or why there are none to go by (the budget is spent, the
        model failed, or it answered something other than one letter)."""
        if self.spent[nest_id] >= self.budget_tokens:
            return "the judge's token budget for this nest is spent"
        asked = [Message.user(prompt(text, history, **context))]
        calls = [self.complete(SYSTEM, asked, max_tokens=5) for _ in range(self.samples)]
        replies = await asyncio.gather(*calls, return_exceptions=True)
        answered = [reply for reply in replies if not isinstance(reply, BaseException)]
        self.spent[nest_id] += sum(reply.usage.total for reply in answered)
        failures = [reply for reply in replies if isinstance(reply, BaseException)]
        for failure in failures:
            if not isinstance(failure, (ModelError, OSError, TimeoutError)):
                raise failure  # a bug of ours, not the model's: it must not hide behind the fallback
        answers = [kind for kind in map(letter, answered) if kind]
        if len(answers) < self.samples:
            # Agreement over fewer samples than asked would be surer than it has a right to be.
            why = f"the model failed: {failures[0]}" if failures else "the model answered no letter"
            log.warning("Jev's judge fell back to the local Jev: %s", why)
            return why[:200]
        return answers

    async def kind_probs_async(self, text: str, history=(), nest_id: str = "", **context) -> Probs:
        answers = await self.answers_async(text, history, nest_id, **context)
        if isinstance(answers, str):
            return await self._local(answers, text, context)
        if self.fit is None:
            backend = f"judge ({self.model or 'the flock model'}, {self.samples} samples, prior not fitted)"
            return Probs(votes_to_probs(answers), backend, band=BAND)
        backend = f"judge ({self.model}, {self.samples} samples, fitted on {self.fit.messages} training messages)"
        return Probs(votes_to_probs(answers, self.fit.prior), backend, band=self.fit.band)


class WithFallback:
    """A backend (the logprobs one) whose failure is answered by the local Jev, not by no answer."""

    def __init__(self, primary, fallback):
        self.primary, self.fallback, self.name = primary, fallback, primary.name
        self.wants_history = getattr(primary, "wants_history", False)

    async def kind_probs_async(self, text: str, history=(), nest_id: str = "", **context) -> Probs:
        from soulstack.flock.jev.llm import JevBackendError

        extra = {"history": history, "nest_id": nest_id} if self.wants_history else {}
        try:
            probs = await self.primary.kind_probs_async(text, **extra, **context)
        except JevBackendError as failure:
            log.warning("Jev's %s backend failed; the local Jev tags: %s", self.primary.name, failure)
            return Probs(await self.fallback.kind_probs_async(text, **context), f"local ({str(failure)[:200]})")
        return probs if isinstance(probs, Probs) else Probs(probs, self.primary.name)
