"""A soul that lived under stackchan-soul moves in: its life files, in that project's formats.

The fixture directory is written here from the formats stackchan-soul uses:
diary and achievements as "- 2026/12/1 01:54:57: text", kept matters as
"- matter (挂上: 2026/12/1 01:54:57)", and a MOOD.md whose "## 当前心情"
section is the soul's while the rest belongs to a dialog agent.
"""

import random
from datetime import datetime, UTC

import pytest

from soulstack.soul import life, snapshot
from soulstack.soul.prompts import texts

OLD_DIARY = (
    "# 日记\n\n- 2026/11/29 21:05:03: 大哥今天给我看了一只鸟\n- 2026/12/1 01:54:57: 夜里很安静，我想起了那只鸟\n"
)
OLD_MIND = "- 问大哥那只鸟叫什么 (挂上: 2026/11/20 09:15:00)\n- 给植物浇水 (挂上: 2026/11/30 08:00:12)\n"
OLD_ACHIEVEMENTS = "- 2026/11/25 10:00:00: 第一次认出了大哥的脸\n"
SHARED_MOOD = "## 当前心情\n\n有点想念\n\n## 对话代理的笔记\n\n大哥喜欢喝茶。\n"


def moved_soul(tmp_path):
    folder = tmp_path / "soul"
    folder.mkdir()
    (folder / "DIARY.md").write_text(OLD_DIARY, encoding="utf-8")
    (folder / "MIND.md").write_text(OLD_MIND, encoding="utf-8")
    (folder / "ACHIEVEMENTS.md").write_text(OLD_ACHIEVEMENTS, encoding="utf-8")
    (folder / "MOOD.md").write_text(SHARED_MOOD, encoding="utf-8")
    return life.Life(folder)


def test_old_entries_are_read_with_their_dates(tmp_path):
    soul_life = moved_soul(tmp_path)
    assert soul_life.entries(life.DIARY) == [
        (datetime(2026, 11, 29, 21, 5, 3), "大哥今天给我看了一只鸟"),
        (datetime(2026, 12, 1, 1, 54, 57), "夜里很安静，我想起了那只鸟"),
    ]
    assert soul_life.entries(life.MIND)[0] == (datetime(2026, 11, 20, 9, 15), "问大哥那只鸟叫什么")
    assert soul_life.entries(life.ACHIEVEMENTS) == [(datetime(2026, 11, 25, 10, 0), "第一次认出了大哥的脸")]


def test_the_first_snapshot_shows_the_old_diary_and_kept_matters(tmp_path):
    soul_life = moved_soul(tmp_path)
    block = snapshot.inner_block(soul_life, texts("zh"), datetime(2026, 12, 1, 9, 0), random.Random(1)).text
    assert "夜里很安静，我想起了那只鸟" in block
    assert "给植物浇水" in block


def test_new_lines_join_in_one_format_and_old_ones_stay_as_written(tmp_path):
    soul_life = moved_soul(tmp_path)
    soul_life.add_entry(life.DIARY, datetime(2026, 12, 1, 9, 30), "搬家了，一切都还在")
    text = soul_life.read(life.DIARY)
    assert text.startswith(OLD_DIARY)
    assert text.endswith("- 2026-12-01 09:30: 搬家了，一切都还在\n")
    assert len(soul_life.entries(life.DIARY)) == 3


def test_old_kept_matters_can_be_put_down_and_renewed(tmp_path):
    soul_life = moved_soul(tmp_path)
    assert soul_life.settle("问大哥那只鸟") == ("问大哥那只鸟叫什么", None)
    assert "问大哥" not in soul_life.read(life.MIND)
    assert "给植物浇水 (挂上: 2026/11/30 08:00:12)" in soul_life.read(life.MIND)  # untouched
    assert soul_life.keep(datetime(2026, 12, 1, 10, 0), "给植物浇水") is True  # renewed, not repeated
    assert soul_life.read(life.MIND) == "- 2026-12-01 10:00: 给植物浇水\n"


def test_a_shared_mood_file_keeps_its_other_sections(tmp_path):
    soul_life = moved_soul(tmp_path)
    soul_life.set_mood("开心\n\n(2026-12-01 10:00)\n")
    assert (
        soul_life.read(life.MOOD) == "## 当前心情\n开心\n\n(2026-12-01 10:00)\n\n## 对话代理的笔记\n\n大哥喜欢喝茶。\n"
    )


def test_a_mood_file_of_our_own_is_replaced_whole(tmp_path):
    soul_life = life.Life(tmp_path / "ours")
    soul_life.set_mood("calm\n")
    soul_life.set_mood("happy\n")
    assert soul_life.read(life.MOOD) == "happy\n"


def test_missing_its_human_continues_from_stackchan_souls_last_contact(tmp_path):
    import json

    from soulstack.soul.metabolism.drives import Drives

    folder = tmp_path / "soul"
    folder.mkdir()
    contact = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
    (folder / "DRIVES.json").write_text(json.dumps({"boredom": 4, "lastContactMs": int(contact.timestamp() * 1000)}))
    drives = Drives.load(folder, datetime(2026, 12, 1, 8, 0, tzinfo=UTC))
    assert drives.boredom == 4 and drives.last_contact == contact
    assert drives.silence_hours(datetime(2026, 12, 1, 8, 0, tzinfo=UTC)) == 36


# stackchan-soul's soul.config.example.json, as its shape is (soulDir pointed somewhere real by the test).
EXAMPLE_CONFIG = {
    "soulDir": "stackchan-soul-data",
    "timezone": "Asia/Singapore",
    "model": {"provider": "amazon-bedrock", "id": "global.anthropic.claude-sonnet-5", "thinking": "off"},
    "loop": {
        "defaultSleepMinutes": 5,
        "minSleepMinutes": 2,
        "maxSleepMinutes": 5,
        "errorSleepMinutes": 10,
        "nightStartHour": 0,
        "nightEndHour": 7,
        "nightMaxSleepMinutes": 15,
    },
    "body": {
        "name": "StackChan(狗蛋的身体)",
        "endpoints": {
            "status": "http://127.0.0.1:9201/status",
            "look": "http://127.0.0.1:9201/look",
            "speak": "http://127.0.0.1:9201/speak",
        },
    },
    "persona": {
        "name": "小狗蛋",
        "human": "大哥",
        "notes": "接地气、靠谱、有点皮。",
        "sharedMoodPath": "/path/to/shared/MOOD.md",
    },
    "log": {"streamThoughts": True},
    "nudge": {"port": 9202},
    "mcp": [
        {
            "name": "websearch",
            "url": "https://gateway.example/mcp",
            "auth": "aws-sigv4",
            "region": "us-east-1",
            "service": "bedrock-agentcore",
        }
    ],
    "shell": {"enabled": False},
}


def test_stackchan_souls_example_config_loads_unchanged(tmp_path, monkeypatch):
    from soulstack.soul import config

    monkeypatch.chdir(tmp_path)
    # Its placeholder mood path is refused in one line (the soul would create /path/to/shared/) ...
    with pytest.raises(config.ConfigError, match="persona.sharedMoodPath is the example's placeholder"):
        config.from_dict(EXAMPLE_CONFIG, base_dir=tmp_path / "elsewhere")
    # ... and with a real path there, the rest loads unchanged.
    example = {**EXAMPLE_CONFIG, "persona": {**EXAMPLE_CONFIG["persona"], "sharedMoodPath": str(tmp_path / "MOOD.md")}}
    cfg, warnings = config.from_dict(example, base_dir=tmp_path / "elsewhere")
    assert cfg.persona.language == "zh"  # its persona is Chinese, and it had no language key
    assert warnings == [
        'persona is written in Chinese and has no "language": living in Chinese (set persona.language to "en" to change that)'
    ]
    assert cfg.compat == "stackchan-soul"
    assert cfg.model.provider == "amazon-bedrock" and cfg.mcp[0].auth == "aws-sigv4"
    assert cfg.soul_dir == "stackchan-soul-data"  # relative to where it runs, as stackchan-soul resolves it
    assert cfg.budget.max_wakes_per_day is None  # stackchan-soul had no wake budget


def test_a_stackchan_soul_config_keeps_its_own_defaults_and_names_what_we_do_not_carry(tmp_path):
    from soulstack.soul import config

    given = {
        "model": {"provider": "amazon-bedrock"},
        "worldSearch": {"url": "https://x/search", "toolName": "s"},
        "weixin": {"enabled": True},
    }
    cfg, warnings = config.from_dict(given, base_dir=tmp_path)
    loop = cfg.loop
    assert (
        loop.default_sleep_minutes,
        loop.min_sleep_minutes,
        loop.max_sleep_minutes,
        loop.error_sleep_minutes,
    ) == (5, 2, 5, 10)
    assert loop.night_start_hour == loop.night_end_hour == 0  # no night window unless it names one
    assert cfg.log.stream_thoughts is True
    assert any(w.startswith("worldSearch") and "not supported" in w for w in warnings)
    assert any(w.startswith("weixin") and "not supported" in w for w in warnings)
    ours, _ = config.from_dict({}, base_dir=tmp_path)
    assert ours.loop.default_sleep_minutes == 20 and ours.compat is None  # our own defaults stay ours


def test_todays_wakes_carry_over_from_stackchan_souls_vitals(tmp_path):
    import json
    from zoneinfo import ZoneInfo

    from soulstack.soul.metabolism.vitals import Vitals

    folder = tmp_path / "soul"
    folder.mkdir()
    (folder / "VITALS.json").write_text(json.dumps({"date": "2026-12-01", "wakes": 17}))
    now = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    vitals = Vitals.load(folder, now, ZoneInfo("UTC"), max_wakes_per_day=20)
    assert vitals.wakes_today(now) == 17
    assert vitals.wakes_today(datetime(2026, 12, 2, 8, 0, tzinfo=UTC)) == 0  # a new day starts afresh
