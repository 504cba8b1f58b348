"""The echo guard: the robot hearing its own voice is not a person speaking.

A robot's microphone hears its own speaker. When a speech-to-text step turns
that back into text (ears, a voice stack calling converse, a xiaozhi `stt`
that reaches converse, a body nudging with `words`), the soul would take its
own sentence for its person's and answer itself. The guard keeps what the soul
said aloud in the last `WINDOW_S` seconds — every `speak` its body played and
every sentence converse streamed to a voice stack — and an utterance that
repeats it is an echo: it does not reach the soul as a person's words.

The test is on text, so it works for every path and every recogniser:

- text is cut into units: a word of letters or digits, or one Chinese or
  Japanese character (scripts without spaces);
- an utterance of fewer than `MIN_UNITS` units is never an echo: a person's
  "yes" or "ok" may well repeat the soul's;
- it is an echo when at least `MIN_SHARE` of its units are found, in order,
  in what the soul said within the window (difflib's matching blocks against
  everything said in the window, joined: a recogniser may hear the end of one
  sentence and the start of the next as one).

Recognisers drop and mishear words, hence a share and not equality; a person
quoting the soul back within seconds ("you said: see you tomorrow") keeps
most of their own words beside the quote and stays below it. /health counts
the echoes caught by path (`health()`).
"""

import re
from collections import Counter, deque
from difflib import SequenceMatcher

WINDOW_S = 20.0  # speech ends, the recogniser finishes: its echo arrives within seconds
MIN_SHARE = 0.8  # of the utterance's units found, in order, in what the soul said
MIN_UNITS = 3  # shorter utterances are never taken for an echo

_UNITS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\W_]+")


def units(text: str) -> list:
    """Words of letters or digits, and single CJK characters, lowercased."""
    return _UNITS.findall(text.lower())


class EchoGuard:
    def __init__(self, monotonic, window_s: float = WINDOW_S, min_share: float = MIN_SHARE, min_units: int = MIN_UNITS):
        self.monotonic = monotonic  # the soul's clock.monotonic
        self.window_s, self.min_share, self.min_units = window_s, min_share, min_units
        self._said: deque = deque()  # (when, units) of what the soul said aloud, oldest first
        self.caught: Counter = Counter()  # echoes caught, by path ("converse", "nudge")

    def said(self, text: str) -> None:
        """The soul said `text` aloud now (its body played it, or a voice stack was handed it)."""
        found = units(text or "")
        if found:
            self._said.append((self.monotonic(), found))
        self._forget()

    def _forget(self) -> None:
        now = self.monotonic()
        while self._said and now - self._said[0][0] > self.window_s:
            self._said.popleft()

    def share(self, utterance: str) -> float:
        """How much of `utterance` (0..1) repeats, in order, what the soul said within the window."""
        self._forget()
        heard = units(utterance or "")
        said = [unit for _, found in self._said for unit in found]
        if not heard or not said:
            return 0.0
        matcher = SequenceMatcher(None, heard, said, autojunk=False)
        return sum(block.size for block in matcher.get_matching_blocks()) / len(heard)

    def is_echo(self, utterance: str, path: str) -> bool:
        """Whether `utterance` is the robot hearing itself; counted under `path` when it is."""
        if len(units(utterance or "")) < self.min_units:
            return False
        echo = self.share(utterance) >= self.min_share
        if echo:
            self.caught[path] += 1
        return echo

    def health(self) -> dict:
        return {
            "caught": sum(self.caught.values()),
            "byPath": dict(self.caught),
            "windowSeconds": self.window_s,
            "minShare": self.min_share,
            "minUnits": self.min_units,
        }
