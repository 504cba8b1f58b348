"""tools/demo: its face screen says whose mind the soul has; a second demo leaves the first alone."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import read_until  # the one way a test reads a process's lines until one comes

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout(tmp_path):
    """The real tools/demo with its log, lock and soul in `tmp_path` (SOULSTACK_DEMO_DIR, SOUL_CONFIG)."""
    config = tmp_path / "soul.config.json"
    subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "soul", "--init", "--config", str(config)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return tmp_path


def demo_env(root, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    return {**env, "SOULSTACK_DEMO_DIR": str(root / "demo"), "SOUL_CONFIG": str(root / "soul.config.json"), **extra}


def start_demo(env):
    return subprocess.Popen(
        [str(ROOT / "tools" / "demo")],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def stop_demo(demo):
    """Ctrl+C to the demo's whole process group; if it is not gone in 20 s, SIGKILL, so a failing test
    never leaves a soul on the real port 9202 behind for the tests after it."""
    os.killpg(demo.pid, signal.SIGINT)
    try:
        demo.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(demo.pid, signal.SIGKILL)
        demo.wait(20)
        raise AssertionError("the demo did not stop on Ctrl+C within 20 s") from None


def test_demo_shows_the_mind_and_locks_out_a_second_demo(checkout):
    env = demo_env(checkout)
    first = start_demo(env)
    try:
        seen = read_until(first, "mind: brainstem — no model key", timeout_s=40)
        assert any(f"its log: {checkout}/demo/soul.log" in line for line in seen)
        log = checkout / "demo" / "soul.log"
        # It holds what the person types: theirs alone.
        assert log.stat().st_mode & 0o777 == 0o600 and log.parent.stat().st_mode & 0o777 == 0o700
        before = log.read_bytes()
        second = subprocess.run(
            [str(ROOT / "tools" / "demo")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
        )
        assert second.returncode == 1
        assert f"another demo is running (pid {first.pid})" in second.stderr
        assert (
            log.read_bytes()[: len(before)] == before and b"\0" not in log.read_bytes()
        )  # the first demo's log untouched
    finally:
        stop_demo(first)
    assert not (checkout / "demo" / "lock").exists()  # the lock goes with the demo


def test_demo_says_when_the_model_is_unreachable(checkout):
    # An OpenAI-compatible server that is not running: the status line says so within seconds.
    demo = start_demo(demo_env(checkout, OPENAI_BASE_URL="http://127.0.0.1:9/v1"))
    try:
        read_until(demo, "the model's calls fail", timeout_s=40)
    finally:
        stop_demo(demo)


def test_the_mind_line_for_each_state_of_the_soul():
    from soulstack.adapters.terminal.mind import NO_KEY, mind_line

    claude = {"name": "anthropic", "model": "claude-sonnet-5-5", "fellBackToBrainstem": False}
    assert mind_line({"provider": claude, "alarms": []}) == "claude-sonnet-5-5 (anthropic)"
    assert mind_line({"provider": {"name": "brainstem", "model": ""}, "alarms": []}) == NO_KEY
    failing = [{"code": "provider_failing", "message": "anthropic: 529 overloaded (retrying)"}]
    assert (
        mind_line({"provider": claude, "alarms": failing})
        == "claude-sonnet-5-5 (anthropic) — the model's calls fail, retrying: anthropic: 529 overloaded (retrying)"
    )
    fell_back = dict(claude, fellBackToBrainstem=True)
    assert mind_line({"provider": fell_back, "alarms": failing}) == (
        "claude-sonnet-5-5 (anthropic) — the model's calls fail (anthropic: 529 overloaded (retrying)); "
        "the brainstem stands in, retrying at the next waking"
    )


def test_demo_stops_when_its_soul_cannot_listen(checkout):
    # Something else holds the soul's port: the demo says so in one line and never shows a face.
    import json
    import socket

    config = checkout / "soul.config.json"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        cfg = json.loads(config.read_text())
        cfg["nudge"]["port"] = holder.getsockname()[1]
        config.write_text(json.dumps(cfg))
        done = subprocess.run(
            [str(ROOT / "tools" / "demo")], cwd=ROOT, env=demo_env(checkout), capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 1 and "terminal body at" not in done.stdout, done.stdout
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"tools/demo: port {cfg['nudge']['port']} is already taken (another soul?)")
    ), done.stderr


def test_the_face_serves_and_nudges_where_the_config_says(checkout):
    """A trial's config had other ports: the face came up on 9310 and nudged 9202, which nobody heard."""
    import json

    from tests.helpers import free_port

    config = checkout / "soul.config.json"
    cfg = json.loads(config.read_text())
    body_port, nudge_port = free_port(), free_port()
    cfg["body"]["endpoints"] = {name: f"http://127.0.0.1:{body_port}/{name}" for name in cfg["body"]["endpoints"]}
    cfg["body"]["token"] = "body-secret"
    cfg["nudge"] = {"port": nudge_port, "token": "nudge-secret"}
    config.write_text(json.dumps(cfg))
    demo = start_demo(demo_env(checkout))
    try:
        seen = read_until(demo, "mind: brainstem — no model key", timeout_s=40)
        assert any(f"terminal body at http://127.0.0.1:{body_port}" in line for line in seen), seen
        demo.stdin.write("hello from the demo\n")
        demo.stdin.flush()
        read_until(demo, "the soul got it", timeout_s=40)
    finally:
        stop_demo(demo)


def test_demo_stops_when_its_soul_dies(checkout):
    # The soul starts and dies (its soulDir is a file): the face goes too and the log's last line says why.
    (checkout / "soul").write_text("not a folder")
    demo = start_demo(demo_env(checkout))
    try:
        seen = read_until(demo, "tools/demo: the soul stopped: ", timeout_s=40)
        assert demo.wait(20) == 1
    finally:
        if demo.poll() is None:
            stop_demo(demo)
    assert any("the terminal body powers off." in line for line in seen)
    assert not (checkout / "demo" / "lock").exists()


# --- the first run's install (tools/venv.sh's ensure_venv, shared by every tool) ---------------------

TINY_PROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tiny-soulstack-stand-in"
version = "0"

[tool.setuptools]
py-modules = ["tiny"]
"""


def first_run(root, stderr_on_a_terminal: bool) -> tuple:
    """A tool's first run in `root`, a checkout holding the real tools/venv.sh and a tiny project in
    soulstack's place (the same pip, the same steps, seconds instead of minutes): (exit, what it printed
    on stderr, on stdout)."""
    tool = root / "tools" / "first-run"
    tool.write_text(
        '#!/usr/bin/env bash\nset -euo pipefail\n. "$(dirname "$0")/venv.sh"\nensure_venv runtime\necho ready\n'
    )
    tool.chmod(0o755)
    if not stderr_on_a_terminal:
        done = subprocess.run([str(tool)], capture_output=True, text=True, timeout=300)
        return done.returncode, done.stderr, done.stdout
    import pty

    leader, follower = pty.openpty()
    with subprocess.Popen([str(tool)], stdout=subprocess.PIPE, stderr=follower, text=True) as process:
        os.close(follower)
        said = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the tool is done
                break
            if not chunk:
                break
            said += chunk
        out = process.stdout.read()
        process.wait(300)
    os.close(leader)
    return process.returncode, said.decode(errors="replace").replace("\r\n", "\n"), out


def test_the_first_run_says_each_step_and_shows_pips_progress_on_a_terminal(tmp_path):
    # It was one line ("installing soulstack into .venv") and then 1 min 50 s of silence.
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "venv.sh").write_text((ROOT / "tools" / "venv.sh").read_text())
    (tmp_path / "pyproject.toml").write_text(TINY_PROJECT)
    (tmp_path / "tiny.py").write_text("")
    code, said, out = first_run(tmp_path, stderr_on_a_terminal=False)
    assert code == 0 and out == "ready\n", said
    ours = [line for line in said.splitlines() if line.startswith("first-run: ")]
    assert ours[0] == "first-run: creating .venv (first run only; a few seconds)"
    assert ours[1].startswith("first-run: installing soulstack and the packages it needs into .venv (")
    assert "minutes" in ours[1]  # roughly how long
    assert re.fullmatch(r"first-run: installed in 0 min \d+ s", ours[2]) and len(ours) == 3
    assert "Successfully installed" not in said  # a log (CI): our lines, not pip's
    # Installed: the next run says nothing. A change to pyproject.toml installs again, at a terminal now.
    assert first_run(tmp_path, stderr_on_a_terminal=False)[1:] == ("", "ready\n")
    later = (tmp_path / ".venv" / ".soulstack-installed-runtime").stat().st_mtime + 10
    os.utime(tmp_path / "pyproject.toml", (later, later))
    code, said, out = first_run(tmp_path, stderr_on_a_terminal=True)
    assert code == 0 and out == "ready\n", said
    assert "first-run: installing soulstack and the packages it needs" in said
    assert "Successfully installed tiny-soulstack-stand-in" in said  # pip's own progress, at a terminal
    assert re.search(r"first-run: installed in 0 min \d+ s", said)
