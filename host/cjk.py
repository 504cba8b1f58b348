"""Chinese and Japanese in a text: the Unicode blocks the soul tells them by, named once.

Each block is a regular-expression range (for a character class, `f"[{HAN}{KANA}]"`); a
caller joins the ones it means: the soul lives in Chinese when a persona holds a Han
character (`chinese`), the voice stack answers in Chinese likewise, /health's rut detector
takes every ideograph or kana as a word of its own (IDEOGRAPHS), and the converse usage
estimate counts one token for each Han, kana or CJK punctuation character.
"""

import re

HAN = "\u4e00-\u9fff"  # CJK Unified Ideographs: the common Chinese characters (and Japanese kanji)
HAN_EXTENSION_A = "\u3400-\u4dbf"  # rarer Han characters
HAN_COMPATIBILITY = "\uf900-\ufaff"  # CJK Compatibility Ideographs
KANA = "\u3040-\u30ff"  # Hiragana and Katakana
CJK_PUNCTUATION = "\u3000-\u303f"  # CJK Symbols and Punctuation: the ideographic space, 、 。 「 」 ...

IDEOGRAPHS = KANA + HAN_EXTENSION_A + HAN + HAN_COMPATIBILITY  # a character that is a word by itself

_HAN = re.compile(f"[{HAN}]")


def chinese(text: str) -> bool:
    """Whether `text` holds a Han character (HAN): what the soul calls written in Chinese."""
    return _HAN.search(text) is not None


def count(text: str, ranges: str) -> int:
    """How many characters of `text` fall in `ranges` (blocks above, joined)."""
    return len(re.findall(f"[{ranges}]", text))
