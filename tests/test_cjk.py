"""The CJK blocks named once (host/cjk.py), with what each user of them counts."""

import re

from soulstack import cjk
from soulstack.soul.converse.shapes import estimate_tokens
from soulstack.soul.metabolism.health import opening


def test_chinese_means_a_han_character():
    assert cjk.chinese("我叫小栈") and cjk.chinese("Mochi 的朋友")
    assert not cjk.chinese("ひらがな カタカナ") and not cjk.chinese("。、「」") and not cjk.chinese("plain")


def test_each_block_is_the_range_it_names():
    assert (cjk.HAN, cjk.KANA, cjk.CJK_PUNCTUATION) == ("\u4e00-\u9fff", "\u3040-\u30ff", "\u3000-\u303f")
    assert (cjk.HAN_EXTENSION_A, cjk.HAN_COMPATIBILITY) == ("\u3400-\u4dbf", "\uf900-\ufaff")
    assert re.fullmatch(f"[{cjk.IDEOGRAPHS}]+", "\u3040\u30ff\u3400\u4dbf\u4e00\u9fff\uf900\ufaff")
    assert cjk.count("你好。ね!", cjk.HAN + cjk.CJK_PUNCTUATION + cjk.KANA) == 4


def test_the_usage_estimate_and_the_rut_detector_count_as_before():
    assert estimate_tokens("你好。ね") == 4 and estimate_tokens("hello world") == 3
    assert opening("今天我又醒来了") == "今天我又" and opening("Woke up, again and again") == "woke up again"
