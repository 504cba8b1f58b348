"""DIARY.md keeps a bounded recent part; its old lines move into the archive, never lost, never doubled.

Real files, real SQLite (host/soul/memory/diary.py, host/soul/memory/archive.py), stackchan-soul's
format beside ours, and for kill -9 real processes cutting a diary while they write it.
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta

from soulstack.soul import life as lifefiles
from soulstack.soul.life import Life, parse_entry
from soulstack.soul.memory import diary
from soulstack.soul.memory.archive import FILENAME as ARCHIVE, Archive
from tests.helpers import ROOT

PREAMBLE = "# 日记\n\n"


def long_diary(count: int) -> list:
    """`count` diary lines, every third in stackchan-soul's format, with a continuation line now and then."""
    lines, when = [], datetime(2024, 1, 1, 8, 0)
    for n in range(count):
        when += timedelta(minutes=37)
        if n == 0:
            lines.append(
                f"- {when.year}/{when.month}/{when.day} {when.hour}:{when.minute:02d}:05: 妹妹米娅搬到了里斯本"
            )
        elif n % 3 == 0:
            lines.append(f"- {when.year}/{when.month}/{when.day} {when.hour}:{when.minute:02d}:05: 旧的一行 {n}")
        else:
            lines.append(f"- {when:%Y-%m-%d %H:%M}: line {n} about the plant by the window")
        if n == 5:
            lines[-1] += "\u2028a line separator inside a line"  # a line ends at a newline only
        if n % 50 == 7:
            lines.append(f"  (more of line {n})")
    return lines


def whole(path, archive) -> list:
    """The diary's whole life as lines: the preamble, what moved into the archive, what the file keeps."""
    now = path.read_text(encoding="utf-8").split("\n")[:-1]
    head = next(i for i, line in enumerate(now) if parse_entry(line))
    return now[:head] + archive.moved_lines(lifefiles.DIARY) + now[head:]


def test_a_long_diary_is_cut_to_its_recent_part_and_nothing_is_lost(tmp_path):
    life = Life(tmp_path)
    lines = long_diary(3000)
    life.write(lifefiles.DIARY, PREAMBLE + "\n".join(lines) + "\n")
    archive = Archive(tmp_path / ARCHIVE)
    moved = diary.keep_light(life, archive)
    path = life.path(lifefiles.DIARY)
    assert moved > 2000 and path.stat().st_size <= diary.KEEP_BYTES + len(PREAMBLE.encode()) + 200
    text = path.read_text(encoding="utf-8")
    assert text.startswith(PREAMBLE) and text.endswith(lines[-1] + "\n")  # the title stays, the newest lines too
    assert whole(path, archive) == (PREAMBLE + "\n".join(lines)).split("\n")  # every line once, in order
    assert not path.with_name(lifefiles.DIARY + diary.BEFORE_ARCHIVE).exists()  # verified: the copy is gone
    kept = life.entries(lifefiles.DIARY)
    assert kept and all(isinstance(when, datetime) for when, _ in kept)  # both formats still read
    assert parse_entry(text.splitlines()[2])  # the kept part begins on an entry, not on a continuation
    old = archive.search("米娅 里斯本", datetime(2025, 1, 1), kinds=["diary"])  # the oldest line is findable
    assert [(hit.at, hit.text) for hit in old] == [("2024-01-01 08:37", "妹妹米娅搬到了里斯本")]
    assert diary.keep_light(life, archive) == 0  # short now: nothing more moves
    archive.close()


def test_a_short_diary_is_left_as_it_is(tmp_path):
    life = Life(tmp_path)
    life.write(lifefiles.DIARY, "\n".join(long_diary(20)) + "\n")
    before = life.read(lifefiles.DIARY)
    archive = Archive(tmp_path / ARCHIVE)
    assert diary.keep_light(life, archive) == 0
    assert life.read(lifefiles.DIARY) == before and archive.moved_lines(lifefiles.DIARY) == []
    archive.close()


def test_kill_9_after_the_archive_committed_before_the_file_was_rewritten(tmp_path):
    # That moment made by the real writer: the archive holds the lines and the note, the file is untouched;
    # the soul appended nothing yet (the cut is finished at start), but a line after it would be kept too.
    life = Life(tmp_path)
    lines = long_diary(3000)
    life.write(lifefiles.DIARY, "\n".join(lines) + "\n")
    archive = Archive(tmp_path / ARCHIVE)
    stored = diary.store_cut(life, archive)
    assert stored and life.read(lifefiles.DIARY).count("\n") == 3000 + 3000 // 50
    life.add_entry(lifefiles.DIARY, datetime(2024, 6, 1, 9, 0), "written after the restart")
    assert diary.keep_light(life, archive) == 0  # the noted cut is made; nothing is stored twice
    path = life.path(lifefiles.DIARY)
    assert whole(path, archive) == lines + ["- 2024-06-01 09:00: written after the restart"]
    assert not path.with_name(lifefiles.DIARY + diary.BEFORE_ARCHIVE).exists()
    archive.close()


WRITER = """
import sys
from datetime import datetime, timedelta
from soulstack.soul import life as lifefiles
from soulstack.soul.life import Life
from soulstack.soul.memory import diary
from soulstack.soul.memory.archive import Archive
life = Life(sys.argv[1])
archive = Archive(life.dir / "archive.sqlite3")
n = len(life.entries(lifefiles.DIARY)) + len(archive.moved_lines(lifefiles.DIARY))
diary.keep_light(life, archive, trim_at=4000, keep=2000)
while True:
    life.add_entry(lifefiles.DIARY, datetime(2024, 1, 1) + timedelta(minutes=n), f"line {n} " + "x" * 60)
    print("wrote", n + 1, flush=True)
    n += 1
    diary.keep_light(life, archive, trim_at=4000, keep=2000)
"""


def start_writer(folder):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], stdout=subprocess.PIPE, text=True, env=env)


def acknowledged(lines) -> int:
    parts = [line.split() for line in lines]
    return max((int(p[1]) for p in parts if len(p) == 2 and p[0] == "wrote" and p[1].isdigit()), default=0)


def numbers(folder) -> list:
    """The number of every diary line of the life (archive, then file), in order, after a restart's finish."""
    life, archive = Life(folder), Archive(folder / ARCHIVE)
    try:
        diary.keep_light(life, archive, trim_at=4000, keep=2000)
        lines = archive.moved_lines(lifefiles.DIARY) + life.read(lifefiles.DIARY).splitlines()
    finally:
        archive.close()
    return [int(parse_entry(line)[1].split()[1]) for line in lines]


def test_kill_9_while_the_cut_waits_on_the_archive_loses_nothing(tmp_path):
    life = Life(tmp_path)
    life.write(lifefiles.DIARY, "".join(f"- 2023-01-01 00:00: line {n} {'x' * 60}\n" for n in range(100)))
    Archive(tmp_path / ARCHIVE).close()
    lock = sqlite3.connect(tmp_path / ARCHIVE, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the writer's cut now waits inside its transaction
    writer = start_writer(tmp_path)
    time.sleep(1.5)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    lock.execute("ROLLBACK")
    lock.close()
    assert writer.stdout.read() == ""  # it never got past the cut
    assert numbers(tmp_path) == list(range(100))


def test_kill_9_at_random_moments_never_loses_or_doubles_a_line(tmp_path):
    acked, trial, cuts = 0, 0, 0
    while trial < 6 or (cuts == 0 and trial < 20):
        writer = start_writer(tmp_path)
        lines = [writer.stdout.readline()]  # it has started
        time.sleep(0.05 + 0.06 * (trial % 6))
        writer.send_signal(signal.SIGKILL)
        lines += writer.stdout.read().splitlines()
        writer.wait()
        acked = max(acked, acknowledged(lines))
        found = numbers(tmp_path)
        assert found == list(range(len(found))) and len(found) >= acked  # once each, in order, none lost
        archive = Archive(tmp_path / ARCHIVE)
        cuts = len(archive.moved_lines(lifefiles.DIARY))
        archive.close()
        trial += 1
    assert cuts > 0 and Life(tmp_path).path(lifefiles.DIARY).stat().st_size <= 4000 + 200


# --- a real soul ------------------------------------------------------------------------------


async def test_a_soul_with_a_long_old_diary_migrates_it_at_start_and_reads_any_day_back(tmp_path):
    from soulstack.fakes.soul_body import RecordingBody
    from soulstack.soul.tools.recall import diary_day
    from tests.soul.test_recall import a_brainstem_soul, call

    folder = tmp_path / "soul"
    folder.mkdir()
    today = datetime.now().replace(hour=9, minute=0, second=0, microsecond=0)
    old = today - timedelta(days=200)
    lines = [f"- {old.year}/{old.month}/{old.day} 21:05:09: 大哥今天给我看了一只翠鸟"]  # stackchan-soul's format
    lines += [
        f"- {today - timedelta(days=199 - n // 20, minutes=n % 20):%Y-%m-%d %H:%M}: quiet {n}" for n in range(4000)
    ]
    (folder / "DIARY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    async with RecordingBody() as body:
        soul = a_brainstem_soul(tmp_path, body, persona={"name": "小栈", "human": "大哥", "language": "zh"})
        path = soul.life.path(lifefiles.DIARY)
        assert path.stat().st_size <= diary.KEEP_BYTES + 200
        assert not path.with_name(lifefiles.DIARY + diary.BEFORE_ARCHIVE).exists()
        said, ok = await call(soul, "read_diary", days_ago=200)  # a day long gone from the file
        assert ok and said.splitlines() == [f"- {old:%Y-%m-%d} 21:05: 大哥今天给我看了一只翠鸟"]
        said, ok = await call(soul, "read_diary", query="翠鸟")
        assert ok and said.splitlines() == [f"- {old:%Y-%m-%d} 21:05: 大哥今天给我看了一只翠鸟"]
        said, ok = await call(soul, "recall", query="翠鸟")
        assert ok and "大哥今天给我看了一只翠鸟" in said
        assert len(diary_day(soul, (today - timedelta(days=150)).date())) == 20  # a day's lines, each once
        said, ok = await call(soul, "read_diary")  # the latest lines: from the file's recent part
        assert ok and said.splitlines()[-1] == lines[-1]
        soul.session.close()
