"""kill -9 while the flock writes nests.json leaves no torn file and loses no nest: a real
`soulstack flock`, killed with its temporary written and not yet renamed, then started again.

To land the kill inside that window every time, the flock runs under strace, which delays each
rename(2) by seconds (its own fault injection; the flock's code is the real one): the temporary
(soulstack.private_files.write_atomically's ".nests.json.<random>.tmp") is complete while the old
nests.json still stands. The next start sweeps the leftover (host/flock/store.py).
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import aiohttp
import pytest

from tests.helpers import free_port
from tests.helpers import ROOT, until_real as until

NESTS = [{"name": "Launch copy", "crows": ["Pepper", "Inky"]}, {"name": "Taxes", "crows": ["Hugin"]}]


def start(data, port, *, slow_renames=False):
    command = [sys.executable, "-m", "soulstack.cli", "flock", "--data", str(data), "--port", str(port)]
    if slow_renames:
        renames = "rename,renameat,renameat2"
        strace = ["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={renames}"]
        command = [*strace, "-e", f"inject={renames}:delay_enter=4s", *command]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": "", "OPENAI_BASE_URL": ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: strace and the flock killed together
    )


async def nests(url):
    async with aiohttp.ClientSession() as http:
        try:
            async with http.get(f"{url}/api/nests") as response:
                return (await response.json())["nests"] if response.status == 200 else None
        except aiohttp.ClientConnectionError:
            return None


def temporaries(data):
    return sorted(name for name in os.listdir(data) if name.endswith(".tmp"))


async def test_kill_9_mid_nests_write_leaves_no_torn_file_and_every_nest(tmp_path):
    if shutil.which("strace") is None:
        print("skipped: strace is not installed (apt install strace)")
        pytest.skip("strace is not installed (apt install strace)")
    data, port = tmp_path / "crows", free_port()
    url = f"http://127.0.0.1:{port}"
    flock = start(data, port)
    try:
        await until(lambda: nests(url), what="the flock to listen")
        async with aiohttp.ClientSession() as http:
            for body in NESTS:
                async with http.post(f"{url}/api/nests", json=body) as response:
                    assert response.status == 201, await response.text()
        kept = await nests(url)
    finally:
        flock.send_signal(signal.SIGINT)
        flock.wait(timeout=20)
    before = (data / "nests.json").read_bytes()

    # Started again under strace: its first nests write (every start mirrors the nests) hangs at
    # the rename, and is killed there.
    flock = start(data, port, slow_renames=True)
    try:
        await until(lambda: temporaries(data), what="nests.json's temporary, written and not yet renamed", timeout=60)
    finally:
        os.killpg(flock.pid, signal.SIGKILL)
        flock.wait(timeout=20)
    left = temporaries(data)
    assert left and all(name.startswith(".nests.json.") for name in left), left  # the kill did land mid-write
    assert (data / "nests.json").read_bytes() == before  # the old file whole, never half of the new

    flock = start(data, port)
    try:
        assert await until(lambda: nests(url), what="the flock to start again") == kept
        assert temporaries(data) == []
        assert json.loads((data / "nests.json").read_text())["nests"] == kept
    finally:
        flock.send_signal(signal.SIGINT)
        _out, err = flock.communicate(timeout=20)
    assert b"Traceback" not in err
