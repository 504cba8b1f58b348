"""deploy/'s systemd units, as `soulstack service install` writes them, pass `systemd-analyze verify`."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from soulstack.service.units import NAMES

needs_systemd = pytest.mark.skipif(
    not shutil.which("systemd-analyze"),
    reason="systemd-analyze is missing (tools/test installs Debian's systemd when apt is available)",
)


def install(soulstack_cmd, tmp_path, name, *extra, env=None, units_read=True):
    """`units_read`: systemd reads tmp_path (its own $SYSTEMD_UNIT_PATH says so), as it reads /etc/systemd/system."""
    env = dict(os.environ if env is None else env)
    if units_read:
        env["SYSTEMD_UNIT_PATH"] = f"{tmp_path}:"
    return subprocess.run(
        [
            *soulstack_cmd,
            "service",
            "install",
            name,
            "--unit-dir",
            str(tmp_path),
            "--env-dir",
            str(tmp_path / "env"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@needs_systemd
@pytest.mark.parametrize("name", NAMES)
def test_every_unit_verifies_as_installed(soulstack_cmd, tmp_path, name):
    done = install(soulstack_cmd, tmp_path, name, "--no-enable")
    assert done.returncode == 0, done.stderr
    unit = tmp_path / f"soulstack-{name}.service"
    text = unit.read_text()
    executable = str(Path(sys.executable).parent / "soulstack")
    assert f"ExecStart={executable} " in text and "/opt/soulstack" not in text
    for line in (
        "DynamicUser=yes",
        "Restart=on-failure",
        f"StateDirectory=soulstack-{name}",
        f"EnvironmentFile=-{tmp_path}/env/{name}.env",  # --env-dir, where install wrote it
        "WantedBy=multi-user.target",
    ):
        assert line in text.splitlines(), line
    # verify exits 0 on mere warnings (an unknown key, a bad value), so any output is a failure too.
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0 and verify.stdout + verify.stderr == "", verify.stdout + verify.stderr


def test_the_env_file_is_private_and_never_overwritten(soulstack_cmd, tmp_path):
    assert install(soulstack_cmd, tmp_path, "soul", "--no-enable").returncode == 0
    env_file = tmp_path / "env" / "soul.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "ANTHROPIC_API_KEY" in env_file.read_text()
    env_file.write_text("ANTHROPIC_API_KEY=sk-ant-mine\n")
    done = install(soulstack_cmd, tmp_path, "soul", "--no-enable")
    assert done.returncode == 0 and env_file.read_text() == "ANTHROPIC_API_KEY=sk-ant-mine\n"
    assert "systemctl daemon-reload && systemctl enable --now soulstack-soul.service" in done.stdout
    if (Path(sys.executable).parents[2] / "pyproject.toml").is_file():  # the tests run from a checkout's .venv
        assert "note: it runs the .venv of the checkout" in done.stdout


def test_a_unit_written_where_systemd_does_not_look_is_not_started_and_says_what_to_copy(soulstack_cmd, tmp_path):
    done = install(soulstack_cmd, tmp_path, "tts", units_read=False)  # no --no-enable: it would have started it
    assert done.returncode == 0, done.stderr
    assert (
        f"systemd does not read units from {tmp_path}, so nothing was started; copy it where it does and start "
        f"it: cp {tmp_path}/soulstack-tts.service /etc/systemd/system/ && systemctl daemon-reload && "
        "systemctl enable --now soulstack-tts.service"
    ) in done.stdout
    assert "start it with:" not in done.stdout and "enabled and started" not in done.stdout


def test_mistakes_are_one_line(soulstack_cmd, tmp_path):
    done = install(soulstack_cmd, tmp_path, "kettle")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "invalid choice: 'kettle'" in done.stderr
    # No systemctl on PATH: the unit is still written and the one line says what to do.
    empty = tmp_path / "bin"
    empty.mkdir()
    done = install(soulstack_cmd, tmp_path, "tts", env={**os.environ, "PATH": str(empty)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "systemctl is not here" in done.stderr and (tmp_path / "soulstack-tts.service").exists()
    # A unit folder that is not there: one line naming the file.
    missing = tmp_path / "no-such-dir"
    done = subprocess.run(
        [
            *soulstack_cmd,
            "service",
            "install",
            "flock",
            "--unit-dir",
            str(missing),
            "--env-dir",
            str(tmp_path / "env"),
            "--no-enable",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write {missing}/soulstack-flock.service (No such file" in done.stderr
    # ... and checked before anything is made: no environment folder was created for it.
    fresh_env = tmp_path / "fresh-env"
    done = subprocess.run(
        [*soulstack_cmd, "service", "install", "tts", "--unit-dir", str(missing), "--env-dir", str(fresh_env)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and not fresh_env.exists() and not missing.exists(), done.stderr


def test_a_unit_pointed_at_a_checkouts_venv_says_so(tmp_path):
    # A checkout's .venv (CHECKOUT/.venv/bin/soulstack): the unit dies with the checkout, so install says so.
    checkout = tmp_path / "soulstack"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / "host").mkdir()
    (checkout / "pyproject.toml").write_text("[project]\n")
    soulstack = checkout / ".venv" / "bin" / "soulstack"
    soulstack.write_text("#!/bin/sh\n")
    soulstack.chmod(0o755)
    from soulstack.service.units import checkout_of

    assert checkout_of(str(soulstack)) == checkout
    assert checkout_of("/opt/soulstack/bin/soulstack") is None
    assert checkout_of(str(tmp_path / "venv" / "bin" / "soulstack")) is None
