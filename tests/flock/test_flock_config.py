"""flock.config.json: `soulstack flock --config FILE` (or $FLOCK_CONFIG) as a real process, and the
soul's `flock` keys. A bad value is one line naming the key and a non-zero exit; an unknown key a
warning; a flag wins over the file."""

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys

import aiohttp
import pytest

from soulstack.config_checks import ConfigError, camel, dest, flag_options, spec_of, with_flags
from soulstack.flock import commands
from soulstack.flock.config import FlockSettings, from_dict
from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.nests.harness import NestConfig
from soulstack.soul import config as soul_config
from soulstack.soul.tools.builtin import make_tools
from tests.helpers import free_port
from tests.helpers import ROOT

ENV_KEYS = ("FLOCK_CONFIG", "FLOCK_TOKEN", "BODY_TOKEN", "NUDGE_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL")


def flock_command(*args, env=None):
    clean = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    return [sys.executable, "-m", "soulstack.cli", "flock", *args], {**clean, **(env or {})}


@pytest.mark.parametrize(
    "text, line",
    [
        (
            '{"body": {"url": "http://127.0.0.1:9310", "minIntervalSeconds": -5}}',
            ": body.minIntervalSeconds must be a number >= 0, not -5",
        ),
        ('{"soul": {"url": "127.0.0.1:9202"}}', ': soul.url must be an http:// or https:// URL, not "127.0.0.1:9202"'),
        (
            '{"body": {"quietHours": "22-30"}}',
            ': body.quietHours must be "START-END" hours such as "22-7", not "22-30"',
        ),
        (
            '{"port": 8470,}',
            " is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 15",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(tmp_path, text, line):
    path = tmp_path / "flock.config.json"
    path.write_text(text)
    argv, env = flock_command("--config", str(path))
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"soulstack flock: {path}{line}"]


def test_a_missing_file_says_so():
    argv, env = flock_command(env={"FLOCK_CONFIG": "/nonexistent/flock.config.json"})
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("soulstack flock: /nonexistent/flock.config.json does not exist")


async def test_the_file_from_the_environment_runs_the_flock_and_a_flag_wins(tmp_path):
    file_port, flag_port = free_port(), free_port()
    path = tmp_path / "flock.config.json"
    path.write_text(
        json.dumps(
            {
                "port": file_port,
                "dataDir": "crows",
                "token": "from-the-file",
                "colour": "blue",
                "body": {"url": "http://127.0.0.1:9", "quietHours": "22-7", "volume": 3},
            }
        )
    )
    log = tmp_path / "flock.log"
    argv, env = flock_command("--port", str(flag_port), env={"FLOCK_CONFIG": str(path)})
    process = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(400):
                try:
                    async with http.get(f"http://127.0.0.1:{flag_port}/api/crows") as locked:
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            assert locked.status == 401  # the file's token locks it
            headers = {"Authorization": "Bearer from-the-file"}
            async with http.get(f"http://127.0.0.1:{flag_port}/api/crows", headers=headers) as response:
                assert response.status == 200
        assert (tmp_path / "crows" / "flock.db").exists()  # dataDir, relative to the file
    finally:
        process.terminate()
        process.wait(timeout=20)
    said = log.read_text()
    assert f"flock: {path}: colour is not a key the flock knows; ignored" in said
    assert f"flock: {path}: body.volume is not a key the flock knows; ignored" in said
    assert "Traceback" not in said


def test_every_key_of_the_file_is_a_flag_and_unset_flags_leave_the_file_its_say():
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["flock"])
    in_file = set(flatten(spec_of(FlockSettings)))
    flagged = {".".join(camel(part) for part in path): meta for path, meta in flag_options(FlockSettings)}
    assert in_file <= set(flagged)  # jevBaseUrl and jevModel are flags only
    assert set(flagged) - in_file == {"jevBaseUrl", "jevModel"}
    for meta in flagged.values():
        assert getattr(args, dest(meta)) in (None, os.environ.get(meta.env or "-")), meta.flag  # the file fills it
    settings, _ = from_dict({})
    assert settings.port == 8470 and settings.body.min_interval_seconds == 30
    assert settings.heartbeat_seconds == FlockConfig().heartbeat_s and settings.jev_band == NestConfig().band


def test_the_file_keys_fill_the_settings_and_a_flag_wins():
    settings, warnings = from_dict({"dataDir": "d", "body": {"quietHours": "22-7", "minIntervalSeconds": 5}})
    assert warnings == []
    assert (settings.data_dir, settings.body.quiet_hours, settings.body.min_interval_seconds) == ("d", "22-7", 5)
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["flock", "--body-min-interval", "7", "--port", "9000", "--demo"])
    laid = with_flags(settings, args)
    assert (laid.body.min_interval_seconds, laid.port, laid.demo, laid.data_dir) == (7.0, 9000, True, "d")
    with pytest.raises(dataclasses.FrozenInstanceError):
        laid.port = 1  # type: ignore[misc]


def test_a_mistyped_key_is_a_warning_that_names_the_close_one():
    _, warnings = from_dict({"heartbeatSecond": 3, "body": {"quiethours": "22-7"}})
    assert sorted(warnings) == [
        "body.quiethours is not a key the flock knows (did you mean body.quietHours?); ignored",
        "heartbeatSecond is not a key the flock knows (did you mean heartbeatSeconds?); ignored",
    ]


def flatten(spec, prefix=""):
    for key, rule in spec.items():
        yield from flatten(rule, prefix + key + ".") if isinstance(rule, dict) else [prefix + key]


def test_the_souls_flock_keys_grow_its_tools():
    cfg, warnings = soul_config.from_dict({"flock": {"url": "http://127.0.0.1:8470", "token": "t"}})
    assert warnings == []
    assert {"hand_to_flock", "flock_waiting", "flock_verdict"} <= {tool.name for tool in make_tools(cfg)}
    bare, _ = soul_config.from_dict({})
    assert not {"hand_to_flock", "flock_waiting", "flock_verdict"} & {tool.name for tool in make_tools(bare)}
    with pytest.raises(ConfigError, match=r'^flock.url must be an http:// or https:// URL, not "8470"$'):
        soul_config.from_dict({"flock": {"url": "8470"}})


def test_a_mistyped_flag_is_named_not_the_value_after_it(tmp_path):
    command, env = flock_command("--data", str(tmp_path / "data"), "--soul-interval", "10")
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip() == "soulstack flock: unrecognized argument: --soul-interval (see: soulstack flock --help)"


def test_a_voice_flag_is_checked_before_the_flock_says_it_started_even_when_unused(tmp_path):
    command, env = flock_command("--data", str(tmp_path / "data"), "--quiet-hours", "25-7")  # no --body
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2 and "flock: http://" not in run.stdout
    assert run.stderr.strip() == "soulstack flock: --quiet-hours takes START-END hours such as 22-7, not '25-7'"


async def test_the_start_says_where_the_voice_goes_and_that_a_named_body_is_left_to_the_soul(tmp_path):
    port = free_port()
    command, env = flock_command(
        "--data",
        str(tmp_path / "data"),
        "--port",
        str(port),
        "--soul",
        "http://127.0.0.1:9",
        "--body",
        "http://127.0.0.1:10",
    )
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path
    )
    try:
        lines = [process.stdout.readline() for _ in range(2)]
    finally:
        process.terminate()
        process.wait(10)
    assert lines[1].strip() == (
        "flock: tells the soul at http://127.0.0.1:9 what needs a person (nudges); "
        "the body http://127.0.0.1:10 is not spoken to (one voice per body: the soul's)"
    )


def test_a_locked_flock_says_so_at_start(tmp_path):
    command, env = flock_command("--data", str(tmp_path / "data"), "--port", str(free_port()), env={"FLOCK_TOKEN": "t"})
    flock = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path
    )
    try:
        line = flock.stdout.readline()
    finally:
        flock.terminate()
        flock.wait(timeout=30)
    assert line.startswith("flock: http://") and line.rstrip().endswith("locked: requests need its bearer token"), line


async def test_a_second_flock_on_the_same_data_folder_is_refused_and_the_first_keeps_working(tmp_path):
    data = tmp_path / "data"
    port = free_port()
    command, env = flock_command("--data", str(data), "--port", str(port))
    first = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path
    )
    try:
        line = first.stdout.readline()
        assert line.startswith("flock: http://") and "locked" not in line
        second, env = flock_command("--data", str(data), "--port", str(free_port()))
        run = subprocess.run(second, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.strip() == (
            f"soulstack flock: --data {data}: another flock is running on this folder; "
            "stop it, or give this one another --data"
        )
        for _ in range(100):  # the first still serves
            try:
                async with aiohttp.ClientSession() as http:
                    async with http.get(f"http://127.0.0.1:{port}/api/trust") as response:
                        assert response.status == 200
                        break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("the first flock stopped answering")
    finally:
        first.terminate()
        first.wait(10)


def test_a_data_path_that_is_a_file_and_a_taken_port_are_one_line_with_no_start_line(tmp_path):
    import socket

    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    for args, said in [
        (["--data", str(afile)], f"--data {afile} is a file, not a folder"),
        (["jev-report", "--data", str(afile)], f"--data {afile} is a file, not a folder"),
    ]:
        argv, env = flock_command(*args)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv, env = flock_command("--demo", "--data", str(tmp_path / "data"), "--port", str(port))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert "flock: http://" not in done.stdout, done.stdout  # it never served


def test_a_token_the_page_cannot_keep_is_one_line_at_start(tmp_path):
    """The page keeps the token in a cookie as it is: with a space or an @ the API took it and the page's
    unlock form never could, so the owner was locked out of the page by a token that worked."""
    argv, env = flock_command("--demo", "--data", str(tmp_path / "data"), "--port", str(free_port()))
    done = subprocess.run([*argv, "--token", "p@ssword!"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "the flock's token may hold only letters, digits and . _ ~ + / = -" in done.stderr
