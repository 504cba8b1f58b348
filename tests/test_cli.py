"""The `soulstack` command itself: help lists what is built, --version, usage mistakes."""

import importlib.metadata
import re
import subprocess

import pytest


def run(soulstack_cmd, *args):
    return subprocess.run([*soulstack_cmd, *args], capture_output=True, text=True, timeout=60)


def test_help_lists_every_built_subcommand(soulstack_cmd):
    done = run(soulstack_cmd, "--help")
    assert done.returncode == 0
    for name in ("soul", "body-check", "body", "bridge", "logs", "tts", "flock", "flash", "service"):
        assert f"    {name}" in done.stdout, name


def test_version_names_the_installed_package(soulstack_cmd):
    done = run(soulstack_cmd, "--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"soulstack {importlib.metadata.version('soulstack')}"


def test_no_subcommand_prints_help_and_exits_2(soulstack_cmd):
    done = run(soulstack_cmd)
    assert done.returncode == 2
    assert "COMMAND" in done.stdout


def test_a_user_mistake_is_one_line_and_exit_2(soulstack_cmd):
    done = run(soulstack_cmd, "body-check", "not-a-url")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert done.stderr.startswith("soulstack body-check: ")


def test_argparse_mistakes_are_one_line_naming_the_subcommand_and_help(soulstack_cmd):
    cases = [
        (("flash", "--bogus"), "soulstack flash: unrecognized arguments: --bogus"),
        (("body", "terminal", "--port", "x"), "soulstack body terminal: argument --port: invalid int value: 'x'"),
        (("nonsense",), "soulstack: argument COMMAND: invalid choice: 'nonsense'"),
        (("body",), "soulstack body: the following arguments are required: KIND"),
    ]
    for args, first in cases:
        done = run(soulstack_cmd, *args)
        assert done.returncode == 2, args
        assert done.stderr.count("\n") == 1 and "usage:" not in done.stderr, done.stderr
        assert done.stderr.startswith(first), done.stderr
        assert done.stderr.rstrip().endswith(f"(see: {first.split(':')[0]} --help)")


def test_a_placeholder_or_folderless_path_in_the_config_is_one_line(soulstack_cmd, tmp_path):
    # stackchan-soul's example config ships "/path/to/shared/MOOD.md": the soul must not create /path/.
    import json

    for mood, said in (
        ("/path/to/shared/MOOD.md", 'persona.sharedMoodPath is the example\'s placeholder "/path/to/shared/MOOD.md"'),
        (str(tmp_path / "nowhere" / "MOOD.md"), f"its folder {tmp_path / 'nowhere'} does not exist"),
    ):
        config = tmp_path / "soul.config.json"
        config.write_text(json.dumps({"soulDir": str(tmp_path / "soul"), "persona": {"sharedMoodPath": mood}}))
        done = run(soulstack_cmd, "soul", "--config", str(config), "--port", "0")
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
        assert not (tmp_path / "soul").exists() and not (tmp_path / "nowhere").exists()


def test_a_taken_soul_port_names_the_port_flag(soulstack_cmd, tmp_path):
    # A new owner whose 9202 is taken needs the one flag that moves it, not only config keys.
    import json
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "soul.config.json"
        config.write_text(json.dumps({"soulDir": str(tmp_path / "soul"), "nudge": {"port": port}}))
        done = run(soulstack_cmd, "soul", "--config", str(config))
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "wakes in" not in done.stderr  # it never woke: the port was refused first
    assert last.startswith(f"soulstack soul: cannot listen on 127.0.0.1:{port} ("), last
    assert last.endswith(
        "give the soul another port: --port P (0: any free one), or nudge.port, converse.port or health.port in the config"
    ), last
    assert not (tmp_path / "soul").exists()  # refused before a folder (and a new soul's first files) was made


def test_a_host_that_is_not_this_machines_is_named_as_the_host_and_a_port_out_of_range_as_such(soulstack_cmd):
    for host, why in (
        ("nosuchhost.invalid", "(no host is called nosuchhost.invalid); --host takes an address of this machine"),
        ("192.0.2.1", "(192.0.2.1 is not an address of this machine); --host takes one of its own"),  # TEST-NET-1
    ):
        done = run(soulstack_cmd, "body", "terminal", "--host", host, "--port", "0", "--insecure-no-token")
        last = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert last.startswith(f"soulstack body: cannot listen on {host}:0 {why}") and "port" not in last, last
    done = run(soulstack_cmd, "body", "terminal", "--port", "99999")
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and last.startswith(
        "soulstack body: cannot listen on 127.0.0.1:99999 (a port is 0 to 65535"
    )


def test_a_mistyped_config_key_says_which_key_was_meant():
    from soulstack.soul import config

    _, warnings = config.from_dict({"loop": {"maxSleepMinute": 5}, "soulDIR": "x", "colour": "blue"})
    assert warnings == [
        "loop.maxSleepMinute is not a key the soul knows (did you mean loop.maxSleepMinutes?); ignored",
        "soulDIR is not a key the soul knows (did you mean soulDir?); ignored",
        "colour is not a key the soul knows; ignored",
    ]


def every_subcommand():
    """(name, parser) for `soulstack` and every subcommand under it, however deep."""
    import argparse

    from soulstack.cli import build_parser

    def walk(parser, name):
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    yield from walk(child, f"{name} {sub}")

    return list(walk(build_parser(), "soulstack"))


def test_every_subcommands_help_keeps_the_conventions():
    # One meaning per flag, one token variable per kind of server, one help style (host/commandline.py's helpers).
    import argparse

    from soulstack.commandline import DEFAULT_NUDGE_URL

    commands = every_subcommand()
    assert len(commands) > 15
    variables: dict = {}
    bodies = {"soulstack body terminal", "soulstack body sim", "soulstack body stackchan", "soulstack bridge serial"}
    for name, parser in commands:
        text = parser.format_help()
        assert "(default " not in text.replace("\n", " ").replace("(default: ", ""), name
        assert not re.search(r"\b[A-Z]+_(URL|TOKEN)\b", text.split("options:")[0]), name  # URL, TOKEN: one name each
        options = {flag: action for action in parser._actions for flag in action.option_strings}
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or not action.option_strings:
                continue
            assert not (isinstance(action.metavar, str) and len(action.metavar) == 1), (name, action.metavar)
        if "--port" in options and "--port" in text:  # a shown --port is always an HTTP port
            assert options["--port"].type is int, name
        if "--device" in options:  # the robot's serial port, never --port in the help
            assert "PATH|auto" in text and "--port" not in text.split("--device", 1)[0].split("options:")[-1], name
        if "--nudge-url" in options and name != "soulstack flash":  # flash asks, as the robot reaches the soul
            nudge = options["--nudge-url"]
            assert nudge.default == DEFAULT_NUDGE_URL or DEFAULT_NUDGE_URL in (nudge.help or ""), name
        if name in bodies:
            assert "$BODY_TOKEN" in options["--token"].help and "--token-file" in options, name
        for flag in options:
            if flag.endswith("-token") and options[flag].nargs != 0:  # a secret, not a switch (--new-token)
                assert f"{flag}-file" in options, (name, flag)
        if "--host" in options and options["--host"].default is not None:
            assert options["--host"].default == "127.0.0.1", name
        # Each other secret flag reads the same variable in every command (--token is the command's own:
        # $BODY_TOKEN for a body, $TTS_TOKEN, $EARS_TOKEN, $FLOCK_TOKEN for those servers).
        for flag, action in options.items():
            found = re.search(r"\(default: \$([A-Z_]+)", action.help or "")
            if flag.endswith("-token") and flag != "--token" and found:
                variables.setdefault(flag, set()).add(found.group(1))
    assert {flag: names for flag, names in variables.items() if len(names) > 1} == {}
    assert variables["--soul-token"] == variables["--nudge-token"] == {"NUDGE_TOKEN"}


def test_every_subcommands_help_runs(soulstack_cmd):
    # The real command, each --help: nothing at start-up may fail for any of them (all started at once).
    names = [name for name, _ in every_subcommand()[1:]]
    running = [
        subprocess.Popen([*soulstack_cmd, *name.split()[1:], "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name in names
    ]
    for name, process in zip(names, running, strict=True):
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0 and out.decode().startswith("usage: " + name), (name, err.decode())


def test_a_shell_cwd_that_is_not_a_folder_is_one_line(tmp_path):
    from soulstack.soul import config

    with pytest.raises(config.ConfigError, match="shell.cwd is .*, which is not a folder"):
        config.from_dict({"soulDir": str(tmp_path / "soul"), "shell": {"cwd": str(tmp_path / "nowhere")}})
    cfg, _ = config.from_dict({"soulDir": str(tmp_path / "soul"), "shell": {"cwd": str(tmp_path)}})
    assert cfg.shell.cwd == str(tmp_path)


def test_a_url_urlsplit_refuses_is_one_line_naming_its_option(soulstack_cmd, tmp_path):
    # An unclosed IPv6 bracket makes urlsplit raise, a port over 65535 makes .port raise: each command
    # that takes a URL says which option is wrong, at start (exit 2), never with a traceback, and never
    # takes one to fail later at every request (body sim handed it to the firmware). All started at once.
    import json

    from tests.helpers import free_port

    configs = {
        "endpoint": {"body": {"endpoints": {"status": "http://[::1/status"}}},
        "endpoint-port": {"body": {"endpoints": {"look": "http://127.0.0.1:99999/look"}}},
        "mcp": {"mcp": [{"name": "tools", "url": "http://[::1/mcp"}]},
    }
    for name, config in configs.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"soulDir": str(tmp_path / "soul"), **config}))
    cases = [
        (("body-check", "http://[::1"), "URL must look like http://"),
        (("body-check", "http://127.0.0.1 :9310"), "URL must look like http://"),  # urlsplit keeps a space
        (("flash", "--dry-run", "--nudge-url", "http://so ul/nudge"), "--nudge-url must look like http://"),
        (("body", "terminal", "--nudge-url", "http://[::1/nudge"), "--nudge-url must look like http://"),
        (("body", "sim", "--port", "0", "--nudge-url", "http://[::1/nudge"), "--nudge-url must look like http://"),
        (("body", "sim", "--port", "0", "--tts-url", "http://[::1/tts"), "--tts-url must look like http://"),
        (("body", "sim", "--port", "0", "--ears-url", "http://[::1/utterance"), "--ears-url must look like http://"),
        (("body", "stackchan", "--upstream", "ws://[::1/x"), "--upstream must look like ws://"),
        (("ears", "--body", "robot=http://[::1"), "--body robot must look like http://"),
        (("ears", "--body", "robot=http://127.0.0.1:1", "--soul", "http://[::1"), "--soul must look like http://"),
        (
            (
                "ears",
                "--body",
                "robot=http://127.0.0.1:1",
                "--recogniser",
                "openai",
                "--openai-base-url",
                "http://[::1",
            ),
            "--openai-base-url must look like http://",
        ),
        (("flash", "--over-wifi", "http://[::1", "--token", "t"), "--over-wifi http://[::1 must be the robot's"),
        (("flash", "--dry-run", "--nudge-url", "http://[::1/nudge"), "--nudge-url must look like http://"),
        (("flock", "--port", str(free_port()), "--body", "http://[::1"), "--body must look like http://"),
        (("soul", "--config", str(tmp_path / "endpoint.json"), "--port", "0"), "body.endpoints.status must be"),
        (("soul", "--config", str(tmp_path / "endpoint-port.json"), "--port", "0"), "body.endpoints.look must be"),
        (("soul", "--config", str(tmp_path / "mcp.json"), "--port", "0"), "mcp[0].url must be"),
    ]
    running = [
        subprocess.Popen(
            [*soulstack_cmd, *args],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args, _ in cases
    ]
    for (args, said), process in zip(cases, running, strict=True):
        try:
            _, err = process.communicate(timeout=60)
        finally:
            process.kill()
        assert process.returncode == 2 and "Traceback" not in err, (args, err)
        assert err.count("\n") == 1 and said in err, (args, err)
    assert not (tmp_path / "soul").exists()  # refused before the soul made its folder


def test_nan_or_infinity_in_a_config_is_one_line_naming_it(soulstack_cmd, tmp_path):
    # Python's JSON reader takes them: NaN reached int() at start (a traceback), or lived on to fail every waking.
    cases = {
        "soul": ('{"soulDir": "%s", "nudge": {"port": NaN}}' % (tmp_path / "soul"), "NaN is no number JSON knows"),
        "sleep": ('{"soulDir": "%s", "loop": {"maxSleepMinutes": Infinity}}' % (tmp_path / "soul"), "Infinity is"),
    }
    for name, (text, said) in cases.items():
        (tmp_path / f"{name}.json").write_text(text)
        done = subprocess.run(
            [*soulstack_cmd, "soul", "--config", str(tmp_path / f"{name}.json"), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert not (tmp_path / "soul").exists()
    from soulstack.config_checks import ConfigError, number

    for value in (float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="must be a number"):
            number(0, 10)("loop.maxSleepMinutes", value)


def test_a_token_with_a_space_is_refused_in_one_line_wherever_it_comes_from(soulstack_cmd, tmp_path):
    # "Authorization: Bearer a b" never matches: flashed into a robot, such a token locked the soul out
    # unsaid. A flag, $BODY_TOKEN and a config file are each told so, and the message never repeats it.
    import json
    import os

    flagged = run(soulstack_cmd, "flash", "--dry-run", "--token", "open sesame")
    env = {**os.environ, "BODY_TOKEN": "open sesame\n"}
    from_env = subprocess.run(
        [*soulstack_cmd, "body", "terminal", "--port", "0"], capture_output=True, text=True, timeout=60, env=env
    )
    for done in (flagged, from_env):
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "argument --token: a token is one word" in done.stderr and "sesame" not in done.stderr
    config = tmp_path / "soul.config.json"
    config.write_text(json.dumps({"soulDir": str(tmp_path / "soul"), "body": {"token": "open sesame"}}))
    done = run(soulstack_cmd, "soul", "--config", str(config), "--port", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "body.token must be one word" in done.stderr and "sesame" not in done.stderr
    assert not (tmp_path / "soul").exists()
    flock = tmp_path / "flock.json"
    flock.write_text(json.dumps({"token": "open\tsesame"}))
    done = run(soulstack_cmd, "flock", "--config", str(flock), "--port", "0")
    assert done.returncode == 2 and "token must be one word" in done.stderr and "sesame" not in done.stderr
    without = {key: value for key, value in os.environ.items() if key != "BODY_TOKEN"}
    empty = subprocess.run(  # empty is how the environment says "none": still a body that starts
        [*soulstack_cmd, "body", "terminal", "--port", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**without, "BODY_TOKEN": ""},
    )
    assert "invalid int value: 'x'" in empty.stderr and "one word" not in empty.stderr


def test_a_path_that_is_no_serial_port_is_one_line_not_a_wait(soulstack_cmd, tmp_path):
    """A typo in --device (a file, a folder, /dev/null) never becomes a robot: `logs` waited for it
    forever and the bridge served a body that could never come online. An absent path still waits
    (the robot may be unplugged): tests/bodies/test_robot_logs.py."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a robot\n")
    for args in (
        ("logs", "--device", "/dev/null"),
        ("logs", "--device", str(tmp_path)),
        ("bridge", "serial", "--device", str(notes), "--nudge-url", ""),
    ):
        done = run(soulstack_cmd, *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "is not a serial port; --device takes the robot's USB serial port (or auto)" in done.stderr


def test_a_bridge_whose_port_is_taken_says_only_that(soulstack_cmd):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(soulstack_cmd, "bridge", "serial", "--device", "auto", "--listen", f"127.0.0.1:{port}")
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert done.stdout == ""  # no banner saying it serves


def test_body_check_of_an_endpoint_url_names_the_base_url(soulstack_cmd):
    """A slip in the command, not a body that fails the protocol: exit 2 (1 says the body failed)."""
    done = run(soulstack_cmd, "body-check", "http://127.0.0.1:9/status")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "names the /status endpoint; give the body's base URL: http://127.0.0.1:9" in done.stderr
