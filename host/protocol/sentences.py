"""The one sentence rule: where a spoken text is cut into sentences, and how long one `/speak` may be.

Everything that speaks a text a sentence at a time uses it: the soul's first
words of a streamed answer (soul/converse/first_words.py), ears sending each
sentence of the soul's answer to a body's `/speak`, and `soulstack tts`
synthesizing sentence by sentence. So a sentence is the same thing wherever it
is cut, and no piece is ever longer than a body's `/speak` takes
(`MAX_SPEAK_CHARS`, from the one Body Protocol source in firmware/core/protocol.py).
"""

import re

from soulstack.firmware.core.protocol import MAX_SPEAK_CHARS

# A sentence ends with a run of terminators (and any closing quotes or brackets after it):
# Latin ones when whitespace or the end of the text so far follows, CJK ones (written
# without spaces) at once; a line break ends one too. A "." right after a digit at the very
# end waits for the next character: "3." may become "3.5".
_SENTENCE_END = re.compile(
    r"(?:[.!?\u2026]+[\"'\u201d\u2019\)\]]*(?=\s|$)|[\u3002\uff01\uff1f]+[\"'\u201d\u2019\u300d\u300f\uff09]*|\n+)"
)
_DECIMAL_SO_FAR = re.compile(r"\d\.$")


def sentence_end(text: str) -> int:
    """Where the last complete sentence of `text` ends (0: none yet)."""
    end = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() == len(text) and _DECIMAL_SO_FAR.search(text):
            break
        end = match.end()
    return end


def split_sentences(text: str, final: bool, limit: int = MAX_SPEAK_CHARS) -> tuple[list[str], str]:
    """The complete sentences at the start of `text` and what is left of it (nothing, when `final`).

    A run longer than `limit` with no end of sentence is cut at its last space
    before the limit (or at the limit, for text written without spaces), so
    every piece fits one `/speak`."""
    out, marks = [], ""
    while True:
        end = _first_end(text)
        if not end:
            break
        piece, text = text[:end], text[end:]
        if not any(character.isalnum() for character in piece):
            marks += piece  # "..." alone is no sentence: no voice says it (tts answers 400); it opens the next
            continue
        out.extend(_fit(marks + piece, limit))
        marks = ""
    text = marks + text
    while len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        out.extend(_fit(text[:cut], limit))
        text = text[cut:]
    if final:
        out.extend(_fit(text, limit))
        text = ""
    return out, text


def _first_end(text: str) -> int:
    for match in _SENTENCE_END.finditer(text):
        if match.end() == len(text) and _DECIMAL_SO_FAR.search(text):
            return 0
        return match.end()
    return 0


def _fit(piece: str, limit: int) -> list[str]:
    """`piece` stripped, in parts of at most `limit` characters (none when it is blank)."""
    piece = piece.strip()
    parts = []
    while len(piece) > limit:
        cut = piece.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        parts.append(piece[:cut].strip())
        piece = piece[cut:].strip()
    if piece:
        parts.append(piece)
    return parts
