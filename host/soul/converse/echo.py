"""The echo guard: the robot hearing its own voice is not a person speaking.

Some robots' microphones hear their own speaker: a xiaozhi device in auto or
realtime mode (through adapters/stackchan) listens again as soon as it has
spoken, or while it speaks. When speech-to-text turns the soul's own sentence
back into words, the soul would take it for its person's and answer itself.
Our firmware never listens while it speaks, the terminal is typed to: nothing
they hear can be an echo, and a person saying again what the soul just quoted
back to them must be heard.

So the guard judges only what could be an echo:

- only on a body that hears itself: the soul's own body when its config says
  so (`body.hearsItself`). Words are heard by the body a converse request's
  `metadata.heard_by` names, or the soul's body when none is named (a nudge, a
  voice stack such as xiaozhi-server); any other body named (ears' robots) is
  never judged, and what is played on it is not kept;
- only words that arrive while, or just after, that body played the text: the
  guard keeps what was said aloud there (every `speak` the body played, every
  sentence converse streamed to a voice stack, a reminder said), with the
  moment its playing ends estimated from its length at a slow speaking pace,
  one text after another as one speaker plays them, and forgets it
  `AFTER_S` seconds after that.

Within that, the test is on text, so it works for every path and recogniser:

- text is cut into units: a word of letters or digits, or one Chinese or
  Japanese character (scripts without spaces);
- an utterance of fewer than `MIN_UNITS` units is never an echo: a person's
  "yes" or "ok" may well repeat the soul's;
- it is an echo when at least `MIN_SHARE` of its units are found, in order,
  in what is still kept (difflib's matching blocks against all of it, joined:
  a recogniser may hear the end of one sentence and the start of the next as
  one).

Recognisers drop and mishear words, hence a share and not equality; a person
quoting the soul back ("you said: see you tomorrow") keeps most of their own
words beside the quote and stays below it. /health counts the echoes caught
by path (`health()`).
"""

import re
from collections import Counter, deque
from difflib import SequenceMatcher

# How long a text plays, estimated slower than the voices we ship speak (espeak-ng ~0.35 s a word,
# Piper ~0.4 s; Chinese voices 4-5 characters a second): an estimate that ends late keeps an echo in.
SECONDS_PER_WORD = 0.5
SECONDS_PER_CJK = 0.3
AFTER_S = 6.0  # after playing ends: the recogniser waits out the silence, then works; its words arrive
MIN_SHARE = 0.8  # of the utterance's units found, in order, in what is kept
MIN_UNITS = 3  # shorter utterances are never taken for an echo

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_UNITS = re.compile(_CJK.pattern + r"|[^\W_]+")


def units(text: str) -> list:
    """Words of letters or digits, and single CJK characters, lowercased."""
    return _UNITS.findall(text.lower())


def playing_seconds(found: list) -> float:
    """About how long a voice takes to say these units (a generous estimate)."""
    return sum(SECONDS_PER_CJK if _CJK.fullmatch(unit) else SECONDS_PER_WORD for unit in found)


class EchoGuard:
    def __init__(
        self,
        monotonic,
        hears_itself: bool = False,
        body_name: str | None = None,
        after_s: float = AFTER_S,
        min_share: float = MIN_SHARE,
        min_units: int = MIN_UNITS,
    ):
        self.monotonic = monotonic  # the soul's clock.monotonic
        self.hears_itself, self.body_name = hears_itself, body_name  # the soul's body (config `body`)
        self.after_s, self.min_share, self.min_units = after_s, min_share, min_units
        self._said: deque = deque()  # (kept until, units) of what was played where it can be heard, oldest first
        self._playing_until = float("-inf")  # when the body's speaker is done with what it was given
        self.caught: Counter = Counter()  # echoes caught, by path ("converse", "nudge")

    def can_hear_itself(self, heard_by: str | None = None) -> bool:
        """Whether the body that heard (or plays) words may hear its own speaker: `heard_by` names it,
        None is the soul's own body."""
        return self.hears_itself and (heard_by is None or heard_by == self.body_name)

    def said(self, text: str, heard_by: str | None = None) -> None:
        """The soul's `text` went to be played now: by its body, or by the voice stack that heard `heard_by`."""
        found = units(text or "")
        if not found or not self.can_hear_itself(heard_by):
            return
        # One speaker: a text handed over while another still plays is played after it.
        self._playing_until = max(self.monotonic(), self._playing_until) + playing_seconds(found)
        self._said.append((self._playing_until + self.after_s, found))
        self._forget()

    def _forget(self) -> None:
        now = self.monotonic()
        while self._said and now > self._said[0][0]:
            self._said.popleft()

    def share(self, utterance: str) -> float:
        """How much of `utterance` (0..1) repeats, in order, what was played and is still kept."""
        self._forget()
        heard = units(utterance or "")
        said = [unit for _, found in self._said for unit in found]
        if not heard or not said:
            return 0.0
        matcher = SequenceMatcher(None, heard, said, autojunk=False)
        return sum(block.size for block in matcher.get_matching_blocks()) / len(heard)

    def is_echo(self, utterance: str, path: str, heard_by: str | None = None) -> bool:
        """Whether `utterance`, heard by `heard_by` (None: the soul's body), is the robot hearing itself;
        counted under `path` when it is."""
        if not self.can_hear_itself(heard_by) or len(units(utterance or "")) < self.min_units:
            return False
        echo = self.share(utterance) >= self.min_share
        if echo:
            self.caught[path] += 1
        return echo

    def health(self) -> dict:
        return {
            "caught": sum(self.caught.values()),
            "byPath": dict(self.caught),
            "hearsItself": self.hears_itself,
            "windowSeconds": self.after_s,
            "minShare": self.min_share,
            "minUnits": self.min_units,
        }
