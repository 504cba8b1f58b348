"""A regression set of the hard cases issue 36 names, written for this test (in neither data file):
a refusal phrased politely, a delivery that starts with "Done." or with the result itself, a
claim that is one word, pointers instead of pastes — posted by a crow with no header and no
refers_to, right after a request addressed to it (or after its own claim), as the harness sees
them. Each goes through the tagging rule at the shipped band, as the flock tags it."""

import pytest

from soulstack.flock.jev.context import OWNER_KINDS
from soulstack.flock.jev.dataset import read_nests
from soulstack.flock.jev.local import local_jev
from soulstack.flock.jev.tagging import DEFAULT_BAND, decide, narrow

AFTER_REQUEST = dict(author_role="crow", to_role="", refers_kind="", recent_kinds=["request"], open_request="to_me")
AFTER_CLAIM = dict(
    author_role="crow", to_role="", refers_kind="", recent_kinds=["request", "claim"], open_request="claimed_by_me"
)
OWNER = dict(author_role="owner", to_role="", refers_kind="", recent_kinds=["deliver"], open_request="")

RIGHT = [
    ("Thanks for asking, but it's not something I can do well; Tinker would be better.", AFTER_REQUEST, "decline"),
    ("Done — the flight leaves at 7:05 from gate 12.", AFTER_CLAIM, "deliver"),
    ("42 litres, give or take a bucket.", AFTER_CLAIM, "deliver"),
    ("Tuesday at 3pm works for all four of them.", AFTER_CLAIM, "deliver"),
    ("好了，一共是 1,350 元。", AFTER_CLAIM, "deliver"),
    ("Claimed.", AFTER_REQUEST, "claim"),
    ("Yours truly will do it.", AFTER_REQUEST, "claim"),
    ("归我了。", AFTER_REQUEST, "claim"),
    ("I'll handle it.", AFTER_REQUEST, "claim"),
    ("The full table is in reports/q4-summary.xlsx.", AFTER_CLAIM, "refer"),
    ("详细的表格放在 reports/第四季度.xlsx 里。", AFTER_CLAIM, "refer"),
    ("could someone book the car for friday?", {**OWNER, "recent_kinds": []}, "request"),
    ("lovely, thank you!", OWNER, "say"),
]
# Still confused when these were written: Jev reads them as claims, but not surely, so the rule
# falls back to `say`. They must never become sure and wrong (a wrong tag that overrides a header).
STILL_HARD = [
    ("I'm afraid I'll have to turn this one down, my week is already full.", AFTER_REQUEST, "decline"),
]
# Wrong, and sure of it, at the shipped band: a polite Chinese refusal right after a request reads
# as a claim (p 0.71). Kept as the right answer, expected to fail until the data teaches it.
KNOWN_WRONG = [
    ("很抱歉，这周实在排不开，下周再找我吧。", AFTER_REQUEST, "decline"),
]


def tag(text, context):
    probs = local_jev().kind_probs(text, **context)
    if context["author_role"] == "owner":
        probs = narrow(probs, OWNER_KINDS)
    return decide(probs, "", DEFAULT_BAND)


@pytest.mark.parametrize("text, context, kind", RIGHT)
def test_hard_cases_are_tagged_right(text, context, kind):
    assert tag(text, context) == (kind, "jev")


@pytest.mark.xfail(strict=True, reason="a polite Chinese refusal after a request is taken for a claim")
@pytest.mark.parametrize("text, context, kind", KNOWN_WRONG)
def test_known_confusions_get_their_right_kind_once_the_data_mends_them(text, context, kind):
    assert tag(text, context) == (kind, "jev")


@pytest.mark.parametrize("text, context, kind", STILL_HARD)
def test_cases_still_hard_are_never_sure_and_wrong(text, context, kind):
    tagged, by = tag(text, context)
    assert tagged == kind or by != "jev", (tagged, by)


def test_the_regression_set_is_in_neither_data_file():
    from soulstack.flock.jev.dataset import SEPARATE, TRAIN

    written = {e["text"] for path in (TRAIN, SEPARATE) for e in read_nests(path)}
    assert not {text for text, _, _ in RIGHT + STILL_HARD + KNOWN_WRONG} & written
