"""Drives: boredom grows by day, discharges only on real deeds; missing settles only on real contact."""

import json
import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from soulstack.soul.config import from_dict, starter
from soulstack.soul.metabolism.drives import Drives
from soulstack.soul.tools.builtin import make_toolbox
from soulstack.protocol.nudges import Nudge
from soulstack.soul.prompts import texts

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)
# A soul's tools and their facts (host/soul/tools/): the config `soulstack soul --init` writes (every body endpoint).
TOOLS = make_toolbox(from_dict(starter())[0])

BERLIN = ZoneInfo("Europe/Berlin")
NOON = datetime(2025, 3, 10, 12, 0, tzinfo=BERLIN)


def acted(drives, name, ok, now):
    """A tool's result as the metabolism hands it to the drives: with what the tool is (its facts)."""
    drives.on_tool_result(name, ok, now, routine=TOOLS.routine(name), speaks=TOOLS.speaks(name))


def bored(drives, wakings, now=NOON):
    for _ in range(wakings):
        drives.on_waking(now, is_night=False)


def test_fresh_drives_feel_nothing_and_are_written(tmp_path):
    drives = Drives.load(tmp_path, NOON)
    assert drives.boredom == 0
    assert drives.felt(NOON, texts("en")) is None
    saved = json.loads((tmp_path / "DRIVES.json").read_text())
    assert saved["boredom"] == 0 and saved["born"] == NOON.isoformat()


def test_boredom_grows_one_per_day_waking_and_not_at_night(tmp_path):
    drives = Drives.load(tmp_path, NOON)
    bored(drives, 3)
    drives.on_waking(NOON, is_night=True)
    drives.on_waking(NOON, is_night=True)
    assert drives.boredom == 3
    assert Drives.load(tmp_path, NOON).boredom == 3  # persisted


@pytest.mark.parametrize("language", ["en", "zh"])
def test_boredom_thresholds_escalate_through_three_texts(tmp_path, language):
    drives = Drives.load(tmp_path, NOON)
    levels = texts(language).TEXT["boredom"]
    seen = []
    for _ in range(1, 45):
        drives.on_waking(NOON, is_night=False)
        seen.append(drives.felt(NOON, texts(language)))
    # default thresholds 6/20/40: nothing before the 6th waking
    assert seen[:5] == [None] * 5
    assert seen[5] == seen[18] == levels[0]
    assert seen[19] == seen[38] == levels[1]
    assert seen[39] == seen[43] == levels[2]
    assert len(set(levels)) == 3


def test_felt_never_shows_a_number(tmp_path):
    drives = Drives.load(tmp_path, NOON - timedelta(days=5))
    bored(drives, 100)
    for language in ("en", "zh"):
        text = drives.felt(NOON, texts(language))
        assert text and not re.search(r"\d", text)
        assert texts(language).TEXT["boredom"][2] in text and texts(language).TEXT["missing"][1] in text


def test_custom_thresholds(tmp_path):
    drives = Drives.load(tmp_path, NOON, boredom_thresholds=[2, 3, 4], missing_hours=[1, 2])
    bored(drives, 2)
    assert drives.boredom_level() == 1
    bored(drives, 2)
    assert drives.boredom_level() == 3
    assert drives.missing_level(NOON + timedelta(minutes=61)) == 1
    assert drives.missing_level(NOON + timedelta(minutes=121)) == 2


def test_only_a_successful_non_routine_tool_discharges_boredom(tmp_path):
    drives = Drives.load(tmp_path, NOON)
    bored(drives, 25)
    for name in sorted(name for name in TOOLS.names() if TOOLS.routine(name)):
        acted(drives, name, True, NOON)
    assert drives.boredom == 25
    acted(drives, "look", False, NOON)  # tried, failed: still bored
    assert drives.boredom == 25
    acted(drives, "look", True, NOON + timedelta(minutes=1))
    assert drives.boredom == 0
    reloaded = Drives.load(tmp_path, NOON)
    assert reloaded.boredom == 0
    assert reloaded.last_discharge_tool == "look"
    assert reloaded.last_discharge == NOON + timedelta(minutes=1)


def test_missing_felt_at_18_and_48_hours_in_both_languages(tmp_path):
    drives = Drives.load(tmp_path, NOON)
    assert drives.felt(NOON + timedelta(hours=17, minutes=59), texts("en")) is None
    assert drives.felt(NOON + timedelta(hours=18), texts("en")) == EN["missing"][0]
    assert drives.felt(NOON + timedelta(hours=47), texts("zh")) == texts("zh").TEXT["missing"][0]
    assert drives.felt(NOON + timedelta(hours=48), texts("zh")) == texts("zh").TEXT["missing"][1]
    assert drives.silence_hours(NOON + timedelta(hours=30)) == pytest.approx(30)


def test_missing_settled_only_by_real_contact(tmp_path):
    drives = Drives.load(tmp_path, NOON)
    later = NOON + timedelta(hours=20)
    # a failed speak, a face in front of the camera, a routine tool: none is contact
    acted(drives, "speak", False, later)
    assert drives.on_nudge(Nudge("a face appeared in front of you"), later) is False
    acted(drives, "express", True, later)
    assert drives.missing_level(later) == 1

    acted(drives, "speak", True, later)
    assert drives.silence_hours(later) == 0
    assert Drives.load(tmp_path, NOON).last_contact_kind == "speak"

    even_later = later + timedelta(hours=19)
    assert drives.missing_level(even_later) == 1
    assert drives.on_nudge(Nudge("your human typed: hello there"), even_later) is True
    assert drives.silence_hours(even_later) == 0 and drives.last_contact_kind == "typed"

    drives.on_contact(even_later + timedelta(hours=50), "converse")
    reloaded = Drives.load(tmp_path, NOON)
    assert reloaded.last_contact_kind == "converse"
    assert reloaded.felt(even_later + timedelta(hours=51), texts("en")) is None


def test_unknown_contact_kind_is_refused(tmp_path):
    drives = Drives.load(tmp_path, NOON)
    with pytest.raises(ValueError, match="contact kind"):
        drives.on_contact(NOON, "telepathy")


def test_a_nudge_with_words_is_contact_whatever_its_reason(tmp_path):
    later = NOON + timedelta(hours=20)
    drives = Drives.load(tmp_path, NOON)
    assert drives.on_nudge(Nudge("someone spoke near the robot", words="are you awake?"), later) is True
    assert drives.silence_hours(later) == 0 and drives.last_contact_kind == "typed"
    # stackchan-soul's terminal body, which sends only a reason
    chinese = Nudge('大哥在终端里对你说："你好"（想回应就用 speak）')
    assert Drives.load(tmp_path, NOON).on_nudge(chinese, later + timedelta(hours=30)) is True


def test_corrupt_file_is_set_aside_not_fatal(tmp_path):
    (tmp_path / "DRIVES.json").write_text("{not json")
    drives = Drives.load(tmp_path, NOON)
    assert drives.boredom == 0
    assert (tmp_path / "DRIVES.json.corrupt").read_text() == "{not json"
    assert json.loads((tmp_path / "DRIVES.json").read_text())["boredom"] == 0
