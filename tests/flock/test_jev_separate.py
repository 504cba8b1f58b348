"""Jev's sets apart from training: the calibration set (data/calibration.nests, the training set's
writer; it fits the combination's temperature and chooses the band) and the separate set
(data/outside.nests, written by someone who never saw the training set; nothing is fitted on it).
Neither shares a conversation or a message with training; the band the flock ships is the one the
calibration set chooses; the separate set's figures hold. tools/bench-jev prints the same figures;
nothing here is timed."""

import pytest

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.dataset import DATA, DataError, read_nests
from soulstack.flock.jev.local import KINDS, load_calibration, load_examples, load_separate, local_jev
from soulstack.flock.jev.report import measured
from soulstack.flock.jev.tagging import DEFAULT_BAND
from soulstack.flock.nests.harness import NestConfig


def test_the_calibration_and_separate_sets_are_apart_from_training():
    train, calibration, separate = load_examples(), load_calibration(), load_separate()
    texts = {e["text"] for e in train}
    for other in (calibration, separate):
        assert {e["lang"] for e in other} == {"en", "zh"} and set(KINDS) == {e["kind"] for e in other}
        assert not {e["conv"] for e in train} & {e["conv"] for e in other}
    assert not texts & {e["text"] for e in calibration}
    # The outside writer never saw train.nests, and two of its short replies came out the same
    # ("Send it over.", "I'll write it."): a few short ones, never a long one.
    shared = texts & {e["text"] for e in separate}
    assert len(shared) <= 3 and all(len(text.split()) <= 4 for text in shared), shared
    assert len(calibration) >= 250 and len(separate) >= 150
    assert not {e["text"] for e in calibration} & {e["text"] for e in separate}
    # The separate set marks the messages whose words alone state their kind.
    assert sum(1 for e in separate if e["plain"]) >= 20
    readme = (DATA / "README.md").read_text()
    assert all(name in readme for name in ("train.nests", "calibration.nests", "outside.nests"))


def test_the_second_writers_set_reads_and_shares_no_message_with_the_others():
    """data/calibration_second.nests (not used yet: data/README.md says why) parses, has every kind in both
    languages, and none of its messages is in another file."""
    second = read_nests(DATA / "calibration_second.nests")
    assert (
        len(second) >= 250 and {e["lang"] for e in second} == {"en", "zh"} and set(KINDS) == {e["kind"] for e in second}
    )
    others = load_examples() + load_calibration() + load_separate()
    shared = {e["text"] for e in second} & {e["text"] for e in others}
    assert len(shared) <= 3 and all(len(text.split()) <= 4 for text in shared), shared


def test_the_calibration_set_chooses_the_shipped_band():
    result = measured(local_jev())
    assert result["chosen_band"] == DEFAULT_BAND == NestConfig().band
    for name in ("held", "calibration", "separate"):
        assert sum(row["count"] for row in result[name]["table"]) == result[name]["count"]


def test_choosing_a_band_by_hand():
    examples = [{"kind": "say", "header": "", "author_role": "crow"}] * 100
    sure_right = [{"say": 0.95, "claim": 0.05}] * 100
    assert evaluate.choose_band(sure_right, examples)[0] == 0.5  # right everywhere: the lowest band
    # Right 10 of 10 is not yet "nine in ten" at the low end of its interval: the higher band.
    assert evaluate.choose_band(sure_right[:10], examples[:10])[0] == 0.95
    half_wrong = [{"say": 0.9, "claim": 0.1}] * 50 + [{"claim": 0.9, "say": 0.1}] * 50
    band, each = evaluate.choose_band(half_wrong, examples)
    # Nowhere right nine times in ten: the best lower bound, the higher band of equals.
    assert band == 0.9 and all(f["accuracy_sure"] == 0.5 for f in each[:9]) and each[9]["sure"] == 0
    assert 0.2 < evaluate.wilson_lower(5, 10) < 0.5 < 0.7 < evaluate.wilson_lower(10, 10) < 0.9
    assert evaluate.wilson_lower(0, 0) == 0.0


def test_a_mistake_in_the_data_names_its_line(tmp_path):
    bad = tmp_path / "bad.nests"
    bad.write_text("== c1 | en | me | here\nowner claim | I'll do it\n")
    with pytest.raises(DataError, match="bad.nests:2: the owner posts say, request or refer"):
        read_nests(bad)
    bad.write_text("== c1 | en | me | here\nHugin^3 say | hi\n")
    with pytest.raises(DataError, match="bad.nests:2: .3 refers to a message not written yet"):
        read_nests(bad)


def test_a_bang_after_the_kind_marks_a_plain_message(tmp_path):
    data = tmp_path / "plain.nests"
    data.write_text(
        "== c1 | en | me | here\nowner request | can you?\nSoot claim! | I'll take it.\nSoot deliver!/say | Done.\n"
    )
    assert [(e["kind"], e["plain"], e["header"]) for e in read_nests(data)] == [
        ("request", False, ""),
        ("claim", True, ""),
        ("deliver", True, "say"),
    ]
