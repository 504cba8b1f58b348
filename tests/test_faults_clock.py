"""A real `soulstack soul` whose clock jumps, through Debian's libfaketime (tools/test installs it).

Backups are kept by when they were written, so a month's jump ahead deletes none; a day is the
local calendar day and only goes forwards, so a clock set back an hour across midnight neither
starts a new day nor grants a second budget; diary lines keep the order they were written in,
each stamped with the clock's time.
"""

import json

import pytest

from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port
from tests.faults import faketime_library
from tests.helpers import until_real as until
from tests.soul.helpers import start_soul, stop_with_ctrl_c, write_config


async def live_once_at(config, log, library, when):
    """Start the soul with its clock at `when` (then running), wait for its first waking, stop it."""
    before = log.read_text().count("waking 1:") if log.exists() else 0
    process = start_soul(config, log, LD_PRELOAD=library, FAKETIME=f"@{when}", FAKETIME_NO_CACHE="1")
    try:
        await until(lambda: log.read_text().count("waking 1:") > before, what=f"a waking at {when}", timeout=40)
    finally:
        assert await stop_with_ctrl_c(process) == 0


async def test_backups_days_and_the_diary_survive_a_clock_that_jumps(tmp_path):
    library = faketime_library()
    if library is None:
        print("skipped: libfaketime is not installed (apt install libfaketime; tools/test does)")
        pytest.skip("libfaketime is not installed")
    async with RecordingBody() as body:
        config = write_config(tmp_path, body, free_port())
        soul_dir, log = tmp_path / "soul", tmp_path / "soul.log"
        backups = soul_dir / "backups"
        for day in range(5, 10):  # five days of backups written before
            (backups / f"2026-03-0{day}").mkdir(parents=True)
            (backups / f"2026-03-0{day}" / "DIARY.md").write_text(f"- 2026-03-0{day} 09:00: day {day}\n")

        await live_once_at(config, log, library, "2026-03-10 00:20:00")
        vitals = json.loads((soul_dir / "VITALS.json").read_text())
        assert vitals["day"] == "2026-03-10" and vitals["wakes"] == 1

        # Set back an hour, across midnight: still 10 March, one budget, counted on.
        await live_once_at(config, log, library, "2026-03-09 23:20:00")
        vitals = json.loads((soul_dir / "VITALS.json").read_text())
        assert vitals["day"] == "2026-03-10" and vitals["wakes"] == 2
        assert [day["day"] for day in vitals["history"]] == []
        stamps = [line[2:18] for line in (soul_dir / "DIARY.md").read_text().splitlines() if line.startswith("- ")]
        assert stamps == ["2026-03-10 00:20", "2026-03-09 23:20"]  # the order written, the clock's time

        # A month ahead: a new day, the old one recorded once, and not one backup deleted.
        await live_once_at(config, log, library, "2026-04-10 00:20:00")
        vitals = json.loads((soul_dir / "VITALS.json").read_text())
        assert vitals["day"] == "2026-04-10" and [day["day"] for day in vitals["history"]] == ["2026-03-10"]
        kept = sorted(folder.name for folder in backups.iterdir())
        assert kept == [f"2026-03-0{day}" for day in range(5, 10)] + ["2026-03-10", "2026-04-10"]
        assert "Traceback" not in log.read_text()
