"""A LAN bind is deliberate: every soulstack server, as a real process (`python -m soulstack.cli`).

For the soul, the terminal body, tts, the flock and the serial bridge, told to listen on 0.0.0.0:
- with no token it does not start: exit 2 and one line on stderr saying it will not listen
  "without a token" and naming `--insecure-no-token`;
- with a token (a `--token-file`, or the environment for the soul, never argv) it starts on
  0.0.0.0: reached through another loopback address (127.0.0.2, which only a 0.0.0.0 bind
  answers on) it says 401 without the token and lets the token in; the token is not in
  /proc/PID/cmdline; Ctrl+C stops it with exit 0;
- with `--insecure-no-token` it starts, open, and its log warns that it has NO token.
"""

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port
from tests.soul.helpers import KEYS, write_config

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "lan-s3cret-token"
TOKEN_ENV = ("NUDGE_TOKEN", "CONVERSE_TOKEN", "BODY_TOKEN", "FLOCK_TOKEN", "TTS_TOKEN")

# What each server is told (port and data folder filled in), and a request with the answer it gets when let in.
SERVERS = {
    "soul": (
        lambda port, tmp: ["soul", "--config", str(tmp / "soul.config.json"), "--host", "0.0.0.0", "--port", str(port)],
        ("GET", "/health", None, 200),
    ),
    "body terminal": (
        lambda port, tmp: ["body", "terminal", "--host", "0.0.0.0", "--port", str(port), "--nudge-url="],
        ("POST", "/status", {}, 200),
    ),
    "tts": (lambda port, tmp: ["tts", "--host", "0.0.0.0", "--port", str(port)], ("POST", "/tts", {}, 400)),
    "flock": (
        lambda port, tmp: ["flock", "--host", "0.0.0.0", "--port", str(port), "--data", str(tmp / "crows")],
        ("GET", "/api/waiting", None, 200),
    ),
    "bridge serial": (
        lambda port, tmp: ["bridge", "serial", "--device", "/nonexistent", "--listen", f"0.0.0.0:{port}"],
        ("POST", "/status", {}, 200),
    ),
}


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in KEYS + TOKEN_ENV}
    return {**env, **extra}


def start(argv, log_path, env):
    with open(log_path, "ab") as log:  # the terminal body reads its stdin: a pipe that stays open
        return subprocess.Popen(
            [sys.executable, "-m", "soulstack.cli", *argv],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )


async def first_answer(process, probe, port, log_path, headers=None, timeout=20.0):
    """The status of the first answer to `probe` on 127.0.0.2:`port`, retried until the server listens."""
    method, path, body, _ = probe
    url = f"http://127.0.0.2:{port}{path}"
    async with aiohttp.ClientSession() as http:
        for _ in range(int(timeout / 0.05)):
            if process.poll() is not None:
                raise AssertionError(f"it stopped with {process.returncode}: {log_path.read_text()}")
            try:
                async with http.request(method, url, json=body, headers=headers or {}) as response:
                    return response.status
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
    raise AssertionError(f"nothing answered at {url}: {log_path.read_text()}")


async def stop_with_ctrl_c(process):
    process.send_signal(signal.SIGINT)
    for _ in range(500):
        if process.poll() is not None:
            process.stdin.close()
            return process.returncode
        await asyncio.sleep(0.02)
    process.kill()
    raise AssertionError("it did not stop on Ctrl+C")


@pytest.fixture
async def setting(tmp_path):
    """The folder each server runs in; the soul's config (no nudge.token) and its body in it."""
    async with RecordingBody() as body:
        write_config(tmp_path, body, free_port())
        yield tmp_path


@pytest.mark.parametrize("server", SERVERS)
def test_a_lan_bind_without_a_token_is_refused_in_one_line(server, setting):
    argv, _ = SERVERS[server]
    result = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", *argv(free_port(), setting)],
        cwd=ROOT,
        env=clean_env(),
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert "refusing to listen on 0.0.0.0 without a token" in lines[-1] and "--insecure-no-token" in lines[-1]
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr


def test_the_soul_refuses_before_it_wakes(setting):
    argv, _ = SERVERS["soul"]
    result = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", *argv(free_port(), setting)],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert not (setting / "soul").exists()  # nothing of a life begun


@pytest.mark.parametrize("server", SERVERS)
async def test_with_a_token_it_listens_on_every_address_and_asks_for_it(server, setting):
    argv, probe = SERVERS[server]
    port = free_port()
    log_path = setting / f"{server}.log"
    if server == "soul":  # the soul's tokens live in its config or the environment
        flags, env = [], clean_env(NUDGE_TOKEN=TOKEN)
    else:
        (setting / "token").write_text(TOKEN + "\n")
        (setting / "token").chmod(0o600)
        flags, env = ["--token-file", str(setting / "token")], clean_env()
    process = start(argv(port, setting) + flags, log_path, env)
    try:
        assert await first_answer(process, probe, port, log_path) == 401
        assert await first_answer(process, probe, port, log_path, {"Authorization": f"Bearer {TOKEN}"}) == probe[-1]
        assert TOKEN not in Path(f"/proc/{process.pid}/cmdline").read_bytes().decode(errors="replace")
    finally:
        code = await stop_with_ctrl_c(process)
    log = log_path.read_text()
    assert code == 0 and "Traceback" not in log and "NO token" not in log


@pytest.mark.parametrize("server", SERVERS)
async def test_insecure_no_token_starts_it_open_and_says_so(server, setting):
    argv, probe = SERVERS[server]
    port = free_port()
    log_path = setting / f"{server}.log"
    process = start(argv(port, setting) + ["--insecure-no-token"], log_path, clean_env())
    try:
        assert await first_answer(process, probe, port, log_path) == probe[-1]
    finally:
        code = await stop_with_ctrl_c(process)
    log = log_path.read_text()
    assert code == 0 and "Traceback" not in log
    assert "listening on 0.0.0.0 with NO token (--insecure-no-token)" in log, log
