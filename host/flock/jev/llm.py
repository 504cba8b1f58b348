"""Jev's logprobs backend: any OpenAI-compatible server that returns token logprobs (llama.cpp,
vLLM, OpenAI itself).

It asks the question of soulstack.flock.jev.question (one letter A-F, with the nest's last
messages as context) for exactly one token, and reads the six letters' log-probabilities from
`top_logprobs`. A letter missing from that list gets the lowest logprob listed: it is no likelier
than anything shown, and a short list must not make Jev surer than the server is.

Raw, those probabilities are on the model's own scale: nearly flat for a small model, often too
sharp for a large one. `soulstack flock --jev-base-url URL jev-report --judge` fits a temperature
on the training conversations, p(kind) ∝ exp(logprob / T) by maximum likelihood, and chooses the
band on the same answers by the local Jev's rule. The fit is kept in <data>/jev-logprobs.json for
this model at this URL (soulstack.flock.jev.judge_fit). Without one, T is 1, the local Jev's band
judges, and the log's `backend` says `not fitted`.

A server that sends no logprobs is an error, never a guess.
"""

import math

from soulstack.flock.jev.local import KINDS
from soulstack.flock.jev.question import LABELS, SYSTEM, Probs, prompt

TOP = 20  # alternatives asked for: OpenAI's most, and enough that all six letters are usually among them


class JevBackendError(Exception):
    pass


def scaled(logprobs: dict, temperature: float = 1.0) -> dict:
    """{kind: p}: the letters' logprobs divided by the temperature, renormalised over the six."""
    top = max(logprobs.values())
    weights = {kind: math.exp((value - top) / temperature) for kind, value in logprobs.items()}
    total = sum(weights.values())
    return {kind: weight / total for kind, weight in weights.items()}


class LlmJev:
    name = "llm"
    wants_history = True

    def __init__(self, model: str, base_url: str, api_key: str = "none", timeout_s: float = 10.0, fit=None):
        """`fit`: soulstack.flock.jev.judge_fit.LogprobsFit for this model at this URL (None: T = 1)."""
        from openai import AsyncOpenAI  # imported only when this backend is chosen

        self.model, self.fit = model, fit
        self.fit_id = f"{model} at {base_url}"  # the same model id on another server is another model
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=1)
        self.calls = self.tokens = 0  # what the server was asked (jev-report's cost line)

    async def label_logprobs_async(self, text: str, history=(), nest_id: str = "", **context) -> dict:
        """{kind: the logprob of its letter as the first token of the answer}."""
        from openai import OpenAIError

        try:
            answer = await self.client.chat.completions.create(
                model=self.model,
                max_tokens=1,
                temperature=0,
                logprobs=True,
                top_logprobs=TOP,
                messages=[
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": prompt(text, history, **context)},
                ],
            )
        except OpenAIError as error:
            raise JevBackendError(f"Jev's model failed: {error}") from error
        self.calls += 1
        self.tokens += answer.usage.total_tokens if answer.usage else 0
        logprobs = answer.choices[0].logprobs if answer.choices else None
        if not logprobs or not logprobs.content or not logprobs.content[0].top_logprobs:
            raise JevBackendError("Jev's model sent no logprobs; it cannot be used as a calibrated tagger")
        listed = logprobs.content[0].top_logprobs
        found: dict = {}
        for candidate in listed:
            label = candidate.token.strip().upper()
            if len(label) == 1 and label in LABELS:
                kind = KINDS[LABELS.index(label)]
                # "A" and " A" are one answer; their probabilities add.
                found[kind] = math.log(math.exp(found.get(kind, -math.inf)) + math.exp(candidate.logprob))
        if not found:
            raise JevBackendError("none of Jev's option labels is among the model's top logprobs")
        lowest = min(candidate.logprob for candidate in listed)
        return {kind: found.get(kind, lowest) for kind in KINDS}

    async def kind_probs_async(self, text: str, history=(), nest_id: str = "", **context) -> Probs:
        logprobs = await self.label_logprobs_async(text, history, **context)
        if self.fit is None:
            return Probs(scaled(logprobs), f"llm ({self.fit_id}, logprobs, not fitted)")
        backend = f"llm ({self.fit_id}, logprobs, fitted on {self.fit.messages} training messages)"
        return Probs(scaled(logprobs, self.fit.temperature), backend, band=self.fit.band)
