"""A soul killed -9 during the check of its first start's migration (session.jsonl into the archive)
left session.jsonl.before-archive behind for good: a copy of the whole old life (20 MB for 50,000
lines), never removed and never mentioned. The next start finishes the check and removes it, or
keeps it and says why.

A real `soulstack soul` (on its brainstem), its body a real Body Protocol server on loopback. To land
the kill inside the check every time, its first start runs under strace, whose fault injection
kills it with SIGKILL at the unlink(2) of the copy: the check has read everything, the copy still
stands (the soul's code is the real one).
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.memory.session import BEFORE_ARCHIVE, life_records
from tests.helpers import free_port
from tests.helpers import ROOT, until_real as until
from tests.soul.helpers import KEYS, start_soul, stop_with_ctrl_c, write_config
from tests.soul.test_archive import old_session

needs_strace = pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed (apt install strace)")


def killed_at_the_copys_unlink(config_path, backup, log_path) -> int:
    """The soul's first start under strace: SIGKILL at the unlink of `backup`; its exit status."""
    unlinks = "unlink,unlinkat"
    strace = ["strace", "-f", "-qq", "-o", os.devnull, "-P", str(backup), "-e", f"trace={unlinks}"]
    command = [*strace, "-e", f"inject={unlinks}:signal=SIGKILL"]
    command += [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config_path)]
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    with open(log_path, "ab") as log:
        return subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, timeout=120).returncode


def an_old_life(tmp_path) -> tuple:
    """A soulDir whose session.jsonl is from before the archive: 3,000 messages, two folds."""
    soul_dir = tmp_path / "soul"
    soul_dir.mkdir(mode=0o700)
    path = soul_dir / "session.jsonl"
    records = old_session(path, 3000, {1200: (1000, "the first months"), 2600: (2500, "the autumn")})
    return path, records


@needs_strace
async def test_the_next_start_finishes_the_check_and_removes_the_copy(tmp_path):
    path, records = an_old_life(tmp_path)
    backup = path.with_name(path.name + BEFORE_ARCHIVE)
    log_path = tmp_path / "soul.log"
    async with RecordingBody() as body:
        config_path = write_config(tmp_path, body, free_port())
        assert killed_at_the_copys_unlink(config_path, backup, log_path) == -signal.SIGKILL
        assert backup.exists() and json.loads(path.read_text().splitlines()[0])["type"] == "archived"
        process = start_soul(config_path, log_path)
        try:
            await until(lambda: "listening on" in log_path.read_text(), what="the second start to listen")
        finally:
            assert await stop_with_ctrl_c(process) == 0
    log = log_path.read_text()
    assert not backup.exists(), log  # the check was finished: the copy is gone
    assert "finishing the check of an earlier start's migration" in log and "the copy is removed" in log
    lived = [r for r in life_records(path) if r.get("at") == records[0]["at"]]  # what the second start added: after
    assert lived == records  # nothing lost, nothing twice, in order


async def test_a_copy_that_does_not_match_is_kept_and_every_start_says_why(tmp_path):
    # The copy a killed check left, then changed (a record the life does not hold): a real soul keeps it.
    path, records = an_old_life(tmp_path)
    backup = path.with_name(path.name + BEFORE_ARCHIVE)
    log_path = tmp_path / "soul.log"
    async with RecordingBody() as body:
        config_path = write_config(tmp_path, body, free_port())
        for start in range(2):
            if start == 1:  # after the migration: a copy that is not the life
                changed = records[:5] + [{"type": "message", "message": {"role": "user", "content": []}}]
                backup.write_text("".join(json.dumps(r) + "\n" for r in changed))
            process = start_soul(config_path, log_path)
            try:
                await until(lambda: log_path.read_text().count("listening on") == start + 1, what="the soul to listen")
            finally:
                assert await stop_with_ctrl_c(process) == 0
    log = log_path.read_text()
    assert backup.exists() and "the copy is removed" in log  # the first start's own migration was verified
    assert (
        "record 6 of the old file is not the life's record 6" in log and "kept as session.jsonl.before-archive" in log
    )
