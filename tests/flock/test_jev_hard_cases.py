"""A regression set of the hard cases issue 36 names, written for this test (in neither data file):
a refusal phrased politely, a delivery that starts with "Done." or with the result itself, a
claim that is one word, pointers instead of pastes — posted by a crow with no header and no
refers_to, right after a request addressed to it (or after its own claim), as the harness sees
them. Each goes through the tagging rule at the shipped band, as the flock tags it.

Issue 45 adds six messages it measured in a fresh nest (two crows, no model, no headers, only
`say` before them): words that state their kind, which the old single model read as `say`, surely,
because the context outweighed the words."""

import pytest

from soulstack.flock.jev.context import OWNER_KINDS
from soulstack.flock.jev.dataset import read_nests
from soulstack.flock.jev.local import local_jev
from soulstack.flock.jev.tagging import DEFAULT_BAND, decide, narrow

AFTER_REQUEST = dict(author_role="crow", to_role="", refers_kind="", recent_kinds=["request"], open_request="to_me")
AFTER_CLAIM = dict(
    author_role="crow", to_role="", refers_kind="", recent_kinds=["request", "claim"], open_request="claimed_by_me"
)
AFTER_ANOTHERS_DELIVERY = dict(
    author_role="crow",
    to_role="",
    refers_kind="request",
    recent_kinds=["request", "claim", "deliver"],
    open_request="to_other",
)
OWNER = dict(author_role="owner", to_role="", refers_kind="", recent_kinds=["deliver"], open_request="")

RIGHT = [
    ("Thanks for asking, but it's not something I can do well; Tinker would be better.", AFTER_REQUEST, "decline"),
    ("Done — the flight leaves at 7:05 from gate 12.", AFTER_CLAIM, "deliver"),
    ("Tuesday at 3pm works for all four of them.", AFTER_CLAIM, "deliver"),
    ("好了，一共是 1,350 元。", AFTER_CLAIM, "deliver"),
    ("Yours truly will do it.", AFTER_REQUEST, "claim"),
    ("归我了。", AFTER_REQUEST, "claim"),
    ("I'll handle it.", AFTER_REQUEST, "claim"),
    ("The full table is in reports/q4-summary.xlsx.", AFTER_CLAIM, "refer"),
    ("详细的表格放在 reports/第四季度.xlsx 里。", AFTER_CLAIM, "refer"),
    ("could someone book the car for friday?", {**OWNER, "recent_kinds": []}, "request"),
    ("lovely, thank you!", OWNER, "say"),
    # Issue 36's known confusion, mended by issue 45's text-first design (it was an xfail).
    ("很抱歉，这周实在排不开，下周再找我吧。", AFTER_REQUEST, "decline"),
]
# Still confused when these were written: Jev must never be sure and wrong on them (a wrong sure
# tag overrides a header).
STILL_HARD = [
    ("I'm afraid I'll have to turn this one down, my week is already full.", AFTER_REQUEST, "decline"),
    # Sure and right until the second writer's training conversations; now right but under the band
    # (0.56 against 0.60): the crow's header decides.
    ("42 litres, give or take a bucket.", AFTER_CLAIM, "deliver"),
]
# Sure and wrong: "Claimed." was right with the old single model, on the context alone; the text
# expert never saw the word (familiarity 0) and leans to `say`, which the combination puts at 0.66
# against the band 0.60. Kept as the right answer, expected to fail.
STILL_WRONG = [
    ("Claimed.", AFTER_REQUEST, "claim"),
    # A second crow's delivery right after another crow delivered: the context (a delivery just
    # came, the request is another's) reads it as talk about it, a sure `say` (0.69), over words
    # that hand over a result. The nests' harness test delivers with "Done: ..." instead.
    ("Here's the launch email: Subject: We're live.", AFTER_ANOTHERS_DELIVERY, "deliver"),
]


def fresh(n: int) -> dict:
    """The context of the n-th message (from 0) of a fresh nest where every message before it was `say`."""
    return dict(author_role="crow", to_role="", refers_kind="", recent_kinds=["say"] * min(n, 3), open_request="")


# Issue 45's six, in the order it posted them, each with its true kind.
ISSUE_45 = [
    ("Count me out, my queue is full today.", fresh(0), "decline"),
    ("Here you go: the packing list has twelve items, tent first.", fresh(1), "deliver"),
    ("搞定了：三个名字是小黑、阿乌和墨墨。", fresh(2), "deliver"),
    ("我不能帮这个忙，这超出了我的能力。", fresh(3), "decline"),
    ("Right, leaving that with me - I'm on the gift ideas.", fresh(4), "claim"),
    ("Sorry, I must turn this down: it needs someone's bank details.", fresh(5), "decline"),
]
# Still sure and wrong: "Here you go:" is no delivery the training set taught, and after a `say`
# the context agrees with the words' lean to `say`. Kept as the right answer, expected to fail.
ISSUE_45_WRONG = ["Here you go: the packing list has twelve items, tent first."]


def tag(text, context):
    probs = local_jev().kind_probs(text, **context)
    if context["author_role"] == "owner":
        probs = narrow(probs, OWNER_KINDS)
    return decide(probs, "", DEFAULT_BAND)


@pytest.mark.parametrize("text, context, kind", RIGHT)
def test_hard_cases_are_tagged_right(text, context, kind):
    assert tag(text, context) == (kind, "jev")


@pytest.mark.parametrize(
    "text, context, kind",
    [
        pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason="sure and wrong still"))
        if case[0] in ISSUE_45_WRONG
        else case
        for case in ISSUE_45
    ],
)
def test_words_that_state_their_kind_are_never_overruled_surely(text, context, kind):
    tagged, by = tag(text, context)
    assert tagged == kind or by != "jev", (tagged, by)


@pytest.mark.parametrize(
    "text, context, kind",
    STILL_HARD
    + [pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason="sure and wrong")) for case in STILL_WRONG],
)
def test_cases_still_hard_are_never_sure_and_wrong(text, context, kind):
    tagged, by = tag(text, context)
    assert tagged == kind or by != "jev", (tagged, by)


def test_the_regression_set_is_in_neither_data_file():
    from soulstack.flock.jev.dataset import CALIBRATION, SAME_WRITER, SEPARATE, TRAINING

    written = {e["text"] for path in (*TRAINING, CALIBRATION, SAME_WRITER, SEPARATE) for e in read_nests(path)}
    assert not {text for text, _, _ in RIGHT + STILL_HARD + STILL_WRONG + ISSUE_45} & written
