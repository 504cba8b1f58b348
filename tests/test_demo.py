"""tools/demo: its face screen says whose mind the soul has; a second demo leaves the first alone."""

import os
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
