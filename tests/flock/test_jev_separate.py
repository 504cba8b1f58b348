"""Jev's sets apart from training: the calibration set (data/calibration.nests, a second writer
who never saw the other files; it fits the combination's temperature), data/same_writer.nests (the
training set's writer, by other rules; with the calibration set it chooses the band) and the
separate set (data/outside.nests, written by someone who never saw the training set; nothing is
fitted on it). None shares a conversation with training, and only a few short replies with any
other file; the band the flock ships is the one the band sets choose; the separate set's figures
hold. tools/bench-jev prints the same figures; nothing here is timed."""

import pytest

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.dataset import DATA, TRAIN, TRAINING, DataError, read_nests
from soulstack.flock.jev.local import (
    KINDS,
    load_calibration,
    load_examples,
    load_same_writer,
    load_separate,
    local_jev,
)
from soulstack.flock.jev.report import measured
from soulstack.flock.jev.tagging import DEFAULT_BAND
from soulstack.flock.nests.harness import NestConfig

# Written by blind helpers, tried in training, left out (data/README.md).
UNUSED = ("train_third.nests", "train_fourth.nests", "train_sixth.nests")


def test_the_sets_apart_from_training_share_no_conversation_and_few_words_with_it():
    train = load_examples()
    apart = {"calibration": load_calibration(), "same_writer": load_same_writer(), "separate": load_separate()}
    for name, other in apart.items():
        assert {e["lang"] for e in other} == {"en", "zh"} and set(KINDS) == {e["kind"] for e in other}, name
        assert not {e["conv"] for e in train} & {e["conv"] for e in other}, name
        assert len(other) >= 250, name
    # The first writer never wrote a message twice (train.nests, same_writer.nests).
    assert not {e["text"] for e in read_nests(TRAIN)} & {e["text"] for e in apart["same_writer"]}
    # Writers who never saw each other's files sometimes write the same short reply ("On it.",
    # "I'll write it.", "我来。"): a few short ones, never a long one. The longest so far, five
    # words, by the calibration set's writer and the sixth: "Mine. Give me ten minutes."
    # train_third, train_fourth and train_sixth (written, tried, not trained on: data/README.md)
    # read and are apart too.
    by_file = {path.name: {e["text"] for e in read_nests(path)} for path in TRAINING}
    by_file.update({name: {e["text"] for e in examples} for name, examples in apart.items()})
    for name in UNUSED:
        unused = read_nests(DATA / name)
        assert len(unused) >= 300 and {e["lang"] for e in unused} == {"en", "zh"}, name
        assert set(KINDS) == {e["kind"] for e in unused}, name
        by_file[name] = {e["text"] for e in unused}
    names = sorted(by_file)
    for index, one in enumerate(names):
        for another in names[index + 1 :]:
            if {one, another} == {"train.nests", "same_writer"}:
                continue
            shared = by_file[one] & by_file[another]
            assert len(shared) <= 10 and all(len(text.split()) <= 5 for text in shared), (one, another, shared)
    # The separate and calibration sets mark the messages whose words alone state their kind.
    assert sum(1 for e in apart["separate"] if e["plain"]) >= 20
    assert sum(1 for e in apart["calibration"] if e["plain"]) >= 20
    readme = (DATA / "README.md").read_text()
    files = [path.name for path in TRAINING] + ["calibration.nests", "same_writer.nests", "outside.nests"]
    assert all(name in readme for name in files + list(UNUSED) + ["calibration.md", "train_fourth.md"])


def test_the_band_sets_choose_the_shipped_band():
    result = measured(local_jev())
    assert result["chosen_band"] == DEFAULT_BAND == NestConfig().band
    for name in ("held", "calibration", "same_writer", "separate"):
        assert sum(row["count"] for row in result[name]["table"]) == result[name]["count"]


def test_choosing_a_band_by_hand():
    examples = [{"kind": "say", "header": "", "author_role": "crow"}] * 100
    sure_right = [{"say": 0.95, "claim": 0.05}] * 100
    assert evaluate.choose_band(sure_right, examples)[0] == 0.5  # right everywhere: the lowest band
    # Right 10 of 10 is not yet "nine in ten" at the low end of its interval: the higher band.
    assert evaluate.choose_band(sure_right[:10], examples[:10])[0] == 0.95
    # 85 of 100 right at 0.6 and below, 57 of the 60 at 0.8 right (low end 0.86): no band fits, the
    # best lower bound wins.
    graded = (
        [{"say": 0.6, "claim": 0.4}] * 28
        + [{"claim": 0.6, "say": 0.4}] * 12
        + [{"say": 0.8, "claim": 0.2}] * 57
        + [{"claim": 0.8, "say": 0.2}] * 3
    )
    band, each = evaluate.choose_band(graded, examples)
    assert band == 0.8 and each[2]["accuracy_sure"] == 0.85 and each[3]["accuracy_sure"] == 0.95
    # Sure on too few: coverage under 0.60 rules a band out, however right.
    rare = [{"say": 0.9, "claim": 0.1}] * 50 + [{"claim": 0.5, "say": 0.5}] * 50
    assert evaluate.choose_band(rare, examples)[0] == 0.9  # the best lower bound, the higher of equals
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
