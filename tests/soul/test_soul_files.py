"""Config, life files, session.jsonl and the clock: the soul's ground."""

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import date, datetime, UTC

import pytest

from soulstack.llm.types import Message, TextBlock, ToolCall
from soulstack.soul import config, life
from soulstack.soul.atomic import atomic_write_json, read_json
from soulstack.clocks import ScaledClock
from soulstack.soul.memory.session import INTERRUPTED, Session
from tests.helpers import ROOT

SOULSTACK = [sys.executable, "-m", "soulstack.cli"]


# --- config -------------------------------------------------------------------------------


def test_defaults_fill_every_key(tmp_path):
    cfg, warnings = config.from_dict({}, tmp_path)
    assert warnings == []
    assert cfg.loop.default_sleep_minutes == 20
    assert cfg.nudge.port == 9202
    assert cfg.model.cache_ttl == "1h"
    assert cfg.budget.max_wakes_per_day == 60
    assert cfg.soul_dir == str(tmp_path / "soul")


def test_stackchan_soul_config_moves_over(tmp_path):
    raw = {
        "soulDir": "/tmp/x",
        "timezone": "Asia/Singapore",
        "model": {"provider": "anthropic", "id": "claude-sonnet-5-5", "thinking": "off"},
        "loop": {
            "defaultSleepMinutes": 5,
            "minSleepMinutes": 2,
            "maxSleepMinutes": 5,
            "errorSleepMinutes": 10,
            "nightStartHour": 0,
            "nightEndHour": 7,
            "nightMaxSleepMinutes": 15,
        },
        "body": {"name": "StackChan", "endpoints": {"status": "http://127.0.0.1:9201/status"}},
        "persona": {"name": "小狗蛋", "human": "大哥", "notes": "皮", "sharedMoodPath": "/tmp/MOOD.md"},
        "log": {"streamThoughts": True},
        "nudge": {"port": 9202},
        "shell": {"enabled": False},
        "worldSearch": {"url": "x"},
    }
    cfg, warnings = config.from_dict(raw)
    assert cfg.persona.human == "大哥"
    assert warnings == [
        "worldSearch (stackchan-soul's single search tool) is not supported; list the search server under mcp instead",
        'persona is written in Chinese and has no "language": living in Chinese (set persona.language to "en" to change that)',
    ]
    assert cfg.persona.language == "zh"


@pytest.mark.parametrize(
    "raw, line",
    [
        ({"loop": {"maxSleepMinutes": 0}}, "loop.maxSleepMinutes must be a number >= 1, not 0"),
        ({"loop": {"maxSleepMinutes": "5"}}, 'loop.maxSleepMinutes must be a number >= 1, not "5"'),
        ({"loop": {"nightStartHour": 24}}, "loop.nightStartHour must be an integer >= 0 and <= 23, not 24"),
        (
            {"timezone": "Mars/Olympus"},
            'timezone must be an IANA time zone such as Europe/Berlin or Asia/Shanghai, not "Mars/Olympus"',
        ),
        (
            {"model": {"provider": "gemini"}},
            'model.provider must be one of anthropic, amazon-bedrock, openai, brainstem, not "gemini"',
        ),
        (
            {"body": {"endpoints": {"look": "127.0.0.1/look"}}},
            'body.endpoints.look must be an http:// or https:// URL, not "127.0.0.1/look"',
        ),
        ({"loop": []}, "loop must be a JSON object, not []"),
        ({"mcp": [{"name": "a"}]}, 'mcp[0] needs a "name" and a "url"'),
        ({"loop": {"minSleepMinutes": 90}}, "loop.minSleepMinutes must be <= loop.maxSleepMinutes"),
    ],
)
def test_a_wrong_value_names_the_key_path(raw, line):
    with pytest.raises(config.ConfigError) as caught:
        config.from_dict(raw)
    assert str(caught.value) == line


def test_unknown_nested_key_is_a_warning():
    _, warnings = config.from_dict({"loop": {"snooze": 3}})
    assert warnings == ["loop.snooze is not a key the soul knows; ignored"]


def test_cli_config_error_is_one_line_exit_2(tmp_path):
    path = tmp_path / "soul.config.json"
    path.write_text(json.dumps({"loop": {"maxSleepMinutes": 0}}))
    run = subprocess.run(
        SOULSTACK + ["soul", "--config", str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == ["soulstack soul: loop.maxSleepMinutes must be a number >= 1, not 0"]
    path.write_text("{ not json")
    run = subprocess.run(
        SOULSTACK + ["soul", "--config", str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and "not valid JSON" in run.stderr


def test_init_writes_a_terminal_config_and_refuses_to_overwrite(tmp_path):
    path = tmp_path / "soul.config.json"
    run = subprocess.run(
        SOULSTACK + ["soul", "--init", "--config", str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 0, run.stderr
    cfg, warnings = config.load(path)
    assert warnings == []
    assert cfg.body.endpoints.speak == "http://127.0.0.1:9310/speak"
    before = path.read_text()
    run = subprocess.run(
        SOULSTACK + ["soul", "--init", "--config", str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 2 and "already exists" in run.stderr
    assert path.read_text() == before
    typo = tmp_path / "no such folder" / "soul.config.json"
    for given, complaint in ((str(typo), "is not a folder: make it first"), ("", "--config is empty")):
        run = subprocess.run(
            SOULSTACK + ["soul", "--init", "--config", given], capture_output=True, text=True, cwd=ROOT, timeout=60
        )
        assert run.returncode == 2 and complaint in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not typo.parent.exists()  # no folder made for a typo


def test_init_keeps_the_port_it_is_given_and_tells_the_body_where_to_nudge(tmp_path):
    path = tmp_path / "soul.config.json"
    run = subprocess.run(
        SOULSTACK + ["soul", "--init", "--port", "9555", "--config", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    cfg, _ = config.load(path)
    assert cfg.nudge.port == 9555
    assert "soulstack body terminal --nudge-url http://127.0.0.1:9555/nudge" in run.stdout
    bad = tmp_path / "bad.json"
    run = subprocess.run(
        SOULSTACK + ["soul", "--init", "--port", "70000", "--config", str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 2 and "--port" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not bad.exists()  # a refused port writes nothing


# --- life files --------------------------------------------------------------------------


def test_writes_are_atomic_and_leave_no_temp_files(tmp_path):
    soul = life.Life(tmp_path)
    soul.write(life.MOOD, "calm\n")
    soul.write(life.MOOD, "curious\n")
    assert (tmp_path / "MOOD.md").read_text() == "curious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["MOOD.md"]
    atomic_write_json(tmp_path / "x" / "VITALS.json", {"a": 1})
    assert read_json(tmp_path / "x" / "VITALS.json") == {"a": 1}
    assert read_json(tmp_path / "missing.json", {}) == {}


def test_daily_backup_keeps_14_days(tmp_path):
    soul = life.Life(tmp_path)
    soul.add_entry(life.DIARY, datetime(2024, 5, 1, 9, 0), "first light")
    for day in range(1, 21):
        soul.backup_daily(date(2024, 5, day))
        # Age is when a backup was written (its folder's mtime), not the date in its name:
        # this one was written (20 - day) days and a half ago.
        written = time.time() - (20 - day + 0.5) * 86400
        os.utime(tmp_path / "backups" / f"2024-05-{day:02d}", (written, written))
    soul.backup_daily(date(2024, 5, 21))
    days = sorted(p.name for p in (tmp_path / "backups").iterdir())
    assert days[0] == "2024-05-07" and days[-1] == "2024-05-21" and len(days) == 15
    assert (tmp_path / "backups" / "2024-05-20" / "DIARY.md").read_text() == "- 2024-05-01 09:00: first light\n"


def test_an_unreadable_file_falls_back_to_its_backup_never_empty(tmp_path):
    soul = life.Life(tmp_path)
    soul.add_entry(life.DIARY, datetime(2024, 5, 1, 9, 0), "the day I was born")
    soul.backup_daily(date(2024, 5, 1))
    (tmp_path / "DIARY.md").write_bytes(b"\xff\xfe broken \x80")
    assert soul.read(life.DIARY) == "- 2024-05-01 09:00: the day I was born\n"
    assert "DIARY.md cannot be read" in soul.problems[0] and "2024-05-01" in soul.problems[0]
    # What it held since that backup (a day's lines, a person's words) is kept before anything overwrites it.
    assert "the damaged file is kept as DIARY.md.damaged" in soul.problems[0]
    assert (tmp_path / "DIARY.md.damaged").read_bytes() == b"\xff\xfe broken \x80"
    # Writing after that builds on the backup: nothing silently emptied.
    soul.add_entry(life.DIARY, datetime(2024, 5, 2, 9, 0), "a second day")
    assert [text for _, text in soul.entries(life.DIARY)] == ["the day I was born", "a second day"]
    assert (tmp_path / "DIARY.md.damaged").read_bytes() == b"\xff\xfe broken \x80"  # still there after the write
    # A damaged file without any backup is refused, not overwritten.
    (tmp_path / "MIND.md").write_bytes(b"\xff\xfe")
    with pytest.raises(life.Unreadable):
        soul.add_entry(life.MIND, datetime(2024, 5, 2, 9, 0), "x")
    assert (tmp_path / "MIND.md").read_bytes() == b"\xff\xfe"


def test_settle_matches_exactly_or_by_unique_prefix(tmp_path):
    soul = life.Life(tmp_path)
    when = datetime(2024, 5, 1, 9, 0)
    for matter in ("ask about the trip", "ask about the cat", "water the plant"):
        soul.add_entry(life.MIND, when, matter)
    assert soul.settle("ask about") == (None, "ambiguous")
    assert soul.settle("") == (None, "empty")
    assert soul.settle("feed the fish") == (None, "none")
    assert soul.settle("water") == ("water the plant", None)
    assert soul.settle("ask about the cat") == ("ask about the cat", None)
    assert [t for _, t in soul.entries(life.MIND)] == ["ask about the trip"]


def test_reflect_archives_the_previous_self(tmp_path):
    soul = life.Life(tmp_path)
    soul.reflect(datetime(2024, 5, 1, 9, 0), "I am new.")
    soul.reflect(datetime(2024, 5, 2, 9, 0), "I like mornings.")
    assert soul.read(life.SELF) == "I like mornings.\n"
    assert "=== until 2024-05-02 09:00 ===\nI am new." in soul.read(life.SELF_HISTORY)


# --- session.jsonl -------------------------------------------------------------------------


def test_session_resumes_and_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "session.jsonl"
    session = Session(path)
    session.append(Message.user("wake"))
    session.append(Message("assistant", [TextBlock("hello"), ToolCall("t1", "look", {"question": "?"})]))
    session.close()
    with open(path, "ab") as handle:
        handle.write(b'{"type": "message", "message": {"role": "user", "cont')  # kill -9 mid-write
    resumed = Session(path).load()
    assert [m.to_json() for m in resumed.messages] == [m.to_json() for m in session.messages]
    assert "skipped its last line" in resumed.warnings[0]
    assert path.read_bytes().endswith(b"}\n")  # the torn tail is cut, appends start on a clean line
    # The call the process died in is answered as interrupted, never left open.
    history = resumed.history()
    assert history[-1].role == "user"
    assert history[-1].content[0].tool_call_id == "t1"
    assert history[-1].content[0].is_error and history[-1].content[0].content[0].text == INTERRUPTED
    resumed.append(Message.user("again"))
    assert len(Session(path).load().messages) == 3


def test_fold_records_survive_a_restart(tmp_path):
    path = tmp_path / "session.jsonl"
    session = Session(path)
    for i in range(4):
        session.append(Message.user(f"u{i}") if i % 2 == 0 else Message("assistant", [TextBlock(f"a{i}")]))
    session.append_fold("we talked about nothing", 2)
    session.close()
    resumed = Session(path).load()
    assert resumed.fold_summary == "we talked about nothing"
    assert [m.text() for m in resumed.history()] == ["u2", "a3"]


# --- clock -----------------------------------------------------------------------------


async def test_scaled_clock_lives_a_day_in_a_moment():
    start = datetime(2024, 5, 1, 0, 0, tzinfo=UTC)
    clock = ScaledClock(start, scale=86400 / 0.2)
    await clock.sleep(86400)
    assert (clock.now() - start).total_seconds() >= 86400
    wake = asyncio.Event()
    asyncio.get_running_loop().call_later(0.02, wake.set)
    assert await clock.sleep_until_woken(10 * 86400, wake) is True
    assert await clock.sleep_until_woken(60, asyncio.Event()) is False
