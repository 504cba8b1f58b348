"""Jev's optional LLM backend: any OpenAI-compatible server that returns logprobs
(llama.cpp, vLLM, OpenAI itself).

The options get one-token labels (A-F), the model is asked for exactly one
token, and Jev's probabilities are the labels' probabilities in
`top_logprobs`, renormalised over the options (a label missing from the top
list gets none). A server that sends no logprobs is an error, never a guess.
"""

import math

from soulstack.flock.jev.local import KINDS

LABELS = "ABCDEF"
MEANINGS = {
    "say": "ordinary talk; no answer needed",
    "request": "asks a member (or the room) for work",
    "claim": "takes ownership of a request",
    "deliver": "the finished result of a request",
    "refer": "points to an artifact by name instead of pasting it",
    "decline": "refuses a request, with a reason",
}

OPEN_REQUEST = {  # soulstack.flock.jev.context.open_request's values, in words for the model
    "to_me": "addressed to the author",
    "to_room": "addressed to nobody in particular",
    "to_other": "addressed to someone else",
    "claimed_by_me": "claimed by the author",
    "mine": "asked by the author",
}


class JevBackendError(Exception):
    pass


class LlmJev:
    name = "llm"

    def __init__(self, model: str, base_url: str, api_key: str = "none", timeout_s: float = 10.0):
        from openai import AsyncOpenAI  # imported only when this backend is chosen

        self.model = model
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=1)

    def prompt(
        self, text: str, author_role: str, to_role: str, refers_kind: str, recent_kinds=(), open_request: str = ""
    ) -> str:
        options = "\n".join(f"{label}: {kind} ({MEANINGS[kind]})" for label, kind in zip(LABELS, KINDS, strict=True))
        context = (
            f"author: {author_role or 'unknown'}; addressed to: {to_role or 'nobody'}; "
            f"answers a: {refers_kind or 'nothing'}; the nest's last kinds: {', '.join(recent_kinds) or 'none'}; "
            f"the latest open request: {OPEN_REQUEST.get(open_request, 'none')}"
        )
        return (
            f"Which kind is this message of a crow nest?\n{options}\n\nContext: {context}\nMessage: {text}\n\n"
            "Answer with the one letter only."
        )

    async def kind_probs_async(
        self,
        text: str,
        author_role: str = "",
        to_role: str = "",
        refers_kind: str = "",
        recent_kinds=(),
        open_request: str = "",
    ) -> dict:
        from openai import OpenAIError

        try:
            answer = await self.client.chat.completions.create(
                model=self.model,
                max_tokens=1,
                temperature=0,
                logprobs=True,
                top_logprobs=len(LABELS),
                messages=[
                    {
                        "role": "user",
                        "content": self.prompt(text, author_role, to_role, refers_kind, recent_kinds, open_request),
                    }
                ],
            )
        except OpenAIError as error:
            raise JevBackendError(f"Jev's model failed: {error}") from error
        logprobs = answer.choices[0].logprobs if answer.choices else None
        if not logprobs or not logprobs.content:
            raise JevBackendError("Jev's model sent no logprobs; it cannot be used as a calibrated tagger")
        weights = dict.fromkeys(KINDS, 0.0)
        for candidate in logprobs.content[0].top_logprobs:
            label = candidate.token.strip().upper()
            if len(label) == 1 and label in LABELS:
                weights[KINDS[LABELS.index(label)]] += math.exp(candidate.logprob)
        total = sum(weights.values())
        if total <= 0:
            raise JevBackendError("none of Jev's option labels is among the model's top logprobs")
        return {kind: weight / total for kind, weight in weights.items()}
