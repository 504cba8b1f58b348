"""The wake word, told from typed text the way xiaozhi-server tells them apart.

Facts from xiaozhi-esp32-server (0.9.6 and its main branch since: the `listen`
`detect` handler and its punctuation filter), in our words: the server drops
from the text every ASCII punctuation mark, the full-width form of each (with
the ideographic full stop 。 standing in for the full-width ．), the space and
the ideographic space; a bare "Yeah" it reads as nothing. The rest is the wake
word exactly when it is one of `wakeup_words` as they are written: case counts,
every other character stays (tabs, 、, …), and the configured words themselves
are not cleaned, so one with a space or a mark in it never matches. Any other
text is a chat turn (py-xiaozhi sends typed text this way).
"""

import logging
import string

log = logging.getLogger(__name__)

# xiaozhi-server's own `wakeup_words` (its config.yaml).
XIAOZHI_WAKE_WORDS = (
    "你好小智",
    "嘿你好呀",
    "你好小志",
    "小爱同学",
    "你好小鑫",
    "你好小新",
    "小美同学",
    "小龙小龙",
    "喵喵同学",
    "小滨小滨",
    "小冰小冰",
)

FULL_WIDTH = 0xFEE0  # from an ASCII mark to its full-width form
DROPPED = (
    frozenset(string.punctuation)
    | {chr(ord(mark) + FULL_WIDTH) for mark in string.punctuation if mark != "."}
    | {"。", " ", "\u3000"}
)


def as_server_reads(text: str) -> str:
    """The text as xiaozhi-server looks it up in its wake words."""
    kept = "".join(ch for ch in text if ch not in DROPPED)
    return "" if kept == "Yeah" else kept


class WakeWords:
    """The server's `wakeup_words`; `text in wake_words` when the server would take `text` for one."""

    def __init__(self, words=XIAOZHI_WAKE_WORDS):
        self.words = frozenset(words)
        for word in sorted(self.words):
            if as_server_reads(word) != word:  # said once at start: the person can fix both configs
                log.warning(
                    "the wake word %r can never match: xiaozhi-server looks the robot's text up without spaces "
                    "and punctuation, in its wakeup_words as written (so it takes this for a chat turn too); "
                    "write it as %r, in its config and here",
                    word,
                    as_server_reads(word),
                )

    def __contains__(self, text: str) -> bool:
        return as_server_reads(text) in self.words
