"""Compiled uploads: tools/flash sends .mpy built with mpy-cross for the robot, main.py and boot.py as sources.

Checked with the real mpy-cross and the real MicroPython unix port: its own
`sys.implementation._mpy` decides, the compiled tree boots and passes
body-check, and the upload's clean-up script removes stale files when
MicroPython itself runs it.
"""

import os
import subprocess
import sys

import pytest

from soulstack.firmware import FIRMWARE_DIR
from soulstack.flash import compiled, plan, provision
from soulstack.protocol import check
from soulstack.sim.runner import Simulator
from soulstack.sim.staging import find_tool
from tests.helpers import free_port
from tests.helpers import ROOT

XTENSAWIN = 10  # its index in sys.implementation._mpy >> 10 (MicroPython's reference/mpyfiles.rst)


def micropython(code, cwd=None):
    return subprocess.run(
        [find_tool("micropython"), "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, MICROPYPATH=".frozen"),
    )


def test_a_robot_that_says_its_version_gets_files_compiled_for_its_architecture():
    robot = compiled.parse_probe(micropython(compiled.PROBE).stdout)  # the unix port stands in for the robot
    assert robot & 0xFF == compiled.emitted_version() == 6
    assert compiled.decide(robot, compiled.emitted_version()) == (compiled.ARCHS[robot >> 10], None)
    assert compiled.decide(6 | XTENSAWIN << 10, 6) == ("xtensawin", None)  # a CoreS3


@pytest.mark.parametrize(
    "robot, ours, why",
    [
        (5 | XTENSAWIN << 10, 6, "the robot loads .mpy version 5, mpy-cross writes version 6: uploading sources"),
        (0, 6, "does not say its .mpy version"),
        (6 | XTENSAWIN << 10, None, "mpy-cross is not installed"),
    ],
)
def test_otherwise_sources_with_a_warning(robot, ours, why):
    arch, warning = compiled.decide(robot, ours)
    assert arch is None and why in warning


def test_the_compiled_layout_is_what_the_robot_gets(tmp_path):
    layout = compiled.compile_layout(provision.firmware_files(), "xtensawin", tmp_path)
    sources = provision.firmware_files()
    assert {k: len(v) for k, v in layout.items()} == {k: len(v) for k, v in sources.items()}
    for folder, files in layout.items():
        for path in files:
            assert path.is_relative_to(tmp_path)
            if not folder and path.suffix == ".py":
                assert path.name in ("main.py", "boot.py")
                assert path.read_bytes() == (FIRMWARE_DIR / path.name).read_bytes()
                continue
            header = path.read_bytes()[:4]
            assert path.suffix == ".mpy" and header[:2] == b"M\x06", path
            # Byte 2 names an architecture only when a file holds native code; ours is bytecode, loadable anywhere.
            assert header[2] >> 2 in (0, XTENSAWIN), f"{path} built for another architecture"


async def test_the_compiled_firmware_boots_and_passes_body_check(tmp_path):
    compiled.compile_layout(provision.firmware_files(), "", tmp_path)
    assert not list(tmp_path.glob("core/*.py"))  # nothing to fall back on: it runs from .mpy or not at all
    port = free_port()
    with Simulator(port, token="t", firmware=tmp_path) as simulator:
        assert simulator.wait_until_serving()
        url = f"http://127.0.0.1:{port}"
        results = await check.run_checks(url, token="t")
    failed = [r.line() for r in results if not r.passed]
    assert results and not failed, failed


def test_the_upload_removes_each_files_other_kind(tmp_path):
    layout = compiled.compile_layout(provision.firmware_files(), "xtensawin", tmp_path / "built")
    flash = tmp_path / "flash"
    (flash / "core").mkdir(parents=True)
    (flash / "core" / "protocol.py").write_text("stale = True\n")  # would shadow protocol.mpy on the robot
    (flash / "main.mpy").write_bytes(b"M")
    (flash / "notes.txt").write_text("mine")
    commands = plan.upload_commands(str(flash) + "/", layout)
    assert micropython(commands[0][1]).returncode == 0  # the same script mpremote runs on the robot
    assert not (flash / "core" / "protocol.py").exists() and not (flash / "main.mpy").exists()
    assert (flash / "notes.txt").exists() and (flash / "hal").is_dir() and (flash / "microdot").is_dir()
    copied = [path for command in commands[1:] for path in command[2:-1]]
    assert str(tmp_path / "built" / "core" / "protocol.mpy") in copied and str(tmp_path / "built" / "main.py") in copied


def test_the_dry_run_says_it_compiles():
    argv = [
        sys.executable,
        "-m",
        "soulstack.cli",
        "flash",
        "--dry-run",
        "--port",
        "/dev/null",
        "--target",
        "uiflow",
        "--no-wifi",
    ]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "to .mpy with mpy-cross -march=<the robot's>" in result.stdout
    assert "main.py and boot.py stay sources" in result.stdout
    assert "its .mpy version (sys.implementation._mpy)" in result.stdout
