"""The `soulstack` command itself: help lists what is built, --version, usage mistakes."""

import importlib.metadata
import subprocess


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


def test_a_mistyped_config_key_says_which_key_was_meant():
    from soulstack.soul import config

    _, warnings = config.from_dict({"loop": {"maxSleepMinute": 5}, "soulDIR": "x", "colour": "blue"})
    assert warnings == [
        "loop.maxSleepMinute is not a key the soul knows (did you mean loop.maxSleepMinutes?); ignored",
        "soulDIR is not a key the soul knows (did you mean soulDir?); ignored",
        "colour is not a key the soul knows; ignored",
    ]
