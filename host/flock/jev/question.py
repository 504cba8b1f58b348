"""The question both LLM backends ask about one nest message, and the answer they hand the tagger.

Both Jev's judge (soulstack.flock.jev.judge: the flock's own model, agreement over samples) and
the logprobs Jev (soulstack.flock.jev.llm: an OpenAI-compatible server's token probabilities) ask
the same thing: which of six one-letter options the message is, with the nest's last messages as
context. One question means their figures on the separate set compare the backends, not prompts.
"""

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

HISTORY = 6  # the nest's last messages the model reads
CLIP = 300  # characters of each earlier message

SYSTEM = (
    "You are Jev, the tagger of a nest: a chat where an owner and AI crows work together. "
    "Say which kind one message is:\n"
    + "\n".join(f"{label}: {kind} ({MEANINGS[kind]})" for label, kind in zip(LABELS, KINDS, strict=True))
    + "\nJudge by what the message itself does; the earlier messages are context only. "
    "Answer with the one letter only."
)


def prompt(text: str, history, author_role="", to_role="", refers_kind="", recent_kinds=(), open_request="") -> str:
    """The user turn: the nest's last HISTORY messages ({author, kind, text}), then the message
    with what the harness knows of it. `recent_kinds` is in the history already."""
    earlier = "\n".join(f"- {m['author']} ({m['kind']}): {m['text'][:CLIP]}" for m in list(history)[-HISTORY:])
    return (
        f"The nest's last messages, oldest first:\n{earlier or '(none: this is the first)'}\n\n"
        f"The message, by the {author_role or 'unknown'}, addressed to {to_role or 'nobody in particular'}, "
        f"answering a {refers_kind or 'nothing named'}; latest open request: "
        f"{OPEN_REQUEST.get(open_request, 'none')}.\nMessage: {text}\n\nWhich letter?"
    )


class Probs(dict):
    """{kind: p}, with the backend that answered (the log's `backend`) and, where its probabilities
    are on a scale of their own, the band to judge them by (None: the local Jev's)."""

    def __init__(self, probs: dict, backend: str, band: float | None = None):
        super().__init__(probs)
        self.backend, self.band = backend, band
