"""`soulstack soul` as a real process: kill -9 mid-turn and resume; the brainstem with no key; Ctrl+C."""

import asyncio
import json
import re
import subprocess
import sys

import aiohttp

from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port
from tests.helpers import ROOT, until_real as until
from tests.soul.helpers import same_prefix, start_soul, stop_with_ctrl_c, write_config


async def test_kill_9_mid_turn_and_restart_resumes_the_same_history(tmp_path):
    hold = asyncio.Event()

    async def thinking_forever(request):
        await hold.wait()
        return tool_use("sleep", {"minutes": 60})

    async with RecordingBody() as body, FakeAnthropic() as fake:
        fake.reply(tool_use("diary", {"entry": "I was here before the crash"}), thinking_forever)
        config_path = write_config(tmp_path, body, free_port(), provider="anthropic", id="claude-test")
        env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
        process = start_soul(config_path, tmp_path / "soul.log", **env)
        try:
            await until(lambda: len(fake.bodies) >= 2, what="the second model step")
        finally:
            process.kill()  # SIGKILL, mid-turn: the model is still thinking
            process.wait()
        session = tmp_path / "soul" / "session.jsonl"
        assert [json.loads(line)["message"]["role"] for line in session.read_text().splitlines()] == [
            "user",
            "assistant",
            "user",
        ]

        fake.default = lambda request: tool_use("sleep", {"minutes": 60})
        hold.set()
        process = start_soul(config_path, tmp_path / "soul.log", **env)
        try:
            await until(lambda: len(fake.bodies) >= 3, what="the first step after the restart")
            after = fake.bodies[2]["messages"]
            # The same stream of consciousness: block for block what was sent before the kill, up to its
            # end (cache breakpoints aside: they move with the end of the history).
            assert same_prefix(fake.bodies[1], fake.bodies[2])
            assert "You have just started" in after[2]["content"][-1]["text"]
            assert "I was here before the crash" in after[2]["content"][-2]["text"]  # its diary survived too
            await until(lambda: "waking 1:" in (tmp_path / "soul.log").read_text(), what="the waking's log line")
        finally:
            code = await stop_with_ctrl_c(process)
        log = (tmp_path / "soul.log").read_text()
        assert code == 0 and "Traceback" not in log


async def test_brainstem_lives_with_no_key_and_answers_typed_words_once(tmp_path):
    async with RecordingBody() as body:
        port = free_port()
        config_path = write_config(tmp_path, body, port)
        log_path = tmp_path / "soul.log"
        process = start_soul(config_path, log_path)
        try:
            await until(lambda: "waking 1:" in log_path.read_text(), what="the first waking")
            async with aiohttp.ClientSession() as http:
                async with http.post(
                    f"http://127.0.0.1:{port}/nudge", json={"reason": "your human typed: hello there"}
                ) as response:
                    assert response.status == 202
            await until(lambda: "waking 2:" in log_path.read_text(), what="the nudged waking")
        finally:
            code = await stop_with_ctrl_c(process)
        log = log_path.read_text()
        assert code == 0 and "Traceback" not in log
        assert "WITHOUT a language model" in log
        assert "waking 1: woke: started — tools: body_status, express, diary, sleep — sleeps 20 min [brainstem]" in log
        assert (
            "waking 2: woke: nudged (your human typed: hello there) — tools: body_status, express, speak, diary, sleep"
            in log
        )
        assert body.spoken == [
            "I heard you: \u201chello there\u201d. My mind is away right now; I will think about it when it is back."
        ]
        assert ("express", {"emotion": "happy"}) in body.received
        diary = (tmp_path / "soul" / "DIARY.md").read_text()
        assert "your human typed: hello there" in diary and "\u201chello there\u201d" in diary


async def test_port_flag_moves_the_soul_s_server_and_a_bad_one_is_one_line(tmp_path):
    async with RecordingBody() as body:
        configured, flagged = free_port(), free_port()
        config_path = write_config(tmp_path, body, configured)
        log_path = tmp_path / "soul.log"
        process = start_soul(config_path, log_path, "--port", str(flagged))
        try:
            await until(lambda: "waking 1:" in log_path.read_text(), what="the first waking")
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{flagged}/health") as response:
                    health = await response.json()
                    assert response.status == 200 and health["provider"]["name"] == "brainstem"
                try:
                    async with http.get(f"http://127.0.0.1:{configured}/health"):
                        raise AssertionError("the config's port still answers")
                except aiohttp.ClientConnectorError:
                    pass  # the flag won: nothing listens on nudge.port
        finally:
            assert await stop_with_ctrl_c(process) == 0
    # Every field a running soul's /health answers is in docs/metabolism.md's table of them.
    table = (ROOT / "docs" / "metabolism.md").read_text().split("## /health", 1)[1].split("\n\n|", 1)[1]
    table = table.split("\n\n", 1)[0]
    undocumented = [key for key in health if not re.search(rf"^\|[^|]*`{key}`", table, re.M)]
    assert undocumented == [], f"docs/metabolism.md's /health table lacks {undocumented}"
    bad = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config_path), "--port", "70000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == ["soulstack soul: --port must be an integer >= 0 and <= 65535, not 70000"]
