"""The shell fence (host/soul/tools/shell.py): only shell.allow runs, never through /bin/sh unless
configured; timeouts, the output cap, /health and the log; and the soul refusing to start with
its shell behind an open door.

The model is the real anthropic SDK against the scripted fake (host/fakes/anthropic_api.py):
it asks for `shell` the way a model that obeys whatever text it was shown would.
"""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from soulstack.clocks import StepClock
from soulstack.errors import UsageError
from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.types import ToolCall
from soulstack.soul import config
from soulstack.soul.run import build_soul, run_soul
from soulstack.soul.tools.shell import shell_exposure_problem
from tests.helpers import free_port
from tests.helpers import ROOT, until, until_real
from tests.soul.helpers import (
    AFTERNOON,
    Running,
    anthropic_model,
    make_cfg,
    sleep_forever,
    start_soul,
    stop_with_ctrl_c,
    write_config,
)


def result_of(body) -> dict:
    """The first tool result in the last message of a request the model received."""
    block = body["messages"][-1]["content"][0]
    assert block["type"] == "tool_result"
    return {
        "error": bool(block.get("is_error")),
        "text": "\n".join(b["text"] for b in block["content"] if b["type"] == "text"),
    }


async def health(running) -> dict:
    async with aiohttp.ClientSession() as http:
        async with http.get(running.url + "/health") as response:
            return await response.json()


# --- config -------------------------------------------------------------------------------------


def test_the_fence_is_shut_by_default_and_its_keys_are_checked():
    cfg, _ = config.from_dict({"shell": {"enabled": True}})
    assert cfg.shell.allow == [] and cfg.shell.interpreter is False
    cfg, _ = config.from_dict({"shell": {"allow": ["uptime", "df -h", "git status"]}})
    assert cfg.shell.allow == ["uptime", "df -h", "git status"]
    for shell, message in [
        ({"allow": "uptime"}, 'shell.allow must be a list of commands such as ["uptime", "df -h"], not "uptime"'),
        (
            {"allow": ["uptime", 3]},
            'shell.allow must be a list of commands such as ["uptime", "df -h"], not ["uptime", 3]',
        ),
        ({"allow": ["uptime", "  "]}, 'shell.allow[1] must name a command, not "  "'),
        (
            {"allow": ['echo "open']},
            'shell.allow[0] cannot be read as a command (No closing quotation): "echo \\"open"',
        ),
        ({"interpreter": "no"}, 'shell.interpreter must be true or false, not "no"'),
    ]:
        with pytest.raises(config.ConfigError) as raised:
            config.from_dict({"shell": shell})
        assert str(raised.value) == message


# --- who may reach a soul with a shell --------------------------------------------------------------


def exposure(host, shell=True, **sections):
    cfg, _ = config.from_dict({"shell": {"enabled": shell}, **sections})
    return shell_exposure_problem(cfg, host)


def test_a_shell_needs_loopback_or_every_door_locked():
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert exposure(host) is None, host
    for host in ("0.0.0.0", "::", "", "192.168.1.20", "soul.local"):
        assert "without nudge.token" in exposure(host), host
    assert exposure("0.0.0.0", shell=False) is None  # no shell: not this rule's business
    assert exposure("0.0.0.0", nudge={"token": "n"}) is None  # converse falls back to nudge.token
    assert exposure("0.0.0.0", nudge={"token": "n"}, converse={"token": "c"}) is None
    assert exposure("0.0.0.0", converse={"token": "c"}) is not None  # /nudge still open
    assert exposure("0.0.0.0") == (
        "shell.enabled is true and the soul listens on 0.0.0.0 without nudge.token, so anyone who can reach it "
        "could make it run commands; set nudge.token or listen on 127.0.0.1 (--host)"
    )


def test_run_soul_refuses_before_anything_starts(tmp_path):
    # Whatever the command line allowed (a general --insecure-no-token included), run_soul
    # itself refuses: nothing is built, nothing listens.
    cfg, _ = config.from_dict({"soulDir": str(tmp_path / "soul"), "shell": {"enabled": True, "allow": ["uptime"]}})
    with pytest.raises(UsageError) as raised:
        run_soul(cfg, host="0.0.0.0")
    assert str(raised.value).startswith("shell.enabled is true and the soul listens on 0.0.0.0 without nudge.token")
    assert not (tmp_path / "soul").exists()


async def test_serve_and_live_refuses_too(tmp_path):
    async with RecordingBody() as body:
        soul = build_soul(make_cfg(tmp_path, body, shell={"enabled": True}), model=None)
        from soulstack.soul.run import StartError, serve_and_live

        with pytest.raises(StartError):
            await serve_and_live(soul, host="0.0.0.0")
        await soul.body.close()


# --- a model asks, the fence answers ------------------------------------------------------------------


async def test_only_allowed_commands_run_and_nothing_chains_past_the_fence(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="soulstack.soul.shell")
    home = tmp_path / "soul"
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(
            tool_use("shell", {"command": "echo $HOME"}),
            tool_use("shell", {"command": "touch made-by-touch"}),
            tool_use("shell", {"command": "echo hi; touch made-by-semicolon"}),
            tool_use("shell", {"command": "echo hi && touch made-by-and | cat `touch made-by-tick`"}),
            tool_use("shell", {"command": "/bin/echo not the allowed echo"}),
            tool_use("shell", {"command": 'echo "unclosed'}),
            tool_use("shell", {"command": "pwd"}),
            tool_use("sleep", {"minutes": 60}),
        )
        cfg = make_cfg(tmp_path, body, shell={"enabled": True, "allow": ["echo", "pwd"]})
        clock = StepClock(AFTERNOON)
        clock.hold()
        soul = build_soul(cfg, clock=clock, model=anthropic_model(fake))
        async with Running(soul) as running:
            await until(lambda: clock.held == 1, what="the sleep after the shell calls")
            seen = await health(running)

        tool = next(t for t in fake.bodies[0]["tools"] if t["name"] == "shell")
        assert "`echo`, `pwd`" in tool["description"] and "There is no shell" in tool["description"]
        results = [result_of(request) for request in fake.bodies[1:8]]
        assert results[0] == {"error": False, "text": "exit status 0\n$HOME\n"}  # no shell: no expansion
        assert results[1]["error"] and results[1]["text"] == (
            'refused: "touch made-by-touch" is not an allowed command, so nothing ran (allowed: "echo", "pwd"). '
            "The owner can add it to shell.allow in the soul's config."
        )
        assert results[2] == {"error": False, "text": "exit status 0\nhi; touch made-by-semicolon\n"}
        assert results[3] == {
            "error": False,
            "text": "exit status 0\nhi && touch made-by-and | cat `touch made-by-tick`\n",
        }
        assert results[4]["error"] and "is not an allowed command" in results[4]["text"]  # a path is not the name
        assert results[5] == {"error": True, "text": "could not read the command (No closing quotation); nothing ran"}
        assert results[6] == {"error": False, "text": f"exit status 0\n{home}\n"}  # in soulDir
        assert sorted(p.name for p in home.iterdir() if p.name.startswith("made-by")) == []

        assert seen["shell"] == {
            "enabled": True,
            "interpreter": False,
            "allow": ["echo", "pwd"],
            "runs": 4,
            "refusals": 3,
            "recent": [
                {"command": command, "at": "2024-05-01T14:00:00+00:00", "outcome": outcome}
                for command, outcome in [
                    ("echo $HOME", "exit 0"),
                    ("touch made-by-touch", "refused: not on shell.allow"),
                    ("echo hi; touch made-by-semicolon", "exit 0"),
                    ("echo hi && touch made-by-and | cat `touch made-by-tick`", "exit 0"),
                    ("/bin/echo not the allowed echo", "refused: not on shell.allow"),
                    ('echo "unclosed', "refused: unreadable (No closing quotation)"),
                    ("pwd", "exit 0"),
                ]
            ],
        }
        lines = [record.getMessage() for record in caplog.records if record.name == "soulstack.soul.shell"]
        assert lines[:2] == ['shell "echo $HOME": exit 0', 'shell "touch made-by-touch": refused: not on shell.allow']
        assert len(lines) == 7


async def test_a_prefix_allows_only_what_starts_with_all_its_words(tmp_path):
    async with RecordingBody() as body:
        soul = build_soul(
            make_cfg(tmp_path, body, shell={"enabled": True, "allow": ["git status", "uname -s"]}), model=None
        )
        (tmp_path / "soul").mkdir(exist_ok=True)
        ran = {}
        for command in ("uname -s", "uname -s -n", "uname", "uname -a", "git log"):
            result, ok = await soul.toolbox.run(soul, ToolCall("1", "shell", {"command": command}))
            ran[command] = ok or "not an allowed command" not in result.content[0].text
        assert ran == {"uname -s": True, "uname -s -n": True, "uname": False, "uname -a": False, "git log": False}
        await soul.body.close()


async def test_an_empty_list_refuses_everything_and_says_so(tmp_path):
    async with RecordingBody() as body:
        soul = build_soul(make_cfg(tmp_path, body, shell={"enabled": True}), model=None)
        assert "allowed none yet" in soul.toolbox.tools["shell"].description
        result, ok = await soul.toolbox.run(soul, ToolCall("1", "shell", {"command": "true"}))
        assert not ok and "(allowed: none)" in result.content[0].text
        result, ok = await soul.toolbox.run(soul, ToolCall("2", "shell", {"command": "  "}))
        assert not ok and result.content[0].text == "the command is empty; nothing ran"
        assert soul.toolbox.tools["shell"].fence.refusals == 2
        await soul.body.close()


async def test_timeout_kills_the_whole_group_and_long_output_is_cut(tmp_path):
    async with RecordingBody() as body:
        shell = {
            "enabled": True,
            "timeoutSeconds": 1,
            "maxOutputChars": 100,
            "allow": ["sh -c", "seq", "no-such-program-x"],
        }
        soul = build_soul(make_cfg(tmp_path, body, shell=shell), model=None)
        home = tmp_path / "soul"
        home.mkdir(exist_ok=True)
        # The owner allowed `sh -c` here, so a child in the background is possible: it dies with the group.
        result, ok = await soul.toolbox.run(
            soul, ToolCall("1", "shell", {"command": "sh -c 'sleep 300 & echo $! > child; wait'"})
        )
        assert not ok and result.content[0].text == "killed after 1 s without finishing"
        child = int((home / "child").read_text())
        await until(lambda: gone_or_zombie(child), timeout=5, what="the child to die")
        result, ok = await soul.toolbox.run(soul, ToolCall("2", "shell", {"command": "seq 1 5000"}))
        text = result.content[0].text
        assert (
            ok
            and "characters cut" in text
            and text.startswith("exit status 0\n1\n2\n")
            and text.endswith("4999\n5000\n")
        )
        assert len(text) < 200
        result, ok = await soul.toolbox.run(soul, ToolCall("3", "shell", {"command": "no-such-program-x"}))
        assert not ok and result.content[0].text.startswith('could not start "no-such-program-x": ')
        outcomes = [run["outcome"] for run in soul.toolbox.tools["shell"].fence.health(soul.tz)["recent"]]
        assert outcomes[0] == "killed after 1 s without finishing" and outcomes[1] == "exit 0"
        assert outcomes[2].startswith("not started: ")
        await soul.body.close()


def gone_or_zombie(pid) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # dead, waiting for a parent to reap it


async def test_the_interpreter_is_a_shell_and_the_list_checks_only_the_first_words(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/home/of-the-soul")
    async with RecordingBody() as body:
        soul = build_soul(
            make_cfg(tmp_path, body, shell={"enabled": True, "interpreter": True, "allow": ["echo"]}), model=None
        )
        home = tmp_path / "soul"
        home.mkdir(exist_ok=True)
        assert "through /bin/sh" in soul.toolbox.tools["shell"].description
        result, ok = await soul.toolbox.run(soul, ToolCall("1", "shell", {"command": "echo $HOME"}))
        assert ok and result.content[0].text == "exit status 0\n/home/of-the-soul\n"
        result, ok = await soul.toolbox.run(soul, ToolCall("2", "shell", {"command": "touch made"}))
        assert not ok and not (home / "made").exists()
        # What docs/soul.md warns of: past the first words, /bin/sh does what it is told.
        result, ok = await soul.toolbox.run(soul, ToolCall("3", "shell", {"command": "echo ok ; touch made"}))
        assert ok and (home / "made").exists()
        await soul.body.close()


async def test_commands_do_not_see_the_soul_s_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-very-secret")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "also-secret")
    monkeypatch.setenv("SOUL_PLAIN_SETTING", "fine to see")
    async with RecordingBody() as body:
        soul = build_soul(
            make_cfg(tmp_path, body, shell={"enabled": True, "allow": ["env"], "maxOutputChars": 100000}), model=None
        )
        (tmp_path / "soul").mkdir(exist_ok=True)
        result, ok = await soul.toolbox.run(soul, ToolCall("1", "shell", {"command": "env"}))
        text = result.content[0].text
        assert ok and "SOUL_PLAIN_SETTING=fine to see" in text and "PATH=" in text
        assert "sk-very-secret" not in text and "also-secret" not in text
        await soul.body.close()


# --- the real process ---------------------------------------------------------------------------------


def shell_config(tmp_path, body, port, **shell):
    path = write_config(tmp_path, body, port, provider="anthropic", id="claude-test")
    raw = json.loads(path.read_text())
    raw["shell"] = {"enabled": True, **shell}
    path.write_text(json.dumps(raw))
    return path


async def test_the_process_runs_an_allowed_command_on_loopback_and_health_shows_it(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_forever) as fake:
        fake.reply(
            tool_use("shell", {"command": "echo $HOME; touch nope"}), tool_use("shell", {"command": "touch nope"})
        )
        port = free_port()
        config_path = shell_config(tmp_path, body, port, allow=["echo"])
        log_path = tmp_path / "soul.log"
        env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
        process = start_soul(config_path, log_path, "--host", "127.0.0.1", **env)
        try:
            await until_real(lambda: len(fake.bodies) >= 3, what="the model reading both shell answers")
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/health") as response:
                    shell = (await response.json())["shell"]
        finally:
            code = await stop_with_ctrl_c(process)
        assert code == 0
        assert result_of(fake.bodies[1]) == {"error": False, "text": "exit status 0\n$HOME; touch nope\n"}
        assert result_of(fake.bodies[2])["error"]
        assert not (tmp_path / "soul" / "nope").exists()
        assert (shell["runs"], shell["refusals"], [run["outcome"] for run in shell["recent"]]) == (
            1,
            1,
            ["exit 0", "refused: not on shell.allow"],
        )
        log = log_path.read_text()
        assert 'soul.shell: shell "echo $HOME; touch nope": exit 0' in log
        assert 'soul.shell: shell "touch nope": refused: not on shell.allow' in log


def test_the_process_on_every_address_without_a_token_is_one_line_and_exit_2(tmp_path):
    body = type("Body", (), {"endpoints": lambda self: {}})()
    config_path = shell_config(tmp_path, body, free_port(), allow=["uptime"])
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI", "SOUL_CONFIG"))}
    done = subprocess.run(
        [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config_path), "--host", "0.0.0.0"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = done.stderr.strip().splitlines()
    # One line, exit 2. (The general LAN-bind refusal may speak first; either way the soul does not start.)
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("soulstack soul: ") and "token" in lines[0]
    assert not (tmp_path / "soul").exists()
