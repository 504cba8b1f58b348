"""Jev on the separate set (host/flock/jev/data/separate.nests): it never trains, it shares no
conversation or message with the training set, the band the flock ships is the one it chooses,
and its figures meet the issue's goal. tools/bench-jev prints the same figures; nothing here
is timed."""

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.dataset import DATA, DataError, read_nests
from soulstack.flock.jev.local import KINDS, load_examples, load_separate, local_jev
from soulstack.flock.jev.report import measured
from soulstack.flock.jev.tagging import DEFAULT_BAND
from soulstack.flock.nests.harness import NestConfig

import pytest


def test_the_separate_set_is_apart_from_training():
    train, separate = load_examples(), load_separate()
    assert len(separate) >= 250 and {e["lang"] for e in separate} == {"en", "zh"}
    assert set(KINDS) == {e["kind"] for e in separate}
    assert not {e["conv"] for e in train} & {e["conv"] for e in separate}
    assert not {e["text"] for e in train} & {e["text"] for e in separate}
    # Most crow messages carry neither a header nor a refers_to: the case Jev failed on (issue 36).
    crows = [e for e in separate if e["author_role"] == "crow" and e["kind"] != "say"]
    assert sum(1 for e in crows if not e["header"] and not e["refers_kind"]) >= len(crows) * 0.7
    readme = (DATA / "README.md").read_text()
    assert "train.nests" in readme and "separate.nests" in readme


def test_the_separate_figures_meet_the_goal_and_choose_the_shipped_band():
    result = measured(local_jev())
    separate = result["separate"]
    assert evaluate.meets_goal(separate), evaluate.format_figures(separate)
    assert result["chosen_band"] == DEFAULT_BAND == NestConfig().band
    # Chosen on half the conversations and measured on the other half, both ways: the goal holds too.
    assert all(evaluate.meets_goal(half) for _band, half in result["cross_check"]), result["cross_check"]
    assert sum(row["count"] for row in separate["table"]) == separate["count"]


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
