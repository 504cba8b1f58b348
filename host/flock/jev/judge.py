"""Jev's LLM judge through the flock's own model (any provider the flock talks to: Anthropic,
Bedrock, OpenAI-compatible), with the local Jev as its fallback.

The provider-neutral model seam (soulstack.llm.types.Model) gives text, not token logprobs, so
the judge asks SAMPLES times for one letter (A-F, the kinds of soulstack.flock.jev.llm) with the
nest's last messages as context, and reads a probability from the agreement:

    p(kind) = (votes(kind) + PRIOR) / (SAMPLES + 6 * PRIOR)

With 3 samples and PRIOR 0.5 a unanimous answer is 0.58, two of three 0.42. The judge's band is its
own, BAND 0.55: unanimous is sure, anything less is unsure (the crow's header or `say` decides). The
local Jev's band (tagging.DEFAULT_BAND) is on another scale, and a tag the local Jev answers as the
fallback is judged by it. PRIOR is a stated guess, not a fit: no model answered this project's sets
(no key where it was written), so `soulstack flock jev-report` on a real flock's log is where this
judge's calibration is measured.

Its tokens count against its own budget, `budget_tokens` for each nest (the flock's per-list
token budget, so a nest's tags cost at most what one list may): once spent, or when the model
fails or answers no letter, the local Jev tags, and the decision's `backend` in jev.jsonl says so
("local (...why)"). One tag per message: the samples are one decision.
"""

import asyncio
import logging
import re
from collections import Counter

from soulstack.flock.jev.llm import LABELS, MEANINGS, OPEN_REQUEST
from soulstack.flock.jev.local import KINDS
from soulstack.llm.types import Message, ModelError

log = logging.getLogger(__name__)
SAMPLES = 3
PRIOR = 0.5
BAND = 0.55  # between two of three (0.42) and all three (0.58)
HISTORY = 6  # the nest's last messages the model reads
CLIP = 300  # characters of each earlier message

SYSTEM = (
    "You are Jev, the tagger of a nest: a chat where an owner and AI crows work together. "
    "Say which kind one message is:\n"
    + "\n".join(f"{label}: {kind} ({MEANINGS[kind]})" for label, kind in zip(LABELS, KINDS, strict=True))
    + "\nJudge by what the message itself does; the earlier messages are context only. "
    "Answer with the one letter only."
)


class Probs(dict):
    """{kind: p}, with the backend that answered (the log's `backend`) and, where its probabilities
    are on a scale of their own, the band to judge them by (None: the local Jev's)."""

    def __init__(self, probs: dict, backend: str, band: float | None = None):
        super().__init__(probs)
        self.backend, self.band = backend, band


def prompt(text: str, history, author_role="", to_role="", refers_kind="", recent_kinds=(), open_request="") -> str:
    earlier = "\n".join(f"- {m['author']} ({m['kind']}): {m['text'][:CLIP]}" for m in list(history)[-HISTORY:])
    return (
        f"The nest's last messages, oldest first:\n{earlier or '(none: this is the first)'}\n\n"
        f"The message, by the {author_role or 'unknown'}, addressed to {to_role or 'nobody in particular'}, "
        f"answering a {refers_kind or 'nothing named'}; latest open request: "
        f"{OPEN_REQUEST.get(open_request, 'none')}.\nMessage: {text}\n\nWhich letter?"
    )


def votes_to_probs(answers: list) -> dict:
    counts = Counter(answers)
    total = len(answers) + len(KINDS) * PRIOR
    return {kind: (counts[kind] + PRIOR) / total for kind in KINDS}


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

    def __init__(self, complete, fallback, samples: int = SAMPLES, budget_tokens: int = 100_000, model: str = ""):
        self.complete, self.fallback, self.samples = complete, fallback, samples
        self.budget_tokens, self.model = budget_tokens, model
        self.spent: Counter[str] = Counter()  # nest -> tokens Jev's judge spent there (since the flock started)

    async def _local(self, why: str, text: str, context: dict) -> Probs:
        probs = await self.fallback.kind_probs_async(text, **context)
        return Probs(probs, f"local ({why})")

    async def kind_probs_async(self, text: str, history=(), nest_id: str = "", **context) -> Probs:
        if self.spent[nest_id] >= self.budget_tokens:
            return await self._local("the judge's token budget for this nest is spent", text, context)
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
            return await self._local(why[:200], text, context)
        backend = f"judge ({self.model or 'the flock model'}, {self.samples} samples)"
        return Probs(votes_to_probs(answers), backend, band=BAND)


class WithFallback:
    """A backend (the logprobs one) whose failure is answered by the local Jev, not by no answer."""

    def __init__(self, primary, fallback):
        self.primary, self.fallback, self.name = primary, fallback, primary.name

    async def kind_probs_async(self, text: str, **context) -> Probs:
        from soulstack.flock.jev.llm import JevBackendError

        try:
            return Probs(await self.primary.kind_probs_async(text, **context), self.primary.name)
        except JevBackendError as failure:
            log.warning("Jev's %s backend failed; the local Jev tags: %s", self.primary.name, failure)
            return Probs(await self.fallback.kind_probs_async(text, **context), f"local ({str(failure)[:200]})")
