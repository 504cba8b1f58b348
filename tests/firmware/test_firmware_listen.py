"""firmware/core/vad.py: the same tests under CPython (here) and under real MicroPython (subprocess)."""

import sys

import pytest

from tests.firmware.helpers import FIRMWARE, TESTS, micropython

for path in (str(FIRMWARE), str(TESTS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import listen_tests  # noqa: E402

NAMES = sorted(name for name in dir(listen_tests) if name.startswith("test_"))


@pytest.mark.parametrize("name", NAMES)
def test_vad_under_cpython(name):
    getattr(listen_tests, name)()


def test_vad_under_micropython():
    result = micropython(TESTS / "listen_tests.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(NAMES)} passed, 0 failed" in result.stdout, result.stdout
