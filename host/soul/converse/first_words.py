"""The spoken part of a text as it streams in, released sentence by sentence.

A voice stack should hear the soul's first sentence while the model is still
writing the rest. `FirstWords` takes one text block's deltas and gives back,
each time, the part of the spoken text (`spoken_reply`: inner monologue in
parentheses removed) that has become a complete sentence since last time.
Joined, the pieces are exactly `spoken_reply` of the whole block, so a voice
stack that streams them and one that waits for the whole answer say the same.

A span still open (a "(" not yet closed) is held back: it may be monologue.
If the block ends with it still open, it was a lone bracket and is said as
written, as `spoken_reply` does.

Where a sentence ends is the one sentence rule (soulstack.protocol.sentences),
the same that ears uses to cut an answer for a body's `/speak`.
"""

import re

from soulstack.protocol.sentences import sentence_end

_OPENERS = "(（"
_CLOSERS = ")）"
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.!?;:，。！？；：、])")


def spoken_reply(text: str, *, hold_open: bool = False) -> str:
    """What should be said aloud: `text` without its parenthetical monologue.

    Balanced ASCII (...) and full-width （...） spans are removed, nested ones
    too, and the two kinds may close each other (models mix them). A bracket
    with no partner is kept as written: dropping everything after a stray "("
    could swallow the whole answer. Whitespace is collapsed. `hold_open` is for
    text still streaming in: a span not closed yet is left out, since it may
    still close (soulstack.soul.converse.first_words).
    """
    drop = [False] * len(text)
    open_at = []
    for i, ch in enumerate(text):
        if ch in _OPENERS:
            open_at.append(i)
        elif ch in _CLOSERS and open_at:
            start = open_at.pop()
            if not open_at:  # outermost span closed: everything inside goes
                for j in range(start, i + 1):
                    drop[j] = True
    end = open_at[0] if hold_open and open_at else len(text)
    kept = "".join(ch for ch, gone in zip(text[:end], drop, strict=False) if not gone)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(kept.split()))


class FirstWords:
    """One text block's spoken words, released a sentence at a time."""

    def __init__(self):
        self.raw = ""
        self.released = ""  # the spoken text handed out so far

    def add(self, text: str) -> str:
        """Take more of the block; the sentences completed by it ("" when none)."""
        self.raw += text
        said = spoken_reply(self.raw, hold_open=True)
        return self._release(said[: sentence_end(said)])

    def finish(self, text: str | None = None) -> str:
        """The block is complete (`text` is all of it, when known): whatever is left to say."""
        return self._release(spoken_reply(self.raw if text is None else text))

    def _release(self, said: str) -> str:
        # Only whitespace after an end of sentence can change as more text comes, so what was
        # released is always a prefix of what is said now.
        if len(said) <= len(self.released) or not said.startswith(self.released):
            return ""
        piece, self.released = said[len(self.released) :], said
        return piece
