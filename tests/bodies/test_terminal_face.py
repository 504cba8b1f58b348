"""The terminal face says what the soul is doing (thinking, asleep until when), and the brainstem's
answers end each sentence once (issue 34, item 11)."""

import json
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from io import StringIO

from soulstack.adapters.terminal.mind import state_line
from soulstack.adapters.terminal.screen import Scene, Screen, frame


def test_the_state_line_for_each_state_of_the_soul():
    assert state_line({"state": "thinking"}) == "thinking..."
    assert state_line({"state": "asleep", "asleepUntil": "2026-12-01T14:05:09+01:00"}) == (
        "asleep until 14:05 (what you type wakes it sooner)"
    )
    assert state_line({"state": "asleep", "asleepUntil": None}) == "asleep"
    assert state_line({}) == ""  # an older soul that does not say


def test_the_face_shows_the_state_under_the_mind_line():
    scene = Scene(mind="brainstem", state="asleep until 14:05 (what you type wakes it sooner)")
    assert "  mind: brainstem\n  soul: asleep until 14:05" in frame(scene)
    # Through a pipe, only what changed is a new line: the soul's state changes each waking, its mind seldom.
    from soulstack.adapters.terminal.body import TerminalBody

    out = StringIO()
    body = TerminalBody(Screen(out, live=False))
    body.show_mind("brainstem", "thinking...")
    body.show_mind("brainstem", "asleep until 14:05 (what you type wakes it sooner)")
    assert out.getvalue() == (
        "mind: brainstem\nsoul: thinking...\nsoul: asleep until 14:05 (what you type wakes it sooner)\n"
    )


def test_a_living_souls_health_says_it_is_asleep_and_until_when(tmp_path):
    # A real soul on its brainstem: after its first waking /health says asleep, with an alarm ahead.
    config = tmp_path / "soul.config.json"
    subprocess.run([sys.executable, "-m", "soulstack.cli", "soul", "--init", "--config", str(config)], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    soul = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config), "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = None
        while url is None:
            line = soul.stdout.readline()
            assert line, "the soul stopped before listening"
            if "listening on http://127.0.0.1:" in line:
                url = line.split("listening on ", 1)[1].split()[0].rstrip(",")
        deadline, health = time.monotonic() + 40, {}
        while time.monotonic() < deadline and health.get("state") != "asleep":
            health = json.loads(urllib.request.urlopen(f"{url}/health", timeout=10).read())
            time.sleep(0.3)
        assert health["state"] == "asleep", health.get("state")
        until = datetime.fromisoformat(health["asleepUntil"])
        assert 0 < (until - datetime.now(until.tzinfo)).total_seconds() <= 24 * 3600
        assert state_line(health).startswith(f"asleep until {until.strftime('%H:%M')}")
    finally:
        soul.terminate()
        soul.wait(20)


def test_the_brainstems_answer_ends_a_question_once():
    from soulstack.llm.brainstem import said
    from soulstack.soul.prompts import en, zh

    answer = en.TEXT["brainstem"]["answer"]
    assert said(answer, "what is your name?").startswith("I heard you: \u201cwhat is your name?\u201d My mind")
    assert said(answer, "hello").startswith("I heard you: \u201chello\u201d. My mind")
    assert said(en.TEXT["brainstem"]["heard"], "\u201care you there?\u201d") == " Heard: \u201care you there?\u201d"
    assert "\u201d\u3002" not in said(zh.TEXT["brainstem"]["answer"], "你好吗？")
