"""`soulstack home init`: a one-box home's configs, tokens and units, written into a temporary root."""

import json
import os
import shutil
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from soulstack.home.setup import env_values

needs_systemd = pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is missing")
HOST = "192.0.2.10"  # TEST-NET-1: never bound, only written


def home_init(root, *extra, units_read=True):
    """`units_read`: systemd reads root/units (its own $SYSTEMD_UNIT_PATH says so to systemd-analyze)."""
    for folder in ("units", "state"):
        (root / folder).mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "soulstack.cli", "home", "init", "--host", HOST, "--no-enable"]
    argv += ["--unit-dir", str(root / "units"), "--env-dir", str(root / "env"), "--state-dir", str(root / "state")]
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{root / 'units'}:"} if units_read else None
    return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=60, env=env)


def env(root, name):
    return env_values((root / "env" / f"{name}.env").read_text().splitlines())


@needs_systemd
def test_home_init_writes_units_that_verify_tokens_that_are_private_and_the_flash_command(tmp_path):
    done = home_init(tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("soul", "tts", "flock", "ears"):
        unit = tmp_path / "units" / f"soulstack-{name}.service"
        assert f"EnvironmentFile=-{tmp_path}/env/{name}.env" in unit.read_text()
        verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
        assert verify.returncode == 0 and verify.stdout + verify.stderr == "", verify.stdout + verify.stderr
        assert stat.S_IMODE((tmp_path / "env" / f"{name}.env").stat().st_mode) == 0o600
        assert env(tmp_path, name)["SOULSTACK_ARGS"].startswith(f"--host {HOST}")
    soul, tts, flock = env(tmp_path, "soul"), env(tmp_path, "tts"), env(tmp_path, "flock")
    assert soul["NUDGE_TOKEN"] == flock["NUDGE_TOKEN"] and soul["FLOCK_TOKEN"] == flock["FLOCK_TOKEN"]
    ears = env(tmp_path, "ears")
    assert ears["NUDGE_TOKEN"] == soul["NUDGE_TOKEN"] and ears["BODY_TOKEN"] == soul["BODY_TOKEN"]
    assert (
        len({soul["NUDGE_TOKEN"], soul["BODY_TOKEN"], tts["TTS_TOKEN"], flock["FLOCK_TOKEN"], ears["EARS_TOKEN"]}) == 5
    )
    assert "ears waits for the robot: started when you run this again with --robot" in done.stdout
    assert "soulstack-ears.service" not in done.stdout.rsplit("start them with:", 1)[1]
    assert (
        f"BODY_TOKEN={soul['BODY_TOKEN']} NUDGE_TOKEN={soul['NUDGE_TOKEN']} TTS_TOKEN={tts['TTS_TOKEN']} "
        f"EARS_TOKEN={ears['EARS_TOKEN']} tools/flash --nudge-url http://{HOST}:9202/nudge "
        f"--tts-url http://{HOST}:9204/tts --ears-url http://{HOST}:9205/utterance"
    ) in done.stdout
    again = next(line for line in done.stdout.splitlines() if "with the address tools/flash prints" in line)
    executable = next(line for line in unit.read_text().splitlines() if line.startswith("ExecStart=")).split()[0]
    assert f"sudo {executable.removeprefix('ExecStart=')} home init --robot http://ROBOT-ADDRESS" in again
    assert f"--env-dir {tmp_path}/env" in again and f"--host {HOST}" in again  # the second run finds the first's
    config = json.loads((tmp_path / "state" / "soulstack-soul" / "soul.config.json").read_text())
    assert config["flock"]["url"] == f"http://{HOST}:8470" and config["body"]["name"] == "stackchan"
    assert "token" not in config["body"] and "token" not in config["nudge"]  # secrets stay in the env files


def test_a_rerun_keeps_tokens_and_a_persons_lines_and_names_the_robot(tmp_path):
    assert home_init(tmp_path).returncode == 0
    before = env(tmp_path, "soul")
    soul_env = tmp_path / "env" / "soul.env"
    soul_env.write_text(soul_env.read_text() + "ANTHROPIC_API_KEY=sk-ant-mine\n")
    done = home_init(tmp_path, "--robot", "http://192.0.2.42")
    assert done.returncode == 0, done.stderr
    after = env(tmp_path, "soul")
    assert after["NUDGE_TOKEN"] == before["NUDGE_TOKEN"] and after["BODY_TOKEN"] == before["BODY_TOKEN"]
    assert after["ANTHROPIC_API_KEY"] == "sk-ant-mine"
    config = json.loads((tmp_path / "state" / "soulstack-soul" / "soul.config.json").read_text())
    assert config["body"]["endpoints"]["look"] == "http://192.0.2.42/look"
    assert "--body stackchan=http://192.0.2.42" in env(tmp_path, "ears")["SOULSTACK_ARGS"]
    assert "waits for the robot" not in done.stdout
    again = home_init(tmp_path)  # the robot named once stays the body
    assert again.returncode == 0 and "--body stackchan=http://192.0.2.42" in env(tmp_path, "ears")["SOULSTACK_ARGS"]


def test_a_chinese_home_flashes_a_chinese_robot_and_keeps_its_language(tmp_path):
    done = home_init(tmp_path, "--language", "zh")
    assert done.returncode == 0, done.stderr
    config_path = tmp_path / "state" / "soulstack-soul" / "soul.config.json"
    assert json.loads(config_path.read_text())["persona"]["language"] == "zh"
    flash = next(line for line in done.stdout.splitlines() if "tools/flash" in line)
    assert "--nudge-url http://192.0.2.10:9202/nudge --lang zh" in flash, flash
    again = home_init(tmp_path, "--robot", "http://192.0.2.42")  # no --language: the config's stays
    assert again.returncode == 0, again.stderr
    assert json.loads(config_path.read_text())["persona"]["language"] == "zh"
    assert "--lang zh" in next(line for line in again.stdout.splitlines() if "tools/flash" in line)
    english = home_init(tmp_path, "--language", "en")  # asked for: changed, and the robot's line says so
    assert json.loads(config_path.read_text())["persona"]["language"] == "en"
    assert "--lang" not in next(line for line in english.stdout.splitlines() if "tools/flash" in line)


@pytest.mark.parametrize(
    "args, said",
    [
        (["--host", "127.0.0.1"], "--host 127.0.0.1: the robot cannot reach this computer there"),
        (["--robot", "192.0.2.42"], "--robot must look like http://192.168.1.42"),
        # A space would split ears' --body in its unit's command line.
        (["--robot", "http://192.0.2.42 b"], "--robot must look like http://192.168.1.42"),
        (["--robot", "http://192.0.2.42/status"], "--robot is the robot's address alone, http://192.0.2.42;"),
        (["--host", ""], "--host '' is not an IP address"),
        # Written unbracketed into every URL, and the robot's Wi-Fi reaches IPv4 only.
        (["--host", "fd00::10"], "--host fd00::10: the robot reaches IPv4 addresses only"),
        # A name and password would sit in ears' argv and the soul's config; the robot's key is BODY_TOKEN.
        (["--robot", "http://me:pw@192.0.2.42:8080"], "--robot takes no name or password (the robot's key"),
        # systemd would split ReadWritePaths= and ExecStart= at the space.
        (["--state-dir", "{root}/my state"], "my state holds a space, which systemd's unit lines cannot carry"),
        (["--env-dir", "{root}/my env"], "my env holds a space, which systemd's unit lines cannot carry"),
    ],
)
def test_mistakes_are_one_line_and_write_nothing(tmp_path, args, said):
    (tmp_path / "my state").mkdir()
    args = [arg.format(root=tmp_path) for arg in args]
    done = home_init(tmp_path, *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert not (tmp_path / "env").exists() and list((tmp_path / "units").iterdir()) == []


@pytest.mark.parametrize(
    "kept, said",
    [
        ("[]\n", "must hold a JSON object (the soul's config), not list"),
        ('{"persona": 3}\n', "persona must be"),
    ],
)
def test_a_kept_soul_config_that_is_wrong_is_one_line(tmp_path, kept, said):
    """A soul.config.json already there that holds a list, or a persona that is no object: one line, exit 2
    (the list raised AttributeError, the persona TypeError)."""
    soul = tmp_path / "state" / "soulstack-soul" / "soul.config.json"
    soul.parent.mkdir(parents=True)
    soul.write_text(kept)
    done = home_init(tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert soul.read_text() == kept  # nothing lost


def test_the_soul_runs_from_what_home_init_wrote(tmp_path):
    # The soul's config and environment file as its unit would start it (on loopback here: the LAN
    # address is only written): its /health refuses a caller without the home's token.
    assert home_init(tmp_path).returncode == 0
    values = env(tmp_path, "soul")
    config = tmp_path / "state" / "soulstack-soul" / "soul.config.json"
    soul = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config), "--port", "0"],
        env={k: v for k, v in values.items() if k != "SOULSTACK_ARGS"} | {"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline, url = time.monotonic() + 30, None
        while url is None and time.monotonic() < deadline:
            line = soul.stdout.readline()
            if "listening on http://127.0.0.1:" in line:
                url = line.split("listening on ", 1)[1].split()[0].rstrip(",")
        assert url, "the soul never listened"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{url}/health", timeout=10)
        assert refused.value.code == 401
        asked = urllib.request.Request(f"{url}/health", headers={"Authorization": f"Bearer {values['NUDGE_TOKEN']}"})
        assert json.loads(urllib.request.urlopen(asked, timeout=10).read())["provider"]["name"] == "brainstem"
    finally:
        soul.terminate()
        soul.wait(20)


def unit_line(unit, key) -> str:
    """The value of `key=` in a unit file, %S (a system unit's state folder) expanded as systemd does."""
    line = next(line for line in unit.read_text().splitlines() if line.startswith(f"{key}="))
    return line.split("=", 1)[1].replace("%S", "/var/lib")


def printed(stdout, before, after=None) -> str:
    """The text a line of home init's output has between `before` and `after` (or its end)."""
    line = next(line for line in stdout.splitlines() if before in line)
    rest = line.split(before, 1)[1]
    return rest.split(after, 1)[0] if after else rest


@pytest.mark.parametrize("units_read", [True, False], ids=["units-where-systemd-reads", "units-elsewhere"])
@pytest.mark.parametrize("state", ["relative", "absolute"])
@pytest.mark.parametrize("env_dir", ["relative", "absolute"])
def test_what_is_printed_is_where_the_units_look(tmp_path, units_read, state, env_dir):
    # Each combination of folders, given as a person types them (from the folder they are in, or whole):
    # the config, tokens and state folders printed are the ones the units run with, and they exist.
    (tmp_path / "units").mkdir()
    (tmp_path / "state").mkdir()
    spelled = {
        name: name if how == "relative" else str(tmp_path / name) for name, how in (("state", state), ("env", env_dir))
    }
    argv = [sys.executable, "-m", "soulstack.cli", "home", "init", "--host", HOST, "--no-enable", "--unit-dir", "units"]
    argv += ["--state-dir", spelled["state"], "--env-dir", spelled["env"]]
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{tmp_path / 'units'}:"} if units_read else {**os.environ}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    units = {name: tmp_path / "units" / f"soulstack-{name}.service" for name in ("soul", "tts", "ears", "flock")}
    config = printed(done.stdout, "the soul's config: ")
    exec_start = unit_line(units["soul"], "ExecStart").split()
    assert exec_start[exec_start.index("--config") + 1] == config == f"{tmp_path}/state/soulstack-soul/soul.config.json"
    assert json.loads(Path(config).read_text())["flock"]["url"] == f"http://{HOST}:8470"
    env_folder = printed(done.stdout, "tokens in ", "/NAME.env")
    assert env_folder == f"{tmp_path}/env"
    for name, unit in units.items():
        assert unit_line(unit, "EnvironmentFile") == f"-{env_folder}/{name}.env"
        assert (tmp_path / "env" / f"{name}.env").is_file()
        assert unit_line(unit, "WorkingDirectory") == f"{tmp_path}/state/soulstack-{name}"
        assert Path(unit_line(unit, "WorkingDirectory")).is_dir()  # systemd makes none outside /var/lib
    flock = unit_line(units["flock"], "ExecStart").split()
    assert flock[flock.index("--data") + 1] == f"{tmp_path}/state/soulstack-flock"
    if units_read:
        assert (
            "start them with: systemctl daemon-reload && systemctl enable --now soulstack-soul.service" in done.stdout
        )
        assert "systemd does not read" not in done.stdout
    else:
        assert "start them with" not in done.stdout
        copy = printed(done.stdout, f"systemd does not read units from {tmp_path}/units, so nothing was started; ")
        assert copy.startswith(f"copy them where it does and start them: cp {tmp_path}/units/soulstack-soul.service")
        assert all(str(unit) in copy for unit in units.values()) and " /etc/systemd/system/ && systemctl" in copy


def test_systemds_own_state_folder_stays_its_own():
    # The default --state-dir (/var/lib): the units keep %S and StateDirectory=, so systemd makes the folder and
    # its account owns it; home init prints /var/lib/soulstack-soul/soul.config.json, what %S names.
    from soulstack.home.placement import is_systemds_own, with_state_dir

    assert is_systemds_own(Path("/var/lib")) and not is_systemds_own(Path("/srv"))
    text = (Path(__file__).parents[1] / "deploy" / "soulstack-soul.service").read_text()
    moved = with_state_dir(text, "soul", Path("/srv"), "robot", "robot")
    assert "%S" not in moved and "DynamicUser=yes" not in moved and "StateDirectory=" not in moved
    assert "User=robot\nGroup=robot\n" in moved and "ReadWritePaths=/srv/soulstack-soul\n" in moved
