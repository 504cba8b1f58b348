"""The nudge contract's `codes` (host/protocol/nudges.py): what a body tells as codes beside its plain
reason, so the soul tells it in its own language; merged pieces keep theirs; an old body's plain
reason, and a code the soul does not know, are told as they came. The bridge passes a robot's codes on."""

import pytest

from soulstack.bridge.serial_link import nudge_extras
from soulstack.protocol.nudge_sender import merge
from soulstack.protocol.nudges import CODES, PLAIN, BadNudge, Nudge, coded, parse_nudge, plain_reason, told_in
from soulstack.soul.prompts import LANGUAGES, texts

ZH = texts("zh").TEXT["nudge"]
ASK = coded("flock_asks_start", item="写周报", item_id="5-1")


def test_every_code_is_phrased_in_plain_words_and_in_english_as_plain_says():
    assert set(CODES) <= set(PLAIN)
    for language in LANGUAGES:
        assert set(CODES) <= set(texts(language).TEXT["nudge"]), language
    english = texts("en").TEXT["nudge"]
    assert {code: english[code] for code in CODES} == {code: PLAIN[code] for code in CODES}


def test_the_flocks_asks_open_with_the_head_the_brainstem_finds_them_by():
    for language in LANGUAGES:
        text = texts(language).TEXT
        head = text["brainstem"]["flock_asks_head"]
        assert text["nudge"]["flock_asks_start"].startswith(head) and text["nudge"]["flock_asks_answer"].startswith(
            head
        )


def test_a_coded_nudge_is_told_in_the_souls_language_and_its_reason_is_plain():
    body = {"reason": plain_reason(ASK), "codes": list(ASK)}
    nudge = parse_nudge(body)
    assert nudge.reason == "your flock asks: the Sentry needs your OK to start on '写周报' (item 5-1)"
    assert told_in(nudge, ZH) == "你的乌鸦群在问：哨兵要你同意，才能开始做“写周报”（第5-1项）"
    assert nudge.told == nudge.reason  # logs and the sender's debounce: plain words
    assert Nudge.from_json(nudge.to_json()) == nudge  # kept in NUDGES.jsonl, read back after a restart
    assert parse_nudge({"codes": list(ASK)}).reason == nudge.reason  # codes alone: the plain reason is kept


def test_merged_pieces_keep_their_codes_and_a_plain_piece_is_told_as_it_came():
    merged = merge([Nudge(plain_reason(ASK), codes=ASK), Nudge("a face appeared")])
    assert merged.reason == plain_reason(ASK) + "; a face appeared"
    assert (
        told_in(parse_nudge(merged.to_json()), ZH)
        == "你的乌鸦群在问：哨兵要你同意，才能开始做“写周报”（第5-1项）; a face appeared"
    )


def test_an_old_bodys_reason_and_an_unknown_code_are_told_as_they_came():
    assert told_in(parse_nudge({"reason": "someone spoke to me"}), ZH) == "someone spoke to me"
    nudge = parse_nudge({"reason": "a newer body's news", "codes": [{"code": "not_yet_known", "about": {}}]})
    assert told_in(nudge, ZH) == "a newer body's news"
    missing = parse_nudge({"reason": "the flock asks", "codes": [{"code": "flock_asks_start", "about": {}}]})
    assert told_in(missing, ZH) == "the flock asks"  # a phrasing whose parts did not come


@pytest.mark.parametrize(
    "codes",
    [[], "could_not_hear", [{"code": "Bad Name"}], [{"code": "x", "about": {"body": 3}}], [{"reason": 1}]],
)
def test_bad_codes_are_refused_naming_them(codes):
    with pytest.raises(BadNudge, match="codes|about|code"):
        parse_nudge({"reason": "r", "codes": codes})


def test_the_bridge_passes_a_robots_codes_on_and_drops_bad_ones():
    codes = [{"code": "body_could_not_hear", "about": {"why": "my ears server answered 502"}}]
    assert nudge_extras({"nudge": "r", "codes": codes})["codes"] == tuple(codes)
    assert nudge_extras({"nudge": "r", "codes": "nonsense"})["codes"] is None
